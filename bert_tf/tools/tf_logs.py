"""The tools' stderr: bert_tf's progress and errors, not TensorFlow's internals.

TensorFlow writes C++ log lines to file descriptor 2 on its own: the
`WARNING: All log messages before absl::InitializeLog() ...` notice, the
oneDNN and "no CUDA driver" INFO lines and, on a machine without a GPU
driver, a cuInit ERROR line. They come before absl's `InitializeLog`, so
`TF_CPP_MIN_LOG_LEVEL` (even 3) does not hide them; only a filter on the
descriptor does (`bert_tf.tf_stderr`, which a program that imports bert_tf
gets while TensorFlow starts). TensorFlow's and Keras' Python INFO lines (the SavedModel
writer's "contains input name(s) ... with unsupported characters", "Assets
written to") go through the same absl logger as bert_tf's progress lines.

`configure` (called by `bert_tf.tools.cli.Tool.main`, before TensorFlow loads) puts
a `StderrFilter` on descriptor 2 and a `PythonLogFilter` on absl's handler,
unless the user asks for everything: absl's `--verbosity=1` (or higher), or
`TF_CPP_MIN_LOG_LEVEL` set to 0 or 1. The levels (`LEVELS`, in every tool's
`--help`): `--verbosity=-1` keeps warnings, errors and the results
(`bert_tf.logs.result`); the default (0) adds bert_tf's INFO lines, the
settings and progress; `--verbosity=1` adds absl's DEBUG lines (the
original's dumps of the first examples and of the trainable variables) and
TensorFlow's own lines. Kept lines pass byte for byte: tracebacks,
`error: ...`, real C++ errors, every absl Python WARNING and ERROR.

This module imports no TensorFlow.
"""

import logging
import os
import sys

from absl import logging as absl_logging

import bert_tf
from bert_tf import logs
from bert_tf.tf_stderr import LineFilter  # noqa: F401  (the tools' names for them)
from bert_tf.tf_stderr import StderrFilter
from bert_tf.tf_stderr import gpus_hidden


# Python INFO records from these packages are TensorFlow's internals.
QUIET_PACKAGES = frozenset(
    ["tensorflow", "tensorflow_text", "tensorboard", "keras", "tf_keras", "absl"])

# What each --verbosity shows (every tool's --help ends with it).
LEVELS = """\
logs (stderr), by --verbosity (-v):
  -1: warnings, errors and the results (eval results, scores, the files written)
   0: (the default) also the settings, the progress and each phase of the run
   1: also the original's dumps (the first examples' features, the trainable
      variables) and TensorFlow's own log lines"""


class PythonLogFilter(logging.Filter):
    """Drops Python log records below WARNING from TensorFlow, Keras and absl themselves.

    A record's package is the first name of its module's path below the
    `sys.path` entry it was imported from; bert_tf's records (and any other
    package's) pass. With `level` (`--verbosity=-1`: WARNING), a record below
    it passes only if it is a result (`bert_tf.logs.result`).
    """

    def __init__(self, level=None):
        super().__init__()
        self.level = level
        self._quiet = {}  # pathname -> bool

    def _from_quiet_package(self, pathname):
        quiet = self._quiet.get(pathname)
        if quiet is None:
            path = os.path.abspath(pathname or "")
            below = [os.path.relpath(path, entry) for entry in
                     (os.path.abspath(p or os.curdir) for p in sys.path)
                     if path.startswith(os.path.join(entry, ""))]
            package = min(below, key=len).split(os.sep)[0] if below else ""
            quiet = self._quiet[pathname] = package in QUIET_PACKAGES
        return quiet

    def filter(self, record):
        if self.level is not None and record.levelno < self.level:
            return logs.is_result(record)
        if record.levelno >= logging.WARNING:
            return True
        if record.name == "tensorflow" or record.name.startswith("tensorflow."):
            return False
        return not self._from_quiet_package(record.pathname)


def configure(verbosity=None, environ=None, absl_handler=None):
    """Sets up the tools' logs; call before TensorFlow loads.

    Args:
      verbosity: absl's `--verbosity` when the user passed it, else None.
        None or 0: bert_tf's INFO progress, TensorFlow's internals hidden;
        1 or more: everything, absl's DEBUG lines included (no filter;
        TensorFlow's C++ INFO lines too unless TF_CPP_MIN_LOG_LEVEL says
        otherwise); -1 or less: warnings (-1) or errors (-2) and the results
        (absl stays at INFO, the filter passes only the results below that),
        TensorFlow's internals hidden.
      environ: the environment (default `os.environ`); TF_CPP_MIN_LOG_LEVEL
        set to 0 or 1 there turns the descriptor filter off; unset, it is set
        here (2, or 0 with `verbosity` >= 1).
      absl_handler: the handler to put the `PythonLogFilter` on (default
        absl's).

    Returns:
      The `StderrFilter` on descriptor 2, or None.
    """
    if environ is None:
        environ = os.environ
        # `import bert_tf` has given it a default already, unless the user had.
        defaulted = bert_tf._tf_log_level_defaulted  # pylint: disable=protected-access
    else:
        defaulted = False
    verbose = verbosity is not None and verbosity >= 1
    if defaulted or "TF_CPP_MIN_LOG_LEVEL" not in environ:
        environ["TF_CPP_MIN_LOG_LEVEL"] = "0" if verbose else "2"
    if verbose:
        return None
    absl_logging.set_verbosity(absl_logging.INFO)
    level = absl_logging.converter.absl_to_standard(verbosity) if verbosity else None
    handler = absl_handler or absl_logging.get_absl_handler()
    for old in [f for f in handler.filters if isinstance(f, PythonLogFilter)]:
        handler.removeFilter(old)
    handler.addFilter(PythonLogFilter(level))
    if environ["TF_CPP_MIN_LOG_LEVEL"].strip() in ("0", "1"):
        return None
    return StderrFilter(gpus_hidden=gpus_hidden(environ))
