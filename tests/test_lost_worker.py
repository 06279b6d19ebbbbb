"""Tests for bert_tf/training/lost_worker.py: a lost worker does not hang a multi-worker job.

* The lost task, its cause and the one line, from the messages TensorFlow
  gives when a peer dies (its connection breaks) or hangs (no heartbeat); the
  peer, not this worker, when a message names this worker's device first.
* Two `tools/run_pretraining.py` workers on 127.0.0.1 (TF_CONFIG): worker 1
  killed with SIGKILL during training; worker 0 exits within `LOST_BOUND`
  seconds with one line naming worker 1, the step and the checkpoint, and
  exit status 69; both started again resume from that checkpoint and finish,
  with 2 replicas in sync, fp16 mixed precision and an evaluation: only the
  chief (worker 0) writes checkpoints and eval results.
"""

import json
import re
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint as checkpoint_lib
from bert_tf.training import lost_worker
from tests.test_distribute import REPO_ROOT, _child_env, _free_ports

CLUSTER = {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]}

# The messages of TensorFlow 2.21's aborted collectives (their telling lines).
RESET_BY_WORKER_1 = """Graph execution error:

Detected at node while/CollectiveReduceV2 defined at (most recent call last):
Collective ops is aborted by: recvmsg:Connection reset by peer
Additional GRPC error information from remote target /job:worker/replica:0/task:1 while \
calling /tensorflow.WorkerService/RecvBuf:
:UNKNOWN:Error received from peer  {grpc_message:"recvmsg:Connection reset by peer", \
grpc_status:14}
The error could be from a previous operation. Restart your program to reset.
\t [[{{node while/CollectiveReduceV2}}]] [Op:__inference_train_loop_5189]"""
WORKER_1_HUNG = """Graph execution error:

Detected at node while/CollectiveReduceV2 defined at (most recent call last):
Collective ops is aborted by: Error reported from /job:worker/task:1: The following tasks \
are unhealthy (stopped sending heartbeats):
/job:worker/replica:0/task:1
The tasks have crashed. Check the task logs for an earlier error, or scheduler events \
(e.g. preemption, eviction) to debug further.
The error could be from a previous operation. Restart your program to reset."""
LEADER_HUNG = """Graph execution error:

Detected at node while/AdamWeightDecay/CollectiveReduceV2 defined at (most recent call last):
Collective ops is aborted by: Deadline Exceeded
RPC: /tensorflow.CoordinationService/Heartbeat
The error could be from a previous operation. Restart your program to reset."""


@pytest.mark.parametrize("message, this_task, lost, cause", [
    (RESET_BY_WORKER_1, ("worker", 0), ("worker", 1), "recvmsg:Connection reset by peer"),
    (WORKER_1_HUNG, ("worker", 0), ("worker", 1), "it stopped sending heartbeats"),
    (LEADER_HUNG, ("worker", 1), ("worker", 0),
     "Deadline Exceeded (RPC: /tensorflow.CoordinationService/Heartbeat)"),
])
def test_the_line_names_the_lost_task_its_cause_the_step_and_the_checkpoint(
        message, this_task, lost, cause):
    error = tf.errors.UnavailableError(None, None, message)
    e = lost_worker.as_lost_worker(error, CLUSTER, this_task, step=12,
                                   checkpoint="gs://b/out/model.ckpt-10")
    assert e.task == lost and e.address == CLUSTER["worker"][lost[1]]
    assert str(e) == (
        "lost worker %d (%s) of the multi_worker_mirrored job at step 12: %s; rerun every "
        "worker to resume from gs://b/out/model.ckpt-10" % (lost[1], e.address, cause))


def test_which_task_is_lost_in_a_larger_cluster():
    cluster = {"chief": ["c:1"], "worker": ["w:1", "w:2"]}
    # The coordination service runs on the chief: a failed heartbeat means the chief.
    assert lost_worker.lost_task(LEADER_HUNG, cluster, ("worker", 1)) == ("chief", 0)
    assert lost_worker.lost_task(RESET_BY_WORKER_1, cluster, ("chief", 0)) == ("worker", 1)
    assert lost_worker.lost_task("Socket closed", cluster, ("worker", 0)) is None
    e = lost_worker.as_lost_worker(tf.errors.UnavailableError(
        None, None, "Collective ops is aborted by: Socket closed"), cluster, ("worker", 0))
    assert str(e) == ("lost a worker of the multi_worker_mirrored job: Socket closed; rerun "
                      "every worker to resume from the last checkpoint in output_dir")


# This worker's own device named before the peer's.
OWN_DEVICE_FIRST = """Graph execution error:

Detected at node while/CollectiveReduceV2 defined at (most recent call last):
Collective ops is aborted by: /job:worker/replica:0/task:%d/device:CPU:0 failed to receive \
from /job:worker/replica:0/task:1: recvmsg:Connection reset by peer
The error could be from a previous operation. Restart your program to reset."""


@pytest.mark.parametrize("cluster, this_task", [
    (CLUSTER, ("worker", 0)),
    ({"worker": ["w:0", "w:1", "w:2"]}, ("worker", 2)),
])
def test_the_lost_task_is_the_peer_when_the_message_names_this_worker_first(cluster, this_task):
    message = OWN_DEVICE_FIRST % this_task[1]
    assert lost_worker.lost_task(message, cluster, this_task) == ("worker", 1)
    e = lost_worker.as_lost_worker(tf.errors.UnavailableError(None, None, message), cluster,
                                   this_task, step=7, checkpoint="out/model.ckpt-5")
    assert e.task == ("worker", 1) and e.address == cluster["worker"][1]
    assert str(e).startswith("lost worker 1 (%s) of the multi_worker_mirrored job at step 7: "
                             % cluster["worker"][1])


def test_the_heartbeat_timeout_flag_defaults_to_tensorflows_and_reaches_the_service(
        monkeypatch):
    from bert_tf.training import distribute
    from bert_tf.training.scale_out import ScaleOut
    assert ScaleOut().heartbeat_timeout == lost_worker.HEARTBEAT_TIMEOUT
    seen = {}
    monkeypatch.setattr(distribute, "_configure_coordination_service",
                        lambda timeout: seen.setdefault("timeout", timeout))
    monkeypatch.setattr(tf.distribute, "MultiWorkerMirroredStrategy",
                        lambda **kwargs: types.SimpleNamespace(num_replicas_in_sync=2))
    monkeypatch.setattr(distribute, "_check_tf_config", lambda: None)
    ScaleOut(distribution_strategy="multi_worker_mirrored",
             heartbeat_timeout=30.0).create_strategy()
    assert seen == {"timeout": 30.0}


def test_other_errors_and_single_processes_are_no_lost_worker():
    error = tf.errors.UnavailableError(None, None, RESET_BY_WORKER_1)
    assert lost_worker.as_lost_worker(error, None, None) is None
    # A file system's UnavailableError, or an error of the model, on a cluster.
    assert lost_worker.as_lost_worker(tf.errors.UnavailableError(
        None, None, "GCS is unavailable"), CLUSTER, ("worker", 0)) is None
    assert lost_worker.as_lost_worker(ValueError(RESET_BY_WORKER_1), CLUSTER,
                                      ("worker", 0)) is None
    one = json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})
    assert lost_worker.cluster_of(tf_config=one) == (None, None)
    two = json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})
    assert lost_worker.cluster_of(tf_config=two) == (CLUSTER, ("worker", 1))


# ----------------------------------------------------------------- two real workers

# A live worker of a loaded test machine can miss TensorFlow's 10 s beat: --heartbeat_timeout.
HEARTBEAT_TIMEOUT = 30
# Seconds from the kill to the survivor's exit that a user may rely on: a killed
# worker's connection breaks at once, or the heartbeat timeout notices it.
LOST_BOUND = HEARTBEAT_TIMEOUT + 20
NUM_TRAIN_STEPS = 40
LINE = re.compile(r"^error: lost worker 1 \(127\.0\.0\.1:(\d+)\) of the multi_worker_mirrored "
                  r"job at step (\d+): .+; rerun every worker to resume from (.+)$")


def _start_workers(tmp_path, cluster, attempt):
    from tests.test_pretraining import random_batches, one_layer_config, write_config, write_records
    config_file = str(tmp_path / "bert_config.json")
    input_file = str(tmp_path / "data.tfrecord")
    if attempt == 0:
        write_config(one_layer_config(dropout=0.1), config_file)
        write_records(input_file, random_batches(4, seed=12))
    procs = []
    for index in range(2):
        env = _child_env()
        env["TF_CONFIG"] = json.dumps({"cluster": cluster,
                                       "task": {"type": "worker", "index": index}})
        log = open(tmp_path / ("worker%d-%d.log" % (index, attempt)), "w")
        procs.append(subprocess.Popen(
            [sys.executable, "tools/run_pretraining.py", "--input_file=%s" % input_file,
             "--output_dir=%s" % (tmp_path / "output"), "--bert_config_file=%s" % config_file,
             "--do_train=True", "--train_batch_size=8", "--max_seq_length=16",
             "--max_predictions_per_seq=4", "--num_train_steps=%d" % NUM_TRAIN_STEPS,
             "--num_warmup_steps=1", "--learning_rate=1e-3", "--save_checkpoints_steps=10",
             "--iterations_per_loop=2", "--distribution_strategy=multi_worker_mirrored",
             "--mixed_precision=fp16", "--do_eval=True", "--eval_batch_size=8",
             "--max_eval_steps=2", "--heartbeat_timeout=%d" % HEARTBEAT_TIMEOUT],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
        log.close()
    return procs


def _read(tmp_path, index, attempt):
    with open(tmp_path / ("worker%d-%d.log" % (index, attempt))) as f:
        return f.read()


@pytest.mark.slow
def test_a_killed_worker_stops_the_other_with_one_line_and_a_rerun_resumes(tmp_path):
    ports = _free_ports(2)
    cluster = {"worker": ["127.0.0.1:%d" % p for p in ports]}
    procs = _start_workers(tmp_path, cluster, 0)
    try:
        deadline = time.time() + 240
        while "step 12/%d" % NUM_TRAIN_STEPS not in _read(tmp_path, 0, 0):
            assert all(p.poll() is None for p in procs), _read(tmp_path, 0, 0)[-3000:]
            assert time.time() < deadline, _read(tmp_path, 0, 0)[-3000:]
            time.sleep(0.2)
        procs[1].send_signal(signal.SIGKILL)
        killed = time.time()
        try:
            status = procs[0].wait(timeout=LOST_BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail("worker 0 still runs %d s after worker 1 was killed:\n%s"
                        % (LOST_BOUND, _read(tmp_path, 0, 0)[-3000:]))
        waited = time.time() - killed
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    log = _read(tmp_path, 0, 0)
    assert status == lost_worker.EXIT_STATUS, log[-3000:]
    last = log.rstrip("\n").splitlines()[-1]
    match = LINE.match(last)
    assert match, last
    assert int(match.group(1)) == ports[1]
    step, checkpoint = int(match.group(2)), match.group(3)
    assert 12 <= step < NUM_TRAIN_STEPS
    assert checkpoint == tf.train.latest_checkpoint(str(tmp_path / "output"))
    resumed_from = int(checkpoint.rsplit("-", 1)[1])
    assert resumed_from >= 10 and resumed_from <= step
    print("worker 0 exited %.1f s after worker 1 was killed" % waited)

    procs = _start_workers(tmp_path, cluster, 1)
    try:
        statuses = [proc.wait(timeout=300) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    logs = [_read(tmp_path, index, 1) for index in range(2)]
    for index in range(2):
        assert statuses[index] == 0, "worker %d:\n%s" % (index, logs[index][-3000:])
        assert ("Distribution strategy: multi_worker_mirrored (CollectiveAllReduceStrategy) "
                "with 2 replica(s) in sync" in logs[index]), logs[index][:3000]
        assert "(starting at global_step %d)" % resumed_from in logs[index]
        assert "step %d/%d: loss = " % (NUM_TRAIN_STEPS, NUM_TRAIN_STEPS) in logs[index]
    # Only the chief writes: checkpoints, the eval results.
    chief_log, worker_log = logs
    assert "Saved checkpoint for step %d" % NUM_TRAIN_STEPS in chief_log
    assert "Saved checkpoint" not in worker_log + _read(tmp_path, 1, 0)
    assert "***** Eval results *****" in chief_log
    assert "***** Eval results *****" not in worker_log
    output_dir = tmp_path / "output"
    assert tf.train.latest_checkpoint(str(output_dir)) == str(
        output_dir / ("model.ckpt-%d" % NUM_TRAIN_STEPS))
    values = checkpoint_lib.read_checkpoint(str(output_dir / ("model.ckpt-%d" % NUM_TRAIN_STEPS)))
    assert int(values["global_step"]) == NUM_TRAIN_STEPS
    assert all(np.isfinite(v).all() for v in values.values())
    with open(output_dir / "eval_results.txt") as f:
        lines = f.read().splitlines()
    assert [line.split(" = ")[0] for line in lines] == [
        "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
        "next_sentence_accuracy", "next_sentence_loss"]
    assert lines[0] == "global_step = %d" % NUM_TRAIN_STEPS
