"""Keras callbacks for `fit` (original: the Estimator's checkpointing and restore-on-start).

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

Resuming restores the step, not the position in the data: a resumed `fit`
runs the steps it is asked for from the step it finds. To end where an
interrupted run would have, ask for the steps left
(`num_train_steps - callback.restored_step`) and continue the data where it
stopped (e.g. `dataset.skip(...)`).
"""

from bert_tf import _backend  # noqa: F401  (Keras' TensorFlow backend, before keras)

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf import checkpoint as checkpoint_lib  # noqa: E402
from bert_tf import distribute  # noqa: E402
from bert_tf.errors import UserError  # noqa: E402
from bert_tf.training import output_dir as output_dir_lib  # noqa: E402


class CheckpointCallback(keras.callbacks.Callback):
    """Saves `output_dir/model.ckpt-N` during `fit` and resumes from the latest one.

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
      UserError: the optimizer is not one of `bert_tf.optimization`'s (the
        checkpoint holds the original's `adam_m` / `adam_v` slots), or the
        latest checkpoint in `output_dir` does not fit the model.
    """

    def __init__(self, output_dir, save_checkpoints_steps=1000,
                 keep_checkpoint_max=output_dir_lib.KEEP_CHECKPOINT_MAX):
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
        self._saved_step = None

    def _optimizer(self):
        """The optimizer with the slots (inside any loss-scale wrapper)."""
        optimizer = self.model.optimizer
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        if not hasattr(optimizer, "get_slot_variables"):
            raise UserError(
                "CheckpointCallback needs an optimizer from bert_tf.optimization (e.g. "
                "create_optimizer(init_lr, num_train_steps, num_warmup_steps)): the checkpoint "
                "holds the original's adam_m/adam_v slots; got %s" % type(optimizer).__name__)
        return optimizer

    def _step(self):
        return int(self._optimizer().iterations.numpy())

    def _is_chief(self):
        return distribute.is_chief(self.model.distribute_strategy)

    def on_train_begin(self, logs=None):
        optimizer = self._optimizer()
        if not self.model.optimizer.built:
            # Keras builds it at the first step (or before, under a strategy);
            # the slots must exist to be restored.
            self.model.optimizer.build(self.model.trainable_variables)
        if self._is_chief():
            tf.io.gfile.makedirs(self.output_dir)
            output_dir_lib.remove_stale_temporary_files(self.output_dir)
        latest = output_dir_lib.latest_checkpoint(self.output_dir)
        step = 0
        if latest:
            report = checkpoint_lib.load_checkpoint(self.model, latest, strict=True,
                                                    optimizer=optimizer, flag="output_dir")
            step = report.global_step or 0
            optimizer.iterations.assign(step)
            logging.info("Resuming from %s (global_step %d)", latest, step)
        else:
            step = self._step()
        self.restored_step = step
        self._saved_step = step if latest else None

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        every = self.save_checkpoints_steps
        last = self._saved_step if self._saved_step is not None else self.restored_step
        # `>`: with steps_per_execution > 1 a batch end may pass a multiple.
        if step // every > last // every:
            self._save(step)

    def on_train_end(self, logs=None):
        step = self._step()
        if step != self._saved_step:
            self._save(step)

    def _save(self, step):
        self._saved_step = step
        if not self._is_chief():
            return
        prefix = output_dir_lib.checkpoint_prefix(self.output_dir, step)
        checkpoint_lib.save_checkpoint(self.model, prefix, optimizer=self._optimizer(),
                                       global_step=step)
        output_dir_lib.prune_checkpoints(self.output_dir, self.keep_checkpoint_max)
        self.last_saved = prefix
        logging.info("Saved checkpoint for step %d: %s", step, prefix)
