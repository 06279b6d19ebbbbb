"""Dropout with a mask of 16 random bits per element (the original: `tf.nn.dropout`).

The original drops with `tf.nn.dropout(x, 1.0 - rate)`: each element is
kept with probability 1 - rate and scaled by 1 / (1 - rate). Keras's Dropout
draws one float per element for that, and on a CPU drawing the numbers is most
of the layer's cost (BERT-base draws about 38M a step, most of them for the
attention probabilities). Here one 32-bit Philox word gives the masks of two
elements: an element is kept when its 16 bits are at least round(rate *
65536), so the rate is the requested one to within 1 / 131072 (0.1 becomes
0.100006). The scale is the original's 1 / (1 - rate), in the input's dtype
as Keras's.

Port note: the random stream differs from the original's anyway (TF1's
stateful generator cannot be reproduced); the kept fraction is the original's
to within 1 / 131072.

Recomputation (`gradient_checkpointing`) runs a layer's forward pass twice,
the second time in the backward pass. Each `Dropout` draws its seed from its
own seed generator once per call, so the recomputing caller draws the seeds
first (`draw_seeds`) and runs both passes under `replay_seeds`: the same masks
in both, and the same masks as without recomputation.

Keyed masks (a training run with a seed, `keyed_seeds`): the i-th `Dropout` of
a model drops with the seed `stateless_fold_in(key, i)`, the key made from the
run's seed and the global step (`bert_tf.training.steps`), instead of its
seed generator's next seed. A run resumed from a checkpoint at step N then
draws the same masks for step N + 1 as the run that was never stopped.
"""

import contextlib
import threading

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

_LEVELS = 1 << 16


def drop_threshold(rate):
    """The 16-bit value below which an element is dropped: round(rate * 65536)."""
    return min(max(int(round(float(rate) * _LEVELS)), 0), _LEVELS)


def _int32_seed(seed):
    # Keras keeps seeds in int64 variables; stateless ops take int32 (as
    # Keras's own TensorFlow dropout casts them).
    seed = tf.convert_to_tensor(seed)
    if seed.dtype == tf.int32:
        return seed
    return tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)


def keep_mask(shape, rate, seed):
    """A bool Tensor of `shape`: True with probability 1 - drop_threshold(rate) / 65536.

    Args:
      shape: 1-D int Tensor or list, the mask's shape.
      rate: float in [0, 1], the drop probability.
      seed: [2] int Tensor, a stateless seed.
    """
    shape = tf.convert_to_tensor(shape, tf.int32)
    threshold = drop_threshold(rate)
    if threshold >= _LEVELS:
        return tf.zeros(shape, tf.bool)
    size = tf.reduce_prod(shape)
    words = tf.random.stateless_uniform(tf.reshape((size + 1) // 2, [1]), _int32_seed(seed),
                                        minval=None, maxval=None, dtype=tf.uint32)
    halves = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]
    return tf.reshape(halves >= tf.constant(threshold, tf.uint16), shape)


def dropout(inputs, rate, seed):
    """`inputs` with each element kept (and scaled by 1 / (1 - rate)) or zeroed."""
    if drop_threshold(rate) >= _LEVELS:  # rate 1 (or within 1 / 131072 of it)
        return tf.zeros_like(inputs)
    scale = tf.constant(1.0 / (1.0 - float(rate)), inputs.dtype)
    return tf.where(keep_mask(tf.shape(inputs), rate, seed), inputs * scale,
                    tf.zeros([], inputs.dtype))


@keras.saving.register_keras_serializable(package="bert_tf")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with the 16-bit mask of `dropout` (same arguments, same config).

    With a `noise_shape` it is Keras's own layer.
    """

    def call(self, inputs, training=False):
        if not training or self.rate <= 0 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        seed = _replayed_seed(self)
        if seed is None:
            seed = self.seed_generator.next()
        return dropout(inputs, self.rate, seed)


def _replayed_seed(layer):
    return layer.__dict__.get("_replayed_seeds", {}).get(threading.get_ident())


def draw_seeds(layers, training):
    """One seed per `Dropout` of `layers` that would draw one in a call with `training`.

    Each is what the layer's own call would draw (its seed generator moves on as
    in that call, or its seed of an enclosing `replay_seeds` / `keyed_seeds`);
    None for a layer that draws none (not training, rate 0, or a `noise_shape`:
    Keras's own dropout).
    """
    seeds = []
    for layer in layers:
        seed = None
        if training and layer.rate > 0 and layer.noise_shape is None:
            seed = _replayed_seed(layer)
            if seed is None:
                seed = layer.seed_generator.next()
        seeds.append(seed)
    return seeds


def dropout_layers(model):
    """The `Dropout` layers of `model` (a Keras model or layer), in its tracking order.

    The order is that of the model's construction, the same in every process
    that builds the same model: `keyed_seeds` numbers the layers by it.
    """
    return [layer for layer in model._flatten_layers()  # pylint: disable=protected-access
            if isinstance(layer, Dropout)]


def keyed_seeds(layers, key):
    """Within: the i-th `Dropout` of `layers` drops with the seed `stateless_fold_in(key, i)`.

    Args:
      layers: the `Dropout` layers (`dropout_layers(model)`).
      key: [2] int32 or int64 Tensor, e.g. the run's seed folded with the
        global step (see `bert_tf.training.steps`).

    As `replay_seeds` (per thread, each layer called at most once within).
    """
    key = tf.convert_to_tensor(key)
    seeds = [tf.random.experimental.stateless_fold_in(key, i) for i in range(len(layers))]
    return replay_seeds(layers, seeds)


@contextlib.contextmanager
def replay_seeds(layers, seeds):
    """Within: each `Dropout` of `layers` drops with its seed of `seeds` (see `draw_seeds`).

    Each layer must be called at most once within (a second call would repeat
    its mask). Per thread: the replicas of a `tf.distribute` strategy trace in
    threads of their own, each with its own seeds.
    """
    thread = threading.get_ident()
    missing = object()
    previous = []
    for layer, seed in zip(layers, seeds):
        # In the instance's __dict__: Keras tracks nothing of it.
        replayed = layer.__dict__.setdefault("_replayed_seeds", {})
        previous.append(replayed.get(thread, missing))
        replayed[thread] = seed
    try:
        yield
    finally:
        # An enclosing replay (`keyed_seeds` around a recomputed layer's) keeps its seeds.
        for layer, seed in zip(layers, previous):
            if seed is missing:
                layer.__dict__["_replayed_seeds"].pop(thread, None)
            else:
                layer.__dict__["_replayed_seeds"][thread] = seed
