"""A preemption notice (SIGTERM, Ctrl-C) during training: a checkpoint at the current step.

* tools/run_pretraining.py, SIGTERM once training shows progress: exit status
  75 (`PREEMPTED_EXIT_STATUS`), one `preempted (SIGTERM) at step N: ...` line,
  `model.ckpt-N` readable at global_step N (no periodic checkpoint was due),
  no evaluation; the same command again resumes from `model.ckpt-N` and
  finishes.
* A second Ctrl-C stops at once: exit 130, no checkpoint.
* Two workers (MultiWorkerMirroredStrategy on 127.0.0.1), a Ctrl-C to the
  one that is not the chief: both stop after the same step, exit 75, and the
  chief writes the checkpoint.
* Keras `fit` with `CheckpointCallback`, SIGTERM: the checkpoint at the step
  reached, `Preempted` (status 75) out of `fit`.
* A run resumed from an earlier checkpoint, SIGTERM: the checkpoint at the
  step reached is written and is the latest.
* The library holds no handler outside training: `Trainer.train` puts back
  the handlers it found.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.training import preemption
from tests.test_distribute import _free_ports
from tests.test_pretraining import MAX_PREDICTIONS
from tests.test_pretraining import SEQ_LENGTH
from tests.test_pretraining import random_batches
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_records
from tests.tools import toolrun

REPO_ROOT = toolrun.REPO_ROOT
TOOL = os.path.join(REPO_ROOT, "tools", "run_pretraining.py")
PREEMPTED = re.compile(r"preempted \((SIGTERM|SIGINT|a notice on another worker)\) at step "
                       r"(\d+): checkpoint (\S+) written; rerun the same command to resume$")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("preemption")
    return {
        "tmp": tmp,
        "config": write_config(one_layer_config(dropout=0.1), str(tmp / "bert_config.json")),
        "data": write_records(str(tmp / "examples.tfrecord"), random_batches(4, seed=31)),
    }


def _command(files, output_dir, **overrides):
    # Long enough to be stopped, a log line per step, no periodic checkpoint before the end.
    values = {
        "input_file": files["data"], "output_dir": output_dir,
        "bert_config_file": files["config"], "do_train": "True", "do_eval": "True",
        "train_batch_size": 8, "eval_batch_size": 8, "max_seq_length": SEQ_LENGTH,
        "max_predictions_per_seq": MAX_PREDICTIONS, "num_train_steps": 100000,
        "num_warmup_steps": 2, "learning_rate": 1e-3, "max_eval_steps": 1,
        "save_checkpoints_steps": 100000, "iterations_per_loop": 1000, "log_steps": 1,
    }
    values.update(overrides)
    return [sys.executable, TOOL] + ["--%s=%s" % (k, v) for k, v in values.items()]


class _Run(object):
    """A tool run whose stderr is read as it comes (to signal it once it trains)."""

    def __init__(self, command, env=None):
        self.proc = subprocess.Popen(command, cwd=REPO_ROOT, env=env or toolrun.tool_env(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        self.lines = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern, timeout=240):
        deadline = time.time() + timeout
        while not any(re.search(pattern, line) for line in self.lines):
            assert self.proc.poll() is None, "ended before %r:\n%s" % (
                pattern, "\n".join(self.lines[-40:]))
            assert time.time() < deadline, "no %r after %d s" % (pattern, timeout)
            time.sleep(0.02)

    def finish(self, timeout=240):
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(timeout=10)
        return self.proc.returncode, "\n".join(self.lines)


def _preempted_lines(log):
    return [line for line in log.splitlines() if "preempted (" in line]


def _steps(output_dir):
    return sorted(int(name[len("model.ckpt-"):-len(".index")]) for name in os.listdir(output_dir)
                  if name.startswith("model.ckpt-") and name.endswith(".index"))


def _check_preempted(rc, log, output_dir, cause):
    """The status, the one line and the checkpoint it names; returns its step."""
    assert rc == preemption.PREEMPTED_EXIT_STATUS == 75, log[-4000:]
    lines = _preempted_lines(log)
    assert len(lines) == 1, log[-4000:]
    match = PREEMPTED.search(lines[0])
    assert match and match.group(1) == cause, lines[0]
    step = int(match.group(2))
    assert step >= 3
    assert match.group(3) == str(output_dir / ("model.ckpt-%d" % step))
    assert _steps(output_dir) == [step]  # nothing periodic: the notice's checkpoint
    assert tf.train.latest_checkpoint(str(output_dir)) == match.group(3)
    assert int(checkpoint.read_checkpoint(match.group(3))["global_step"]) == step
    assert "Traceback" not in log
    assert "***** Running evaluation *****" not in log  # what follows training is skipped
    assert not (output_dir / "eval_results.txt").exists()
    return step


@pytest.mark.slow
def test_sigterm_writes_a_checkpoint_at_the_step_and_the_same_command_resumes(files):
    output_dir = files["tmp"] / "sigterm"
    command = _command(files, str(output_dir))
    run = _Run(command)
    run.wait_for(r"step 3/100000: loss")
    run.proc.send_signal(signal.SIGTERM)
    step = _check_preempted(*run.finish(), output_dir, "SIGTERM")

    # The same command resumes there (stopped again, to keep the test short; another
    # --num_train_steps would be another run: tests/test_run_record.py).
    run = _Run(command)
    run.wait_for(r"step %d/100000: loss" % (step + 1))
    run.proc.send_signal(signal.SIGTERM)
    rc, log = run.finish()
    assert "Resuming from %s (global_step %d)" % (output_dir / ("model.ckpt-%d" % step), step) \
        in log
    assert "Num steps = 100000 (starting at global_step %d)" % step in log
    assert rc == preemption.PREEMPTED_EXIT_STATUS, log[-4000:]
    second = int(PREEMPTED.search(_preempted_lines(log)[0]).group(2))
    assert second > step and _steps(output_dir) == [step, second]
    assert int(checkpoint.read_checkpoint(
        str(output_dir / ("model.ckpt-%d" % second)))["global_step"]) == second


@pytest.mark.slow
def test_ctrl_c_twice_stops_at_once_without_a_checkpoint(files):
    # Steps of a large batch (slow), so the second Ctrl-C comes while the step runs.
    output_dir = files["tmp"] / "sigint_twice"
    run = _Run(_command(files, str(output_dir), train_batch_size=4096))
    run.wait_for(r"step 2/100000: loss")
    run.proc.send_signal(signal.SIGINT)
    run.wait_for(r"SIGINT received: stopping after the current step")
    run.proc.send_signal(signal.SIGINT)
    rc, log = run.finish()
    assert "Traceback" not in log
    if "the checkpoint is already being written" in log:
        # The first Ctrl-C came between two steps and the run had stopped to write
        # its checkpoint before the second one arrived (a loaded machine): it is
        # written and named, as after one Ctrl-C, never claimed missing.
        assert rc == preemption.PREEMPTED_EXIT_STATUS, log[-4000:]
        assert "stopped without a checkpoint" not in log
        [line] = _preempted_lines(log)
        step = int(PREEMPTED.search(line).group(2))
        assert _steps(output_dir) == [step]
        return
    assert rc == preemption.INTERRUPTED_EXIT_STATUS == 130, log[-4000:]
    assert "interrupted (SIGINT): stopped without a checkpoint" in log
    assert not _preempted_lines(log)
    assert _steps(output_dir) == []


def test_a_second_ctrl_c_while_the_checkpoint_is_written_lets_it_be_written():
    requests = preemption.StopRequests()
    with requests:
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.time() + 10
        while requests.requested is None and time.time() < deadline:
            time.sleep(0.01)
        assert requests.requested == "SIGINT"
        requests.finish()  # the run stopped after its step and writes the checkpoint
        os.kill(os.getpid(), signal.SIGINT)  # would raise KeyboardInterrupt before finish()
        while requests._sigints < 2 and time.time() < deadline:  # pylint: disable=protected-access
            time.sleep(0.01)
        time.sleep(0.1)  # the main thread's handler has run
    assert requests._sigints == 2  # pylint: disable=protected-access


def test_a_second_ctrl_c_during_a_step_stops_at_once():
    requests = preemption.StopRequests()
    with pytest.raises(KeyboardInterrupt):
        with requests:
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.time() + 10
            while requests.requested is None and time.time() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
            while time.time() < deadline:
                time.sleep(0.01)


@pytest.mark.slow
def test_two_workers_stop_after_the_same_step_at_a_ctrl_c_of_one(files):
    output_dir = files["tmp"] / "two_workers"
    cluster = {"worker": ["127.0.0.1:%d" % p for p in _free_ports(2)]}
    runs = []
    for index in range(2):
        env = toolrun.tool_env()
        env["TF_CONFIG"] = json.dumps({"cluster": cluster,
                                       "task": {"type": "worker", "index": index}})
        runs.append(_Run(_command(files, str(output_dir),
                                  distribution_strategy="multi_worker_mirrored"), env=env))
    try:
        runs[1].wait_for(r"step 3/100000: loss")
        runs[1].proc.send_signal(signal.SIGINT)  # the worker, not the chief
        (chief_rc, chief_log), (worker_rc, worker_log) = [run.finish() for run in runs]
    finally:
        for run in runs:
            if run.proc.poll() is None:
                run.proc.kill()
    step = _check_preempted(chief_rc, chief_log, output_dir, "a notice on another worker")
    assert worker_rc == 75, worker_log[-4000:]
    [line] = _preempted_lines(worker_log)
    assert PREEMPTED.search(line).group(1, 2) == ("SIGINT", str(step))
    assert "Saved checkpoint" not in worker_log


_KERAS_CHILD = r"""
import os, sys
import numpy as np, tensorflow as tf
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.training import optimization
from bert_tf.training.callbacks import CheckpointCallback
from tests.test_pretraining import random_batches, one_layer_config

import keras

class Progress(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 2:
            sys.stderr.write("batch 2 done\n"); sys.stderr.flush()

model = BertPretrainer(one_layer_config())
model.compile(optimizer=optimization.create_optimizer(1e-3, 100000, 2))
data = tf.data.Dataset.from_tensor_slices(random_batches(2, seed=5)).repeat()
model.fit(data, epochs=1, steps_per_epoch=100000, verbose=0,
          callbacks=[CheckpointCallback(sys.argv[1], save_checkpoints_steps=100000), Progress()])
sys.stderr.write("fit returned\n")
"""


@pytest.mark.slow
def test_keras_fit_with_checkpoint_callback_saves_and_stops_on_sigterm(tmp_path):
    output_dir = tmp_path / "fit"
    run = _Run([sys.executable, "-c", _KERAS_CHILD, str(output_dir)])
    run.wait_for(r"batch 2 done")
    run.proc.send_signal(signal.SIGTERM)
    rc, log = run.finish()
    assert rc == 75, log[-4000:]
    assert "fit returned" not in log
    [line] = _preempted_lines(log)
    match = PREEMPTED.search(line)
    step = int(match.group(2))
    assert match.group(1) == "SIGTERM" and step >= 3
    assert _steps(output_dir) == [step]
    assert int(checkpoint.read_checkpoint(match.group(3))["global_step"]) == step


@pytest.mark.slow
def test_train_installs_handlers_only_while_it_runs(tmp_path):
    from bert_tf.models import BertPretrainer
    from bert_tf.training import distribute
    from bert_tf.training.trainer import Trainer
    from tests.test_pretraining import in_memory_dataset_fn

    def mine(signum, frame):  # pylint: disable=unused-argument
        pass

    seen = []
    sigint = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN in a background job
    previous = signal.signal(signal.SIGTERM, mine)
    try:
        trainer = Trainer(distribute.get_strategy("off"),
                          lambda: BertPretrainer(one_layer_config()),
                          str(tmp_path / "output"))

        def dataset_fn(input_context):
            seen.append(signal.getsignal(signal.SIGTERM))
            return in_memory_dataset_fn(random_batches(1, seed=3), repeat=True)(input_context)

        trainer.train(dataset_fn, 8, 1, 1e-3, 1, iterations_per_loop=1)
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is sigint
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen and seen[0] is not mine  # the trainer's own, while it trained


@pytest.mark.slow
def test_sigterm_after_a_resume_writes_the_newer_checkpoint(tmp_path, monkeypatch):
    # An output_dir that already holds model.ckpt-2: the notice's checkpoint must
    # still be written, at the step reached, and be the one a rerun resumes from.
    from bert_tf.models import BertPretrainer
    from bert_tf.training import distribute
    from bert_tf.training.progress import TrainProgress
    from bert_tf.training.trainer import Trainer
    from tests.test_pretraining import in_memory_dataset_fn

    output_dir = str(tmp_path / "output")
    dataset_fn = in_memory_dataset_fn(random_batches(2, seed=3), repeat=True)

    def trainer():
        return Trainer(distribute.get_strategy("off"),
                       lambda: BertPretrainer(one_layer_config()), output_dir)

    trainer().train(dataset_fn, 8, 2, 1e-3, 1, iterations_per_loop=1)
    assert _steps(output_dir) == [2]

    record = TrainProgress.record

    def record_then_sigterm(progress, step, *args, **kwargs):
        result = record(progress, step, *args, **kwargs)
        if step == 3:  # a step past the earlier checkpoint: SIGTERM to this process
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    monkeypatch.setattr(TrainProgress, "record", record_then_sigterm)
    with pytest.raises(preemption.Preempted) as stopped:
        trainer().train(dataset_fn, 8, 1000, 1e-3, 1, iterations_per_loop=1)
    step = stopped.value.step
    assert stopped.value.cause == "SIGTERM" and 3 <= step < 1000
    assert stopped.value.checkpoint == os.path.join(output_dir, "model.ckpt-%d" % step)
    assert _steps(output_dir) == [2, step]
    assert tf.train.latest_checkpoint(output_dir) == stopped.value.checkpoint
    assert int(checkpoint.read_checkpoint(stopped.value.checkpoint)["global_step"]) == step
