"""Activations (original: `modeling.gelu`, `modeling.get_activation`)."""

import math

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
from keras import ops


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
