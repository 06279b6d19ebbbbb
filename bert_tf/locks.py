"""One run per output: a lock file that a second run on the same output refuses (no TensorFlow).

A run takes `<output_dir>/.bert_tf.lock` (or `<output_file>.lock`) before it
writes, and removes it when it ends, by success or by an exception. A second
run started on the same output while the first one lives refuses with one line
(`UserError`) naming the holder's host, process id and start time, instead of
interleaving its checkpoints or records with the first one's.

  * The lock file is created atomically (`O_CREAT | O_EXCL`) and holds JSON:
    `{"host", "pid", "started", "command", "what"}`.
  * A lock of a process that is gone (same host, `os.kill(pid, 0)` finds no
    such process: a run killed with `kill -9`) is taken over, with a warning.
  * A lock of another host is refused: this host cannot tell whether that run
    still lives. The message says which file to remove once it has ended.
  * Only local paths are locked. A `gs://` (any `scheme://`) output is not:
    an object store has no atomic create-if-absent that every file system
    behind `tf.io.gfile` offers, so such a run proceeds without a lock.

Example:
  with locks.OutputLock(output_dir, "run_classifier"):
      train(...)
"""

import datetime
import errno
import json
import os
import socket
import sys
import time

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError

# The lock of an output directory: hidden, so that it is no numbered version
# directory to TF Serving and no checkpoint to anything that lists output_dir.
LOCK_NAME = ".bert_tf.lock"
# A lock file read while its holder is still writing it (between the create
# and the write, microseconds) is read again this many times, this far apart.
_READ_ATTEMPTS = 5
_READ_PAUSE_S = 0.1


def pid_is_alive(pid):
    """Whether a process `pid` exists on this host (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; it is another user's
    except OSError as e:
        return e.errno != errno.ESRCH
    return True


class OutputLock(object):
    """A context manager holding a run's output (a directory or a file) for this process.

    Args:
      path: the output directory (`<path>/.bert_tf.lock` is the lock), or with
        `is_file` an output file (`<path>.lock`).
      what: the run's name for messages and the lock file ("run_classifier").
      flag: the flag that names `path`, for messages ("output_dir").
      is_file: whether `path` is a file (else a directory).
      enabled: whether to lock at all: False in a process that is not the
        chief of a multi-worker run (every worker runs the same command on
        the chief's output_dir; the chief holds the lock for all of them).
      command: the command line written to the lock (default: `sys.argv`).
      subject: what messages call the output (default: `--<flag>=<path>`).

    On entry the lock file's directory is created if it is missing; if the
    block then raises, the directories the lock created are removed again
    when empty, so a run that fails early leaves nothing behind.

    Raises (on entry):
      UserError: another live run on this host, or a run on another host,
        holds the lock; or the lock file cannot be read or created.
    """

    def __init__(self, path, what, flag="output_dir", is_file=False, enabled=True,
                 command=None, subject=None):
        self.path = str(path)
        self.what = what
        self.flag = flag
        self.subject = subject or "--%s=%s" % (flag, self.path)
        self.enabled = enabled and not fileio.is_remote(self.path)
        if is_file:
            self.lock_file = self.path + ".lock"
        else:
            self.lock_file = os.path.join(self.path, LOCK_NAME)
        self._command = command
        self._record = None
        self._created = []

    # ------------------------------------------------------------ entry and exit

    def __enter__(self):
        if self.enabled:
            self._make_parent()
            try:
                self._acquire()
            except BaseException:
                self._remove_created_directories()
                raise
        return self

    def __exit__(self, exc_type, exc, traceback):
        if self._record is not None:
            self._release()
        if exc_type is not None:
            self._remove_created_directories()
        return False

    @property
    def held(self):
        """Whether this process holds the lock now."""
        return self._record is not None

    # ------------------------------------------------------------ acquiring

    def _make_parent(self):
        directory = os.path.dirname(os.path.abspath(self.lock_file))
        missing = []
        while not os.path.lexists(directory):
            missing.append(directory)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        for directory in reversed(missing):
            try:
                os.mkdir(directory)
            except FileExistsError:
                continue  # another process made it just now: not ours to remove
            self._created.append(directory)

    def _new_record(self):
        command = self._command if self._command is not None else sys.argv
        if not isinstance(command, str):
            command = " ".join(str(arg) for arg in command)
        return {"host": socket.gethostname(), "pid": os.getpid(),
                "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "command": command, "what": self.what}

    def _acquire(self):
        record = self._new_record()
        data = json.dumps(record, sort_keys=True).encode("utf-8")
        while True:
            try:
                fd = os.open(self.lock_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._read_holder()
                if holder is None:
                    continue  # removed between our create and our read: try again
                self._take_over_or_refuse(holder)
                continue  # the stale lock is gone: try again
            except OSError as e:
                raise UserError("%s: cannot create the lock file %s: %s"
                                % (self.subject, self.lock_file,
                                   e.strerror or e)) from None
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            self._record = record
            return

    def _read_holder(self):
        """The holder's record; None if the file is gone; refuses an unreadable one."""
        for attempt in range(_READ_ATTEMPTS):
            try:
                with open(self.lock_file, "rb") as f:
                    raw = f.read()
            except FileNotFoundError:
                return None
            except OSError as e:
                raise UserError("%s: cannot read the lock file %s: %s"
                                % (self.subject, self.lock_file,
                                   e.strerror or e)) from None
            try:
                holder = json.loads(raw.decode("utf-8"))
                if isinstance(holder, dict) and isinstance(holder.get("pid"), int):
                    holder["_raw"] = raw
                    return holder
            except ValueError:
                pass
            if attempt + 1 < _READ_ATTEMPTS:
                time.sleep(_READ_PAUSE_S)  # its holder may be writing it this instant
        raise UserError("%s: the lock file %s is not a bert_tf lock (or is damaged); if no "
                        "run is writing to %s, remove it" % (self.subject, self.lock_file,
                                                             self.path))

    def _describe(self, holder):
        return "%s (pid %d on host %s, started %s)" % (
            holder.get("what") or "another run", holder["pid"], holder.get("host", "?"),
            holder.get("started", "?"))

    def _take_over_or_refuse(self, holder):
        """Removes a lock whose process is gone (this host); refuses any other."""
        here = socket.gethostname()
        if holder.get("host") != here:
            raise UserError(
                "%s is locked by %s; this host cannot tell whether that run still runs: "
                "if it has ended, remove %s" % (self.subject, self._describe(holder),
                                                self.lock_file))
        if holder["pid"] == os.getpid() or pid_is_alive(holder["pid"]):
            raise UserError(
                "%s is in use by %s: wait for it to end or choose another --%s (if no "
                "such run is alive, remove %s)" % (self.subject, self._describe(holder),
                                                   self.flag, self.lock_file))
        # Take the stale file aside under a name of our own (a rename is atomic:
        # of two runs taking it over at once, one gets it) and check it is the
        # one we read, not a live run's lock made meanwhile.
        aside = "%s.stale-%d" % (self.lock_file, os.getpid())
        try:
            os.rename(self.lock_file, aside)
        except FileNotFoundError:
            return  # another run took it over first
        try:
            with open(aside, "rb") as f:
                same = f.read() == holder["_raw"]
            if not same:
                # A new lock, made after our read: put it back where it was.
                try:
                    os.link(aside, self.lock_file)
                except FileExistsError:
                    pass
                return
        finally:
            fileio.remove_quietly(aside)
        logging.warning("Taking over the lock of %s: %s has ended (its lock %s was left behind)",
                        self.path, self._describe(holder), self.lock_file)

    # ------------------------------------------------------------ releasing

    def _release(self):
        record, self._record = self._record, None
        if os.getpid() != record["pid"]:
            return  # a forked child: the lock is its parent's
        try:
            with open(self.lock_file, "rb") as f:
                current = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError):
            return  # gone, or replaced by something that is not ours
        if current == record:
            fileio.remove_quietly(self.lock_file)
        else:
            logging.warning("The lock %s is no longer this run's: left in place", self.lock_file)

    def _remove_created_directories(self):
        created, self._created = self._created, []
        for directory in reversed(created):
            try:
                os.rmdir(directory)
            except OSError:
                return  # not empty (the run wrote something): its parents stay too
