"""The output directory's life cycle, as the Estimator kept it (original: `model_dir`).

  output_dir/model.ckpt-<global_step>.{index,data-00000-of-00001}
  output_dir/checkpoint            the state file: the newest last
  output_dir/eval_results.txt      `key = value` lines
  output_dir/events.out.tfevents.* training summaries; eval summaries in eval/

Every file is written under a temporary name and renamed, so a process killed
at any point leaves only complete files under the real names.
"""

import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoint as checkpoint_lib
from bert_tf import fileio

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
