# coding=utf-8
"""The FullTokenizer and its packing as a graph of core TensorFlow ops (original: FullTokenizer).

`GraphTokenizer` gives, token for token, the ids of
`FullTokenizer(vocab_file, do_lower_case).tokenize(text)` +
`convert_tokens_to_ids`, with core TensorFlow ops only: no tensorflow_text, no
py_function, no custom ops. A SavedModel that calls it therefore loads and
runs where only `tensorflow` is installed (stock TF Serving).

  tokenizer = GraphTokenizer("vocab.txt", do_lower_case=True)
  ids = tokenizer.tokenize(tf.constant(["Hello, world!"]))  # int32 [1, (3)]
  features = tokenizer(texts_a, texts_b, max_seq_length=128)
  # {"input_ids", "input_mask", "segment_ids"}: int32 [batch, 128]

Graph pipeline (steps of bert_tf/full_tokenizer.py's module docstring):

  1. `tf.strings.unicode_decode(..., errors="ignore")`: UTF-8 -> code points.
     Invalid bytes are dropped exactly as by Python's
     `bytes.decode("utf-8", "ignore")` (`full_tokenizer.convert_to_unicode`):
     both drop each maximal ill-formed subsequence (overlong forms, encoded
     surrogates, > U+10FFFF, truncated sequences, stray continuation bytes);
     the tests compare the two on every 1- and 2-byte string and on random
     longer ones.
  2. Final sigma (do_lower_case only; see below).
  3. One per-code-point map: steps 2, 3 and 5-7 applied to the
     one-character text chr(cp), as code points, with every whitespace
     character of the result written as " " (U+0020). The map is a sorted
     table of the code points whose result is not chr(cp) itself (about 1.1K
     entries cased, 6.1K uncased), looked up with `tf.searchsorted`; two
     regular blocks are computed instead of stored: the `_CJK_RANGES` (padded
     with " "), and with do_lower_case the Hangul syllables (their NFD, the
     Unicode algorithm: L V [T] conjoining jamo).
  4. Canonical reordering (do_lower_case only; see below).
  5. Words are the runs between " "; WordPiece runs on all words of the batch
     at once: each whole word is looked up first (as WordpieceTokenizer
     does), then a `tf.while_loop` over piece positions, where every
     unfinished word looks up its candidate pieces of 1..min(rest, longest
     vocab entry) characters (substrings of one UTF-8 string of all words,
     "##"-prefixed past the word start) in a `tf.lookup.StaticHashTable`
     and takes the longest hit. A word of over 200 characters, or one whose rest matches no
     entry, is one [UNK].

Why a per-code-point map is exact, and the context-dependent cases:
  * `str.split()` splits on every `str.isspace()` character, also on those
    that `_clean_text` keeps (U+2028, U+2029; U+001C-001F and U+0085 are Cc,
    which `_clean_text` deletes): the map writes each of them as " ", and
    every whitespace character in a mapped result too.
  * `str.lower()` is per character except for U+03A3 (capital sigma), which
    CPython lower-cases to final U+03C2 when a cased character precedes it and
    none follows, skipping case-ignorable characters on both sides (Unicode's
    Final_Sigma context), within the word of step 4 (a context that never
    crosses whitespace, so the whole text can be classified at once; a text
    start or end bounds it too). The graph classifies
    every code point as cased, case-ignorable or other (a range table made
    from `str.lower()` itself on probe strings, with the code points that
    `_clean_text` deletes as ignorable, since they are gone before
    lower-casing, and whitespace and CJK characters as other, since they end
    a word), and rewrites each U+03A3 in the Final_Sigma context to U+03C2
    before the map. The lookup runs only when a batch holds a U+03A3.
  * Lower-cases of several code points ("İ" -> "i" U+0307) and NFD expansions
    are just map entries with several code points (and Mn marks dropped).
  * NFD reorders each run of non-starters (canonical combining class != 0) by
    class. After Mn marks are dropped, the only non-starters left are 25 Mc
    characters (viramas of class 9, U+16FF0/1 of class 6, U+302E/F of 224,
    musical stems of 216 and 226); two of them can meet in one run ("a"
    U+1D16D U+1D165 -> "a" U+1D165 U+1D16D). The graph numbers the runs of
    the NFD stream (a run starts at each starter, counting the starters each
    source character's NFD holds, including Mn starters that are then
    dropped, and at each text start) and stably sorts those characters by
    (run, class) into their own slots. None of them is punctuation, so the
    padding of step 6 is not disturbed. This runs only when a batch holds one
    of them.
  * `_is_punctuation`, `_is_control`, `_is_whitespace`, `_is_chinese_char`,
    category Mn: per character by definition.

Tables: generated in Python from the rule functions of bert_tf/full_tokenizer.py
(`_clean_rule`, `_chinese_rule`, `_strip_accents_rule`, `_punctuation_rule`)
and `str.lower()` / `unicodedata.normalize("NFD")`, once per process and
casing (`functools.lru_cache`). Only code points that a rule can touch are
run through the rules (the categories the predicates test: Cc Cf Zs Mn P*, plus
ASCII, U+FFFD, whitespace and, uncased, those that `str.lower()` or NFD
change); every other code point maps to itself. Building takes about 1 s on
one CPU core (one `unicodedata.category` pass over all code points, shared by
both casings, is most of it). They follow the Unicode version of the Python
that builds them (`unicodedata.unidata_version`), as does `FullTokenizer`; a
SavedModel stores them as constants.

Differences from FullTokenizer (tokens and ids are otherwise equal; the
tests check every code point, both casings, alone and in context):
  * Input is UTF-8 bytes, so a Python str holding a lone surrogate (which has
    no UTF-8 form) cannot be given; FullTokenizer would keep it as a letter.
  * `preserve_unused_tokens=True` (pip's flag) is not supported; the default
    False is what this matches.
  * The vocab must hold "[UNK]" (FullTokenizer tokenizes without it, and only
    `convert_tokens_to_ids` raises KeyError on an [UNK] token).
  * `tokenize` takes a rank-1 string Tensor.
  * With `max_text_bytes` (a served model's cap; None, no cap, by default)
    only the first max_text_bytes bytes of each text are tokenized (see
    `cut_texts`).

Long and hostile texts (`max_text_bytes`, `bert-export-saved-model
--max_text_bytes`): a text longer than the cap is cut to its first
max_text_bytes bytes, and then back to the last character boundary, before
anything else reads it, so the work and memory of a text are bounded by the
cap, not by what a client sends. A text of at most max_text_bytes bytes is
tokenized as it is; a longer one exactly as its first max_text_bytes bytes
would be (the cut takes off only a character that it splits, which
decoding would drop as invalid anyway, so it never makes invalid UTF-8 of
valid text). No byte count can be exact for every text that fits
max_seq_length tokens (whitespace, control characters, invalid bytes and
accents make arbitrarily long runs of no token), hence a cap with a
generous default rather than a bound. Each token covers at least one byte
(no code point maps to more non-space characters than its UTF-8 bytes), so
a cut text has at most max_text_bytes tokens.
"""

import collections
import collections.abc
import functools
import os
import sys
import unicodedata

import numpy as np
import tensorflow as tf

from bert_tf.tokenization import full_tokenizer
from bert_tf.errors import UserError
from bert_tf.tokenization import vocab as vocab_lib

# WordpieceTokenizer's defaults.
_UNK_TOKEN = "[UNK]"
_MAX_INPUT_CHARS_PER_WORD = 200

# The bytes of each text a served model reads (`bert-export-saved-model
# --max_text_bytes`'s default): 128 bytes per token at max_seq_length 512,
# where English text takes about 5 and CJK 3.
DEFAULT_MAX_TEXT_BYTES = 65536

_SPACE = 0x20
_CAPITAL_SIGMA = 0x3A3
_FINAL_SIGMA = 0x3C2

# Final_Sigma context classes of a code point (see `_sigma_classes`).
_OTHER, _CASED, _IGNORABLE = 0, 1, 2

# Hangul syllables (Unicode §3.12): S = SBase + (L * VCount + V) * TCount + T.
_HANGUL_S_BASE, _HANGUL_S_COUNT = 0xAC00, 11172
_HANGUL_L_BASE, _HANGUL_V_BASE, _HANGUL_T_BASE = 0x1100, 0x1161, 0x11A7
_HANGUL_N_COUNT, _HANGUL_T_COUNT = 588, 28

# Categories the predicates of full_tokenizer.py test (`_is_control`: Cc Cf;
# `_is_whitespace`: Zs; `_is_nonspacing_mark`: Mn; `_is_punctuation`: P*).
# A code point outside them, not ASCII, not U+FFFD, not whitespace (which
# covers Zl, Zp and the Cc separators), and (uncased) unchanged by lower()
# and NFD maps to itself: no rule applies to it.
_RULE_CATEGORIES = ("Cc", "Cf", "Zs", "Mn", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps")


# ---------------------------------------------------------------------------
# Tables, built in Python from the rules of full_tokenizer.py
# ---------------------------------------------------------------------------


class _CodePointTables(object):
    """The numpy tables of one casing (see `_code_point_tables`).

    A plain object (not a tuple or dict), so `tf.Module` does not try to
    track the arrays.

    Attributes:
      map_keys: int32 [n], sorted: the code points whose mapped text is not
        themselves (CJK padding and Hangul syllables are not stored).
      map_splits: int32 [n + 1]: entry i maps to map_values[splits[i]:splits[i+1]].
      map_values: int32 [m]: mapped code points; whitespace is 0x20.
      map_starters: int32 [n]: starters (canonical combining class 0) in the
        NFD stream of entry i (uncased only; 0 for a deleted code point).
      map_local: int32 [m]: starters of that stream before each value.
      sigma_bounds, sigma_classes: int32 [r]: code points from
        sigma_bounds[j] on have Final_Sigma class sigma_classes[j] (uncased).
      reorder_keys, reorder_classes: int32 [k]: the non-starters that can
        survive accent stripping, and their canonical combining classes.
    """

    def __init__(self, **arrays):
        self.__dict__.update(arrays)


@functools.lru_cache(maxsize=None)
def _unicode_facts():
    """(code points, the text of all of them, their categories) without surrogates."""
    cps = np.arange(sys.maxunicode + 1, dtype=np.int64)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]
    text = cps.astype("<u4").tobytes().decode("utf-32-le")
    categories = np.array(list(map(unicodedata.category, text)))
    return cps, text, categories


def _map_code_point(cp, do_lower_case):
    """Steps 2, 3, 5-7 on chr(cp), as (values, local starters, starters, cjk).

    `values` are the code points of the mapped text without the CJK padding,
    whitespace written as 0x20; `cjk` says whether step 3 pads it. With
    do_lower_case, `starters` counts the starters of NFD(lower(chr(cp))) and
    `local[i]` those before the character that gave values[i].
    """
    cleaned = full_tokenizer._clean_rule(cp)
    if cleaned is None:
        return (), (), 0, False
    if cleaned != cp:
        return tuple(_SPACE if c.isspace() else ord(c) for c in cleaned), (0,), 1, False
    cjk = full_tokenizer._chinese_rule(cp) != cp
    text = chr(cp)
    if do_lower_case:
        text = unicodedata.normalize("NFD", text.lower())
    values, local = [], []
    starters = 0
    for char in text:
        c = ord(char)
        if not do_lower_case or full_tokenizer._strip_accents_rule(c) is not None:
            punct = full_tokenizer._punctuation_rule(c)
            for out in (chr(punct) if punct == c else punct):
                values.append(_SPACE if out.isspace() else ord(out))
                local.append(starters)
        if unicodedata.combining(char) == 0:
            starters += 1
    return tuple(values), tuple(local), starters, cjk


def _hangul_nfd(cp):
    s = cp - _HANGUL_S_BASE
    out = (_HANGUL_L_BASE + s // _HANGUL_N_COUNT,
           _HANGUL_V_BASE + (s % _HANGUL_N_COUNT) // _HANGUL_T_COUNT)
    if s % _HANGUL_T_COUNT:
        out += (_HANGUL_T_BASE + s % _HANGUL_T_COUNT,)
    return out


def _sigma_classes():
    """Final_Sigma classes as runs: (bounds, classes), int32 arrays."""
    cps, text, categories = _unicode_facts()
    classes = np.full(len(cps), _OTHER, np.int32)
    # Unassigned and private-use code points are neither cased nor
    # case-ignorable; the others are probed with str.lower() itself:
    # "A" c "Σ" ends in "ς" iff c is ignorable or cased, c "Σ" iff c is cased
    # and not ignorable (CPython's handle_capital_sigma).
    probe = np.nonzero((categories != "Cn") & (categories != "Co"))[0]
    chars = [text[i] for i in probe]
    after_a = [s[-1] == "\u03c2" for s in map(str.lower, ["A" + c + "\u03a3" for c in chars])]
    alone = [s[-1] == "\u03c2" for s in map(str.lower, [c + "\u03a3" for c in chars])]
    for i, a, b in zip(probe, after_a, alone):
        if b:
            classes[i] = _CASED
        elif a:
            classes[i] = _IGNORABLE
    # The word lower() sees: deleted code points are gone (as if ignorable);
    # whitespace and CJK characters (padded with spaces) end the word.
    for i in np.nonzero(np.isin(categories, ["Cc", "Cf", "Zs", "Zl", "Zp"])
                        | (cps == 0xFFFD) | (cps < 0x80))[0]:
        cp = int(cps[i])
        cleaned = full_tokenizer._clean_rule(cp)
        if cleaned is None:
            classes[i] = _IGNORABLE
        elif cleaned != cp or chr(cp).isspace():
            classes[i] = _OTHER
    for first, last in full_tokenizer._CJK_RANGES:
        classes[(cps >= first) & (cps <= last)] = _OTHER
    # The surrogates (absent above) are never decoded; they join the run of
    # U+D7FF.
    starts = np.concatenate([[0], np.nonzero(classes[1:] != classes[:-1])[0] + 1])
    assert classes[np.searchsorted(cps, _CAPITAL_SIGMA)] == _CASED
    return cps[starts].astype(np.int32), classes[starts]


@functools.lru_cache(maxsize=None)
def _code_point_tables(do_lower_case):
    """The `_CodePointTables` of one casing (cached per process).

    About 0.1 s cased and 0.6 s uncased on one core, after the shared
    `_unicode_facts` (about 0.4 s).
    """
    cps, text, categories = _unicode_facts()
    touched = (np.isin(categories, _RULE_CATEGORIES) | (cps < 0x80)
               | (cps == 0xFFFD) | np.array(list(map(str.isspace, text))))
    if do_lower_case:
        touched |= np.array([c != low for c, low in zip(text, map(str.lower, text))])
        touched |= ~np.array(list(map(functools.partial(
            unicodedata.is_normalized, "NFD"), text)))
    keys, splits, values, starters, local = [], [0], [], [], []
    reorder = set()
    for i in np.nonzero(touched)[0]:
        cp = int(cps[i])
        out, out_local, out_starters, cjk = _map_code_point(cp, do_lower_case)
        reorder.update(c for c in out if unicodedata.combining(chr(c)))
        if out == (cp,) and out_starters == (unicodedata.combining(chr(cp)) == 0):
            continue  # identity
        if (do_lower_case and 0 <= cp - _HANGUL_S_BASE < _HANGUL_S_COUNT
                and not cjk and out == _hangul_nfd(cp) and out_starters == len(out)):
            continue  # computed in the graph
        keys.append(cp)
        values.extend(out)
        splits.append(len(values))
        starters.append(out_starters)
        local.extend(out_local)
    assert keys, "the code point map cannot be empty"
    if do_lower_case:
        # Non-starters mapped to themselves (untouched) are reordered too.
        stored = set(keys)
        reorder.update(int(cps[i]) for i in np.nonzero(np.array(
            list(map(unicodedata.combining, text))))[0] if int(cps[i]) not in stored)
    else:
        reorder = set()  # no NFD without lower-casing
    reorder = sorted(reorder)
    arrays = dict(
        map_keys=np.array(keys, np.int32),
        map_splits=np.array(splits, np.int32),
        map_values=np.array(values, np.int32),
        map_starters=np.array(starters, np.int32),
        map_local=np.array(local, np.int32),
        reorder_keys=np.array(reorder, np.int32),
        reorder_classes=np.array([unicodedata.combining(chr(c)) for c in reorder], np.int32))
    if do_lower_case:
        arrays["sigma_bounds"], arrays["sigma_classes"] = _sigma_classes()
    return _CodePointTables(**arrays)


def _load_vocab(vocab):
    """An OrderedDict token -> id from a vocab file, a mapping or a token list."""
    if isinstance(vocab, (str, bytes, os.PathLike)):
        return vocab_lib.load_vocab(vocab)
    if isinstance(vocab, collections.abc.Mapping):
        return collections.OrderedDict(vocab)
    tokens = list(vocab)
    result = collections.OrderedDict((t, i) for i, t in enumerate(tokens))
    if len(result) != len(tokens):
        raise UserError("the vocab token list has duplicate tokens")
    return result


# ---------------------------------------------------------------------------
# Graph helpers
# ---------------------------------------------------------------------------


def _merged_bounds(ranges):
    """[first, last + 1, ...] of the inclusive `ranges`, merged where they touch."""
    merged = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return np.array([b for first, last in merged for b in (first, last + 1)], np.int32)


_CJK_BOUNDS = _merged_bounds(full_tokenizer._CJK_RANGES)


def _exact_lookup(keys, x):
    """(hit, index): whether each x is in sorted int32 `keys`, and where."""
    n = tf.size(keys)
    index = tf.searchsorted(keys[None], x[None], side="left", out_type=tf.int32)[0]
    index = tf.minimum(index, tf.maximum(n - 1, 0))
    hit = tf.logical_and(n > 0, tf.equal(tf.gather(keys, index), x))
    return hit, index


def _range_lookup(bounds, values, x):
    """values[j] for the last bounds[j] <= x (bounds sorted, bounds[0] == 0)."""
    index = tf.searchsorted(bounds[None], x[None], side="right", out_type=tf.int32)[0]
    return tf.gather(values, index - 1)


def _exclusive_cumsum(x):
    return tf.cumsum(x, exclusive=True)


def check_max_text_bytes(max_text_bytes, name="max_text_bytes"):
    """`max_text_bytes` as an int (None: no cap); `name` is what an error calls it.

    Raises:
      UserError: not None and not a positive integer.
    """
    if max_text_bytes is None:
        return None
    if (isinstance(max_text_bytes, bool) or not isinstance(max_text_bytes, (int, np.integer))
            or max_text_bytes < 1):
        raise UserError("%s=%r: must be a positive integer (the bytes of each text read "
                        "before tokenizing)" % (name, max_text_bytes))
    return int(max_text_bytes)


def _utf8_sequence_length(lead):
    """The bytes of the UTF-8 sequence a lead byte starts (1 for ASCII and a stray byte)."""
    return tf.where(lead >= 0xF0, 4, tf.where(lead >= 0xE0, 3, tf.where(lead >= 0xC0, 2, 1)))


def cut_texts(texts, max_bytes):
    """Each text's first `max_bytes` bytes, without a character that the cut splits.

    A text of at most `max_bytes` bytes is kept whole. A longer one is cut
    after byte `max_bytes`, or before the lead byte of a UTF-8 sequence that
    would run past that byte: a lead byte is looked for in the last 3 bytes
    kept (a sequence is at most 4 bytes long). Decoded with
    errors="ignore" (as `GraphTokenizer` and `full_tokenizer.convert_to_unicode`
    decode), the result is exactly the first `max_bytes` bytes decoded: the
    bytes taken off are a sequence that those bytes end in the middle of,
    which decoding drops as invalid. Invalid bytes before the cut stay (and
    are dropped as ever); valid UTF-8 stays valid.

    Args:
      texts: string Tensor of shape [batch_size].
      max_bytes: Python int, >= 1.

    Returns:
      string Tensor of shape [batch_size].
    """
    length = tf.strings.length(texts)  # bytes
    is_long = length > max_bytes

    def cut():
        long_at = tf.where(is_long)  # [L, 1]
        width = min(3, max_bytes)
        tail = tf.strings.substr(tf.gather_nd(texts, long_at), max_bytes - width, width)
        tail = tf.cast(tf.io.decode_raw(tail, tf.uint8, fixed_length=width), tf.int32)  # [L, w]
        starts = tf.not_equal(tf.bitwise.bitwise_and(tail, 0xC0), 0x80)  # not a continuation
        last = tf.reduce_max(tf.where(starts, tf.range(width)[None, :], -1), axis=1)  # [L]
        lead = tf.gather(tail, tf.maximum(last, 0), batch_dims=1)
        # The sequence from the last lead byte runs past the cut: it goes too.
        split = (last >= 0) & (last + _utf8_sequence_length(lead) > width)
        keep = tf.where(split, max_bytes - width + last, max_bytes)
        keep = tf.tensor_scatter_nd_update(length, long_at, keep)
        return tf.strings.substr(texts, tf.zeros_like(keep), keep)

    return tf.cond(tf.reduce_any(is_long), cut, lambda: tf.identity(texts))


# ---------------------------------------------------------------------------
# GraphTokenizer
# ---------------------------------------------------------------------------


class GraphTokenizer(tf.Module):
    """FullTokenizer + convert_tokens_to_ids + sentence(-pair) packing, in core TF ops.

    Args:
      vocab_file: vocab file path (read with `vocab.load_vocab`), or a
        mapping token -> id, or a list of tokens (ids in list order). Must hold
        "[UNK]"; packing also needs "[CLS]" and "[SEP]".
      do_lower_case: as FullTokenizer's.
      name: tf.Module name.
      max_text_bytes: None (no cap), or a positive int: only the first
        max_text_bytes bytes of each text are tokenized (`cut_texts`); the
        cap is also kept as the variable `max_text_bytes`.

    Call args (`__call__`): see `tokenize` and `pack_pair`.
    Returns (`__call__`): dict of int32 Tensors of shape [batch_size,
      max_seq_length]: `input_ids`, `input_mask`, `segment_ids`.

    Example:
      tokenizer = GraphTokenizer("vocab.txt", do_lower_case=True)
      features = tokenizer(tf.constant(["Is this jacksonville?"]),
                           tf.constant(["No it is not."]), max_seq_length=16)
    """

    def __init__(self, vocab_file, do_lower_case=True, name=None, max_text_bytes=None):
        super().__init__(name=name)
        self._max_text_bytes = check_max_text_bytes(max_text_bytes)
        if self._max_text_bytes is not None:
            self.max_text_bytes = tf.Variable(self._max_text_bytes, trainable=False,
                                              name="max_text_bytes")
        vocab = _load_vocab(vocab_file)
        if _UNK_TOKEN not in vocab:
            raise UserError("the vocab has no %s token, which GraphTokenizer needs"
                            % _UNK_TOKEN)
        self.do_lower_case = bool(do_lower_case)
        self.vocab_size = len(vocab)
        self._unk_id = int(vocab[_UNK_TOKEN])
        self._cls_id = vocab.get("[CLS]")
        self._sep_id = vocab.get("[SEP]")
        # As WordpieceTokenizer: no candidate is longer than every entry.
        self._max_piece_chars = max(len(t) for t in vocab)
        self._tables = _code_point_tables(self.do_lower_case)
        self._vocab_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant([t.encode("utf-8") for t in vocab], tf.string),
                tf.constant(list(vocab.values()), tf.int32)),
            default_value=-1)

    @property
    def cls_id(self):
        """The id of "[CLS]" (None if the vocabulary has none)."""
        return self._cls_id

    @property
    def sep_id(self):
        """The id of "[SEP]" (None if the vocabulary has none)."""
        return self._sep_id

    def cut_texts(self, texts):
        """What `tokenize` reads of each text: `cut_texts(texts, max_text_bytes)` (or all).

        For a signature that reads the text itself (words with offsets,
        [MASK]s) before tokenizing it.
        """
        if self._max_text_bytes is None:
            return texts
        return cut_texts(texts, self._max_text_bytes)

    def bytes_read(self, texts):
        """The first max_text_bytes + 1 bytes of each text (all without a cap); any shape.

        All that `cut_texts` reads of a text, also of one joined from such
        prefixes (the first bytes of a join are the first bytes of its
        parts): drops what no answer depends on before texts are repeated
        and joined.
        """
        if self._max_text_bytes is None:
            return texts
        return tf.strings.substr(texts, 0, self._max_text_bytes + 1)

    def __call__(self, text_a, text_b=None, *, max_seq_length):
        """tokenize + pack_pair: string Tensors [batch] -> dict of [batch, max_seq_length]."""
        if text_b is None:
            return self.pack_pair(self.tokenize(text_a), None, max_seq_length=max_seq_length)
        # One tokenize call on a and b together (each text is tokenized on
        # its own, so the ids are the same): half the ops per batch.
        ids = self.tokenize(tf.concat([text_a, text_b], 0))  # [2B, (tokens)]
        num_a = tf.size(text_a)
        return self.pack_pair(ids[:num_a], ids[num_a:], max_seq_length=max_seq_length)

    # The graph's loops and branches are explicit (tf.while_loop, tf.cond).
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def tokenize(self, texts):
        """WordPiece ids of each text, as FullTokenizer.tokenize + convert_tokens_to_ids.

        Args:
          texts: string Tensor of shape [batch_size], UTF-8 (invalid bytes are
            dropped, as `full_tokenizer.convert_to_unicode` does; each text cut
            to max_text_bytes first, see `cut_texts`).

        Returns:
          int32 RaggedTensor of shape [batch_size, (num_tokens)].
        """
        return self._tokenize_words(texts).merge_dims(1, 2)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def tokenize_words(self, texts):
        """`tokenize` with BasicTokenizer's words kept as a dimension.

        Returns:
          int32 RaggedTensor of shape [batch_size, (words), (wordpieces)]
          (int64 row splits); merging the two ragged dimensions gives `tokenize`.
        """
        return self._tokenize_words(texts)

    def _tokenize_words(self, texts):
        texts = self.cut_texts(texts)
        cps = tf.strings.unicode_decode(texts, "UTF-8", errors="ignore")  # [B, (chars)]
        flat = cps.flat_values  # [N]
        text_of_cp = tf.cast(cps.value_rowids(), tf.int32)  # [N]
        if self.do_lower_case:
            flat = self._final_sigma(flat, text_of_cp)
        values, out_len = self._map(flat, text_of_cp)  # [M], [N]
        slot_splits = tf.gather(tf.concat([[0], tf.cumsum(out_len)], 0),
                                tf.cast(cps.row_splits, tf.int32))  # [B + 1]
        ids, tokens_per_word, words_per_text = self._wordpiece(values, slot_splits)
        return tf.RaggedTensor.from_nested_row_lengths(
            ids, [tf.cast(words_per_text, tf.int64), tf.cast(tokens_per_word, tf.int64)],
            validate=False)

    # -- step 2: final sigma ------------------------------------------------

    def _final_sigma(self, flat, text_of_cp):
        """U+03A3 in the Final_Sigma context -> U+03C2 (CPython's str.lower rule)."""
        t = self._tables
        is_sigma = tf.equal(flat, _CAPITAL_SIGMA)

        def rewrite():
            classes = _range_lookup(tf.constant(t.sigma_bounds), tf.constant(t.sigma_classes), flat)
            kept = tf.not_equal(classes, _IGNORABLE)
            kept_at = tf.cast(tf.where(kept)[:, 0], tf.int32)  # [K]
            rank = tf.cumsum(tf.cast(kept, tf.int32))  # kept code points in [0, i]
            sigma_at = tf.cast(tf.where(is_sigma)[:, 0], tf.int32)  # [S]
            sigma_rank = tf.gather(rank, sigma_at) - 1  # a sigma is itself kept
            num_kept = tf.size(kept_at)
            sigma_text = tf.gather(text_of_cp, sigma_at)

            def cased_at(r):
                at = tf.gather(kept_at, tf.clip_by_value(r, 0, num_kept - 1))
                return ((r >= 0) & (r < num_kept)
                        & tf.equal(tf.gather(text_of_cp, at), sigma_text)
                        & tf.equal(tf.gather(classes, at), _CASED))

            final = cased_at(sigma_rank - 1) & ~cased_at(sigma_rank + 1)
            return tf.tensor_scatter_nd_update(
                flat, sigma_at[:, None],
                tf.where(final, _FINAL_SIGMA, _CAPITAL_SIGMA))

        return tf.cond(tf.reduce_any(is_sigma), rewrite, lambda: flat)

    # -- steps 3-4: the per-code-point map and canonical reordering ---------

    def _map(self, flat, text_of_cp):
        """Maps each code point to its text; returns (values [M], lengths [N])."""
        t = self._tables
        keys = tf.constant(t.map_keys)
        splits = tf.constant(t.map_splits)
        map_values = tf.constant(t.map_values)
        hit, entry = _exact_lookup(keys, flat)  # [N], [N]
        # In a CJK range iff an odd number of range bounds are <= cp.
        cjk = tf.equal(tf.searchsorted(tf.constant(_CJK_BOUNDS)[None], flat[None], side="right",
                                       out_type=tf.int32)[0] % 2, 1)  # [N]
        table_len = tf.where(hit, tf.gather(splits, entry + 1) - tf.gather(splits, entry), 1)
        if self.do_lower_case:
            s = flat - _HANGUL_S_BASE
            hangul = (s >= 0) & (s < _HANGUL_S_COUNT) & ~hit
            has_t = tf.not_equal(s % _HANGUL_T_COUNT, 0)
            inner_len = tf.where(hangul, 2 + tf.cast(has_t, tf.int32), table_len)
        else:
            hangul = tf.zeros_like(hit)
            inner_len = table_len
        pad = tf.cast(cjk, tf.int32)
        out_len = inner_len + 2 * pad  # [N]
        n = tf.size(flat)
        source = tf.repeat(tf.range(n), out_len)  # [M]
        slot = tf.range(tf.size(source)) - tf.gather(_exclusive_cumsum(out_len), source)
        k = slot - tf.gather(pad, source)  # position in the unpadded text
        src_cp = tf.gather(flat, source)
        src_hit = tf.gather(hit, source)
        value_at = tf.gather(splits, tf.gather(entry, source)) + k
        value_at = tf.clip_by_value(value_at, 0, tf.maximum(tf.size(map_values) - 1, 0))
        table_value = tf.gather(map_values, value_at) if t.map_values.size else src_cp
        values = tf.where(src_hit, table_value, src_cp)

        # Hangul syllables and CJK padding are rare in most text: computed
        # only for a batch that holds them.
        def with_hangul(values):
            src_s = tf.gather(s, source)
            hangul_value = tf.where(
                k == 0, _HANGUL_L_BASE + src_s // _HANGUL_N_COUNT,
                tf.where(k == 1, _HANGUL_V_BASE + (src_s % _HANGUL_N_COUNT) // _HANGUL_T_COUNT,
                         _HANGUL_T_BASE + src_s % _HANGUL_T_COUNT))
            return tf.where(tf.gather(hangul, source), hangul_value, values)

        def with_padding(values):
            is_pad = tf.gather(cjk, source) & (
                (slot == 0) | (slot == tf.gather(out_len, source) - 1))
            return tf.where(is_pad, _SPACE, values)

        if self.do_lower_case:
            values = tf.cond(tf.reduce_any(hangul), lambda: with_hangul(values),
                             lambda: values)
        values = tf.cond(tf.reduce_any(cjk), lambda: with_padding(values), lambda: values)
        if self.do_lower_case and t.reorder_keys.size:
            values = self._reorder(values, source, flat, text_of_cp, hit, entry,
                                   hangul, inner_len, pad, value_at, src_hit)
        return values, out_len

    def _reorder(self, values, source, flat, text_of_cp, hit, entry, hangul,
                 inner_len, pad, value_at, src_hit):
        """NFD's canonical ordering of the non-starters that survive accent stripping."""
        t = self._tables
        reorder_keys = tf.constant(t.reorder_keys)
        is_mark, mark_entry = _exact_lookup(reorder_keys, values)

        def reorder():
            src_mark, _ = _exact_lookup(reorder_keys, flat)
            # Starters of each source code point's NFD stream (CJK padding
            # spaces included): a run of non-starters ends at each of them.
            starters = tf.where(
                hit, tf.gather(tf.constant(t.map_starters), entry),
                tf.where(hangul, inner_len, 1 - tf.cast(src_mark, tf.int32))) + 2 * pad
            # A text start also ends a run, hence `+ text index`.
            run_of_source = tf.cast(_exclusive_cumsum(starters) + text_of_cp, tf.int64)
            local = tf.where(src_hit, tf.gather(tf.constant(t.map_local), value_at), 0)
            run = tf.gather(run_of_source, source) + tf.cast(local, tf.int64)  # [M]
            at = tf.cast(tf.where(is_mark)[:, 0], tf.int32)  # [R]
            ccc = tf.gather(tf.constant(t.reorder_classes), tf.boolean_mask(mark_entry, is_mark))
            key = tf.gather(run, at) * 256 + tf.cast(ccc, tf.int64)
            order = tf.argsort(key, stable=True)
            return tf.tensor_scatter_nd_update(
                values, at[:, None], tf.gather(tf.gather(values, at), order))

        return tf.cond(tf.reduce_any(is_mark), reorder, lambda: values)

    # -- step 5: words and WordPiece ----------------------------------------

    def _wordpiece(self, values, slot_splits):
        """WordPiece ids of the words in `values`.

        Returns:
          (ids [T], tokens per word [W], words per text [B]).
        """
        is_char = tf.not_equal(values, _SPACE)  # [M]
        m = tf.size(values)
        num_texts = tf.size(slot_splits) - 1
        text_start = tf.scatter_nd(slot_splits[:-1, None], tf.ones([num_texts], tf.int32),
                                   [m + 1])[:m] > 0
        prev_space = tf.concat([[True], ~is_char], 0)[:-1] | text_start
        word_start = is_char & prev_space  # [M]
        chars = tf.boolean_mask(values, is_char)  # [C]
        char_is_start = tf.boolean_mask(word_start, is_char)
        word_begin = tf.cast(tf.where(char_is_start)[:, 0], tf.int32)  # [W]
        num_chars = tf.size(chars)
        word_len = tf.concat([word_begin[1:], [num_chars]], 0) - word_begin  # [W]
        num_words = tf.size(word_begin)
        words_per_text = tf.math.unsorted_segment_sum(
            tf.cast(word_start, tf.int32),
            tf.repeat(tf.range(num_texts), slot_splits[1:] - slot_splits[:-1]), num_texts)

        # One UTF-8 string of all words; byte_at[i] is where char i starts.
        joined = tf.strings.unicode_encode(chars, "UTF-8")
        utf8_len = (1 + tf.cast(chars >= 0x80, tf.int32) + tf.cast(chars >= 0x800, tf.int32)
                    + tf.cast(chars >= 0x10000, tf.int32))
        byte_at = tf.concat([[0], tf.cumsum(utf8_len)], 0)  # [C + 1]
        max_piece = self._max_piece_chars
        table = self._vocab_table

        def step(i, words, pos, ta_word, ta_step, ta_id, ta_bad):
            rest = tf.gather(word_len, words) - pos
            num_cand = tf.minimum(rest, max_piece)  # >= 1
            cand_word = tf.repeat(tf.range(tf.size(words)), num_cand)  # [Q]
            cand_first = _exclusive_cumsum(num_cand)
            length = tf.range(tf.size(cand_word)) - tf.gather(cand_first, cand_word) + 1
            start = tf.gather(tf.gather(word_begin, words) + pos, cand_word)
            begin_byte = tf.gather(byte_at, start)
            piece = tf.strings.substr(joined, begin_byte,
                                      tf.gather(byte_at, start + length) - begin_byte)
            prefix = tf.where(tf.gather(pos, cand_word) > 0, "##", "")
            ids = table.lookup(tf.strings.join([prefix, piece]))  # [Q]
            best = tf.math.segment_max(tf.where(ids >= 0, length, 0), cand_word)  # [A]
            best_id = tf.gather(ids, cand_first + tf.maximum(best - 1, 0))
            found = best > 0
            ta_word = ta_word.write(i, tf.boolean_mask(words, found))
            ta_step = ta_step.write(i, tf.fill([tf.reduce_sum(tf.cast(found, tf.int32))], i))
            ta_id = ta_id.write(i, tf.boolean_mask(best_id, found))
            ta_bad = ta_bad.write(i, tf.boolean_mask(words, ~found))
            pos = pos + best
            going = found & (pos < tf.gather(word_len, words))
            return (i + 1, tf.boolean_mask(words, going), tf.boolean_mask(pos, going),
                    ta_word, ta_step, ta_id, ta_bad)

        def array():
            return tf.TensorArray(tf.int32, size=0, dynamic_size=True,
                                  element_shape=tf.TensorShape([None]), infer_shape=False)

        long_word = word_len > _MAX_INPUT_CHARS_PER_WORD
        # Most words are vocab entries: one lookup each (the longest match, so
        # the same as WordPiece's first step); the loop gets the rest.
        begin_byte = tf.gather(byte_at, word_begin)
        whole_id = table.lookup(tf.strings.substr(
            joined, begin_byte, tf.gather(byte_at, word_begin + word_len) - begin_byte))
        whole = (whole_id >= 0) & ~long_word
        words = tf.cast(tf.where(~whole & ~long_word)[:, 0], tf.int32)
        _, _, _, ta_word, ta_step, ta_id, ta_bad = tf.while_loop(
            lambda i, words, *_: tf.size(words) > 0, step,
            (tf.constant(0), words, tf.zeros_like(words), array(), array(), array(), array()),
            maximum_iterations=_MAX_INPUT_CHARS_PER_WORD)
        whole_words = tf.cast(tf.where(whole)[:, 0], tf.int32)
        piece_word = tf.concat([whole_words, _concat_array(ta_word)], 0)
        piece_step = tf.concat([tf.zeros_like(whole_words), _concat_array(ta_step)], 0)
        piece_id = tf.concat([tf.boolean_mask(whole_id, whole), _concat_array(ta_id)], 0)
        bad_words = _concat_array(ta_bad)
        bad = tf.scatter_nd(bad_words[:, None], tf.ones_like(bad_words), [num_words]) > 0
        unk = bad | long_word  # [W]: a single [UNK]
        pieces = tf.math.unsorted_segment_sum(tf.ones_like(piece_word), piece_word, num_words)
        tokens_per_word = tf.where(unk, 1, pieces)
        token_at = _exclusive_cumsum(tokens_per_word)  # [W]
        keep = ~tf.gather(unk, piece_word)
        where = tf.boolean_mask(tf.gather(token_at, piece_word) + piece_step, keep)
        ids = tf.tensor_scatter_nd_update(
            tf.fill([tf.reduce_sum(tokens_per_word)], self._unk_id),
            where[:, None], tf.boolean_mask(piece_id, keep))
        return ids, tokens_per_word, words_per_text

    # -- packing ------------------------------------------------------------

    def pack_pair(self, ids_a, ids_b=None, *, max_seq_length):
        """`[CLS] a [SEP] (b [SEP])`, as `pair_features.build_pair_features`.

        Args:
          ids_a: int32 RaggedTensor of shape [batch_size, (tokens)].
          ids_b: (optional) int32 RaggedTensor of shape [batch_size, (tokens)].
            A row with no tokens makes a single-segment example (the original
            tests `if tokens_b`).
          max_seq_length: Python int, >= 2 (>= 3 with ids_b).

        Returns:
          dict of int32 Tensors of shape [batch_size, max_seq_length]:
          `input_ids`, `input_mask`, `segment_ids` (see `pack_segments`).
        """
        for token, token_id in (("[CLS]", self._cls_id), ("[SEP]", self._sep_id)):
            if token_id is None:
                raise KeyError("%r is not in the vocabulary" % token)
        max_seq_length = int(max_seq_length)
        if max_seq_length < (2 if ids_b is None else 3):
            raise UserError("max_seq_length %d is too short for [CLS] a [SEP]%s"
                            % (max_seq_length, "" if ids_b is None else " b [SEP]"))
        return pack_segments([ids_a] if ids_b is None else [ids_a, ids_b], max_seq_length,
                             self._cls_id, self._sep_id)


# ---------------------------------------------------------------------------
# Packing: the one implementation (GraphTokenizer.pack_pair, and the TF Hub
# preprocessor's bert_pack_inputs with its Tensor seq_length)
# ---------------------------------------------------------------------------


def _flat_segment(segment):
    """(values, row_splits) of a [batch, (tokens)] or [batch, (words), (tokens)] RaggedTensor."""
    values = tf.cast(segment.flat_values, tf.int32)
    splits = tf.cast(segment.nested_row_splits[0], tf.int64)
    for inner in segment.nested_row_splits[1:]:
        splits = tf.gather(tf.cast(inner, tf.int64), splits)
    return values, splits


def _take(values, splits, rows, offset):
    """values[splits[rows] + offset] where valid (the caller masks the rest)."""
    padded = tf.concat([values, [0]], 0)  # an index for empty segments
    index = tf.gather(splits, rows)[:, None] + tf.cast(offset, tf.int64)
    index = tf.clip_by_value(index, 0, tf.cast(tf.size(values), tf.int64))
    return tf.gather(padded, index)


def pack_segments(segments, seq_length, cls_id, sep_id):
    """`[CLS] a [SEP] (b [SEP])` of token ids, as `pair_features.build_pair_features`.

    Dense ops, each position picking its token: no ragged op that carries
    validation asserts (in a model's graph, next to the tokenizer's loops,
    those cost every Keras fit / predict a Grappler warning, "Skipping loop
    optimization for Merge node with control input: ...AssertGuard").

    Args:
      segments: list of 1 or 2 int RaggedTensors [batch, (tokens)] or
        [batch, (words), (tokens)] (the words dimension is merged away). A
        row whose second segment has no tokens is a single-segment example
        (the original tests `if tokens_b`).
      seq_length: int32 scalar, a Python int or a Tensor, >= 2 (>= 3 for 2
        segments); the caller checks it.
      cls_id, sep_id: Python ints.

    Returns:
      dict of int32 Tensors [batch, seq_length] (static when `seq_length` is
      a Python int): `input_ids` (zero-padded), `input_mask` (1 for real
      tokens), `segment_ids` (1 from the first token of b through its
      [SEP]). Pairs are truncated as `truncate_seq_pair` does to
      seq_length - 3 (the longer side loses its last token first; on a tie,
      b), single segments to their first seq_length - 2 tokens.
    """
    values_a, splits_a = _flat_segment(segments[0])
    len_a = tf.cast(splits_a[1:] - splits_a[:-1], tf.int32)  # [B]
    if len(segments) == 2:
        values_b, splits_b = _flat_segment(segments[1])
        len_b = tf.cast(splits_b[1:] - splits_b[:-1], tf.int32)
    else:
        values_b, splits_b = values_a, splits_a
        len_b = tf.zeros_like(len_a)
    static_length = seq_length if isinstance(seq_length, int) else None
    seq_length = tf.convert_to_tensor(seq_length, tf.int32)
    # truncate_seq_pair in closed form: the longer side shrinks first (b on a
    # tie) until the total is the budget, so a keeps
    # min(len_a, max(budget - len_b, ceil(budget / 2))).
    budget = seq_length - 3
    fits = len_a + len_b <= budget
    pair_a = tf.where(fits, len_a, tf.minimum(
        len_a, tf.maximum(budget - len_b, (budget + 1) // 2)))
    pair_b = tf.where(fits, len_b, budget - pair_a)
    is_pair = len_b > 0
    keep_a = tf.where(is_pair, pair_a, tf.minimum(len_a, seq_length - 2))[:, None]  # [B, 1]
    keep_b = tf.where(is_pair, pair_b, 0)[:, None]
    # As the original, a b truncated to nothing gets no [SEP] of its own.
    has_b = tf.cast(keep_b > 0, tf.int32)
    b_start = keep_a + 2
    total = b_start + keep_b + has_b
    rows = tf.range(tf.size(len_a))
    j = tf.range(seq_length)[None, :]  # [1, S]
    in_a = (j >= 1) & (j <= keep_a)
    in_b = (j >= b_start) & (j < b_start + keep_b)
    is_sep = tf.equal(j, keep_a + 1) | ((has_b > 0) & tf.equal(j, total - 1))
    word_ids = tf.where(
        tf.equal(j, 0), cls_id,
        tf.where(is_sep, sep_id,
                 tf.where(in_a, _take(values_a, splits_a, rows, j - 1),
                          tf.where(in_b, _take(values_b, splits_b, rows, j - b_start), 0))))
    real = j < total
    types = (j >= b_start) & real

    def fix(x):
        return tf.ensure_shape(tf.cast(x, tf.int32), [None, static_length])

    return {"input_ids": fix(word_ids), "input_mask": fix(real), "segment_ids": fix(types)}


def _concat_array(ta):
    """TensorArray.concat that also works on an empty array."""
    return tf.cond(ta.size() > 0, ta.concat, lambda: tf.zeros([0], tf.int32))
