"""Differential tests: our model and checkpoints against the original code."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel, checkpoint
from bert_tf.heads import BertPretrainingHeads
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
