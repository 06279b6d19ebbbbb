"""Variable surgery: a layer's variable or sub-layer replaced by a new one at the same path.

Head pruning (`attention.py`: a smaller dense layer for query, key, value and
the attention output) and a vocab resize (`embeddings.py`'s word table, the
masked-LM head's bias) swap an object of a built layer for one of another
shape. The checkpoint code names a variable by its Keras path
(`bert/encoder/layer_0/attention/self/query/kernel` is its TF1 name), so the
new object is made in the old one's name scope, takes its paths, and takes
its place everywhere the layer tracks it: `weights`, `trainable_variables`
(or `non_trainable_variables`), the sub-layers, and TensorFlow's object graph
(`tf.train.Checkpoint`, SavedModel). The old one is then in none of them.

Keras 3 has no public way to do this: `replace_tracked` is the one place
that uses the layer's private tracker (`Layer._tracker.replace_tracked_value`)
and the name scope of a caller (`keras.name_scope(name, caller=layer)`).
tests/test_surgery.py pins what it relies on, so that a Keras upgrade that
changes either fails there first.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops


def _paths(obj):
    """The variable paths of a variable or a layer (its weights, in order)."""
    if isinstance(obj, keras.Variable):
        return [obj.path]
    return [variable.path for variable in obj.weights]


def replace_tracked(parent, attr, make):
    """`parent.<attr>` (a variable or a built layer) replaced by `make(old)`; returns the new one.

    `make(old)` runs in `parent`'s name scope, so the variables it creates
    (a new variable, or a new layer built there) get the paths the old ones
    have. The new object then stands where the old one stood among
    `parent`'s tracked variables or layers (once, in the old one's place) and
    under the attribute `attr`. An optimizer built, or a function traced,
    before still holds the old variables.

    Raises:
      AssertionError: the new object's variable paths are not the old one's.
    """
    old = getattr(parent, attr)
    with keras.name_scope(parent.name, caller=parent):
        new = make(old)
    if _paths(new) != _paths(old):
        raise AssertionError("replace_tracked: %s became %s" % (_paths(old), _paths(new)))
    if isinstance(old, keras.Variable):
        store = "trainable_variables" if old.trainable else "non_trainable_variables"
    else:
        store = "layers"
    parent._tracker.replace_tracked_value(store, old, new)  # pylint: disable=protected-access
    # Keras finds `new` tracked already (nothing is added); TensorFlow's object
    # graph now names `new`, not `old`, under `attr`.
    setattr(parent, attr, new)
    return new


def replace_weight(layer, attr, value):
    """`layer.<attr>`, a variable, replaced by a new one holding `value` (any shape).

    The new variable has the old one's name, path (so its TF1 name), dtype,
    trainability and place among `layer`'s weights. An optimizer built, or a
    function traced, before still holds the old variable.
    """
    def make(old):
        return keras.Variable(ops.cast(value, old.dtype), dtype=old.dtype,
                              trainable=old.trainable, name=old.name)
    return replace_tracked(layer, attr, make)
