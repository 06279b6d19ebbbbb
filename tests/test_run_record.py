"""The output directory is the model, and a rerun says what it does (bert_tf_run.json).

* A training run writes bert_config.json, vocab.txt and bert_tf_run.json
  (task, labels, casing, max_seq_length, doc_stride, training flags) beside
  its checkpoints, before its first step: `from_pretrained(output_dir)` with
  no other argument gives the run's model (head, labels, windows), with the
  same predictions as the files passed by hand; the export takes
  --init_checkpoint=output_dir alone. An argument that contradicts the
  record is refused in one line naming both values.
* A rerun with the same flags into a finished run says so in a result line
  (shown at every --verbosity) and evaluates the run's model; a rerun with
  another training flag is refused in one line (exit 2 from the command
  line) with nothing written, and names --overwrite_output_dir, which starts
  the run anew; a flag that does not change training (eval_batch_size) is
  no reason to refuse.
* run_pretraining keeps the same record; its output_dir loads as the
  pre-training model, and a changed --num_train_steps is refused.
"""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf import logs
from bert_tf.errors import UserError
from bert_tf.training import run_record
from tests import test_ner
from tests.test_ner import files  # noqa: F401  (the module's fixture: tiny CoNLL files)
from tests.tools import toolrun
from tests.tools import test_run_classifier_tool as classifier_tool
from tests.tools import test_run_pretraining_tool as pretraining_tool

NER_FLAGS = test_ner._flags


def _snapshot(directory):
    """{name: (size, mtime_ns)} of every file under `directory`."""
    found = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            info = os.stat(path)
            found[os.path.relpath(path, directory)] = (info.st_size, info.st_mtime_ns)
    return found


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture(scope="module")
def ner_run(files):  # noqa: F811
    """One run_ner into a fresh output_dir."""
    output_dir = files["tmp"] / "run_record_out"
    tf.keras.utils.set_random_seed(0)
    toolrun.run_tool("run_ner", NER_FLAGS(files, output_dir))
    return output_dir


def test_a_ner_output_dir_is_the_model(files, ner_run):  # noqa: F811
    names = set(os.listdir(ner_run))
    assert {"bert_config.json", "vocab.txt", run_record.RECORD_FILE} <= names
    assert not [n for n in names if ".tmp-" in n]
    record = json.loads((ner_run / run_record.RECORD_FILE).read_text())
    labels = (ner_run / "labels.txt").read_text().split()
    assert record["tool"] == "run_ner" and record["task"] == "token_classification"
    assert record["labels"] == labels and record["num_labels"] == len(labels)
    assert (record["do_lower_case"], record["max_seq_length"], record["doc_stride"]) == (
        True, test_ner.MAX_SEQ_LENGTH, 5)
    assert record["training_flags"]["learning_rate"] == 3e-3
    assert record["training_flags"]["train_batch_size"] == 8
    # The flags that change the weights: the schedule's four, the records', ScaleOut's and
    # DevEval's (not eval_batch_size, save_checkpoints_steps, ...).
    assert set(record["training_flags"]) == {
        "init_checkpoint", "do_lower_case", "max_seq_length", "doc_stride",
        "train_batch_size", "learning_rate", "num_train_epochs", "warmup_proportion",
        "seed", "optimizer_type", "mixed_precision", "bucket_by_length",
        "eval_every_steps", "best_metric", "early_stopping_patience"}
    assert record["data"] == {"data_dir": files["data_dir"]}
    with open(files["config"]) as a, open(ner_run / "bert_config.json") as b:
        assert json.load(a) == json.load(b)
    with open(files["vocab"], "rb") as a, open(ner_run / "vocab.txt", "rb") as b:
        assert a.read() == b.read()

    config, model, tokenizer = bert_tf.from_pretrained(str(ner_run))  # the directory alone
    by_hand = test_ner._model(files, ner_run)
    assert type(model).__name__ == "BertTokenClassifier"
    assert model.labels == labels
    assert (model.max_seq_length, model.doc_stride) == (test_ner.MAX_SEQ_LENGTH, 5)
    sentences = [words for words, _ in files["test"]]
    assert model.predict_words(sentences) == by_hand.predict_words(sentences)
    texts = ["We met John Smith in Parisville and Acme Corp .", " ".join(sentences[-1])]
    assert model.predict_entities(texts) == by_hand.predict_entities(texts)
    assert config.to_dict() == by_hand.config.to_dict()
    assert tokenizer.tokenize("Johnson") == ["john", "##son"]


def test_arguments_that_contradict_the_record_are_refused(files, ner_run):  # noqa: F811
    with pytest.raises(UserError) as e:
        bert_tf.from_pretrained(str(ner_run), do_lower_case=False)
    message = str(e.value)
    assert "do_lower_case=False" in message and "do_lower_case=true" in message
    assert run_record.RECORD_FILE in message and "\n" not in message
    other_vocab = files["tmp"] / "other_vocab.txt"
    other_vocab.write_text(open(files["vocab"]).read() + "extra\n")
    with pytest.raises(UserError, match="vocab_file=.*differs"):
        bert_tf.from_pretrained(str(ner_run), vocab_file=str(other_vocab))
    with pytest.raises(UserError) as e:
        toolrun.run_tool("export_saved_model", [
            "--init_checkpoint=%s" % ner_run, "--max_seq_length=32",
            "--export_dir=%s" % (files["tmp"] / "refused_export")])
    assert "--max_seq_length=32" in str(e.value) and "max_seq_length=16" in str(e.value)
    assert not os.path.exists(files["tmp"] / "refused_export")


@pytest.mark.slow
def test_a_rerun_into_a_finished_run_says_so_at_every_verbosity(files, ner_run):  # noqa: F811
    before = _snapshot(ner_run)
    handler = _Records()
    logging.getLogger().addHandler(handler)
    try:
        # eval_batch_size does not change training: no reason to refuse.
        toolrun.run_tool("run_ner", NER_FLAGS(files, ner_run, eval_batch_size=4))  # INFO on
    finally:
        logging.getLogger().removeHandler(handler)
    results = [r.getMessage() for r in handler.records if logs.is_result(r)]
    finished = [m for m in results if "holds a finished run" in m]
    assert finished == ["output_dir %s holds a finished run (global_step 36 of 36): not "
                        "training again; evaluating and predicting with its model" % ner_run]
    after = _snapshot(ner_run)
    checkpoints = [n for n in before if n.startswith("model.ckpt-")]
    assert checkpoints and all(after[n] == before[n] for n in checkpoints)
    assert after[run_record.RECORD_FILE] == before[run_record.RECORD_FILE]


def test_a_rerun_with_another_learning_rate_is_refused_with_nothing_written(
        files, ner_run):  # noqa: F811
    before = _snapshot(ner_run)
    with pytest.raises(UserError) as e:
        toolrun.run_tool("run_ner", NER_FLAGS(files, ner_run, learning_rate=1e-3))
    message = str(e.value)
    assert message.startswith("--learning_rate=0.001: --output_dir=%s holds a run trained "
                              "with --learning_rate=0.003 (bert_tf_run.json)" % ner_run)
    assert "--overwrite_output_dir" in message and "new --output_dir" in message
    assert "\n" not in message
    assert _snapshot(ner_run) == before


@pytest.mark.slow
def test_the_command_line_refuses_a_changed_learning_rate_with_exit_2(files, ner_run):  # noqa: F811
    before = _snapshot(ner_run)
    returncode, _, stderr = toolrun.run(
        [sys.executable, os.path.join(toolrun.REPO_ROOT, "tools", "run_ner.py")]
        + NER_FLAGS(files, ner_run, learning_rate=1e-3))
    assert returncode == 2
    assert stderr.strip().splitlines()[-1].startswith("error: --learning_rate=0.001: ")
    assert stderr.count("error: ") == 1 and "Traceback" not in stderr
    assert _snapshot(ner_run) == before


@pytest.mark.slow
def test_overwrite_output_dir_starts_the_run_anew(files, ner_run, tmp_path):  # noqa: F811
    output_dir = tmp_path / "out"
    toolrun.run_tool("run_ner", NER_FLAGS(files, output_dir, do_eval="false",
                                          do_predict="false", num_train_epochs=1.0))
    (output_dir / "notes.txt").write_text("mine")
    assert [n for n in os.listdir(output_dir) if n.endswith(".index")] == ["model.ckpt-12.index"]
    _, log = toolrun.run_tool("run_ner", NER_FLAGS(
        files, output_dir, do_eval="false", do_predict="false", num_train_epochs=1.0,
        learning_rate=1e-3, overwrite_output_dir="true"))
    assert "Resuming" not in log and "holds a finished run" not in log
    record = json.loads((output_dir / run_record.RECORD_FILE).read_text())
    assert record["training_flags"]["learning_rate"] == 1e-3
    assert (output_dir / "notes.txt").read_text() == "mine"  # not a run's file
    assert "global_step 12" in log


@pytest.mark.slow
def test_the_export_takes_the_output_dir_alone(files, ner_run, tmp_path):  # noqa: F811
    """Its windows too: without --doc_stride a text longer than a window is cut as the run
    cut its sentences (the record's max_seq_length and doc_stride), not at a default."""
    export, _ = toolrun.run_tool("export_saved_model", [
        "--init_checkpoint=%s" % ner_run, "--export_dir=%s" % (tmp_path / "export"),
        "--version=1"])
    loaded = tf.saved_model.load(export)
    record = json.loads((ner_run / run_record.RECORD_FILE).read_text())
    assert (int(loaded.doc_stride), int(loaded.max_seq_length)) == (
        record["doc_stride"], record["max_seq_length"]) == (5, test_ner.MAX_SEQ_LENGTH)
    serve = loaded.signatures["serving_default"]
    # Words of several windows (room 14, a start every 5 sub-tokens).
    text = " ".join(files["test"][-1][0] + ["We met John Smith in Parisville and Acme Corp ."] * 2)
    got = serve(text_a=tf.constant([text]))
    n = int(got["num_words"][0])
    assert n == len(text.split()) > test_ner.MAX_SEQ_LENGTH
    model = bert_tf.from_pretrained(str(ner_run)).model
    assert (model.max_seq_length, model.doc_stride) == (test_ner.MAX_SEQ_LENGTH, 5)
    assert [w.decode() for w in got["labels"][0][:n].numpy()] == model.predict_words(
        [text.split()])[0]


@pytest.mark.slow
def test_an_export_of_a_checkpoint_alone_windows_as_its_task_trains(files, ner_run, tmp_path):  # noqa: F811
    """A checkpoint prefix carries no record: the stride is the one bert-run-ner trains
    with when --doc_stride is not given (`text_windows.DOC_STRIDES`), not SQuAD's."""
    from bert_tf.data import text_windows
    from bert_tf.tasks.token_classification.run import run_ner
    import inspect
    export, _ = toolrun.run_tool("export_saved_model", [
        "--task_name=ner", "--init_checkpoint=%s" % tf.train.latest_checkpoint(str(ner_run)),
        "--bert_config_file=%s" % files["config"], "--vocab_file=%s" % files["vocab"],
        "--max_seq_length=%d" % test_ner.MAX_SEQ_LENGTH,
        "--export_dir=%s" % (tmp_path / "export"), "--version=1"])
    stride = int(tf.saved_model.load(export).doc_stride)
    assert stride == text_windows.DOC_STRIDES["ner"] == inspect.signature(
        run_ner).parameters["doc_stride"].default == 64


def test_the_converter_takes_the_output_dir_alone(files, ner_run, tmp_path):  # noqa: F811
    toolrun.run_tool("convert_checkpoint", [
        "--from=google", "--to=huggingface", "--input=%s" % ner_run,
        "--output_dir=%s" % (tmp_path / "hf")])
    tokenizer_config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert tokenizer_config["do_lower_case"] is True
    assert (tmp_path / "hf" / "vocab.txt").read_text() == open(files["vocab"]).read()
    with pytest.raises(UserError, match=r"--do_lower_case=false: .*do_lower_case=true"):
        toolrun.run_tool("convert_checkpoint", [
            "--from=google", "--to=huggingface", "--input=%s" % ner_run,
            "--do_lower_case=false", "--output_dir=%s" % (tmp_path / "refused")])
    assert not os.path.exists(tmp_path / "refused")


@pytest.mark.slow
def test_a_classifier_output_dir_with_a_best_checkpoint_is_that_model(tmp_path_factory):
    cfiles = classifier_tool.files.__wrapped__(tmp_path_factory)
    output_dir = cfiles["tmp"] / "best_output"
    toolrun.run_tool("run_classifier", classifier_tool._flags(
        cfiles, output_dir, do_eval="false", do_predict="false", eval_every_steps=7,
        learning_rate=1e-3))
    record = json.loads((output_dir / run_record.RECORD_FILE).read_text())
    assert (record["task"], record["labels"], record["num_labels"]) == ("classifier",
                                                                         ["0", "1"], 2)
    assert record["training_flags"]["task_name"] == "MRPC"
    best = run_record.model_files(str(output_dir))["best"]
    assert best.startswith(str(output_dir / "best" / "model.ckpt-"))
    _, model, tokenizer = bert_tf.from_pretrained(str(output_dir))
    _, by_hand, _ = bert_tf.from_pretrained(best, head="classifier",
                                            bert_config_file=cfiles["config"],
                                            vocab_file=cfiles["vocab"])
    assert type(model).__name__ == "BertClassifier" and model.num_labels == 2
    assert [w.path for w in model.weights] == [w.path for w in by_hand.weights]
    for ours, theirs in zip(model.weights, by_hand.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # The export, from the directory alone: the best checkpoint, the run's labels.
    export, _ = toolrun.run_tool("export_saved_model", [
        "--init_checkpoint=%s" % output_dir, "--export_dir=%s" % (cfiles["tmp"] / "export"),
        "--version=1"])
    text = "the company said it would buy the shares"
    got = tf.saved_model.load(export).signatures["serve_text_a"](text_a=tf.constant([text]))
    ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(text) + ["[SEP]"])
    features = {"input_ids": tf.constant([ids]), "input_mask": tf.ones([1, len(ids)], tf.int32),
                "segment_ids": tf.zeros([1, len(ids)], tf.int32)}
    logits = model(features, training=False)["logits"]
    np.testing.assert_allclose(got["probabilities"].numpy(), tf.nn.softmax(logits).numpy(),
                               atol=1e-5)
    assert got["label"].numpy()[0].decode() in ("0", "1")


@pytest.mark.slow
def test_pretraining_keeps_the_record_and_refuses_a_changed_schedule(tmp_path_factory):
    pfiles = pretraining_tool.files.__wrapped__(tmp_path_factory)
    output_dir = str(pfiles["tmp"] / "record_output")
    vocab = _tiny_vocab(pfiles)
    # --vocab_file (new, optional): the vocab and its casing beside the checkpoints.
    flags = pretraining_tool._flags(pfiles, output_dir, do_eval="False", num_train_steps=2)
    toolrun.run_tool("run_pretraining", flags + ["--vocab_file=%s" % vocab,
                                                 "--do_lower_case=false"])
    record = json.loads(open(os.path.join(output_dir, run_record.RECORD_FILE)).read())
    assert (record["tool"], record["task"]) == ("run_pretraining", "pretraining")
    assert record["training_flags"]["num_train_steps"] == 2
    assert record["data"] == {"input_file": pfiles["data"]}
    assert record["do_lower_case"] is False
    with open(os.path.join(output_dir, "vocab.txt")) as f, open(vocab) as g:
        assert f.read() == g.read()
    _, model, tokenizer = bert_tf.from_pretrained(output_dir)
    assert type(model).__name__ == "BertPretrainer"
    assert tokenizer.tokenize("W1") == ["[UNK]"]  # cased, as recorded: "W1" is not "w1"
    # bert-fill-mask on the directory alone.
    answers = str(pfiles["tmp"] / "answers.jsonl")
    toolrun.run_tool("fill_mask", ["--init_checkpoint=%s" % output_dir,
                                   "--text=w1 [MASK] w2", "--output_file=%s" % answers,
                                   "--max_seq_length=%d" % pretraining_tool.SEQ_LENGTH])
    assert len(json.loads(open(answers).read())["masks"]) == 1
    before = _snapshot(output_dir)
    with pytest.raises(UserError, match=r"^--num_train_steps=3: .* --num_train_steps=2 "):
        toolrun.run_tool("run_pretraining", pretraining_tool._flags(
            pfiles, output_dir, do_eval="False", num_train_steps=3) + ["--vocab_file=%s" % vocab,
                                                                       "--do_lower_case=false"])
    assert _snapshot(output_dir) == before


@pytest.mark.slow
def test_pretraining_without_a_vocab_reads_one_given_to_the_loader(tmp_path_factory):
    """No --vocab_file (the original's flags): no vocab.txt beside the checkpoints; a loader
    is given one. --do_lower_case alone is refused (it is the vocab's casing)."""
    pfiles = pretraining_tool.files.__wrapped__(tmp_path_factory)
    output_dir = str(pfiles["tmp"] / "no_vocab_output")
    flags = pretraining_tool._flags(pfiles, output_dir, do_eval="False", num_train_steps=1)
    with pytest.raises(UserError, match="--do_lower_case is the casing of --vocab_file"):
        toolrun.run_tool("run_pretraining", flags + ["--do_lower_case=false"])
    toolrun.run_tool("run_pretraining", flags)
    assert not os.path.exists(os.path.join(output_dir, "vocab.txt"))
    _, model, _ = bert_tf.from_pretrained(output_dir, vocab_file=_tiny_vocab(pfiles))
    assert type(model).__name__ == "BertPretrainer"


def _tiny_vocab(pfiles):
    """A vocab of the tiny config's size."""
    config = json.loads(open(pfiles["config"]).read())
    path = pfiles["tmp"] / "vocab.txt"
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += ["w%d" % i for i in range(config["vocab_size"] - len(tokens))]
    path.write_text("\n".join(tokens) + "\n")
    return str(path)


def test_a_record_needs_no_tensorflow():
    code = ("import sys; from bert_tf.training import run_record; "
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=toolrun.REPO_ROOT,
                   env=dict(os.environ, PYTHONPATH=toolrun.REPO_ROOT))



def test_the_check_of_a_rerun(tmp_path):
    config = tmp_path / "bert_config.json"
    config.write_text(json.dumps({"hidden_size": 32}))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n")
    out = str(tmp_path / "out")
    flags = {"init_checkpoint": str(tmp_path / "init"), "learning_rate": 5e-5, "seed": None}

    def record(tool="run_classifier", **changed):
        return run_record.RunRecord(out, tool, "classifier", dict(flags, **changed),
                                    bert_config_file=str(config), vocab_file=str(vocab))

    first = record()
    first.check(None)
    first.write()
    assert sorted(os.listdir(out)) == ["bert_config.json", "bert_tf_run.json", "vocab.txt"]
    record(learning_rate=1.0).check(None)  # no checkpoint yet: nothing trained to keep
    checkpoint = os.path.join(out, "model.ckpt-3")
    same = record(init_checkpoint=None)  # left out on a rerun: no difference
    same.check(checkpoint)
    assert not same.write_files
    for changed, flag in ((dict(learning_rate=1e-4), "--learning_rate=0.0001: "),
                          (dict(seed=3), "--seed=3: "),
                          (dict(tool="run_ner"), "holds a run_classifier run")):
        with pytest.raises(UserError, match=flag):
            record(**changed).check(checkpoint)
    overwrite = run_record.RunRecord(out, "run_classifier", "classifier",
                                     dict(flags, learning_rate=1e-4), overwrite_output_dir=True)
    overwrite.check(checkpoint)  # --overwrite_output_dir: no refusal
    vocab.write_text("[PAD]\n[UNK]\nother\n")
    with pytest.raises(UserError, match="--vocab_file=.* is not the run's vocab.txt"):
        record().check(checkpoint)
    # Checkpoints without a record (written before it existed): resumed unchecked, no record.
    os.remove(os.path.join(out, run_record.RECORD_FILE))
    unrecorded = record(learning_rate=1.0)
    unrecorded.check(checkpoint)
    assert not unrecorded.write_files
    (tmp_path / "out" / "model.ckpt-3.index").write_text("")
    (tmp_path / "out" / "notes.txt").write_text("")
    assert run_record.clear_run(out) == ["bert_config.json", "model.ckpt-3.index", "vocab.txt"]
    assert os.listdir(out) == ["notes.txt"]


def test_a_run_from_a_hugging_face_directory_keeps_googles_files(tmp_path):
    # --bert_config_file=<dir> --vocab_file=<dir> (docs/huggingface.md): output_dir gets
    # the config as the BertConfig it reads as, in the original's format, and the vocab a
    # token a line, here from a directory whose only vocab is its tokenizer.json.
    from bert_tf.modeling.config import BertConfig
    hf = tmp_path / "hf"
    hf.mkdir()
    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": 3,
              "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 16, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 16,
              "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12}
    (hf / "config.json").write_text(json.dumps(config))
    (hf / "tokenizer.json").write_text(json.dumps(
        {"model": {"type": "WordPiece", "vocab": {"[UNK]": 1, "[PAD]": 0, "hello": 2}}}))
    google = tmp_path / "bert_config.json"
    google.write_text('{"hidden_size": 8,   "vocab_size": 3}\n')  # a Google config, as written
    out = str(tmp_path / "out")
    flags = {"learning_rate": 5e-5}

    def record(config_file):
        return run_record.RunRecord(out, "run_ner", "token_classification", flags,
                                    bert_config_file=str(config_file), vocab_file=str(hf))

    first = record(hf)
    first.check(None)
    first.write()
    with open(os.path.join(out, "bert_config.json")) as f:
        kept = json.load(f)
    assert kept == BertConfig.from_json_file(str(hf)).to_dict()
    assert kept["hidden_act"] == "gelu_exact"  # Hugging Face's "gelu" is the erf form
    assert "model_type" not in kept
    with open(os.path.join(out, "vocab.txt")) as f:
        assert f.read() == "[PAD]\n[UNK]\nhello\n"
    # The same directories again: the same run, resumed, nothing refused.
    record(hf).check(os.path.join(out, "model.ckpt-1"))
    # A Google config is copied byte for byte, as before.
    record(google).write()
    with open(os.path.join(out, "bert_config.json")) as f:
        assert f.read() == google.read_text()
