"""The training and evaluation loop shared by the tools (original: TPUEstimator in `run_*.py`).

The original trained with `TPUEstimator` (which is gone from TensorFlow 2).
`Trainer` does what it did for `run_pretraining.py`, under any
`tf.distribute.Strategy` (see `bert_tf.distribute`):

  * `output_dir/model.ckpt-<global_step>` every `save_checkpoints_steps` and
    at the end, in Google's format with `adam_m`/`adam_v` and `global_step`,
    keeping the last `keep_checkpoint_max` (5, the Estimator's default);
  * a run resumes from the latest checkpoint in `output_dir` (optimizer state
    and global_step included; `init_checkpoint` is then ignored), otherwise it
    starts from `init_checkpoint` (every variable the checkpoint shares with
    the model, logged as the original's "*INIT_FROM_CKPT*" list);
  * `iterations_per_loop` steps run inside one `tf.function` (a host loop);
  * eval runs `max_eval_steps` batches and returns the task's metrics plus
    `loss` and `global_step`; `write_eval_results` writes `eval_results.txt`.

New: mixed precision (`bf16` / `fp16` with dynamic loss scaling), XLA,
exact gradient accumulation, a NaN/Inf stop, progress logs (steps/s,
examples/s, ETA) and TensorBoard summaries in `output_dir` (train) and
`output_dir/eval`.

How the loss is split: a task (e.g. `bert_tf.pretraining.PretrainingTask`)
gives per-replica sums (`loss_normalizers`, e.g. the masked-LM weight and the
number of examples); the step all-reduces them, so every replica and every
accumulation micro-batch divides its partial loss by the normalizers of the
whole global batch. Summed over replicas (Keras all-reduces the gradients with
SUM) and micro-batches, the gradient is exactly that of the original's loss on
the global batch; the optimizer then clips it by global norm 1.0 and updates.

Example:
  strategy = bert_tf.distribute.get_strategy("mirrored", num_gpus=8)
  trainer = Trainer(strategy, PretrainingTask(config, 128, 20), "/tmp/out")
  trainer.train(dataset_fn, train_batch_size=256, num_train_steps=100000,
                learning_rate=1e-4, num_warmup_steps=10000)
  results = trainer.evaluate(eval_dataset_fn, eval_batch_size=64, max_eval_steps=100)
  write_eval_results(results, "/tmp/out/eval_results.txt")
"""

import contextlib
import math
import os
import re
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging
from tensorflow.core.framework import summary_pb2

from bert_tf import checkpoint as checkpoint_lib
from bert_tf import distribute
from bert_tf import optimization
from bert_tf.errors import UserError

MIXED_PRECISION = {None: None, "": None, "off": None, "fp32": None, "float32": None,
                   "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
CHECKPOINT_BASENAME = "model.ckpt"
# The Estimator's RunConfig default.
KEEP_CHECKPOINT_MAX = 5
# fp16 dynamic loss scaling (Keras's LossScaleOptimizer defaults).
INITIAL_LOSS_SCALE = 2.0 ** 15
LOSS_SCALE_GROWTH_STEPS = 2000


class NonFiniteLossError(UserError):
    """The loss became NaN or infinite; training stopped without saving."""


@contextlib.contextmanager
def dtype_policy(mixed_precision):
    """Sets Keras's global dtype policy for the models built inside the block.

    Args:
      mixed_precision: None / "fp32" (float32), "bf16" (mixed_bfloat16) or
        "fp16" (mixed_float16). Variables stay float32; LayerNorm, the
        attention softmax and the heads' logits compute in float32.
    """
    if mixed_precision not in MIXED_PRECISION:
        raise UserError("--mixed_precision must be one of bf16|fp16 (or empty), got %r"
                        % (mixed_precision,))
    policy = MIXED_PRECISION[mixed_precision]
    previous = keras.config.dtype_policy()
    if policy:
        keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def checkpoint_prefix(output_dir, step):
    """`output_dir/model.ckpt-<step>`, the Estimator's checkpoint name."""
    return os.path.join(output_dir, "%s-%d" % (CHECKPOINT_BASENAME, step))


def latest_checkpoint(output_dir):
    """The newest `model.ckpt-N` listed in `output_dir/checkpoint`, or None."""
    if not output_dir or not tf.io.gfile.isdir(output_dir):
        return None
    return tf.train.latest_checkpoint(output_dir)


def prune_checkpoints(output_dir, keep_checkpoint_max=KEEP_CHECKPOINT_MAX):
    """Deletes all but the newest `keep_checkpoint_max` checkpoints listed in `output_dir`.

    The `checkpoint` state file is rewritten first (atomically), so a crash at
    any point leaves a state that lists only complete checkpoints.
    """
    if not keep_checkpoint_max:
        return
    state = tf.train.get_checkpoint_state(output_dir)
    if state is None:
        return
    paths = list(state.all_model_checkpoint_paths)
    if len(paths) <= keep_checkpoint_max:
        return
    stale, keep = paths[:-keep_checkpoint_max], paths[-keep_checkpoint_max:]
    checkpoint_lib.write_checkpoint_state(output_dir, [os.path.basename(p) for p in keep])
    for path in stale:
        full = path if os.path.isabs(path) else os.path.join(output_dir, path)
        for filename in tf.io.gfile.glob(full + ".*"):
            tf.io.gfile.remove(filename)


def _remove_stale_temporary_files(output_dir):
    """Removes `<prefix>.tmp-<pid>*` left by a killed writer (see checkpoint.write_checkpoint)."""
    for path in tf.io.gfile.glob(os.path.join(output_dir, "*.tmp-*")):
        match = re.search(r"\.tmp-(\d+)", path)
        if match and int(match.group(1)) != os.getpid():
            try:
                tf.io.gfile.remove(path)
            except tf.errors.OpError:
                pass


def write_eval_results(results, path):
    """Writes `eval_results.txt` as the original: sorted `key = value` lines, atomically.

    The original's values are the Estimator's numpy scalars printed with
    `str()`: float32 metrics, int64 `global_step`. Also logs them under
    "***** Eval results *****" as the original.
    """
    logging.info("***** Eval results *****")
    lines = []
    for key in sorted(results):
        value = results[key]
        value = np.int64(value) if key == "global_step" else np.float32(value)
        logging.info("  %s = %s", key, str(value))
        lines.append("%s = %s\n" % (key, str(value)))
    directory = os.path.dirname(path)
    if directory:
        tf.io.gfile.makedirs(directory)
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write("".join(lines))
    tf.io.gfile.rename(tmp, path, overwrite=True)
    return path


# TensorBoard's scalar-plugin metadata, so `tf.summary.write` makes scalar
# summaries without importing `tensorboard` (not a dependency of this project).
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars", content=b""),
    data_class=summary_pb2.DATA_CLASS_SCALAR)


def scalar_summary(name, value, step=None):
    """`tf.summary.scalar` without the `tensorboard` package: a float32 scalar event."""
    return tf.summary.write(name, tf.constant(float(value), tf.float32), step=step,
                            metadata=_SCALAR_METADATA)


def _format_duration(seconds):
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return "%dh%02dm%02ds" % (hours, minutes, seconds)
    if minutes:
        return "%dm%02ds" % (minutes, seconds)
    return "%ds" % seconds


def _split_micro_batches(features, num_micro_batches):
    """[B, ...] -> [num_micro_batches, B / num_micro_batches, ...] for every feature."""
    def split(x):
        shape = tf.shape(x)
        new_shape = tf.concat([[num_micro_batches, -1], shape[1:]], axis=0)
        return tf.reshape(x, new_shape)
    return tf.nest.map_structure(split, features)


def _to_dense(gradient):
    if gradient is None:
        return None
    return tf.convert_to_tensor(gradient)


class Trainer(object):
    """Trains and evaluates one task's model under a `tf.distribute.Strategy`.

    Args:
      strategy: a `tf.distribute.Strategy` (`bert_tf.distribute.get_strategy`).
      task: an object with `build_model()`, `loss_normalizers(features)`,
        `compute_loss(model, features, normalizers, training)` (returning the
        loss and a dict of sums with the keys `metric_sum_keys`),
        `train_metrics(sums)`, `eval_step(model, features)` (a dict of sums
        with the keys `eval_sum_keys`), `eval_batch_loss(batch_sums)` and
        `eval_results(sums, num_batches)` (see
        `bert_tf.pretraining.PretrainingTask`).
      output_dir: where checkpoints, summaries and results go.
      mixed_precision: None | "bf16" | "fp16".
      use_xla: bool; compiles each replica's forward and backward pass with XLA.
      keep_checkpoint_max: how many `model.ckpt-N` to keep (the Estimator's 5).

    The model is built in the constructor (`self.model`).
    """

    def __init__(self, strategy, task, output_dir, mixed_precision=None, use_xla=False,
                 keep_checkpoint_max=KEEP_CHECKPOINT_MAX):
        self.strategy = strategy
        self.task = task
        self.output_dir = output_dir
        self.mixed_precision = mixed_precision or None
        self.use_xla = bool(use_xla)
        self.keep_checkpoint_max = keep_checkpoint_max
        self.is_chief = distribute.is_chief(strategy)
        with dtype_policy(mixed_precision), strategy.scope():
            self.model = task.build_model()
        self.optimizer = None
        self.global_step = 0
        self._restored_from = None
        self._train_loop_fns = {}
        self._eval_loop_fn = None

    # ------------------------------------------------------------- set-up

    @property
    def base_optimizer(self):
        """The optimizer with the `adam_m`/`adam_v` slots (inside any loss-scale wrapper)."""
        optimizer = self.optimizer
        return getattr(optimizer, "inner_optimizer", optimizer)

    def _create_optimizer(self, learning_rate, num_train_steps, num_warmup_steps,
                          optimizer_type):
        with self.strategy.scope():
            optimizer = optimization.create_optimizer(
                learning_rate, num_train_steps, num_warmup_steps, optimizer_type=optimizer_type)
            if self.mixed_precision == "fp16":
                # Port note: new; float16 needs dynamic loss scaling (bf16 does not).
                # A step whose gradients overflow is skipped (global_step does not
                # advance) and the scale halves; the scale is not checkpointed.
                optimizer = keras.optimizers.LossScaleOptimizer(
                    optimizer, initial_scale=INITIAL_LOSS_SCALE,
                    dynamic_growth_steps=LOSS_SCALE_GROWTH_STEPS)
            optimizer.build(self.model.trainable_variables)
        self.optimizer = optimizer

    def restore(self, init_checkpoint=None, with_optimizer=True):
        """Resumes from `output_dir`'s latest checkpoint, else loads `init_checkpoint`.

        Returns:
          The global step the model is at.
        """
        latest = latest_checkpoint(self.output_dir)
        if latest:
            report = checkpoint_lib.load_checkpoint(
                self.model, latest, strict=True,
                optimizer=self.base_optimizer if (with_optimizer and self.optimizer) else None,
                flag="output_dir")
            step = report.global_step or 0
            if self.optimizer is not None and with_optimizer:
                self.base_optimizer.iterations.assign(step)
            if init_checkpoint:
                logging.info("Resuming from %s (global_step %d); --init_checkpoint is ignored, "
                             "as the original's Estimator did", latest, step)
            else:
                logging.info("Resuming from %s (global_step %d)", latest, step)
            self.global_step = step
            self._restored_from = latest
            return step
        if init_checkpoint:
            self._init_from_checkpoint(init_checkpoint)
            self._restored_from = init_checkpoint
        self.global_step = 0
        return 0

    def _init_from_checkpoint(self, init_checkpoint):
        """The original's `init_from_checkpoint`: every variable the checkpoint shares."""
        report = checkpoint_lib.load_checkpoint(self.model, init_checkpoint, strict=False)
        # Port note: the original silently trained from scratch when the
        # checkpoint shared no variable with the model; that is an error here
        # (a shape mismatch already is one, in load_checkpoint).
        if not report.loaded:
            raise UserError("--init_checkpoint=%s shares no variable with the model "
                            "(another architecture, or not a BERT checkpoint?)" % init_checkpoint)
        loaded = set(report.loaded)
        logging.info("**** Trainable Variables ****")
        for variable in self.model.trainable_variables:
            name = checkpoint_lib.tf1_name(variable)
            logging.info("  name = %s, shape = %s%s", name, tuple(variable.shape),
                         ", *INIT_FROM_CKPT*" if name in loaded else "")

    def save(self, step=None):
        """Writes `output_dir/model.ckpt-<step>` (chief only) and prunes old ones.

        Returns:
          The checkpoint prefix, or None on a non-chief worker.
        """
        step = self.global_step if step is None else step
        if not self.is_chief:
            return None
        prefix = checkpoint_prefix(self.output_dir, step)
        checkpoint_lib.save_checkpoint(self.model, prefix, optimizer=self.base_optimizer,
                                       global_step=step)
        prune_checkpoints(self.output_dir, self.keep_checkpoint_max)
        logging.info("Saved checkpoint for step %d: %s", step, prefix)
        return prefix

    # ------------------------------------------------------------- training

    def _replica_step_fn(self, num_accumulation_steps):
        model = self.model
        task = self.task
        optimizer = self.optimizer
        fp16 = self.mixed_precision == "fp16"

        def compute_gradients(features, normalizers):
            variables = model.trainable_variables
            with tf.GradientTape() as tape:
                loss, metrics = task.compute_loss(model, features, normalizers, training=True)
                scaled_loss = optimizer.scale_loss(loss) if fp16 else loss
            grads = tape.gradient(scaled_loss, variables)
            return loss, metrics, grads

        if self.use_xla:
            compute_gradients = tf.function(compute_gradients, jit_compile=True)

        def replica_step(features):
            replica_context = tf.distribute.get_replica_context()
            normalizers = replica_context.all_reduce(
                tf.distribute.ReduceOp.SUM, task.loss_normalizers(features))
            if num_accumulation_steps == 1:
                loss, metrics, grads = compute_gradients(features, normalizers)
            else:
                micro_batches = _split_micro_batches(features, num_accumulation_steps)
                variables = model.trainable_variables
                metric_keys = tuple(task.metric_sum_keys)
                # Which variables get a gradient (the others are skipped by the
                # update, as the original skips None gradients); recorded while
                # the loop body is traced, which happens once.
                has_gradient = []

                def body(i, loss_sum, metric_values, accumulated):
                    micro = tf.nest.map_structure(lambda x: tf.gather(x, i), micro_batches)
                    l, m, g = compute_gradients(micro, normalizers)
                    if not has_gradient:
                        has_gradient.extend(gi is not None for gi in g)
                    accumulated = [a if gi is None else a + tf.cast(_to_dense(gi), a.dtype)
                                   for a, gi in zip(accumulated, g)]
                    metric_values = [v + m[k] for v, k in zip(metric_values, metric_keys)]
                    return i + 1, loss_sum + l, metric_values, accumulated

                _, loss, metric_values, accumulated = tf.while_loop(
                    lambda i, *unused: i < num_accumulation_steps, body,
                    (tf.constant(0), tf.constant(0.0), [tf.constant(0.0) for _ in metric_keys],
                     [tf.zeros(v.shape, v.dtype) for v in variables]))
                metrics = dict(zip(metric_keys, metric_values))
                grads = [a if present else None for a, present in zip(accumulated, has_gradient)]
            if fp16:
                # Keras's LossScaleOptimizer decides to skip a step from each
                # worker's own gradients; a worker whose gradients overflowed
                # alone would skip the all-reduce the others wait in. Agree
                # first: any overflow anywhere makes every replica's gradients NaN.
                grads = [_to_dense(g) for g in grads]
                bad = tf.add_n([tf.reduce_sum(tf.cast(~tf.math.is_finite(g), tf.float32))
                                for g in grads if g is not None])
                bad = replica_context.all_reduce(tf.distribute.ReduceOp.SUM, bad)
                poison = tf.where(bad > 0.0, float("nan"), 1.0)
                grads = [None if g is None else g * tf.cast(poison, g.dtype) for g in grads]
            # The optimizer sums the gradients over replicas, clips them by
            # global norm and updates (global_step += 1).
            optimizer.apply(grads, model.trainable_variables)
            # One vector, so the cross-replica reduction is one collective.
            return tf.stack([loss] + [metrics[k] for k in task.metric_sum_keys])

        return replica_step

    def _build_train_loop(self, num_accumulation_steps):
        strategy = self.strategy
        replica_step = self._replica_step_fn(num_accumulation_steps)

        @tf.function
        def train_loop(iterator, num_steps):
            losses = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
            # Defined before the loop, so autograph traces the step only once.
            metric_sums = {k: tf.constant(0.0) for k in self.task.metric_sum_keys}
            keys = tuple(self.task.metric_sum_keys)
            for i in tf.range(num_steps):
                per_replica = strategy.run(replica_step, args=(next(iterator),))
                values = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                loss = values[0]
                losses = losses.write(i, loss)
                metric_sums = {k: metric_sums[k] + values[j + 1] for j, k in enumerate(keys)}
                if not tf.math.is_finite(loss):
                    break
            return losses.stack(), metric_sums

        return train_loop

    def train(self, dataset_fn, train_batch_size, num_train_steps, learning_rate,
              num_warmup_steps, init_checkpoint=None, save_checkpoints_steps=1000,
              iterations_per_loop=1000, num_accumulation_steps=1, optimizer_type="adamw"):
        """Trains until `global_step == num_train_steps`, resuming if it can.

        Args:
          dataset_fn: `fn(input_context) -> tf.data.Dataset` of per-replica
            batches (`input_context.get_per_replica_batch_size(train_batch_size)`
            examples, sharded by `input_context.input_pipeline_id`), repeated.
          train_batch_size: int, the global batch of one update (the
            original's "Total batch size for training").
          num_train_steps: int, the final global_step.
          learning_rate, num_warmup_steps, optimizer_type: see
            `bert_tf.optimization.create_optimizer`.
          init_checkpoint: checkpoint to start from when `output_dir` has none.
          save_checkpoints_steps: checkpoint every this many steps (and at the end).
          iterations_per_loop: steps per `tf.function` call (a loop also ends
            at each checkpoint).
          num_accumulation_steps: split each replica's batch into this many
            micro-batches and sum their gradients before one update (the same
            update as the whole batch, with a fraction of the activation memory).

        Returns:
          A list of dicts, one per loop: `step` (global_step after it),
          `losses` (numpy [steps]), `learning_rate`, `steps_per_sec`, and the
          task's training metrics.

        Raises:
          UserError: bad arguments; `NonFiniteLossError` on a NaN/Inf loss
          (nothing is saved; the last checkpoint stays the last good one).
        """
        strategy = self.strategy
        num_replicas = strategy.num_replicas_in_sync
        for flag, value in (("num_train_steps", num_train_steps),
                            ("train_batch_size", train_batch_size),
                            ("save_checkpoints_steps", save_checkpoints_steps),
                            ("iterations_per_loop", iterations_per_loop),
                            ("num_accumulation_steps", num_accumulation_steps)):
            if value is None or int(value) <= 0:
                raise UserError("--%s must be a positive integer, got %r" % (flag, value))
        if train_batch_size % (num_replicas * num_accumulation_steps):
            raise UserError(
                "--train_batch_size=%d must be divisible by the number of replicas (%d) times "
                "--num_accumulation_steps (%d)"
                % (train_batch_size, num_replicas, num_accumulation_steps))
        if self.optimizer is None:
            self._create_optimizer(learning_rate, num_train_steps, num_warmup_steps,
                                   optimizer_type)
        if self.is_chief:
            tf.io.gfile.makedirs(self.output_dir)
            _remove_stale_temporary_files(self.output_dir)
        step = self.restore(init_checkpoint, with_optimizer=True)
        if step >= num_train_steps:
            logging.info("Skipping training since max_steps has already saved (global_step "
                         "%d >= num_train_steps %d)", step, num_train_steps)
            return []

        logging.info("***** Running training *****")
        logging.info("  Batch size = %d (%d replica(s) x %d micro-batch(es) of %d)",
                     train_batch_size, num_replicas, num_accumulation_steps,
                     train_batch_size // (num_replicas * num_accumulation_steps))
        logging.info("  Num steps = %d (starting at global_step %d)", num_train_steps, step)
        dataset = strategy.distribute_datasets_from_function(dataset_fn)
        iterator = iter(dataset)
        if num_accumulation_steps not in self._train_loop_fns:
            self._train_loop_fns[num_accumulation_steps] = self._build_train_loop(
                num_accumulation_steps)
        train_loop = self._train_loop_fns[num_accumulation_steps]
        writer = (tf.summary.create_file_writer(self.output_dir) if self.is_chief
                  else tf.summary.create_noop_writer())
        # The optimizer's schedule, to log the learning rate of each loop's last update.
        schedule = optimization.WarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps)

        history = []
        first_step = step
        start_time = time.time()
        saved_step = None
        # Port note: TPUEstimator ran `iterations_per_loop` steps per host call on
        # TPU only (on CPU/GPU it ignored the flag and logged every 100 steps);
        # here every device runs the steps inside one tf.function, and a loop
        # also ends at each multiple of save_checkpoints_steps, so checkpoints
        # land exactly on those steps. Progress is logged once per loop.
        while step < num_train_steps:
            next_save = (step // save_checkpoints_steps + 1) * save_checkpoints_steps
            chunk = min(iterations_per_loop, next_save - step, num_train_steps - step)
            loop_start = time.time()
            losses, metric_sums = train_loop(iterator, tf.constant(chunk, tf.int32))
            losses = losses.numpy()
            new_step = int(self.base_optimizer.iterations.numpy())
            elapsed = max(time.time() - loop_start, 1e-9)
            bad = np.flatnonzero(~np.isfinite(losses))
            if bad.size:
                # Port note: new. The original kept training on a NaN loss; we
                # stop at once and save nothing, so the newest checkpoint is the
                # last good one (the loop breaks at the bad step).
                bad_step = step + int(bad[0]) + 1
                latest = latest_checkpoint(self.output_dir)
                raise NonFiniteLossError(
                    "the loss is %s at global_step %d; training stopped without saving; the "
                    "last good checkpoint is %s" % (losses[bad[0]], bad_step,
                                                    latest or "none (no checkpoint was written)"))
            steps_done = max(new_step - step, 0)
            step = new_step
            self.global_step = step
            metric_sums = {k: float(v) for k, v in metric_sums.items()}
            train_metrics = self.task.train_metrics(metric_sums)
            lr = float(schedule(max(step - 1, 0)))
            steps_per_sec = len(losses) / elapsed
            examples_per_sec = steps_per_sec * train_batch_size
            remaining = (num_train_steps - step) / steps_per_sec if steps_per_sec else None
            record = {"step": step, "losses": losses, "loss": float(np.mean(losses)),
                      "learning_rate": lr, "steps_per_sec": steps_per_sec,
                      "examples_per_sec": examples_per_sec}
            record.update(train_metrics)
            history.append(record)
            logging.info(
                "step %d/%d: loss = %.6g, %s, lr = %.3g, %.3g steps/s, %.1f examples/s, "
                "elapsed %s, ETA %s", step, num_train_steps, record["loss"],
                ", ".join("%s = %.4g" % (k, v) for k, v in sorted(train_metrics.items())),
                lr, steps_per_sec, examples_per_sec, _format_duration(time.time() - start_time),
                _format_duration(remaining))
            with writer.as_default(step=step):
                scalar_summary("loss", record["loss"])
                scalar_summary("learning_rate", lr)
                for key, value in train_metrics.items():
                    scalar_summary(key, value)
                scalar_summary("global_step/sec", steps_per_sec)
                scalar_summary("examples/sec", examples_per_sec)
            writer.flush()
            if steps_done and (step % save_checkpoints_steps == 0 or step >= num_train_steps):
                self.save(step)
                saved_step = step
        if saved_step != step:
            self.save(step)
        writer.close()
        logging.info("Training done: global_step %d, %d steps in %s", step, step - first_step,
                     _format_duration(time.time() - start_time))
        return history

    # ------------------------------------------------------------- evaluation

    def _build_eval_loop(self):
        strategy = self.strategy
        task = self.task
        model = self.model

        keys = tuple(task.eval_sum_keys)

        def replica_eval_step(features):
            sums = task.eval_step(model, features)
            return tf.stack([sums[k] for k in keys])  # one collective per batch

        @tf.function
        def eval_loop(iterator, num_steps):
            sums = {k: tf.constant(0.0) for k in keys + ("batch_loss_sum",)}
            for _ in tf.range(num_steps):
                per_replica = strategy.run(replica_eval_step, args=(next(iterator),))
                values = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                batch = {k: values[j] for j, k in enumerate(keys)}
                batch["batch_loss_sum"] = task.eval_batch_loss(batch)
                sums = {k: sums[k] + batch[k] for k in sums}
            return sums

        return eval_loop

    def evaluate(self, dataset_fn, eval_batch_size, max_eval_steps, init_checkpoint=None):
        """Evaluates the model on `max_eval_steps` batches (the original's `estimator.evaluate`).

        If the model has not been trained or restored in this process, the
        latest checkpoint in `output_dir` is restored (else `init_checkpoint`,
        else the initial weights, at global_step 0), as the Estimator did.

        Args:
          dataset_fn: `fn(input_context)` -> per-replica eval batches, repeated.
          eval_batch_size: int, global eval batch.
          max_eval_steps: int, number of batches.
          init_checkpoint: used only when `output_dir` holds no checkpoint.

        Returns:
          dict: the task's metrics, `loss` (mean total loss per batch) and
          `global_step`. Also written as TensorBoard summaries to
          `output_dir/eval` (chief only).
        """
        if max_eval_steps is None or max_eval_steps <= 0:
            raise UserError("--max_eval_steps must be a positive integer, got %r"
                            % (max_eval_steps,))
        if eval_batch_size % self.strategy.num_replicas_in_sync:
            raise UserError("--eval_batch_size=%d must be divisible by the number of replicas "
                            "(%d)" % (eval_batch_size, self.strategy.num_replicas_in_sync))
        if self._restored_from is None and self.optimizer is None:
            self.restore(init_checkpoint, with_optimizer=False)
            if self._restored_from is None:
                logging.warning("Could not find trained model in output_dir %s, running "
                                "initialization to evaluate.", self.output_dir)
        logging.info("***** Running evaluation *****")
        logging.info("  Batch size = %d, steps = %d", eval_batch_size, max_eval_steps)
        dataset = self.strategy.distribute_datasets_from_function(dataset_fn)
        if self._eval_loop_fn is None:
            self._eval_loop_fn = self._build_eval_loop()
        start = time.time()
        sums = self._eval_loop_fn(iter(dataset), tf.constant(max_eval_steps, tf.int32))
        sums = {k: float(v) for k, v in sums.items()}
        results = self.task.eval_results(sums, max_eval_steps)
        results["global_step"] = int(self.global_step)
        elapsed = max(time.time() - start, 1e-9)
        logging.info("Evaluation done: %d batches in %s (%.1f examples/s)", max_eval_steps,
                     _format_duration(elapsed), max_eval_steps * eval_batch_size / elapsed)
        if self.is_chief:
            writer = tf.summary.create_file_writer(os.path.join(self.output_dir, "eval"))
            with writer.as_default(step=results["global_step"]):
                for key, value in results.items():
                    if key != "global_step":
                        scalar_summary(key, value)
            writer.close()
        return results
