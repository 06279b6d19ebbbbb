"""`prune_heads`: smaller attention layers, equal to masking, saved and loaded in every format."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf.errors import UserError
from bert_tf.export import saved_model as export
from bert_tf.modeling import checkpoint
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.tasks.squad.model import BertSquad
from tests.conftest import TINY_CONFIG, make_inputs
from tests.tolerances import MODEL_ATOL

NUM_LAYERS = TINY_CONFIG["num_hidden_layers"]
NUM_HEADS = TINY_CONFIG["num_attention_heads"]
SIZE_PER_HEAD = TINY_CONFIG["hidden_size"] // NUM_HEADS
PRUNED = {0: [1, 3], 1: [2]}


def _config():
    return BertConfig.from_dict(dict(TINY_CONFIG))


def _model(seed=3):
    keras.utils.set_random_seed(seed)
    return BertModel(_config())


def _call(model, inputs, **kwargs):
    return model(inputs["input_ids"], input_mask=inputs["input_mask"],
                 token_type_ids=inputs["token_type_ids"], training=False, **kwargs)


def _head_mask(pruned):
    mask = np.ones((NUM_LAYERS, NUM_HEADS), np.float32)
    for layer, heads in pruned.items():
        mask[layer, heads] = 0.0
    return mask


def _assert_close(got, want, atol=MODEL_ATOL):
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(got[name].numpy(), want[name].numpy(), atol=atol,
                                   err_msg=name)


def _shapes(model):
    return {checkpoint.tf1_name(v): tuple(v.shape) for v in model.weights}


def test_pruned_model_equals_the_masked_model_and_is_smaller():
    model = _model()
    inputs = make_inputs()
    masked = _call(model, inputs, head_mask=_head_mask(PRUNED), output_attentions=True)
    kernels_before = {checkpoint.tf1_name(v): v.numpy() for v in model.weights}
    model.prune_heads(PRUNED)

    shapes = _shapes(model)
    assert shapes == dict(checkpoint.expected_tf1_variables(model.config))
    for layer, heads in PRUNED.items():
        width = (NUM_HEADS - len(heads)) * SIZE_PER_HEAD
        prefix = "bert/encoder/layer_%d/attention/" % layer
        for proj in ("query", "key", "value"):
            assert shapes[prefix + "self/%s/kernel" % proj] == (32, width)
            assert shapes[prefix + "self/%s/bias" % proj] == (width,)
        assert shapes[prefix + "output/dense/kernel"] == (width, 32)
        # The kept heads' columns, unchanged.
        kept = [h for h in range(NUM_HEADS) if h not in heads]
        columns = np.concatenate([np.arange(h * SIZE_PER_HEAD, (h + 1) * SIZE_PER_HEAD)
                                  for h in kept])
        weights = {checkpoint.tf1_name(v): v.numpy() for v in model.weights}
        np.testing.assert_array_equal(weights[prefix + "self/query/kernel"],
                                      kernels_before[prefix + "self/query/kernel"][:, columns])
        np.testing.assert_array_equal(weights[prefix + "output/dense/kernel"],
                                      kernels_before[prefix + "output/dense/kernel"][columns])
    assert model.config.pruned_heads == PRUNED
    assert len(model.weights) == len(kernels_before)  # no stale variable is left tracked

    pruned = _call(model, inputs, output_attentions=True)
    _assert_close(pruned, masked)
    for layer, probs in enumerate(pruned["attentions"]):
        kept = [h for h in range(NUM_HEADS) if h not in PRUNED[layer]]
        np.testing.assert_allclose(probs.numpy(), masked["attentions"][layer].numpy()[:, kept],
                                   atol=MODEL_ATOL)
    # A head mask on a pruned model takes the original [layers, heads] shape.
    head_mask = _head_mask(PRUNED)
    head_mask[0, 0] = 0.0
    _assert_close(_call(model, inputs, head_mask=head_mask),
                  _call(_model(), inputs, head_mask=head_mask))


def test_pruning_again_uses_the_original_head_numbers():
    inputs = make_inputs()
    want = _call(_model(), inputs, head_mask=_head_mask({0: [0, 2, 3], 1: [1]}))
    model = _model()
    model.prune_heads({0: [2]})
    model.prune_heads({0: [0, 3], 1: [1]})
    assert model.config.pruned_heads == {0: [0, 2, 3], 1: [1]}
    _assert_close(_call(model, inputs), want)


def test_pruning_again_finds_each_kept_head_at_its_new_column():
    # After {0: [0]}, heads 1, 2, 3 sit at columns 0, 1, 2: pruning head 3 must
    # keep columns 0 and 1, not the columns of heads 1 and 2's original numbers.
    inputs = make_inputs()
    want = _call(_model(), inputs, head_mask=_head_mask({0: [0, 3]}))
    model = _model()
    model.prune_heads({0: [0]})
    model.prune_heads({0: [3]})
    assert model.config.pruned_heads == {0: [0, 3]}
    _assert_close(_call(model, inputs), want)


@pytest.mark.parametrize("heads_to_prune, message", [
    ({2: [0]}, "prune_heads: layer 2 is not in [0, 2)"),
    ({-1: [0]}, "prune_heads: layer -1 is not in [0, 2)"),
    ({0: [4]}, "prune_heads: layer 0 head 4 is not in [0, 4)"),
    ({0: [1], 1: [0, 1, 2, 3]}, "prune_heads: layer 1 would lose all its 4 heads"),
    ({0: [3]}, "prune_heads: layer 0 head 3 is already pruned"),
    ({0: [0, 1, 2]}, "prune_heads: layer 0 would lose all its 4 heads"),
])
def test_bad_prunes_are_one_line_user_errors_and_change_nothing(heads_to_prune, message):
    model = _model()
    model.prune_heads({0: [3]})
    shapes = _shapes(model)
    with pytest.raises(UserError) as error:
        model.prune_heads(heads_to_prune)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)
    assert _shapes(model) == shapes
    assert model.config.pruned_heads == {0: [3]}


def test_config_json_writes_pruned_heads_only_when_there_are_some(tmp_path):
    config = _config()
    assert "pruned_heads" not in config.to_dict()
    assert json.loads(config.to_json_string()) == TINY_CONFIG
    model = BertModel(config)
    model.prune_heads(PRUNED)
    data = json.loads(model.config.to_json_string())
    assert data["pruned_heads"] == {"0": [1, 3], "1": [2]}
    path = str(tmp_path / "bert_config.json")
    model.config.to_json_file(path)
    assert BertConfig.from_json_file(path).pruned_heads == PRUNED
    for bad, words in [({"5": [0]}, "layer '5' is not in [0, 2)"),
                       ({"0": [7]}, "layer 0 head 7 is not in [0, 4)"),
                       ({"0": [0, 1, 2, 3]}, "layer 0 prunes all 4 heads"),
                       ([0], "must be an object")]:
        with pytest.raises(UserError, match="pruned_heads") as error:
            BertConfig.from_dict(dict(TINY_CONFIG, pruned_heads=bad))
        assert words in str(error.value)


def test_pruned_checkpoint_saves_and_loads(tmp_path):
    model = _model()
    model.prune_heads(PRUNED)
    inputs = make_inputs()
    want = _call(model, inputs)
    prefix = checkpoint.save_checkpoint(model, str(tmp_path / "model.ckpt-0"))
    saved = checkpoint.list_checkpoint_variables(prefix)
    assert saved["bert/encoder/layer_0/attention/self/key/kernel"] == (32, 16)
    assert saved["bert/encoder/layer_1/attention/output/dense/kernel"] == (24, 32)

    config_file = str(tmp_path / "bert_config.json")
    model.config.to_json_file(config_file)
    config = BertConfig.from_json_file(config_file)
    checkpoint.check_checkpoint_fits(config, prefix)
    loaded = BertModel(config)
    checkpoint.load_checkpoint(loaded, prefix, strict=True)
    _assert_close(_call(loaded, inputs), want, atol=0.0)
    # The unpruned config does not fit: the first wrong shape is named.
    with pytest.raises(UserError, match=r"layer_0/attention/self/query/kernel has shape "
                                        r"\[32, 16\] in the checkpoint but \[32, 32\] in the "):
        checkpoint.check_checkpoint_fits(_config(), prefix)


@pytest.mark.parametrize("model_class", [BertClassifier, BertPretrainer, BertSquad])
def test_task_models_prune_their_backbone(model_class):
    keras.utils.set_random_seed(3)
    model = (BertClassifier(_config(), num_labels=2) if model_class is BertClassifier
             else model_class(_config()))
    model.prune_heads({1: [0]})
    assert model.config.pruned_heads == {1: [0]}
    assert model.bert.config.pruned_heads == {1: [0]}
    assert _shapes(model.bert)["bert/encoder/layer_1/attention/self/value/bias"] == (24,)
    assert model.get_config()["config"]["pruned_heads"] == {"1": [0]}


def test_pruned_keras_file_round_trip(tmp_path):
    keras.utils.set_random_seed(3)
    model = BertClassifier(_config(), num_labels=2)
    model.prune_heads(PRUNED)
    inputs = make_inputs()
    features = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                "segment_ids": inputs["token_type_ids"]}
    want = model(features, training=False)["logits"].numpy()
    path = str(tmp_path / "pruned.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.config.pruned_heads == PRUNED
    assert _shapes(loaded.bert) == _shapes(model.bert)
    np.testing.assert_array_equal(loaded(features, training=False)["logits"].numpy(), want)


@pytest.mark.slow
def test_pruned_encoder_exports_as_a_saved_model(tmp_path):
    model = _model()
    model.prune_heads(PRUNED)
    config_file = str(tmp_path / "bert_config.json")
    model.config.to_json_file(config_file)
    prefix = checkpoint.save_checkpoint(model, str(tmp_path / "run" / "model.ckpt-3"))
    vocab_file = str(tmp_path / "vocab.txt")
    with open(vocab_file, "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                          + ["w%d" % i for i in range(TINY_CONFIG["vocab_size"] - 5)]) + "\n")
    seq_length = 9
    path = export.export_saved_model("encoder", config_file, vocab_file, True, prefix,
                                     str(tmp_path / "export"), seq_length, version=1)
    assert os.path.basename(path) == "1"
    inputs = make_inputs(seq_length=seq_length)
    want = _call(model, inputs)
    serve = tf.saved_model.load(path).signatures["serve_features"]
    got = serve(input_ids=tf.constant(inputs["input_ids"]),
                input_mask=tf.constant(inputs["input_mask"]),
                segment_ids=tf.constant(inputs["token_type_ids"]))
    # The export's sequence_output is 0 at padding positions.
    kept = inputs["input_mask"][:, :, None].astype(np.float32)
    np.testing.assert_allclose(got["sequence_output"].numpy(),
                               want["sequence_output"].numpy() * kept, atol=MODEL_ATOL)
    np.testing.assert_allclose(got["pooled_output"].numpy(), want["pooled_output"].numpy(),
                               atol=MODEL_ATOL)
