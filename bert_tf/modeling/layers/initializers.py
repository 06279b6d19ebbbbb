"""Initializers (original: `modeling.create_initializer`) and LayerNorm (contrib's `layer_norm`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops
import tensorflow as tf


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
    A `keras.layers.LayerNormalization` whose training calls run a written-out
    gradient (`BertLayerNorm`).
    """
    return BertLayerNorm(axis=-1, epsilon=1e-12, name=name, dtype=float32_variables_dtype())


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


# ------------------------------------------------ LayerNorm's gradient in training


@keras.saving.register_keras_serializable(package="bert_tf")
class BertLayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization`: the same variables, config and outputs.

    In a training call over the last axis on float32 inputs, the outputs come
    from the same ops as Keras's (`ops.moments`, then `x * inv + (beta -
    mean * inv)` with `inv = rsqrt(variance + epsilon) * gamma`), bit for bit,
    and the gradient is written out (`normalized`): differentiated op by op,
    the moments and the affine map cost about twice the element-wise passes
    over [tokens, hidden_size]. The gradients equal Keras's up to float32
    rounding. Any other call (inference, a reduced-precision input, other
    axes) is Keras's own, so exported graphs are unchanged.
    """

    def call(self, inputs, training=None):
        last_axis = list(self.axis) in ([-1], [len(inputs.shape) - 1])
        if (not training or inputs.dtype != tf.float32 or not last_axis or self.rms_scaling
                or not (self.center and self.scale)):
            return super().call(inputs)
        # Read here, so the gradient reaches the variables through their reads.
        return normalized(inputs, tf.convert_to_tensor(self.gamma),
                          tf.convert_to_tensor(self.beta), self.epsilon)


def normalized(x, gamma, beta, epsilon):
    """Keras's layer normalization of `x` over its last axis, with a written-out gradient.

    Args:
      x: float32 Tensor [..., D].
      gamma, beta: float32 Tensors [D].
      epsilon: the variance's epsilon (the original's 1e-12).
    """

    @tf.custom_gradient
    def normalize(x, gamma, beta):
        mean, variance = ops.moments(x, axes=[-1], keepdims=True)
        rstd = tf.math.rsqrt(variance + epsilon)
        inv = rstd * gamma
        outputs = x * inv + (-mean * inv + beta)

        def grad(dy):
            # y = xhat * gamma + beta, xhat = (x - mean) * rstd:
            # dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
            xhat = (x - mean) * rstd
            g = dy * gamma
            dx = rstd * (g - tf.reduce_mean(g, -1, keepdims=True)
                         - xhat * tf.reduce_mean(g * xhat, -1, keepdims=True))
            rows = list(range(len(x.shape) - 1))
            return dx, tf.reduce_sum(dy * xhat, rows), tf.reduce_sum(dy, rows)

        return outputs, grad

    return normalize(x, gamma, beta)
