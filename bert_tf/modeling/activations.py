"""Activations (original: `modeling.gelu`, `modeling.get_activation`)."""

import math

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
from keras import ops
import tensorflow as tf

_SQRT_2_OVER_PI = 0.7978845608028654  # tf.nn.gelu's constant
_TANH_COEFF = 0.044715
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def gelu(x):
    """Gaussian Error Linear Unit, the original's tanh approximation.

    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`, as in every
    released BERT code since February 2019 (bee6030).

    Args:
      x: float Tensor to perform activation.

    Returns:
      `x` with the GELU activation applied.

    Port note: computed by `tf.nn.gelu(x, approximate=True)`, the same formula
    (`0.5 * x * (1 + tanh(0.7978845608... * (x + 0.044715 * x^3)))`): float32
    results equal the original's within rounding, and Grappler's remapper can
    fuse this form into the matmul before it (`BertDense`), where the
    original's op-by-op form stays eight element-wise ops.
    """
    return ops.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU with the exact erf form `0.5 * x * (1 + erf(x / sqrt(2)))`.

    The very first release (fe35475, October 2018) used it; select it with
    `hidden_act: "gelu_exact"`.
    """
    return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))


# ---------------------------------------------------------------- in training
#
# Differentiated op by op, a GELU's backward pass is a dozen element-wise
# passes over the intermediate layer's [tokens, intermediate_size]
# activations, each a trip through memory. In a training step the two GELUs
# below take their place (`training_form`): the same forward ops (the same
# outputs, bit for bit), and the derivative written out, which keeps the
# forward pass's erf / tanh and needs a few passes. The gradients equal the
# op-by-op ones up to float32 rounding. Inference keeps the plain forms, so
# exported graphs hold no gradient override.


@tf.custom_gradient
def _gelu_training(x):
    # tf.nn.gelu(x, approximate=True)'s ops, in its order.
    coeff = tf.cast(_TANH_COEFF, x.dtype)
    t = tf.tanh(_SQRT_2_OVER_PI * (x + coeff * tf.pow(x, 3)))
    y = 0.5 * x * (1.0 + t)

    def grad(dy):
        # d/dx 0.5 x (1 + tanh(u)), u = c (x + k x^3).
        du = _SQRT_2_OVER_PI * (1.0 + 3.0 * coeff * tf.square(x))
        return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - tf.square(t)) * du)

    return y, grad


@tf.custom_gradient
def _gelu_exact_training(x):
    e = tf.math.erf(x / math.sqrt(2.0))  # gelu_exact's ops, in its order
    y = 0.5 * x * (1.0 + e)

    def grad(dy):
        # d/dx 0.5 x (1 + erf(x / sqrt 2)) = Phi(x) + x phi(x).
        return dy * (0.5 * (1.0 + e) + x * (tf.exp(-0.5 * tf.square(x)) * _INV_SQRT_2PI))

    return y, grad


# Each GELU carries its training form (`BertDense` reads it in a training call).
gelu.training_form = _gelu_training
gelu_exact.training_form = _gelu_exact_training


def training_form(activation):
    """The form of `activation` a training step runs: a GELU with its derivative
    written out (the same outputs; see above), any other activation as it is."""
    return getattr(activation, "training_form", activation)


def get_activation(activation_string):
    """Maps a string to a Python function, e.g., "relu" => `relu`.

    As the original: a non-string is returned as is, `""`/None/"linear" give
    None, the lookup is case-insensitive, and anything else raises ValueError.
    """
    if not isinstance(activation_string, str):
        return activation_string
    if not activation_string:
        return None
    act = activation_string.lower()
    if act == "linear":
        return None
    if act == "relu":
        return ops.relu
    if act == "gelu":
        return gelu
    if act in ("gelu_exact", "gelu_erf"):
        return gelu_exact
    if act == "tanh":
        return ops.tanh
    raise ValueError("Unsupported activation: %s" % act)
