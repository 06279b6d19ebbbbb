"""Differential tests: our model and checkpoints against the original code."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf.modeling import checkpoint
from bert_tf.modeling.heads import BertPretrainingHeads
from bert_tf.modeling.layers import masks
from tests.conftest import TINY_CONFIG, make_inputs, write_config
from tests.original import run_oracle
from tests.tolerances import MODEL_ATOL

pytestmark = pytest.mark.original

# Random tiny architectures: depth, width, heads, FFN size, vocab, type vocab,
# activation. Each is built and saved by the original graph.
CONFIGS = [
    dict(TINY_CONFIG),
    dict(TINY_CONFIG, num_hidden_layers=3, hidden_size=48, num_attention_heads=3,
         intermediate_size=64, vocab_size=131, type_vocab_size=16, max_position_embeddings=32),
    dict(TINY_CONFIG, num_hidden_layers=1, hidden_size=24, num_attention_heads=6,
         intermediate_size=50, hidden_act="relu", initializer_range=0.5),
]


def _run_ours(model, heads, inputs):
    out = model(inputs["input_ids"], inputs["input_mask"], inputs["token_type_ids"],
                training=False)
    result = {
        "sequence_output": out["sequence_output"].numpy(),
        "pooled_output": out["pooled_output"].numpy(),
        "embedding_output": out["embedding_output"].numpy(),
        "word_embedding_output": out["word_embedding_output"].numpy(),
    }
    for i, layer in enumerate(out["all_encoder_layers"]):
        result["layer_%d" % i] = layer.numpy()
    if heads is not None:
        mlm, nsp = heads(out["sequence_output"], out["pooled_output"],
                         inputs["masked_lm_positions"], model.embedding_table)
        result["masked_lm_log_probs"] = tf.nn.log_softmax(mlm).numpy().reshape(
            -1, mlm.shape[-1])
        result["next_sentence_log_probs"] = tf.nn.log_softmax(nsp).numpy()
    return result


def _assert_outputs_close(ours, theirs):
    for name, value in ours.items():
        np.testing.assert_allclose(value, theirs[name], atol=MODEL_ATOL, rtol=MODEL_ATOL,
                                   err_msg=name)


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_original_checkpoint_loads_and_outputs_agree(tmp_path, index):
    config_dict = CONFIGS[index]
    config_file = write_config(tmp_path / "bert_config.json", config_dict)
    inputs = make_inputs(batch_size=3, seq_length=min(13, config_dict["max_position_embeddings"]),
                         vocab_size=config_dict["vocab_size"],
                         type_vocab_size=config_dict["type_vocab_size"], seed=index)
    np.savez(tmp_path / "inputs.npz", **inputs)
    ckpt = str(tmp_path / "orig" / "bert_model.ckpt")
    run_oracle("model_oracle", "save", config_file, tmp_path / "inputs.npz", ckpt,
               tmp_path / "theirs.npz", 100 + index, "heads")
    theirs = dict(np.load(tmp_path / "theirs.npz"))

    config = BertConfig.from_json_file(config_file)
    model, heads = BertModel(config), BertPretrainingHeads(config)
    report = checkpoint.load_checkpoint([model, heads], ckpt, strict=True)
    assert len(report.loaded) == len(checkpoint.expected_tf1_variables(config, heads=True))
    ours = _run_ours(model, heads, inputs)
    assert set(ours) <= set(theirs)
    assert sum(k.startswith("layer_") for k in ours) == config.num_hidden_layers
    _assert_outputs_close(ours, theirs)

    # And the other way: what we save, the original restores and agrees with.
    ours_ckpt = checkpoint.save_checkpoint([model, heads], str(tmp_path / "ours" / "model.ckpt-0"))
    run_oracle("model_oracle", "restore", config_file, tmp_path / "inputs.npz", ours_ckpt,
               tmp_path / "restored.npz", "heads")
    restored = dict(np.load(tmp_path / "restored.npz"))
    for name in theirs:
        np.testing.assert_array_equal(restored[name], theirs[name], err_msg=name)


# A row whose input_mask is all zeros sees `score - 10000.0` everywhere, which
# float32 rounds to a grid of 2^-10 (about 1e-3): a one-ulp difference in a raw
# score can move that row's outputs by about 1e-3 (3e-4 measured), so the row
# is compared at this tolerance. An adder of -1e9 moves it by about 1.
EMPTY_ROW_ATOL = 5e-3


def test_a_row_without_real_tokens_matches_the_original(tmp_path, monkeypatch):
    """An all-zero `input_mask` row: the original adds -10000.0 to every score.

    The softmax of that row then stays that of its raw scores, where a larger
    adder (-1e9) would round the scores away and make it uniform. Only such a
    row tells the two apart: elsewhere exp(-10000) is already exactly 0.
    """
    config_file = write_config(tmp_path / "bert_config.json", TINY_CONFIG)
    inputs = make_inputs(batch_size=4, seq_length=9, seed=2)
    empty_row = 2
    inputs["input_mask"][empty_row] = 0
    np.savez(tmp_path / "inputs.npz", **inputs)
    ckpt = str(tmp_path / "bert_model.ckpt")
    run_oracle("model_oracle", "save", config_file, tmp_path / "inputs.npz", ckpt,
               tmp_path / "theirs.npz", 21, "heads")
    theirs = dict(np.load(tmp_path / "theirs.npz"))

    config = BertConfig.from_json_file(config_file)
    model, heads = BertModel(config), BertPretrainingHeads(config)
    checkpoint.load_checkpoint([model, heads], ckpt, strict=True)

    ours = _run_ours(model, heads, inputs)
    hidden = [k for k in ours if not k.endswith("log_probs")]

    def by_row(outputs):  # every output with the batch axis first
        rows = {k: outputs[k] for k in hidden}
        rows["masked_lm_log_probs"] = outputs["masked_lm_log_probs"].reshape(
            4, -1, config.vocab_size)
        rows["next_sentence_log_probs"] = outputs["next_sentence_log_probs"]
        return rows

    ours, theirs = by_row(ours), by_row(theirs)
    real_rows = [i for i in range(4) if i != empty_row]
    _assert_outputs_close({k: v[real_rows] for k, v in ours.items()},
                          {k: v[real_rows] for k, v in theirs.items()})
    for name in ("layer_0", "layer_1", "sequence_output", "pooled_output"):
        np.testing.assert_allclose(
            ours[name][empty_row], theirs[name][empty_row], atol=EMPTY_ROW_ATOL,
            err_msg="%s of the all-zero input_mask row differs from the original's, which adds "
                    "the mask adder -10000.0 to every score of that row" % name)

    # The row does tell the adders apart: with -1e9 it moves far beyond the
    # tolerance.
    monkeypatch.setattr(masks, "MASK_ADDER", -1e9)
    uniform = by_row(_run_ours(model, heads, inputs))
    assert np.abs(uniform["sequence_output"][empty_row]
                  - theirs["sequence_output"][empty_row]).max() > 20 * EMPTY_ROW_ATOL


# Every LayerNorm gamma, and the embedding tables' scale: each LayerNorm's
# input then has a variance around 1e-10, where an epsilon other than the
# original's 1e-12 changes the output by orders of magnitude.
TINY_SCALE = 1e-5


def test_hidden_states_of_tiny_variance_match_the_original(tmp_path):
    """Every LayerNorm (embeddings, encoder, cls transform) on inputs of variance ~1e-10."""
    config_file = write_config(tmp_path / "bert_config.json", TINY_CONFIG)
    config = BertConfig.from_json_file(config_file)
    keras.utils.set_random_seed(4)
    model, heads = BertModel(config), BertPretrainingHeads(config)
    scaled = []
    for variable in model.weights + heads.weights:
        name = checkpoint.tf1_name(variable)
        if name.endswith("LayerNorm/gamma"):
            variable.assign(np.full(variable.shape, TINY_SCALE, np.float32))
            scaled.append(name)
        elif name.endswith("_embeddings"):  # word, token type and position tables
            value = variable.numpy()
            variable.assign(value * (TINY_SCALE / value.std()))
            scaled.append(name)
    assert len(scaled) == 3 + 1 + 2 * config.num_hidden_layers + 1
    ckpt = checkpoint.save_checkpoint([model, heads], str(tmp_path / "ours" / "model.ckpt-0"))
    inputs = make_inputs(batch_size=3, seq_length=9, seed=5)
    np.savez(tmp_path / "inputs.npz", **inputs)
    run_oracle("model_oracle", "restore", config_file, tmp_path / "inputs.npz", ckpt,
               tmp_path / "theirs.npz", "heads")
    theirs = dict(np.load(tmp_path / "theirs.npz"))
    ours = _run_ours(model, heads, inputs)
    for name in ("embedding_output", "layer_0", "layer_1", "sequence_output", "pooled_output"):
        scale = np.abs(theirs[name]).max()
        assert scale < 10 * TINY_SCALE, (name, scale)  # the hidden states are tiny
        np.testing.assert_allclose(
            ours[name], theirs[name], atol=MODEL_ATOL * scale, rtol=MODEL_ATOL,
            err_msg="%s on hidden states of variance ~1e-10: the LayerNorm epsilon must be "
                    "the original's 1e-12" % name)
    _assert_outputs_close({k: v for k, v in ours.items() if k.endswith("log_probs")}, theirs)


def test_pretraining_checkpoint_with_optimizer_state(original_checkpoint):
    """A checkpoint with cls/*, adam_m/adam_v and global_step, into a bare BertModel."""
    config = BertConfig.from_json_file(original_checkpoint["config"])
    model = BertModel(config)
    report = checkpoint.load_checkpoint(model, original_checkpoint["ckpt"], strict=True)
    names = checkpoint.list_checkpoint_variables(original_checkpoint["ckpt"])
    assert "global_step" in names
    assert any(n.endswith("/adam_m") for n in names)
    assert len(report.unused_heads) == 7
    assert report.global_step == 0
    # Slots for the backbone and the heads, plus global_step.
    assert len(report.skipped_optimizer) == 2 * (len(model.weights) + 7) + 1
    ours = _run_ours(model, None, original_checkpoint["inputs"])
    _assert_outputs_close(ours, original_checkpoint["outputs"])
