"""Tests for tools/run_classifier.py: its flags, runs, files and errors.

The runs call the tool in this process (`toolrun.run_tool`: the flags parsed
and the library called as the command line does); the command line itself
runs as a user runs it where a process is the point: the exit status and
stderr of a mistake, 2 replicas on a CPU split before TensorFlow starts, and
kill -9.

Data: an MRPC-layout task of real English (`demo_corpus.write_sentence_pair_task`,
64/22/21 examples, so no count divides a batch size), a WordPiece vocab
learned from it, and a tiny BERT (2 layers, hidden 32, dropout 0).

* The original's MRPC command line (its flags only) with --do_train
  --do_eval --do_predict: the three TFRecord files (one record per example),
  model.ckpt-N with the original's N = int(examples / batch * epochs),
  eval_results.txt with the original's keys, test_results.tsv with one line
  of class probabilities per test example. A second run with only
  --do_predict restores that checkpoint and writes the same test_results.tsv.
* 2 replicas (MirroredStrategy over 2 logical CPU devices, a wrapper that
  splits the CPU before the tool runs) evaluate and predict every example
  once: the same eval_results.txt and test_results.tsv as one device.
* `kill -9` during training, then the same command: it resumes from the
  latest checkpoint, every listed checkpoint is complete, no temporary file
  is left, and it finishes with eval_results.txt.
* Bad input: one-line `error: ...` messages (the cases run in one child
  process: `tests/tools/toolrun.py`), raised before anything is
  written; on the command line, exit status 2 and no traceback.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.data import demo_corpus
from bert_tf.data import vocab
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_init_checkpoint
from tests.tolerances import REPLICA_ATOL
from tests.tools import toolrun

REPO_ROOT = toolrun.REPO_ROOT
TOOL = os.path.join(REPO_ROOT, "tools", "run_classifier.py")

NUM_TRAIN, NUM_DEV, NUM_TEST = 64, 22, 21
SEQ_LENGTH = 32
TRAIN_BATCH_SIZE = 6
NUM_TRAIN_EPOCHS = 2.0
# The original's schedule: int(64 / 6 * 2.0) = 21 (not 64 / 6 rounded up, nor 22).
NUM_TRAIN_STEPS = int(NUM_TRAIN / TRAIN_BATCH_SIZE * NUM_TRAIN_EPOCHS)
EVAL_KEYS = ["eval_accuracy", "eval_loss", "global_step", "loss"]

# Runs the tool as `python tools/run_classifier.py ...` does, after splitting
# the host CPU into 2 logical devices (before TensorFlow starts).
_TWO_DEVICES_WRAPPER = """\
import runpy
import sys
sys.path.insert(0, %r)
from bert_tf.training import distribute
distribute.set_logical_cpu_devices(2)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run_classifier")
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
    # The same model plus a classifier head of large weights (the original's
    # unscoped output_weights / output_bias), for runs without training: the
    # probabilities then differ from example to example by far more than
    # REPLICA_ATOL, and no run draws a random head of its own.
    values = checkpoint.read_checkpoint(init)
    rng = np.random.RandomState(5)
    values["output_weights"] = rng.normal(0.0, 1.0, (2, config.hidden_size)).astype(np.float32)
    values["output_bias"] = np.array([0.3, -0.3], np.float32)
    with_head = checkpoint.write_checkpoint(str(tmp / "finetuned" / "model.ckpt"), values,
                                            update_state=False)
    return {
        "tmp": tmp, "data_dir": data_dir, "vocab": vocab_file,
        "config": write_config(config, str(tmp / "bert_config.json")),
        "init": init, "init_with_head": with_head,
    }


def _flags(files, output_dir, **overrides):
    """The original README's MRPC command line, with small sizes."""
    values = {
        "task_name": "MRPC", "do_train": "true", "do_eval": "true", "do_predict": "true",
        "data_dir": files["data_dir"], "vocab_file": files["vocab"],
        "bert_config_file": files["config"], "init_checkpoint": files["init"],
        "max_seq_length": SEQ_LENGTH, "train_batch_size": TRAIN_BATCH_SIZE,
        "learning_rate": 2e-5, "num_train_epochs": NUM_TRAIN_EPOCHS, "eval_batch_size": 4,
        "predict_batch_size": 4, "output_dir": str(output_dir),
    }
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


def _num_records(path):
    return sum(1 for _ in tf.data.TFRecordDataset(str(path)))


def _read_eval_results(path):
    with open(path) as f:
        lines = f.read().splitlines()
    keys = [line.split(" = ")[0] for line in lines]
    return keys, {k: float(line.split(" = ")[1]) for k, line in zip(keys, lines)}


def _read_test_results(path):
    with open(path) as f:
        text = f.read()
    assert text.endswith("\n")
    return text, np.array([[float(x) for x in line.split("\t")]
                           for line in text.splitlines()], np.float64)


def _listed_checkpoints(output_dir):
    state = tf.train.get_checkpoint_state(str(output_dir))
    return list(state.all_model_checkpoint_paths) if state else []


def _assert_listed_checkpoints_complete(output_dir):
    for path in _listed_checkpoints(output_dir):
        step = int(path.rsplit("-", 1)[1])
        values = checkpoint.read_checkpoint(path)  # every tensor reads back
        assert int(values["global_step"]) == step, path
        assert "output_weights" in values and "output_weights/adam_v" in values, path


# ----------------------------------------------------------------- train, eval, predict


@pytest.fixture(scope="module")
def trained(files):
    """One --do_train --do_eval --do_predict run, shared by the tests below."""
    output_dir = files["tmp"] / "mrpc_output"
    _, log = toolrun.run_tool("run_classifier", _flags(files, output_dir))
    text, probabilities = _read_test_results(output_dir / "test_results.tsv")
    return {"dir": output_dir, "log": log, "test_results": text, "probabilities": probabilities}


@pytest.mark.slow
def test_original_mrpc_command_line_trains_evaluates_and_predicts(trained):
    output_dir, log = trained["dir"], trained["log"]
    # The original's records, one per example (eval/predict padding is not written).
    assert _num_records(output_dir / "train.tf_record") == NUM_TRAIN
    assert _num_records(output_dir / "eval.tf_record") == NUM_DEV
    assert _num_records(output_dir / "predict.tf_record") == NUM_TEST
    assert "  Num steps = %d" % NUM_TRAIN_STEPS in log
    assert "Num examples = 24 (22 actual, 2 padding)" in log
    assert "Num examples = 24 (21 actual, 3 padding)" in log
    latest = tf.train.latest_checkpoint(str(output_dir))
    assert latest == str(output_dir / ("model.ckpt-%d" % NUM_TRAIN_STEPS))
    assert int(checkpoint.read_checkpoint(latest)["global_step"]) == NUM_TRAIN_STEPS

    keys, results = _read_eval_results(output_dir / "eval_results.txt")
    assert keys == EVAL_KEYS
    assert results["global_step"] == NUM_TRAIN_STEPS
    # Accuracy over exactly the 22 real dev examples (padding has weight 0).
    correct = results["eval_accuracy"] * NUM_DEV
    assert abs(correct - round(correct)) < 1e-4 and 0 <= round(correct) <= NUM_DEV
    assert 0.0 < results["eval_loss"] < 5.0 and 0.0 < results["loss"] < 5.0

    probabilities = trained["probabilities"]
    assert probabilities.shape == (NUM_TEST, 2)  # one line per test example, 2 labels
    assert ((probabilities >= 0.0) & (probabilities <= 1.0)).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    assert not [f for f in os.listdir(output_dir) if ".tmp-" in f]


def test_predict_only_restores_the_latest_checkpoint(files, trained):
    output_dir = trained["dir"]
    os.remove(output_dir / "test_results.tsv")
    _, log = toolrun.run_tool("run_classifier", _flags(
        files, output_dir, do_train="false", do_eval="false"))
    # The fine-tuned model, not --init_checkpoint (the Estimator's rule).
    assert "Resuming from %s (global_step %d)" % (
        output_dir / ("model.ckpt-%d" % NUM_TRAIN_STEPS), NUM_TRAIN_STEPS) in log
    with open(output_dir / "test_results.tsv") as f:
        assert f.read() == trained["test_results"]


def test_predict_in_bf16_gives_the_float32_results_within_bf16_rounding(files, trained,
                                                                       tmp_path):
    # --mixed_precision=bf16 with --do_predict alone: the fine-tuned model
    # computes in bfloat16 (float32 variables and probabilities).
    output_dir = tmp_path / "bf16"
    shutil.copytree(trained["dir"], output_dir)
    os.remove(output_dir / "test_results.tsv")
    toolrun.run_tool("run_classifier", _flags(
        files, output_dir, do_train="false", do_eval="false", mixed_precision="bf16"))
    _, probabilities = _read_test_results(output_dir / "test_results.tsv")
    fp32 = trained["probabilities"]
    assert probabilities.shape == fp32.shape
    np.testing.assert_allclose(probabilities, fp32, atol=0.02)
    assert not np.array_equal(probabilities, fp32)  # it did compute in bfloat16
    clear = np.abs(fp32[:, 1] - fp32[:, 0]) > 0.05
    np.testing.assert_array_equal(probabilities[clear].argmax(1), fp32[clear].argmax(1))


# ----------------------------------------------------------------- logs


def test_the_default_log_has_the_settings_progress_and_results_not_the_dumps(trained):
    log = trained["log"]
    assert "***** Running training *****" in log and "  Num steps = %d" % NUM_TRAIN_STEPS in log
    assert "step %d/%d: loss = " % (NUM_TRAIN_STEPS, NUM_TRAIN_STEPS) in log  # progress
    assert "train.tf_record: %d/%d examples" % (NUM_TRAIN, NUM_TRAIN) in log
    assert "***** Eval results *****" in log and "  eval_accuracy = " in log
    assert "Wrote %d predictions to %s" % (NUM_TEST, trained["dir"] / "test_results.tsv") in log
    # The original's INFO dumps are --verbosity=1's.
    assert "*** Example ***" not in log and "input_ids: " not in log
    assert "Trainable Variables" not in log and "INIT_FROM_CKPT" not in log


def test_verbosity_1_brings_back_the_originals_dumps(files, tmp_path):
    _, log = toolrun.run_tool("run_classifier", _flags(
        files, tmp_path / "out", do_train="false", do_predict="false",
        init_checkpoint=files["init_with_head"], verbosity=1))
    assert log.count("*** Example ***") == 5  # the first 5 dev examples, as the original
    assert "guid: dev-1" in log and "input_ids: 2 " in log and "input_mask: 1 " in log
    assert "**** Trainable Variables ****" in log
    assert "name = output_weights, shape = (2, 32), *INIT_FROM_CKPT*" in log
    assert "***** Eval results *****" in log


# ----------------------------------------------------------------- 2 replicas


@pytest.mark.slow
def test_two_replicas_evaluate_and_predict_every_example_once(files):
    wrapper = files["tmp"] / "two_cpu_devices.py"
    wrapper.write_text(_TWO_DEVICES_WRAPPER % REPO_ROOT)
    outputs = {name: files["tmp"] / ("replicas_" + name) for name in ("one", "two")}

    def flags(name):
        return _flags(files, outputs[name], do_train="false",
                      init_checkpoint=files["init_with_head"])

    procs = {"one": toolrun.start([sys.executable, TOOL] + flags("one")),
             "two": toolrun.start([sys.executable, str(wrapper), TOOL] + flags("two")
                           + ["--distribution_strategy=mirrored"])}
    finished = {name: toolrun.finish(proc) for name, proc in procs.items()}
    for name, (rc, _, err) in finished.items():
        assert rc == 0, "%s:\n%s" % (name, err[-4000:])
    assert ("Distribution strategy: off (_DefaultDistributionStrategy) with 1 replica(s)"
            in finished["one"][2])
    assert ("Distribution strategy: mirrored (MirroredStrategy) with 2 replica(s) in sync"
            in finished["two"][2])

    keys_one, one = _read_eval_results(outputs["one"] / "eval_results.txt")
    keys_two, two = _read_eval_results(outputs["two"] / "eval_results.txt")
    assert keys_one == keys_two == EVAL_KEYS
    assert one["global_step"] == two["global_step"] == 0  # from --init_checkpoint
    for key in EVAL_KEYS:
        np.testing.assert_allclose(two[key], one[key], atol=REPLICA_ATOL, err_msg=key)
    correct = two["eval_accuracy"] * NUM_DEV
    assert abs(correct - round(correct)) < 1e-4

    _, p_one = _read_test_results(outputs["one"] / "test_results.tsv")
    _, p_two = _read_test_results(outputs["two"] / "test_results.tsv")
    assert p_one.shape == p_two.shape == (NUM_TEST, 2)
    np.testing.assert_allclose(p_two, p_one, atol=REPLICA_ATOL)
    # In input order: the examples are told apart far beyond the tolerance.
    assert np.diff(p_one[:, 0]).std() > 100 * REPLICA_ATOL


# ----------------------------------------------------------------- kill -9


@pytest.mark.slow
def test_kill_9_during_training_then_the_same_command_resumes(files):
    output_dir = files["tmp"] / "killed"
    num_steps = int(NUM_TRAIN / 8 * 12.5)  # 100
    command = [sys.executable, TOOL] + _flags(
        files, output_dir, do_predict="false", train_batch_size=8, num_train_epochs=12.5,
        save_checkpoints_steps=10, iterations_per_loop=5)
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=toolrun.tool_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while not _listed_checkpoints(output_dir):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline, "no checkpoint after 240 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    killed_at = int(tf.train.latest_checkpoint(str(output_dir)).rsplit("-", 1)[1])
    assert killed_at < num_steps
    assert not (output_dir / "eval_results.txt").exists()
    _assert_listed_checkpoints_complete(output_dir)

    _, err = toolrun.run_tool("run_classifier", command[2:])
    resumed_from = [line for line in err.splitlines() if "Resuming from" in line]
    assert len(resumed_from) == 1, err[-3000:]
    step = int(resumed_from[0].split("(global_step ")[1].split(")")[0])
    assert step >= killed_at  # the latest checkpoint (a later one may have landed)
    assert "Num steps = %d (starting at global_step %d)" % (num_steps, step) in err
    assert tf.train.latest_checkpoint(str(output_dir)) == str(
        output_dir / ("model.ckpt-%d" % num_steps))
    _assert_listed_checkpoints_complete(output_dir)
    assert 1 <= len(_listed_checkpoints(output_dir)) <= 5  # keep_checkpoint_max
    assert not [f for f in os.listdir(output_dir) if ".tmp-" in f]
    keys, results = _read_eval_results(output_dir / "eval_results.txt")
    assert keys == EVAL_KEYS and results["global_step"] == num_steps


# ----------------------------------------------------------------- bad input


def _copy_task(files, name, edit, edited="dev.tsv"):
    """A copy of the task's data dir with `edit(lines of <edited>)` applied."""
    data_dir = files["tmp"] / name
    data_dir.mkdir()
    for split in ("train.tsv", "dev.tsv", "test.tsv"):
        with open(os.path.join(files["data_dir"], split), encoding="utf-8") as f:
            lines = f.read().splitlines(True)
        if split == edited:
            edit(lines)
        (data_dir / split).write_text("".join(lines), encoding="utf-8")
    return str(data_dir)


def _bad_input_cases(files):
    """(name, flag overrides, [expected parts of the one-line message]).

    "output_dir_" replaces the case's own output directory.
    """
    def short_row(lines):
        lines[3] = "1\t7\t8\tonly the first sentence\n"  # line 4: 4 columns, MRPC reads 5

    def bad_label(lines):
        lines[4] = "2" + lines[4][1:]  # line 5: label "2"

    def header_alone(lines):
        del lines[1:]

    short = _copy_task(files, "short_row", short_row)
    labels = _copy_task(files, "bad_label", bad_label)
    empty_train = _copy_task(files, "empty_train", list.clear, edited="train.tsv")
    dev_header = _copy_task(files, "dev_header_alone", header_alone)
    empty = files["tmp"] / "empty"
    empty.mkdir()
    big_vocab, num_tokens = toolrun.vocab_with_extra_tokens(
        files["vocab"], files["tmp"] / "vocab_plus_3.txt")
    no_cls = toolrun.vocab_without(files["vocab"], files["tmp"] / "vocab_no_cls.txt", "[CLS]")
    under_a_file, blocker = toolrun.path_under_a_file(files["tmp"] / "blocked")
    return [
        ("vocab larger than vocab_size", {"vocab_file": big_vocab},
         ["--vocab_file=%s has %d tokens, more than vocab_size %d of %s"
          % (big_vocab, num_tokens, num_tokens - 3, files["config"])]),
        ("vocab without [CLS]", {"vocab_file": no_cls},
         ["--vocab_file=%s has no [CLS] token" % no_cls]),
        ("output_dir under a file", {"output_dir_": under_a_file},
         ["--output_dir=%s: %s is a file, not a directory" % (under_a_file, blocker)]),
        ("unknown task", {"task_name": "SNLI"},
         ["Task not found: snli (known: ", "cola", "mnli", "mrpc", "xnli"]),
        ("short row", {"data_dir": short},
         ["%s line 4: 4 tab-separated column(s), but the MRPC task reads column(s) 4, 5"
          % os.path.join(short, "dev.tsv")]),
        ("label outside the task's labels", {"data_dir": labels},
         ["%s line 5: label '2' is not one of the MRPC task's labels '0', '1'"
          % os.path.join(labels, "dev.tsv")]),
        ("empty train.tsv", {"data_dir": empty_train},
         ["%s: no training examples (an empty file, or its header alone)"
          % os.path.join(empty_train, "train.tsv")]),
        ("dev.tsv with its header alone", {"data_dir": dev_header},
         ["%s: no dev examples" % os.path.join(dev_header, "dev.tsv")]),
        ("data_dir without the task's files", {"data_dir": str(empty)},
         ["--data_dir=%s: no train.tsv (the MRPC task reads train.tsv, dev.tsv and test.tsv)"
          % empty]),
        ("max_seq_length beyond max_position_embeddings", {"max_seq_length": 128},
         ["Cannot use sequence length 128 because the BERT model was only trained up to "
          "sequence length 64"]),
        ("no do_train, do_eval or do_predict",
         {"do_train": "false", "do_eval": "false", "do_predict": "false"},
         ["At least one of `do_train`, `do_eval` or `do_predict' must be True."]),
    ]


def test_bad_input_gives_one_line_errors(files):
    """Each case raises a one-line UserError before anything is written.

    The tool's `main` turns a UserError into `error: <message>` and exit
    status 2 (the CLI test below runs it for real).
    """
    cases = _bad_input_cases(files)
    argvs = [(name, _flags(files, overrides.get("output_dir_", files["tmp"] / ("bad_%d" % index)),
                           **{k: v for k, v in overrides.items() if k != "output_dir_"}))
             for index, (name, overrides, _) in enumerate(cases)]
    results = toolrun.user_errors_here("run_classifier", argvs)
    for index, (name, _, expected) in enumerate(cases):
        message = results[name]
        assert message is not None, "%s: no error" % name
        assert "\n" not in message, "%s: %r" % (name, message)
        for part in expected:
            assert part in message, "%s: %r" % (name, message)
        # Every input is read before any TensorFlow op: nothing is trained or written.
        assert not (files["tmp"] / ("bad_%d" % index)).exists(), name


@pytest.mark.slow
def test_cli_prints_error_and_exits_2_without_traceback(files):
    output_dir = files["tmp"] / "cli"
    rc, out, err = toolrun.run([sys.executable, TOOL] + _flags(files, output_dir, task_name="SNLI"))
    assert rc == 2, err[-3000:]
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: Task not found: snli (known: cola, ")
    assert not output_dir.exists()


def test_a_missing_data_file_is_one_line_before_tensorflow_loads(tmp_path):
    """The tool checks that the task's files exist before it imports the run (and
    TensorFlow with it): a missing one is one line in a fraction of a second."""
    code = ("import sys\nfrom bert_tf.tools import run_classifier\n"
            "rc = run_classifier.main(['run_classifier'] + sys.argv[1:])\n"
            "print(rc, 'tensorflow' in sys.modules)\n")
    data_dir = tmp_path / "MRPC"
    data_dir.mkdir()
    (data_dir / "train.tsv").write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
    # --verbosity=1: no stderr filter, so main returns its status where TensorFlow
    # has not loaded (after it has, it ends the process at once).
    result = subprocess.run(
        [sys.executable, "-c", code, "--verbosity=1", "--task_name=MRPC",
         "--data_dir=%s" % data_dir, "--vocab_file=vocab.txt",
         "--bert_config_file=bert_config.json", "--output_dir=%s" % (tmp_path / "out"),
         "--do_train", "--do_eval"],
        cwd=toolrun.REPO_ROOT, env=toolrun.tool_env(), capture_output=True, text=True,
        timeout=120)
    assert result.stdout.split() == ["2", "False"], (result.stdout, result.stderr[-3000:])
    assert result.stderr.splitlines()[-1] == (
        "error: --data_dir=%s: no dev.tsv (the MRPC task reads train.tsv, dev.tsv and test.tsv)"
        % data_dir)
    assert not (tmp_path / "out").exists()
