"""Initializers (original: `modeling.create_initializer`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras


def create_initializer(initializer_range=0.02):
    """Truncated normal, mean 0, `stddev=initializer_range`, re-drawn beyond 2 stddev.

    Same semantics as `tf.truncated_normal_initializer(stddev=...)`: the stddev is
    that of the untruncated normal.
    """
    return keras.initializers.TruncatedNormal(stddev=initializer_range)


def layer_norm(name="LayerNorm"):
    """The original's `layer_norm`: last axis, biased variance, epsilon 1e-12.

    Keras' default epsilon is 1e-3; contrib's `layer_norm` hard-coded 1e-12.
    Variables: `<scope>/LayerNorm/gamma` and `<scope>/LayerNorm/beta`.
    """
    return keras.layers.LayerNormalization(axis=-1, epsilon=1e-12, name=name)
