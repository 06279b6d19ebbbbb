"""TensorFlow's start-up lines on file descriptor 2, and a filter for them (no TF).

TensorFlow writes C++ log lines to file descriptor 2 on its own: the
`WARNING: All log messages before absl::InitializeLog() ...` notice, the
oneDNN and "no CUDA driver" INFO lines and, on a machine without a GPU
driver, a cuInit ERROR line. They come before absl's `InitializeLog`, so
`TF_CPP_MIN_LOG_LEVEL` (even 3) does not hide them; only a filter on the
descriptor does: `LineFilter` decides which bytes to keep, `StderrFilter`
puts it between the descriptor and the real stderr.

The tools filter their whole run (`bert_tf.tools.tf_logs`). A program that
imports bert_tf gets the filter only while TensorFlow starts
(`tensorflow_start`, around `bert_tf._backend`'s `import keras` and the
devices' discovery): TensorFlow's start-up notes and the expected cuInit
failure are dropped, anything else passes, and the descriptor is given back
as it was. `TF_CPP_MIN_LOG_LEVEL` set to 0 or 1 turns it off, as it does the
tools'.
"""

import atexit
import contextlib
import os
import re
import select
import sys
import threading

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

    THREAD_NAME = "bert_tf-stderr-filter"

    @classmethod
    def running(cls):
        """Whether a filter is forwarding in this process (its thread lives)."""
        return any(t.name == cls.THREAD_NAME and t.is_alive() for t in threading.enumerate())

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
        self._thread = threading.Thread(target=self._forward, name=self.THREAD_NAME,
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
        if not self._thread.is_alive():
            os.close(self._real)  # the duplicate, once nothing is left to pass on
        atexit.unregister(self.close)


def gpus_hidden(environ):
    """Whether CUDA_VISIBLE_DEVICES hides every GPU (cuInit's failure is then expected)."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    return visible is not None and visible.strip() in ("", "-1")


def wanted(environ=None):
    """Whether TensorFlow's start-up lines are to be filtered: unless TF_CPP_MIN_LOG_LEVEL
    (as the user or `import bert_tf` set it) asks for INFO or WARNING lines (0 or 1)."""
    environ = os.environ if environ is None else environ
    return environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() not in ("0", "1")


@contextlib.contextmanager
def tensorflow_start(environ=None):
    """Within: descriptor 2 through a `StderrFilter` (if `wanted`), given back after.

    For the start of TensorFlow in a program that did not start it itself:
    `import tensorflow` and the devices' discovery (CUDA's cuInit). Nothing
    is filtered where the descriptor cannot be (no descriptor 2) or is being
    filtered already (a tool's run).
    """
    environ = os.environ if environ is None else environ
    stderr_filter = None
    if wanted(environ) and not StderrFilter.running():
        try:
            stderr_filter = StderrFilter(gpus_hidden=gpus_hidden(environ))
        except OSError:
            stderr_filter = None  # no descriptor 2 to filter
    try:
        yield
    finally:
        if stderr_filter is not None:
            stderr_filter.close()
