# coding=utf-8
"""BERT tokenization: the original `tokenization.py`, token for token.

Port of google-research/bert `tokenization.py` as shipped in PyPI
`bert-tensorflow==1.0.4` ("pip"). Pure Python: no TensorFlow import unless the
vocab path is a remote URL (`gs://...`), which is read with `tf.io.gfile`.
The vocab file's helpers (`load_vocab`, `check_vocab`, `convert_by_vocab`,
...) are in `bert_tf.tokenization.vocab`, the pair features in
`bert_tf.tokenization.pair_features`; both are importable from here too.

Pipeline (same steps, same order as the original):

  FullTokenizer.tokenize(text)
    BasicTokenizer.tokenize(text)
      1. convert_to_unicode         bytes -> str (utf-8, invalid bytes dropped)
      2. _clean_text                drop NUL, U+FFFD and Cc/Cf controls (except
                                    \\t \\n \\r); map \\t \\n \\r and Zs to " "
      3. _tokenize_chinese_chars    put spaces around every `_CJK_RANGES` char
      4. whitespace_tokenize        str.split() (all Unicode whitespace)
      5. (do_lower_case only)       str.lower(), then _run_strip_accents:
                                    NFD and drop every Mn character
      6. _run_split_on_punc         every `_is_punctuation` char is a token
      7. whitespace_tokenize        of the pieces joined by " "
    WordpieceTokenizer            greedy longest-match-first per word; a word
                                  longer than 200 characters, or one with an
                                  unmatchable rest, is a single "[UNK]"

Model inputs and text (additions, with Hugging Face `BertTokenizer`'s names).
`FullTokenizer.encode(text_a, text_b, max_seq_length)` gives the features of
the original's `convert_single_example` (`build_pair_features`, their one
home: `bert_tf.tokenization.pair_features`); `FullTokenizer(...)(texts,
text_pair, padding=, truncation=, max_length=, return_tensors=)` a batch of
them as lists, NumPy or TensorFlow (imported only then); `decode(ids)` and
`convert_tokens_to_string(tokens)` write text back as Hugging Face
tokenizers' WordPiece decoder does; `never_split=` keeps given tokens whole,
the rule of `preserve_unused_tokens` for any tokens. Where the ids differ
from Hugging Face tokenizers' `BertWordPieceTokenizer` (the original's
200-character words, Python's Unicode tables, the tie of `truncate_seq_pair`,
...), the original wins: tests/test_tokenizer_api.py pins each case.

Speed. The original classifies every character with a Python function call.
Here each per-character step is a `str.translate` over a memo table that is
filled on first sight of a code point from the very same predicates
(`_is_control`, `_is_whitespace`, `_is_chinese_char`, `_is_punctuation`,
category "Mn"), so steps 2-7 run as a handful of C-level string operations on
the whole text, and WordPiece results are memoised per word. The output is
identical to the original's (checked exhaustively per code point and on a
real corpus in tests/test_tokenization.py); see `BasicTokenizer.tokenize` for
why the fused form is exact.

Moving to a TensorFlow graph. Every rule is a small named predicate over code
points, and the code-point sets are module-level data (`_CJK_RANGES`,
`_ASCII_PUNCTUATION_RANGES`), so each step has a string-op counterpart: steps
2-3 and 6 are regex replacements over these classes, step 5 is lower-casing +
`tensorflow_text.normalize_utf8(..., "NFD")` + removing `\\p{Mn}`, and WordPiece
is `tensorflow_text.WordpieceTokenizer(unknown_token="[UNK]")` with its byte
cap raised and the 200-character cap applied separately (tf-text counts bytes).
Whether TF's lower-casing equals Python's `str.lower()` (e.g. for "İ" and the
Greek final sigma) is unverified: run the differential tests of
tests/test_tokenization.py against any graph version. tf-text's own
`BertTokenizer(lower_case=True)` uses NFKC case folding and is NOT equivalent.
"""

import functools
import os
import re
import unicodedata

from bert_tf.errors import UserError
from bert_tf.tokenization import huggingface
# The vocab helpers and the pair features have their own modules; their names
# stay importable from here, as from the original's tokenization module.
from bert_tf.tokenization.pair_features import PairFeatures  # noqa: F401
from bert_tf.tokenization.pair_features import build_pair_features
from bert_tf.tokenization.pair_features import pad_features
from bert_tf.tokenization.pair_features import truncate_seq_pair  # noqa: F401
from bert_tf.tokenization.vocab import check_vocab  # noqa: F401
from bert_tf.tokenization.vocab import convert_by_vocab
from bert_tf.tokenization.vocab import convert_ids_to_tokens
from bert_tf.tokenization.vocab import convert_tokens_to_ids  # noqa: F401
from bert_tf.tokenization.vocab import load_vocab

# Inclusive code-point ranges that `_tokenize_chinese_chars` isolates with
# spaces: the CJK Unified Ideographs block, Extensions A-E, and the two CJK
# Compatibility Ideographs blocks. Hangul, Hiragana and Katakana are NOT here
# (those scripts separate words with spaces).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),    # CJK Unified Ideographs
    (0x3400, 0x4DBF),    # Extension A
    (0x20000, 0x2A6DF),  # Extension B
    (0x2A700, 0x2B73F),  # Extension C
    (0x2B740, 0x2B81F),  # Extension D
    (0x2B820, 0x2CEAF),  # Extension E
    (0xF900, 0xFAFF),    # CJK Compatibility Ideographs
    (0x2F800, 0x2FA1F),  # CJK Compatibility Ideographs Supplement
)

# Inclusive ranges of ASCII code points that count as punctuation although
# some (e.g. "$", "^", "`", "+", "<", "=", ">", "|", "~") are not in a Unicode
# P* category: all printable non-alphanumeric ASCII.
_ASCII_PUNCTUATION_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))

# `\t`, `\n`, `\r` are Cc, but the original treats them as whitespace.
_WHITESPACE_CONTROLS = ("\t", "\n", "\r")

# pip's `preserve_token` regex for `[unusedN]` vocab entries.
_UNUSED_TOKEN_RE = re.compile("^\\[unused\\d+\\]$")

# The tokens that `decode(..., skip_special_tokens=True)` leaves out: the
# reserved tokens of every BERT vocab (Hugging Face's special tokens).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# Hugging Face tokenizers' WordPiece decoder (`cleanup=True`) makes these
# replacements in each token after it has put a " " before it.
_DECODE_CLEANUP = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))

# Default bound on the per-word WordPiece memo (entries, not bytes).
_DEFAULT_WORDPIECE_CACHE_SIZE = 1 << 17

# Bound on each per-code-point translate table (see `_CharTable`).
_MAX_CHAR_TABLE_ENTRIES = 1 << 16


# ---------------------------------------------------------------------------
# Character classes (the original's helpers, same names and semantics)
# ---------------------------------------------------------------------------


def _is_whitespace(char):
    """Checks whether `char` is a whitespace character (" ", \\t, \\n, \\r, Zs)."""
    if char == " " or char in _WHITESPACE_CONTROLS:
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    """Checks whether `char` is a control character (Cc or Cf, but not \\t \\n \\r)."""
    if char in _WHITESPACE_CONTROLS:
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    """Checks whether `char` is punctuation: non-alphanumeric ASCII or a P* category."""
    cp = ord(char)
    for first, last in _ASCII_PUNCTUATION_RANGES:
        if first <= cp <= last:
            return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    """Checks whether code point `cp` (an int) is in one of `_CJK_RANGES`."""
    for first, last in _CJK_RANGES:
        if first <= cp <= last:
            return True
    return False


def _is_nonspacing_mark(char):
    """Checks whether `char` is in category Mn (what `_run_strip_accents` drops)."""
    return unicodedata.category(char) == "Mn"


# ---------------------------------------------------------------------------
# Memoised translate tables built from the predicates above
# ---------------------------------------------------------------------------


class _CharTable(dict):
    """A `str.translate` table filled lazily from `rule(code_point)`.

    `rule` returns None (delete the char), a replacement string, or the code
    point itself (keep). The table is a pure memo of `rule`, shared by all
    tokenizers; it never changes what `rule` returns. It holds at most
    `max_entries` code points (real text uses a few thousand); past that,
    `rule` is simply called again for code points not yet stored.
    """

    def __init__(self, rule, max_entries=_MAX_CHAR_TABLE_ENTRIES):
        super().__init__()
        self._rule = rule
        self._max_entries = max_entries

    def __missing__(self, cp):
        value = self._rule(cp)
        if len(self) < self._max_entries:
            self[cp] = value
        return value


def _clean_rule(cp):
    char = chr(cp)
    if cp == 0 or cp == 0xFFFD or _is_control(char):
        return None
    if _is_whitespace(char):
        return " "
    return cp


def _chinese_rule(cp):
    return " %s " % chr(cp) if _is_chinese_char(cp) else cp


def _clean_and_chinese_rule(cp):
    # Step 2 then step 3 of the pipeline, fused: a CJK char is never dropped
    # or mapped to " " by step 2, so applying both per char is the same as
    # applying them one after the other.
    cleaned = _clean_rule(cp)
    if cleaned == cp:
        return _chinese_rule(cp)
    return cleaned


def _strip_accents_rule(cp):
    return None if _is_nonspacing_mark(chr(cp)) else cp


def _punctuation_rule(cp):
    char = chr(cp)
    return " %s " % char if _is_punctuation(char) else cp


_CLEAN_TABLE = _CharTable(_clean_rule)
_CHINESE_TABLE = _CharTable(_chinese_rule)
_CLEAN_AND_CHINESE_TABLE = _CharTable(_clean_and_chinese_rule)
_STRIP_ACCENTS_TABLE = _CharTable(_strip_accents_rule)
_PUNCTUATION_TABLE = _CharTable(_punctuation_rule)


# ---------------------------------------------------------------------------
# Module-level helpers (the original's API)
# ---------------------------------------------------------------------------


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Checks whether the casing config is consistent with the checkpoint name.

    The casing is not stored in bert_config.json, so it is guessed from the
    directory name of a Google release checkpoint (`.../<model>/bert_model.ckpt`).
    Other paths (fine-tuned `model.ckpt-N`, `wwm_*`, miniature models) are
    never checked.

    Raises:
      UserError: with the original's message, if `do_lower_case` contradicts
        the model named in `init_checkpoint`.
    """
    if not init_checkpoint:
        return
    settings = huggingface.read_tokenizer_config(init_checkpoint) \
        if os.path.isdir(os.fspath(init_checkpoint)) else {}
    if "do_lower_case" in settings and bool(settings["do_lower_case"]) != bool(do_lower_case):
        # New: a Hugging Face directory says its casing.
        raise UserError("--do_lower_case=%s, but %s says do_lower_case=%s; pass "
                        "--do_lower_case=%s" % (do_lower_case, os.path.join(
                            init_checkpoint, huggingface.TOKENIZER_CONFIG),
                            settings["do_lower_case"], bool(settings["do_lower_case"])))
    m = re.match("^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", init_checkpoint)
    if m is None:
        return
    model_name = m.group(1)

    lower_models = [
        "uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
        "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12"
    ]
    cased_models = [
        "cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
        "multi_cased_L-12_H-768_A-12"
    ]

    if model_name in lower_models and not do_lower_case:
        actual_flag, case_name, opposite_flag = "False", "lowercased", "True"
    elif model_name in cased_models and do_lower_case:
        actual_flag, case_name, opposite_flag = "True", "cased", "False"
    else:
        return
    # Port note: the original raises a plain ValueError; UserError is a
    # ValueError subclass, so `except ValueError` still catches it.
    raise UserError(
        "You passed in `--do_lower_case=%s` with `--init_checkpoint=%s`. "
        "However, `%s` seems to be a %s model, so you "
        "should pass in `--do_lower_case=%s` so that the fine-tuning matches "
        "how the model was pre-training. If this error is wrong, please "
        "just comment out this check." % (actual_flag, init_checkpoint,
                                          model_name, case_name, opposite_flag))


def convert_to_unicode(text):
    """Converts `text` to str, assuming utf-8 bytes; invalid bytes are dropped."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError("Unsupported string type: %s" % (type(text)))


def printable_text(text):
    """Returns `text` as a str suitable for printing or logging."""
    return convert_to_unicode(text)


def whitespace_tokenize(text):
    """Strips and splits `text` on any Unicode whitespace (Python `str.split()`)."""
    return text.split()


def _unused_tokens(vocab, preserve_unused_tokens):
    """The `[unusedN]` entries of `vocab` that tokenization keeps whole."""
    if not preserve_unused_tokens:
        return frozenset()
    return frozenset(t for t in vocab if _UNUSED_TOKEN_RE.search(t))


def _never_split_tokens(never_split):
    """`never_split` as a frozenset; a token that can never be one word of a text is refused.

    A text is split into words at whitespace after `_clean_text` and
    `_tokenize_chinese_chars`, so a token with whitespace, a control
    character or a CJK character can never be one of its words.
    """
    if never_split is None:
        return frozenset()
    if isinstance(never_split, (str, bytes)):
        raise UserError("never_split must be a list of tokens, not the string %r"
                        % (never_split,))
    tokens = frozenset(never_split)
    for token in sorted(tokens, key=repr):
        if not isinstance(token, str) or token.translate(
                _CLEAN_AND_CHINESE_TABLE).split() != [token]:
            raise UserError("never_split token %r can never be a word of a text (it is "
                            "empty or holds whitespace, a control or a CJK character)"
                            % (token,))
    return tokens


def _wordpiece_decoder_cleanup(piece):
    """The clean-up of Hugging Face tokenizers' WordPiece decoder, on one piece (see `decode`)."""
    for dirty, clean in _DECODE_CLEANUP:
        piece = piece.replace(dirty, clean)
    return piece


# ---------------------------------------------------------------------------
# Tokenizers
# ---------------------------------------------------------------------------


class FullTokenizer(object):
    """Runs end-to-end tokenization: BasicTokenizer, then WordPiece.

    Besides the original's `tokenize`, `convert_tokens_to_ids` and
    `convert_ids_to_tokens` (unchanged), it builds model inputs and reads them
    back, with Hugging Face `BertTokenizer`'s names:

      encode(text_a, text_b, max_seq_length)   one example's features, as the
                                               original's `convert_single_example`
      tokenizer(texts, text_pair, padding=, truncation=, max_length=,
                return_tensors=)               a batch of them (NumPy or TF)
      decode(ids), convert_tokens_to_string    ids / tokens back to text

    Attributes:
      vocab: OrderedDict token -> id (see `load_vocab`).
      inv_vocab: dict id -> token.
      basic_tokenizer: the `BasicTokenizer`.
      wordpiece_tokenizer: the `WordpieceTokenizer`.
      never_split: frozenset of the tokens kept whole (see `__init__`).
    """

    def __init__(self, vocab_file, do_lower_case=True,
                 preserve_unused_tokens=False, never_split=None):
        """Builds the tokenizer.

        Args:
          vocab_file: vocab file, one token per line.
          do_lower_case: lower-case and strip accents (uncased models).
          preserve_unused_tokens: keep `[unusedN]` vocab entries typed in the
            text as single tokens. Port note: pip reads this from the absl
            flag `--preserve_unused_tokens`; here it is an argument.
          never_split: (optional) list of vocab tokens that, when a word of the
            text (between whitespace) is one of them exactly, is kept whole:
            not lower-cased, not split on punctuation, not split into word
            pieces (e.g. `["[MASK]"]`). The same rule as
            `preserve_unused_tokens`, for any tokens (Hugging Face's
            `BertTokenizer(never_split=...)`).

        Raises:
          UserError: the vocab file cannot be read, or a `never_split` token
            is not in it or can never be a word of a text.
        """
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.preserve_unused_tokens = preserve_unused_tokens
        self.never_split = _never_split_tokens(never_split)
        for token in sorted(self.never_split):
            if token not in self.vocab:
                raise UserError("never_split token %r is not in the vocab_file %s"
                                % (token, vocab_file))
        self.basic_tokenizer = BasicTokenizer(
            do_lower_case=do_lower_case, vocab=self.vocab,
            preserve_unused_tokens=preserve_unused_tokens,
            never_split=self.never_split)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        self._preserved = (_unused_tokens(self.vocab, preserve_unused_tokens)
                           | self.never_split)

    def tokenize(self, text):
        """Tokenizes str (or utf-8 bytes) `text` into a list of WordPiece strings."""
        tokenize_word = self.wordpiece_tokenizer.tokenize_word
        split_tokens = []
        if self._preserved:
            preserved = self._preserved
            for token in self.basic_tokenizer.tokenize(text):
                if token in preserved:
                    split_tokens.append(token)
                else:
                    split_tokens.extend(tokenize_word(token))
        else:
            for token in self.basic_tokenizer.tokenize(text):
                split_tokens.extend(tokenize_word(token))
        return split_tokens

    def convert_tokens_to_ids(self, tokens):
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        return convert_ids_to_tokens(self.inv_vocab, ids)

    # -- model inputs --------------------------------------------------------

    def _features(self, text_a, text_b, max_seq_length, padding=True):
        tokens_a = self.tokenize(text_a)
        # As `convert_single_example`: an empty second text is no second
        # segment, and neither is one that tokenizes to nothing.
        tokens_b = self.tokenize(text_b) if text_b else None
        return build_pair_features(tokens_a, tokens_b, max_seq_length, self, padding)

    def encode(self, text_a, text_b=None, max_seq_length=None):
        """The model inputs of one text or text pair, as the original's classifier builds them.

        `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`: exactly the features of
        `run_classifier.convert_single_example` (see `build_pair_features`).

        Args:
          text_a: str (or utf-8 bytes), the first text.
          text_b: (optional) the second text; None, "" or a text that
            tokenizes to nothing gives a single-segment example.
          max_seq_length: (optional) int: truncate as the original (pairs: the
            longer segment loses its last token first, on a tie b; single: the
            first max_seq_length - 2 tokens) and zero-pad to this length.
            None: neither truncate nor pad.

        Returns:
          dict with `input_ids`, `input_mask`, `segment_ids`: lists of int.

        Raises:
          UserError: max_seq_length is too short for [CLS] and the [SEP]s.
        """
        features = self._features(text_a, text_b, max_seq_length)
        return {"input_ids": features.input_ids, "input_mask": features.input_mask,
                "segment_ids": features.segment_ids}

    def __call__(self, text, text_pair=None, padding=False, truncation=False,
                 max_length=None, return_tensors=None):
        """Model inputs of a text or a batch of texts, with Hugging Face's arguments.

        Each example is `encode`'s (the original's features); the arguments
        choose truncation and padding as in Hugging Face's
        `tokenizer(text, text_pair=..., padding=..., truncation=...,
        max_length=..., return_tensors=...)`.
        `tokenizer(texts_a, texts_b, padding="max_length", truncation=True,
        max_length=128)` gives, row by row, `convert_single_example`'s
        features.

        Args:
          text: a str (one example) or a list of str (a batch).
          text_pair: (optional) the second texts: a str with a str `text`, a
            list as long as `text` with a list. A second text that is empty or
            tokenizes to nothing gives a single-segment example, as in the
            original.
          padding: False or "do_not_pad": no padding; True or "longest": zero-pad
            to the longest example of the batch; "max_length": zero-pad to
            `max_length`.
          truncation: False or "do_not_truncate": none; True or
            "longest_first": the original's truncation to `max_length`
            (`truncate_seq_pair`).
          max_length: int; needed by `truncation` and `padding="max_length"`.
          return_tensors: None: lists of int (a list of lists for a batch);
            "np": int32 NumPy arrays [batch_size, seq_length]; "tf": int32
            `tf.Tensor`s of that shape (TensorFlow is imported then). A str
            `text` is a batch of one with "np" and "tf".

        Returns:
          dict with `input_ids`, `input_mask` (Hugging Face's `attention_mask`)
          and `segment_ids` (Hugging Face's `token_type_ids`), the names
          bert_tf's models take.

        Raises:
          UserError: an argument that is not one of the above, `max_length`
            missing or too short, texts and pairs of different lengths, or
            examples of different lengths with return_tensors but no padding.
        """
        if padding in (True, "longest"):
            padding = "longest"
        elif padding in (False, None, "do_not_pad"):
            padding = None
        elif padding != "max_length":
            raise UserError("padding=%r: use False, True ('longest') or 'max_length'" % (padding,))
        if truncation in (True, "longest_first"):
            truncation = True
        elif truncation in (False, None, "do_not_truncate"):
            truncation = False
        else:
            raise UserError("truncation=%r: use False or True ('longest_first', the original's "
                            "truncate_seq_pair)" % (truncation,))
        if return_tensors not in (None, "np", "tf"):
            raise UserError("return_tensors=%r: use None (lists), 'np' or 'tf'" % (return_tensors,))
        if max_length is None and (truncation or padding == "max_length"):
            raise UserError("%s needs max_length" % (
                "truncation=True" if truncation else "padding='max_length'"))

        single = isinstance(text, (str, bytes))
        if single:
            texts_a = [text]
            if text_pair is not None and not isinstance(text_pair, (str, bytes)):
                raise UserError("text_pair must be a str when text is a str")
            texts_b = None if text_pair is None else [text_pair]
        else:
            texts_a = list(text)
            if text_pair is None:
                texts_b = None
            elif isinstance(text_pair, (str, bytes)):
                raise UserError("text_pair must be a list of texts when text is a list")
            else:
                texts_b = list(text_pair)
                if len(texts_b) != len(texts_a):
                    raise UserError("text has %d texts but text_pair has %d"
                                    % (len(texts_a), len(texts_b)))
        rows = [self._features(a, None if texts_b is None else texts_b[i],
                               max_length if truncation else None, padding=False)
                for i, a in enumerate(texts_a)]
        if padding == "longest":
            longest = max((len(row.input_ids) for row in rows), default=0)
            rows = [pad_features(row, longest) for row in rows]
        elif padding == "max_length":
            rows = [pad_features(row, max_length) for row in rows]
        keys = ("input_ids", "input_mask", "segment_ids")
        if return_tensors is None:
            if single:
                return {key: getattr(rows[0], key) for key in keys}
            return {key: [getattr(row, key) for row in rows] for key in keys}
        lengths = sorted(set(len(row.input_ids) for row in rows))
        if len(lengths) > 1:
            raise UserError("return_tensors=%r needs examples of one length (they have %d to "
                            "%d tokens): pass padding=True or padding='max_length'"
                            % (return_tensors, lengths[0], lengths[-1]))
        import numpy as np  # pylint: disable=g-import-not-at-top
        arrays = {key: np.array([getattr(row, key) for row in rows], np.int32).reshape(
            len(rows), lengths[0] if rows else 0) for key in keys}
        if return_tensors == "tf":
            import tensorflow as tf  # pylint: disable=g-import-not-at-top
            return {key: tf.constant(value) for key, value in arrays.items()}
        return arrays

    # -- back to text --------------------------------------------------------

    def convert_tokens_to_string(self, tokens):
        """Joins WordPiece tokens into text: " " between tokens, none before a `##` piece.

        `["un", "##aff", "##able", "!"]` gives "unaffable !" (Hugging Face's
        `BertTokenizer.convert_tokens_to_string`). Tokenization is lossy, so
        this is not the original text: it is lower-cased and without accents
        for an uncased model, has a space on each side of punctuation and
        "[UNK]" for unknown words.
        """
        return self._join(tokens, cleanup=False)

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=True):
        """The text of token ids, as Hugging Face tokenizers' BERT decoder writes it.

        `convert_ids_to_tokens`, then `convert_tokens_to_string`, and with
        `clean_up_tokenization_spaces` the clean-up of Hugging Face tokenizers'
        WordPiece decoder: no space before ".", "?", "!" and ",". Its other
        rules (" n't", " 's", ...) look at one token at a time, so they never
        apply to BERT's tokens: "don ' t" stays as it is.

        Args:
          ids: a sequence of int (a list, a 1-D NumPy array or tf.Tensor).
          skip_special_tokens: leave out `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`,
            `[MASK]` (Hugging Face's special tokens of a BERT vocab).
          clean_up_tokenization_spaces: see above.

        Returns:
          str.

        Raises:
          UnknownIdError: (a `UserError` and a `KeyError`) an id that is not in the
            vocab, named with the vocab's size (as `convert_ids_to_tokens`).
        """
        tokens = self.convert_ids_to_tokens([int(i) for i in ids])
        if skip_special_tokens:
            tokens = [token for token in tokens if token not in SPECIAL_TOKENS]
        return self._join(tokens, cleanup=clean_up_tokenization_spaces)

    def _join(self, tokens, cleanup):
        # Hugging Face tokenizers' WordPiece decoder: each token but the first
        # loses a leading "##" or gains a leading " ", then is cleaned up.
        pieces = []
        for i, token in enumerate(tokens):
            if i:
                token = token[2:] if token.startswith("##") else " " + token
            pieces.append(_wordpiece_decoder_cleanup(token) if cleanup else token)
        return "".join(pieces)


class BasicTokenizer(object):
    """Runs basic tokenization (punctuation splitting, lower casing, etc.)."""

    def __init__(self, do_lower_case=True, vocab=(),
                 preserve_unused_tokens=False, never_split=None):
        """Constructs a BasicTokenizer.

        Args:
          do_lower_case: Whether to lower case the input (and strip accents).
          vocab: A container of tokens; with `preserve_unused_tokens`, its
            `[unusedN]` entries are not mutated during tokenization.
          preserve_unused_tokens: see `FullTokenizer`.
          never_split: (optional) list of tokens not mutated during
            tokenization either (see `FullTokenizer`; here they need not be
            in `vocab`).
        """
        self.do_lower_case = do_lower_case
        self.vocab = vocab
        self.preserve_unused_tokens = preserve_unused_tokens
        self.never_split = _never_split_tokens(never_split)
        self._preserved = _unused_tokens(vocab, preserve_unused_tokens) | self.never_split

    def tokenize(self, text):
        """Tokenizes a piece of text into a list of str tokens.

        Steps 1-7 of the module docstring. After step 3, the per-token steps
        (lower, strip accents, split on punctuation, re-split) run on the
        whole text at once; this gives the same tokens because
          * `str.lower()` only looks across characters for the Greek final
            sigma, whose context never extends over a whitespace character;
          * NFD reorders only runs of combining marks, and every separator
            left after step 2 (" ", U+2028, U+2029) is a starter;
          * dropping Mn chars and isolating punctuation are per character, and
            the final `str.split()` splits wherever step 4 did.
        """
        text = convert_to_unicode(text)
        # Steps 2 and 3 (_clean_text, _tokenize_chinese_chars) in one pass.
        text = text.translate(_CLEAN_AND_CHINESE_TABLE)
        if self._preserved:
            tokens = text.split()
            if any(token in self._preserved for token in tokens):
                output = []
                for token in tokens:
                    if token in self._preserved:
                        output.append(token)
                    else:
                        output.extend(self._lower_and_split(token))
                return output
        return self._lower_and_split(text)

    def _lower_and_split(self, text):
        """Steps 5-7 on cleaned text: [lower + strip accents], punctuation, split."""
        if self.do_lower_case:
            text = text.lower()
            if not text.isascii():
                text = self._run_strip_accents(text)
        return text.translate(_PUNCTUATION_TABLE).split()

    def _run_strip_accents(self, text):
        """Strips accents: NFD, then drop every Mn (nonspacing mark) character."""
        return unicodedata.normalize("NFD", text).translate(_STRIP_ACCENTS_TABLE)

    def _run_split_on_punc(self, text):
        """Splits `text` into runs of non-punctuation and single punctuation chars."""
        output = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                output.append(char)
                start_new_word = True
            else:
                if start_new_word:
                    output.append("")
                start_new_word = False
                output[-1] += char
        return output

    def _tokenize_chinese_chars(self, text):
        """Adds whitespace around any CJK character (see `_CJK_RANGES`)."""
        return text.translate(_CHINESE_TABLE)

    def _is_chinese_char(self, cp):
        """Checks whether code point `cp` is a CJK character."""
        return _is_chinese_char(cp)

    def _clean_text(self, text):
        """Removes NUL, U+FFFD and control chars; maps whitespace to " "."""
        return text.translate(_CLEAN_TABLE)


class WordpieceTokenizer(object):
    """Runs WordPiece tokenization (greedy longest-match-first).

    The vocab is read at construction: its longest entry bounds the candidate
    substrings, and results are memoised per word (at most `cache_size`
    words, least recently used evicted). Port note: so do not mutate `vocab`
    after building the tokenizer (the original would see the change).
    """

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200,
                 cache_size=_DEFAULT_WORDPIECE_CACHE_SIZE):
        """Constructs a WordpieceTokenizer.

        Args:
          vocab: container of str tokens (usually the `load_vocab` dict).
          unk_token: emitted for a word that cannot be covered by vocab pieces.
            It need not be in `vocab` (converting it to an id then raises
            KeyError, as in the original).
          max_input_chars_per_word: words with more code points are `unk_token`.
          cache_size: max number of distinct words memoised (0 disables it).
        """
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        # A candidate longer than every vocab entry cannot match; skipping it
        # changes nothing but the running time.
        self._max_piece_chars = max((len(t) for t in vocab), default=0)
        if cache_size:
            self.tokenize_word = functools.lru_cache(maxsize=cache_size)(
                self._tokenize_word)
        else:
            self.tokenize_word = self._tokenize_word

    def tokenize(self, text):
        """Tokenizes a piece of text into its word pieces.

        For example:
          input = "unaffable"
          output = ["un", "##aff", "##able"]

        Args:
          text: A single token or whitespace separated tokens. This should have
            already been passed through `BasicTokenizer`.

        Returns:
          A list of wordpiece tokens.
        """
        output_tokens = []
        for token in whitespace_tokenize(convert_to_unicode(text)):
            output_tokens.extend(self.tokenize_word(token))
        return output_tokens

    def _tokenize_word(self, word):
        """WordPiece pieces (a tuple of str) of one whitespace-free word."""
        num_chars = len(word)
        if not num_chars:
            return ()
        if num_chars > self.max_input_chars_per_word:
            return (self.unk_token,)
        vocab = self.vocab
        if word in vocab:
            return (word,)
        max_piece_chars = self._max_piece_chars
        pieces = []
        start = 0
        while start < num_chars:
            end = min(num_chars, start + max_piece_chars)
            while start < end:
                piece = word[start:end]
                if start > 0:
                    piece = "##" + piece
                if piece in vocab:
                    break
                end -= 1
            else:
                # No vocab entry covers word[start:...]: the whole word is
                # unknown, and the pieces found so far are discarded.
                return (self.unk_token,)
            pieces.append(piece)
            start = end
        return tuple(pieces)
