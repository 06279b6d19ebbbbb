"""Preemption notices: SIGTERM (and Ctrl-C) while training stop it at a checkpoint.

Cloud VMs and TPU hosts get SIGTERM shortly before they are taken away. While
`bert_tf.training.Trainer.train` (or a Keras `fit` with
`bert_tf.training.callbacks.CheckpointCallback`) runs, SIGTERM and a first
SIGINT (Ctrl-C) ask training to stop after the current step: it writes
`model.ckpt-<that step>` (atomically, as every checkpoint), logs one line

  preempted (SIGTERM) at step 137: checkpoint out/model.ckpt-137 written;
  rerun the same command to resume

(one line in the log) and raises `Preempted`, a `SystemExit` with status `PREEMPTED_EXIT_STATUS`
(75, EX_TEMPFAIL of sysexits.h: try again later), so a script that does not
catch it exits with that status, skipping what would have come after
training (evaluation, prediction). Run again, training resumes at that step.
A second Ctrl-C raises `KeyboardInterrupt` at once, without a checkpoint (the
tools exit with `INTERRUPTED_EXIT_STATUS`, 130, as a shell does), unless the
run has already stopped to write its checkpoint (`finishing`): that
checkpoint is then written and named as after one Ctrl-C, so the last line
always tells whether there is one.

`StopRequests` holds the handlers, for the duration of training only (the
handlers before it are put back when it ends; nothing is installed outside
the main thread, where Python cannot install signal handlers). A signal
reaches Python code only between two bytecodes of the main thread, and a
compiled training loop holds that thread for many steps; so the signal is
seen the moment it arrives by a watcher thread on `signal.set_wakeup_fd`,
which calls `on_request` (the trainer sets a `tf.Variable` that its loop
reads between steps).

This module imports no TensorFlow.
"""

import os
import signal
import threading
import _thread

from absl import logging

# EX_TEMPFAIL (sysexits.h): a temporary failure; the same command, run again, goes on.
PREEMPTED_EXIT_STATUS = 75
# A second Ctrl-C: the shell's status of a process stopped by SIGINT (128 + 2).
INTERRUPTED_EXIT_STATUS = 130

_NAMES = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT"}


class Preempted(SystemExit):
    """Training stopped at a preemption notice after writing a checkpoint.

    A `SystemExit` (code `PREEMPTED_EXIT_STATUS`): uncaught, the process exits
    with that status; `except Exception` does not swallow it.

    Attributes:
      message: the one line (`preempted (SIGTERM) at step N: checkpoint ... written; ...`).
      cause: "SIGTERM", "SIGINT" or "a notice on another worker".
      step: the global_step of the checkpoint.
      checkpoint: its prefix.
    """

    def __init__(self, message, cause=None, step=None, checkpoint=None):
        super().__init__(PREEMPTED_EXIT_STATUS)
        self.message = message
        self.cause = cause
        self.step = step
        self.checkpoint = checkpoint

    def __str__(self):
        return self.message


def preempted_message(cause, step, checkpoint):
    """The one line a preempted run logs."""
    return ("preempted (%s) at step %d: checkpoint %s written; rerun the same command to "
            "resume" % (cause, step, checkpoint))


class StopRequests(object):
    """While entered (a context manager): SIGTERM and a first SIGINT request a stop.

    Args:
      on_request: None, or `fn(signal_name)`, called (once, in a watcher
        thread) as soon as the first request arrives.

    Attributes:
      requested: None, or the name of the first signal that asked for a stop
        ("SIGTERM" or "SIGINT").
      installed: whether the handlers are in place (False outside the main thread).
    """

    def __init__(self, on_request=None):
        self.on_request = on_request
        self.requested = None
        self.finishing = False
        self.installed = False
        self._sigints = 0
        self._previous = {}
        self._previous_wakeup_fd = -1
        self._pipe = None
        self._thread = None

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            logging.info("Training outside the main thread: SIGTERM and Ctrl-C are not "
                         "turned into a checkpoint")
            return self
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        self._pipe = (read_fd, write_fd)
        for signum in _NAMES:
            self._previous[signum] = signal.getsignal(signum)
            signal.signal(signum, self._handle)
        self._previous_wakeup_fd = signal.set_wakeup_fd(write_fd)
        self._thread = threading.Thread(target=self._watch, name="bert_tf-stop-requests",
                                        daemon=True)
        self._thread.start()
        self.installed = True
        return self

    def __exit__(self, exc_type, exc, traceback):
        if not self.installed:
            return False
        self.installed = False
        signal.set_wakeup_fd(self._previous_wakeup_fd)
        for signum, handler in self._previous.items():
            # None: a handler not installed from Python; the default is the closest.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        read_fd, write_fd = self._pipe
        os.write(write_fd, b"\0")  # ends the watcher
        self._thread.join(timeout=10)
        os.close(read_fd)
        os.close(write_fd)
        return False

    def finish(self):
        """Training has stopped for the requested checkpoint, which is being written: a
        second Ctrl-C from now on lets it be written (the run then ends as after one)."""
        self.finishing = True

    def _handle(self, signum, frame):  # pylint: disable=unused-argument
        """The Python-level handler (main thread): a second Ctrl-C raises KeyboardInterrupt."""
        if signum == signal.SIGINT and self._sigints >= 2 and not self.finishing:
            raise KeyboardInterrupt

    def _watch(self):
        """The watcher thread: reads the signal numbers CPython writes to the wakeup fd."""
        read_fd = self._pipe[0]
        while True:
            try:
                data = os.read(read_fd, 64)
            except OSError:
                return
            for signum in data:
                if signum == 0:
                    return
                if self._previous_wakeup_fd >= 0:  # another's wakeup fd (an event loop's)
                    try:
                        os.write(self._previous_wakeup_fd, bytes([signum]))
                    except OSError:
                        pass
                if signum in _NAMES:
                    self._request(signum)

    def _request(self, signum):
        name = _NAMES[signum]
        if signum == signal.SIGINT:
            self._sigints += 1
            if self._sigints == 2:
                if self.finishing:
                    logging.warning("SIGINT again: the checkpoint is already being written; "
                                    "the run stops right after it")
                else:
                    logging.warning("SIGINT again: stopping at once, without a checkpoint")
                    _thread.interrupt_main()  # runs `_handle` in the main thread, which raises
                return
        if self.requested is not None:
            return
        self.requested = name
        logging.warning("%s received: stopping after the current step to write a checkpoint%s",
                        name, "; Ctrl-C again stops at once, without one"
                        if signum == signal.SIGINT else "")
        if self.on_request is not None:
            self.on_request(name)
