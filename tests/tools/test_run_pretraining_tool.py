"""Tests for tools/run_pretraining.py: its flags, runs, files and errors.

The runs call the tool in this process (`toolrun.run_tool`: the flags parsed
and the library called as the command line does); the command line itself
runs as a user runs it where a process is the point: kill -9, and the exit
status and stderr of a mistake.

* The original's command line (its flags only) trains from an init_checkpoint,
  writes model.ckpt-N and eval_results.txt in the original's format.
* `kill -9` in the middle of a run, then the same command: it resumes from
  the latest checkpoint (global_step continues), every listed checkpoint is
  complete, and it finishes the run.
* Bad input: one-line `error: ...` messages (`UserError`s, the cases run in
  this process); on the command line, exit status 2 and no traceback.
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from tests.test_pretraining import MAX_PREDICTIONS
from tests.test_pretraining import SEQ_LENGTH
from tests.test_pretraining import random_batches
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_init_checkpoint
from tests.test_pretraining import write_records
from tests.tools import toolrun

REPO_ROOT = toolrun.REPO_ROOT
TOOL = os.path.join(REPO_ROOT, "tools", "run_pretraining.py")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run_pretraining")
    config = one_layer_config(dropout=0.1)
    return {
        "tmp": tmp,
        "config": write_config(config, str(tmp / "bert_config.json")),
        "data": write_records(str(tmp / "examples.tfrecord"), random_batches(6, seed=21)),
        "init": write_init_checkpoint(config, str(tmp / "init" / "bert_model.ckpt")),
    }


def _flags(files, output_dir, **overrides):
    values = {
        "input_file": files["data"], "output_dir": output_dir,
        "bert_config_file": files["config"], "do_train": "True", "do_eval": "True",
        "train_batch_size": 8, "eval_batch_size": 8, "max_seq_length": SEQ_LENGTH,
        "max_predictions_per_seq": MAX_PREDICTIONS, "num_train_steps": 6,
        "num_warmup_steps": 2, "learning_rate": 1e-3, "max_eval_steps": 3,
    }
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


@pytest.mark.slow
def test_original_command_line_trains_and_writes_eval_results(files):
    output_dir = files["tmp"] / "output"
    _, log = toolrun.run_tool("run_pretraining", _flags(
        files, str(output_dir), init_checkpoint=files["init"], save_checkpoints_steps=4,
        use_tpu="False"))
    assert "*** Input Files ***" in log
    assert "variables from %s" % files["init"] in log  # the init checkpoint loaded
    assert "Trainable Variables" not in log  # the original's list: --verbosity=1
    assert "***** Running training *****" in log
    assert "steps/s" in log and "examples/s" in log and "ETA" in log
    assert tf.train.latest_checkpoint(str(output_dir)) == str(output_dir / "model.ckpt-6")
    assert (output_dir / "model.ckpt-4.index").exists()
    values = checkpoint.read_checkpoint(str(output_dir / "model.ckpt-6"))
    assert int(values["global_step"]) == 6
    assert "cls/seq_relationship/output_weights/adam_v" in values
    with open(output_dir / "eval_results.txt") as f:
        lines = f.read().splitlines()
    keys = [line.split(" = ")[0] for line in lines]
    assert keys == ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                    "next_sentence_accuracy", "next_sentence_loss"]
    results = {k: float(line.split(" = ")[1]) for k, line in zip(keys, lines)}
    assert results["global_step"] == 6
    assert 0.0 <= results["masked_lm_accuracy"] <= 1.0
    # `loss` is the mean batch total loss; the metrics average per prediction.
    assert abs(results["loss"] - results["masked_lm_loss"] - results["next_sentence_loss"]) < 0.5


def _listed_checkpoints(output_dir):
    state = tf.train.get_checkpoint_state(str(output_dir))
    return list(state.all_model_checkpoint_paths) if state else []


@pytest.mark.slow
def test_kill_9_then_the_same_command_resumes(files):
    output_dir = files["tmp"] / "killed"
    command = [sys.executable, TOOL] + _flags(
        files, str(output_dir), num_train_steps=100, save_checkpoints_steps=10,
        iterations_per_loop=5, max_eval_steps=1)
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=toolrun.tool_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while len(_listed_checkpoints(output_dir)) < 2:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline, "no checkpoints after 240 s"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    latest = tf.train.latest_checkpoint(str(output_dir))
    killed_at = int(latest.rsplit("-", 1)[1])
    assert killed_at < 100
    for path in _listed_checkpoints(output_dir):  # all complete and readable
        step = int(path.rsplit("-", 1)[1])
        assert int(checkpoint.read_checkpoint(path)["global_step"]) == step

    # The same command again, in this process.
    _, log = toolrun.run_tool("run_pretraining", command[2:])
    resumed_from = [line for line in log.splitlines() if "Resuming from" in line]
    assert len(resumed_from) == 1, log[-3000:]
    step = int(resumed_from[0].split("(global_step ")[1].split(")")[0])
    assert step >= killed_at  # the latest checkpoint (a later one may have landed)
    assert "Num steps = 100 (starting at global_step %d)" % step in log
    final = checkpoint.read_checkpoint(str(output_dir / "model.ckpt-100"))
    assert int(final["global_step"]) == 100
    assert len(_listed_checkpoints(output_dir)) == 5  # keep_checkpoint_max
    assert not [f for f in os.listdir(output_dir) if ".tmp-" in f]
    with open(output_dir / "eval_results.txt") as f:
        assert f.readline() == "global_step = 100\n"


# ----------------------------------------------------------------- bad input

def _bad_input_cases(files):
    """(name, flags, expected message part)."""
    tmp = files["tmp"]
    write_records(str(tmp / "seq16.tfrecord"), random_batches(1, seed=22))
    big_vocab = random_batches(1, seed=23)
    big_vocab["input_ids"][0, 0, 1] = 120
    write_records(str(tmp / "vocab120.tfrecord"), big_vocab)
    other = write_init_checkpoint(one_layer_config(hidden_size=48),
                                  str(tmp / "other" / "bert_model.ckpt"))
    # Records 8..23 hold a segment id of 5 (type_vocab_size is 2): the first
    # 8 records, which are checked before training, are good.
    later = random_batches(3, seed=24)
    later["segment_ids"][1:, :, 0] = 5
    write_records(str(tmp / "bad_later.tfrecord"), later)
    under_a_file, blocker = toolrun.path_under_a_file(tmp / "blocked")
    out = str(tmp / "bad")
    return [
        ("a bad record after the first ones",
         _flags(files, out, input_file=str(tmp / "bad_later.tfrecord")),
         re.compile(r"^%s: record (\d+) \(counting from 0\): feature segment_ids holds 5, "
                    r"outside \[0, type_vocab_size=2\) of bert_config_file$"
                    % re.escape(str(tmp / "bad_later.tfrecord")))),
        ("output_dir under a file", _flags(files, under_a_file),
         "--output_dir=%s: %s is a file, not a directory" % (under_a_file, blocker)),
        ("missing input", _flags(files, out, input_file=str(tmp / "nope*.tfrecord")),
         "--input_file: %r matches no file" % str(tmp / "nope*.tfrecord")),
        ("records of another max_seq_length",
         _flags(files, out, input_file=str(tmp / "seq16.tfrecord"), max_seq_length=32),
         "feature 'input_ids' has length 16, but --max_seq_length expects 32"),
        ("records of another max_predictions_per_seq",
         _flags(files, out, max_predictions_per_seq=20),
         "feature 'masked_lm_positions' has length 4, but --max_predictions_per_seq "
         "expects 20"),
        ("ids beyond vocab_size", _flags(files, out, input_file=str(tmp / "vocab120.tfrecord")),
         "feature input_ids holds 120, outside [0, vocab_size=99)"),
        ("init_checkpoint of another architecture", _flags(files, out, init_checkpoint=other),
         "variable bert/embeddings/word_embeddings has shape [99, 48] in the checkpoint but "
         "[99, 32] in the model"),
        ("no do_train or do_eval", _flags(files, out, do_train="False", do_eval="False"),
         "At least one of `do_train` or `do_eval` must be True."),
        ("batch not divisible", _flags(files, out, num_accumulation_steps=3),
         "--train_batch_size=8 must be divisible by the number of replicas (1) times "
         "--num_accumulation_steps (3)"),
        ("use_tpu with another strategy",
         _flags(files, out, use_tpu="True", distribution_strategy="mirrored"),
         "--use_tpu=True contradicts --distribution_strategy=mirrored"),
        ("missing config", _flags(files, out, bert_config_file=str(tmp / "nope.json")),
         "bert_config_file %s: no such file" % str(tmp / "nope.json")),
    ]


@pytest.mark.slow
def test_bad_input_gives_one_line_errors(files):
    """Each case raises a one-line UserError (`main` prints it as `error: ...`, exit 2)."""
    cases = _bad_input_cases(files)
    results = toolrun.user_errors_here("run_pretraining", cases)
    for name, _, expected in cases:
        message = results[name]
        assert message is not None, "%s: no error" % name
        assert "\n" not in message, "%s: %r" % (name, message)
        if isinstance(expected, str):
            assert expected in message, "%s: %r" % (name, message)
        else:
            match = expected.match(message)
            assert match, "%s: %r" % (name, message)
            assert 8 <= int(match.group(1)) < 24, message
    assert not (files["tmp"] / "bad" / "checkpoint").exists()


@pytest.mark.slow
def test_cli_prints_error_and_exits_2_without_traceback(files):
    proc = subprocess.run(
        [sys.executable, TOOL] + _flags(files, str(files["tmp"] / "cli"),
                                        input_file=str(files["tmp"] / "missing.tfrecord")),
        cwd=REPO_ROOT, env=toolrun.tool_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["error: --input_file: %r matches no file"
                      % str(files["tmp"] / "missing.tfrecord")]
    assert "Traceback" not in proc.stderr
