"""Recomputation of a layer's activations in the backward pass (gradient checkpointing).

New (the original keeps every activation): a layer whose `call` is decorated
with `recomputable` and whose `gradient_checkpointing` is True keeps only its
inputs for the backward pass when training, and runs its forward pass again
there (`keras.remat`, on TensorFlow `tf.recompute_grad`). Each `BertLayer` so
holds one [batch_size, seq_length, hidden_size] input instead of its attention
scores, probabilities, dropout masks and [batch_size, seq_length,
intermediate_size] activations, for about one more forward pass of compute.

The recomputed pass uses the same dropout masks as the first: the layer's
dropout seeds are drawn once, before both (`dropout.draw_seeds`,
`dropout.replay_seeds`), so the gradients are those of the forward pass that
ran, and the masks are those the layer draws without recomputation.
"""

import functools
import inspect

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops

from bert_tf.modeling.layers import dropout


def recomputable(call):
    """Decorates a layer's `call`: recomputed in the backward pass when the layer's
    `gradient_checkpointing` is True and the call's `training` is True.

    The call's float Tensor arguments are the recomputed function's inputs (the
    gradients flow to them and to the variables it reads); every other argument
    (Python values, None, integer Tensors) is passed on as it is. The outputs
    may be any nest of Tensors (and None).
    """
    signature = inspect.signature(call)

    @functools.wraps(call)
    def wrapper(self, *args, **kwargs):
        if not getattr(self, "gradient_checkpointing", False):
            return call(self, *args, **kwargs)
        arguments = signature.bind(self, *args, **kwargs).arguments
        training = arguments.get("training")
        if training is None or ops.is_tensor(training) or not training:
            return call(self, *args, **kwargs)
        return _recomputed(self, call, arguments)

    return wrapper


def _is_float_tensor(value):
    return ops.is_tensor(value) and keras.backend.is_float_dtype(value.dtype)


def _recomputed(layer, call, arguments):
    names = [name for name, value in arguments.items()
             if name != "self" and _is_float_tensor(value)]
    sublayers = layer._flatten_layers(include_self=False)  # pylint: disable=protected-access
    dropouts = [sub for sub in sublayers if isinstance(sub, dropout.Dropout)]
    # Drawn here, outside the recomputed function: both passes drop alike.
    seeds = dropout.draw_seeds(dropouts, training=True)
    structure = []

    def forward(*tensors):
        kwargs = dict(arguments)
        kwargs.update(zip(names, tensors))
        with dropout.replay_seeds(dropouts, seeds):
            outputs = call(**kwargs)
        if not structure:
            structure.append(outputs)
        return [x for x in keras.tree.flatten(outputs) if x is not None]

    flat = iter(keras.remat(forward)(*[arguments[name] for name in names]))
    return keras.tree.pack_sequence_as(
        structure[0], [None if x is None else next(flat)
                       for x in keras.tree.flatten(structure[0])])
