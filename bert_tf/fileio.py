"""File plumbing shared by the library and the tools: atomic writes, output checks, globbing.

Nothing here imports TensorFlow for a local path, so the tokenizer and the
data package stay light; a `gs://` (or any `scheme://`) path goes through
`tf.io.gfile`, as the original's `tf.gfile` did.
"""

import contextlib
import errno
import os

from absl import logging

from bert_tf.errors import UserError


def is_remote(path):
    """Whether `path` names a file system other than the local one (`gs://...`)."""
    return "://" in str(path)


def temporary_name(path):
    """`<path>.tmp-<pid>`: where a file is written before it is renamed to `path`."""
    return "%s.tmp-%d" % (path, os.getpid())


def makedirs(directory):
    if not directory:
        return
    if is_remote(directory):
        import tensorflow as tf
        tf.io.gfile.makedirs(directory)
    else:
        os.makedirs(directory, exist_ok=True)


def exists(path):
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def isdir(path):
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.isdir(path)
    return os.path.isdir(path)


def open_file(path, mode="r", encoding="utf-8", newline=None):
    """Opens a local file with `open`, a remote one with `tf.io.gfile.GFile`."""
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.GFile(path, mode)
    if "b" in mode:
        return open(path, mode)
    return open(path, mode, encoding=encoding, newline=newline)


def remove_quietly(path):
    try:
        if is_remote(path):
            import tensorflow as tf
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        elif os.path.exists(path):
            os.remove(path)
    except OSError:
        pass


def rename(source, target):
    """Renames `source` to `target`, replacing it (atomic on a local file system)."""
    if is_remote(source) or is_remote(target):
        import tensorflow as tf
        tf.io.gfile.rename(source, target, overwrite=True)
    else:
        os.replace(source, target)


# The errno values of a write that found no room: a full file system, a full
# quota, a file over the process's size limit (`ulimit -f`).
_NO_ROOM_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def no_room_reason(error):
    """The OS's words (`No space left on device`) if `error` is a write that found no room.

    Args:
      error: an exception: an `OSError` (a local write), or a TensorFlow
        `OpError` (`tf.io.gfile`, `tf.io.TFRecordWriter`, `SaveV2`), whose
        message is `<file>; <the OS's words>` and whose class
        (`ResourceExhaustedError` for ENOSPC) does not name the cause alone.

    Returns:
      The str reason, or None for any other error.
    """
    if isinstance(error, OSError) and error.errno in _NO_ROOM_ERRNOS:
        return error.strerror or os.strerror(error.errno)
    text = getattr(error, "message", None)
    if isinstance(text, str) and type(error).__module__.startswith("tensorflow"):
        for number in _NO_ROOM_ERRNOS:
            if os.strerror(number) in text:
                return os.strerror(number)
    return None


def no_room_error(path, error):
    """A one-line `UserError` naming `path` if `error` is a write that found no room, else None.

    A full disk is the user's to fix (free space, another output path), so it
    is reported as one line instead of a traceback.
    """
    reason = no_room_reason(error)
    if reason is None:
        return None
    return UserError("%s: could not be written: %s" % (path, reason))


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8", newline=None):
    """Writes `path` all at once: to `<path>.tmp-<pid>`, renamed when the block ends.

    If the block raises, the temporary file is removed and `path` is left as it
    was, so a reader never sees a half-written file under the final name. A
    write that finds no room (a full disk) raises a one-line `UserError` naming
    `path` and the OS's words (`no_room_error`).

    Example:
      with atomic_write("/tmp/out/eval_results.txt") as f:
          f.write("eval_accuracy = 0.84\n")
    """
    makedirs(os.path.dirname(str(path)))
    tmp = temporary_name(path)
    try:
        with open_file(tmp, mode, encoding=encoding, newline=newline) as f:
            yield f
        rename(tmp, path)
    except Exception as e:  # pylint: disable=broad-except
        failure = no_room_error(path, e)
        if failure is None:
            raise
        raise failure from e
    finally:
        remove_quietly(tmp)


def write_text(path, text):
    """Writes the str `text` to `path` atomically (UTF-8, newlines as given)."""
    with atomic_write(path, "w", newline="") as f:
        f.write(text)
    return path


def listdir(directory):
    """The names in `directory` (a remote listing's without its trailing "/"), or None."""
    if not isdir(directory):
        return None
    if is_remote(directory):
        import tensorflow as tf
        return set(name.rstrip("/") for name in tf.io.gfile.listdir(directory))
    return set(os.listdir(directory))


class InputFiles(object):
    """The files a run writes in its output directory before it trains; removed if it fails first.

    A run converts its data to files in `output_dir` (the fine-tuning runs'
    `train.tf_record`, `eval.tf_record`, `predict.tf_record`) before training,
    evaluation or prediction start. Used as a context manager around the run,
    with `add` naming each such file, it leaves `output_dir` as it found it
    when the run fails in that phase (a bad data file found while converting,
    a checkpoint that cannot be read): when the block raises,

      * if `output_dir` holds a new entry that is not an added file (a
        checkpoint, a summary, a result: the run has produced something),
        nothing is removed: a run that fails at evaluation after hours of
        training keeps its checkpoints;
      * otherwise the added files this run created are removed, then
        `output_dir` and the parents it created, if that leaves them empty.

    An entry that was there when the block began is never removed (a resumed
    run's checkpoints and records). The files themselves are written
    atomically (`atomic_write`), so none is ever left half-written.

    Example:
      with fileio.InputFiles(output_dir) as inputs:
          write_records(inputs.add(os.path.join(output_dir, "train.tf_record")))
          train(...)

    Attributes:
      enabled: whether a failure removes anything; a run sets it False in a
        process that is not the chief (it shares the chief's output_dir).
    """

    def __init__(self, directory):
        self.directory = str(directory)
        self.enabled = True
        self._names = set()
        self._before = None
        self._created = []

    def __enter__(self):
        self._before = listdir(self.directory)
        if self._before is None and not exists(self.directory):
            # The directories the run will create: output_dir and its missing parents.
            path = self.directory if is_remote(self.directory) else os.path.abspath(
                self.directory)
            self._created.append(path)
            parent = os.path.dirname(path)
            while not is_remote(path) and parent != path and not os.path.lexists(parent):
                self._created.append(parent)
                path, parent = parent, os.path.dirname(parent)
        return self

    def add(self, path):
        """Names `path` (a file in the directory) as one of the run's inputs; returns it."""
        self._names.add(os.path.basename(str(path)))
        return path

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is not None and self.enabled:
            try:
                self._remove_new_inputs()
            except Exception as e:  # pylint: disable=broad-except
                # The run's own error is the one to report.
                logging.warning("Could not remove the inputs written in %s: %s",
                                self.directory, e)
        return False

    def _is_input(self, name):
        # An added file, or a temporary file of one (`<name>.tmp-<pid>`).
        return any(name == added or name.startswith(added + ".tmp-") for added in self._names)

    def _remove_new_inputs(self):
        new = sorted((listdir(self.directory) or set()) - (self._before or set()))
        if any(not self._is_input(name) for name in new):
            return
        for name in new:
            remove_quietly(os.path.join(self.directory, name))
        if new:
            logging.info("Removed what this run wrote in %s before it failed: %s",
                         self.directory, ", ".join(new))
        for directory in self._created:
            if is_remote(directory):
                continue  # an object store has no directory to remove
            try:
                os.rmdir(directory)
            except FileNotFoundError:
                continue
            except OSError:
                return  # not empty (or not ours to remove): its parents stay too


def check_writable(path, flag, directory=True):
    """Raises a one-line `UserError` if nothing can be written at `path`; creates nothing.

    The tools call it on their output flags before any work, so a mistyped
    output path fails at once instead of after training.

    Args:
      path: the flag's value: a directory (`--output_dir`), or a file
        (`--output_file`) whose directory is created when it is written.
      flag: the flag's name, for the message.
      directory: whether `path` is a directory (else a file).

    Raises:
      UserError: `path` is empty; it (or, for a file, its directory) is an
        existing entry of the wrong kind; an existing ancestor is a file; or
        the nearest existing directory is not writable. A remote path
        (`gs://...`) is not checked: its permissions show only on writing.
    """
    if not path:
        raise UserError("--%s: no path given" % flag)
    if is_remote(path):
        return
    full = os.path.abspath(os.path.expanduser(str(path)))
    if directory:
        if os.path.exists(full) and not os.path.isdir(full):
            raise UserError("--%s=%s is a file, not a directory" % (flag, path))
        parent = full
    else:
        if os.path.isdir(full):
            raise UserError("--%s=%s is a directory, not a file" % (flag, path))
        if os.path.exists(full) and not os.access(full, os.W_OK):
            raise UserError("--%s=%s: the file is not writable" % (flag, path))
        parent = os.path.dirname(full)
    existing = parent
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError("--%s=%s: %s is a file, not a directory" % (flag, path, existing))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError("--%s=%s: the directory %s is not writable" % (flag, path, existing))


def split_comma_list(value):
    """`"a, b,,c"` -> `["a", "b", "c"]` (the original's comma-separated flags)."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def check_local_patterns(patterns, flag="input_file"):
    """Every local name or glob pattern of `patterns` (a list, or one comma-separated str,
    as `expand_files`) matches something, checked without TensorFlow (Python's glob):
    the tools check their inputs so before TensorFlow loads. Remote patterns (gs://) are
    left to `expand_files`.

    Raises:
      UserError: `expand_files`'s line for a local pattern that matches no file.
    """
    import glob  # pylint: disable=import-outside-toplevel
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    for pattern in patterns:
        if pattern and not is_remote(pattern) and not glob.glob(pattern):
            raise UserError(_NO_MATCH % (flag, pattern))


_NO_MATCH = "--%s: %r matches no file"


def expand_files(patterns, flag="input_file", allow_directories=False):
    """Expands file names and glob patterns, comma-separated as the original's flags.

    Args:
      patterns: a list of str names/patterns, or one comma-separated str.
      flag: the flag named in errors.
      allow_directories: whether a match may be a directory.

    Returns:
      A list of paths, each pattern's matches in `tf.io.gfile.glob` order.

    Raises:
      UserError: a pattern matches no file (the original skipped it silently),
        a match is a directory, or no pattern is given at all.
    """
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    files = []
    for pattern in patterns:
        # Split on "," without stripping, as the original; an empty entry (as
        # from a trailing comma) matches nothing and is skipped.
        if not pattern:
            continue
        if (not any(c in pattern for c in "*?[") and not is_remote(pattern)
                and os.path.isfile(pattern)):
            # An existing local file without glob characters is its own only
            # match (as tf.io.gfile.glob returns it), found without TensorFlow.
            files.append(pattern)
            continue
        # The original globbed with tf.gfile.Glob; its order is kept (it
        # decides the order of the documents create_pretraining_data reads).
        import tensorflow as tf
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            raise UserError(_NO_MATCH % (flag, pattern))
        if not allow_directories:
            for name in matches:
                if isdir(name):
                    raise UserError("--%s: %r is a directory, not a file" % (flag, name))
        files.extend(matches)
    if not files:
        raise UserError("--%s: no input files given" % flag)
    return files
