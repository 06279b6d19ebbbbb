"""Keras callbacks for `fit` (original: the Estimator's checkpointing and restore-on-start).

`BestCheckpointCallback` (new) evaluates on dev data every N steps, keeps the
best checkpoint and stops early, as the fine-tuning tools' `--eval_every_steps`.

`CheckpointCallback` keeps an `output_dir` as the original's Estimator (and
`bert_tf.training.Trainer`) keeps it: `model.ckpt-<global_step>` in Google's
format every `save_checkpoints_steps` and at the end of `fit`, with the
`adam_m` / `adam_v` slots and `global_step`, the newest `keep_checkpoint_max`
kept and listed in the `checkpoint` state file; and `fit` resumes from the
latest one there (weights, slots and step, so the learning-rate schedule goes
on where it stopped). The original code restores these checkpoints, and
`run_classifier.py` / `run_pretraining.py` resume from them.

  model.compile(optimizer=create_optimizer(2e-5, num_train_steps, num_warmup_steps))
  model.fit(dataset, epochs=1, steps_per_epoch=num_train_steps,
            callbacks=[CheckpointCallback("output_dir", save_checkpoints_steps=1000)])

A resume is logged as a warning (the checkpoint's weights replace the
model's), and a `fit` that would start at or past the schedule's end
(`num_train_steps`, where the learning rate is 0) stops with an error instead
of training nothing.

Resuming restores the step, not the position in the data: a resumed `fit`
runs the steps it is asked for from the step it finds. To end where an
interrupted run would have, ask for the steps left
(`num_train_steps - callback.restored_step`) and continue the data where it
stopped (e.g. `dataset.skip(...)`).

A preemption notice during `fit` (SIGTERM, or a first Ctrl-C; see
`bert_tf.training.preemption`) stops training after the current batch:
`model.ckpt-<that step>` is written, one line is logged, and `fit` raises
`Preempted` (a `SystemExit` with status 75: a script that does not catch it
exits with that status, skipping what follows `fit`). A second Ctrl-C
raises `KeyboardInterrupt` at once. The handlers are installed for the
duration of `fit` only (the previous ones are put back at its end, or at
the next `fit` if this one failed). Under `MultiWorkerMirroredStrategy` the
workers do not agree on the step: use `bert_tf.training.Trainer` there.
"""

from bert_tf import _backend  # noqa: F401  (Keras' TensorFlow backend, before keras)

import keras  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf.errors import UserError  # noqa: E402
from bert_tf.modeling import checkpoint as checkpoint_lib  # noqa: E402
from bert_tf.training import distribute  # noqa: E402
from bert_tf.training import optimization  # noqa: E402
from bert_tf.training import preemption  # noqa: E402
from bert_tf.training.dev_eval import BestCheckpoint  # noqa: E402
from bert_tf.training.dev_eval import DevEval  # noqa: E402
from bert_tf.training.output_dir import KEEP_CHECKPOINT_MAX  # noqa: E402
from bert_tf.training.output_dir import Checkpoints  # noqa: E402
from bert_tf.training.output_dir import checkpoint_prefix  # noqa: E402


class CheckpointCallback(keras.callbacks.Callback):
    """Saves `output_dir/model.ckpt-N` during `fit` and resumes from the latest one.

    The cadence is `bert_tf.training.output_dir.Checkpoints`', the trainer's.

    Args:
      output_dir: where the checkpoints go (created if needed).
      save_checkpoints_steps: save when global_step reaches a multiple of it
        (and at the end of `fit`). With Keras's `steps_per_execution` > 1 the
        step is seen only every that many steps: the save then comes at the
        first step seen past each multiple.
      keep_checkpoint_max: how many checkpoints to keep (the Estimator's 5).

    Attributes:
      restored_step: the global_step `fit` started from (0 when nothing was
        restored), set at the start of each `fit`.
      last_saved: the prefix of the last checkpoint written (None before).

    Raises (at the start of `fit`):
      UserError: the optimizer is not one of `bert_tf.training.optimization`'s (the
        checkpoint holds the original's `adam_m` / `adam_v` slots), the
        latest checkpoint in `output_dir` does not fit the model, or it is at
        (or past) the end of the learning-rate schedule, where nothing is left
        to train.
    """

    def __init__(self, output_dir, save_checkpoints_steps=1000,
                 keep_checkpoint_max=KEEP_CHECKPOINT_MAX):
        super().__init__()
        if not output_dir:
            raise UserError("CheckpointCallback: output_dir is empty")
        for name, value in (("save_checkpoints_steps", save_checkpoints_steps),
                            ("keep_checkpoint_max", keep_checkpoint_max)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise UserError("CheckpointCallback: %s must be a positive integer, got %r"
                                % (name, value))
        self.output_dir = str(output_dir)
        self.save_checkpoints_steps = save_checkpoints_steps
        self.keep_checkpoint_max = keep_checkpoint_max
        self.restored_step = 0
        self.last_saved = None
        self._checkpoints = None
        self._schedule_end = None  # checked once, at the first epoch of a fit
        self._stop_requests = None  # SIGTERM / Ctrl-C handlers while fit runs

    def _optimizer(self):
        """The optimizer with the slots (inside any loss-scale wrapper)."""
        optimizer = self.model.optimizer
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        if not hasattr(optimizer, "get_slot_variables"):
            raise UserError(
                "CheckpointCallback needs an optimizer from bert_tf.training.optimization (e.g. "
                "create_optimizer(init_lr, num_train_steps, num_warmup_steps)): the checkpoint "
                "holds the original's adam_m/adam_v slots; got %s" % type(optimizer).__name__)
        return optimizer

    def _step(self):
        return int(self._optimizer().iterations.numpy())

    def on_train_begin(self, logs=None):
        optimizer = self._optimizer()
        if not self.model.optimizer.built:
            # Keras builds it at the first step (or before, under a strategy);
            # the slots must exist to be restored.
            self.model.optimizer.build(self.model.trainable_variables)
        self._checkpoints = Checkpoints(
            self.output_dir, self.save_checkpoints_steps, self.keep_checkpoint_max,
            is_chief=distribute.is_chief(self.model.distribute_strategy))
        self._checkpoints.prepare()
        latest, step = self._checkpoints.restore(self.model, optimizer)
        if latest:
            # Visible in a plain script (absl shows warnings by default): the
            # model's weights (a backbone loaded just before, say) were replaced.
            logging.warning(
                "CheckpointCallback: resumed from %s at global step %d: the model's weights, "
                "the optimizer's slots and the learning-rate schedule go on from there (use a "
                "new output_dir to start over)", latest, step)
        else:
            step = self._step()
            self._checkpoints.count_from(step)
        self.restored_step = step
        self._check_steps_left(latest, step)
        self._stop_handling()  # a previous fit that raised did not reach on_train_end
        self._stop_requests = preemption.StopRequests().__enter__()

    def _check_steps_left(self, latest, step):
        """Refuses a fit with no step left in the schedule (steps past it: a warning, below)."""
        end = optimization.schedule_end(self.model.optimizer)
        if end is None:
            return
        if step >= end:
            raise UserError(
                "CheckpointCallback: nothing left to train: %s is at global step %d, the end of "
                "the learning-rate schedule (num_train_steps=%d), where the learning rate is 0; "
                "use a new output_dir to train again, or a larger num_train_steps in "
                "create_optimizer to train on" % (latest or "the optimizer", step, end))
        self._schedule_end = end

    def on_epoch_begin(self, epoch, logs=None):
        end, self._schedule_end = self._schedule_end, None
        params = self.params or {}
        epochs, steps = params.get("epochs"), params.get("steps")
        if end is None or not epochs or not steps:
            return
        step, asked = self._step(), (epochs - epoch) * steps
        if step + asked > end:
            logging.warning(
                "CheckpointCallback: fit asks for %d steps from global step %d, but the "
                "learning-rate schedule ends at step %d (num_train_steps): the last %d train "
                "at learning rate 0", asked, step, end, step + asked - end)

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        if self._checkpoints.due(step):
            self._save(step)
        if self._stop_requests is not None and self._stop_requests.requested:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        step = self._step()
        if self._stop_requests is not None and self._stop_requests.requested:
            self._stop_requests.finish()
        if step != self._checkpoints.saved_step:
            self._save(step)
        requested = self._stop_requests.requested if self._stop_requests else None
        self._stop_handling()
        if requested:
            prefix = checkpoint_prefix(self.output_dir, step)
            message = preemption.preempted_message(requested, step, prefix)
            logging.warning("%s", message)
            raise preemption.Preempted(message, cause=requested, step=step, checkpoint=prefix)

    def _stop_handling(self):
        """Puts back the signal handlers `fit` found."""
        requests, self._stop_requests = self._stop_requests, None
        if requests is not None:
            requests.__exit__(None, None, None)

    def _save(self, step):
        prefix = self._checkpoints.save(self.model, self._optimizer(), step)
        if prefix is not None:
            self.last_saved = prefix


class BestCheckpointCallback(keras.callbacks.Callback):
    """Evaluates on dev data every N steps of `fit`, keeps the best checkpoint, stops early.

    The Keras side of `bert_tf.training.dev_eval` (what the fine-tuning
    tools' `--eval_every_steps`, `--best_metric` and `--early_stopping_patience`
    do), with the same `BestCheckpoint`: every `eval_every_steps` steps and at
    the end of `fit`, `model.evaluate(validation_data)` runs; the results go
    to `output_dir/eval_history.jsonl`, the best weights to
    `output_dir/best/model.ckpt-<step>` (Google's format, with
    `best/eval_results.txt`), and after `early_stopping_patience`
    evaluations without a better `best_metric`, `fit` stops. A `fit` run
    again with the same `output_dir` goes on from the history (and trains no
    further if it had stopped early).

      best = BestCheckpointCallback("output_dir", (dev_texts, dev_labels),
                                    eval_every_steps=100, early_stopping_patience=3)
      model.fit(train_data, epochs=3, callbacks=[CheckpointCallback("output_dir"), best])
      bert_tf.modeling.checkpoint.load_checkpoint(model, best.best_checkpoint())

    Args:
      output_dir: where the history and `best/` go.
      validation_data: `(x, y)` or a dataset, any form `model.evaluate` takes.
      eval_every_steps: evaluate when global_step passes a multiple of it.
      best_metric: a key of `evaluate`'s results (default: the task's,
        `model.task.default_best_metric`); names ending in "loss" are
        better lower.
      early_stopping_patience: 0 (never), or stop after this many
        evaluations in a row without a better `best_metric`.
      batch_size: `evaluate`'s batch size for in-memory data.
    """

    def __init__(self, output_dir, validation_data, eval_every_steps, best_metric=None,
                 early_stopping_patience=0, batch_size=None):
        super().__init__()
        if not output_dir:
            raise UserError("BestCheckpointCallback: output_dir is empty")
        if isinstance(eval_every_steps, bool) or not isinstance(eval_every_steps, int) or (
                eval_every_steps <= 0):
            raise UserError("BestCheckpointCallback: eval_every_steps must be a positive "
                            "integer, got %r" % (eval_every_steps,))
        self.output_dir = str(output_dir)
        self.validation_data = validation_data
        self.options = DevEval(eval_every_steps=eval_every_steps, best_metric=best_metric,
                               early_stopping_patience=early_stopping_patience)
        self.options.check()
        self.batch_size = batch_size
        self.keeper = None

    def _step(self):
        optimizer = self.model.optimizer
        return int(getattr(optimizer, "inner_optimizer", optimizer).iterations.numpy())

    def _evaluate(self, step):
        data = self.validation_data
        if isinstance(data, (tuple, list)) and len(data) == 2:
            x, y = data
        else:
            x, y = data, None
        return self.model.evaluate(x, y, batch_size=self.batch_size, return_dict=True,
                                   verbose=0)

    def _save(self, step):
        def save(prefix):
            checkpoint_lib.save_checkpoint(self.model, prefix, global_step=step,
                                           update_state=False)
        return save

    def best_checkpoint(self):
        """`output_dir/best/model.ckpt-<N>` of the best evaluation so far, or None."""
        return self.keeper.best_checkpoint() if self.keeper is not None else None

    def on_train_begin(self, logs=None):
        task = getattr(self.model, "task", None)
        default = task.default_best_metric if task is not None else "loss"
        self.keeper = BestCheckpoint(
            self.output_dir, self.options, default, self._evaluate,
            is_chief=distribute.is_chief(self.model.distribute_strategy))
        if self.keeper.stopped_early:
            logging.warning("BestCheckpointCallback: %s says training stopped early; fit trains "
                            "no further (use a new output_dir to train again)",
                            self.keeper.history_file)
            self.model.stop_training = True

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        if self.keeper.due(step) and self.keeper.evaluate_and_record(step, self._save(step)):
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        step = self._step()
        if step and not self.keeper.evaluated_at(step) and not self.keeper.stopped_early:
            self.keeper.evaluate_and_record(step, self._save(step))
