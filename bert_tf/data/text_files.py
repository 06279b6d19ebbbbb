"""Input reading: text files as the original reads them, as documents or as shards.

The reading half of the original's `create_training_instances` (P:179-203,
P = pip bert-tensorflow 1.0.4) and `main`'s glob loop (P:415-417): one
sentence per line, a blank line between documents, all input files one
stream. Besides, sharded mode's shards as byte ranges of the input
(`plan_shards`, `read_shard_documents`) and its default shard size
(`default_documents_per_shard`). create_pretraining_data
(`bert_tf.tasks.pretraining.data`, whose `tokens.py` tokenizes these lines)
and the vocab learner (`bert_tf.data.vocab`) read their input through it.
"""

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError

_READ_BLOCK_BYTES = 1 << 24


# --------------------------------------------------------------------------
# Input reading.
# --------------------------------------------------------------------------

class DecodeStats(object):
    """Counts input lines that were not valid UTF-8."""

    def __init__(self):
        self.bad_lines = 0
        self.first_bad = None


def iter_lines(input_file, decode_stats=None):
    """Yields the lines of `input_file` as the original reads them.

    The original reads with `tf.gfile.GFile(input_file, "r").readline()`. Its
    C++ reader splits on "\\n" only and drops every "\\r" byte (so "a\\rb" reads
    as "ab", and "\\r\\n" ends a line like "\\n"); a last line without "\\n"
    that is empty once its "\\r"s are dropped is the end of the file.

    Port note: the original decodes each line as strict UTF-8, so a file with
    bytes that are not UTF-8 stops it with a `UnicodeDecodeError` traceback
    under TF 2.21 (its `convert_to_unicode(..., "ignore")` never sees bytes).
    Here such bytes are dropped, as `convert_to_unicode` intends, and a warning
    names the file and the number of lines affected.

    Args:
      input_file: str, a local path or any path `tf.io.gfile` can open.
      decode_stats: optional `DecodeStats` to count undecodable lines in.

    Yields:
      str lines, each ending in "\\n" except possibly the last.
    """
    for _, line in iter_lines_at(input_file, decode_stats):
        yield line


def _open_binary(input_file):
    if "://" in input_file:
        import tensorflow as tf  # pylint: disable=g-import-not-at-top
        return tf.io.gfile.GFile(input_file, "rb")
    return open(input_file, "rb")


def iter_lines_at(input_file, decode_stats=None, start=0, end=None):
    """`iter_lines` with each line's byte offset, over the bytes [start, end) of the file.

    Args:
      input_file: str, a local path or any path `tf.io.gfile` can open.
      decode_stats: optional `DecodeStats`; its line numbers count from
        `start`, so they are the file's own only for `start=0`.
      start: int, the offset of a line start (0 or just after a "\\n").
      end: int or None (the end of the file); the offset of a line start.

    Yields:
      (offset, line): the offset of the line's first byte in the file, and
      the line as `iter_lines` yields it.
    """
    offset = start
    line_number = 0
    for raw, ended in _raw_lines(input_file, start, end):
        line_number += 1
        if ended:
            yield offset, _decode_line(raw + b"\n", input_file, line_number, decode_stats)
            offset += len(raw) + 1
        else:
            line = _decode_line(raw, input_file, line_number, decode_stats)
            if line:
                yield offset, line


def _raw_lines(input_file, start=0, end=None):
    """The lines of the bytes [start, end) of a file, read in blocks.

    Yields:
      (raw, ended): the line's bytes without its "\\n", and whether it had
      one (only a last line may not; an empty one is not yielded).
    """
    with _open_binary(input_file) as f:
        if start:
            f.seek(start)
        remaining = None if end is None else end - start
        pending = b""
        while remaining is None or remaining > 0:
            size = _READ_BLOCK_BYTES if remaining is None else min(_READ_BLOCK_BYTES, remaining)
            block = f.read(size)
            if not block:
                break
            if remaining is not None:
                remaining -= len(block)
            if pending:
                block = pending + block
            lines = block.split(b"\n")
            pending = lines.pop()
            for raw in lines:
                yield raw, True
        if pending:
            yield pending, False


def _decode_line(raw, input_file, line_number, decode_stats):
    # Port note: invalid UTF-8 bytes are dropped (with a warning) instead of
    # stopping with the original's UnicodeDecodeError; see `iter_lines`.
    if b"\r" in raw:
        raw = raw.replace(b"\r", b"")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if decode_stats is not None:
            decode_stats.bad_lines += 1
            if decode_stats.first_bad is None:
                decode_stats.first_bad = (input_file, line_number)
        return raw.decode("utf-8", "ignore")


def warn_decode(decode_stats):
    if decode_stats.bad_lines:
        logging.warning(
            "%d input line(s) were not valid UTF-8 (first: %s line %d); their "
            "undecodable bytes were dropped (the original stops with a "
            "UnicodeDecodeError).", decode_stats.bad_lines,
            decode_stats.first_bad[0], decode_stats.first_bad[1])


def expand_input_patterns(patterns):
    """`--input_file`'s comma-separated names and globs, as the original's `tf.gfile.Glob` loop.

    Port note: a pattern that matches no file is an error (the original
    silently skipped it), as is a directory.

    A name without glob characters that is an existing local file is its
    own only match, found without importing TensorFlow.
    """
    return fileio.expand_files(patterns, flag="input_file")


# --------------------------------------------------------------------------
# Documents (not tokenized), and sharded mode's shards as byte ranges.
# --------------------------------------------------------------------------

def iter_raw_documents(input_files, decode_stats=None):
    """Yields documents as lists of stripped, non-empty lines (no tokenizing).

    The document boundaries are the original's (blank lines only; files are
    one stream). A document whose lines all tokenize to nothing is dropped
    later, as the original drops it.

    Raises:
      UserError: an input file has no non-blank line.
    """
    document = []
    for input_file in input_files:
        non_blank = 0
        for line in iter_lines(input_file, decode_stats):
            line = line.strip()
            if not line:
                if document:
                    yield document
                    document = []
                continue
            document.append(line)
            non_blank += 1
        if not non_blank:
            raise UserError("input file %s has no text (only blank lines)" % input_file)
    if document:
        yield document


def plan_shards(input_files, documents_per_shard, decode_stats=None):
    """The sharded mode's shards as byte ranges of the input files, read once.

    Shard k holds documents k * D .. (k + 1) * D - 1 of the stream (D =
    `documents_per_shard`, the document boundaries of `iter_raw_documents`),
    so a worker that reads shard k's byte ranges with `read_shard_documents`
    gets the documents the sharded mode hands to shard k, without the corpus
    passing through the process that plans.

    Args:
      input_files: list of str files, read in order as one stream.
      documents_per_shard: int > 0.
      decode_stats: optional `DecodeStats`.

    Yields:
      (shard_index, segments): segments is a tuple of (file, start, end), the
      byte range [start, end) of `file` (end None: to the end of the file),
      in stream order; a shard's first range starts at its first document's
      first line, its last range ends where the next shard's begins.

    Raises:
      UserError: an input file has no non-blank line.
    """
    count = 0           # documents in the shard being planned
    first = None        # (file index, offset) of its first document
    shard_index = 0
    in_document = False
    for file_index, input_file in enumerate(input_files):
        non_blank = 0
        for offset, line in iter_lines_at(input_file, decode_stats):
            if not line.strip():
                in_document = False
                continue
            non_blank += 1
            if in_document:
                continue
            in_document = True
            if count == documents_per_shard:
                yield shard_index, _segments(input_files, first, (file_index, offset))
                shard_index += 1
                count = 0
            if not count:
                first = (file_index, offset)
            count += 1
        if not non_blank:
            raise UserError("input file %s has no text (only blank lines)" % input_file)
    if count:
        yield shard_index, _segments(input_files, first, None)


def _segments(input_files, first, stop):
    """The byte ranges from `first` (file index, offset) up to `stop` (or the end)."""
    last_file, stop_offset = (len(input_files) - 1, None) if stop is None else stop
    segments = []
    for file_index in range(first[0], last_file + 1):
        start = first[1] if file_index == first[0] else 0
        end = stop_offset if file_index == last_file else None
        if end is not None and end <= start:
            continue
        segments.append((input_files[file_index], start, end))
    return tuple(segments)


def read_shard_documents(segments):
    """A planned shard's documents (see `plan_shards`), as `iter_raw_documents` yields them."""
    documents = []
    document = []
    for input_file, start, end in segments:
        for _, line in iter_lines_at(input_file, None, start, end):
            line = line.strip()
            if not line:
                if document:
                    documents.append(document)
                    document = []
                continue
            document.append(line)
    if document:
        documents.append(document)
    return documents


# --------------------------------------------------------------------------
# Counting documents: sharded mode's default shard size.
# --------------------------------------------------------------------------

# Sharded mode's shard size when none is given: DEFAULT_DOCUMENTS_PER_SHARD
# documents, or for a corpus of fewer than DEFAULT_SHARDS such shards, a
# DEFAULT_SHARDS-th of its documents (never under MIN_DOCUMENTS_PER_SHARD).
DEFAULT_DOCUMENTS_PER_SHARD = 10000
DEFAULT_SHARDS = 16
MIN_DOCUMENTS_PER_SHARD = 64

# What str.strip() removes among the ASCII bytes (bytes.strip() keeps \x1c-\x1f).
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def count_documents(input_files, limit=None):
    """The documents of the input stream (`iter_raw_documents`' boundaries), up to `limit`.

    Reads bytes and decodes only the lines that start with a non-ASCII byte
    once stripped: any other line is blank exactly when it is all ASCII
    whitespace. Stops reading at the `limit`-th document.
    """
    count = 0
    in_document = False
    for input_file in input_files:
        for raw, ended in _raw_lines(input_file):
            # `iter_lines` ends a file at a last line that decodes to nothing
            # once its "\r"s are dropped.
            if not ended and not _decode_line(raw, input_file, 0, None):
                continue
            stripped = raw.strip(_ASCII_SPACE)
            if stripped and stripped[0] >= 0x80:
                stripped = raw.decode("utf-8", "ignore").strip()
            if not stripped:
                in_document = False
            elif not in_document:
                in_document = True
                count += 1
                if limit is not None and count >= limit:
                    return count
    return count


def default_documents_per_shard(input_files):
    """Sharded mode's D when none is given, from the corpus (never from the workers).

    DEFAULT_DOCUMENTS_PER_SHARD (10,000), or for a corpus of fewer than
    DEFAULT_SHARDS (16) times that, a 16th of its documents rounded up and
    at least MIN_DOCUMENTS_PER_SHARD (64): a small corpus still has shards
    for up to 16 workers to run apart. Reads the input up to its 160,000th
    document.
    """
    limit = DEFAULT_SHARDS * DEFAULT_DOCUMENTS_PER_SHARD
    num_documents = count_documents(input_files, limit)
    return min(DEFAULT_DOCUMENTS_PER_SHARD,
               max(MIN_DOCUMENTS_PER_SHARD, -(-num_documents // DEFAULT_SHARDS)))
