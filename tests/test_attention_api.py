"""BertModel's attention weights (`output_attentions`) and head masks (`head_mask`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.tasks.squad.model import BertSquad
from tests.conftest import TINY_CONFIG, make_inputs
from tests.original import run_oracle

# Softmax outputs in [0, 1] of our graph against the original's, same
# checkpoint and inputs: float32 noise only.
ATTENTION_ATOL = 1e-6

NUM_LAYERS = TINY_CONFIG["num_hidden_layers"]
NUM_HEADS = TINY_CONFIG["num_attention_heads"]


def _model(seed=3):
    keras.utils.set_random_seed(seed)
    return BertModel(BertConfig.from_dict(dict(TINY_CONFIG)))


def _call(model, inputs, **kwargs):
    return model(inputs["input_ids"], input_mask=inputs["input_mask"],
                 token_type_ids=inputs["token_type_ids"], training=False, **kwargs)


def _assert_same_outputs(got, want):
    assert sorted(got) == sorted(want)
    for name in want:
        if name == "attentions":
            continue
        for a, b in zip(tf.nest.flatten(got[name]), tf.nest.flatten(want[name])):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


@pytest.mark.original
def test_attention_probabilities_are_the_original_graphs_softmax(original_checkpoint, tmp_path):
    """`attentions[i]` is the original's `bert/encoder/layer_<i>/attention/self/Softmax`."""
    inputs = original_checkpoint["inputs"]
    np.savez(tmp_path / "inputs.npz", **{k: inputs[k] for k in
                                         ("input_ids", "input_mask", "token_type_ids")})
    run_oracle("model_oracle", "restore", original_checkpoint["config"], tmp_path / "inputs.npz",
               original_checkpoint["ckpt"], tmp_path / "theirs.npz", "attentions")
    theirs = dict(np.load(tmp_path / "theirs.npz"))

    config = BertConfig.from_json_file(original_checkpoint["config"])
    model = BertModel(config)
    checkpoint.load_checkpoint(model, original_checkpoint["ckpt"], strict=True)
    attentions = _call(model, inputs, output_attentions=True)["attentions"]
    assert len(attentions) == config.num_hidden_layers
    batch_size, seq_length = inputs["input_ids"].shape
    for i, probs in enumerate(attentions):
        assert probs.dtype == tf.float32
        assert tuple(probs.shape) == (batch_size, config.num_attention_heads, seq_length,
                                      seq_length)
        np.testing.assert_allclose(probs.numpy(), theirs["attention_probs_%d" % i],
                                   atol=ATTENTION_ATOL, rtol=0, err_msg="layer %d" % i)
    # The padding columns get exactly 0 (exp(-10000) underflows), each row sums to 1.
    probs = attentions[0].numpy()
    for row, mask in enumerate(inputs["input_mask"]):
        assert (probs[row][..., mask == 0] == 0.0).all()
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)


def test_output_attentions_false_keeps_the_outputs_bit_for_bit():
    model = _model()
    inputs = make_inputs()
    default = _call(model, inputs)
    assert sorted(default) == ["all_encoder_layers", "embedding_output", "pooled_output",
                               "sequence_output", "word_embedding_output"]
    explicit = _call(model, inputs, output_attentions=False)
    _assert_same_outputs(explicit, default)
    with_attentions = _call(model, inputs, output_attentions=True)
    assert sorted(with_attentions) == sorted(list(default) + ["attentions"])
    _assert_same_outputs({k: v for k, v in with_attentions.items() if k != "attentions"}, default)


def test_attentions_through_tf_function_equal_eager():
    model = _model()
    inputs = make_inputs()

    @tf.function
    def attentions(input_ids, input_mask, token_type_ids):
        return model(input_ids, input_mask=input_mask, token_type_ids=token_type_ids,
                     training=False, output_attentions=True)["attentions"]

    traced = attentions(inputs["input_ids"], inputs["input_mask"], inputs["token_type_ids"])
    eager = _call(model, inputs, output_attentions=True)["attentions"]
    assert len(traced) == NUM_LAYERS
    for a, b in zip(traced, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=ATTENTION_ATOL)


@pytest.mark.parametrize("shape", [(NUM_LAYERS, NUM_HEADS), (NUM_HEADS,)])
def test_a_head_mask_of_ones_is_no_mask(shape):
    model = _model()
    inputs = make_inputs()
    default = _call(model, inputs, output_attentions=True)
    masked = _call(model, inputs, output_attentions=True, head_mask=np.ones(shape, np.float32))
    _assert_same_outputs(masked, default)
    for a, b in zip(masked["attentions"], default["attentions"]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_one_dimensional_head_mask_applies_to_every_layer():
    model = _model()
    inputs = make_inputs()
    row = np.array([1.0, 0.0, 0.5, 1.0], np.float32)
    broadcast = _call(model, inputs, head_mask=row)
    tiled = _call(model, inputs, head_mask=np.tile(row, (NUM_LAYERS, 1)))
    _assert_same_outputs(broadcast, tiled)


def test_a_zero_in_head_mask_silences_that_head_only():
    """Head 2 of layer 1 masked: layer 0 is untouched, layer 1 is its other heads' sum."""
    model = _model()
    inputs = make_inputs()
    head_mask = np.ones((NUM_LAYERS, NUM_HEADS), np.float32)
    head_mask[1, 2] = 0.0
    default = _call(model, inputs, output_attentions=True)
    masked = _call(model, inputs, output_attentions=True, head_mask=head_mask)
    np.testing.assert_array_equal(masked["all_encoder_layers"][0].numpy(),
                                  default["all_encoder_layers"][0].numpy())
    assert np.abs(masked["sequence_output"].numpy()
                  - default["sequence_output"].numpy()).max() > 1e-3
    # The attention probabilities are reported before the head mask.
    for a, b in zip(masked["attentions"], default["attentions"]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    # Layer 1 by hand: its input and its attention probabilities, head 2's zeroed.
    layer = model.encoder.layers[1]
    attention = layer.attention.self_attention
    hidden = default["all_encoder_layers"][0]
    size = attention.size_per_head
    value = attention.value(hidden).numpy().reshape(hidden.shape[0], hidden.shape[1],
                                                    NUM_HEADS, size)
    probs = default["attentions"][1].numpy() * head_mask[1][None, :, None, None]
    context = np.einsum("BNFT,BTNH->BFNH", probs, value).reshape(hidden.shape)
    want = layer.output_block(layer.intermediate(
        layer.attention.attention_output(context, hidden)),
        layer.attention.attention_output(context, hidden))
    np.testing.assert_allclose(masked["sequence_output"].numpy(), want.numpy(), atol=1e-5)


@pytest.mark.parametrize("shape", [(NUM_LAYERS, NUM_HEADS + 1), (NUM_LAYERS + 1, NUM_HEADS),
                                   (NUM_HEADS - 1,), (1, NUM_LAYERS, NUM_HEADS), ()])
def test_a_head_mask_of_the_wrong_shape_is_a_user_error(shape):
    model = _model()
    inputs = make_inputs()
    with pytest.raises(UserError) as error:
        _call(model, inputs, head_mask=np.ones(shape, np.float32))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("head_mask: expected shape [%d, %d]" % (NUM_LAYERS, NUM_HEADS))
    assert "got %s" % list(shape) in message


@pytest.mark.parametrize("model_class", [BertClassifier, BertPretrainer, BertSquad])
def test_task_models_return_attentions_only_when_asked(model_class):
    keras.utils.set_random_seed(3)
    config = BertConfig.from_dict(dict(TINY_CONFIG))
    model = (BertClassifier(config, num_labels=2) if model_class is BertClassifier
             else model_class(config))
    inputs = make_inputs()
    features = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                "segment_ids": inputs["token_type_ids"],
                "masked_lm_positions": inputs["masked_lm_positions"]}
    default = model(features, training=False)
    assert "attentions" not in default
    head_mask = np.ones((NUM_LAYERS, NUM_HEADS), np.float32)
    outputs = model(features, training=False, output_attentions=True, head_mask=head_mask)
    _assert_same_outputs({k: v for k, v in outputs.items() if k != "attentions"}, default)
    backbone = _call(model.bert, inputs, output_attentions=True)["attentions"]
    assert len(outputs["attentions"]) == NUM_LAYERS
    for a, b in zip(outputs["attentions"], backbone):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
