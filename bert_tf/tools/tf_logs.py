"""The tools' stderr: bert_tf's progress and errors, not TensorFlow's internals.

TensorFlow writes C++ log lines to file descriptor 2 on its own: the
`WARNING: All log messages before absl::InitializeLog() ...` notice, the
oneDNN and "no CUDA driver" INFO lines and, on a machine without a GPU
driver, a cuInit ERROR line. They come before absl's `InitializeLog`, so
`TF_CPP_MIN_LOG_LEVEL` (even 3) does not hide them; only a filter on the
descriptor does. TensorFlow's and Keras' Python INFO lines (the SavedModel
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

import atexit
import logging
import os
import re
import select
import sys
import threading

from absl import logging as absl_logging

import bert_tf
from bert_tf import logs

# `I1202 11:53:29.342553 140160656567168 extract_features.py:72] ` (Python's absl) or
# `I0000 00:00:1796212248.377252   28245 port.cc:153] ` (C++, before InitializeLog; the
# seconds are then the epoch).
_LOG_HEADER = re.compile(rb"([IWEF])\d{4} \d\d:\d\d:\d+(?:\.\d+)?\s+\d+ ([^\s:\]]+):\d+\] ?")
# What the first bytes of such a header can be while its line is still being written.
_LOG_HEADER_START = re.compile(rb"[IWEF][\d :.]*(?:(?<=\d )[\w.+-]*(?::\d*)?)?")
_BEFORE_INITIALIZE_LOG = (
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR")
_NO_CUDA_DRIVER = re.compile(rb"Could not find cuda drivers on your machine")
_CUINIT_FAILED = re.compile(rb"failed call to cuInit")
_ONEDNN_DTYPE_NOTE = re.compile(rb"oneDNN supports DT_\w+ only on platforms with ")

# A partial line that could still become a TensorFlow line waits this long for
# the rest before it is passed on as it is (a prompt, a progress bar).
PARTIAL_LINE_WAIT_S = 0.2
# ... and at most this many bytes: a log header is short.
_MAX_UNDECIDED = 4096

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


class LineFilter(object):
    """Which bytes of a stream of C++ and Python log lines to keep (no I/O, no threads).

    `feed` takes the bytes as they were written, in pieces of any size, and
    returns the bytes to pass on: whole lines are kept or dropped; a line is
    passed on as soon as its first bytes show it is not a line to drop (so a
    partial line, a prompt or a progress bar, is not held back), and a line
    longer than any buffer passes whole.
    """

    def __init__(self, gpus_hidden=False):
        """`gpus_hidden`: CUDA_VISIBLE_DEVICES hides every GPU (cuInit's failure is expected)."""
        self._gpus_hidden = gpus_hidden
        self._no_cuda_driver = False
        self._pending = b""   # the start of a line not yet decided
        self._rest = None     # the rest of the current line: None (at a line start), "keep", "drop"

    def keep(self, line):
        """Whether to keep one whole line (bytes, with or without its newline)."""
        if line.startswith(_BEFORE_INITIALIZE_LOG):
            return False
        header = _LOG_HEADER.match(line)
        if header is None:
            return True
        level, source = header.groups()
        if source.endswith(b".py"):
            return True  # Python's absl: its own levels and filters decide
        message = line[header.end():]
        if _NO_CUDA_DRIVER.match(message):
            self._no_cuda_driver = True
        if level in (b"I", b"W"):
            return False
        if level == b"E":
            if _CUINIT_FAILED.match(message):
                # Expected without a driver or with every GPU hidden; a real error otherwise.
                return not (self._no_cuda_driver or self._gpus_hidden)
            if _ONEDNN_DTYPE_NOTE.match(message):
                return False
        return True

    def _decide_start(self, start):
        """"keep", "drop" or None (undecided) for the first bytes of a line, no newline yet."""
        if start.startswith(_BEFORE_INITIALIZE_LOG):
            return "drop"
        header = _LOG_HEADER.match(start)
        if header is not None:
            level, source = header.groups()
            if source.endswith(b".py") or level == b"F":
                return "keep"
            if len(start) > _MAX_UNDECIDED:
                return "keep" if self.keep(start) else "drop"
            return None  # TensorFlow writes a line at once: its message decides
        if len(start) > _MAX_UNDECIDED:
            return "keep"
        if _BEFORE_INITIALIZE_LOG.startswith(start) or _LOG_HEADER_START.fullmatch(start):
            return None
        return "keep"

    def waiting(self):
        """Whether the start of a line is held back, waiting for more bytes."""
        return bool(self._pending)

    def feed(self, data):
        """The bytes of `data` to pass on (some may be held back until the line is known)."""
        out = []
        while data:
            if self._rest is not None:
                end = data.find(b"\n")
                piece, data = (data, b"") if end < 0 else (data[:end + 1], data[end + 1:])
                if self._rest == "keep":
                    out.append(piece)
                if end >= 0:
                    self._rest = None
                continue
            line = self._pending + data
            end = line.find(b"\n")
            if end >= 0:
                self._pending, data = b"", line[end + 1:]
                if self.keep(line[:end + 1]):
                    out.append(line[:end + 1])
                continue
            self._pending, data = b"", b""
            decision = self._decide_start(line)
            if decision is None:
                self._pending = line
            else:
                self._rest = decision
                if decision == "keep":
                    out.append(line)
        return b"".join(out)

    def flush(self):
        """Decides a held-back line start as it stands (no more bytes came): what to pass on."""
        start, self._pending = self._pending, b""
        if not start:
            return b""
        self._rest = "keep" if self.keep(start) else "drop"
        return start if self._rest == "keep" else b""


class StderrFilter(object):
    """Puts a `LineFilter` between file descriptor 2 and the real stderr.

    Descriptor 2 becomes a pipe; a daemon thread reads it and writes the kept
    bytes to (a duplicate of) the real stderr. Everything that writes to
    descriptor 2 goes through it: Python's `sys.stderr`, TensorFlow's C++
    code, processes the tool starts. `close` (also at exit) puts the real
    stderr back and passes on what the pipe still holds.
    """

    def __init__(self, fd=2, gpus_hidden=False):
        self._fd = fd
        self._lines = LineFilter(gpus_hidden=gpus_hidden)
        self._pid = os.getpid()
        self._closed = False
        self._flush_python_streams()
        self._real = os.dup(fd)
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        self._read_end = read_end
        self._thread = threading.Thread(target=self._forward, name="bert_tf-stderr-filter",
                                        daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def _write(self, data):
        while data:
            try:
                written = os.write(self._real, data)
            except InterruptedError:
                continue
            except OSError:
                return  # the real stderr is gone: nothing to write to
            data = data[written:]

    def _forward(self):
        while True:
            if self._lines.waiting():
                ready, _, _ = select.select([self._read_end], [], [], PARTIAL_LINE_WAIT_S)
                if not ready:
                    self._write(self._lines.flush())
                    continue
            try:
                data = os.read(self._read_end, 65536)
            except InterruptedError:
                continue
            except OSError:
                data = b""
            if not data:
                self._write(self._lines.flush())
                os.close(self._read_end)
                return
            self._write(self._lines.feed(data))

    @staticmethod
    def _flush_python_streams():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass

    def close(self, timeout=2.0):
        """Puts the real stderr back on the descriptor and passes on what the pipe holds.

        Waits up to `timeout` seconds for the pipe to drain (longer only if a
        process the tool started still holds the pipe open).
        """
        if self._closed or os.getpid() != self._pid:
            return  # a forked child: the parent's filter is not its own
        self._closed = True
        self._flush_python_streams()
        os.dup2(self._real, self._fd)  # the last write end in this process closes
        self._thread.join(timeout)


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


def _gpus_hidden(environ):
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    return visible is not None and visible.strip() in ("", "-1")


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
    return StderrFilter(gpus_hidden=_gpus_hidden(environ))
