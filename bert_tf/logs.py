"""Result lines: what a run found or wrote, marked so that the quietest logs still show them.

`result(msg, *args)` logs through absl at INFO, as every progress line, with
the record marked (`is_result`): the eval results, the SQuAD scores, "Wrote N
predictions to ...". The tools' `--verbosity=-1` (`bert_tf.tools.tf_logs`)
hides progress but keeps warnings, errors and these lines. The library's
other two kinds of INFO-level output: progress (`logging.info`), and the
original's dumps of the first examples' features and of the trainable
variables (`logging.debug`: `--verbosity=1`).

Pure Python and absl (no TF).
"""

from absl import logging

# The attribute that marks a log record as a result.
RESULT = "bert_tf_result"


@logging.skip_log_prefix
def result(msg, *args):
    """Logs `msg % args` at INFO, marked as a result (the caller's file and line in the prefix)."""
    logging.info(msg, *args, extra={RESULT: True})


def is_result(record):
    """Whether a `logging.LogRecord` was logged by `result`."""
    return bool(getattr(record, RESULT, False))
