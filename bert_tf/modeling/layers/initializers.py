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
    return keras.layers.LayerNormalization(axis=-1, epsilon=1e-12, name=name,
                                           dtype=float32_variables_dtype())


# Under a reduced-precision policy whose variables are not float32 (the
# inference policies of `bert_tf.modeling.precision`), these layers keep
# float32 variables: LayerNorm, the embedding tables and the task heads.
_FLOAT32_VARIABLES = {"bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def float32_variables_dtype():
    """The dtype policy for a layer whose variables stay float32, or None (the global one).

    Under Keras's "bfloat16" / "float16" policies (variables in that dtype,
    used for inference: `precision.dtype_policy(..., inference=True)`) this is
    the matching mixed policy: float32 variables, computing in the reduced
    dtype. Under any other policy it is None, so the layer follows the global
    policy as every other layer does.
    """
    return _FLOAT32_VARIABLES.get(keras.config.dtype_policy().name)
