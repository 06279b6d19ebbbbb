"""Masked-LM / next-sentence pre-training data: the original algorithm, fast.

A port of Google's `create_pretraining_data.py` (P = pip bert-tensorflow 1.0.4,
G = GitHub HEAD eedf571) that writes the same instances in the same order:

* input: one sentence per line, a blank line between documents; all input
  files form one stream (a file boundary does not end a document);
* one `random.Random(random_seed)` drives everything, with the original's calls
  in the original's order: document shuffle, the target length (once per
  document and dupe pass), the A/B split, random next, the truncation
  (ties go to tokens_b), the 80/10/10 masking (per WordPiece, or whole words
  with `do_whole_word_mask` as on G), and the final instance shuffle;
* output: `tf.train.Example`s with the original seven features, written
  round-robin over the output files, and the first 20 logged as the original
  logs them.

Where the speed comes from (the output does not change):

* Tokenization is cached per space-separated chunk of a line
  (`CachedTokenizer`); documents are kept as tuples of token ids.
* Instances are built on ids: truncation moves two indexes instead of
  deleting list heads; the RNG helpers inline `Random._randbelow` (checked
  against `random.Random` at start-up; if they ever disagree, the stock
  methods are used).
* `tf.train.Example` protos are serialized by hand (`ExampleSerializer`), with
  precomputed varints and fixed-length pieces, byte-identical to
  `tf.train.Example(...).SerializeToString(deterministic=True)`.

Modes:

* exact (the default, `documents_per_shard=0`): the original's algorithm over
  the whole corpus. All documents stay in memory (as token ids) because the
  document shuffle and the random-next draws need all of them; the serialized
  instances are buffered for the final shuffle, in memory up to
  `record_buffer_bytes` and in a temporary spill file beyond.
* sharded (`documents_per_shard=D > 0`, implied by `num_workers > 1`): the
  document stream (same document boundaries as the original) is cut into
  shards of D consecutive documents (counted before tokenization, so a
  document that tokenizes to nothing still counts); shard k runs the same
  algorithm on its own with `random.Random(shard_seed(random_seed, k))`, and
  the shards' instances are written in shard order, round-robin over the
  output files as one stream. So, compared with exact mode: the document
  shuffle, the random-next documents and the instance shuffle stay inside a
  shard, and the seeds differ (a corpus of at most D documents gives exactly
  exact mode's output for seed `shard_seed(random_seed, 0)`). Memory is
  bounded by the shards in flight (about 2 * num_workers), `num_workers`
  processes work in parallel, and the output depends on `random_seed` and D
  only, never on `num_workers`.

Port note: map entries of an Example are written in sorted key order (what
protobuf's deterministic serialization does). The original calls
`SerializeToString()`, whose map order under protobuf 7 (upb) changes from
process to process, so the original's own files are not byte-reproducible;
its records equal ours after deterministic re-serialization.
"""

import array
import bisect
import hashlib
import os
import random
import tempfile
import time

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError

# The features in the original's OrderedDict order (used for logging).
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")

_NUM_LOGGED_EXAMPLES = 20
_READ_BLOCK_BYTES = 1 << 24
_PROGRESS_SECONDS = 10.0


# --------------------------------------------------------------------------
# Input reading.
# --------------------------------------------------------------------------

class _DecodeStats(object):
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
      decode_stats: optional `_DecodeStats` to count undecodable lines in.

    Yields:
      str lines, each ending in "\\n" except possibly the last.
    """
    if "://" in input_file:
        import tensorflow as tf  # pylint: disable=g-import-not-at-top
        f = tf.io.gfile.GFile(input_file, "rb")
    else:
        f = open(input_file, "rb")
    with f:
        pending = b""
        line_number = 0
        while True:
            block = f.read(_READ_BLOCK_BYTES)
            if not block:
                break
            if pending:
                block = pending + block
            lines = block.split(b"\n")
            pending = lines.pop()
            for raw in lines:
                line_number += 1
                yield _decode_line(raw + b"\n", input_file, line_number, decode_stats)
        if pending:
            line_number += 1
            line = _decode_line(pending, input_file, line_number, decode_stats)
            if line:
                yield line


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


def _warn_decode(decode_stats):
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
    """
    return fileio.expand_files(patterns, flag="input_file")


# --------------------------------------------------------------------------
# Tokenization.
# --------------------------------------------------------------------------

class VocabInfo(object):
    """What instance creation needs from a `FullTokenizer`'s vocabulary.

    Attributes:
      vocab: the tokenizer's `OrderedDict` token -> id.
      vocab_ids: list of ids in vocab order, so that the original's
        `vocab_words[k]` converts to `vocab_ids[k]`.
      cls_id, sep_id, mask_id: ids of "[CLS]", "[SEP]", "[MASK]".
      is_subword: bytearray indexed by id, 1 where the token starts with "##".
      inv_vocab: dict id -> token (for logging).
    """

    def __init__(self, tokenizer, vocab_file="vocab_file"):
        vocab = tokenizer.vocab
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
        if missing:
            raise UserError("%s has no %s token%s (create_pretraining_data needs "
                            "[CLS], [SEP] and [MASK])" % (
                                vocab_file, ", ".join(missing),
                                "s" if len(missing) > 1 else ""))
        self.vocab = vocab
        self.vocab_ids = list(vocab.values())
        self.cls_id = vocab["[CLS]"]
        self.sep_id = vocab["[SEP]"]
        self.mask_id = vocab["[MASK]"]
        max_id = max(self.vocab_ids)
        self.is_subword = bytearray(max_id + 1)
        self.inv_vocab = {}
        for token, token_id in vocab.items():
            if token.startswith("##"):
                self.is_subword[token_id] = 1
            self.inv_vocab[token_id] = token
        # With pip's `load_vocab` ids are unique; guard the id -> token map.
        for token_id in self.vocab_ids:
            if self.inv_vocab.get(token_id) is None:
                raise UserError("%s maps two tokens to id %d" % (vocab_file, token_id))
        self.max_id = max_id


class CachedTokenizer(object):
    """`FullTokenizer.tokenize` + `convert_tokens_to_ids`, cached per chunk.

    The original tokenizes each line. `BasicTokenizer` cleans characters one
    at a time, then splits on white space (" " is white space), and everything
    after that works per token, so a line's tokens are the concatenation of
    the tokens of its " "-separated chunks. Real text repeats its words, so
    caching the ids of each chunk makes tokenization several times faster
    without changing a single token (tests/data/test_pretraining_data.py
    checks this on the corpus and on edge cases).
    """

    def __init__(self, tokenizer, vocab_file="vocab_file", max_entries=1 << 20):
        self._tokenize = tokenizer.tokenize
        self._to_ids = tokenizer.convert_tokens_to_ids
        self._vocab = tokenizer.vocab
        self._vocab_file = vocab_file
        self._max_entries = max_entries
        self._cache = {}

    def line_to_ids(self, line):
        """Returns the list of token ids of `line` (a str)."""
        cache = self._cache
        ids = []
        for chunk in line.split(" "):
            piece = cache.get(chunk)
            if piece is None:
                piece = self._chunk_ids(chunk)
            ids += piece
        return ids

    def _chunk_ids(self, chunk):
        tokens = self._tokenize(chunk) if chunk else []
        try:
            piece = tuple(self._to_ids(tokens))
        except KeyError:
            # Port note: the original fails with a KeyError when it writes an
            # instance holding the token (e.g. "[UNK]" missing from the vocab).
            missing = [t for t in tokens if t not in self._vocab][:1] or ["?"]
            raise UserError("%s has no token %s, which the tokenizer produced for "
                            "the text %r" % (self._vocab_file, missing[0], chunk)) from None
        if len(self._cache) >= self._max_entries:
            self._cache.clear()
        self._cache[chunk] = piece
        return piece


def read_documents(input_files, cached_tokenizer, decode_stats=None, progress=None):
    """Reads and tokenizes documents exactly as `create_training_instances` does.

    Args:
      input_files: list of str file names, read in order as one stream.
      cached_tokenizer: a `CachedTokenizer`.
      decode_stats: optional `_DecodeStats`.
      progress: optional callable(bytes_read) for progress logging.

    Returns:
      A list of documents; a document is a non-empty list of segments (one per
      input line with tokens), a segment a non-empty tuple of token ids.

    Raises:
      UserError: an input file holds no line with any token.
    """
    line_to_ids = cached_tokenizer.line_to_ids
    all_documents = [[]]
    bytes_read = 0  # characters, for progress logging only
    for input_file in input_files:
        lines_with_tokens = 0
        for line in iter_lines(input_file, decode_stats):
            bytes_read += len(line)
            line = line.strip()
            if not line:
                all_documents.append([])
                continue
            ids = line_to_ids(line)
            if ids:
                all_documents[-1].append(tuple(ids))
                lines_with_tokens += 1
            if progress is not None and not lines_with_tokens % 4096:
                progress(bytes_read)
        if not lines_with_tokens:
            # Port note: the original reads an empty file without a word.
            raise UserError("input file %s has no text (no line with a token)"
                            % input_file)
    return [d for d in all_documents if d]


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


# --------------------------------------------------------------------------
# Random numbers: exactly `random.Random`'s, with less call overhead.
# --------------------------------------------------------------------------

def _inline_randbelow(getrandbits, n):
    """`Random._randbelow_with_getrandbits(n)` of CPython 3.8-3.13."""
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


def _check_inline_rng():
    """True if the inlined helpers reproduce this Python's `random.Random`."""
    for seed in (0, 12345):
        a, b = random.Random(seed), random.Random(seed)
        for n in (1, 2, 3, 7, 64, 65, 1000, 30522):
            if a.randint(5, 5 + n - 1) != 5 + _inline_randbelow(b.getrandbits, n):
                return False
        steps = _shuffle_steps(64)
        for n in (0, 1, 2, 5, 33, 64, 130):
            x, y = list(range(n)), list(range(n))
            a.shuffle(x)
            _shuffle_with(b.getrandbits, y)
            a.shuffle(x)
            _shuffle_with(b.getrandbits, y, steps)
            if x != y:
                return False
        if a.random() != b.random():
            return False
    return True


def _shuffle_with(getrandbits, x, steps=None):
    """`Random.shuffle(x)` of CPython 3.8-3.13 for a given `getrandbits`.

    `steps`, if given, is `_shuffle_steps(m)` for some m >= len(x): the
    (i, i + 1, (i + 1).bit_length()) triples precomputed.
    """
    if steps is None or len(x) > len(steps) + 1:
        for i in range(len(x) - 1, 0, -1):
            n = i + 1
            k = n.bit_length()
            j = getrandbits(k)
            while j >= n:
                j = getrandbits(k)
            x[i], x[j] = x[j], x[i]
        return
    for i, n, k in steps[len(steps) + 1 - len(x):]:
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


def _shuffle_steps(max_len):
    """[(i, i + 1, (i + 1).bit_length()) for i = max_len - 1 down to 1]."""
    return [(i, i + 1, (i + 1).bit_length()) for i in range(max_len - 1, 0, -1)]


_INLINE_RNG_OK = None


def _inline_rng_ok():
    global _INLINE_RNG_OK  # a cache of a fact about this Python, not state
    if _INLINE_RNG_OK is None:
        _INLINE_RNG_OK = _check_inline_rng()
        if not _INLINE_RNG_OK:
            logging.warning("random.Random differs from the inlined helpers on this "
                            "Python; using the slower stock methods.")
    return _INLINE_RNG_OK


def shard_seed(random_seed, shard_index):
    """The seed of shard `shard_index` in sharded mode (a 64-bit int)."""
    digest = hashlib.sha256(b"bert_tf.create_pretraining_data:%d:%d"
                            % (random_seed, shard_index)).digest()
    return int.from_bytes(digest[:8], "little")


# --------------------------------------------------------------------------
# Serialization of tf.train.Example, by hand.
# --------------------------------------------------------------------------

def _varint(value):
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


class ExampleSerializer(object):
    """Serializes the seven pre-training features into `tf.train.Example` bytes.

    Equals `tf.train.Example(features=...).SerializeToString(deterministic=True)`
    byte for byte: map entries in sorted key order, packed int64/float lists.

    Args:
      max_seq_length: int, length of input_ids/input_mask/segment_ids.
      max_predictions_per_seq: int, length of the masked_lm_* features.
      max_id: int, the largest token id.
    """

    def __init__(self, max_seq_length, max_predictions_per_seq, max_id):
        s, p = max_seq_length, max_predictions_per_seq
        self.max_seq_length = s
        self.max_predictions_per_seq = p
        self._varints = [_varint(i) for i in range(max(max_id, s, 4 * (s + p)) + 64)]
        v = self._varint
        self._zeros = [b"\x00" * n for n in range(s + 1)]
        self._ones = [b"\x01" * n for n in range(s + 1)]
        self._pzeros = [b"\x00" * n for n in range(p + 1)]
        self._keys = {name: b"\x0a" + v(len(name)) + name.encode() for name in FEATURE_NAMES}
        # Fixed-length features: whole map entries, precomputed.
        self._input_mask = [self._int64_entry("input_mask", self._ones[n] + self._zeros[s - n])
                            for n in range(s + 1)]
        one = b"\x00\x00\x80\x3f"  # struct.pack("<f", 1.0)
        self._weights = [self._float_entry("masked_lm_weights", one * k + b"\x00" * (4 * (p - k)))
                         for k in range(p + 1)]
        self._labels = [self._int64_entry("next_sentence_labels", b"\x00"),
                        self._int64_entry("next_sentence_labels", b"\x01")]
        self._segment_header = self._entry_header("segment_ids", s)
        # Headers of the variable-length features, by payload length (a
        # varint takes 1-5 bytes, so payloads are at most 5x their count).
        self._ids_header = [self._entry_header("input_ids", n) for n in range(5 * s + 1)]
        self._pos_header = [self._entry_header("masked_lm_positions", n)
                            for n in range(5 * p + 1)]
        self._mid_header = [self._entry_header("masked_lm_ids", n) for n in range(5 * p + 1)]

    def _varint(self, n):
        return self._varints[n] if n < len(self._varints) else _varint(n)

    def _entry_header(self, name, payload_len, float_list=False):
        """Bytes of a map entry up to (excluding) its packed payload."""
        v = self._varint
        list_len = 1 + len(v(payload_len)) + payload_len
        feature_len = 1 + len(v(list_len)) + list_len
        key = self._keys[name]
        body_len = len(key) + 1 + len(v(feature_len)) + feature_len
        return (b"\x0a" + v(body_len) + key + b"\x12" + v(feature_len) +
                (b"\x12" if float_list else b"\x1a") + v(list_len) + b"\x0a" + v(payload_len))

    def _int64_entry(self, name, payload):
        return self._entry_header(name, len(payload)) + payload

    def _float_entry(self, name, payload):
        return self._entry_header(name, len(payload), float_list=True) + payload

    def serialize(self, input_ids, len_a, len_b, masked_lm_positions, masked_lm_ids,
                  is_random_next):
        """Returns the serialized Example of one instance.

        Args:
          input_ids: list of int, the masked tokens' ids, [CLS] A [SEP] B [SEP]
            (unpadded; length len_a + len_b + 3 <= max_seq_length).
          len_a, len_b: int, lengths of segments A and B.
          masked_lm_positions: sorted list of int (<= max_predictions_per_seq).
          masked_lm_ids: list of int, the original ids at those positions.
          is_random_next: bool (label 1) or False (label 0).
        """
        s, p = self.max_seq_length, self.max_predictions_per_seq
        vt = self._varints
        n = len(input_ids)
        k = len(masked_lm_positions)
        ids_payload = b"".join(map(vt.__getitem__, input_ids)) + self._zeros[s - n]
        pos_payload = b"".join(map(vt.__getitem__, masked_lm_positions)) + self._pzeros[p - k]
        mid_payload = b"".join(map(vt.__getitem__, masked_lm_ids)) + self._pzeros[p - k]
        # Port note: the map entries in sorted key order (deterministic
        # serialization); see the module docstring.
        features = b"".join((
            self._ids_header[len(ids_payload)], ids_payload,
            self._input_mask[n],
            self._mid_header[len(mid_payload)], mid_payload,
            self._pos_header[len(pos_payload)], pos_payload,
            self._weights[k],
            self._labels[1 if is_random_next else 0],
            self._segment_header, self._zeros[len_a + 2], self._ones[len_b + 1],
            self._zeros[s - n]))
        return b"\x0a" + self._varint(len(features)) + features


# --------------------------------------------------------------------------
# Instance creation: the original algorithm on token ids.
# --------------------------------------------------------------------------

class InstanceGenerator(object):
    """Creates serialized instances from documents, with the original's RNG calls.

    Args:
      rng: a `random.Random`, used exactly as the original uses its `rng`.
      vocab_info: a `VocabInfo`.
      serializer: an `ExampleSerializer`, or None to emit raw tuples.
      max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
        do_whole_word_mask: the original's flags.
    """

    def __init__(self, rng, vocab_info, serializer, max_seq_length,
                 max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                 do_whole_word_mask=False):
        self.rng = rng
        self._random = rng.random
        self._getrandbits = rng.getrandbits
        self._inline = _inline_rng_ok()
        self._vocab_info = vocab_info
        self._serializer = serializer
        self.max_seq_length = max_seq_length
        self._max_num_tokens = max_seq_length - 3
        self._short_seq_prob = short_seq_prob
        self._do_whole_word_mask = do_whole_word_mask
        self._num_to_predict = [
            min(max_predictions_per_seq, max(1, int(round(n * masked_lm_prob))))
            for n in range(max_seq_length + 1)]
        self._positions = list(range(max_seq_length + 1))
        self._steps = _shuffle_steps(max_seq_length)

    # -- RNG helpers (identical draws to rng.randint / rng.shuffle) --
    def _randint(self, a, b):
        if not self._inline:
            return self.rng.randint(a, b)
        n = b - a + 1
        k = n.bit_length()
        getrandbits = self._getrandbits
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return a + r

    def shuffle(self, x):
        """`rng.shuffle(x)`."""
        if self._inline:
            _shuffle_with(self._getrandbits, x, self._steps)
        else:
            self.rng.shuffle(x)

    def shuffle_documents(self, all_documents):
        self.shuffle(all_documents)

    def instances_from_document(self, all_documents, document_index, emit):
        """`create_instances_from_document` (P:219-331 [G:223-335]).

        Calls `emit(record)` for each instance, where record is the serialized
        Example (or, without a serializer, the tuple (input_ids, len_a, len_b,
        masked_lm_positions, masked_lm_ids, is_random_next)).
        """
        document = all_documents[document_index]
        random_ = self._random
        randint = self._randint
        max_num_tokens = self._max_num_tokens
        num_documents = len(all_documents)

        target_seq_length = max_num_tokens
        if random_() < self._short_seq_prob:
            target_seq_length = randint(2, max_num_tokens)

        current_chunk = []
        current_length = 0
        i = 0
        document_length = len(document)
        while i < document_length:
            segment = document[i]
            current_chunk.append(segment)
            current_length += len(segment)
            if i == document_length - 1 or current_length >= target_seq_length:
                num_segments = len(current_chunk)
                a_end = 1
                if num_segments >= 2:
                    a_end = randint(1, num_segments - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a += current_chunk[j]
                tokens_b = []
                if num_segments == 1 or random_() < 0.5:
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    for _ in range(10):
                        random_document_index = randint(0, num_documents - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b += random_document[j]
                        if len(tokens_b) >= target_b_length:
                            break
                    # The unused segments are "put back".
                    i -= num_segments - a_end
                else:
                    is_random_next = False
                    for j in range(a_end, num_segments):
                        tokens_b += current_chunk[j]

                # truncate_seq_pair (P:391-406), on index ranges: while too
                # long, cut the longer list (ties -> tokens_b), at the front or
                # the back by one rng.random() each.
                a_lo, a_hi = 0, len(tokens_a)
                b_lo, b_hi = 0, len(tokens_b)
                while (a_hi - a_lo) + (b_hi - b_lo) > max_num_tokens:
                    if a_hi - a_lo > b_hi - b_lo:
                        if random_() < 0.5:
                            a_lo += 1
                        else:
                            a_hi -= 1
                    else:
                        if random_() < 0.5:
                            b_lo += 1
                        else:
                            b_hi -= 1
                if a_lo or a_hi != len(tokens_a):
                    tokens_a = tokens_a[a_lo:a_hi]
                if b_lo or b_hi != len(tokens_b):
                    tokens_b = tokens_b[b_lo:b_hi]
                assert tokens_a and tokens_b
                emit(self._masked_instance(tokens_a, tokens_b, is_random_next))
                current_chunk = []
                current_length = 0
            i += 1

    def _masked_instance(self, tokens_a, tokens_b, is_random_next):
        """Builds [CLS] A [SEP] B [SEP] and runs create_masked_lm_predictions."""
        info = self._vocab_info
        len_a, len_b = len(tokens_a), len(tokens_b)
        tokens = [info.cls_id]
        tokens += tokens_a
        tokens.append(info.sep_id)
        tokens += tokens_b
        tokens.append(info.sep_id)
        num_tokens = len_a + len_b + 3
        num_to_predict = self._num_to_predict[num_tokens]
        random_ = self._random
        getrandbits = self._getrandbits
        inline = self._inline
        vocab_ids = info.vocab_ids
        vocab_size = len(vocab_ids)
        vocab_bits = vocab_size.bit_length()
        mask_id = info.mask_id
        masked = []  # (position, original id)

        def mask(index):
            # 80% [MASK], 10% keep, 10% a random vocab entry (any of them,
            # [PAD] and [unused*] included), drawn per token as the original.
            masked.append((index, tokens[index]))
            if random_() < 0.8:
                tokens[index] = mask_id
            elif random_() < 0.5:
                pass  # keep the original token
            else:
                if inline:  # rng.randint(0, vocab_size - 1), inlined
                    r = getrandbits(vocab_bits)
                    while r >= vocab_size:
                        r = getrandbits(vocab_bits)
                else:
                    r = self.rng.randint(0, vocab_size - 1)
                tokens[index] = vocab_ids[r]

        if not self._do_whole_word_mask:
            positions = self._positions
            cand_indexes = positions[1:len_a + 1] + positions[len_a + 2:num_tokens - 1]
            self.shuffle(cand_indexes)
            for index in cand_indexes[:num_to_predict]:
                mask(index)
        else:
            # G:346-406: a "##" piece joins the previous candidate group;
            # [CLS]/[SEP] are skipped without closing the group.
            is_subword = info.is_subword
            cand_indexes = []
            for index in range(1, num_tokens - 1):
                if index == len_a + 1:
                    continue
                if cand_indexes and is_subword[tokens[index]]:
                    cand_indexes[-1].append(index)
                else:
                    cand_indexes.append([index])
            self.shuffle(cand_indexes)
            # Groups are disjoint, so the original's "any index covered" test
            # never fires; only the size test can skip a group.
            count = 0
            for index_set in cand_indexes:
                if count >= num_to_predict:
                    break
                if count + len(index_set) > num_to_predict:
                    continue
                for index in index_set:
                    mask(index)
                    count += 1

        masked.sort()
        masked_lm_positions = [m[0] for m in masked]
        masked_lm_ids = [m[1] for m in masked]
        if self._serializer is None:
            return (tokens, len_a, len_b, masked_lm_positions, masked_lm_ids, is_random_next)
        return self._serializer.serialize(tokens, len_a, len_b, masked_lm_positions,
                                          masked_lm_ids, is_random_next)


# --------------------------------------------------------------------------
# Buffering (exact mode) and writing.
# --------------------------------------------------------------------------

class RecordBuffer(object):
    """Append-only store of serialized records with random access.

    Keeps records in memory up to `max_memory_bytes`, then moves whole chunks
    to a temporary spill file in `spill_dir`, so exact mode's final shuffle
    needs about 8 bytes of memory per instance beyond the budget.
    """

    _CHUNK_BYTES = 32 << 20

    def __init__(self, max_memory_bytes, spill_dir):
        self._max_memory = max_memory_bytes
        self._spill_dir = spill_dir
        self._offsets = array.array("Q", [0])
        self._chunks = []          # sealed in-memory chunks (bytes)
        self._chunk_starts = []    # global offset of each sealed chunk
        self._current = bytearray()
        self._current_start = 0
        self._memory = 0
        self._spill = None
        self._spilled = 0          # bytes [0, _spilled) are in the spill file

    def __len__(self):
        return len(self._offsets) - 1

    def append(self, record):
        self._current += record
        self._offsets.append(self._offsets[-1] + len(record))
        if len(self._current) >= self._CHUNK_BYTES:
            self._seal()

    def _seal(self):
        chunk = bytes(self._current)
        self._chunks.append(chunk)
        self._chunk_starts.append(self._current_start)
        self._current_start += len(chunk)
        self._current = bytearray()
        self._memory += len(chunk)
        while self._memory > self._max_memory and self._chunks:
            oldest = self._chunks.pop(0)
            self._chunk_starts.pop(0)
            if self._spill is None:
                self._spill = tempfile.TemporaryFile(
                    prefix="create_pretraining_data-", dir=self._spill_dir)
            self._spill.write(oldest)
            self._spilled += len(oldest)
            self._memory -= len(oldest)

    @property
    def spilled_bytes(self):
        return self._spilled

    def get(self, index):
        start, end = self._offsets[index], self._offsets[index + 1]
        if start >= self._current_start:
            return bytes(self._current[start - self._current_start:end - self._current_start])
        if start >= self._spilled:
            c = bisect.bisect_right(self._chunk_starts, start) - 1
            base = self._chunk_starts[c]
            return self._chunks[c][start - base:end - base]
        if self._spill is not None:
            self._spill.flush()
        return os.pread(self._spill.fileno(), end - start, start)

    def close(self):
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        self._chunks = []
        self._current = bytearray()


class RoundRobinWriter(object):
    """Writes records round-robin over TFRecord files, atomically.

    Each output is written to `<name>.tmp-<pid>` and renamed when `close()`
    succeeds; `abort()` removes the temporaries. The first 20 records are
    logged as the original logs its first 20 instances.
    """

    def __init__(self, output_files, vocab_info):
        import tensorflow as tf  # pylint: disable=g-import-not-at-top
        self._tf = tf
        self._vocab_info = vocab_info
        self.output_files = list(output_files)
        # Port note: written under a temporary name and renamed at the end, so
        # a failed or interrupted run leaves no partial output (the original
        # leaves whatever it had written).
        self._tmp_files = [fileio.temporary_name(f) for f in self.output_files]
        self._writers = []
        try:
            for f, tmp in zip(self.output_files, self._tmp_files):
                parent = os.path.dirname(f)
                # Port note: a missing output directory is created.
                if parent and not tf.io.gfile.exists(parent):
                    tf.io.gfile.makedirs(parent)
                self._writers.append(tf.io.TFRecordWriter(tmp))
        except Exception:
            self.abort()
            raise
        self._writer_index = 0
        self.total_written = 0

    def write(self, record):
        self._writers[self._writer_index].write(record)
        self._writer_index = (self._writer_index + 1) % len(self._writers)
        if self.total_written < _NUM_LOGGED_EXAMPLES:
            self._log_example(record)
        self.total_written += 1

    def _log_example(self, record):
        example = self._tf.train.Example.FromString(record)
        feature = example.features.feature
        num_tokens = sum(feature["input_mask"].int64_list.value)
        inv = self._vocab_info.inv_vocab
        tokens = [inv[i] for i in feature["input_ids"].int64_list.value[:num_tokens]]
        logging.info("*** Example ***")
        logging.info("tokens: %s" % " ".join(tokens))
        for name in FEATURE_NAMES:
            values = feature[name].int64_list.value or feature[name].float_list.value
            logging.info("%s: %s" % (name, " ".join([str(x) for x in values])))

    def close(self):
        for writer in self._writers:
            writer.close()
        self._writers = []
        for tmp, final in zip(self._tmp_files, self.output_files):
            self._tf.io.gfile.rename(tmp, final, overwrite=True)
        logging.info("Wrote %d total instances", self.total_written)

    def abort(self):
        for writer in self._writers:
            try:
                writer.close()
            except Exception:  # pylint: disable=broad-except
                pass
        self._writers = []
        for tmp in self._tmp_files:
            try:
                if self._tf.io.gfile.exists(tmp):
                    self._tf.io.gfile.remove(tmp)
            except Exception:  # pylint: disable=broad-except
                pass


class _Progress(object):
    """Logs rate and ETA every few seconds."""

    def __init__(self, what, total=None):
        self._what = what
        self._total = total
        self._start = time.perf_counter()
        self._last = self._start

    def update(self, done, extra=""):
        now = time.perf_counter()
        if now - self._last < _PROGRESS_SECONDS:
            return
        self._last = now
        rate = done / max(now - self._start, 1e-9)
        if self._total:
            eta = (self._total - done) / rate if rate > 0 else float("inf")
            logging.info("%s: %d/%d (%.1f%%), %.0f/s, ETA %.0fs%s", self._what, done,
                         self._total, 100.0 * done / self._total, rate, eta, extra)
        else:
            logging.info("%s: %d, %.0f/s%s", self._what, done, rate, extra)


# --------------------------------------------------------------------------
# Sharded mode: workers.
# --------------------------------------------------------------------------

# Per worker process: set once by `_init_worker` (fork start method) so the
# tokenizer is not pickled. The library's callers never see it.
_WORKER = {}


def _init_worker(tokenizer, vocab_file, vocab_info, options):
    _WORKER["cached"] = CachedTokenizer(tokenizer, vocab_file)
    _WORKER["vocab_info"] = vocab_info
    _WORKER["options"] = options


def _process_shard(task):
    """Runs the original algorithm on one shard; returns its records."""
    shard_index, raw_documents = task
    cached = _WORKER["cached"]
    vocab_info = _WORKER["vocab_info"]
    o = _WORKER["options"]
    documents = []
    for raw in raw_documents:
        document = []
        for line in raw:
            ids = cached.line_to_ids(line)
            if ids:
                document.append(tuple(ids))
        if document:
            documents.append(document)
    records = []
    if documents:
        rng = random.Random(shard_seed(o["random_seed"], shard_index))
        generator = InstanceGenerator(
            rng, vocab_info, ExampleSerializer(o["max_seq_length"], o["max_predictions_per_seq"],
                                               vocab_info.max_id),
            o["max_seq_length"], o["max_predictions_per_seq"], o["masked_lm_prob"],
            o["short_seq_prob"], o["do_whole_word_mask"])
        _generate(generator, documents, o["dupe_factor"], records.append)
        generator.shuffle(records)
    lengths = array.array("I", map(len, records))
    return shard_index, len(documents), b"".join(records), lengths.tobytes()


def _generate(generator, all_documents, dupe_factor, emit, progress=None):
    """The document shuffle and the dupe loop of `create_training_instances`."""
    generator.shuffle_documents(all_documents)
    num_documents = len(all_documents)
    done = 0
    for _ in range(dupe_factor):
        for document_index in range(num_documents):
            generator.instances_from_document(all_documents, document_index, emit)
            done += 1
            if progress is not None and not done % 256:
                progress(done)


def _iter_shards(input_files, documents_per_shard, decode_stats):
    shard = []
    shard_index = 0
    for raw in iter_raw_documents(input_files, decode_stats):
        shard.append(raw)
        if len(shard) == documents_per_shard:
            yield shard_index, shard
            shard_index += 1
            shard = []
    if shard:
        yield shard_index, shard


# --------------------------------------------------------------------------
# Entry point.
# --------------------------------------------------------------------------

def validate_options(max_seq_length, max_predictions_per_seq, dupe_factor,
                     masked_lm_prob, short_seq_prob, num_workers=1,
                     documents_per_shard=0):
    """Raises UserError for flag values with which no instance can be made.

    Port note: the original fails later (an AssertionError or a ValueError from
    `randint` for max_seq_length < 5) or writes degenerate files (empty masked
    features for max_predictions_per_seq = 0, no instances for dupe_factor = 0).
    """
    if max_seq_length < 5:
        raise UserError("--max_seq_length=%d cannot hold an instance: it needs "
                        "[CLS] A [SEP] B [SEP] with A and B non-empty, so at least 5"
                        % max_seq_length)
    if max_predictions_per_seq < 1:
        raise UserError("--max_predictions_per_seq=%d cannot hold an instance's "
                        "masked tokens (every instance masks at least 1)"
                        % max_predictions_per_seq)
    if dupe_factor < 1:
        raise UserError("--dupe_factor=%d must be >= 1" % dupe_factor)
    if not 0.0 <= masked_lm_prob <= 1.0:
        raise UserError("--masked_lm_prob=%r must be in [0, 1]" % masked_lm_prob)
    if not 0.0 <= short_seq_prob <= 1.0:
        raise UserError("--short_seq_prob=%r must be in [0, 1]" % short_seq_prob)
    if num_workers < 1:
        raise UserError("--num_workers=%d must be >= 1" % num_workers)
    if documents_per_shard < 0:
        raise UserError("--documents_per_shard=%d must be >= 0" % documents_per_shard)


DEFAULT_DOCUMENTS_PER_SHARD = 10000


def create_pretraining_data(input_files, output_files, tokenizer, vocab_file="vocab_file",
                            max_seq_length=128, max_predictions_per_seq=20,
                            random_seed=12345, dupe_factor=10, masked_lm_prob=0.15,
                            short_seq_prob=0.1, do_whole_word_mask=False,
                            num_workers=1, documents_per_shard=0,
                            record_buffer_bytes=256 << 20):
    """Creates pre-training TFRecords from text files (the original's `main`).

    Args:
      input_files: list of str text files (already expanded; see
        `expand_input_patterns`), read in order as one stream.
      output_files: list of str TFRecord files; instances go round-robin.
      tokenizer: a `bert_tf.tokenization.FullTokenizer` (or anything with
        `vocab`, `tokenize` and `convert_tokens_to_ids`).
      vocab_file: str, the vocabulary's file name, for error messages.
      max_seq_length, max_predictions_per_seq, random_seed, dupe_factor,
        masked_lm_prob, short_seq_prob, do_whole_word_mask: the original flags.
      num_workers: int, worker processes. > 1 implies sharded mode.
      documents_per_shard: int; 0 = exact mode (the original's output); D > 0
        = sharded mode with shards of D documents (see the module docstring).
        With num_workers > 1 and 0 here, DEFAULT_DOCUMENTS_PER_SHARD is used.
      record_buffer_bytes: int, exact mode's in-memory budget for serialized
        instances before they spill to a temporary file.

    Returns:
      A dict with "instances", "documents", "seconds", "mode" and "shards".

    Raises:
      UserError: bad flags, no documents, a vocab without [CLS]/[SEP]/[MASK].
        No output file is left behind.
    """
    validate_options(max_seq_length, max_predictions_per_seq, dupe_factor,
                     masked_lm_prob, short_seq_prob, num_workers, documents_per_shard)
    output_files = list(output_files)
    if not output_files or not all(output_files):
        raise UserError("--output_file: empty output file name in %r" % (",".join(output_files),))
    # Port note: the original opens two writers on a repeated file name.
    if len(set(output_files)) != len(output_files):
        raise UserError("--output_file lists the same file twice: %s" % ",".join(output_files))
    for name in input_files:
        if not os.path.exists(name) and "://" not in name:
            raise UserError("--input_file: %s does not exist" % name)
    vocab_info = VocabInfo(tokenizer, vocab_file)
    if num_workers > 1 and not documents_per_shard:
        documents_per_shard = DEFAULT_DOCUMENTS_PER_SHARD
    start = time.perf_counter()

    logging.info("*** Reading from input files ***")
    for input_file in input_files:
        logging.info("  %s", input_file)

    options = dict(max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
                   random_seed=random_seed, dupe_factor=dupe_factor, masked_lm_prob=masked_lm_prob,
                   short_seq_prob=short_seq_prob, do_whole_word_mask=do_whole_word_mask)
    if documents_per_shard:
        stats = _run_sharded(input_files, output_files, tokenizer, vocab_file, vocab_info,
                             options, num_workers, documents_per_shard)
    else:
        stats = _run_exact(input_files, output_files, tokenizer, vocab_file, vocab_info,
                           options, record_buffer_bytes)
    stats["seconds"] = time.perf_counter() - start
    logging.info("%d instances from %d documents in %.1fs (%.0f instances/s)",
                 stats["instances"], stats["documents"], stats["seconds"],
                 stats["instances"] / max(stats["seconds"], 1e-9))
    return stats


def _log_outputs(output_files):
    logging.info("*** Writing to output files ***")
    for output_file in output_files:
        logging.info("  %s", output_file)


def _run_exact(input_files, output_files, tokenizer, vocab_file, vocab_info, o,
               record_buffer_bytes):
    decode_stats = _DecodeStats()
    total_bytes = sum(os.path.getsize(f) for f in input_files if os.path.exists(f)) or None
    read_progress = _Progress("input characters read", total_bytes)
    documents = read_documents(input_files, CachedTokenizer(tokenizer, vocab_file),
                               decode_stats, read_progress.update)
    _warn_decode(decode_stats)
    if not documents:
        raise UserError("--input_file: no documents (every line tokenizes to nothing)")
    logging.info("Read %d documents (%d segments)", len(documents),
                 sum(len(d) for d in documents))

    rng = random.Random(o["random_seed"])
    generator = InstanceGenerator(
        rng, vocab_info,
        ExampleSerializer(o["max_seq_length"], o["max_predictions_per_seq"], vocab_info.max_id),
        o["max_seq_length"], o["max_predictions_per_seq"], o["masked_lm_prob"],
        o["short_seq_prob"], o["do_whole_word_mask"])
    spill_dir = None  # a remote output spills to the system's temporary directory
    if "://" not in output_files[0]:
        spill_dir = os.path.dirname(os.path.abspath(output_files[0]))
    if spill_dir and not os.path.isdir(spill_dir):
        os.makedirs(spill_dir, exist_ok=True)
    buffer = RecordBuffer(record_buffer_bytes, spill_dir)
    try:
        progress = _Progress("documents (x dupe_factor)", len(documents) * o["dupe_factor"])
        _generate(generator, documents, o["dupe_factor"], buffer.append,
                  lambda done: progress.update(done, ", %d instances" % len(buffer)))
        num_documents = len(documents)
        del documents
        # rng.shuffle(instances): only the length matters for the draws, so
        # shuffle the indexes (8 bytes each) instead of the instances.
        order = array.array("Q", range(len(buffer)))
        generator.shuffle(order)
        if buffer.spilled_bytes:
            logging.info("%d MB of instances were spilled to a temporary file",
                         buffer.spilled_bytes >> 20)
        _log_outputs(output_files)
        writer = RoundRobinWriter(output_files, vocab_info)
        try:
            write_progress = _Progress("written", len(order))
            for n, index in enumerate(order):
                writer.write(buffer.get(index))
                if not n % 4096:
                    write_progress.update(n)
            writer.close()
        except BaseException:
            writer.abort()
            raise
    finally:
        buffer.close()
    return {"instances": len(order), "documents": num_documents, "mode": "exact", "shards": 1}


def _run_sharded(input_files, output_files, tokenizer, vocab_file, vocab_info, o,
                 num_workers, documents_per_shard):
    decode_stats = _DecodeStats()
    logging.info("Sharded mode: %d documents per shard, %d worker process(es); "
                 "shard k uses seed shard_seed(%d, k)", documents_per_shard, num_workers,
                 o["random_seed"])
    _log_outputs(output_files)
    writer = RoundRobinWriter(output_files, vocab_info)
    pool = None
    num_documents = 0
    num_shards = 0
    progress = _Progress("instances written")
    try:
        shards = _iter_shards(input_files, documents_per_shard, decode_stats)
        if num_workers == 1:
            _init_worker(tokenizer, vocab_file, vocab_info, o)
            results = map(_process_shard, shards)
        else:
            import multiprocessing  # pylint: disable=g-import-not-at-top
            context = multiprocessing.get_context("fork")
            pool = context.Pool(num_workers, initializer=_init_worker,
                                initargs=(tokenizer, vocab_file, vocab_info, o))
            results = _ordered_bounded(pool, _process_shard, shards, 2 * num_workers)
        for _, shard_documents, blob, lengths_bytes in results:
            lengths = array.array("I")
            lengths.frombytes(lengths_bytes)
            offset = 0
            view = memoryview(blob)
            for length in lengths:
                writer.write(bytes(view[offset:offset + length]))
                offset += length
            num_documents += shard_documents
            num_shards += 1
            progress.update(writer.total_written, ", %d shards" % num_shards)
        _warn_decode(decode_stats)
        if not num_documents:
            raise UserError("--input_file: no documents (every line tokenizes to nothing)")
        writer.close()
    except BaseException:
        writer.abort()
        raise
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _WORKER.clear()
    return {"instances": writer.total_written, "documents": num_documents,
            "mode": "sharded", "shards": num_shards}


def _ordered_bounded(pool, func, tasks, max_in_flight):
    """Like `pool.imap(func, tasks)`, but reads at most `max_in_flight` tasks ahead.

    (`Pool.imap` consumes its input iterator eagerly, which would read the
    whole corpus into memory.)
    """
    pending = []
    tasks = iter(tasks)
    exhausted = False
    while True:
        while not exhausted and len(pending) < max_in_flight:
            try:
                task = next(tasks)
            except StopIteration:
                exhausted = True
                break
            pending.append(pool.apply_async(func, (task,)))
        if not pending:
            return
        yield pending.pop(0).get()
