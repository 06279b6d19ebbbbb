"""Makes the original BERT code importable under TensorFlow 2.21.

Import this module *first* in an oracle process, before TensorFlow:

  * `TF_USE_LEGACY_KERAS=1`, so `tf.compat.v1.layers.dense` works;
  * graph mode (`tf.compat.v1.disable_v2_behavior()`);
  * a stand-in for `tensorflow.contrib.layers.layer_norm` (the original's only
    use of contrib): scope `LayerNorm`, variables `beta`/`gamma`, normalisation
    over the last axis with variance epsilon 1e-12, as contrib hard-coded;
  * absl flags parsed, because pip's `tokenization.py` defines
    `--preserve_unused_tokens` and reads it inside `tokenize()`.
"""

import os
import sys
import types

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as _tf  # noqa: E402

tf1 = _tf.compat.v1
tf1.disable_v2_behavior()


def _layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None,
                **unused_kwargs):
    with tf1.variable_scope(scope, default_name="LayerNorm"):
        params_shape = inputs.shape[-1:]
        beta = tf1.get_variable("beta", shape=params_shape,
                                initializer=tf1.zeros_initializer())
        gamma = tf1.get_variable("gamma", shape=params_shape,
                                 initializer=tf1.ones_initializer())
        mean, variance = tf1.nn.moments(inputs, [-1], keep_dims=True)
        return tf1.nn.batch_normalization(inputs, mean, variance, offset=beta,
                                          scale=gamma, variance_epsilon=1e-12)


_contrib = types.ModuleType("tensorflow.contrib")
_layers = types.ModuleType("tensorflow.contrib.layers")
_layers.layer_norm = _layer_norm
_contrib.layers = _layers
sys.modules["tensorflow.contrib"] = _contrib
sys.modules["tensorflow.contrib.layers"] = _layers

from bert import modeling  # noqa: E402,F401  (defines nothing global)
from bert import tokenization  # noqa: E402  (defines --preserve_unused_tokens)
from absl import flags as _flags  # noqa: E402

if not _flags.FLAGS.is_parsed():
    _flags.FLAGS(["oracle"])


def pin_global_step_increment(train_op):
    """Makes `global_step += 1` run after the update, so update t uses lr(t).

    The original's train op is `tf.group(apply_op, global_step.assign(global_step
    + 1))` without a control dependency, so the learning rate (computed from
    global_step) may read it before or after the increment: a race (see
    tests/original/optimizer_oracle.py and tests/test_optimization.py). This
    adds the dependency every stock TF1 optimizer has, the order the
    original's comments and warmup formula intend (the first update has lr 0).
    """
    apply_op, increment = train_op.control_inputs
    assert increment.type in ("Assign", "AssignVariableOp"), increment.type
    assert increment.inputs[0].name.startswith("global_step"), increment.inputs[0].name
    increment._add_control_input(apply_op)  # pylint: disable=protected-access
