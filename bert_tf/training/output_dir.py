"""The output directory's life cycle, as the Estimator kept it (original: `model_dir`).

  output_dir/model.ckpt-<global_step>.{index,data-00000-of-00001}
  output_dir/checkpoint            the state file: the newest last
  output_dir/eval_results.txt      `key = value` lines
  output_dir/events.out.tfevents.* training summaries; eval summaries in eval/

Every file is written under a temporary name and renamed, so a process killed
at any point leaves only complete files under the real names.

`Checkpoints` is the one home of the checkpoint cadence (resume from the
latest, save every `save_checkpoints_steps` and at the end, keep the newest
`keep_checkpoint_max`): `bert_tf.training.Trainer` and the Keras callback
`bert_tf.training.callbacks.CheckpointCallback` both keep an output_dir with it.
"""

import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import fileio
from bert_tf.modeling import checkpoint as checkpoint_lib

CHECKPOINT_BASENAME = "model.ckpt"
# The Estimator's RunConfig default.
KEEP_CHECKPOINT_MAX = 5


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
    # get_checkpoint_state has already joined relative entries to output_dir.
    for path in stale:
        for filename in tf.io.gfile.glob(path + ".*"):
            tf.io.gfile.remove(filename)


def remove_stale_temporary_files(output_dir):
    """Removes `<name>.tmp-<pid>*` left in `output_dir` by a killed writer of another process."""
    for path in tf.io.gfile.glob(os.path.join(output_dir, "*.tmp-*")):
        match = re.search(r"\.tmp-(\d+)", path)
        if match and int(match.group(1)) != os.getpid():
            try:
                tf.io.gfile.remove(path)
            except tf.errors.OpError:
                pass


class Checkpoints(object):
    """An output_dir's `model.ckpt-<global_step>`, kept as the Estimator kept them.

    A run resumes from the latest checkpoint (weights, the optimizer's
    `adam_m` / `adam_v` slots and its step), saves when global_step passes a
    multiple of `save_checkpoints_steps` and at its end, and keeps the newest
    `keep_checkpoint_max`. Only the chief writes; every worker restores.

    Args:
      output_dir: the run's directory.
      save_checkpoints_steps: save when global_step passes a multiple of it.
      keep_checkpoint_max: how many checkpoints to keep (the Estimator's 5).
      is_chief: whether this process writes.

    Attributes:
      saved_step: the global_step of the checkpoint last written or restored
        (None before either).
    """

    def __init__(self, output_dir, save_checkpoints_steps=1000,
                 keep_checkpoint_max=KEEP_CHECKPOINT_MAX, is_chief=True):
        self.output_dir = output_dir
        self.save_checkpoints_steps = int(save_checkpoints_steps)
        self.keep_checkpoint_max = keep_checkpoint_max
        self.is_chief = is_chief
        self.saved_step = None
        self._counted_from = 0

    def prepare(self):
        """Creates output_dir and removes temporary files a killed writer left (chief only)."""
        if self.is_chief:
            tf.io.gfile.makedirs(self.output_dir)
            remove_stale_temporary_files(self.output_dir)

    def restore(self, model, optimizer=None):
        """Loads the latest checkpoint into `model` (and `optimizer`'s slots and step).

        Args:
          model: the model (or layers, or variables) the checkpoint was saved from.
          optimizer: an optimizer of `bert_tf.training.optimization` (the one
            with the slots, inside any loss-scale wrapper), or None for the
            weights alone.

        Returns:
          (the checkpoint prefix, its global_step), or (None, None) when
          output_dir holds no checkpoint.

        Raises:
          UserError: the checkpoint does not fit the model (strict load).
        """
        latest = latest_checkpoint(self.output_dir)
        if not latest:
            return None, None
        report = checkpoint_lib.load_checkpoint(model, latest, strict=True, optimizer=optimizer,
                                                flag="output_dir")
        step = report.global_step or 0
        if optimizer is not None:
            optimizer.iterations.assign(step)
        self.saved_step = self._counted_from = step
        return latest, step

    def count_from(self, step):
        """A run that restored nothing starts at `step`: the next save comes a period after it."""
        self._counted_from = step

    def steps_to_next_save(self, step):
        """How many steps from `step` to the next multiple of save_checkpoints_steps."""
        every = self.save_checkpoints_steps
        return (step // every + 1) * every - step

    def due(self, step):
        """Whether global_step `step` passed a multiple of save_checkpoints_steps since the last save.

        (`>`, not `==`: Keras's `steps_per_execution` > 1 reports every that
        many steps, so a multiple can be passed between two reports.)
        """
        every = self.save_checkpoints_steps
        return step // every > self._counted_from // every

    def save(self, model, optimizer, step):
        """Writes `output_dir/model.ckpt-<step>` (chief only) and prunes the oldest.

        Returns:
          The checkpoint prefix, or None on a non-chief worker.
        """
        self.saved_step = self._counted_from = step
        if not self.is_chief:
            return None
        prefix = checkpoint_prefix(self.output_dir, step)
        checkpoint_lib.save_checkpoint(model, prefix, optimizer=optimizer, global_step=step)
        prune_checkpoints(self.output_dir, self.keep_checkpoint_max)
        logging.info("Saved checkpoint for step %d: %s", step, prefix)
        return prefix


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
    return fileio.write_text(path, "".join(lines))
