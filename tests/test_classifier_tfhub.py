"""Tests for tools/run_classifier_with_tfhub.py and bert_tf/tasks/classifier/run_hub.py.

Data: an MRPC-layout task of real English (`demo_corpus.write_sentence_pair_task`),
a WordPiece vocab learned from it, and a tiny BERT (2 layers, hidden 32,
config dropouts 0) written as a Google checkpoint and exported as a TF Hub
encoder by `bert_tf.export.hub.export_tfhub`.

* The tool's run (in this process; the command line's exit status for a bad
  handle in a child) with --do_train --do_eval --do_predict: the three
  records, model.ckpt-N with the original's N, eval_results.txt,
  test_results.tsv; the checkpoint holds exactly run_classifier's names
  (the exported encoder's variables carry Google's), adam slots included.
* run_classifier with --init_checkpoint=<that model.ckpt-N> (and
  the exported model's bert_config.json and vocab) evaluates and predicts
  the same numbers within float32 noise.
* Its flags are run_classifier's but bert_config_file, init_checkpoint,
  vocab_file and do_lower_case (the module gives them), plus
  bert_hub_module_handle.
* Training, in process: the hub model and run_classifier's `BertClassifier`
  from the same Google checkpoint, with the same head (run_classifier draws
  its output_weights from an unseeded truncated normal, so both start from
  one fixed head here) and the same head dropout stream (the same seed
  state in both 0.1-dropout layers), train on the same batches: the same
  losses, and the same checkpoint (every variable and slot). A second run
  in the same output_dir resumes from the last checkpoint.
* Bad input: a handle that is not a SavedModel, a SavedModel that is not a
  BERT encoder (the missing input, output or attribute named), a vocab
  larger than the encoder's word embeddings, a --max_seq_length beyond its
  position embeddings, a TF1 Hub module, no handle: one line each, nothing
  written; on the command line, exit status 2.
* TF Model Garden's `export_tfhub` encoder of the same Google checkpoint
  (slow; only where bench/setup_peers.sh has made the peers' venv): the
  same training losses and eval results as run_classifier's model.
"""

import importlib
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import demo_corpus
from bert_tf.data import vocab
from bert_tf.errors import UserError
from bert_tf.export import hub as export_hub
from bert_tf.modeling import checkpoint
from bert_tf.modeling.bert_model import BertModel
from bert_tf.tasks.classifier import run_hub as hub_run
from bert_tf.tasks.classifier import model_hub as hub_classifier
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.training import Trainer
from bert_tf.training import distribute
from tests.test_classifier import random_examples
from tests.test_pretraining import in_memory_dataset_fn
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_init_checkpoint
from tests.tolerances import MODEL_ATOL
from tests.tools import toolrun

REPO_ROOT = toolrun.REPO_ROOT
TOOL = os.path.join(REPO_ROOT, "tools", "run_classifier_with_tfhub.py")
PEERS_PYTHON = os.path.join(REPO_ROOT, "bench", ".peers", "bin", "python")

NUM_TRAIN, NUM_DEV, NUM_TEST = 40, 13, 11
SEQ_LENGTH = 32
TRAIN_BATCH_SIZE = 8
NUM_TRAIN_EPOCHS = 1.0
NUM_TRAIN_STEPS = int(NUM_TRAIN / TRAIN_BATCH_SIZE * NUM_TRAIN_EPOCHS)  # 5
EVAL_KEYS = ["eval_accuracy", "eval_loss", "global_step", "loss"]
NUM_LABELS = 2


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("classifier_tfhub")
    data_dir = str(tmp / "MRPC")
    demo_corpus.write_sentence_pair_task(
        data_dir, sizes=(("train.tsv", NUM_TRAIN), ("dev.tsv", NUM_DEV), ("test.tsv", NUM_TEST)))
    vocab_file = str(tmp / "vocab.txt")
    tokens = vocab.build_vocab([os.path.join(data_dir, name)
                                for name in ("train.tsv", "dev.tsv", "test.tsv")],
                               vocab_file, vocab_size=400, lower_thresh=2)
    # initializer_range 0.2 (BERT's is 0.02): the random model tells examples apart.
    config = tiny_config(vocab_size=len(tokens), initializer_range=0.2)
    init = write_init_checkpoint(config, str(tmp / "init" / "bert_model.ckpt"))
    preprocessor = str(tmp / "hub" / export_hub.PREPROCESSOR_DIR)
    tf.saved_model.save(_FakePreprocessor(vocab_file), preprocessor)
    return {"tmp": tmp, "data_dir": data_dir, "vocab": vocab_file, "config": config,
            "config_file": write_config(config, str(tmp / "bert_config.json")),
            "init": init, "preprocessor": preprocessor,
            "encoder": _export_encoder(config, vocab_file, init,
                                       str(tmp / "hub" / export_hub.ENCODER_DIR))}


def _export_encoder(config, vocab_file, init_checkpoint, path):
    """The encoder half of `export_hub.export_tfhub` (`export_saved_model --format=tfhub`).

    (Its preprocessor half takes longer to trace than everything else here,
    and this tool does not read it.)
    """
    model = BertModel(config)
    checkpoint.load_checkpoint(model, init_checkpoint, strict=True)
    encoder = export_hub.HubEncoder(model, vocab_file, True)
    tf.saved_model.save(encoder, path, signatures={"serving_default": encoder.serve})
    return path


class _FakePreprocessor(tf.Module):
    """What a TF Hub BERT preprocessor's root takes: strings (the tool refuses it as the encoder)."""

    def __init__(self, vocab_file):
        super().__init__()
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(True, trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sentences")])
    def __call__(self, sentences):
        ids = tf.zeros([tf.size(sentences), SEQ_LENGTH], tf.int32)
        return {"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids}


def _flags(files, output_dir, **overrides):
    """The original README's MRPC command line (the module's vocab and casing), small sizes."""
    values = {
        "task_name": "MRPC", "do_train": "true", "do_eval": "true", "do_predict": "true",
        "data_dir": files["data_dir"], "bert_hub_module_handle": files["encoder"],
        "max_seq_length": SEQ_LENGTH, "train_batch_size": TRAIN_BATCH_SIZE,
        "learning_rate": 1e-3, "num_train_epochs": NUM_TRAIN_EPOCHS, "eval_batch_size": 5,
        "predict_batch_size": 4, "output_dir": str(output_dir),
    }
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


def _read_eval_results(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return {line.split(" = ")[0]: float(line.split(" = ")[1]) for line in lines}


def _read_test_results(path):
    with open(path) as f:
        text = f.read()
    assert text.endswith("\n")
    return np.array([[float(x) for x in line.split("\t")] for line in text.splitlines()])


def _num_records(path):
    return sum(1 for _ in tf.data.TFRecordDataset(str(path)))


# ----------------------------------------------------------------- the tool


@pytest.fixture(scope="module")
def trained(files):
    """One --do_train --do_eval --do_predict run of the tool, shared by the tests below."""
    output_dir = files["tmp"] / "mrpc_output"
    _, log = toolrun.run_tool("run_classifier_with_tfhub", _flags(files, output_dir))
    return {"dir": output_dir, "log": log}


@pytest.mark.slow
def test_tool_trains_evaluates_and_predicts_into_run_classifiers_files(files, trained):
    output_dir = trained["dir"]
    for name, count in (("train", NUM_TRAIN), ("eval", NUM_DEV), ("predict", NUM_TEST)):
        assert _num_records(output_dir / ("%s.tf_record" % name)) == count
    prefix = str(output_dir / ("model.ckpt-%d" % NUM_TRAIN_STEPS))
    # run_classifier's checkpoint names: the exported encoder's variables are Google's.
    want = dict(checkpoint.expected_tf1_variables(files["config"], head="classifier",
                                                  num_labels=NUM_LABELS))
    want.update({"%s/%s" % (name, slot): shape for name, shape in list(want.items())
                 for slot in ("adam_m", "adam_v")})
    want["global_step"] = ()
    assert dict(checkpoint.list_checkpoint_variables(prefix)) == want
    values = checkpoint.read_checkpoint(prefix)
    assert int(values["global_step"]) == NUM_TRAIN_STEPS
    # The encoder was fine-tuned, not only the head.
    start = checkpoint.read_checkpoint(files["init"])
    assert not np.allclose(values["bert/pooler/dense/kernel"], start["bert/pooler/dense/kernel"])
    results = _read_eval_results(output_dir / "eval_results.txt")
    assert sorted(results) == EVAL_KEYS
    assert results["global_step"] == NUM_TRAIN_STEPS
    assert 0.0 <= results["eval_accuracy"] <= 1.0
    probabilities = _read_test_results(output_dir / "test_results.tsv")
    assert probabilities.shape == (NUM_TEST, NUM_LABELS)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    assert "do_lower_case=True" in trained["log"]  # read from the module


@pytest.mark.slow
def test_run_classifier_on_the_tools_checkpoint_gives_the_same_results(files, trained):
    """The tool's model.ckpt-N is a Google checkpoint: run_classifier evaluates and predicts alike."""
    output_dir = files["tmp"] / "run_classifier_output"
    prefix = str(trained["dir"] / ("model.ckpt-%d" % NUM_TRAIN_STEPS))
    argv = _flags(files, output_dir, do_train="false", bert_hub_module_handle=None)
    argv += ["--bert_config_file=%s" % files["config_file"], "--vocab_file=%s" % files["vocab"],
             "--init_checkpoint=%s" % prefix, "--do_lower_case=true"]
    toolrun.run_tool("run_classifier", argv)
    ours = _read_eval_results(trained["dir"] / "eval_results.txt")
    theirs = _read_eval_results(output_dir / "eval_results.txt")
    assert theirs["eval_accuracy"] == ours["eval_accuracy"]
    for key in ("eval_loss", "loss"):
        assert abs(theirs[key] - ours[key]) <= MODEL_ATOL, key
    np.testing.assert_allclose(_read_test_results(trained["dir"] / "test_results.tsv"),
                               _read_test_results(output_dir / "test_results.tsv"),
                               atol=MODEL_ATOL)


def _tool_flags(tool):
    """The flag names of `bert_tf.tools.<tool>` (what its `--help` lists)."""
    module = importlib.import_module("bert_tf.tools." + tool)
    return {flag.name for flag in module.TOOL.flags}


def test_flags_are_run_classifiers_but_the_checkpoints_plus_the_handle():
    ours = _tool_flags("run_classifier_with_tfhub")
    theirs = _tool_flags("run_classifier")
    # --multi_label is run_classifier's alone for now (the hub task has no multi-label head),
    # and so is --doc_stride (long documents).
    assert ours == (theirs - {"bert_config_file", "init_checkpoint", "vocab_file",
                              "do_lower_case", "multi_label", "multi_label_threshold",
                              "doc_stride"}) | {
                                  "bert_hub_module_handle"}
    assert {"distribution_strategy", "use_tpu", "tpu_job_name", "mixed_precision"} <= ours


# ----------------------------------------------------------------- training, in process

NUM_STEPS = 4
WARMUP = 1
LEARNING_RATE = 1e-3


def _train_batches(num_steps, batch_size=8, seed=3):
    flat = random_examples(num_steps * batch_size, seed, num_labels=NUM_LABELS)
    return {k: v.reshape((num_steps, batch_size) + v.shape[1:]) for k, v in flat.items()}


def _same_start(trainer, weights, bias):
    """One fixed head and one head dropout stream (both heads' dropout is 0.1)."""
    head = trainer.model.classifier
    head.output_weights.assign(weights)
    head.output_bias.assign(bias)
    head.dropout.seed_generator.state.assign(np.array([7, 11], np.int64).astype(
        head.dropout.seed_generator.state.dtype))


def _train(trainer, batches, num_steps, init_checkpoint=None):
    history = trainer.train(in_memory_dataset_fn(batches, repeat=True), batches["input_ids"].shape[1],
                            num_steps, LEARNING_RATE, WARMUP, init_checkpoint=init_checkpoint,
                            iterations_per_loop=1)
    return np.concatenate([h["losses"] for h in history])


def _reference_and_hub_training(files, encoder, tmp_path):
    """(run_classifier's losses, the hub model's losses, their trainers) from the same start."""
    strategy = distribute.get_strategy("off")
    module = hub_classifier.inspect_hub_module(encoder, SEQ_LENGTH)
    hub = Trainer(strategy, lambda: hub_classifier.hub_classifier(module, NUM_LABELS),
                  str(tmp_path / "hub"))
    assert isinstance(hub.task, hub_classifier.HubClassifierTask) and hub.task.any_length
    reference = Trainer(strategy, lambda: BertClassifier(files["config"], NUM_LABELS),
                        str(tmp_path / "reference"))
    rng = np.random.RandomState(4)
    weights = rng.normal(0.0, 0.5, (NUM_LABELS, files["config"].hidden_size)).astype(np.float32)
    bias = np.array([0.1, -0.1], np.float32)
    for trainer in (hub, reference):
        _same_start(trainer, weights, bias)
    batches = _train_batches(NUM_STEPS)
    # run_classifier starts from the Google checkpoint (it holds no classifier head).
    reference_losses = _train(reference, batches, NUM_STEPS, init_checkpoint=files["init"])
    hub_losses = _train(hub, batches, NUM_STEPS)
    return reference_losses, hub_losses, reference, hub, batches


@pytest.mark.slow
def test_training_is_run_classifiers_from_the_same_start_and_resumes(files, tmp_path):
    reference_losses, hub_losses, _, hub, batches = _reference_and_hub_training(
        files, files["encoder"], tmp_path)
    assert len(hub_losses) == NUM_STEPS
    np.testing.assert_allclose(hub_losses, reference_losses, atol=MODEL_ATOL)
    assert not np.allclose(hub_losses[-1], hub_losses[0])  # it learned something
    # The same checkpoint, name by name: weights, adam slots, global_step.
    ours = checkpoint.read_checkpoint(str(tmp_path / "hub" / ("model.ckpt-%d" % NUM_STEPS)))
    theirs = checkpoint.read_checkpoint(
        str(tmp_path / "reference" / ("model.ckpt-%d" % NUM_STEPS)))
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        np.testing.assert_allclose(ours[name], theirs[name], atol=MODEL_ATOL, err_msg=name)

    # A second run in the same output_dir resumes from model.ckpt-4 (weights and slots).
    module = hub_classifier.inspect_hub_module(files["encoder"], SEQ_LENGTH)
    again = Trainer(distribute.get_strategy("off"),
                    lambda: hub_classifier.hub_classifier(module, NUM_LABELS),
                    str(tmp_path / "hub"))
    history = again.train(in_memory_dataset_fn(batches, repeat=True), 8, NUM_STEPS + 2,
                          LEARNING_RATE, WARMUP, iterations_per_loop=1)
    assert [h["step"] for h in history] == [NUM_STEPS + 1, NUM_STEPS + 2]
    assert checkpoint.read_checkpoint(
        str(tmp_path / "hub" / ("model.ckpt-%d" % (NUM_STEPS + 2))))["global_step"] == NUM_STEPS + 2
    del hub


# ----------------------------------------------------------------- bad input


class _FakeEncoder(tf.train.Checkpoint):
    """A SavedModel with some of a TF Hub BERT encoder's parts (the tests' bad modules)."""

    def __init__(self, vocab_file, inputs=export_hub.ENCODER_INPUT_KEYS,
                 outputs=("pooled_output",), do_lower_case=None):
        super().__init__()
        # A 4-row table of a name no exporter gives its word embeddings.
        self.kernel = tf.Variable(tf.ones([4, 4]), name="kernel")
        self.trainable_variables = [self.kernel]
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        if do_lower_case is not None:
            self.do_lower_case = tf.Variable(do_lower_case, trainable=False)
        spec = {k: tf.TensorSpec([None, None], tf.int32) for k in inputs}

        @tf.function(input_signature=[spec])
        def call(features):
            x = tf.reduce_mean(tf.gather(self.kernel, features[inputs[0]]), axis=1)
            return {name: x for name in outputs}

        self.__call__ = call


def _bad_modules(files):
    """{name: (handle, [expected parts of the one-line message])}."""
    tmp = files["tmp"] / "bad"
    if tmp.exists():
        shutil.rmtree(str(tmp))
    tmp.mkdir()
    encoder = files["encoder"]
    # The encoder with 3 more tokens in its vocab asset than its word embeddings have rows.
    big_vocab = str(tmp / "big_vocab_encoder")
    shutil.copytree(encoder, big_vocab)
    asset = os.path.join(big_vocab, "assets", "vocab.txt")
    _, num_tokens = toolrun.vocab_with_extra_tokens(files["vocab"], asset)
    # Another model's vocab: 128 tokens (PADDING_ROWS) short of the table's rows.
    short_vocab = str(tmp / "short_vocab_encoder")
    shutil.copytree(encoder, short_vocab)
    short_asset = os.path.join(short_vocab, "assets", "vocab.txt")
    num_rows = files["config"].vocab_size
    with open(files["vocab"], encoding="utf-8") as f:
        tokens = f.read().splitlines()[:num_rows - 128]
    with open(short_asset, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    no_pooled = str(tmp / "no_pooled_output")
    tf.saved_model.save(_FakeEncoder(files["vocab"], outputs=("sequence_output",),
                                     do_lower_case=True), no_pooled)
    no_type_ids = str(tmp / "no_input_type_ids")
    tf.saved_model.save(_FakeEncoder(files["vocab"], inputs=("input_word_ids", "input_mask"),
                                     do_lower_case=True), no_type_ids)
    # A vocab beyond its table, which no name shows: found when the id does not embed.
    small_table = str(tmp / "small_unnamed_table")
    tf.saved_model.save(_FakeEncoder(files["vocab"], do_lower_case=True), small_table)
    no_casing = str(tmp / "no_do_lower_case")
    tf.saved_model.save(_FakeEncoder(files["vocab"]), no_casing)
    tf1_module = str(tmp / "tf1_hub_module")
    shutil.copytree(encoder, tf1_module)
    open(os.path.join(tf1_module, "tfhub_module.pb"), "wb").close()
    not_saved_model = str(tmp / "empty")
    os.makedirs(not_saved_model)
    missing = str(tmp / "missing")

    def where(handle):
        return "--bert_hub_module_handle=%s" % handle

    return {
        "preprocessor": (files["preprocessor"], [
            where(files["preprocessor"]) + " is not a BERT encoder: its __call__ takes no "
            "input_word_ids, input_mask, input_type_ids"]),
        "no input_type_ids": (no_type_ids, [
            where(no_type_ids) + " is not a BERT encoder: its __call__ takes no "
            "input_type_ids:"]),
        "no pooled_output": (no_pooled, [
            where(no_pooled) + " is not a BERT encoder: its __call__ returns no pooled_output"]),
        "no do_lower_case": (no_casing, [
            where(no_casing) + " is not a BERT encoder: it has no do_lower_case variable"]),
        "vocab beyond the word embeddings": (big_vocab, [
            where(big_vocab) + ": its vocab_file %s has %d tokens, more than the %d rows of its "
            "word embedding table bert/embeddings/word_embeddings"
            % (asset, num_tokens, num_tokens - 3)]),
        "vocab far short of the word embeddings": (short_vocab, [
            where(short_vocab) + ": its vocab_file %s has %d tokens, fewer than the %d rows of "
            "its word embedding table bert/embeddings/word_embeddings (the vocab is not the "
            "encoder's)" % (short_asset, num_rows - 128, num_rows)]),
        "vocab beyond an unnamed table": (small_table, [
            where(small_table) + ": the encoder cannot embed id %d, the last of its vocab_file "
            "(the vocab is not the encoder's)" % (files["config"].vocab_size - 1)]),
        "TF1 Hub module": (tf1_module, [where(tf1_module) + " is a TF1 Hub module"]),
        "not a SavedModel": (not_saved_model, [
            where(not_saved_model) + " has no saved_model.pb: not a SavedModel"]),
        "no such directory": (missing, [where(missing) + ": no such directory"]),
        "a file": (files["vocab"], [where(files["vocab"]) + " is a file, not a SavedModel"]),
        "no handle": (None, ["--bert_hub_module_handle is required"]),
    }


def test_bad_handles_give_one_line_errors_before_anything_is_written(files):
    for name, (handle, expected) in _bad_modules(files).items():
        output_dir = files["tmp"] / ("bad_output_%s" % name.replace(" ", "_"))
        with pytest.raises(UserError) as error:
            hub_run.run_classifier_with_tfhub("MRPC", files["data_dir"], handle, str(output_dir),
                                              max_seq_length=SEQ_LENGTH, do_eval=True)
        message = str(error.value)
        assert "\n" not in message, (name, message)
        for part in expected:
            assert part in message, (name, message)
        assert not output_dir.exists(), name


def test_max_seq_length_beyond_the_position_embeddings_is_refused(files):
    output_dir = files["tmp"] / "bad_seq_length"
    with pytest.raises(UserError, match=r"^--max_seq_length=128: Cannot use sequence length 128 "
                       r"because the BERT model was only trained up to sequence length 64 "
                       r"\(the rows of bert/embeddings/position_embeddings in "):
        hub_run.run_classifier_with_tfhub("MRPC", files["data_dir"], files["encoder"],
                                          str(output_dir), max_seq_length=128, do_eval=True)
    assert not output_dir.exists()


def test_module_reads_vocab_and_casing_from_the_savedmodel(files):
    module = hub_classifier.inspect_hub_module(files["encoder"])
    assert module.vocab_file == os.path.join(files["encoder"], "assets", "vocab.txt")
    assert module.do_lower_case is True
    assert (module.hidden_size, module.vocab_size, module.max_position_embeddings) == (
        32, files["config"].vocab_size, 64)
    assert module.training_values == {False, True}  # dropout in training, none in inference
    cased = str(files["tmp"] / "cased_fake")
    tf.saved_model.save(_FakeEncoder(files["vocab"], do_lower_case=False), cased)
    assert hub_classifier.inspect_hub_module(cased).do_lower_case is False


def test_https_handle_without_tensorflow_hub_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_hub", None)  # import fails
    handle = "https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4"
    with pytest.raises(UserError, match=r"^--bert_hub_module_handle=%s: an https:// handle needs "
                       r"tensorflow-hub \(pip install tensorflow-hub\)" % handle):
        hub_classifier.resolve_handle(handle)


@pytest.mark.slow
def test_cli_bad_handle_prints_error_and_exits_2(files):
    output_dir = files["tmp"] / "cli"
    rc, _, err = toolrun.run([sys.executable, TOOL] + _flags(
        files, output_dir, bert_hub_module_handle=files["preprocessor"]))
    assert rc == 2, err[-3000:]
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors == ["error: --bert_hub_module_handle=%s is not a BERT encoder: its __call__ "
                      "takes no input_word_ids, input_mask, input_type_ids: a BERT encoder's "
                      "takes a dict of int32 Tensors input_word_ids, input_mask, input_type_ids"
                      % files["preprocessor"]]
    assert not output_dir.exists()


# ----------------------------------------------------------------- TF Model Garden's encoder


@pytest.mark.slow
def test_model_garden_export_trains_and_evaluates_as_run_classifier(files, tmp_path):
    """Model Garden's `export_tfhub` of the same Google checkpoint, fine-tuned by this tool's model.

    Model Garden runs in the peers' venv (its pins would replace the
    project's TensorFlow); its encoder's variables have its own names
    (`transformer/layer_0/...`), so this compares losses and eval results,
    not checkpoints.
    """
    if not os.path.exists(PEERS_PYTHON):
        pytest.skip("TF Model Garden's exporter runs in the peers' venv, which is not there: "
                    "`bash bench/setup_peers.sh .venv/bin/python` makes bench/.peers")
    encoder = str(tmp_path / "model_garden" / "encoder")
    env = toolrun.tool_env()
    env["TF_USE_LEGACY_KERAS"] = "1"
    result = subprocess.run(
        [PEERS_PYTHON, os.path.join(REPO_ROOT, "tests", "model_garden_export_tfhub.py"),
         "--bert_config_file=%s" % files["config_file"], "--init_checkpoint=%s" % files["init"],
         "--vocab_file=%s" % files["vocab"], "--do_lower_case=true",
         "--export_path=%s" % encoder],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    module = hub_classifier.inspect_hub_module(encoder, SEQ_LENGTH)
    assert module.do_lower_case is True and module.vocab_size == files["config"].vocab_size
    assert module.max_position_embeddings == 64 and module.hidden_size == 32

    reference_losses, hub_losses, reference, hub, _ = _reference_and_hub_training(
        files, encoder, tmp_path)
    np.testing.assert_allclose(hub_losses, reference_losses, atol=MODEL_ATOL)
    examples = random_examples(13, seed=9, num_labels=NUM_LABELS)
    data = _finite(examples, 5)
    ours, theirs = hub.evaluate(data, 5), reference.evaluate(data, 5)
    for key in ("eval_accuracy", "eval_loss", "loss"):
        assert abs(ours[key] - theirs[key]) <= MODEL_ATOL, (key, ours, theirs)


def _finite(examples, batch_size):
    from bert_tf.data.finite_input import FiniteInput  # pylint: disable=g-import-not-at-top
    return FiniteInput(lambda: tf.data.Dataset.from_tensor_slices(examples),
                       len(examples["input_ids"]), batch_size)
