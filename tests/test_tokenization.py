# coding=utf-8
"""Tests for bert_tf.tokenization.

Three kinds:
  * the original `tokenization_test.py` cases and the spec's hand-checked
    examples (exact tokens and ids);
  * differential tests (`original`): the pip original run by
    `tests/original/tokenizer_oracle.py` on a real corpus (every paragraph of
    `pydoc_data.topics`), hand-picked edge cases, and every "interesting"
    Unicode code point, with several vocabs; outputs must be equal exactly;
  * behaviour the original leaves to chance (missing files, KeyError text).
"""

import base64
import collections
import json
import os
import sys
import unicodedata

import pydoc_data.topics
import pytest

from bert_tf.tokenization import full_tokenizer as tokenization
from bert_tf.errors import UserError
from tests.original import code_point_ranges
from tests.original import run_oracle

# The vocab of the original tokenization_test.py.
TEST_VOCAB = [
    "[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn",
    "##ing", ",", "[unused0]"
]


def _write_vocab(path, tokens):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(t + "\n" for t in tokens))
    return str(path)


@pytest.fixture
def test_vocab_file(tmp_path):
    return _write_vocab(tmp_path / "vocab.txt", TEST_VOCAB)


# ---------------------------------------------------------------------------
# The original tokenization_test.py, re-stated
# ---------------------------------------------------------------------------

TEST_TEXT = u"UNwant\u00E9d,running [unused0] [CLS] [unused55]"


def test_full_tokenizer(test_vocab_file):
    tokenizer = tokenization.FullTokenizer(test_vocab_file)
    tokens = tokenizer.tokenize(TEST_TEXT)
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"] + ["[UNK]"] * 9
    ids = tokenizer.convert_tokens_to_ids(tokens)
    assert ids == [7, 4, 5, 10, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    assert tokenizer.convert_ids_to_tokens(ids) == tokens


def test_full_tokenizer_preserve_unused(test_vocab_file):
    tokenizer = tokenization.FullTokenizer(test_vocab_file,
                                           preserve_unused_tokens=True)
    tokens = tokenizer.tokenize(TEST_TEXT)
    assert tokens == (["un", "##want", "##ed", ",", "runn", "##ing", "[unused0]"]
                      + ["[UNK]"] * 6)
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9, 11,
                                                       0, 0, 0, 0, 0, 0]


def test_chinese():
    tokenizer = tokenization.BasicTokenizer()
    assert tokenizer.tokenize(u"ah\u535A\u63A8zz") == [u"ah", u"\u535A", u"\u63A8", u"zz"]


def test_basic_tokenizer_lower():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
    assert tokenizer.tokenize(u" \tHeLLo!how  \n Are yoU?  ") == [
        "hello", "!", "how", "are", "you", "?"]
    assert tokenizer.tokenize(u"H\u00E9llo") == ["hello"]


def test_basic_tokenizer_no_lower():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(u" \tHeLLo!how  \n Are yoU?  ") == [
        "HeLLo", "!", "how", "Are", "yoU", "?"]


@pytest.mark.parametrize("cache_size", [0, 4, None])
def test_wordpiece_tokenizer(cache_size):
    vocab = {t: i for i, t in enumerate(TEST_VOCAB[:10])}
    kwargs = {} if cache_size is None else {"cache_size": cache_size}
    tokenizer = tokenization.WordpieceTokenizer(vocab=vocab, **kwargs)
    for _ in range(2):  # the second round is served from the memo
        assert tokenizer.tokenize("") == []
        assert tokenizer.tokenize("unwanted running") == [
            "un", "##want", "##ed", "runn", "##ing"]
        assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_is_whitespace():
    for char in [u" ", u"\t", u"\r", u"\n", u"\u00A0"]:
        assert tokenization._is_whitespace(char), repr(char)
    for char in [u"A", u"-"]:
        assert not tokenization._is_whitespace(char), repr(char)


def test_is_control():
    assert tokenization._is_control(u"\u0005")
    for char in [u"A", u" ", u"\t", u"\r", u"\U0001F4A9"]:
        assert not tokenization._is_control(char), repr(char)


def test_is_punctuation():
    for char in [u"-", u"$", u"`", u"."]:
        assert tokenization._is_punctuation(char), repr(char)
    for char in [u"A", u" "]:
        assert not tokenization._is_punctuation(char), repr(char)


# ---------------------------------------------------------------------------
# Hand-checked examples of the spec (§3.3, §3.4, §3.6)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("This here's an example of using the BERT tokenizer",
     "this here ' s an example of using the bert tokenizer"),
    ("e-mail 3.14 $5 don't", "e - mail 3 . 14 $ 5 don ' t"),
    (u"a\u2028b\u00a0c\x00d\ufffde", "a b cde"),
    ("[MASK] [CLS]", "[ mask ] [ cls ]"),
    ("$^`+<=>|~", "$ ^ ` + < = > | ~"),
])
def test_basic_tokenizer_spec_examples(text, expected):
    assert tokenization.BasicTokenizer().tokenize(text) == expected.split(" ")


def test_spec_examples_with_small_vocab(tmp_path):
    # The spec's examples with the real uncased vocab, reproduced with a vocab
    # that holds exactly the pieces the real one produced.
    vocab_file = _write_vocab(tmp_path / "v.txt", [
        "[PAD]", "[UNK]", "jim", "henson", "was", "a", "puppet", "##eer", "b",
        "cd", "##e", "[", "]", "mask", "cl", "##s"])
    tokenizer = tokenization.FullTokenizer(vocab_file)
    tokens = tokenizer.tokenize("Jim Henson was a puppeteer")
    assert tokens == ["jim", "henson", "was", "a", "puppet", "##eer"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [2, 3, 4, 5, 6, 7]
    assert tokenizer.tokenize(u"a\u2028b\u00a0c\x00d\ufffde") == ["a", "b", "cd", "##e"]
    assert tokenizer.tokenize("[MASK] [CLS]") == ["[", "mask", "]", "[", "cl", "##s", "]"]


def test_lowercase_specials():
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    # 'İ'.lower() is 'i' + U+0307 (Mn), which accent stripping removes.
    assert basic.tokenize(u"\u0130stanbul") == ["istanbul"]
    # Uncased Hangul decomposes into conjoining Jamo (NFD), which are not Mn.
    assert basic.tokenize(u"\ud55c") == [u"\u1112\u1161\u11ab"]
    # No NFD / accent stripping without lower-casing.
    assert tokenization.BasicTokenizer(do_lower_case=False).tokenize(
        u"H\u00e9llo \ud55c") == [u"H\u00e9llo", u"\ud55c"]
    # Hiragana/Katakana are not CJK ideographs: no splitting. The dakuten of
    # U+304C decomposes (NFD) into U+3099, an Mn mark, so it is stripped.
    assert basic.tokenize(u"\u3072\u3089\u304c\u306a") == [u"\u3072\u3089\u304b\u306a"]


def test_wordpiece_max_chars():
    vocab = {"[UNK]": 0, "a": 1, "##a": 2}
    tokenizer = tokenization.WordpieceTokenizer(vocab)
    assert tokenizer.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert tokenizer.tokenize("a" * 201) == ["[UNK]"]


def test_convert_to_unicode():
    assert tokenization.convert_to_unicode(u"h\u00e9") == u"h\u00e9"
    assert tokenization.convert_to_unicode(b"h\xc3\xa9\xff!") == u"h\u00e9!"
    assert tokenization.printable_text(b"h\xc3\xa9") == u"h\u00e9"
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenization.convert_to_unicode(3)
    assert tokenization.BasicTokenizer().tokenize(b"Caf\xc3\xa9 \xff") == ["cafe"]


def test_whitespace_tokenize_splits_all_unicode_whitespace():
    text = u" a\u2028b\u2029c\x1cd\x1fe\x85f\u3000g "
    assert tokenization.whitespace_tokenize(text) == list("abcdefg")
    assert tokenization.whitespace_tokenize(u" \t\n ") == []


# ---------------------------------------------------------------------------
# A vocab without [UNK] (the vocab file's own tests: tests/test_vocab.py)
# ---------------------------------------------------------------------------


def test_vocab_without_unk(tmp_path):
    vocab_file = _write_vocab(tmp_path / "v.txt", ["hello", "world"])
    tokenizer = tokenization.FullTokenizer(vocab_file)
    tokens = tokenizer.tokenize("hello xyz")
    assert tokens == ["hello", "[UNK]"]  # tokenizing works, as in the original
    with pytest.raises(KeyError, match=r"'\[UNK\]' is not in the vocabulary"):
        tokenizer.convert_tokens_to_ids(tokens)
    with pytest.raises(KeyError, match="7 is not in the vocabulary"):
        tokenizer.convert_ids_to_tokens([0, 7])


def test_wordpiece_cache_is_bounded():
    tokenizer = tokenization.WordpieceTokenizer({"a": 0}, cache_size=3)
    for word in ["a", "b", "c", "d", "e"]:
        tokenizer.tokenize(word)
    assert tokenizer.tokenize_word.cache_info().currsize == 3


def test_char_table_is_bounded():
    table = tokenization._CharTable(tokenization._punctuation_rule, max_entries=2)
    assert u"a,b!c".translate(table) == u"a , b ! c"
    assert len(table) == 2
    assert u"a,b!c".translate(table) == u"a , b ! c"  # past the bound: same result


# ---------------------------------------------------------------------------
# validate_case_matches_checkpoint
# ---------------------------------------------------------------------------

CASE_CHECKS = [
    (True, None),
    (False, ""),
    (False, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt"),
    (True, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt"),
    (False, "uncased_L-24_H-1024_A-16/bert_model.ckpt"),
    (False, "gs://b/multilingual_L-12_H-768_A-12/bert_model.ckpt"),
    (False, "chinese_L-12_H-768_A-12/bert_model.ckpt"),
    (True, "gs://bucket/cased_L-12_H-768_A-12/bert_model.ckpt"),
    (False, "gs://bucket/cased_L-12_H-768_A-12/bert_model.ckpt"),
    (True, "x/multi_cased_L-12_H-768_A-12/bert_model.ckpt"),
    (True, "x/cased_L-24_H-1024_A-16/bert_model.ckpt.index"),
    (False, "x/uncased_L-12_H-768_A-12/bert_model_ckpt"),
    (True, "/out/cased_L-12_H-768_A-12/model.ckpt-343"),
    (False, "wwm_uncased_L-24_H-1024_A-16/bert_model.ckpt"),
    (True, "/a.b/uncased_L-2_H-128_A-2/bert_model.ckpt"),
]


def test_validate_case_matches_checkpoint():
    tokenization.validate_case_matches_checkpoint(True, None)
    tokenization.validate_case_matches_checkpoint(
        False, "/m/cased_L-12_H-768_A-12/bert_model.ckpt")
    tokenization.validate_case_matches_checkpoint(
        True, "/m/cased_L-12_H-768_A-12/model.ckpt-343")
    with pytest.raises(UserError) as e:
        tokenization.validate_case_matches_checkpoint(
            False, "/m/uncased_L-12_H-768_A-12/bert_model.ckpt")
    assert str(e.value) == (
        "You passed in `--do_lower_case=False` with "
        "`--init_checkpoint=/m/uncased_L-12_H-768_A-12/bert_model.ckpt`. "
        "However, `uncased_L-12_H-768_A-12` seems to be a lowercased model, so "
        "you should pass in `--do_lower_case=True` so that the fine-tuning "
        "matches how the model was pre-training. If this error is wrong, please "
        "just comment out this check.")
    with pytest.raises(ValueError, match="seems to be a cased model"):
        tokenization.validate_case_matches_checkpoint(
            True, "/m/cased_L-12_H-768_A-12/bert_model.ckpt")


# ---------------------------------------------------------------------------
# Differential tests against the original
# ---------------------------------------------------------------------------


def corpus_paragraphs():
    """Every non-blank paragraph of the CPython docs in `pydoc_data.topics`."""
    topics = pydoc_data.topics.topics
    return [p for key in sorted(topics) for p in topics[key].split("\n\n")
            if p.strip()]


def build_corpus_vocab(paragraphs):
    """A WordPiece-style vocab from the corpus words (so words get split).

    Special tokens; whole words (both cases) seen at least 5 times; "##" plus
    every suffix of words seen at least 20 times; ASCII letters/digits and
    their "##" forms; a few non-ASCII entries. Rare words therefore split into
    pieces, and words with other characters become [UNK].
    """
    counts = collections.Counter()
    for paragraph in paragraphs:
        counts.update(paragraph.split())
    words = collections.Counter()
    for word, count in counts.items():
        for piece in word.replace("_", " ").replace(".", " ").split():
            piece = piece.strip("()[]{},:;'\"`!?*=<>")
            if piece:
                words[piece] += count
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += ["[unused%d]" % i for i in range(5)]
    whole = sorted(w for w, c in words.items() if c >= 5)
    vocab += whole + sorted({w.lower() for w in whole})
    suffixes = set()
    for word, count in words.items():
        if count >= 20 and len(word) > 3:
            suffixes.update("##" + word[i:].lower() for i in range(2, len(word)))
    vocab += sorted(suffixes)
    chars = "abcdefghijklmnopqrstuvwxyz0123456789"
    vocab += list(chars) + ["##" + c for c in chars]
    vocab += ["!", ",", ".", "(", ")", "-", u"\u00e9", u"\u535a", u"\u1112",
              u"##\u1161", u"##\u11ab", u"\u3072", u"##\u3089"]
    unique = list(collections.OrderedDict.fromkeys(vocab))
    return unique


def _cjk_samples():
    out = []
    for first, last in tokenization._CJK_RANGES:
        for cp in (first - 1, first, (first + last) // 2, last, last + 1):
            out.append(chr(cp))
    return out


EDGE_TEXTS = [
    # empty / whitespace only
    u"", u" ", u"\t\n\r ", u"\u3000", u"\u00a0\u2028\u2029", u"\x00", u"\u200b",
    # control and format characters, alone and inside words
    u"a\x00b c\ufffdd e\x05f", u"a\u200bb a\u200cb a\u200db a\ufeffb a\u00adb",
    u"a\u2060b a\u202eb a\u061cb a\U000E0001b", u"a\u2028b a\u2029b a\x85b",
    u"a\x1cb a\x1db a\x1eb a\x1fb a\x0bb a\x0cb a\x7fb", u"line1\r\nline2\rline3",
    # accents, NFD, compatibility characters (kept by the original)
    u"H\u00e9llo na\u00efve caf\u00e9 r\u00e9sum\u00e9 \u00c5NGSTR\u00d6M",
    u"He\u0301llo \u0301abc \u0301 a\u0323\u0302 a\u0302\u0323",
    u"\u01c4 \u01c5 \u01c6 \u00df \ufb01 \u00bd \u2460 \u00b2 \u216b",
    u"Ti\u1ebfng Vi\u1ec7t \u1f08\u0394\u03a5\u03a3\u03a3\u0395\u038e\u03a3",
    # Greek final sigma: lower() depends on the neighbours
    u"\u039f\u0394\u039f\u03a3 \u039f\u0394\u039f\u03a3. \u03a3\u0391\u03a3'\u03a3 \u03a3",
    u"\u0391\u03a3\u2028\u0391 \u0391\u03a3\x00\u0391 \u0391\u03a3\u200b\u0391 "
    u"\u0391\u03a3\u3000\u0391 \u0391\u03a3\u0301 \u0391\u03a3-\u0391",
    u"\u0130 \u0130stanbul I\u0307 \u0131",
    # Hangul, kana, CJK ideographs of every range (and their neighbours)
    u"\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8 \u1100\u1161",
    u"\u3072\u3089\u304c\u306a \u30ab\u30bf\u30ab\u30ca \uff76\uff80\uff76\uff85",
    u"\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u3002",
    u"x".join(_cjk_samples()),
    u"ah\u535a\u63a8zz",
    # punctuation of every Unicode class, and ASCII symbols
    u"snake_case a\u203fb 1-2\u20133\u20144 (a[b{c\u300cd\u300d}]) "
    u"\u00abq\u00bb \u2018q\u2019 \u201cq\u201d",
    u"!\"#%&'*,./:;?@\\\u00a1\u00a7\u00b6\u00b7\u00bf",
    u"$^`+<=>|~ a$b^c`d+e<f=g>h|i~j",
    u"\u20ac5 \u00a35 \u00b1\u00d7\u00f7 \u00a9\u00ae\u00b0 \u2200x \u2264",
    # emoji
    u"\U0001F600 \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 "
    u"\U0001F1FA\U0001F1F8 \u2764\ufe0f \U0001F4A9",
    # long words
    u"a" * 200, u"a" * 201, u"b" * 200 + u" short", u"\u00e9" * 201, u"e\u0301" * 150,
    # special tokens typed in text
    u"[MASK] [CLS] hello [SEP]", u"[unused0] x [unused0]! [UNUSED0] [unused1]",
    u"x[unused0] [unused\u0663] [unused0]\u200b",
    u"UNwant\u00E9d,running [unused0] [CLS] [unused55]",
    u"unwantedX running",
    u" \tHeLLo!how  \n Are yoU?  ",
    # numbers and other scripts
    u"\u0661\u0662\u0663 3.14 1,000 10^9 e-mail don't",
    u"\u0928\u092e\u0938\u094d\u0924\u0947 \u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd",
    # a lone surrogate (category Cs)
    u"a\ud800b",
    # bytes input (valid, invalid, truncated)
    b"hello world", u"h\u00e9llo w\u00f6rld".encode("utf-8"), b"\xff\xfeabc",
    b"caf\xc3",
]


def interesting_code_point_texts(all_code_points=False):
    """Texts that put every code point in two contexts.

    By default only code points whose handling can differ: everything but
    unassigned (Cn), private-use (Co), surrogate (Cs) and CJK-ideograph
    code points, which each class shares one uniform path.
    """
    cps = [cp for cp in range(sys.maxunicode + 1)
           if all_code_points or (
               unicodedata.category(chr(cp)) not in ("Cn", "Co", "Cs")
               and not tokenization._is_chinese_char(cp))]
    texts = []
    for i in range(0, len(cps), 256):
        chunk = [chr(cp) for cp in cps[i:i + 256]]
        texts.append(u" ".join(u"A%sb" % c for c in chunk))  # inside a word
        texts.append(u"".join(chunk))  # next to each other
    return texts


def _write_texts(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for text in texts:
            if isinstance(text, bytes):
                value = {"bytes_b64": base64.b64encode(text).decode("ascii")}
            else:
                value = text
            f.write(json.dumps(value) + "\n")
    return str(path)


def _vocab_files(directory):
    """The vocabs the differential tests use, as {name: path}."""
    corpus_vocab = build_corpus_vocab(corpus_paragraphs())
    files = {
        "test": _write_vocab(os.path.join(directory, "test_vocab.txt"), TEST_VOCAB),
        "corpus": _write_vocab(os.path.join(directory, "corpus_vocab.txt"),
                               corpus_vocab),
        "no_unk": _write_vocab(os.path.join(directory, "no_unk_vocab.txt"),
                               ["hello", "world", "##s", "a", "##a"]),
    }
    dup = os.path.join(directory, "dup_vocab.txt")
    with open(dup, "wb") as f:
        # A BOM (kept in the first token), duplicates (also after strip),
        # CRLF, a "\r" inside a line, blank lines, no final newline.
        f.write(u"\ufeff[PAD]\n[UNK]\r\n[UNK]\nhe\rllo\nhello\n  world \nworld\n\n"
                u"\n##s\n##a\na\n\u00e9\n\u2028x\u2028\nx\n##lo\nhel".encode("utf-8"))
    files["dup"] = dup
    return files


# (texts, vocab, do_lower_case, preserve_unused_tokens, steps) of every
# differential tokenize job.
TOKENIZE_SPECS = (
    [(texts, "corpus", lower, False, False)
     for texts in ("corpus", "code_points") for lower in (True, False)]
    + [("edge", vocab, lower, preserve, vocab == "corpus")
       for vocab in ("corpus", "test") for lower in (True, False)
       for preserve in (False, True)]
    + [("edge", "dup", True, False, False), ("edge", "no_unk", True, False, False)])


def _job_id(spec):
    return "%s-%s_vocab-lower_%s-preserve_%s" % spec[:4]


TOKENIZE_JOB_IDS = [_job_id(spec) for spec in TOKENIZE_SPECS]


def _tokenize_jobs(vocabs, texts_files):
    jobs = []
    for spec in TOKENIZE_SPECS:
        texts, vocab, lower, preserve, steps = spec
        jobs.append({
            "id": _job_id(spec), "kind": "tokenize", "vocab": vocab,
            "vocab_file": vocabs[vocab], "texts_file": texts_files[texts],
            "texts": texts, "do_lower_case": lower,
            "preserve_unused_tokens": preserve, "steps": steps})
    return jobs


def _run_jobs(directory, jobs):
    jobs_file = os.path.join(directory, "jobs.json")
    out_file = os.path.join(directory, "out.json")
    with open(jobs_file, "w", encoding="utf-8") as f:
        json.dump(jobs, f)
    run_oracle("tokenizer_oracle", "--jobs", jobs_file, out_file)
    with open(out_file, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """Runs the original once on every differential case of this module."""
    directory = str(tmp_path_factory.mktemp("tokenizer_oracle"))
    texts = {"corpus": corpus_paragraphs(), "edge": EDGE_TEXTS,
             "code_points": interesting_code_point_texts()}
    texts_files = {k: _write_texts(os.path.join(directory, k + ".jsonl"), v)
                   for k, v in texts.items()}
    vocabs = _vocab_files(directory)
    jobs = _tokenize_jobs(vocabs, texts_files)
    jobs.append({"id": "chars", "kind": "chars"})
    jobs.append({"id": "case", "kind": "case", "cases": CASE_CHECKS})
    results = _run_jobs(directory, jobs)
    return {"jobs": {job["id"]: (job, result) for job, result in zip(jobs, results)},
            "texts": texts}


def _first_difference(name, texts, ours, theirs):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return "%s differs on text %d %r:\n ours     %r\n original %r" % (
                name, i, texts[i][:200], a, b)
    return None


def _ours_ids(tokenizer, tokens):
    try:
        return tokenizer.convert_tokens_to_ids(tokens)
    except KeyError:
        return None


@pytest.mark.original
@pytest.mark.parametrize("job_id", TOKENIZE_JOB_IDS)
def test_matches_original(oracle, job_id):
    job, result = oracle["jobs"][job_id]
    texts = oracle["texts"][job["texts"]]
    lower, preserve = job["do_lower_case"], job["preserve_unused_tokens"]
    full = tokenization.FullTokenizer(job["vocab_file"], do_lower_case=lower,
                                      preserve_unused_tokens=preserve)
    basic = tokenization.BasicTokenizer(do_lower_case=lower, vocab=full.vocab,
                                        preserve_unused_tokens=preserve)
    wordpiece = tokenization.WordpieceTokenizer(vocab=full.vocab)

    assert [list(item) for item in full.vocab.items()] == result["vocab"]
    full_tokens = [full.tokenize(t) for t in texts]
    ours = {
        "full": full_tokens,
        "ids": [_ours_ids(full, tokens) for tokens in full_tokens],
        "basic": [basic.tokenize(t) for t in texts],
        "wordpiece": [wordpiece.tokenize(t) for t in texts],
    }
    problems = [_first_difference(k, texts, ours[k], result[k]) for k in ours]
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)
    # The check is not vacuous: every text set yields tokens and [UNK]s.
    assert sum(map(len, full_tokens)) > 0
    if job["texts"] != "edge" or job["vocab"] != "test":
        assert any("[UNK]" in tokens for tokens in full_tokens)
    if job_id.startswith("corpus-"):
        assert sum(t.startswith("##") for ts in full_tokens for t in ts) > 1000


@pytest.mark.original
def test_steps_match_original(oracle):
    job, result = oracle["jobs"]["edge-corpus_vocab-lower_True-preserve_False"]
    basic = tokenization.BasicTokenizer()
    for text, expected in zip(oracle["texts"]["edge"], result["steps"]):
        text = tokenization.convert_to_unicode(text)
        ours = {
            "clean_text": basic._clean_text(text),
            "tokenize_chinese_chars": basic._tokenize_chinese_chars(text),
            "run_strip_accents": basic._run_strip_accents(text.lower()),
            "run_split_on_punc": basic._run_split_on_punc(text),
            "whitespace_tokenize": tokenization.whitespace_tokenize(text),
        }
        assert ours == expected, repr(text)


@pytest.mark.original
def test_character_classes_match_original(oracle):
    """Every code point is classified as by the original."""
    _, expected = oracle["jobs"]["chars"]
    ours = {
        "whitespace": code_point_ranges(lambda cp: tokenization._is_whitespace(chr(cp))),
        "control": code_point_ranges(lambda cp: tokenization._is_control(chr(cp))),
        "punctuation": code_point_ranges(lambda cp: tokenization._is_punctuation(chr(cp))),
        "chinese": code_point_ranges(tokenization._is_chinese_char),
    }
    for name in expected:
        assert ours[name] == expected[name], name


@pytest.mark.original
def test_validate_case_matches_original(oracle):
    _, expected = oracle["jobs"]["case"]
    ours = []
    for do_lower_case, init_checkpoint in CASE_CHECKS:
        try:
            tokenization.validate_case_matches_checkpoint(do_lower_case,
                                                          init_checkpoint)
            ours.append(None)
        except UserError as e:
            ours.append(str(e))
    assert ours == expected
    # Rows 3, 5-8, 10-12 of CASE_CHECKS contradict their checkpoint.
    assert [i + 1 for i, e in enumerate(expected) if e] == [3, 5, 6, 7, 8, 10, 11, 12]


@pytest.mark.original
@pytest.mark.slow
def test_every_code_point_matches_original(tmp_path):
    """BasicTokenizer on all 0x110000 code points, side by side (about 15 s)."""
    texts = [u"".join(chr(cp) for cp in range(start, min(start + 1024, sys.maxunicode + 1)))
             for start in range(0, sys.maxunicode + 1, 1024)]
    texts_file = _write_texts(tmp_path / "all.jsonl", texts)
    vocab_file = _write_vocab(tmp_path / "v.txt", TEST_VOCAB)
    jobs = [{"kind": "tokenize", "vocab_file": vocab_file, "texts_file": texts_file,
             "do_lower_case": lower, "parts": ["basic"]} for lower in (True, False)]
    for job, result in zip(jobs, _run_jobs(str(tmp_path), jobs)):
        basic = tokenization.BasicTokenizer(job["do_lower_case"])
        problem = _first_difference("basic", texts, [basic.tokenize(t) for t in texts],
                                    result["basic"])
        assert problem is None, problem


@pytest.mark.slow
def test_sources_compile_without_warnings():
    """No invalid escape sequence (a SyntaxWarning at import) in any module or tool."""
    import warnings
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [os.path.join(directory, name)
             for top in ("bert_tf", "tools", "bench")
             for directory, _, names in os.walk(os.path.join(root, top))
             for name in names if name.endswith(".py")]
    assert os.path.join(root, "bert_tf", "tokenization", "full_tokenizer.py") in paths
    for path in paths:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(source, path, "exec")
