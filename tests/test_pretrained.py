"""Tests for bert_tf/pretrained.py: `from_pretrained` (new; the original took three flags).

* (`original`) A Google release directory whose checkpoint the original code
  wrote (`original_checkpoint`, conftest): the backbone and the pre-training
  heads give the original's outputs on the same inputs (MODEL_ATOL).
* Release directories of a checkpoint saved here (so these run without the
  original code): every variable loads bit-exactly, from the directory or its
  prefix; a task head the release lacks starts fresh (and is logged).
* A training run's output_dir (the latest step picked, with or without the
  `checkpoint` state file) gives back its fine-tuned head.
* `do_lower_case` from the release's name as the original's check, and
  overridable; each user mistake is one line naming the file or argument.
"""

import os
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.modeling import checkpoint
from bert_tf import pretrained
from bert_tf import releases as release_lib
from bert_tf import tokenization
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.tasks.squad.model import BertSquad
from tests.conftest import TINY_CONFIG
from tests.conftest import make_inputs
from tests.conftest import write_config
from tests.tolerances import MODEL_ATOL

UNCASED = "uncased_L-12_H-768_A-12"
CASED = "cased_L-12_H-768_A-12"
WWM_CASED = "wwm_cased_L-24_H-1024_A-16"
UNNAMED = "my_bert"
# Upper and lower case of one word, so the tokenizer shows its casing.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "Hello", "world", ",", "!",
         "the", "##s"]
# The original's validate_case_matches_checkpoint lists.
ORIGINAL_LOWER = ["uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
                  "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12"]
ORIGINAL_CASED = ["cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
                  "multi_cased_L-12_H-768_A-12"]


def write_vocab(path, tokens):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    return str(path)


def make_release(source, directory, vocab=VOCAB):
    """A release directory as Google ships it (no `checkpoint` state file).

    `source` has `ckpt` (a checkpoint prefix) and `config` (its json file).
    """
    os.makedirs(directory)
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(source["ckpt"] + suffix, os.path.join(directory, "bert_model.ckpt" + suffix))
    shutil.copy(source["config"], os.path.join(directory, "bert_config.json"))
    write_vocab(os.path.join(directory, "vocab.txt"), vocab)
    return str(directory)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A release-style checkpoint (backbone + pre-training heads) saved by `save_checkpoint`."""
    root = tmp_path_factory.mktemp("saved")
    keras.utils.set_random_seed(3)
    model = BertPretrainer(BertConfig.from_dict(dict(TINY_CONFIG)))
    ckpt = checkpoint.save_checkpoint(model, str(root / "bert_model.ckpt"), update_state=False)
    return {"ckpt": ckpt, "config": write_config(root / "bert_config.json", TINY_CONFIG),
            "values": checkpoint.read_checkpoint(ckpt)}


@pytest.fixture(scope="module")
def releases(saved, tmp_path_factory):
    root = tmp_path_factory.mktemp("releases")
    return {name: make_release(saved, root / name) for name in (UNCASED, CASED, WWM_CASED, UNNAMED)}


@pytest.fixture(scope="module")
def original_release(original_checkpoint, tmp_path_factory):
    return make_release(original_checkpoint, tmp_path_factory.mktemp("original") / UNCASED)


def assert_weights_equal(model, values, names=None):
    """Every variable of `model` (or those named) holds exactly the checkpoint's value."""
    found = set()
    for v in model.weights:
        name = checkpoint.tf1_name(v)
        if names is None or name in names:
            np.testing.assert_array_equal(v.numpy(), values[name], err_msg=name)
            found.add(name)
    assert names is None or found == set(names), set(names) - found


def backbone_names(config):
    return list(checkpoint.expected_tf1_variables(config))


def backbone_outputs(bert, inputs):
    out = bert(inputs["input_ids"], inputs["input_mask"], inputs["token_type_ids"],
               training=False)
    result = {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"],
              "embedding_output": out["embedding_output"],
              "word_embedding_output": out["word_embedding_output"]}
    for i, layer in enumerate(out["all_encoder_layers"]):
        result["layer_%d" % i] = layer
    return result


def assert_close_to_original(ours, theirs):
    for name, value in ours.items():
        np.testing.assert_allclose(np.asarray(value), theirs[name], atol=MODEL_ATOL,
                                   rtol=MODEL_ATOL, err_msg=name)


def features(inputs):
    return {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
            "segment_ids": inputs["token_type_ids"],
            "masked_lm_positions": inputs["masked_lm_positions"]}


def user_error(fn, *args, **kwargs):
    with pytest.raises(UserError) as e:
        fn(*args, **kwargs)
    message = str(e.value)
    assert "\n" not in message, message
    return message


# ---------------------------------------------------------------------------
# A release directory, its prefix, and each head
# ---------------------------------------------------------------------------


@pytest.mark.original
def test_release_directory_gives_the_original_backbone(original_release, original_checkpoint):
    loaded = pretrained.from_pretrained(original_release)
    config, model, tokenizer = loaded
    assert isinstance(loaded, pretrained.Pretrained)
    assert loaded.config is config and loaded.model is model and loaded.tokenizer is tokenizer
    assert config.to_dict() == TINY_CONFIG
    assert type(model) is BertModel
    assert list(tokenizer.vocab) == VOCAB
    assert tokenizer.tokenize("Hello, world!") == ["hello", ",", "world", "!"]
    assert_close_to_original(backbone_outputs(model, original_checkpoint["inputs"]),
                             original_checkpoint["outputs"])


@pytest.mark.original
def test_pretraining_heads_give_the_original_outputs(original_release, original_checkpoint):
    _, model, _ = pretrained.from_pretrained(original_release, head="pretraining")
    assert type(model) is BertPretrainer
    inputs, theirs = original_checkpoint["inputs"], original_checkpoint["outputs"]
    out = model(features(inputs), training=False)
    mlm = out["masked_lm_logits"]
    assert_close_to_original({
        "masked_lm_log_probs": tf.nn.log_softmax(mlm).numpy().reshape(-1, mlm.shape[-1]),
        "next_sentence_log_probs": tf.nn.log_softmax(out["next_sentence_logits"]),
        "pooled_output": out["pooled_output"],
    }, theirs)


@pytest.mark.parametrize("prefix", [False, True])
@pytest.mark.parametrize("head", [None, "pretraining"])
def test_release_loads_every_variable_bit_exactly(releases, saved, head, prefix):
    path = releases[CASED]
    if prefix:
        path = os.path.join(path, "bert_model.ckpt")
    config, model, tokenizer = pretrained.from_pretrained(path, head=head)
    assert config.to_dict() == TINY_CONFIG
    assert type(model) is {None: BertModel, "pretraining": BertPretrainer}[head]
    assert tokenizer.tokenize("Hello, world!") == ["Hello", ",", "world", "!"]
    # None: the backbone only (the checkpoint's cls/* are left out); every
    # variable of the model is the checkpoint's.
    expected = checkpoint.expected_tf1_variables(config, heads=head is not None)
    assert len(model.weights) == len(expected)
    assert_weights_equal(model, saved["values"])


@pytest.mark.parametrize("head", ["classifier", "squad"])
def test_task_head_absent_from_a_release_starts_fresh_on_its_backbone(
        releases, saved, info_logs, head):
    kwargs = {"num_labels": 3} if head == "classifier" else {}
    config, model, _ = pretrained.from_pretrained(releases[UNCASED], head=head, **kwargs)
    assert type(model) is {"classifier": BertClassifier, "squad": BertSquad}[head]
    assert_weights_equal(model, saved["values"], backbone_names(config))
    inputs = make_inputs()
    # The fresh head: the original's initializers (zero bias), and the log says so.
    head_vars = {checkpoint.tf1_name(v): v.numpy() for v in model.weights
                 if checkpoint.is_head_variable(checkpoint.tf1_name(v))}
    bias = "output_bias" if head == "classifier" else "cls/squad/output_bias"
    assert sorted(head_vars) == sorted([bias, bias.replace("bias", "weights")])
    np.testing.assert_array_equal(head_vars[bias], 0.0)
    assert "The %s head is not in" % head in info_logs.text
    assert bias in info_logs.text
    out = model(features(inputs), training=False)
    logits = out["logits"] if head == "classifier" else out["start_logits"]
    assert logits.shape == ((3, 3) if head == "classifier" else (3, 9))
    assert np.all(np.isfinite(logits))


# ---------------------------------------------------------------------------
# A training run's output_dir
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("head,keep_state_file", [("classifier", True), ("squad", False)])
def test_output_dir_gives_back_its_latest_fine_tuned_head(
        releases, saved, tmp_path, head, keep_state_file):
    release = releases[UNCASED]
    kwargs = {"num_labels": 2} if head == "classifier" else {}
    _, model, _ = pretrained.from_pretrained(release, head=head, **kwargs)
    head_vars = [v for v in model.weights if checkpoint.is_head_variable(checkpoint.tf1_name(v))]
    out = tmp_path / "output_dir"
    for step in (1, 2, 10):
        for v in head_vars:
            v.assign(np.full(v.shape, float(step), np.float32))
        checkpoint.save_checkpoint(model, str(out / ("model.ckpt-%d" % step)), global_step=step)
    if not keep_state_file:
        os.remove(out / "checkpoint")  # the highest model.ckpt-N is the latest

    # The run's output_dir holds neither the config nor the vocab: each is named.
    message = user_error(pretrained.from_pretrained, str(out), head=head)
    assert "no bert_config.json in %s" % out in message and "bert_config_file=" in message
    config_file = os.path.join(release, "bert_config.json")
    message = user_error(pretrained.from_pretrained, str(out), head=head,
                         bert_config_file=config_file)
    assert "no vocab.txt in %s" % out in message and "vocab_file=" in message

    config, loaded, tokenizer = pretrained.from_pretrained(
        str(out), head=head, bert_config_file=config_file,
        vocab_file=os.path.join(release, "vocab.txt"))
    assert config.to_dict() == TINY_CONFIG
    if head == "classifier":
        assert loaded.num_labels == 2  # from the checkpoint's output_weights
    for v in loaded.weights:
        if checkpoint.is_head_variable(checkpoint.tf1_name(v)):
            np.testing.assert_array_equal(v.numpy(), 10.0, err_msg=v.path)
    assert_weights_equal(loaded, saved["values"], backbone_names(config))
    # A training run's name says nothing of the casing: the original's default.
    assert tokenizer.tokenize("Hello") == ["hello"]

    if head == "classifier":
        message = user_error(pretrained.from_pretrained, str(out), head=head, num_labels=3,
                             bert_config_file=config_file,
                             vocab_file=os.path.join(release, "vocab.txt"))
        assert "output_weights" in message and "[2, 32]" in message and "[3, 32]" in message
        assert "num_labels" in message and "model.ckpt-10" in message


# ---------------------------------------------------------------------------
# do_lower_case
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,lower", [(UNCASED, True), (CASED, False), (WWM_CASED, False),
                                        (UNNAMED, True)])
def test_do_lower_case_is_inferred_from_the_release_name(releases, name, lower):
    _, _, tokenizer = pretrained.from_pretrained(releases[name])
    assert tokenizer.tokenize("Hello") == (["hello"] if lower else ["Hello"])


def test_do_lower_case_inference_agrees_with_the_original_check():
    for name in ORIGINAL_LOWER + ORIGINAL_CASED:
        prefix = os.path.join("models", name, "bert_model.ckpt")
        inferred = pretrained.infer_do_lower_case(prefix)
        assert inferred == (name in ORIGINAL_LOWER), name
        tokenization.validate_case_matches_checkpoint(inferred, prefix)  # agrees
        with pytest.raises(UserError):
            tokenization.validate_case_matches_checkpoint(not inferred, prefix)
    assert pretrained.infer_do_lower_case(os.path.join("models", WWM_CASED, "bert_model.ckpt")) \
        is False
    for prefix in (os.path.join("out", "model.ckpt-7"), os.path.join(UNCASED, "model.ckpt-7"),
                   os.path.join("encased_L-2", "bert_model.ckpt"), ""):
        assert pretrained.infer_do_lower_case(prefix) is True, prefix


def test_do_lower_case_override(releases):
    _, _, tokenizer = pretrained.from_pretrained(releases[UNNAMED], do_lower_case=False)
    assert tokenizer.tokenize("Hello") == ["Hello"]
    _, _, tokenizer = pretrained.from_pretrained(releases[WWM_CASED], do_lower_case=True)
    assert tokenizer.tokenize("Hello") == ["hello"]
    # Against the name of one of the original's releases: the original's error.
    message = user_error(pretrained.from_pretrained, releases[CASED], do_lower_case=True)
    assert "`--do_lower_case=True`" in message and CASED in message
    message = user_error(pretrained.from_pretrained, releases[UNCASED], do_lower_case=False)
    assert "`--do_lower_case=False`" in message and UNCASED in message


# ---------------------------------------------------------------------------
# One-line errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tokens,expected", [
    (VOCAB + ["w%d" % i for i in range(108)], "has 120 tokens, more than vocab_size 99"),
    ([t for t in VOCAB if t != "[CLS]"], "has no [CLS] token"),
    ([t for t in VOCAB if t != "[UNK]"], "has no [UNK] token"),
])
def test_vocab_that_does_not_fit_the_config(saved, tmp_path, tokens, expected):
    release = make_release(saved, tmp_path / UNCASED, vocab=tokens)
    message = user_error(pretrained.from_pretrained, release)
    assert expected in message and os.path.join(release, "vocab.txt") in message


def test_vocab_far_smaller_than_vocab_size(saved, tmp_path):
    # The config's vocab_size 30522, a vocab of another model: refused before any weight is read.
    release = make_release(saved, tmp_path / UNCASED)
    config_file = write_config(os.path.join(release, "bert_config.json"),
                               dict(TINY_CONFIG, vocab_size=30522))
    message = user_error(pretrained.from_pretrained, release)
    assert message == ("--vocab_file=%s has %d tokens, fewer than vocab_size 30522 of %s (the "
                       "vocab is not the checkpoint's; a model trained with it: pad it with "
                       "[unusedN] lines to 30522 tokens)"
                       % (os.path.join(release, "vocab.txt"), len(VOCAB), config_file))


def test_bad_arguments_are_named(releases, tmp_path):
    message = user_error(pretrained.from_pretrained, releases[UNCASED], head="ner")
    assert "head='ner'" in message and "'classifier'" in message
    message = user_error(pretrained.from_pretrained, releases[UNCASED], num_labels=3)
    assert "num_labels=3" in message and "head='classifier'" in message
    message = user_error(pretrained.from_pretrained, releases[UNCASED], head="classifier",
                         num_labels=0)
    assert "num_labels=0" in message
    message = user_error(pretrained.from_pretrained, releases[UNCASED], head="classifier")
    assert "needs num_labels=" in message and "output_weights" in message
    message = user_error(pretrained.from_pretrained, str(tmp_path / "nowhere"))
    assert message.startswith("%s: not a directory, not a checkpoint prefix (no %s.index)"
                              % (tmp_path / "nowhere", tmp_path / "nowhere"))
    message = user_error(pretrained.from_pretrained, str(tmp_path))
    assert "the directory holds no checkpoint" in message


def test_a_name_that_is_nothing_here_says_what_it_is_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = release_lib.release_names()
    # Every release, in the list or its pattern.
    listed, small = names.split(" and ")
    pattern = re.escape(small).replace(r"\{2,4,6,8,10,12\}", "(2|4|6|8|10|12)").replace(
        r"\{128,256,512,768\}", "(128|256|512|768)").replace(r"\{2,4,8,12\}", "(2|4|8|12)")
    for name in release_lib.RELEASES:
        assert name in listed.split(", ") or re.fullmatch(pattern, name + " (A = H/64)"), name
    for path, hub in [("bert-base-uncased", "bert-base-uncased"),
                      ("google-bert/bert-base-uncased", "google-bert/bert-base-uncased"),
                      (str(tmp_path / "no_such_dir") + "/", None)]:
        message = user_error(pretrained.from_pretrained, path, head="fill_mask")
        assert message == (
            "%s: not a directory, not a checkpoint prefix (no %s.index) and not the name of one "
            "of Google's releases (%s); a Hugging Face model is read from a directory of its "
            "files (config.json, model.safetensors, vocab.txt): pass its path%s"
            % (path, path.rstrip("/"), names, ", e.g. the one huggingface_hub.snapshot_download"
               "('%s') returns" % hub if hub else ""))


def test_strict_backbone_and_pretraining_heads(releases, tmp_path):
    # A config that is not the checkpoint's: the first missing variable is named.
    deeper = write_config(tmp_path / "deeper.json", dict(TINY_CONFIG, num_hidden_layers=3))
    message = user_error(pretrained.from_pretrained, releases[UNCASED], bert_config_file=deeper)
    assert "bert/encoder/layer_2/" in message and "missing from the checkpoint" in message
    # A checkpoint without the pre-training heads (a backbone-only save).
    _, model, _ = pretrained.from_pretrained(releases[UNCASED])
    bare = tmp_path / "backbone_only"
    checkpoint.save_checkpoint(model, str(bare / "model.ckpt-1"), global_step=1)
    for name in ("bert_config.json", "vocab.txt"):
        shutil.copy(os.path.join(releases[UNCASED], name), bare / name)
    assert type(pretrained.from_pretrained(str(bare)).model) is BertModel
    message = user_error(pretrained.from_pretrained, str(bare), head="pretraining")
    assert message.startswith("%s: the checkpoint has no masked-LM head (cls/predictions/*) and "
                              "no next-sentence head (cls/seq_relationship/*)"
                              % (bare / "model.ckpt-1"))
    # strict=False: what the checkpoint shares loads, the rest keeps its initializer.
    _, pretrainer, _ = pretrained.from_pretrained(str(bare), head="pretraining", strict=False)
    np.testing.assert_array_equal(pretrainer.bert.embedding_table.numpy(),
                                  model.embedding_table.numpy())


def test_corrupt_checkpoint_is_one_line(releases, tmp_path):
    release = str(tmp_path / UNCASED)
    shutil.copytree(releases[UNCASED], release)
    with open(os.path.join(release, "bert_model.ckpt.index"), "wb") as f:
        f.write(b"not an index" * 8)
    message = user_error(pretrained.from_pretrained, release)
    assert "bert_model.ckpt.index is not a readable checkpoint index" in message


def test_a_release_directory_without_its_data_file_is_one_line_naming_it(releases, tmp_path):
    release = str(tmp_path / UNCASED)
    shutil.copytree(releases[UNCASED], release)
    os.remove(os.path.join(release, "bert_model.ckpt.data-00000-of-00001"))
    message = user_error(pretrained.from_pretrained, release)
    assert message.startswith(os.path.join(release, "bert_model.ckpt: ")), message
    assert "data file %s.data-* is missing" % os.path.join(release, "bert_model.ckpt") in message
