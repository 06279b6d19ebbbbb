"""Embeddings in (`inputs_embeds`), positions in (`position_ids`), and the word
embeddings replaced or resized (`get/set_input_embeddings`, `resize_token_embeddings`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.modeling.bert_model import BertModel
from bert_tf.tasks.pretraining.model import BertPretrainer
from tests.conftest import TINY_CONFIG, make_inputs
from tests.tolerances import LAYER_ATOL, LAYER_RTOL

OUTPUTS = ("sequence_output", "pooled_output", "embedding_output", "word_embedding_output")


def _model(seed=1, **overrides):
    keras.utils.set_random_seed(seed)
    return BertModel(BertConfig.from_dict(dict(TINY_CONFIG, **overrides)))


def _assert_same_outputs(a, b):
    for key in OUTPUTS:
        np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)
    for x, y in zip(a["all_encoder_layers"], b["all_encoder_layers"]):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_inputs_embeds_of_the_looked_up_rows_give_the_ids_outputs():
    model = _model()
    inputs = make_inputs()
    by_ids = model(inputs["input_ids"], input_mask=inputs["input_mask"],
                   token_type_ids=inputs["token_type_ids"])
    embeds = tf.gather(model.get_input_embeddings(), inputs["input_ids"])
    by_embeds = model(inputs_embeds=embeds, input_mask=inputs["input_mask"],
                      token_type_ids=inputs["token_type_ids"])
    _assert_same_outputs(by_ids, by_embeds)

    # Traced with an unknown batch and length, too.
    unknown = tf.TensorSpec([None, None], tf.int32)
    ids_step = tf.function(lambda i, m, t: model(i, input_mask=m, token_type_ids=t),
                           input_signature=[unknown] * 3)
    embeds_step = tf.function(
        lambda e, m, t: model(inputs_embeds=e, input_mask=m, token_type_ids=t),
        input_signature=[tf.TensorSpec([None, None, 32], tf.float32), unknown, unknown])
    _assert_same_outputs(
        ids_step(inputs["input_ids"], inputs["input_mask"], inputs["token_type_ids"]),
        embeds_step(embeds, inputs["input_mask"], inputs["token_type_ids"]))


def test_inputs_embeds_defaults_mask_and_token_types_from_its_shape():
    model = _model()
    embeds = np.random.RandomState(0).normal(size=(2, 5, 32)).astype(np.float32)
    _assert_same_outputs(
        model(inputs_embeds=embeds),
        model(inputs_embeds=embeds, input_mask=np.ones((2, 5), np.int32),
              token_type_ids=np.zeros((2, 5), np.int32)))
    # The inputs really replace the lookup.
    other = model(inputs_embeds=embeds + 1.0)["sequence_output"]
    assert not np.allclose(model(inputs_embeds=embeds)["sequence_output"], other)


def test_default_positions_are_explicit_zero_to_seq_length():
    model = _model()
    inputs = make_inputs()
    ids, mask = inputs["input_ids"], inputs["input_mask"]
    default = model(ids, input_mask=mask, training=False)
    positions = np.arange(ids.shape[1], dtype=np.int32)
    _assert_same_outputs(default, model(ids, input_mask=mask, position_ids=positions))
    _assert_same_outputs(default, model(ids, input_mask=mask,
                                        position_ids=np.tile(positions, (ids.shape[0], 1))))


def test_position_ids_pick_the_rows_of_the_position_table():
    model, permuted = _model(), _model()
    inputs = make_inputs()
    seq_length = inputs["input_ids"].shape[1]
    order = np.random.RandomState(3).permutation(40)[:seq_length].astype(np.int32)
    table = model.embeddings.position_embeddings.numpy()
    # The same model, with row i of its table holding row order[i].
    permuted.set_weights(model.get_weights())
    permuted.embeddings.position_embeddings.assign(
        np.concatenate([table[order], table[seq_length:]]))
    _assert_same_outputs(
        model(inputs["input_ids"], input_mask=inputs["input_mask"], position_ids=order),
        permuted(inputs["input_ids"], input_mask=inputs["input_mask"]))
    # Per example: each row of position_ids is that example's (a batch of one
    # against a batch of two: float32 noise only).
    per_example = np.stack([order, np.arange(seq_length, dtype=np.int32)])
    both = model(inputs["input_ids"][:2], position_ids=per_example)["embedding_output"]
    np.testing.assert_allclose(
        both[0], model(inputs["input_ids"][:1], position_ids=order)["embedding_output"][0],
        rtol=LAYER_RTOL, atol=LAYER_ATOL)
    np.testing.assert_allclose(
        both[1], model(inputs["input_ids"][1:2])["embedding_output"][0],
        rtol=LAYER_RTOL, atol=LAYER_ATOL)
    assert not np.allclose(both[0], model(inputs["input_ids"][:1])["embedding_output"][0])


@pytest.mark.parametrize("kwargs, message", [
    ({}, "BertModel: pass exactly one of input_ids and inputs_embeds, got neither"),
    ({"input_ids": np.ones((2, 5), np.int32), "inputs_embeds": np.ones((2, 5, 32), np.float32)},
     "BertModel: pass exactly one of input_ids and inputs_embeds, got both"),
    ({"inputs_embeds": np.ones((2, 5, 31), np.float32)},
     "inputs_embeds: expected shape [batch_size, seq_length, 32] (hidden_size 32), got [2, 5, 31]"),
    ({"inputs_embeds": np.ones((2, 32), np.float32)},
     "inputs_embeds: expected shape [batch_size, seq_length, 32] (hidden_size 32), got [2, 32]"),
])
def test_ids_and_embeds_mistakes_are_one_line_user_errors(kwargs, message):
    model = _model()
    with pytest.raises(UserError) as error:
        model(**kwargs)
    assert str(error.value) == message


def test_get_input_embeddings_is_the_word_embeddings_variable():
    model = _model()
    table = model.get_input_embeddings()
    assert table is model.embedding_table is model.get_embedding_table()
    assert table.path == "bert/embeddings/word_embeddings"
    assert tuple(table.shape) == (99, 32)


def test_resize_keeps_old_rows_draws_new_ones_and_keeps_the_outputs(tmp_path):
    model = _model()
    inputs = make_inputs()
    before = model(inputs["input_ids"], input_mask=inputs["input_mask"])
    old_table = model.get_input_embeddings().numpy()
    paths = [v.path for v in model.weights]

    table = model.resize_token_embeddings(150)
    assert table is model.get_input_embeddings()
    assert table.path == "bert/embeddings/word_embeddings" and tuple(table.shape) == (150, 32)
    assert [v.path for v in model.weights] == paths  # same variables, same order
    assert model.config.vocab_size == 150 and model.embeddings.vocab_size == 150
    new = table.numpy()
    np.testing.assert_array_equal(new[:99], old_table)
    rows = new[99:]
    stddev = TINY_CONFIG["initializer_range"]
    assert np.abs(rows).max() <= 2 * stddev and 0.5 * stddev < rows.std() < stddev
    _assert_same_outputs(before, model(inputs["input_ids"], input_mask=inputs["input_mask"]))

    # The checkpoint has the new shape; a model of the updated config loads it.
    prefix = checkpoint.save_checkpoint(model, str(tmp_path / "model.ckpt-1"))
    assert dict(tf.train.list_variables(prefix))["bert/embeddings/word_embeddings"] == [150, 32]
    config = BertConfig.from_dict(model.config.to_dict())
    assert config.to_dict() == dict(TINY_CONFIG, vocab_size=150)
    checkpoint.check_checkpoint_fits(config, prefix)
    clone = BertModel(config)
    checkpoint.load_checkpoint(clone, prefix)
    np.testing.assert_array_equal(clone.get_input_embeddings().numpy(), new)
    ids = np.array([[1, 120, 149, 98]], np.int32)
    _assert_same_outputs(model(ids), clone(ids))
    # The original-sized model refuses it in one line.
    with pytest.raises(UserError, match="word_embeddings"):
        checkpoint.check_checkpoint_fits(BertConfig.from_dict(dict(TINY_CONFIG)), prefix)


def test_resize_to_fewer_rows_keeps_the_first_ones():
    model = _model()
    old_table = model.get_input_embeddings().numpy()
    model.resize_token_embeddings(40)
    np.testing.assert_array_equal(model.get_input_embeddings().numpy(), old_table[:40])
    assert model.config.vocab_size == 40
    with pytest.raises(UserError, match="new_vocab_size must be a positive integer"):
        model.resize_token_embeddings(0)


def test_set_input_embeddings_takes_a_numpy_table_of_any_vocabulary_size():
    model = _model()
    table = np.random.RandomState(0).normal(size=(7, 32)).astype(np.float32)
    variable = model.set_input_embeddings(table)
    assert variable.path == "bert/embeddings/word_embeddings"
    np.testing.assert_array_equal(model.get_input_embeddings().numpy(), table)
    assert model.config.vocab_size == 7
    ids = np.array([[0, 6, 3]], np.int32)
    _assert_same_outputs(model(ids), model(inputs_embeds=table[ids]))
    with pytest.raises(UserError, match=r"expected a table of shape \[vocab_size, 32\].*\[7, 31\]"):
        model.set_input_embeddings(np.zeros((7, 31), np.float32))


def test_pretrainer_resize_follows_with_the_masked_lm_bias(tmp_path):
    keras.utils.set_random_seed(2)
    model = BertPretrainer(BertConfig.from_dict(dict(TINY_CONFIG)))
    bias = model.cls.masked_lm.output_bias
    bias.assign(np.arange(99, dtype=np.float32))
    model.resize_token_embeddings(120)
    new_bias = model.cls.masked_lm.output_bias
    assert new_bias.path == bias.path and tuple(new_bias.shape) == (120,)
    np.testing.assert_array_equal(new_bias.numpy(), np.concatenate([np.arange(99), np.zeros(21)]))

    inputs = make_inputs(vocab_size=120)
    features = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                "segment_ids": inputs["token_type_ids"],
                "masked_lm_positions": inputs["masked_lm_positions"]}
    with tf.GradientTape() as tape:
        logits = model(features)["masked_lm_logits"]
        loss = tf.reduce_sum(logits ** 2)
    assert logits.shape[-1] == 120
    grads = tape.gradient(loss, [model.bert.get_input_embeddings(), new_bias])
    assert all(g is not None for g in grads)

    prefix = checkpoint.save_checkpoint([model.bert, model.cls], str(tmp_path / "model.ckpt-1"))
    shapes = dict(tf.train.list_variables(prefix))
    assert shapes["cls/predictions/output_bias"] == [120]
    assert shapes["bert/embeddings/word_embeddings"] == [120, 32]
    clone = BertPretrainer(BertConfig.from_dict(model.config.to_dict()))
    checkpoint.load_checkpoint([clone.bert, clone.cls], prefix)
    np.testing.assert_array_equal(np.asarray(clone(features)["masked_lm_logits"]),
                                  np.asarray(logits))


def test_the_task_models_take_inputs_embeds_and_position_ids_as_features():
    from bert_tf.tasks.classifier.model import BertClassifier
    keras.utils.set_random_seed(3)
    model = BertClassifier(BertConfig.from_dict(TINY_CONFIG), num_labels=2)
    inputs = make_inputs()
    features = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                "segment_ids": inputs["token_type_ids"]}
    by_ids = model(features)
    embeds = tf.gather(model.bert.get_input_embeddings(), inputs["input_ids"])
    by_embeds = model({"inputs_embeds": embeds, "input_mask": inputs["input_mask"],
                       "segment_ids": inputs["token_type_ids"]})
    np.testing.assert_array_equal(np.asarray(by_ids["logits"]), np.asarray(by_embeds["logits"]))

    seq_length = inputs["input_ids"].shape[1]
    shifted = model(dict(features, position_ids=np.arange(1, 1 + seq_length, dtype=np.int32)))
    direct = model.bert(inputs["input_ids"], input_mask=inputs["input_mask"],
                        token_type_ids=inputs["token_type_ids"],
                        position_ids=np.arange(1, 1 + seq_length, dtype=np.int32))
    np.testing.assert_allclose(np.asarray(shifted["pooled_output"]),
                               np.asarray(direct["pooled_output"]), rtol=0, atol=0)
    assert not np.allclose(np.asarray(shifted["logits"]), np.asarray(by_ids["logits"]))
