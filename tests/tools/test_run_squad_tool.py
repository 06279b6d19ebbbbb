"""Tests for tools/run_squad.py and tools/evaluate_squad.py: runs, files, scores and errors.

The runs call the tools in this process (`toolrun.run_tool`: the flags parsed
and the library called as the command line does, stdout captured); the
command line itself runs as a user runs it for the exit status and stderr of
a mistake.

Data: SQuAD 1.1 and 2.0 files of real English (`tests/squad_task.py: write_squad_task`:
pydoc paragraphs, a word of a sentence asked for), a WordPiece vocab learned
from them, and a tiny BERT (2 layers, hidden 32). Contexts are longer than
--max_seq_length, so each question has several features (doc spans).

* The original's SQuAD command line with --do_train --do_predict (v1.1 and,
  with --version_2_with_negative, v2.0): train.tf_record and eval.tf_record
  (one record per feature), model.ckpt-N with the original's
  N = int(training EXAMPLES / batch * epochs), predictions.json
  and nbest_predictions.json with one entry per question id of the predict
  file (v2.0: null_odds.json too), and the official EM/F1 JSON on stdout
  (one line: the log goes to the logger).
* tools/evaluate_squad.py on the same files (v1.1 with its flags, v2.0 with
  evaluate-v2.0.py's command line) prints the same scores.
* Bad input: one-line `error: ...` messages (`UserError`s, the cases run in
  this process), raised before anything is written; on the command line,
  exit status 2 and no traceback.
"""

import contextlib
import io
import json
import os
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.tasks.squad import data as squad_data
from bert_tf.data import vocab
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_init_checkpoint
from tests.tools import toolrun
from tests.squad_task import write_squad_task

REPO_ROOT = toolrun.REPO_ROOT
TOOL = os.path.join(REPO_ROOT, "tools", "run_squad.py")

TRAIN_BATCH_SIZE = 8
NUM_TRAIN_EPOCHS = 1.0
N_BEST_SIZE = 5


def _question_ids(path):
    with open(path) as f:
        data = json.load(f)["data"]
    return [qa["id"] for entry in data for p in entry["paragraphs"] for qa in p["qas"]]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_files(tmp_path_factory.mktemp("run_squad"))


def write_files(tmp):
    """SQuAD v1.1 and v2.0 train and dev files, their vocab, a tiny config and checkpoint."""
    paths = {"tmp": tmp}
    for version, v2 in (("v1.1", False), ("v2.0", True)):
        paths["train-" + version] = str(tmp / ("train-%s.json" % version))
        paths["dev-" + version] = str(tmp / ("dev-%s.json" % version))
        write_squad_task(paths["train-" + version], 24,
                                     version_2_with_negative=v2)
        # Other paragraphs than the training set's.
        write_squad_task(paths["dev-" + version], 12, seed=7,
                                     version_2_with_negative=v2, first_paragraph=40)
    text = []
    for key in ("train-v1.1", "dev-v1.1", "dev-v2.0"):
        with open(paths[key]) as f:
            for entry in json.load(f)["data"]:
                for p in entry["paragraphs"]:
                    text.append(p["context"])
                    text.extend(qa["question"] for qa in p["qas"])
    corpus = tmp / "corpus.txt"
    corpus.write_text("\n".join(text) + "\n", encoding="utf-8")
    paths["vocab"] = str(tmp / "vocab.txt")
    tokens = vocab.build_vocab([str(corpus)], paths["vocab"], vocab_size=400, lower_thresh=2)
    config = tiny_config(vocab_size=len(tokens))
    paths["config"] = write_config(config, str(tmp / "bert_config.json"))
    paths["init"] = write_init_checkpoint(config, str(tmp / "init" / "bert_model.ckpt"))
    return paths


def _run_here(name, argv):
    """`toolrun.run_tool` with stdout captured: (result, log text, stdout text)."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        result, log = toolrun.run_tool(name, argv)
    return result, log, stdout.getvalue()


def _flags(files, output_dir, version="v1.1", **overrides):
    """The original README's SQuAD command line, with small sizes."""
    values = {
        "vocab_file": files["vocab"], "bert_config_file": files["config"],
        "init_checkpoint": files["init"], "do_train": "True",
        "train_file": files["train-" + version], "do_predict": "True",
        "predict_file": files["dev-" + version], "train_batch_size": TRAIN_BATCH_SIZE,
        "learning_rate": 3e-5, "num_train_epochs": NUM_TRAIN_EPOCHS, "max_seq_length": 64,
        "doc_stride": 32, "max_query_length": 24, "n_best_size": N_BEST_SIZE,
        "output_dir": str(output_dir),
    }
    if version == "v2.0":
        values["version_2_with_negative"] = "True"
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


@pytest.fixture(scope="module")
def runs(files):
    """--do_train --do_predict on SQuAD 1.1 and on 2.0."""
    results = {}
    for version in ("v1.1", "v2.0"):
        output_dir = files["tmp"] / ("squad_" + version)
        _, log, out = _run_here("run_squad", _flags(files, output_dir, version))
        results[version] = {"dir": output_dir, "stdout": out, "log": log}
    return results


def _num_records(path):
    return sum(1 for _ in tf.data.TFRecordDataset(str(path)))


def _logged_counts(log, key):
    """The values of the "  Num <key> = N" lines of the log, in order."""
    marker = "  %s = " % key
    return [int(line.split(marker)[1]) for line in log.splitlines() if marker in line]


def _read_json(path):
    with open(path) as f:
        return json.load(f)


def _check_run(files, run, version):
    output_dir, log = run["dir"], run["log"]
    num_examples = len(squad_data.read_squad_examples(
        files["train-" + version], is_training=True,
        version_2_with_negative=version == "v2.0"))
    (train_features, predict_features) = _logged_counts(log, "Num split examples")
    assert _logged_counts(log, "Num orig examples") == [num_examples,
                                                       len(_question_ids(files["dev-" + version]))]
    # The original's schedule counts examples, not features (doc spans).
    num_steps = int(num_examples / TRAIN_BATCH_SIZE * NUM_TRAIN_EPOCHS)
    assert int(train_features / TRAIN_BATCH_SIZE * NUM_TRAIN_EPOCHS) > num_steps
    assert "  Num steps = %d" % num_steps in log
    latest = tf.train.latest_checkpoint(str(output_dir))
    assert latest == str(output_dir / ("model.ckpt-%d" % num_steps))
    assert int(checkpoint.read_checkpoint(latest)["global_step"]) == num_steps
    assert _num_records(output_dir / "train.tf_record") == train_features
    assert _num_records(output_dir / "eval.tf_record") == predict_features

    question_ids = _question_ids(files["dev-" + version])
    predictions = _read_json(output_dir / "predictions.json")
    assert list(predictions) == question_ids  # one entry per question, in file order
    assert all(isinstance(text, str) for text in predictions.values())
    nbest = _read_json(output_dir / "nbest_predictions.json")
    assert list(nbest) == question_ids
    for qid, entries in nbest.items():
        assert 1 <= len(entries) <= N_BEST_SIZE + 1, qid  # v2.0 may add the null answer
        np.testing.assert_allclose(sum(e["probability"] for e in entries), 1.0, atol=1e-5)
        assert all(set(e) == {"text", "probability", "start_logit", "end_logit"}
                   for e in entries)
    assert not [f for f in os.listdir(output_dir) if ".tmp-" in f]
    return predictions, nbest


@pytest.mark.slow
def test_squad_v1_trains_predicts_and_prints_the_official_scores(files, runs):
    run = runs["v1.1"]
    predictions, nbest = _check_run(files, run, "v1.1")
    for qid, text in predictions.items():
        assert text == nbest[qid][0]["text"]  # v1.1: the best non-null answer
    assert not (run["dir"] / "null_odds.json").exists()
    lines = run["stdout"].splitlines()
    assert len(lines) == 1  # the log is not on stdout
    scores = json.loads(lines[0])
    assert list(scores) == ["exact_match", "f1"]  # evaluate-v1.1.py's line
    assert 0.0 <= scores["exact_match"] <= scores["f1"] <= 100.0


def test_squad_predict_in_bf16_gives_the_float32_logits_within_bf16_rounding(files, runs,
                                                                            tmp_path):
    # --mixed_precision=bf16 with --do_predict alone: the fine-tuned model
    # computes in bfloat16; the n-best candidates keep their float32 logits
    # within bf16 rounding, and the answers stay the same wherever float32's
    # best answer leads its runner-up by more than bf16 rounding can move them.
    output_dir = tmp_path / "bf16"
    shutil.copytree(runs["v1.1"]["dir"], output_dir)
    for name in ("predictions.json", "nbest_predictions.json"):
        os.remove(output_dir / name)
    toolrun.run_tool("run_squad", _flags(files, output_dir, do_train="False",
                                         mixed_precision="bf16"))
    fp32 = _read_json(runs["v1.1"]["dir"] / "nbest_predictions.json")
    bf16 = _read_json(output_dir / "nbest_predictions.json")
    assert list(bf16) == list(fp32)
    differences, score_moves = [], [0.0]
    for qid, entries in fp32.items():
        by_text = {e["text"]: e for e in bf16[qid]}
        for e in entries:
            if e["text"] in by_text:
                moved = [abs(by_text[e["text"]][k] - e[k]) for k in ("start_logit", "end_logit")]
                differences += moved
                score_moves.append(sum(moved))
    assert differences and max(differences) < 0.1, max(differences)
    assert 0 < max(differences)  # it did compute in bfloat16
    # A candidate's score (start + end logit) moves by at most `max(score_moves)`
    # in bf16, so a float32 lead of more than twice that cannot flip.
    flips = []
    for qid, entries in fp32.items():
        scores = [e["start_logit"] + e["end_logit"] for e in entries]
        lead = scores[0] - max(scores[1:]) if len(scores) > 1 else float("inf")
        if lead > 2 * max(score_moves) and bf16[qid][0]["text"] != entries[0]["text"]:
            flips.append((qid, entries[0]["text"], bf16[qid][0]["text"], lead))
    assert not flips, (flips, max(score_moves))


def test_squad_v2_writes_null_odds_and_prints_the_official_scores(files, runs):
    run = runs["v2.0"]
    predictions, _ = _check_run(files, run, "v2.0")
    null_odds = _read_json(run["dir"] / "null_odds.json")
    assert list(null_odds) == list(predictions)
    assert all(isinstance(v, float) for v in null_odds.values())
    lines = run["stdout"].splitlines()
    assert len(lines) == 1
    scores = json.loads(lines[0])
    for key in ("exact", "f1", "total", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1",
                "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"):
        assert key in scores, key
    assert scores["total"] == len(predictions)


def test_squad_checkpoint_has_the_original_variable_names(runs):
    """model.ckpt-N is what the original run_squad.py writes (and restores)."""
    prefix = tf.train.latest_checkpoint(str(runs["v1.1"]["dir"]))
    values = checkpoint.read_checkpoint(prefix)
    model = sorted(name for name in values if not checkpoint.is_optimizer_variable(name)
                   and name != "global_step")
    assert [name for name in model if not name.startswith("bert/")] == [
        "cls/squad/output_bias", "cls/squad/output_weights"]
    assert values["cls/squad/output_weights"].shape == (2, 32)
    assert "cls/squad/output_weights/adam_m" in values


def test_evaluate_squad_tool_prints_the_same_scores(files, runs):
    v1, v2 = runs["v1.1"]["dir"], runs["v2.0"]["dir"]
    commands = {
        "v1.1 flags": ["--data_file=%s" % files["dev-v1.1"],
                       "--prediction_file=%s" % (v1 / "predictions.json")],
        # evaluate-v2.0.py's own command line.
        "v2.0 official": [files["dev-v2.0"], str(v2 / "predictions.json"), "--na-prob-file",
                          str(v2 / "null_odds.json")],
    }
    from bert_tf.tools import evaluate_squad
    for name, args in commands.items():
        # The official spellings as the command line reads them (its `main` rewrites
        # them first; tests/data/test_squad_data.py runs that command line itself).
        _, _, out = _run_here("evaluate_squad", evaluate_squad.official_argv(args))
        version = name.split()[0]
        assert json.loads(out) == json.loads(runs[version]["stdout"]), name


# ----------------------------------------------------------------- bad input


def _bad_input_cases(files):
    """(name, flags, expected message)."""
    not_squad = str(files["tmp"] / "not_squad.json")
    with open(not_squad, "w") as f:
        json.dump({"version": "1.1", "data": [{"title": "t", "paragraphs": [
            {"text": "A paragraph under another key.", "qas": []}]}]}, f)
    no_questions = str(files["tmp"] / "no_questions.json")
    with open(no_questions, "w") as f:
        json.dump({"version": "1.1", "data": []}, f)
    out = files["tmp"] / "bad"
    big_vocab, num_tokens = toolrun.vocab_with_extra_tokens(
        files["vocab"], files["tmp"] / "vocab_plus_3.txt")
    no_sep = toolrun.vocab_without(files["vocab"], files["tmp"] / "vocab_no_sep.txt", "[SEP]")
    under_a_file, blocker = toolrun.path_under_a_file(files["tmp"] / "blocked")
    return [
        ("vocab larger than vocab_size", _flags(files, out, vocab_file=big_vocab),
         "--vocab_file=%s has %d tokens, more than vocab_size %d of %s"
         % (big_vocab, num_tokens, num_tokens - 3, files["config"])),
        ("vocab without [SEP]", _flags(files, out, vocab_file=no_sep),
         "--vocab_file=%s has no [SEP] token" % no_sep),
        ("output_dir under a file", _flags(files, under_a_file),
         "--output_dir=%s: %s is a file, not a directory" % (under_a_file, blocker)),
        ("not SQuAD", _flags(files, out, do_train="False", predict_file=not_squad),
         "%s is not a SQuAD file: data[0].paragraphs[0] has no key 'context'" % not_squad),
        ("max_seq_length too short for the query",
         _flags(files, out, max_seq_length=32, max_query_length=29),
         "The max_seq_length (32) must be greater than max_query_length (29) + 3"),
        ("do_train without train_file", _flags(files, out, train_file=None),
         "If `do_train` is True, then `train_file` must be specified."),
        ("train_file without a question", _flags(files, out, train_file=no_questions),
         "--train_file=%s: no training examples (no question in its data)" % no_questions),
    ]


def test_bad_input_gives_one_line_errors(files):
    """Each case raises a one-line UserError (`main` prints it as `error: ...`, exit 2)."""
    cases = _bad_input_cases(files)
    results = toolrun.user_errors_here("run_squad", cases)
    for name, _, expected in cases:
        message = results[name]
        assert message is not None, "%s: no error" % name
        assert "\n" not in message, "%s: %r" % (name, message)
        assert expected in message, "%s: %r" % (name, message)
    # Inputs are read before any TensorFlow op: nothing is trained or written.
    assert not (files["tmp"] / "bad").exists()


@pytest.mark.slow
def test_cli_prints_error_and_exits_2_without_traceback(files):
    output_dir = files["tmp"] / "cli"
    rc, out, err = toolrun.run([sys.executable, TOOL] + _flags(
        files, output_dir, max_seq_length=32, max_query_length=29))
    assert rc == 2, err[-3000:]
    assert "Traceback" not in err and not out
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors == ["error: The max_seq_length (32) must be greater than max_query_length "
                      "(29) + 3"]
    assert not output_dir.exists()
