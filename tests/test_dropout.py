"""Dropout with 16 random bits per element: the original's rate and scale, Keras's layer contract."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling.layers import dropout


def test_threshold_is_the_rate_in_sixteen_bits():
    assert dropout.drop_threshold(0.1) == 6554      # kept: 0.899994
    assert dropout.drop_threshold(0.0) == 0
    assert dropout.drop_threshold(0.5) == 32768
    assert dropout.drop_threshold(1.0) == 65536
    for rate in (0.05, 0.1, 0.3, 0.9):
        assert abs(dropout.drop_threshold(rate) / 65536.0 - rate) <= 1.0 / 131072


@pytest.mark.parametrize("rate", [0.1, 0.5])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_kept_fraction_and_scale_are_the_originals(rate, dtype):
    # tf.nn.dropout(x, 1 - rate): kept with probability 1 - rate, scaled by
    # 1 / (1 - rate) (in the input's dtype, as Keras's layer scales).
    x = tf.ones([8, 12, 33, 65], dtype)   # an odd number of elements
    y = dropout.dropout(x, rate, tf.constant([3, 4])).numpy().astype(np.float32)
    kept = y != 0
    n = kept.size
    expected = 1.0 - dropout.drop_threshold(rate) / 65536.0
    assert abs(kept.mean() - expected) < 5 * np.sqrt(expected * (1 - expected) / n)
    scale = np.float32(tf.constant(1.0 / (1.0 - rate), dtype).numpy().astype(np.float32))
    np.testing.assert_array_equal(np.unique(y[kept]), [scale])


def test_masks_differ_by_seed_and_are_repeatable():
    shape = [4, 257]
    a = dropout.keep_mask(shape, 0.1, tf.constant([1, 2])).numpy()
    b = dropout.keep_mask(shape, 0.1, tf.constant([1, 2])).numpy()
    c = dropout.keep_mask(shape, 0.1, tf.constant([1, 3])).numpy()
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    # The two 16-bit halves of a word decide different elements independently.
    assert (a.reshape(-1)[:-1:2] != a.reshape(-1)[1::2]).any()


def test_layer_trains_with_a_new_mask_each_call_and_is_identity_otherwise():
    layer = dropout.Dropout(0.3, seed=5)
    x = tf.ones([16, 64])
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())              # inference
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x.numpy())
    first = layer(x, training=True).numpy()
    second = layer(x, training=True).numpy()
    assert (first != second).any()
    np.testing.assert_array_equal(dropout.Dropout(0.0)(x, training=True).numpy(), x.numpy())
    np.testing.assert_array_equal(dropout.Dropout(1.0)(x, training=True).numpy(), 0 * x.numpy())
    # Keras's config: the same arguments.
    config = layer.get_config()
    assert config["rate"] == 0.3 and config["seed"] == 5
    assert isinstance(keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer)), dropout.Dropout)


def test_gradient_is_the_kept_scale_and_runs_under_xla():
    layer = dropout.Dropout(0.2, seed=1)
    x = tf.random.normal([6, 50])

    @tf.function(jit_compile=True)
    def forward_backward(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            total = tf.reduce_sum(y)
        return y, tape.gradient(total, x)

    y, grad = forward_backward(x)
    kept = y.numpy() != 0
    np.testing.assert_allclose(grad.numpy(), np.where(kept, 1.0 / 0.8, 0.0), rtol=1e-6)
    np.testing.assert_allclose(y.numpy()[kept], x.numpy()[kept] / 0.8, rtol=1e-6)
