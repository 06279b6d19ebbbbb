"""bert_tf.modeling.layers.surgery: what variable surgery relies on in Keras, pinned.

Head pruning and a vocab resize replace a built layer's variable or dense
sub-layer through Keras' private tracker. After the swap the model's
`weights` and `trainable_variables` (and a sub-layer's TensorFlow object
graph) hold the new object exactly once, at the path the checkpoint code
expects (`bert/...`, the TF1 name), and the old one is gone. A Keras upgrade
that changes the tracker or the caller's name scope fails here first; the
behaviour itself is tests/test_prune_heads.py's and tests/test_embeddings_api.py's.
"""

import keras
import numpy as np
import pytest

from bert_tf import BertConfig, BertModel
from bert_tf.modeling import checkpoint
from bert_tf.modeling.layers import surgery
from tests.conftest import TINY_CONFIG

HIDDEN = TINY_CONFIG["hidden_size"]
SIZE_PER_HEAD = HIDDEN // TINY_CONFIG["num_attention_heads"]


def _model():
    keras.utils.set_random_seed(1)
    return BertModel(BertConfig.from_dict(dict(TINY_CONFIG)))


def _count(variables, variable):
    return sum(1 for v in variables if v is variable)


def _assert_swapped(model, old, new, path, collection="trainable_variables"):
    """`new` in the model's weights and `collection` once, at `path`; `old` in neither."""
    assert new.path == old.path == path
    assert checkpoint.tf1_name(new) == path
    for variables in (model.weights, getattr(model, collection)):
        assert _count(variables, new) == 1
        assert _count(variables, old) == 0
    assert [v.path for v in model.weights].count(path) == 1


def test_a_pruned_dense_layer_is_tracked_in_the_old_ones_place():
    model = _model()
    attention = model.encoder.layers[0].attention
    self_attention = attention.self_attention
    paths_before = [v.path for v in model.weights]
    old_layer = self_attention.query
    old_kernel, old_bias = old_layer.kernel, old_layer.bias
    old_output = attention.attention_output.dense.kernel

    model.prune_heads({0: [1]})

    new_layer = self_attention.query
    assert new_layer is not old_layer
    assert tuple(new_layer.kernel.shape) == (HIDDEN, HIDDEN - SIZE_PER_HEAD)
    prefix = "bert/encoder/layer_0/attention/"
    _assert_swapped(model, old_kernel, new_layer.kernel, prefix + "self/query/kernel")
    _assert_swapped(model, old_bias, new_layer.bias, prefix + "self/query/bias")
    _assert_swapped(model, old_output, attention.attention_output.dense.kernel,
                    prefix + "output/dense/kernel")
    # Every variable keeps its place in the model's order.
    assert [v.path for v in model.weights] == paths_before
    # The sub-layer itself: once among the parent's layers, and TensorFlow's
    # object graph (tf.train.Checkpoint, SavedModel) names the new one.
    assert _count(self_attention._layers, new_layer) == 1  # pylint: disable=protected-access
    assert _count(self_attention._layers, old_layer) == 0  # pylint: disable=protected-access
    assert self_attention._trackable_children("checkpoint")["query"] is new_layer


def test_a_replaced_table_is_tracked_in_the_old_ones_place():
    model = _model()
    embeddings = model.embeddings
    paths_before = [v.path for v in model.weights]
    old = embeddings.word_embeddings
    table = np.ones((7, HIDDEN), np.float32)

    embeddings.set_word_embeddings(table)

    new = embeddings.word_embeddings
    assert new is not old and tuple(new.shape) == (7, HIDDEN)
    _assert_swapped(model, old, new, "bert/embeddings/word_embeddings")
    assert [v.path for v in model.weights] == paths_before
    assert embeddings._trackable_children("checkpoint")["word_embeddings"] is new
    np.testing.assert_array_equal(new.numpy(), table)


def test_a_non_trainable_variable_stays_non_trainable():
    layer = keras.layers.BatchNormalization(name="norm")
    layer.build((None, 3))
    old = layer.moving_mean
    new = surgery.replace_weight(layer, "moving_mean", np.arange(5, dtype=np.float32))
    assert layer.moving_mean is new and new.path == old.path == "norm/moving_mean"
    assert not new.trainable
    assert _count(layer.non_trainable_variables, new) == 1
    assert _count(layer.non_trainable_variables, old) == 0
    assert _count(layer.trainable_variables, new) == 0


def test_a_new_object_at_another_path_is_refused_and_nothing_changes():
    model = _model()
    embeddings = model.embeddings
    old = embeddings.word_embeddings
    with pytest.raises(AssertionError, match="bert/embeddings/word_embeddings"):
        surgery.replace_tracked(embeddings, "word_embeddings",
                                lambda old: keras.Variable(np.zeros((2, 2)), name="other"))
    assert embeddings.word_embeddings is old
    assert _count(model.weights, old) == 1
