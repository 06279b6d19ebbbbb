"""GELU and LayerNorm in a training step: the same outputs, the gradients written out.

A training call runs each GELU (`activations.training_form`) and each
LayerNorm (`BertLayerNorm`) with a hand-written derivative instead of
TensorFlow's op-by-op one, which costs fewer passes over the activations.
What a user relies on: the forward numbers are the same bit for bit, the
gradients are TensorFlow's own up to float32 rounding, and an exported
(inference) graph is what it was.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.modeling import activations
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.initializers import layer_norm


def _values():
    # Saturated tails (tanh = +-1, erf = +-1, exp underflowing), zero, the bulk.
    rng = np.random.default_rng(0)
    bulk = rng.normal(0.0, 2.0, size=500)
    return tf.constant(np.concatenate([bulk, [-30.0, -9.0, -4.0, -1e-6, 0.0, 1e-6, 4.0, 9.0, 30.0]])
                       .astype(np.float32))


@pytest.mark.parametrize("activation", [activations.gelu, activations.gelu_exact],
                         ids=["gelu", "gelu_exact"])
def test_gelu_training_form_has_the_same_outputs_and_tensorflows_gradient(activation):
    x = _values()
    trained = activations.training_form(activation)
    assert trained is not activation
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        plain, written = activation(x), trained(x)
    np.testing.assert_array_equal(written.numpy(), plain.numpy())
    autodiff = tape.gradient(plain, x).numpy()
    derivative = tape.gradient(written, x).numpy()
    assert np.all(np.isfinite(derivative))
    np.testing.assert_allclose(derivative, autodiff, rtol=1e-5, atol=1e-6)
    # The derivative's own values where they are known: 0 far left, 1 far right, 0.5 at 0.
    np.testing.assert_allclose(derivative[-9:][[0, 4, 8]], [0.0, 0.5, 1.0], atol=1e-6)


def test_other_activations_train_as_they_are():
    for activation in (keras.ops.relu, keras.ops.tanh, None):
        assert activations.training_form(activation) is activation


def _layer_norm_pair(width=24):
    ours = layer_norm()
    ours.build((None, None, width))
    rng = np.random.default_rng(1)
    ours.gamma.assign(rng.uniform(0.5, 1.5, width).astype(np.float32))
    ours.beta.assign(rng.normal(size=width).astype(np.float32))
    keras_own = keras.layers.LayerNormalization(axis=-1, epsilon=1e-12)
    keras_own.build((None, None, width))
    keras_own.set_weights(ours.get_weights())
    return ours, keras_own


def _float64_gradients(x, dy, gamma, beta):
    x, dy, gamma, beta = (tf.cast(t, tf.float64) for t in (x, dy, gamma, beta))
    with tf.GradientTape() as tape:
        tape.watch([x, gamma, beta])
        mean, variance = tf.nn.moments(x, [-1], keepdims=True)
        y = (x - mean) * tf.math.rsqrt(variance + 1e-12) * gamma + beta
    return [g.numpy() for g in tape.gradient(y, [x, gamma, beta], dy)]


def _layer_norm_outputs_and_gradients(layer, x, dy, in_function):
    def run():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
        return [y] + tape.gradient(y, [x, layer.gamma.value, layer.beta.value], dy)

    return [t.numpy() for t in (tf.function(run)() if in_function else run())]


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "tf.function"])
def test_layer_norm_in_training_has_kerass_outputs_and_gradients(in_function):
    ours, keras_own = _layer_norm_pair()
    rng = np.random.default_rng(2)
    # Rows of very different scales.
    x = tf.constant((rng.normal(size=(3, 7, 24)) * rng.uniform(0.01, 50, (3, 7, 1)))
                    .astype(np.float32))
    dy = tf.constant(rng.normal(size=(3, 7, 24)).astype(np.float32))
    y, dx, dgamma, dbeta = _layer_norm_outputs_and_gradients(ours, x, dy, in_function)
    y_k, dx_k, dgamma_k, dbeta_k = _layer_norm_outputs_and_gradients(keras_own, x, dy,
                                                                     in_function)
    np.testing.assert_array_equal(y, y_k)  # Keras's outputs, run the same way
    dx_64, dgamma_64, dbeta_64 = _float64_gradients(x, dy, ours.gamma.value, ours.beta.value)
    scale = np.abs(dx_64).max(axis=-1, keepdims=True)  # dx per row, relative to its largest
    np.testing.assert_allclose(dx / scale, dx_64 / scale, rtol=0, atol=1e-6)
    np.testing.assert_allclose(dx / scale, dx_k / scale, rtol=0, atol=1e-6)
    for ours_value, keras_value, exact in ((dgamma, dgamma_k, dgamma_64),
                                           (dbeta, dbeta_k, dbeta_64)):
        np.testing.assert_allclose(ours_value, exact, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours_value, keras_value, rtol=1e-5, atol=1e-5)


def test_layer_norm_gradient_of_a_nearly_constant_row_stays_at_float32s_limit():
    # Variance 1e-8: xhat loses digits to cancellation in float32, in both
    # forms (each is the closer one on some inputs); within 0.1% of the row's largest.
    ours, keras_own = _layer_norm_pair()
    rng = np.random.default_rng(3)
    x = tf.constant((3.0 + rng.normal(size=(1, 2, 24)) * 1e-4).astype(np.float32))
    dy = tf.constant(rng.normal(size=(1, 2, 24)).astype(np.float32))
    dx = _layer_norm_outputs_and_gradients(ours, x, dy, False)[1]
    dx_k = _layer_norm_outputs_and_gradients(keras_own, x, dy, False)[1]
    dx_64 = _float64_gradients(x, dy, ours.gamma.value, ours.beta.value)[0]
    scale = np.abs(dx_64).max()
    error, keras_error = np.abs(dx - dx_64).max() / scale, np.abs(dx_k - dx_64).max() / scale
    assert keras_error < 1e-3
    assert error < 1e-3


def test_layer_norm_keeps_kerass_path_for_bfloat16_inputs():
    ours, keras_own = _layer_norm_pair()
    x = tf.cast(tf.random.stateless_normal([2, 5, 24], [1, 2]), tf.bfloat16)
    np.testing.assert_array_equal(ours(x, training=True).numpy().astype(np.float32),
                                  keras_own(x, training=True).numpy().astype(np.float32))


def _op_types(fn, *args):
    return {op.type for op in tf.function(fn).get_concrete_function(*args).graph.get_operations()}


def test_only_a_training_call_carries_the_written_out_gradients(tiny_config):
    # A gradient override shows as IdentityN in the traced graph: present
    # where the model trains (the layers saw training=True through Keras's
    # call context), absent from the inference graph an export traces.
    config = BertConfig.from_dict(dict(tiny_config.to_dict(), hidden_act="gelu"))
    model = BertModel(config)
    ids = tf.constant([[5, 6, 7, 0]])
    mask = tf.constant([[1, 1, 1, 0]])
    dense = BertDense(4, activation=activations.gelu_exact)
    dense.build((None, 8))
    assert "IdentityN" not in _op_types(
        lambda: model(ids, input_mask=mask, training=False)["sequence_output"])
    assert "IdentityN" in _op_types(
        lambda: model(ids, input_mask=mask, training=True)["sequence_output"])
    assert "IdentityN" not in _op_types(lambda: dense(tf.ones([2, 8]), training=False))
    assert "IdentityN" in _op_types(lambda: dense(tf.ones([2, 8]), training=True))
