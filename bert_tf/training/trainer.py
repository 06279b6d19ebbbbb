"""`Trainer`: train, evaluate and predict one task under a tf.distribute strategy.

The original trained with `TPUEstimator` (gone from TensorFlow 2). `Trainer`
does what it did for `run_pretraining.py`, `run_classifier.py` and
`run_squad.py`, under any `tf.distribute.Strategy` (`bert_tf.training.distribute`):

  * `output_dir/model.ckpt-<global_step>` every `save_checkpoints_steps` and
    at the end, in Google's format with `adam_m`/`adam_v` and `global_step`,
    keeping the last `keep_checkpoint_max` (5, the Estimator's default);
  * a run resumes from the latest checkpoint in `output_dir` (optimizer state
    and global_step included; `init_checkpoint` is then ignored), otherwise it
    starts from `init_checkpoint` (every variable the checkpoint shares with
    the model, logged as the original's "*INIT_FROM_CKPT*" list);
  * `iterations_per_loop` steps run inside one `tf.function` (a host loop);
  * `evaluate` runs `max_eval_steps` batches of a repeated dataset, or every
    example of a `FiniteInput` once, and returns the task's metrics plus
    `loss` and `global_step`; `predict` returns the task's per-example
    outputs in input order.

New: no work on padding (each batch cut after its longest row, see
`bert_tf.training.steps`), mixed precision (`bf16` / `fp16` with dynamic loss
scaling), XLA, exact gradient accumulation, a NaN/Inf stop, progress logs every `log_steps`
steps and at least every 10 s (steps/s, examples/s, ETA; a line before a
step's first call, which traces it) and TensorBoard summaries in `output_dir`
(train) and `output_dir/eval`. A bad input record (the pipeline checks every
record, see `bert_tf.data.input_pipeline`) stops training, evaluation or
prediction with a one-line `UserError` naming its file and number.

Example:
  strategy = bert_tf.training.distribute.get_strategy("mirrored", num_gpus=8)
  trainer = Trainer(strategy, lambda: BertPretrainer(config), "/tmp/out")
  trainer.train(dataset_fn, train_batch_size=256, num_train_steps=100000,
                learning_rate=1e-4, num_warmup_steps=10000)
  results = trainer.evaluate(eval_dataset_fn, eval_batch_size=64, max_eval_steps=100)
  write_eval_results(results, "/tmp/out/eval_results.txt")
"""

import contextlib
import functools
import os
import random
import time

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import item_progress
from bert_tf import logs
from bert_tf.data import input_pipeline
from bert_tf.data.finite_input import FiniteInput
from bert_tf.data.finite_input import in_input_order
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint as checkpoint_lib
from bert_tf.modeling.precision import dtype_policy
from bert_tf.training import distribute
from bert_tf.training import lost_worker
from bert_tf.training import optimization
from bert_tf.training import output_dir as output_dir_lib
from bert_tf.training import preemption
from bert_tf.training import steps as steps_lib
from bert_tf.training.progress import LOG_STEPS
from bert_tf.training.progress import TrainProgress
from bert_tf.training.progress import format_duration
from bert_tf.training.progress import scalar_summary

# fp16 dynamic loss scaling (Keras's LossScaleOptimizer defaults).
INITIAL_LOSS_SCALE = 2.0 ** 15
LOSS_SCALE_GROWTH_STEPS = 2000


class NonFiniteLossError(UserError):
    """The loss became NaN or infinite; training stopped without saving."""


@contextlib.contextmanager
def _seeded_python_random(seed):
    """Within (with a seed): Python's `random` seeded, its state restored after.

    Keras draws each unseeded initializer's seed (and each layer's seed
    generator's) from Python's `random` as the layer is built: seeded, the
    model's initial weights are a function of `seed`.
    """
    if seed is None:
        yield
        return
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


def _check_positive(**values):
    for flag, value in values.items():
        if value is None or int(value) <= 0:
            raise UserError("--%s must be a positive integer, got %r" % (flag, value))


def _resumed_input(dataset_fn, global_step):
    """`dataset_fn` from the batch after those the first `global_step` steps consumed.

    Each step takes one batch of each input pipeline per replica it feeds
    (accumulation splits that batch), so a deterministic dataset (a seeded
    shuffle, a deterministic interleave) continues exactly where an
    uninterrupted run would be: the skipped batches are read and dropped
    (the order is only known by reading it; no state beyond global_step is
    needed, so the checkpoint stays Google's).
    """
    def resumed(input_context):
        per_pipeline = max(1, input_context.num_replicas_in_sync
                           // max(1, input_context.num_input_pipelines))
        skip = global_step * per_pipeline
        logging.info("Input resumes after %d batch(es) of this input pipeline (global_step %d)",
                     skip, global_step)
        return dataset_fn(input_context).skip(skip)
    return resumed


def _stopping_at_preemption_notices(train):
    """`train` with SIGTERM / Ctrl-C handlers for its duration (the previous ones after)."""
    @functools.wraps(train)
    def wrapper(self, *args, **kwargs):
        self._stop_flag.assign(0.0)
        with preemption.StopRequests(
                on_request=lambda name: self._stop_flag.assign(1.0)) as requests:
            self._stop_requests = requests
            try:
                return train(self, *args, **kwargs)
            finally:
                self._stop_requests = None
    return wrapper


class Trainer(object):
    """Trains, evaluates and predicts with one task model under a `tf.distribute.Strategy`.

    Args:
      strategy: a `tf.distribute.Strategy` (`bert_tf.training.distribute.get_strategy`).
      build_model: a callable with no arguments that returns a new task model
        (`lambda: BertClassifier(config, num_labels=2)`), called under the
        strategy's scope and dtype policy. The model names its task
        (`model.task`, a `bert_tf.tasks.Task`), which says what its loss,
        eval metrics and predictions are.
      output_dir: where checkpoints, summaries and results go.
      mixed_precision: None | "bf16" | "fp16".
      use_xla: bool; compiles each replica's forward and backward pass with XLA.
      keep_checkpoint_max: how many `model.ckpt-N` to keep (the Estimator's 5).
      log_steps: log progress (and write summaries) at least every this many steps
        (and at least every 10 s: a host loop ends when its steps would take longer).
      seed: None (the default: unseeded, as the original) or an int >= 0 for a
        reproducible run that resumes exactly (`--seed`): the initial weights
        are drawn from it, dropout masks are keyed by (seed, global_step,
        replica, micro-batch, layer) and `train` resumes the input at the
        next unseen batch (see `train`).
      trim_padding: bool (default True): training, evaluation and prediction
        run each batch cut after its longest row (`Task.trim_padding`), the
        same numbers as whole rows within float32 rounding; False: every row
        at its full length, as the original. Under XLA and on TPU the rows
        stay whole (fixed shapes).

    The model is built in the constructor (`self.model`, its task `self.task`).
    """

    def __init__(self, strategy, build_model, output_dir, mixed_precision=None, use_xla=False,
                 keep_checkpoint_max=output_dir_lib.KEEP_CHECKPOINT_MAX, log_steps=LOG_STEPS,
                 seed=None, trim_padding=True):
        _check_positive(log_steps=log_steps)
        if not callable(build_model):
            raise TypeError("Trainer takes a callable that builds the task model (e.g. "
                            "lambda: BertClassifier(config, num_labels=2)), got %r" % (build_model,))
        self.strategy = strategy
        self.output_dir = output_dir
        self.mixed_precision = mixed_precision or None
        self.use_xla = bool(use_xla)
        self.trim_padding = bool(trim_padding) and not steps_lib.fixed_shapes(strategy, use_xla)
        if trim_padding and not self.trim_padding:
            logging.info("Every row runs at its full length (%s compiles fixed shapes)",
                         "XLA" if use_xla else "the TPU")
        self.keep_checkpoint_max = keep_checkpoint_max
        self.log_steps = int(log_steps)
        self.is_chief = distribute.is_chief(strategy)
        # The output_dir's checkpoints; `train` sets the period to its save_checkpoints_steps.
        self.checkpoints = output_dir_lib.Checkpoints(output_dir,
                                                      keep_checkpoint_max=keep_checkpoint_max,
                                                      is_chief=self.is_chief)
        if seed is not None and (isinstance(seed, bool) or int(seed) < 0):
            raise UserError("--seed must be a non-negative integer, got %r" % (seed,))
        self.seed = None if seed is None else int(seed)
        with dtype_policy(mixed_precision), strategy.scope(), _seeded_python_random(self.seed):
            self.model = build_model()
        self.task = getattr(self.model, "task", None)
        if self.task is None:
            raise TypeError("Trainer's build_model must return a task model (a keras.Model "
                            "with its `task`, e.g. BertClassifier), got %r" % (self.model,))
        self.optimizer = None
        self.global_step = 0
        self._restored_from = None
        self._train_loops = {}
        self._eval_loop = None
        self._predict_step = None
        # Set (> 0) by a preemption notice while `train` runs; the train loop
        # reads it before each step (bert_tf.training.preemption).
        with tf.device("CPU:0"):
            self._stop_flag = tf.Variable(0.0, trainable=False, name="stop_requested")
        self._stop_requests = None

    # ------------------------------------------------------------- checkpoints

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
        use_optimizer = with_optimizer and self.optimizer is not None
        latest, step = self.checkpoints.restore(
            self.model, self.base_optimizer if use_optimizer else None)
        if latest:
            logging.info("Resuming from %s (global_step %d)%s", latest, step,
                         "; --init_checkpoint is ignored, as the original's Estimator did"
                         if init_checkpoint else "")
            self.global_step = step
            self._restored_from = latest
            return step
        if init_checkpoint:
            self._init_from_checkpoint(init_checkpoint)
            self._restored_from = init_checkpoint
        self.checkpoints.count_from(0)
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
        # The original's list, at DEBUG here (the tools' --verbosity=1).
        logging.debug("**** Trainable Variables ****")
        for variable in self.model.trainable_variables:
            name = checkpoint_lib.tf1_name(variable)
            logging.debug("  name = %s, shape = %s%s", name, tuple(variable.shape),
                          ", *INIT_FROM_CKPT*" if name in loaded else "")

    def _restore_for_inference(self, init_checkpoint):
        """Before eval/predict: as the Estimator, the latest checkpoint unless trained here."""
        if self._restored_from is None and self.optimizer is None:
            self.restore(init_checkpoint, with_optimizer=False)
            if self._restored_from is None:
                logging.warning("Could not find trained model in output_dir %s, running "
                                "initialization to evaluate.", self.output_dir)

    def save(self, step=None):
        """Writes `output_dir/model.ckpt-<step>` (chief only) and prunes old ones.

        Returns:
          The checkpoint prefix, or None on a non-chief worker.
        """
        step = self.global_step if step is None else step
        return self.checkpoints.save(self.model, self.base_optimizer, step)

    # ------------------------------------------------------------- training

    def _train_loop(self, num_accumulation_steps):
        if num_accumulation_steps not in self._train_loops:
            replica_step = steps_lib.build_replica_train_step(
                self.task, self.model, self.optimizer, num_accumulation_steps,
                use_xla=self.use_xla, loss_scaling=self.mixed_precision == "fp16",
                dropout_seed=self.seed, trim_padding=self.trim_padding)
            self._train_loops[num_accumulation_steps] = steps_lib.build_train_loop(
                self.strategy, self.task, replica_step, stop_flag=self._stop_flag)
        return self._train_loops[num_accumulation_steps]

    def _next_chunk(self, step, num_train_steps, iterations_per_loop, seconds_per_step=None):
        """Steps in the next host loop: it ends at each save and each log boundary.

        And, as evaluation's chunks (`_time_bound`): one step first (it times
        a step, the tracing included), then no more steps than fit in 10 s.
        """
        to_next_log = (step // self.log_steps + 1) * self.log_steps - step
        chunk = min(iterations_per_loop, self.checkpoints.steps_to_next_save(step), to_next_log,
                    num_train_steps - step)
        return self._time_bound(chunk, seconds_per_step)

    def _time_bound(self, chunk, seconds_per_step):
        """`chunk` cut to what fits in `item_progress.PROGRESS_SECONDS` (a line at least that
        often); 1 before a step was timed (`seconds_per_step` None). Multi-worker: `chunk`
        as it is, so every worker runs the same host loops (their collectives pair up)."""
        if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return chunk
        if seconds_per_step is None:
            return min(chunk, 1)  # times a step (and the trace) before the first long call
        fit = int(item_progress.PROGRESS_SECONDS / max(seconds_per_step, 1e-9))
        return max(1, min(chunk, fit))

    def _check_finite(self, losses, step):
        bad = np.flatnonzero(~np.isfinite(losses))
        if bad.size:
            # Port note: new. The original kept training on a NaN loss; we stop
            # at once and save nothing, so the newest checkpoint is the last
            # good one (the loop breaks at the bad step).
            latest = output_dir_lib.latest_checkpoint(self.output_dir)
            raise NonFiniteLossError(
                "the loss is %s at global_step %d; training stopped without saving; the "
                "last good checkpoint is %s" % (losses[bad[0]], step + int(bad[0]) + 1,
                                                latest or "none (no checkpoint was written)"))

    def _preempted(self, step):
        """After a stop request (here or on another worker): the checkpoint, one line, Preempted."""
        if self._stop_requests is not None:
            self._stop_requests.finish()
        if self.checkpoints.saved_step != step:
            self.save(step)
        requested = self._stop_requests.requested if self._stop_requests else None
        cause = requested or "a notice on another worker"
        prefix = output_dir_lib.checkpoint_prefix(self.output_dir, step)
        message = preemption.preempted_message(cause, step, prefix)
        logging.warning("%s", message)
        raise preemption.Preempted(message, cause=cause, step=step, checkpoint=prefix)

    @_stopping_at_preemption_notices
    def train(self, dataset_fn, train_batch_size, num_train_steps, learning_rate,
              num_warmup_steps, init_checkpoint=None, save_checkpoints_steps=1000,
              iterations_per_loop=1000, num_accumulation_steps=1, optimizer_type="adamw",
              best_checkpoint=None, afterwards=None):
        """Trains until `global_step == num_train_steps`, resuming if it can.

        Args:
          dataset_fn: `fn(input_context) -> tf.data.Dataset` of per-replica
            batches (`input_context.get_per_replica_batch_size(train_batch_size)`
            examples, sharded by `input_context.input_pipeline_id`), repeated.
          train_batch_size: int, the global batch of one update (the
            original's "Total batch size for training").
          num_train_steps: int, the final global_step.
          learning_rate, num_warmup_steps, optimizer_type: see
            `bert_tf.training.optimization.create_optimizer`.
          init_checkpoint: checkpoint to start from when `output_dir` has none.
          save_checkpoints_steps: checkpoint every this many steps (and at the end).
          iterations_per_loop: at most this many steps per `tf.function` call
            (a loop also ends at each checkpoint and each `log_steps`).
          num_accumulation_steps: split each replica's batch into this many
            micro-batches and sum their gradients before one update (the same
            update as the whole batch, with a fraction of the activation memory).
          best_checkpoint: None, or a `bert_tf.training.dev_eval.BestCheckpoint`:
            it evaluates on the dev set every `eval_every_steps` steps and at
            the last step (a host loop ends at each), keeps the best weights,
            and may stop training early (the run then ends there, with its
            checkpoint, as at its last step; a rerun trains no further).
          afterwards: what the caller does next (e.g. "evaluating its model"),
            for the result line of an output_dir whose run is finished.

        With the trainer's `seed`, `dataset_fn` must give the same batches in
        the same order on every call (a seeded shuffle, as the runs' pipelines
        with `seed=`): a run that resumes at global_step N skips the batches
        of the first N steps (`_resumed_input`), so with the keyed dropout
        masks it ends with the checkpoint of a run that was never stopped.

        Returns:
          A list of dicts, one per host loop: `step` (global_step after it),
          `losses` (numpy [steps]), `loss`, `learning_rate`, `steps_per_sec`,
          `examples_per_sec`, and the task's training metrics.

        Raises:
          UserError: bad arguments.
          NonFiniteLossError: a NaN/Inf loss (nothing is saved; the last
            checkpoint stays the last good one).
          bert_tf.training.preemption.Preempted: (a `SystemExit`, status 75)
            after SIGTERM or a first Ctrl-C while training: the step under way
            finishes (under MultiWorkerMirroredStrategy, every worker stops
            after the same step, the first to start after any worker's
            notice), `model.ckpt-<that step>` is written and one line is
            logged. The handlers are installed (main thread only) for the
            duration of `train`.
          KeyboardInterrupt: a second Ctrl-C, at once, without a checkpoint.
        """
        num_replicas = self.strategy.num_replicas_in_sync
        _check_positive(num_train_steps=num_train_steps, train_batch_size=train_batch_size,
                        save_checkpoints_steps=save_checkpoints_steps,
                        iterations_per_loop=iterations_per_loop,
                        num_accumulation_steps=num_accumulation_steps)
        if train_batch_size % (num_replicas * num_accumulation_steps):
            raise UserError(
                "--train_batch_size=%d must be divisible by the number of replicas (%d) times "
                "--num_accumulation_steps (%d)"
                % (train_batch_size, num_replicas, num_accumulation_steps))
        if self.optimizer is None:
            self._create_optimizer(learning_rate, num_train_steps, num_warmup_steps,
                                   optimizer_type)
        self.checkpoints.save_checkpoints_steps = int(save_checkpoints_steps)
        self.checkpoints.prepare()
        step = self.restore(init_checkpoint, with_optimizer=True)
        # Port note: the Estimator logged "Skipping training since max_steps has
        # already saved" at INFO; a finished run is named in a result line,
        # which every --verbosity shows.
        then = "; %s" % afterwards if afterwards else ""
        if best_checkpoint is not None and best_checkpoint.stopped_early:
            logs.result("output_dir %s holds a finished run (stopped early at global_step %d, "
                        "%s): not training again%s", self.output_dir, step,
                        os.path.basename(best_checkpoint.history_file), then)
            return []
        if step >= num_train_steps:
            logs.result("output_dir %s holds a finished run (global_step %d of %d): not "
                        "training again%s", self.output_dir, step, num_train_steps, then)
            return []

        logging.info("***** Running training *****")
        logging.info("  Batch size = %d (%d replica(s) x %d micro-batch(es) of %d)",
                     train_batch_size, num_replicas, num_accumulation_steps,
                     train_batch_size // (num_replicas * num_accumulation_steps))
        logging.info("  Num steps = %d (starting at global_step %d)", num_train_steps, step)
        if self.seed is not None and step:
            dataset_fn = _resumed_input(dataset_fn, step)
        iterator = iter(self.strategy.distribute_datasets_from_function(dataset_fn))
        traced = num_accumulation_steps in self._train_loops
        train_loop = self._train_loop(num_accumulation_steps)
        progress = TrainProgress(self.output_dir if self.is_chief else None, num_train_steps,
                                 train_batch_size)
        # The optimizer's schedule, to log the learning rate of each loop's last update.
        schedule = optimization.WarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps)
        history, first_step = [], step
        stop_early = False
        seconds_per_step = None
        if best_checkpoint is not None and step and best_checkpoint.due(step):
            # Resumed at an evaluation's step (a run stopped right before it).
            stop_early = self._dev_evaluation(best_checkpoint, step)
        # Port note: TPUEstimator ran `iterations_per_loop` steps per host call
        # on TPU only; here every device runs the steps of a host loop inside
        # one tf.function, and a loop also ends at each multiple of
        # save_checkpoints_steps (checkpoints land exactly on those steps) and
        # of log_steps, and within 10 s (progress shows at least that often).
        while step < num_train_steps and not stop_early:
            chunk = self._next_chunk(step, num_train_steps, iterations_per_loop,
                                     seconds_per_step)
            if best_checkpoint is not None:
                chunk = min(chunk, best_checkpoint.steps_to_next(step))
            tracing = not traced
            if tracing:
                item_progress.log_tracing("training")
                traced = True
            loop_start = time.time()
            # A bad input record (checked in tf.data) stops the run with one line,
            # and so does a lost worker of a multi-worker job.
            with input_pipeline.bad_records_as_user_errors(), \
                    lost_worker.lost_workers_as_errors(self.strategy, step, self.output_dir,
                                                       output_dir_lib.latest_checkpoint):
                losses, metric_sums, stopped = train_loop(iterator,
                                                          tf.constant(chunk, tf.int32))
                losses = losses.numpy()
            self._check_finite(losses, step)
            new_step = int(self.base_optimizer.iterations.numpy())
            steps_done, step = new_step - step, new_step
            if steps_done:
                seconds_per_step = (time.time() - loop_start) / steps_done
            self.global_step = step
            train_metrics = self.task.train_metrics({k: float(v) for k, v in metric_sums.items()})
            if len(losses):
                history.append(progress.record(step, losses, time.time() - loop_start,
                                               float(schedule(max(step - 1, 0))), train_metrics,
                                               traced=tracing))
            if steps_done and (self.checkpoints.due(step) or step >= num_train_steps):
                self.save(step)
            if bool(stopped):  # a stop request, here or on another worker
                progress.close()
                self._preempted(step)
            if best_checkpoint is not None and steps_done and (
                    best_checkpoint.due(step) or step >= num_train_steps) and (
                    not best_checkpoint.evaluated_at(step)):
                stop_early = self._dev_evaluation(best_checkpoint, step)
        if self.checkpoints.saved_step != step:
            self.save(step)
        progress.close()
        if self._stop_requests is not None and self._stop_requests.requested:
            self._preempted(step)  # the notice came after the last step: skip what follows
        logging.info("Training done: global_step %d, %d steps in %s%s", step, step - first_step,
                     format_duration(time.time() - progress.start_time),
                     " (stopped early)" if stop_early else "")
        return history

    def _dev_evaluation(self, best_checkpoint, step):
        """`best_checkpoint`'s evaluation at `step`, the best weights kept; True: stop early."""
        def save(prefix):
            checkpoint_lib.save_checkpoint(self.model, prefix, global_step=step,
                                           update_state=False)
        with lost_worker.lost_workers_as_errors(self.strategy, step, self.output_dir,
                                                output_dir_lib.latest_checkpoint):
            return best_checkpoint.evaluate_and_record(step, save)

    def use_checkpoint(self, checkpoint_path, flag="init_checkpoint"):
        """Loads the weights of `checkpoint_path` (every model variable) for evaluate / predict.

        E.g. the best checkpoint of a `BestCheckpoint` after training. The
        results then report its `global_step`.
        """
        report = checkpoint_lib.load_checkpoint(self.model, checkpoint_path, strict=True,
                                                flag=flag)
        self.global_step = int(report.global_step or 0)
        self._restored_from = checkpoint_path
        logging.info("Evaluating and predicting with %s (global_step %d)", checkpoint_path,
                     self.global_step)

    # ------------------------------------------------------------- evaluation

    def evaluate(self, data, eval_batch_size, max_eval_steps=None, init_checkpoint=None):
        """Evaluates the model (the original's `estimator.evaluate`).

        If the model has not been trained or restored in this process, the
        latest checkpoint in `output_dir` is restored (else `init_checkpoint`,
        else the initial weights, at global_step 0), as the Estimator did.

        Args:
          data: a `FiniteInput` (every example once; padding is masked by
            `is_real_example`), or `fn(input_context)` -> repeated per-replica
            eval batches, read for `max_eval_steps` batches.
          eval_batch_size: int, global eval batch.
          max_eval_steps: int, number of batches (required for a repeated
            dataset; with a `FiniteInput`, an optional cap).
          init_checkpoint: used only when `output_dir` holds no checkpoint.

        Returns:
          dict: the task's metrics, `loss` (the mean over batches of each
          batch's loss) and `global_step`. Also written as TensorBoard
          summaries to `output_dir/eval` (chief only).

        Progress (`evaluation: <done>/<total> batches, ...`) is logged every
        `log_steps` batches and at least every 10 s.
        """
        dataset_fn, num_steps = self._eval_input(data, eval_batch_size, max_eval_steps)
        self._restore_for_inference(init_checkpoint)
        logging.info("***** Running evaluation *****")
        logging.info("  Batch size = %d, steps = %d%s", eval_batch_size, num_steps,
                     ", examples = %d" % data.num_examples if isinstance(data, FiniteInput)
                     else "")
        if self._eval_loop is None:
            self._eval_loop = steps_lib.build_eval_loop(self.strategy, self.task, self.model,
                                                        trim_padding=self.trim_padding)
            if num_steps:
                item_progress.log_tracing("evaluation")
        start = time.time()
        iterator = iter(self.strategy.distribute_datasets_from_function(dataset_fn))
        progress = item_progress.ItemProgress("evaluation", num_steps, "batches",
                                              every=self.log_steps)
        sums = steps_lib.initial_eval_sums(self.task)
        done, seconds_per_step = 0, None
        with input_pipeline.bad_records_as_user_errors():
            # In chunks, each one host call, so progress shows between them; the
            # chunks carry the float32 sums on, so the results are those of one call.
            while done < num_steps:
                chunk = self._next_eval_chunk(done, num_steps, seconds_per_step)
                chunk_start = time.time()
                sums = self._eval_loop(iterator, tf.constant(chunk, tf.int32), sums)
                sums["batch_loss_sum"].numpy()  # waits for the chunk, for its time
                seconds_per_step = (time.time() - chunk_start) / chunk
                done += chunk
                progress.update(done)
            sums = {k: float(v) for k, v in sums.items()}
        predictions = None
        if self.task.needs_eval_predictions:
            if not isinstance(data, FiniteInput):
                raise TypeError("task %s evaluates from predictions: pass a FiniteInput"
                                % self.task.name)
            predictions = self.predict(data)
        results = steps_lib.eval_results(self.task, sums, num_steps, predictions)
        results["global_step"] = int(self.global_step)
        elapsed = max(time.time() - start, 1e-9)
        logging.info("Evaluation done: %d batches in %s (%.1f examples/s)", num_steps,
                     format_duration(elapsed), num_steps * eval_batch_size / elapsed)
        if self.is_chief:
            writer = tf.summary.create_file_writer(tf.io.gfile.join(self.output_dir, "eval"))
            with writer.as_default(step=results["global_step"]):
                for key, value in results.items():
                    if key != "global_step":
                        scalar_summary(key, value)
            writer.close()
        return results

    def _next_eval_chunk(self, done, num_steps, seconds_per_step):
        """How many batches the next eval host call runs.

        Up to the next multiple of `log_steps` and, once the first chunk (one
        batch) has timed a step, no more batches than fit in 10 s
        (`item_progress.PROGRESS_SECONDS`), so slow steps still show progress
        that often. Multi-worker: the `log_steps` bound only, so every worker
        runs the same chunks (their collectives pair up).
        """
        chunk = min(self.log_steps - done % self.log_steps, num_steps - done)
        return self._time_bound(chunk, seconds_per_step)

    def _eval_input(self, data, batch_size, max_eval_steps):
        if batch_size is None or batch_size < 1 or batch_size % self.strategy.num_replicas_in_sync:
            raise UserError("--eval_batch_size=%r must be a positive multiple of the number of "
                            "replicas (%d)" % (batch_size, self.strategy.num_replicas_in_sync))
        if isinstance(data, FiniteInput):
            num_steps = data.num_steps
            if max_eval_steps:
                num_steps = min(num_steps, int(max_eval_steps))
            return data.dataset_fn, num_steps
        _check_positive(max_eval_steps=max_eval_steps)
        return data, int(max_eval_steps)

    # ------------------------------------------------------------- prediction

    def predict(self, data, init_checkpoint=None):
        """Runs the task's `predict_step` on every example of `data` once.

        Args:
          data: a `FiniteInput` (its global batch is `--predict_batch_size`).
          init_checkpoint: used only when `output_dir` holds no checkpoint and
            the model was not trained in this process.

        Returns:
          dict of numpy arrays [num_examples, ...] in input order (padding dropped).
        """
        if not isinstance(data, FiniteInput):
            raise TypeError("Trainer.predict takes a FiniteInput, got %r" % (data,))
        num_replicas = self.strategy.num_replicas_in_sync
        if data.global_batch_size % num_replicas:
            raise UserError("--predict_batch_size=%d must be a multiple of the number of "
                            "replicas (%d)" % (data.global_batch_size, num_replicas))
        self._restore_for_inference(init_checkpoint)
        logging.info("***** Running prediction *****")
        logging.info("  Num examples = %d, batch size = %d, steps = %d", data.num_examples,
                     data.global_batch_size, data.num_steps)
        if self._predict_step is None:
            self._predict_step = steps_lib.build_predict_step(
                self.strategy, self.task, self.model, trim_padding=self.trim_padding)
            if data.num_steps:
                item_progress.log_tracing("predict")
        iterator = iter(self.strategy.distribute_datasets_from_function(data.dataset_fn))
        rows = []
        # A line every log_steps steps, and at least every 10 s.
        progress = item_progress.ItemProgress("predict", data.num_examples, "examples",
                                every=self.log_steps * data.global_batch_size)
        for step in range(data.num_steps):
            with input_pipeline.bad_records_as_user_errors():
                rows.append({k: v.numpy() for k, v in self._predict_step(iterator).items()})
            progress.update(min((step + 1) * data.global_batch_size, data.num_examples))
        progress.finish()
        if not rows:
            return {}
        outputs = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
        return in_input_order(outputs, data.num_examples)
