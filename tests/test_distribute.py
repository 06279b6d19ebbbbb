"""Tests for bert_tf/distribute.py and the training loop under tf.distribute.

* `get_strategy` names, flags and errors; `is_chief`.
* MirroredStrategy over 2 logical CPU devices (a child process: devices must
  be configured before TensorFlow starts) gives the one-device result for the
  same global batch, with gradient accumulation inside each replica too.
* MultiWorkerMirroredStrategy: two `tools/run_pretraining.py` worker processes
  on 127.0.0.1 (TF_CONFIG) train together (dropout on, fp16 loss scaling),
  and only the chief writes the checkpoints and eval_results.txt.
"""

if __name__ == "__main__":
    # The child process: two logical CPU devices, before TensorFlow starts.
    import tensorflow as tf
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0],
        [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoint
from bert_tf import distribute
from bert_tf.errors import UserError
from bert_tf.tasks import PretrainingTask
from tests.tolerances import REPLICA_ATOL

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------- get_strategy


def test_get_strategy_names():
    assert distribute.get_strategy("off") is tf.distribute.get_strategy()
    assert distribute.get_strategy(None).num_replicas_in_sync == 1
    one = distribute.get_strategy("one_device")
    assert isinstance(one, tf.distribute.OneDeviceStrategy)
    assert one.extended.worker_devices[0].endswith("CPU:0")
    mirrored = distribute.get_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy)
    assert mirrored.num_replicas_in_sync == len(tf.config.list_logical_devices("CPU"))


def test_get_strategy_errors(monkeypatch):
    with pytest.raises(UserError, match="--distribution_strategy must be one of "
                                        "off|one_device|mirrored|multi_worker_mirrored|tpu"):
        distribute.get_strategy("horovod")
    with pytest.raises(UserError, match=r"--num_gpus=2 but this machine has 0 GPU\(s\)"):
        distribute.get_strategy("mirrored", num_gpus=2)
    with pytest.raises(UserError, match="--num_gpus must be >= 0"):
        distribute.get_strategy("off", num_gpus=-1)
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(UserError, match="TF_CONFIG is not a valid cluster spec"):
        distribute.get_strategy("multi_worker_mirrored")


class _Resolver(object):
    def __init__(self, task_type, task_id, jobs):
        self.task_type, self.task_id, self._jobs = task_type, task_id, jobs

    def cluster_spec(self):
        return tf.train.ClusterSpec(self._jobs)


class _Strategy(object):
    def __init__(self, resolver):
        self.cluster_resolver = resolver


def test_is_chief_follows_tf_conventions():
    workers = {"worker": ["localhost:1", "localhost:2"]}
    assert distribute.is_chief(tf.distribute.get_strategy())
    assert distribute.is_chief(_Strategy(_Resolver("worker", 0, workers)))
    assert not distribute.is_chief(_Strategy(_Resolver("worker", 1, workers)))
    with_chief = dict(workers, chief=["localhost:3"])
    assert distribute.is_chief(_Strategy(_Resolver("chief", 0, with_chief)))
    assert not distribute.is_chief(_Strategy(_Resolver("worker", 0, with_chief)))
    assert not distribute.is_chief(_Strategy(_Resolver("evaluator", 0, workers)))


# ----------------------------------------------------------------- MirroredStrategy


def _mirrored_child(output_dir):
    """Runs in the child: 1 device vs 2 replicas with 2 accumulation micro-batches each."""
    from bert_tf import training
    from tests.test_pretraining import BATCH_SIZE, MAX_PREDICTIONS, SEQ_LENGTH
    from tests.test_pretraining import in_memory_dataset_fn, random_batches, tiny_config
    from tests.test_pretraining import write_init_checkpoint

    assert len(tf.config.list_logical_devices("CPU")) == 2
    init = write_init_checkpoint(tiny_config(), os.path.join(output_dir, "init", "ckpt"))
    batches = random_batches(3, seed=11)
    results = {}
    for name, strategy, accumulation in (
            ("one_device", distribute.get_strategy("off"), 1),
            ("mirrored_acc2", distribute.get_strategy("mirrored"), 2)):
        trainer = training.Trainer(
            strategy, PretrainingTask(tiny_config(), SEQ_LENGTH, MAX_PREDICTIONS),
            os.path.join(output_dir, name))
        history = trainer.train(in_memory_dataset_fn(batches), BATCH_SIZE, 3, 1e-3, 1,
                                init_checkpoint=init, iterations_per_loop=3,
                                num_accumulation_steps=accumulation)
        results[name] = {"replicas": strategy.num_replicas_in_sync,
                         "losses": [float(x) for h in history for x in h["losses"]]}
    with open(os.path.join(output_dir, "results.json"), "w") as f:
        json.dump(results, f)


def _child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_CONFIG", None)
    return env


def test_mirrored_two_devices_equal_one_device_for_the_same_global_batch(tmp_path):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "mirrored", str(tmp_path)],
                          cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(tmp_path / "results.json") as f:
        results = json.load(f)
    assert results["one_device"]["replicas"] == 1
    assert results["mirrored_acc2"]["replicas"] == 2
    np.testing.assert_allclose(results["mirrored_acc2"]["losses"],
                               results["one_device"]["losses"], atol=REPLICA_ATOL)
    one = checkpoint.read_checkpoint(str(tmp_path / "one_device" / "model.ckpt-3"))
    two = checkpoint.read_checkpoint(str(tmp_path / "mirrored_acc2" / "model.ckpt-3"))
    assert set(one) == set(two)
    for name in sorted(one):
        np.testing.assert_allclose(two[name], one[name], atol=REPLICA_ATOL, rtol=REPLICA_ATOL,
                                   err_msg=name)


# ----------------------------------------------------------------- MultiWorkerMirroredStrategy


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_multi_worker_mirrored_two_processes_train_and_only_the_chief_writes(tmp_path):
    from tests.test_pretraining import random_batches, tiny_config, write_config, write_records
    config_file = write_config(tiny_config(dropout=0.1), str(tmp_path / "bert_config.json"))
    input_file = write_records(str(tmp_path / "data.tfrecord"), random_batches(4, seed=12))
    output_dir = tmp_path / "output"  # shared by both workers, as on a cluster
    ports = _free_ports(2)
    cluster = {"worker": ["127.0.0.1:%d" % p for p in ports]}
    procs = []
    for index in range(2):
        env = _child_env()
        env["TF_CONFIG"] = json.dumps({"cluster": cluster,
                                       "task": {"type": "worker", "index": index}})
        procs.append(subprocess.Popen(
            [sys.executable, "tools/run_pretraining.py", "--input_file=%s" % input_file,
             "--output_dir=%s" % output_dir, "--bert_config_file=%s" % config_file,
             "--do_train=True", "--do_eval=True", "--train_batch_size=8",
             "--eval_batch_size=8", "--max_seq_length=16", "--max_predictions_per_seq=4",
             "--num_train_steps=4", "--num_warmup_steps=1", "--learning_rate=1e-3",
             "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--max_eval_steps=2",
             "--distribution_strategy=multi_worker_mirrored", "--mixed_precision=fp16"],
            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    logs = []
    try:
        for proc in procs:
            logs.append(proc.communicate(timeout=300)[0])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for index, (proc, log) in enumerate(zip(procs, logs)):
        assert proc.returncode == 0, "worker %d:\n%s" % (index, log[-4000:])
        assert ("Distribution strategy: multi_worker_mirrored (CollectiveAllReduceStrategy) "
                "with 2 replica(s) in sync" in log), log[:3000]
        assert "step 4/4: loss = " in log
    chief_log, worker_log = logs
    assert "Saved checkpoint for step 2" in chief_log
    assert "Saved checkpoint for step 4" in chief_log
    assert "Saved checkpoint" not in worker_log
    assert "***** Eval results *****" in chief_log
    assert "***** Eval results *****" not in worker_log
    assert tf.train.latest_checkpoint(str(output_dir)) == str(output_dir / "model.ckpt-4")
    values = checkpoint.read_checkpoint(str(output_dir / "model.ckpt-4"))
    assert int(values["global_step"]) == 4
    assert all(np.isfinite(v).all() for v in values.values())
    with open(output_dir / "eval_results.txt") as f:
        lines = f.read().splitlines()
    assert [line.split(" = ")[0] for line in lines] == [
        "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
        "next_sentence_accuracy", "next_sentence_loss"]
    assert lines[0] == "global_step = 4"


if __name__ == "__main__":
    if sys.argv[1] == "mirrored":
        _mirrored_child(sys.argv[2])
    else:
        raise SystemExit("unknown mode %s" % sys.argv[1])
