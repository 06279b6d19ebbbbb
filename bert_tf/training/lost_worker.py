"""A lost worker of a multi-worker job: one line and exit status 69 (new).

Under `MultiWorkerMirroredStrategy` every step's all-reduce needs every
worker. When one is lost (killed, its machine gone, or hung), TensorFlow's
coordination service notices it (a broken connection at once; a task that
sends no heartbeat for `heartbeat_timeout` seconds, `HEARTBEAT_TIMEOUT` by
default) and aborts the collectives of the others, which then raise
`UnavailableError` or `DeadlineExceededError` instead of waiting for ever.
`lost_workers_as_errors` turns that error into `LostWorker`, whose one line
names the lost task, the step and the checkpoint to resume from:

  lost worker 1 (10.0.0.2:2222) of the multi_worker_mirrored job at step 12:
  recvmsg:Connection reset by peer; rerun every worker to resume from
  gs://bucket/out/model.ckpt-10

The tools print it as `error: ...` and exit with `EXIT_STATUS` (69: the job's
scheduler can tell it from a bug, 1, a user's mistake, 2, and a preemption, 75).
A worker alone cannot go on: every worker must be started again, and they
resume together from the chief's last checkpoint.

Example:
  with lost_workers_as_errors(strategy, step, output_dir, latest_checkpoint):
      losses = train_loop(iterator, num_steps)
"""

import contextlib
import json
import re

import tensorflow as tf

# The exit status of a tool whose multi-worker job lost a worker (sysexits' EX_UNAVAILABLE).
EXIT_STATUS = 69
# Seconds without a heartbeat after which a worker counts as lost (TensorFlow's default).
HEARTBEAT_TIMEOUT = 10
# The errors a collective raises when it is aborted because a peer is lost.
PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
               tf.errors.AbortedError, tf.errors.CancelledError)
COORDINATED_JOBS = ("chief", "worker")

# What the message of a collective aborted by a lost peer mentions.
_PEER_SIGNS = ("Collective", "CoordinationService", "/job:", "heartbeat")
_TASK = re.compile(r"/job:(\w+)(?:/replica:\d+)?/task:(\d+)")
_ABORTED_BY = "Collective ops is aborted by: "
_NOISE = ("Graph execution error", "Detected at node", "The error could be from",
          "Additional GRPC error", ":UNKNOWN:", "  File ", "[[")


class LostWorker(Exception):
    """A worker of the job was lost; the run cannot go on (`str(e)` is one line).

    Attributes:
      task: (job, index) of the lost task, or None when the error does not tell.
      address: its host:port in the cluster spec, or None.
      step: the global_step training had reached, or None.
      checkpoint: the checkpoint prefix every worker resumes from, or None.
    """

    def __init__(self, message, task=None, address=None, step=None, checkpoint=None):
        super().__init__(message)
        self.task = task
        self.address = address
        self.step = step
        self.checkpoint = checkpoint


def coordination_leader(cluster):
    """The task that runs the coordination service (TensorFlow's rule): chief 0, else worker 0."""
    return ("chief", 0) if cluster.get("chief") else ("worker", 0)


def lost_task(message, cluster, this_task):
    """Which task a peer-loss error message is about, pure.

    Args:
      message: the TensorFlow error's message.
      cluster: {job: [address, ...]}, the cluster spec.
      this_task: (job, index) of this process.

    Returns:
      (job, index), or None if it cannot be told. A task named in the
      message other than this one; else the coordination leader when a call
      to the coordination service failed (its heartbeats go to the leader);
      else the one other task of a two-task cluster.
    """
    this_task = (this_task[0], int(this_task[1] or 0))
    for job, index in _TASK.findall(message or ""):
        task = (job, int(index))
        if task != this_task and task[1] < len(cluster.get(job) or ()):
            return task
    if "CoordinationService/" in (message or ""):
        leader = coordination_leader(cluster)
        if leader != this_task:
            return leader
    others = [(job, index) for job in COORDINATED_JOBS
              for index in range(len(cluster.get(job) or ())) if (job, index) != this_task]
    return others[0] if len(others) == 1 else None


def cause_of(message):
    """The short cause in a collective's abort message (its first telling line), pure."""
    message = message or ""
    if _ABORTED_BY in message:
        message = message.split(_ABORTED_BY, 1)[1]
    lines = [line.strip() for line in message.splitlines()]
    lines = [line for line in lines if line and not line.startswith(_NOISE)]
    if not lines:
        return "the connection to it failed"
    if "stopped sending heartbeats" in message:
        return "it stopped sending heartbeats"
    cause = re.sub(r"^Error reported from /job:\w+/task:\d+: ", "", lines[0])
    if cause.endswith(":") and len(lines) > 1:  # "... (stopped sending heartbeats):" + the task
        cause = cause[:-1]
    elif cause == "Deadline Exceeded" and len(lines) > 1:
        cause = "%s (%s)" % (cause, lines[1])
    return cause[:200]


def lost_worker_message(task, address, step, checkpoint, cause):
    """The one line of a `LostWorker`, pure."""
    if task is None:
        who = "lost a worker of the multi_worker_mirrored job"
    else:
        who = "lost %s %d%s of the multi_worker_mirrored job" % (
            task[0], task[1], " (%s)" % address if address else "")
    where = " at step %d" % step if step is not None else ""
    if checkpoint:
        then = "rerun every worker to resume from %s" % checkpoint
    elif checkpoint is None and step is None:
        then = "rerun every worker to resume from the last checkpoint in output_dir"
    else:
        then = "rerun every worker to start again (no checkpoint was written yet)"
    return "%s%s: %s; %s" % (who, where, cause, then)


def cluster_of(strategy=None, tf_config=None):
    """(cluster, this_task) of a multi-worker job, or (None, None) outside one.

    From the strategy's cluster resolver, else from TF_CONFIG's JSON text
    (`tf_config`); a cluster of one task is no multi-worker job.
    """
    cluster, task = None, None
    resolver = getattr(strategy, "cluster_resolver", None) if strategy is not None else None
    if resolver is not None and getattr(resolver, "task_type", None):
        cluster = resolver.cluster_spec().as_dict()
        task = (resolver.task_type, int(resolver.task_id or 0))
    elif tf_config:
        try:
            config = json.loads(tf_config)
            cluster = dict(config["cluster"])
            task = (config["task"]["type"], int(config["task"].get("index") or 0))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None, None
    if not cluster:
        return None, None
    cluster = {job: list(addresses.values()) if isinstance(addresses, dict) else list(addresses)
               for job, addresses in cluster.items()}
    if sum(len(cluster.get(job) or ()) for job in COORDINATED_JOBS) < 2:
        return None, None
    return cluster, task


def as_lost_worker(error, cluster, this_task, step=None, checkpoint=None):
    """`error` as a `LostWorker`, or None if it is no peer loss of a multi-worker job."""
    if isinstance(error, LostWorker):
        return error
    if cluster is None or not isinstance(error, PEER_ERRORS):
        return None
    message = getattr(error, "message", None) or str(error)
    if not any(sign in message for sign in _PEER_SIGNS):
        return None  # e.g. a file system's UnavailableError
    task = lost_task(message, cluster, this_task)
    address = None
    if task is not None:
        address = cluster[task[0]][task[1]]
    return LostWorker(lost_worker_message(task, address, step, checkpoint, cause_of(message)),
                      task=task, address=address, step=step, checkpoint=checkpoint)


@contextlib.contextmanager
def lost_workers_as_errors(strategy, step, output_dir,
                           latest_checkpoint=tf.train.latest_checkpoint):
    """Re-raises a collective aborted by a lost worker as `LostWorker`.

    Args:
      strategy: the run's strategy; outside a multi-worker job every error
        passes through unchanged.
      step: the global_step before the code within (for the message).
      output_dir: where the chief writes its checkpoints (the message names
        the newest one, which every worker resumes from).
      latest_checkpoint: `fn(output_dir)`, that checkpoint's prefix or None
        (`bert_tf.training.output_dir.latest_checkpoint` for the runs').
    """
    try:
        yield
    except PEER_ERRORS as e:
        cluster, this_task = cluster_of(strategy)
        if cluster is None:
            raise
        checkpoint = latest_checkpoint(output_dir) or ""
        raise as_lost_worker(e, cluster, this_task, step, checkpoint) from None
