"""The output directory's life cycle, as the Estimator kept it (original: `model_dir`).

  output_dir/model.ckpt-<global_step>.{index,data-00000-of-00001}
  output_dir/checkpoint            the state file: the newest last
  output_dir/eval_results.txt      `key = value` lines
  output_dir/events.out.tfevents.* training summaries; eval summaries in eval/

Every file is written under a temporary name and renamed, so a process killed
at any point leaves only complete files under the real names.

A checkpoint can still be broken (a file system without atomic rename, a copy
cut short): a resuming run then goes back to the newest checkpoint that reads,
with a warning line for each one it skips, and the state file lists only the
good ones once the next checkpoint is saved. The broken files are left where
they are (as the Estimator never deleted a file it could not read); a
checkpoint that reads but does not fit the model is an error, never skipped.

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
from bert_tf import logs
from bert_tf.modeling import checkpoint as checkpoint_lib

CHECKPOINT_BASENAME = "model.ckpt"
# The Estimator's RunConfig default.
KEEP_CHECKPOINT_MAX = 5


def checkpoint_prefix(output_dir, step):
    """`output_dir/model.ckpt-<step>`, the Estimator's checkpoint name."""
    return os.path.join(output_dir, "%s-%d" % (CHECKPOINT_BASENAME, step))


# A checkpoint's own files; not a writer's `<name>.tmp-<pid>` ones.
_CHECKPOINT_FILE = re.compile(r"^%s-(\d+)\.(?:index|data-\d+-of-\d+)$"
                              % re.escape(CHECKPOINT_BASENAME))
# Where `checkpoint_candidates` found them.
LISTED, NO_STATE_FILE, UNREADABLE_STATE_FILE = "listed", "no state file", "unreadable state file"


def checkpoint_candidates(output_dir):
    """The checkpoints a run could resume from, newest first, and where they were found.

    They are those the `checkpoint` state file lists; without a state file, or
    with one that cannot be read, every `model.ckpt-N` there (from its index or
    its data file), the highest N first.

    Returns:
      (a list of checkpoint prefixes, one of LISTED, NO_STATE_FILE, UNREADABLE_STATE_FILE).
    """
    source = NO_STATE_FILE
    if tf.io.gfile.exists(os.path.join(output_dir, "checkpoint")):
        try:
            state = tf.train.get_checkpoint_state(output_dir)
        except (ValueError, tf.errors.OpError):  # empty, or not text
            state = None
        if state is not None and state.model_checkpoint_path:
            # get_checkpoint_state has already joined relative entries to output_dir.
            paths = [p for p in state.all_model_checkpoint_paths
                     if p != state.model_checkpoint_path]
            return [state.model_checkpoint_path] + paths[::-1], LISTED
        source = UNREADABLE_STATE_FILE
    steps = set()
    for path in tf.io.gfile.glob(os.path.join(output_dir, CHECKPOINT_BASENAME + "-*")):
        match = _CHECKPOINT_FILE.match(os.path.basename(path))
        if match:
            steps.add(int(match.group(1)))
    return [checkpoint_prefix(output_dir, step) for step in sorted(steps, reverse=True)], source


def latest_checkpoint(output_dir):
    """The checkpoint a run in `output_dir` resumes from, as far as its index shows; or None.

    The newest of `checkpoint_candidates` whose index opens and whose data
    files are there. (A data file cut short or corrupt shows only when its
    values are read: `Checkpoints.restore` reads them, and goes back further.)
    """
    if not output_dir or not tf.io.gfile.isdir(output_dir):
        return None
    for prefix in checkpoint_candidates(output_dir)[0]:
        try:
            checkpoint_lib.check_checkpoint_files(prefix, flag=None)
        except checkpoint_lib.UnreadableCheckpointError:
            continue
        return prefix
    return None


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
        # The state file's names once `restore` skipped a broken checkpoint (or
        # found no readable state file): written before the next save.
        self._state_to_write = None

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

        A checkpoint whose files cannot be read (`UnreadableCheckpointError`:
        a missing, truncated or corrupt index or data file) is skipped for the
        next older one of `checkpoint_candidates`, with a warning line each.

        Returns:
          (the checkpoint prefix, its global_step), or (None, None) when
          output_dir holds no checkpoint.

        Raises:
          UserError: the checkpoint does not fit the model (strict load; an
            older one is not tried); `UnreadableCheckpointError`: no checkpoint
            there can be read, naming output_dir and the newest.
        """
        self._state_to_write = None
        if not self.output_dir or not tf.io.gfile.isdir(self.output_dir):
            return None, None
        candidates, source = checkpoint_candidates(self.output_dir)
        state_file = os.path.join(self.output_dir, "checkpoint")
        if source == UNREADABLE_STATE_FILE:
            logging.warning("%s cannot be read: %s", state_file,
                            "resuming from the highest model.ckpt-N in output_dir"
                            if candidates else "no model.ckpt-N in output_dir to resume from")
            self._state_to_write = []
        latest, report, broken, gone = None, None, [], 0
        for prefix in candidates:
            if not tf.io.gfile.glob(prefix + ".*"):
                broken.append((prefix, "none of its files is there"))
                gone += 1
                continue
            try:
                report = checkpoint_lib.load_checkpoint(model, prefix, strict=True,
                                                        optimizer=optimizer, flag="output_dir")
            except checkpoint_lib.UnreadableCheckpointError as e:
                broken.append((prefix, e.reason))
                continue
            latest = prefix
            break
        if broken and latest is None and gone == len(broken):
            # Every file deleted (the state file left behind): no checkpoint, as the
            # Estimator saw it; the next save writes a state file without them.
            logging.warning("%s lists %s, but none of its checkpoints' files is there: nothing "
                            "to resume from", state_file, os.path.basename(broken[0][0]))
            self._state_to_write = []
            return None, None
        if broken and latest is None:
            raise checkpoint_lib.UnreadableCheckpointError(
                "--output_dir=%s" % self.output_dir, broken[0][0],
                "no checkpoint there can be read: the newest, %s: %s%s; a new --output_dir "
                "trains anew" % (os.path.basename(broken[0][0]), broken[0][1],
                                 " (and %d older one(s) cannot be read either)" % (len(broken) - 1)
                                 if len(broken) > 1 else ""))
        for prefix, reason in broken:
            logging.warning("Skipped checkpoint %s, which cannot be read (%s): resuming from %s; "
                            "its files are left as they are", prefix, reason,
                            os.path.basename(latest))
        if not latest:
            return None, None
        if broken or source != LISTED:
            # Written before the next save: the good ones only (all but the skipped ones of
            # the state file; without a readable one, the checkpoint resumed from).
            self._state_to_write = (
                [os.path.basename(p) for p in candidates[::-1] if p not in dict(broken)]
                if source == LISTED else [os.path.basename(latest)])
        step = report.global_step or 0
        if optimizer is not None:
            optimizer.iterations.assign(step)
        self.saved_step = self._counted_from = step
        return latest, step

    def _write_state_file(self):
        """Before the first save after `restore` skipped checkpoints: a state file of good ones."""
        names, self._state_to_write = self._state_to_write, None
        if names:
            checkpoint_lib.write_checkpoint_state(self.output_dir, names)
        elif names is not None:  # an unreadable state file with nothing to list
            state_file = os.path.join(self.output_dir, "checkpoint")
            if tf.io.gfile.exists(state_file):
                tf.io.gfile.remove(state_file)

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
        self._write_state_file()
        checkpoint_lib.save_checkpoint(model, prefix, optimizer=optimizer, global_step=step)
        prune_checkpoints(self.output_dir, self.keep_checkpoint_max)
        logging.info("Saved checkpoint for step %d: %s", step, prefix)
        return prefix


def write_eval_results(results, path):
    """Writes `eval_results.txt` as the original: sorted `key = value` lines, atomically.

    The original's values are the Estimator's numpy scalars printed with
    `str()`: float32 metrics, int64 `global_step`. Also logs them under
    "***** Eval results *****" as the original, as results (`bert_tf.logs.result`).
    """
    logs.result("***** Eval results *****")
    lines = []
    for key in sorted(results):
        value = results[key]
        value = np.int64(value) if key == "global_step" else np.float32(value)
        logs.result("  %s = %s", key, str(value))
        lines.append("%s = %s\n" % (key, str(value)))
    return fileio.write_text(path, "".join(lines))
