# coding=utf-8
"""Tests for bert_tf.tokenization.graph_tokenizer: the graph against FullTokenizer, exactly.

  * every paragraph of `pydoc_data.topics` with the corpus vocab of
    tests/test_tokenization.py, both casings;
  * the edge texts of tests/test_tokenization.py plus final sigma, dotted I,
    canonical reordering, text boundaries, long words, invalid UTF-8;
  * code points: a sample (fast) and every one of them (`slow`), alone and in
    context, with a vocab of single characters so that ids name characters
    (every code point against the FullTokenizer's digests,
    graph_tokenizer_digests.json, or the FullTokenizer itself under another key);
  * `pack_pair` / `__call__` against `pair_features.build_pair_features`;
  * a SavedModel run in a fresh process where tensorflow_text, keras and
    bert_tf cannot be imported.
"""

import hashlib
import inspect
import json
import os
import random
import sys
import unicodedata
import warnings

import pytest
import tensorflow as tf

from bert_tf.tokenization import graph_tokenizer
from bert_tf.tokenization import full_tokenizer as tokenization
from bert_tf.tokenization import vocab as vocab_module
from bert_tf.tokenization.pair_features import build_pair_features
from bert_tf.errors import UserError
from tests.test_tokenization import EDGE_TEXTS
from tests.test_tokenization import TEST_VOCAB
from tests.test_tokenization import _write_vocab
from tests.test_tokenization import build_corpus_vocab
from tests.test_tokenization import corpus_paragraphs
from tests import bare_tf

LOWER = [True, False]
SIGMA = u"\u03a3"


def _utf8(text):
    return text if isinstance(text, bytes) else text.encode("utf-8")


def _encodable(text):
    try:
        _utf8(text)
        return True
    except UnicodeEncodeError:  # lone surrogates have no UTF-8 form
        return False


def _graph_batches(tokenizer, texts, batch_size):
    for i in range(0, len(texts), batch_size):
        yield tokenizer.tokenize(tf.constant([_utf8(t) for t in texts[i:i + batch_size]],
                                             tf.string))


def graph_ids(tokenizer, texts, batch_size=4096):
    out = []
    for ids in _graph_batches(tokenizer, texts, batch_size):
        out.extend(ids.to_list())
    return out


def graph_ids_digest(tokenizer, texts, batch_size=4096):
    """`ids_digest(graph_ids(...))`, from each batch's values and row splits (no lists)."""
    h = hashlib.sha256(b"[")
    separator = b""
    for ids in _graph_batches(tokenizer, texts, batch_size):
        assert ids.ragged_rank == 1
        values = [str(v) for v in ids.flat_values.numpy().tolist()]
        splits = ids.row_splits.numpy().tolist()
        if len(splits) > 1:
            h.update(separator + ",".join(
                "[" + ",".join(values[a:b]) + "]"
                for a, b in zip(splits[:-1], splits[1:])).encode("ascii"))
            separator = b","
    h.update(b"]")
    return h.hexdigest()


def full_ids(full, texts):
    return [full.convert_tokens_to_ids(full.tokenize(t)) for t in texts]


def assert_same(texts, ours, theirs, name=""):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            raise AssertionError("%s text %d %r:\n graph %r\n full  %r" % (
                name, i, texts[i][:300], a[:60], b[:60]))


def _encoded(texts):
    """(the texts that have a UTF-8 form, those forms): `_encodable`'s filter, encoding once."""
    kept, encoded = [], []
    for text in texts:
        try:
            encoded.append(_utf8(text))
        except UnicodeEncodeError:
            continue
        kept.append(text)
    return kept, encoded


def char_vocab(texts, do_lower_case):
    """"[UNK]" + every character of the BasicTokenizer output, as "c" and "##c".

    With it every word becomes its characters, so equal ids mean equal tokens.
    """
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    chars = sorted({c for t in texts if _encodable(t) for w in basic.tokenize(t) for c in w})
    return ["[UNK]", "[CLS]", "[SEP]"] + chars + ["##" + c for c in chars]


def ids_digest(ids):
    """sha256 of a list of id lists."""
    return hashlib.sha256(json.dumps(ids, separators=(",", ":")).encode("ascii")).hexdigest()


class Pair(object):
    """A FullTokenizer and a GraphTokenizer on one vocab (the FullTokenizer made on first use)."""

    def __init__(self, vocab_file, do_lower_case, vocab=None):
        """`vocab`: the file's tokens as `load_vocab` reads them, when already read."""
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        self.graph = graph_tokenizer.GraphTokenizer(
            vocab_file if vocab is None else vocab, do_lower_case=do_lower_case)
        self._full = None

    @property
    def full(self):
        if self._full is None:
            self._full = tokenization.FullTokenizer(self.vocab_file,
                                                    do_lower_case=self.do_lower_case)
        return self._full

    def check(self, texts, name="", batch_size=4096, reference_digest=None):
        """The graph's ids of `texts` against the FullTokenizer's; returns the latter.

        `reference_digest`: the `ids_digest` of the FullTokenizer's ids for
        these texts, when known (`REFERENCE_DIGESTS`): graph ids with that
        digest pass without running the FullTokenizer; any other digest runs it
        and names the first text that differs. Returns None when the digest
        decided.
        """
        texts, encoded = _encoded(texts)
        if (reference_digest is not None
                and graph_ids_digest(self.graph, encoded, batch_size) == reference_digest):
            return None
        ours = graph_ids(self.graph, encoded, batch_size)
        theirs = full_ids(self.full, texts)
        assert_same(texts, ours, theirs, name)
        assert reference_digest is None or ids_digest(theirs) == reference_digest, (
            "%s: the FullTokenizer's ids no longer have the digest in %s; write it anew: "
            "python -m tests.test_graph_tokenizer --write-reference-digests"
            % (name, REFERENCE_DIGESTS_FILE))
        return theirs


@pytest.fixture(scope="module")
def corpus_vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("graph_vocab") / "corpus_vocab.txt"
    return _write_vocab(path, build_corpus_vocab(corpus_paragraphs()))


@pytest.fixture(scope="module")
def corpus_pairs(corpus_vocab_file):
    """{do_lower_case: Pair} on the corpus vocab, built on first use."""
    pairs = {}

    def get(do_lower_case):
        if do_lower_case not in pairs:
            pairs[do_lower_case] = Pair(corpus_vocab_file, do_lower_case)
        return pairs[do_lower_case]

    return get


@pytest.fixture(params=LOWER, ids=["uncased", "cased"])
def corpus_pair(request, corpus_pairs):
    return corpus_pairs(request.param)


# ---------------------------------------------------------------------------
# Real text and edge texts
# ---------------------------------------------------------------------------


def test_corpus_matches_full_tokenizer(corpus_pair):
    texts = corpus_paragraphs()
    ids = corpus_pair.check(texts, "corpus", batch_size=1024)
    # Not vacuous: WordPiece splits and [UNK]s both happen.
    unk = corpus_pair.full.vocab["[UNK]"]
    pieces = {i for t in ids for i in t}
    assert unk in pieces
    assert sum(corpus_pair.full.inv_vocab[i].startswith("##") for t in ids for i in t) > 1000


# Texts beyond tests/test_tokenization.py's EDGE_TEXTS. Kept in this order:
# neighbours in one batch test text boundaries (a text ending in a cased
# letter before one starting with a sigma, marks at both ends).
MORE_EDGE_TEXTS = [
    u"", u" ", u"\n\n", u"\u2028", u"\u3000\u00a0 \t",
    # final sigma: cased / case-ignorable / other neighbours, deleted
    # controls (ignorable once gone), whitespace and CJK (end the word)
    u"\u0391\u0392", SIGMA, u"\u0391", SIGMA + u"\u0391", u"\u0391\u0392",
    u"\u03a3\u03a3 \u03a3\u03a3\u03a3 \u0391\u03a3\u03a3",
    u"\u0391\u03a3. \u0391.\u03a3 \u0391\u03a3'\u0391 \u0391'\u03a3 \u0391\u03a3:\u0391",
    u"\u0391\u03a3\u0301 \u0391\u0301\u03a3 \u0391\u03a3\u0301\u0391",
    u"\u0391\u00ad\u03a3 \u0391\u03a3\u00ad \u0391\u03a3\u00ad\u0391 \u03a3\u200d\u0391",
    u"\u0391\u03a3\x00\u0391 \u0391\x00\u03a3 \u0391\u03a3\x07",
    u"\u0391\u03a3\u4e2d \u4e2d\u03a3 \u0391\u03a3\uac00 \uac00\u03a3",
    u"\u02b0\u03a3 \u0391\u03a3\u02b0 \u0345\u03a3 \u00aa\u03a3 \u0391\u03a3\u00aa",
    u"\u24b6\u03a3 \u2170\u03a3 a\u03a3 \u03a3a 1\u03a3 \u0391\u03a31",
    u"\u0391\u03a3\u2028\u0391 \u0391\u2029\u03a3 \u0391\u03a3\x85\u0391 \u0391\u03a3\x1c",
    u"\u1f08\u03a3 \u0391\u03a3\u1f08 \u039f\u0394\u039f\u03a3",
    # lower-cases of several code points; Turkish dotted and dotless I
    u"\u0130 \u0130\u0130 I\u0307 \u0131 \u0130stanbul \u0049\u0307\u0301",
    u"\u1e9e \u00df \ufb00 \u0149 \u01f0 \u1f80 \u1fbc \u2126 \u212a \u212b",
    # canonical reordering of the non-starters that survive accent stripping
    u"a\U0001d16d\U0001d165 a\U0001d165\U0001d16d a\U0001d16d\u0301\U0001d165",
    u"a\U0001d16d\u034f\U0001d165 \u302e\u1715 \u1715\u302e \U00016ff0\u1b44",
    u"\U0001d15f\U0001d16d \U0001d16d\U0001d15f \U0001d160\U0001d16d\U0001d165",
    u"\U0001d16d", u"\U0001d165x", u"x\u302e", u"\u302f",
    u"a\U0001d16d\u200b\U0001d165 a\U0001d16d\x00\U0001d165 a\U0001d16d \U0001d165",
    # whitespace that only str.split() knows, controls
    u"a\u2028b\u2029c\x1cd\x1de\x1ef\x1fg\x85h\x0bi\x0cj",
    u"\x00\x01\x7f\x80\x9f\u200e\u200f\u2066\ufeff\U000e0020",
    # CJK, Hangul (NFD when uncased), compatibility ideographs
    u"\u4e2d\u6587abc\u4e2d \u3400\u4dbf \U00020000 \U0002a6df \ufa0e \uf900 \U0002f800",
    u"\ud55c\uad6d\uc5b4 \uac00\ud7a3 \uac01 \u1100\u1161\u11a8",
    # accents and long words
    u"\u00c0\u00e9\u00ee\u00f5\u00fc \u1e9b\u0323 \u0041\u030a\u0301",
    u"a" * 200, u"a" * 201, u"\u00e9" * 200, u"\u00e9" * 201, u"e\u0301" * 201,
    u"\u4e2d" * 300, u"ab" * 100 + u"\u0301", u"x " * 600,
    u"abc" * 70 + u" " + u"\U0001F600" * 150,
    # invalid UTF-8
    b"\xff", b"a\xffb", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\xc0\xaf\xe0\x80\xaf", b"caf\xc3\xa9\xe9", b"\xce\xa3\xff\xce\x91",
    b"\xce\x91\xce\xa3\x80", b"\x80\x80\x80a", b"\xf0\x9f\x98\x80\xf0\x9f\x98",
]


def test_edge_texts(corpus_pair, tmp_path):
    texts = list(EDGE_TEXTS) + MORE_EDGE_TEXTS
    corpus_pair.check(texts, "corpus vocab")
    lower = corpus_pair.graph.do_lower_case
    chars_file = _write_vocab(tmp_path / "chars.txt", char_vocab(texts, lower))
    ids = Pair(chars_file, lower).check(texts, "char vocab")
    assert sum(map(len, ids)) > 1000


def test_each_edge_text_alone(corpus_pair):
    # Batches of one: no neighbouring text.
    for text in MORE_EDGE_TEXTS:
        corpus_pair.check([text], "alone", batch_size=1)


def test_original_tokenization_test_vocab(tmp_path):
    vocab_file = _write_vocab(tmp_path / "v.txt", TEST_VOCAB)
    tokenizer = graph_tokenizer.GraphTokenizer(vocab_file)
    ids = tokenizer.tokenize(tf.constant([u"UNwant\u00E9d,running", "unwantedX running"]))
    assert ids.to_list() == [[7, 4, 5, 10, 8, 9], [0, 8, 9]]
    assert ids.dtype == tf.int32


def test_empty_batch(corpus_pair):
    ids = corpus_pair.graph.tokenize(tf.constant([], tf.string))
    assert ids.shape[0] == 0 and ids.to_list() == []
    features = corpus_pair.graph(tf.constant([], tf.string), max_seq_length=4)
    assert features["input_ids"].shape == (0, 4)


@pytest.mark.slow
def test_vocab_forms(tmp_path):
    tokens = ["[UNK]", "[CLS]", "[SEP]", "hello", "##s", "h"]
    from_list = graph_tokenizer.GraphTokenizer(tokens)
    from_dict = graph_tokenizer.GraphTokenizer({t: 10 + i for i, t in enumerate(tokens)})
    text = tf.constant(["Hellos hx"])
    assert from_list.tokenize(text).to_list() == [[3, 4, 0]]
    assert from_dict.tokenize(text).to_list() == [[13, 14, 10]]
    with pytest.raises(UserError, match="duplicate"):
        graph_tokenizer.GraphTokenizer(tokens + ["h"])
    with pytest.raises(UserError, match=r"no \[UNK\]"):
        graph_tokenizer.GraphTokenizer(["hello"])
    with pytest.raises(UserError, match="vocab_file"):
        graph_tokenizer.GraphTokenizer(str(tmp_path / "missing.txt"))
    no_cls = graph_tokenizer.GraphTokenizer(["[UNK]", "[SEP]", "a"])
    with pytest.raises(KeyError, match=r"\[CLS\]"):
        no_cls(tf.constant(["a"]), max_seq_length=4)


# ---------------------------------------------------------------------------
# Invalid UTF-8: unicode_decode(errors="ignore") == bytes.decode("utf-8", "ignore")
# ---------------------------------------------------------------------------


def _byte_strings():
    """All 1- and 2-byte strings; 3- and 4-byte ones over boundary bytes; random ones."""
    edges = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
             0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5,
             0xF7, 0xF8, 0xFB, 0xFC, 0xFE, 0xFF]
    out = [bytes([a]) for a in range(256)]
    out += [bytes([a, b]) for a in range(256) for b in range(256)]
    out += [bytes([a, b, c]) for a in edges for b in edges for c in edges]
    out += [bytes([a, b, c, d]) for a in edges[12:] for b in edges[3:12]
            for c in edges[3:12] + [0x41] for d in edges[3:12] + [0x41, 0xC3]]
    rng = random.Random(0)
    out += [bytes(rng.choice(edges) for _ in range(rng.randint(1, 12))) for _ in range(20000)]
    return out


def test_invalid_utf8_is_dropped_as_python_does():
    strings = _byte_strings()
    decoded = tf.strings.unicode_decode(tf.constant(strings), "UTF-8", errors="ignore")
    expected = [[ord(c) for c in s.decode("utf-8", "ignore")] for s in strings]
    assert_same(strings, decoded.to_list(), expected, "unicode_decode")


def test_invalid_utf8_tokenizes_as_full_tokenizer(tmp_path):
    rng = random.Random(1)
    texts = [bytes(rng.choice(b"\xce\xa3\x91\xc3\xa9\xff\x80\xe4\xb8\xad a") for _ in range(20))
             for _ in range(300)]
    chars_file = _write_vocab(tmp_path / "chars.txt", char_vocab(
        [t.decode("utf-8", "ignore") for t in texts], True))
    for do_lower_case in LOWER:
        Pair(chars_file, do_lower_case).check(texts, "random bytes")


# ---------------------------------------------------------------------------
# Code points: each alone and in context
# ---------------------------------------------------------------------------


def _all_code_points():
    return [cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]


def _sampled_code_points():
    """The first 0x800, every code point some table stores, boundaries, a random rest."""
    cps = set(range(0x800))
    for lower in LOWER:
        tables = graph_tokenizer._code_point_tables(lower)
        cps.update(int(c) for c in tables.map_keys)
        cps.update(int(c) for c in tables.reorder_keys)
        if lower:
            for bound in tables.sigma_bounds:
                cps.update((int(bound) - 1, int(bound)))
    for first, last in tokenization._CJK_RANGES + ((0xAC00, 0xD7A3),):
        cps.update((first - 1, first, first + 1, (first + last) // 2, last, last + 1))
    cps.update((0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0xE0001, 0xF0000, sys.maxunicode))
    rng = random.Random(0)
    everything = _all_code_points()
    cps.update(rng.sample(everything, 3000))
    return sorted(cp for cp in cps if 0 <= cp <= sys.maxunicode and not 0xD800 <= cp <= 0xDFFF)


def code_point_texts(cps, do_lower_case, per_text=64):
    """Each code point alone, then `per_text` at a time in context.

    Contexts: "a" c "b" (inside a word); uncased also "A" c "Σ", "AΣ" c "A"
    and c "Σ", which tell whether c is cased, case-ignorable or neither for
    the final sigma.
    """
    singles = [chr(cp) for cp in cps]
    contexts = []
    for i in range(0, len(cps), per_text):
        parts = []
        for cp in cps[i:i + per_text]:
            c = chr(cp)
            parts.append(u"a%sb" % c)
            if do_lower_case:
                parts += [u"A%s\u03a3" % c, u"A\u03a3%sA" % c, c + SIGMA]
        contexts.append(u" ".join(parts))
    return singles, contexts


_CODE_POINT_CHECKS = (("single code point", 0, 1 << 16), ("code points in context", 1, 1024))


def check_code_points(cps, do_lower_case, vocab_file, reference_digests=None, vocab=None):
    """Graph against FullTokenizer on `cps` alone and in context.

    `reference_digests`: {check name: digest of the FullTokenizer's ids}, or None.
    `vocab`: the vocab file read (`Pair`).
    """
    pair = Pair(vocab_file, do_lower_case, vocab)
    texts = code_point_texts(cps, do_lower_case)
    for name, which, batch_size in _CODE_POINT_CHECKS:
        pair.check(texts[which], name, batch_size=batch_size,
                   reference_digest=(reference_digests or {}).get(name))


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", LOWER)
def test_sampled_code_points(do_lower_case, tmp_path):
    cps = _sampled_code_points()
    assert len(cps) > 8000
    singles, contexts = code_point_texts(cps, do_lower_case)
    vocab_file = _write_vocab(tmp_path / "chars.txt",
                              char_vocab(singles + contexts, do_lower_case))
    check_code_points(cps, do_lower_case, vocab_file)


def full_char_vocab():
    """"[UNK]" + every code point but whitespace and surrogates, as "c" and "##c"."""
    chars = [chr(cp) for cp in _all_code_points() if not chr(cp).isspace()]
    return ["[UNK]"] + chars + ["##" + c for c in chars]


# The FullTokenizer's ids for every code point, as digests: the Python
# reference takes about a minute per casing, the graph a quarter of that. The
# digests hold for one key (the FullTokenizer's source, this file's text
# generators, the Unicode version); under another key the test runs the
# FullTokenizer itself, as it does when the graph's digest differs (to name
# the first text that differs).
REFERENCE_DIGESTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "graph_tokenizer_digests.json")


# The FullTokenizer's path from a vocab file and a text to ids (an edit
# elsewhere in its modules, e.g. to `decode`, keeps the digests).
_TOKENIZE_PATH = (
    "_is_whitespace", "_is_control", "_is_punctuation", "_is_chinese_char", "_is_nonspacing_mark",
    "_CharTable", "_clean_rule", "_chinese_rule", "_clean_and_chinese_rule",
    "_strip_accents_rule", "_punctuation_rule", "_unused_tokens", "_never_split_tokens",
    "BasicTokenizer", "WordpieceTokenizer", "FullTokenizer.__init__", "FullTokenizer.tokenize",
    "FullTokenizer.convert_tokens_to_ids")
_TOKENIZE_PATH_TABLES = ("_CJK_RANGES", "_ASCII_PUNCTUATION_RANGES", "_WHITESPACE_CONTROLS")
_VOCAB_PATH = ("_read_vocab_text", "load_vocab", "convert_by_vocab", "convert_tokens_to_ids")


def reference_key(do_lower_case):
    """What the FullTokenizer's ids for every code point depend on, as a sha256."""
    h = hashlib.sha256()
    sources = [_all_code_points, code_point_texts, full_char_vocab, full_ids, _encodable,
               _write_vocab]
    for module, names in ((tokenization, _TOKENIZE_PATH), (vocab_module, _VOCAB_PATH)):
        for name in names:
            owner = module
            for part in name.split("."):
                owner = getattr(owner, part)
            sources.append(owner)
    for source in sources:
        h.update(inspect.getsource(source).encode("utf-8"))
    h.update(repr([getattr(tokenization, name) for name in _TOKENIZE_PATH_TABLES]).encode("utf-8"))
    h.update(repr((unicodedata.unidata_version, sys.maxunicode, bool(do_lower_case),
                   _CODE_POINT_CHECKS)).encode("utf-8"))
    return h.hexdigest()


def load_reference_digests(do_lower_case):
    """{check name: digest} for this key, or None (with a warning) when the file is for another."""
    with open(REFERENCE_DIGESTS_FILE, encoding="utf-8") as f:
        entry = json.load(f)["uncased" if do_lower_case else "cased"]
    if entry["key"] != reference_key(do_lower_case):
        warnings.warn("%s is for another FullTokenizer, text generator or Unicode version: the "
                      "FullTokenizer runs (write it anew: python -m tests.test_graph_tokenizer "
                      "--write-reference-digests)" % REFERENCE_DIGESTS_FILE)
        return None
    return entry["digests"]


def write_reference_digests(directory):
    """Runs the FullTokenizer on every code point, both casings, and writes the digests."""
    vocab_file = _write_vocab(os.path.join(directory, "all_chars.txt"), full_char_vocab())
    entries = {}
    for do_lower_case in LOWER:
        full = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
        texts = code_point_texts(_all_code_points(), do_lower_case)
        digests = {name: ids_digest(full_ids(full, [t for t in texts[which] if _encodable(t)]))
                   for name, which, _ in _CODE_POINT_CHECKS}
        entries["uncased" if do_lower_case else "cased"] = {
            "key": reference_key(do_lower_case), "digests": digests}
    temporary = REFERENCE_DIGESTS_FILE + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(temporary, REFERENCE_DIGESTS_FILE)


@pytest.fixture(scope="module")
def full_char_vocab_file(tmp_path_factory):
    """The vocab file of every code point and the file read (both casings use them)."""
    path = _write_vocab(tmp_path_factory.mktemp("all_chars") / "all_chars.txt", full_char_vocab())
    return path, vocab_module.load_vocab(path)


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", LOWER)
def test_every_code_point(do_lower_case, full_char_vocab_file):
    """All 1,112,064 code points alone and in context, against the FullTokenizer's digests."""
    vocab_file, vocab = full_char_vocab_file
    check_code_points(_all_code_points(), do_lower_case, vocab_file,
                      load_reference_digests(do_lower_case), vocab=vocab)


def test_a_graph_that_differs_from_the_digest_runs_the_full_tokenizer(tmp_path):
    """A digest that does not match makes the check run the FullTokenizer and name the text."""
    texts = [u"a\u00e9b", u"\u03a3x"]
    vocab_file = _write_vocab(tmp_path / "chars.txt", char_vocab(texts, True))
    pair = Pair(vocab_file, True)
    # The digest of the batches' values and row splits is that of the id lists
    # (several batches, an empty text among them).
    for batch_size in (1, 2, 4096):
        assert graph_ids_digest(pair.graph, texts + [u""], batch_size) == ids_digest(
            graph_ids(pair.graph, texts + [u""], batch_size))
    expected = pair.check(texts, "known")
    assert pair.check(texts, "known", reference_digest=ids_digest(expected)) is None
    assert pair._full is not None  # made by the first check
    fresh = Pair(vocab_file, True)
    assert fresh.check(texts, "known", reference_digest=ids_digest(expected)) is None
    assert fresh._full is None  # the digest decided
    with pytest.raises(AssertionError, match="no longer have the digest"):
        fresh.check(texts, "stale", reference_digest=ids_digest([[0]]))


def test_reordering_pairs(tmp_path):
    """Every ordered pair of marks NFD may reorder after accent stripping."""
    tables = graph_tokenizer._code_point_tables(True)
    marks = [chr(c) for c in tables.reorder_keys]
    # Code points whose NFD holds one of them (e.g. U+1D15F).
    marks += [chr(cp) for cp in range(0x1D100, 0x1D200)
              if any(unicodedata.combining(c) and not unicodedata.category(c) == "Mn"
                     for c in unicodedata.normalize("NFD", chr(cp)))]
    texts = []
    for m1 in marks:
        texts.append(u" ".join(u"a%s%s %s%s a%s\u0301%s a%s\u034f%s" % (
            m1, m2, m1, m2, m1, m2, m1, m2) for m2 in marks))
        texts.append(m1)  # a text boundary next to marks
    vocab_file = _write_vocab(tmp_path / "chars.txt", char_vocab(texts, True))
    expected = Pair(vocab_file, True).check(texts, "reordering")
    assert sum(map(len, expected)) > 5000


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


def test_tables_are_small_and_cached():
    for lower in LOWER:
        tables = graph_tokenizer._code_point_tables(lower)
        assert tables is graph_tokenizer._code_point_tables(lower)
        assert len(tables.map_keys) < 8000
        assert list(tables.map_keys) == sorted(set(tables.map_keys))
        assert len(tables.map_splits) == len(tables.map_keys) + 1
    lower = graph_tokenizer._code_point_tables(True)
    assert len(lower.sigma_bounds) < 2000
    assert len(lower.reorder_keys) == 25
    assert len(graph_tokenizer._code_point_tables(False).reorder_keys) == 0


# ---------------------------------------------------------------------------
# Packing
# ---------------------------------------------------------------------------


class _IdTokenizer(object):
    """build_pair_features' tokenizer for tokens that are already ids."""

    def __init__(self, cls_id, sep_id):
        self.ids = {"[CLS]": cls_id, "[SEP]": sep_id}

    def convert_tokens_to_ids(self, tokens):
        return [self.ids.get(t, t) for t in tokens]


def _ragged(rows):
    return tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1)


def test_pack_pair_matches_build_pair_features(corpus_pair):
    tokenizer = corpus_pair.graph
    ids = _IdTokenizer(tokenizer._cls_id, tokenizer._sep_id)
    rows_a, rows_b = [], []
    for len_a in range(9):
        for len_b in range(9):
            rows_a.append(list(range(100, 100 + len_a)))
            rows_b.append(list(range(200, 200 + len_b)))
    for max_seq_length in range(2, 14):
        for with_b in (False, True):
            if with_b and max_seq_length < 3:
                continue
            got = tokenizer.pack_pair(_ragged(rows_a), _ragged(rows_b) if with_b else None,
                                      max_seq_length=max_seq_length)
            got = {k: v.numpy().tolist() for k, v in got.items()}
            for i, (a, b) in enumerate(zip(rows_a, rows_b)):
                want = build_pair_features(a, b if with_b else None, max_seq_length, ids)
                for key in ("input_ids", "input_mask", "segment_ids"):
                    assert got[key][i] == getattr(want, key), (
                        key, max_seq_length, with_b, a, b)


def test_call_matches_build_pair_features(corpus_pair):
    paragraphs = corpus_paragraphs()
    texts_a = paragraphs[:150] + [u"", u"   ", u"Short one.", u"x " * 400]
    texts_b = paragraphs[150:300] + [u"Only b.", u"", u"\u0000\u200b", u"y " * 300]
    full = corpus_pair.full
    for max_seq_length in (3, 4, 16, 128):
        for with_b in (False, True):
            got = corpus_pair.graph(tf.constant(texts_a), tf.constant(texts_b) if with_b else None,
                                    max_seq_length=max_seq_length)
            got = {k: v.numpy().tolist() for k, v in got.items()}
            for i, (a, b) in enumerate(zip(texts_a, texts_b)):
                want = build_pair_features(full.tokenize(a), full.tokenize(b) if with_b else None,
                                           max_seq_length, full)
                for key in ("input_ids", "input_mask", "segment_ids"):
                    assert got[key][i] == getattr(want, key), (key, max_seq_length, i)


def test_pack_pair_rejects_short_lengths(corpus_pair):
    ids = corpus_pair.graph.tokenize(tf.constant(["a b"]))
    with pytest.raises(UserError, match="too short"):
        corpus_pair.graph.pack_pair(ids, ids, max_seq_length=2)
    with pytest.raises(UserError, match="too short"):
        corpus_pair.graph.pack_pair(ids, max_seq_length=1)


# ---------------------------------------------------------------------------
# tf.function and SavedModel in a bare process
# ---------------------------------------------------------------------------

_BARE_LOADER = bare_tf.PRELUDE + r'''
import json

texts = json.load(open(sys.argv[2], encoding="utf-8"))
loaded = tf.saved_model.load(sys.argv[1])
out = loaded.serve(tf.constant([t.encode("utf-8") for t in texts]))
result = {k: v.numpy().tolist() for k, v in out.items()}
result["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
json.dump(result, open(sys.argv[3], "w"))
'''


class _Served(tf.Module):
    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, texts):
        ids = self.tokenizer.tokenize(texts)
        features = self.tokenizer(texts, tf.reverse(texts, [0]), max_seq_length=24)
        return dict(features, ids=ids.flat_values, row_splits=ids.row_splits)


@pytest.mark.slow
def test_saved_model_runs_without_keras_or_tf_text(corpus_pairs, tmp_path):
    corpus_pair = corpus_pairs(True)  # the uncased graph has every branch
    texts = corpus_paragraphs()[:40] + MORE_EDGE_TEXTS[:60]
    texts = [t for t in texts if isinstance(t, str)]
    export = str(tmp_path / "saved")
    tf.saved_model.save(_Served(corpus_pair.graph), export)
    texts_file = tmp_path / "texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    bare_tf.run_script(_BARE_LOADER, [export, texts_file, tmp_path / "out.json"], tmp_path)
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["modules"] == []
    full = corpus_pair.full
    expected = full_ids(full, texts)
    splits = result["row_splits"]
    got = [result["ids"][splits[i]:splits[i + 1]] for i in range(len(texts))]
    assert_same(texts, got, expected, "saved model")
    for i, (a, b) in enumerate(zip(texts, texts[::-1])):
        want = build_pair_features(full.tokenize(a), full.tokenize(b), 24, full)
        assert result["input_ids"][i] == want.input_ids
        assert result["segment_ids"][i] == want.segment_ids
        assert result["input_mask"][i] == want.input_mask


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-reference-digests"]:
        sys.exit("usage: python -m tests.test_graph_tokenizer --write-reference-digests")
    import tempfile
    with tempfile.TemporaryDirectory() as scratch:
        write_reference_digests(scratch)
    print("wrote %s" % REFERENCE_DIGESTS_FILE)
