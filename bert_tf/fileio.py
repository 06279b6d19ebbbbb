"""File plumbing shared by the library and the tools: atomic writes, output checks, globbing.

Nothing here imports TensorFlow for a local path, so the tokenizer and the
data package stay light; a `gs://` (or any `scheme://`) path goes through
`tf.io.gfile`, as the original's `tf.gfile` did.
"""

import contextlib
import os

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


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8", newline=None):
    """Writes `path` all at once: to `<path>.tmp-<pid>`, renamed when the block ends.

    If the block raises, the temporary file is removed and `path` is left as it
    was, so a reader never sees a half-written file under the final name.

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
    finally:
        remove_quietly(tmp)


def write_text(path, text):
    """Writes the str `text` to `path` atomically (UTF-8, newlines as given)."""
    with atomic_write(path, "w", newline="") as f:
        f.write(text)
    return path


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
            raise UserError("--%s: %r matches no file" % (flag, pattern))
        if not allow_directories:
            for name in matches:
                if isdir(name):
                    raise UserError("--%s: %r is a directory, not a file" % (flag, name))
        files.extend(matches)
    if not files:
        raise UserError("--%s: no input files given" % flag)
    return files
