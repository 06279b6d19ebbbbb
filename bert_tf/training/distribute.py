"""Distribution strategies from a name (new; the original ran on one device or a TPUEstimator).

`get_strategy("off" | "one_device" | "mirrored" | "multi_worker_mirrored" | "tpu", ...)`
turns the tools' `--distribution_strategy` / `--num_gpus` / `--tpu_name` flags
into a `tf.distribute.Strategy` (as Model Garden's
`distribute_utils.get_distribution_strategy`). The training loop
(`bert_tf.training`) takes the strategy as an argument and works the same under
every one of them.

The choices are pure functions, testable without accelerators:
`strategy_devices` (mirrored uses every visible GPU unless `--num_gpus` says
otherwise, and the CPU, with a warning, when there is none),
`tpu_resolver_kwargs` (the original's `--tpu_name`, `--tpu_zone`,
`--gcp_project`, `--master`) and `is_chief_task` (which one process writes
checkpoints, summaries and results, on a multi-worker cluster or a
multi-host TPU).

Example (a TPU pod slice, the original's `--use_tpu --tpu_name`):

  strategy = get_strategy("tpu", tpu="my-tpu", tpu_zone="us-central1-b",
                          gcp_project="my-project")
"""

import json
import os
import socket

import tensorflow as tf
from absl import logging

from bert_tf.errors import UserError
from bert_tf.training import lost_worker

STRATEGIES = ("off", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
ALL_REDUCE_ALGORITHMS = ("auto", "ring", "nccl")
# `num_gpus` that means every visible GPU (None is the tools' default).
ALL_GPUS = -1
# Seconds to wait for a TCP connection to a TPU's grpc:// address before
# TensorFlow connects (TensorFlow itself would wait without end).
TPU_CONNECT_TIMEOUT = 30.0


def set_logical_cpu_devices(num_devices):
    """Splits the host CPU into `num_devices` logical devices (`/cpu:0`, `/cpu:1`, ...).

    Lets `MirroredStrategy` run several replicas on a machine without GPUs
    (tests, debugging). Must run before TensorFlow initializes its devices
    (before the first op); afterwards it raises `RuntimeError`.
    """
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])


def strategy_devices(distribution_strategy, num_gpus, num_visible_gpus,
                     cpu_devices=("/cpu:0",)):
    """The devices a strategy runs on: pure, so it is testable without GPUs.

    Args:
      distribution_strategy: "off" | "one_device" | "mirrored" (other names
        pick their devices themselves and get None).
      num_gpus: None or -1 (`ALL_GPUS`): every visible GPU; 0: the CPU; n: the
        first n GPUs.
      num_visible_gpus: int, the GPUs TensorFlow sees.
      cpu_devices: the logical CPU devices (mirrored over them without GPUs).

    Returns:
      (devices, note): devices is a list of device names (None for "off":
      TensorFlow places ops itself, on GPU 0 when there is one); note is a
      sentence for the log saying what runs where, and why.

    Raises:
      UserError: more GPUs asked for than are visible, or several GPUs for a
        one-device strategy.
    """
    if num_gpus is not None and num_gpus < ALL_GPUS:
        raise UserError("--num_gpus must be >= 0 (or -1 for every visible GPU), got %r"
                        % (num_gpus,))
    all_gpus = num_gpus is None or num_gpus == ALL_GPUS
    if not all_gpus and num_gpus > num_visible_gpus:
        raise UserError("--num_gpus=%d but this machine has %d GPU(s)"
                        % (num_gpus, num_visible_gpus))
    wanted = num_visible_gpus if all_gpus else num_gpus
    gpus = ["/gpu:%d" % i for i in range(wanted)]
    if distribution_strategy == "off":
        if not all_gpus and num_gpus > 1:
            raise UserError("--distribution_strategy=off cannot use --num_gpus=%d; use "
                            "mirrored" % num_gpus)
        return None, "the default device (%s)" % ("/gpu:0" if num_visible_gpus else "/cpu:0")
    if distribution_strategy == "one_device":
        if not all_gpus and num_gpus > 1:
            raise UserError("--distribution_strategy=one_device cannot use --num_gpus=%d; "
                            "use mirrored" % num_gpus)
        if gpus:
            return gpus[:1], "one_device on /gpu:0"
        return ["/cpu:0"], ("one_device on /cpu:0 (--num_gpus=0)" if not all_gpus
                            else "one_device on /cpu:0: no GPU is visible")
    if distribution_strategy == "mirrored":
        if gpus:
            return gpus, "mirrored over %d GPU(s): %s" % (len(gpus), ", ".join(gpus))
        devices = list(cpu_devices) or ["/cpu:0"]
        return devices, ("mirrored over the CPU (%s): %s" % (
            ", ".join(devices), "--num_gpus=0" if not all_gpus else "no GPU is visible"))
    return None, None


def tpu_resolver_kwargs(tpu_name=None, tpu_zone=None, gcp_project=None, master=None):
    """The `TPUClusterResolver` arguments that the original's TPU flags give.

    As the original's `run_*.py`: the resolver is built from `--tpu_name`
    (a Cloud TPU name or a grpc://ip:8470 address), `--tpu_zone` and
    `--gcp_project`; without `--tpu_name`, `--master` (a grpc:// address) names
    the TPU; with neither, the resolver looks for a TPU itself (a TPU VM's
    local TPU, or `$TPU_NAME`).

    Returns:
      (kwargs, flag): kwargs for `TPUClusterResolver` ({"tpu", "zone",
      "project"}); flag is the flag that named the TPU ("tpu_name", "master")
      or None, for error messages.
    """
    if tpu_name:
        if master:
            logging.warning("--master=%s is ignored: --tpu_name=%s names the TPU", master,
                            tpu_name)
        tpu, flag = tpu_name, "tpu_name"
    elif master:
        tpu, flag = master, "master"
    else:
        tpu, flag = "", None
    return {"tpu": tpu, "zone": tpu_zone or None, "project": gcp_project or None}, flag


def _check_reachable(address, timeout=TPU_CONNECT_TIMEOUT):
    """Raises OSError if nothing accepts a TCP connection at a grpc://host:port address."""
    if not address or not address.startswith("grpc://"):
        return
    host, _, port = address[len("grpc://"):].rpartition(":")
    try:
        port = int(port)
    except ValueError:
        raise ValueError("%r is not a grpc://host:port address" % address) from None
    socket.create_connection((host.strip("[]"), port), timeout=timeout).close()


def connect_tpu(tpu_name=None, tpu_zone=None, gcp_project=None, master=None,
                timeout=TPU_CONNECT_TIMEOUT):
    """Finds, connects to and initializes the TPU; returns its `TPUClusterResolver`.

    Raises:
      UserError: the TPU cannot be reached, naming the flag that named it
        (`--tpu_name` or `--master`) and the cause. A grpc:// address is tried
        with a plain TCP connection first (at most `timeout` seconds), since
        TensorFlow would wait for an unreachable TPU without end.
    """
    kwargs, flag = tpu_resolver_kwargs(tpu_name, tpu_zone, gcp_project, master)
    tpu = kwargs["tpu"]
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(**kwargs)
        if tpu not in ("", "local"):
            _check_reachable(resolver.master(), timeout)
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, OSError, tf.errors.OpError) as e:
        # OSError includes urllib's URLError (the GCE API lookup of a TPU name)
        # and a refused or timed-out connection.
        cause = str(e).splitlines()[0] if str(e) else type(e).__name__
        if flag is None:
            raise UserError("--tpu_name: none given and no TPU found on this machine (%s)"
                            % cause) from None
        raise UserError("--%s=%s: cannot reach the TPU (%s)" % (flag, tpu, cause)) from None
    return resolver


def get_strategy(distribution_strategy="off", num_gpus=None, tpu=None, tpu_zone=None,
                 gcp_project=None, all_reduce_alg="auto", master=None,
                 heartbeat_timeout=lost_worker.HEARTBEAT_TIMEOUT):
    """Returns the `tf.distribute.Strategy` named by `distribution_strategy`.

    Args:
      distribution_strategy: one of
        "off": the default strategy (no distribution, the current device);
        "one_device": `OneDeviceStrategy` on `/gpu:0` if there is a GPU (and
          num_gpus is not 0), else `/cpu:0`;
        "mirrored": `MirroredStrategy` over every visible GPU (or `num_gpus`
          of them); without GPUs (or with num_gpus == 0), over every logical
          CPU device (one, unless `set_logical_cpu_devices`);
        "multi_worker_mirrored": `MultiWorkerMirroredStrategy`; the cluster
          comes from the `TF_CONFIG` environment variable;
        "tpu": `TPUStrategy` on the TPU named by `tpu` (or `master`).
      num_gpus: GPUs per worker: None or -1, every visible GPU; 0, none.
      tpu: TPU name or `grpc://ip:8470` address (`--tpu_name`); "" or None with
        "tpu" means a TPU VM's local TPU (or `$TPU_NAME`).
      tpu_zone, gcp_project: passed to `TPUClusterResolver` (`--tpu_zone`, `--gcp_project`).
      all_reduce_alg: "auto" | "ring" | "nccl", the collective implementation
        of multi_worker_mirrored; "nccl" also picks `NcclAllReduce` for mirrored.
      master: the original's `--master`: the TPU's grpc:// address when `tpu`
        is not given.
      heartbeat_timeout: multi_worker_mirrored: seconds without a heartbeat
        after which a worker counts as lost; the others then stop with
        `bert_tf.training.lost_worker.LostWorker` instead of waiting for it
        (a worker that dies outright is noticed at once).

    Returns:
      A `tf.distribute.Strategy`; never None. The devices it uses are logged.

    Raises:
      UserError: an unknown name, flags that contradict each other, or a TPU
        that cannot be reached.
    """
    name = (distribution_strategy or "off").lower()
    if name not in STRATEGIES:
        raise UserError("--distribution_strategy must be one of %s, got %r"
                        % ("|".join(STRATEGIES), distribution_strategy))
    all_reduce_alg = (all_reduce_alg or "auto").lower()
    if all_reduce_alg not in ALL_REDUCE_ALGORITHMS:
        raise UserError("--all_reduce_alg must be one of %s, got %r"
                        % ("|".join(ALL_REDUCE_ALGORITHMS), all_reduce_alg))
    num_visible_gpus = 0 if name == "tpu" else len(tf.config.list_physical_devices("GPU"))
    cpu_devices = ([d.name for d in tf.config.list_logical_devices("CPU")]
                   if name == "mirrored" else ())
    devices, note = strategy_devices(name, num_gpus, num_visible_gpus, cpu_devices)

    if name == "off":
        strategy = tf.distribute.get_strategy()
    elif name == "one_device":
        strategy = tf.distribute.OneDeviceStrategy(devices[0])
    elif name == "mirrored":
        on_gpus = devices[0].lower().startswith("/gpu")
        cross_device_ops = None
        if all_reduce_alg == "nccl" and on_gpus:
            cross_device_ops = tf.distribute.NcclAllReduce()
        elif not on_gpus:
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
        _configure_coordination_service(heartbeat_timeout)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=implementation))
    else:  # tpu
        strategy = tf.distribute.TPUStrategy(connect_tpu(tpu, tpu_zone, gcp_project, master))
    if note and "no GPU is visible" in note:
        logging.warning("Devices: %s", note)
    elif note:
        logging.info("Devices: %s", note)
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


def _configure_coordination_service(heartbeat_timeout):
    """The coordination service `MultiWorkerMirroredStrategy` starts, with our heartbeat timeout.

    The same service the strategy configures itself (its leader, the chief and
    worker jobs), set up first so that its heartbeat timeout is ours.
    """
    if heartbeat_timeout is None:
        return
    if not heartbeat_timeout > 0:
        raise UserError("the heartbeat timeout must be positive, got %r" % (heartbeat_timeout,))
    from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2
    from tensorflow.python.eager import context

    cluster, task = lost_worker.cluster_of(tf_config=os.environ.get("TF_CONFIG"))
    if (cluster is None or task[0] not in lost_worker.COORDINATED_JOBS
            or context.context().coordination_service is not None):
        return
    jobs = [coordination_config_pb2.CoordinatedJob(name=job, num_tasks=len(cluster[job]))
            for job in lost_worker.COORDINATED_JOBS if cluster.get(job)]
    leader = "/job:%s/replica:0/task:%d" % lost_worker.coordination_leader(cluster)
    context.context().configure_coordination_service(
        service_type="standalone", service_leader=leader, coordinated_jobs=jobs,
        heartbeat_timeout_in_ms=int(heartbeat_timeout * 1000))


def task_info(strategy):
    """(task_type, task_id) of this process, or (None, 0) outside a multi-worker cluster."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None:
        return None, 0
    task_type = getattr(resolver, "task_type", None)
    task_id = getattr(resolver, "task_id", None) or 0
    return task_type, task_id


def is_chief_task(task_type, task_id, jobs=(), tpu=False):
    """The chief decision, pure: whether the task (task_type, task_id) writes.

    Args:
      task_type: "chief" | "worker" | "evaluator" | ..., or None outside a cluster.
      task_id: int, the task's index in its job.
      jobs: the cluster's job names (a "chief" job makes worker 0 a plain worker).
      tpu: whether the strategy is a `TPUStrategy`: on a multi-host TPU only
        the host with task id 0 writes, whatever the job is called.
    """
    if tpu:
        return (task_id or 0) == 0
    if task_type in (None, "chief"):
        return True
    if task_type == "worker":
        return "chief" not in jobs and (task_id or 0) == 0
    return False


def will_be_chief(distribution_strategy, tf_config=None):
    """Whether this process will be the chief, known before its strategy exists.

    The runs lock their output_dir (`bert_tf.locks`) before they make the
    strategy; only the chief takes the lock. Under `multi_worker_mirrored`
    that is TF_CONFIG's task by `is_chief_task`'s rule (True without
    TF_CONFIG, or with one the strategy will refuse); every other strategy
    runs one process per output_dir (a multi-host TPU writes to gs://, which
    is not locked).

    Args:
      distribution_strategy: the strategy's name (`ScaleOut.strategy_name()`).
      tf_config: TF_CONFIG's JSON text; default: the environment's.
    """
    if distribution_strategy != "multi_worker_mirrored":
        return True
    raw = os.environ.get("TF_CONFIG") if tf_config is None else tf_config
    try:
        config = json.loads(raw) if raw else {}
        task = config.get("task") or {}
        jobs = tuple(config.get("cluster") or ())
        return is_chief_task(task.get("type"), task.get("index") or 0, jobs)
    except (ValueError, AttributeError, TypeError):
        return True


def is_chief(strategy):
    """Whether this process writes checkpoints, summaries and results.

    True without a cluster, for the `chief` task, and for `worker` 0 when the
    cluster has no `chief` (TF's own convention); under `TPUStrategy`, for the
    host whose resolver has task id 0 (one host of a multi-host TPU).
    """
    if isinstance(strategy, tf.distribute.TPUStrategy):
        _, task_id = task_info(strategy)
        return is_chief_task(None, task_id, tpu=True)
    task_type, task_id = task_info(strategy)
    jobs = ()
    if task_type == "worker":
        resolver = strategy.cluster_resolver
        jobs = tuple(resolver.cluster_spec().as_dict()) if resolver is not None else ()
    return is_chief_task(task_type, task_id, jobs)
