"""Distribution strategies from a name (new; the original ran on one device or a TPUEstimator).

`get_strategy("off" | "one_device" | "mirrored" | "multi_worker_mirrored" | "tpu", ...)`
turns the tools' `--distribution_strategy` / `--num_gpus` / `--tpu_name` flags
into a `tf.distribute.Strategy` (as Model Garden's
`distribute_utils.get_distribution_strategy`). The training loop
(`bert_tf.training`) takes the strategy as an argument and works the same under
every one of them.

Example (a TPU pod slice, the original's `--use_tpu --tpu_name`):

  strategy = get_strategy("tpu", tpu="my-tpu", tpu_zone="us-central1-b",
                          gcp_project="my-project")
"""

import json
import os

import tensorflow as tf
from absl import logging

from bert_tf.errors import UserError

STRATEGIES = ("off", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
ALL_REDUCE_ALGORITHMS = ("auto", "ring", "nccl")


def set_logical_cpu_devices(num_devices):
    """Splits the host CPU into `num_devices` logical devices (`/cpu:0`, `/cpu:1`, ...).

    Lets `MirroredStrategy` run several replicas on a machine without GPUs
    (tests, debugging). Must run before TensorFlow initializes its devices
    (before the first op); afterwards it raises `RuntimeError`.
    """
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])


def get_strategy(distribution_strategy="off", num_gpus=0, tpu=None, tpu_zone=None,
                 gcp_project=None, all_reduce_alg="auto"):
    """Returns the `tf.distribute.Strategy` named by `distribution_strategy`.

    Args:
      distribution_strategy: one of
        "off": the default strategy (no distribution, the current device);
        "one_device": `OneDeviceStrategy` on `/gpu:0`, or `/cpu:0` if num_gpus == 0;
        "mirrored": `MirroredStrategy` over `num_gpus` GPUs; with num_gpus == 0,
          over every logical CPU device (one, unless `set_logical_cpu_devices`);
        "multi_worker_mirrored": `MultiWorkerMirroredStrategy`; the cluster
          comes from the `TF_CONFIG` environment variable;
        "tpu": `TPUStrategy` on the TPU named by `tpu`.
      num_gpus: int >= 0, GPUs per worker.
      tpu: TPU name or `grpc://ip:8470` address (`--tpu_name`); "" or None with
        "tpu" means a TPU VM's local TPU.
      tpu_zone, gcp_project: passed to `TPUClusterResolver` (`--tpu_zone`, `--gcp_project`).
      all_reduce_alg: "auto" | "ring" | "nccl", the collective implementation
        of multi_worker_mirrored; "nccl" also picks `NcclAllReduce` for mirrored.

    Returns:
      A `tf.distribute.Strategy`; never None.

    Raises:
      UserError: an unknown name, or flags that contradict each other.
    """
    name = (distribution_strategy or "off").lower()
    if name not in STRATEGIES:
        raise UserError("--distribution_strategy must be one of %s, got %r"
                        % ("|".join(STRATEGIES), distribution_strategy))
    if num_gpus is None or num_gpus < 0:
        raise UserError("--num_gpus must be >= 0, got %r" % (num_gpus,))
    all_reduce_alg = (all_reduce_alg or "auto").lower()
    if all_reduce_alg not in ALL_REDUCE_ALGORITHMS:
        raise UserError("--all_reduce_alg must be one of %s, got %r"
                        % ("|".join(ALL_REDUCE_ALGORITHMS), all_reduce_alg))
    available_gpus = len(tf.config.list_physical_devices("GPU"))
    if name != "tpu" and num_gpus > available_gpus:
        raise UserError("--num_gpus=%d but this machine has %d GPU(s)" % (num_gpus, available_gpus))

    if name == "off":
        if num_gpus > 1:
            raise UserError("--distribution_strategy=off cannot use --num_gpus=%d; use "
                            "mirrored" % num_gpus)
        strategy = tf.distribute.get_strategy()
    elif name == "one_device":
        if num_gpus > 1:
            raise UserError("--distribution_strategy=one_device cannot use --num_gpus=%d; "
                            "use mirrored" % num_gpus)
        strategy = tf.distribute.OneDeviceStrategy("/gpu:0" if num_gpus else "/cpu:0")
    elif name == "mirrored":
        if num_gpus:
            devices = ["/gpu:%d" % i for i in range(num_gpus)]
        else:
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
        cross_device_ops = None
        if all_reduce_alg == "nccl" and num_gpus:
            cross_device_ops = tf.distribute.NcclAllReduce()
        elif not num_gpus:
            # NCCL needs GPUs; reduce on the host.
            cross_device_ops = tf.distribute.ReductionToOneDevice()
        strategy = tf.distribute.MirroredStrategy(devices=devices,
                                                  cross_device_ops=cross_device_ops)
    elif name == "multi_worker_mirrored":
        implementation = {
            "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
            "ring": tf.distribute.experimental.CommunicationImplementation.RING,
            "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
        }[all_reduce_alg]
        _check_tf_config()
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=implementation))
    else:  # tpu
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
                tpu=tpu or "", zone=tpu_zone, project=gcp_project)
            if tpu not in (None, "", "local"):
                tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, RuntimeError, OSError, tf.errors.OpError) as e:
            # OSError includes urllib's URLError (the GCE API lookup of a TPU name).
            raise UserError("--tpu_name=%s: cannot reach the TPU (%s)"
                            % (tpu or "", str(e).splitlines()[0] if str(e) else type(e).__name__)
                            ) from None
        strategy = tf.distribute.TPUStrategy(resolver)
    logging.info("Distribution strategy: %s (%s) with %d replica(s) in sync", name,
                 type(strategy).__name__, strategy.num_replicas_in_sync)
    return strategy


def _check_tf_config():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        logging.warning("--distribution_strategy=multi_worker_mirrored without TF_CONFIG: "
                        "a single worker")
        return
    try:
        config = json.loads(raw)
        config["cluster"]
        config["task"]["type"]
    except (ValueError, KeyError, TypeError):
        raise UserError("TF_CONFIG is not a valid cluster spec (needs \"cluster\" and "
                        "\"task\": {\"type\", \"index\"}): %s" % raw[:200]) from None


def task_info(strategy):
    """(task_type, task_id) of this process, or (None, 0) outside a multi-worker cluster."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None:
        return None, 0
    task_type = getattr(resolver, "task_type", None)
    task_id = getattr(resolver, "task_id", None) or 0
    return task_type, task_id


def is_chief(strategy):
    """Whether this process writes checkpoints, summaries and results.

    True without a cluster, for the `chief` task, and for `worker` 0 when the
    cluster has no `chief` (TF's own convention).
    """
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return True
    task_type, task_id = task_info(strategy)
    if task_type in (None, "chief"):
        return True
    if task_type == "worker":
        resolver = strategy.cluster_resolver
        jobs = resolver.cluster_spec().as_dict() if resolver is not None else {}
        return "chief" not in jobs and task_id == 0
    return False
