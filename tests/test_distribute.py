"""Tests for bert_tf/training/distribute.py and the training loop under tf.distribute.

* `get_strategy` names, flags and errors; `is_chief`.
* The devices each strategy is built with for N visible GPUs (pretended:
  `tf.config.list_physical_devices` patched), and without any.
* The TPU flags: the `TPUClusterResolver` arguments they give, and one line
  naming the flag when the TPU cannot be reached; the chief of a TPU.
* MirroredStrategy over 2 logical CPU devices (a child process: devices must
  be configured before TensorFlow starts) gives the one-device result for the
  same global batch, with gradient accumulation inside each replica too.
* MultiWorkerMirroredStrategy: two `tools/run_pretraining.py` worker processes
  on 127.0.0.1 (TF_CONFIG) train together (dropout on, fp16 loss scaling),
  and only the chief writes the checkpoints and eval_results.txt: in
  tests/test_lost_worker.py, whose workers, one of them killed, run again.
"""

if __name__ == "__main__":
    # The child process: two logical CPU devices, before TensorFlow starts.
    import tensorflow as tf
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0],
        [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
    from tests.conftest import turn_off_grappler_rewrites
    turn_off_grappler_rewrites()

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.training import distribute
from bert_tf.errors import UserError
from bert_tf.models import BertPretrainer
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
    with pytest.raises(UserError, match=r"--num_gpus must be >= 0 \(or -1 for every visible "
                                        r"GPU\), got -2"):
        distribute.get_strategy("off", num_gpus=-2)
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


# ----------------------------------------------------------------- GPUs


def test_strategy_devices_default_to_every_visible_gpu():
    devices = distribute.strategy_devices
    for num_gpus in (None, -1):
        assert devices("mirrored", num_gpus, 4)[0] == ["/gpu:0", "/gpu:1", "/gpu:2", "/gpu:3"]
        assert devices("one_device", num_gpus, 4)[0] == ["/gpu:0"]
        assert devices("mirrored", num_gpus, 0, ("/cpu:0", "/cpu:1")) == (
            ["/cpu:0", "/cpu:1"], "mirrored over the CPU (/cpu:0, /cpu:1): no GPU is visible")
        assert devices("one_device", num_gpus, 0) == (
            ["/cpu:0"], "one_device on /cpu:0: no GPU is visible")
        assert devices("off", num_gpus, 2) == (None, "the default device (/gpu:0)")
    assert devices("mirrored", 2, 4) == (["/gpu:0", "/gpu:1"],
                                         "mirrored over 2 GPU(s): /gpu:0, /gpu:1")
    assert devices("mirrored", 0, 4) == (["/cpu:0"], "mirrored over the CPU (/cpu:0): "
                                                     "--num_gpus=0")
    assert devices("one_device", 0, 4)[0] == ["/cpu:0"]
    assert devices("one_device", 1, 4)[0] == ["/gpu:0"]
    with pytest.raises(UserError, match=r"--num_gpus=5 but this machine has 4 GPU\(s\)"):
        devices("mirrored", 5, 4)
    with pytest.raises(UserError, match="--distribution_strategy=one_device cannot use "
                                        "--num_gpus=2; use mirrored"):
        devices("one_device", 2, 4)
    with pytest.raises(UserError, match="--distribution_strategy=off cannot use "
                                        "--num_gpus=3; use mirrored"):
        devices("off", 3, 4)


class _Recorder(object):
    """Stands in for a strategy class: records what it is built with."""

    built = []

    def __init__(self, *args, **kwargs):
        _Recorder.built.append((args, kwargs))
        self.num_replicas_in_sync = len(kwargs.get("devices") or args[:1])


def _pretend_gpus(monkeypatch, num_gpus):
    real = tf.config.list_physical_devices

    def list_physical_devices(device_type=None):
        if device_type == "GPU":
            return [tf.config.PhysicalDevice("/physical_device:GPU:%d" % i, "GPU")
                    for i in range(num_gpus)]
        return real(device_type)
    monkeypatch.setattr(tf.config, "list_physical_devices", list_physical_devices)
    monkeypatch.setattr(tf.distribute, "MirroredStrategy", _Recorder)
    monkeypatch.setattr(tf.distribute, "OneDeviceStrategy", _Recorder)
    _Recorder.built = []


def test_mirrored_by_default_uses_every_visible_gpu(monkeypatch, info_logs):
    caplog = info_logs
    _pretend_gpus(monkeypatch, 8)
    with caplog.at_level("INFO"):
        strategy = distribute.get_strategy("mirrored")
    (args, kwargs), = _Recorder.built
    assert kwargs["devices"] == ["/gpu:%d" % i for i in range(8)]
    assert kwargs["cross_device_ops"] is None  # TensorFlow picks NCCL for GPUs
    assert strategy.num_replicas_in_sync == 8
    assert "Devices: mirrored over 8 GPU(s): /gpu:0, /gpu:1," in caplog.text
    _Recorder.built = []
    distribute.get_strategy("mirrored", num_gpus=2, all_reduce_alg="nccl")
    (_, kwargs), = _Recorder.built
    assert kwargs["devices"] == ["/gpu:0", "/gpu:1"]
    assert isinstance(kwargs["cross_device_ops"], tf.distribute.NcclAllReduce)
    _Recorder.built = []
    distribute.get_strategy("one_device")
    assert _Recorder.built == [(("/gpu:0",), {})]


def test_mirrored_without_gpus_runs_on_the_cpu_and_says_so(monkeypatch, info_logs):
    caplog = info_logs
    _pretend_gpus(monkeypatch, 0)
    with caplog.at_level("INFO"):
        distribute.get_strategy("mirrored")
    (_, kwargs), = _Recorder.built
    cpus = [d.name for d in tf.config.list_logical_devices("CPU")]
    assert kwargs["devices"] == cpus
    assert isinstance(kwargs["cross_device_ops"], tf.distribute.ReductionToOneDevice)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "Devices: mirrored over the CPU (%s): no GPU is visible" % ", ".join(cpus) in warnings


def test_num_gpus_flag_defaults_to_every_visible_gpu():
    from tests.test_tpu_flags import scale_out_of
    scale_out = scale_out_of()
    assert scale_out.num_gpus is None and scale_out.master is None
    assert scale_out.strategy_name() == "off"
    scale_out = scale_out_of("--distribution_strategy=mirrored")
    assert scale_out.strategy_name() == "mirrored" and scale_out.num_gpus is None
    assert scale_out_of("--num_gpus=2").strategy_name() == "mirrored"


# ----------------------------------------------------------------- TPU


def test_tpu_flags_give_the_resolver_arguments():
    kwargs = distribute.tpu_resolver_kwargs
    assert kwargs("my-tpu", "us-central1-b", "my-project") == (
        {"tpu": "my-tpu", "zone": "us-central1-b", "project": "my-project"}, "tpu_name")
    assert kwargs(master="grpc://10.2.3.4:8470") == (
        {"tpu": "grpc://10.2.3.4:8470", "zone": None, "project": None}, "master")
    # As the original: the resolver of --tpu_name wins over --master.
    assert kwargs("my-tpu", master="grpc://10.2.3.4:8470")[0]["tpu"] == "my-tpu"
    # Neither: a TPU VM's own TPU (or $TPU_NAME).
    assert kwargs() == ({"tpu": "", "zone": None, "project": None}, None)
    assert kwargs("", "", "")[0] == {"tpu": "", "zone": None, "project": None}


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_tpu_is_one_line_naming_the_flag(monkeypatch):
    connected = []
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", connected.append)
    address = "grpc://127.0.0.1:%d" % _closed_port()
    for flags_, flag in (({"master": address}, "--master"), ({"tpu": address}, "--tpu_name")):
        with pytest.raises(UserError) as e:
            distribute.get_strategy("tpu", **flags_)
        message = str(e.value)
        assert message.startswith("%s=%s: cannot reach the TPU (" % (flag, address)), message
        assert "\n" not in message and "refused" in message.lower()
    assert connected == []  # refused before TensorFlow tries (it would wait without end)


def test_tpu_resolver_errors_name_the_flag(monkeypatch):
    calls = []

    def resolver(**kwargs):
        calls.append(kwargs)
        raise ValueError("Could not lookup TPU metadata from name 'no-such-tpu'.\nmore")
    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", resolver)
    with pytest.raises(UserError) as e:
        distribute.get_strategy("tpu", tpu="no-such-tpu", tpu_zone="europe-west4-a",
                                gcp_project="proj")
    assert str(e.value) == ("--tpu_name=no-such-tpu: cannot reach the TPU (Could not lookup "
                            "TPU metadata from name 'no-such-tpu'.)")
    assert calls == [{"tpu": "no-such-tpu", "zone": "europe-west4-a", "project": "proj"}]
    with pytest.raises(UserError, match=r"^--tpu_name: none given and no TPU found on this "
                                        r"machine \(Could not lookup"):
        distribute.get_strategy("tpu")


class _FakeTPUStrategy(tf.distribute.TPUStrategy):
    """A TPUStrategy (for isinstance) that only carries a resolver."""

    def __init__(self, resolver):  # pylint: disable=super-init-not-called
        self._fake_resolver = resolver

    @property
    def cluster_resolver(self):
        return self._fake_resolver


def test_only_one_host_of_a_tpu_writes():
    assert distribute.is_chief_task("worker", 0, tpu=True)
    assert not distribute.is_chief_task("worker", 3, tpu=True)
    assert distribute.is_chief_task("worker", 0, jobs=("worker",))
    assert not distribute.is_chief_task("worker", 0, jobs=("worker", "chief"))
    assert not distribute.is_chief_task("ps", 0)
    assert distribute.is_chief(_FakeTPUStrategy(_Resolver("worker", 0, {})))
    assert not distribute.is_chief(_FakeTPUStrategy(_Resolver("worker", 1, {})))


# ----------------------------------------------------------------- MirroredStrategy


def _mirrored_child(output_dir):
    """Runs in the child: 1 device vs 2 replicas with 2 accumulation micro-batches each, and
    vs 2 replicas with use_xla."""
    from bert_tf import training
    from bert_tf.training import steps
    from tests.test_pretraining import BATCH_SIZE
    from tests.test_pretraining import in_memory_dataset_fn, random_batches, one_layer_config
    from tests.test_pretraining import write_init_checkpoint

    assert len(tf.config.list_logical_devices("CPU")) == 2
    init = write_init_checkpoint(one_layer_config(), os.path.join(output_dir, "init", "ckpt"))
    batches = random_batches(3, seed=11)
    results = {}
    mirrored = distribute.get_strategy("mirrored")
    # Several CPU replicas cannot compile the update (steps.whole_step_compiles):
    # with --use_xla they compile the forward and backward pass only.
    assert not steps.whole_step_compiles(mirrored)
    assert steps.whole_step_compiles(distribute.get_strategy("off"))
    for name, strategy, accumulation, use_xla in (
            ("one_device", distribute.get_strategy("off"), 1, False),
            ("mirrored_acc2", mirrored, 2, False),
            ("mirrored_xla", mirrored, 1, True)):
        trainer = training.Trainer(
            strategy, lambda: BertPretrainer(one_layer_config()),
            os.path.join(output_dir, name), use_xla=use_xla)
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


@pytest.mark.slow
def test_mirrored_two_devices_equal_one_device_for_the_same_global_batch(tmp_path):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "mirrored", str(tmp_path)],
                          cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(tmp_path / "results.json") as f:
        results = json.load(f)
    assert results["one_device"]["replicas"] == 1
    one = checkpoint.read_checkpoint(str(tmp_path / "one_device" / "model.ckpt-3"))
    for run in ("mirrored_acc2", "mirrored_xla"):
        assert results[run]["replicas"] == 2
        np.testing.assert_allclose(results[run]["losses"], results["one_device"]["losses"],
                                   atol=REPLICA_ATOL, err_msg=run)
        two = checkpoint.read_checkpoint(str(tmp_path / run / "model.ckpt-3"))
        assert set(one) == set(two)
        for name in sorted(one):
            np.testing.assert_allclose(two[name], one[name], atol=REPLICA_ATOL,
                                       rtol=REPLICA_ATOL, err_msg="%s: %s" % (run, name))


# ----------------------------------------------------------------- MultiWorkerMirroredStrategy


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


if __name__ == "__main__":
    if sys.argv[1] == "mirrored":
        _mirrored_child(sys.argv[2])
    else:
        raise SystemExit("unknown mode %s" % sys.argv[1])
