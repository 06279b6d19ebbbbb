"""FullTokenizer's model inputs and text: encode, the batched call, decode, never_split.

* `encode` equals `classifier_data.convert_single_example`'s features, and the
  batched call equals `encode` row by row (lists, NumPy, TensorFlow).
* Against Hugging Face's own BERT WordPiece implementation (the `tokenizers`
  package's `BertWordPieceTokenizer`) on real text: paragraphs of the Python
  reference manual (`pydoc_data.topics`) plus text with accents, CJK, controls
  and punctuation, with a vocab written from that text, cased and uncased:
  the same ids for single texts and pairs, with and without truncation, and
  the same `decode`.
* Each difference from Hugging Face (docs/python-api.md's list) pinned by a test
  named `test_difference_*`.
"""

import collections

import numpy as np
import pytest

from bert_tf import tokenization
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.errors import UserError

RESERVED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["[unused%d]" % i for i in range(5)]

# Text beyond the manual's English: accents, Greek, CJK, Hangul, Kana, controls,
# every kind of whitespace, punctuation and symbols. None holds a character on
# which the two implementations differ (those are in the test_difference_* tests).
EXTRA_TEXTS = [
    "Café déjà vu — naïve façade, Ångström, Œuvre, İstanbul, São Paulo, Dvořák.",
    "Ελληνικά: η γλώσσα, ΑΘΗΝΑ και Θεσσαλονίκη.",
    "北京是中国的首都。日本語のテキスト、カタカナとひらがな。한국어 텍스트입니다.",
    "tab\there, nul\x00 gone, \ufffd replacement, \x0b vt \x0c ff \x85 nel, \u2028 line "
    "\u2029 para, \u00a0 nbsp, \u3000 ideographic, zero\u200bwidth, soft\u00adhyphen.",
    "“Quotes” «guillemets» ¡Hola! ¿Qué? 1,000.50$ 50% a+b=c <tag> ~tilde `tick` ^caret |pipe",
    "Snowman \u2603 and emoji \U0001F600 stay unknown; e\u0301 combines, ﬁ ligature, ① circled.",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 201,
]
# Characters the vocab leaves out, so that words holding them are [UNK].
NOT_IN_VOCAB = {"\u2603", "\U0001F600"}


def _write_vocab(path, tokens):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    return str(path)


def _corpus():
    """About 300 real paragraphs (line breaks and indentation kept) and `EXTRA_TEXTS`."""
    from pydoc_data import topics
    paragraphs = [p for key in sorted(topics.topics)
                  for p in topics.topics[key].split("\n\n") if p.strip()]
    return paragraphs[::12] + EXTRA_TEXTS


def _corpus_vocab(path, texts, do_lower_case):
    """Reserved tokens, every character (and its ## form), suffixes, the 1500 commonest words."""
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    counts = collections.Counter(w for text in texts for w in basic.tokenize(text))
    chars = sorted({c for w in counts for c in w} - NOT_IN_VOCAB)
    tokens = RESERVED + chars + ["##" + c for c in chars]
    tokens += ["##s", "##ed", "##ing", "##er", "##ly", "##al", "##tion", "##ment"]
    tokens += [w for w, _ in counts.most_common(1500)]
    return _write_vocab(path, list(dict.fromkeys(tokens)))


@pytest.fixture(scope="module")
def corpus():
    return _corpus()


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def pair_of_tokenizers(request, corpus, tmp_path_factory):
    """(FullTokenizer, Hugging Face's BertWordPieceTokenizer) on a vocab written from the corpus."""
    hf_tokenizers = pytest.importorskip(
        "tokenizers", reason="tokenizers (requirements-dev.txt) compares with Hugging Face")
    do_lower_case = request.param
    vocab_file = _corpus_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", corpus,
                               do_lower_case)
    ours = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    theirs = hf_tokenizers.BertWordPieceTokenizer(
        vocab_file, lowercase=do_lower_case, strip_accents=do_lower_case, clean_text=True,
        handle_chinese_chars=True)
    return ours, theirs


@pytest.fixture(scope="module")
def small():
    """FullTokenizer and Hugging Face's (or None) on a small uncased vocab, for the pinned cases."""
    import tempfile
    tokens = RESERVED + ["a", "b", "c", "x", "y", "the", "cat", "##s", "un", "##aff", "##able",
                         "[", "]", "mask", "cl", ".", ",", "!", "?", "'", "t", "don",
                         "ο", "δ", "σ", "ς", "##ο", "##δ", "##σ", "##ς", "##a", "##b",
                         "\u2e55", "\U0002B820", "##\U0002B820"]
    with tempfile.TemporaryDirectory() as directory:
        vocab_file = _write_vocab(directory + "/vocab.txt", tokens)
        ours = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
        try:
            import tokenizers as hf_tokenizers
            theirs = hf_tokenizers.BertWordPieceTokenizer(
                vocab_file, lowercase=True, strip_accents=True, clean_text=True,
                handle_chinese_chars=True)
        except ImportError:
            theirs = None
        yield ours, theirs


def _theirs(small):
    if small[1] is None:
        pytest.skip("tokenizers (requirements-dev.txt) compares with Hugging Face")
    return small[1]


def _pairs(texts):
    return list(zip(texts[:-1], texts[1:]))


# ------------------------------------------------------------------ encode and the call


@pytest.mark.parametrize("max_seq_length", [8, 32, 128])
def test_encode_equals_convert_single_example(pair_of_tokenizers, corpus, max_seq_length):
    ours, _ = pair_of_tokenizers
    cases = [(a, None) for a in corpus] + _pairs(corpus) + [(corpus[0], ""), (corpus[1], " \x00 ")]
    for i, (a, b) in enumerate(cases):
        example = classifier_data.InputExample("dev-%d" % i, a, b, label="1")
        expected = classifier_data.convert_single_example(
            1000 + i, example, ["0", "1"], max_seq_length, ours)
        got = ours.encode(a, b, max_seq_length=max_seq_length)
        assert got == {"input_ids": expected.input_ids, "input_mask": expected.input_mask,
                       "segment_ids": expected.segment_ids}, (a, b)


def test_encode_without_max_seq_length_neither_truncates_nor_pads(small):
    ours = small[0]
    ids = ours.convert_tokens_to_ids
    assert ours.encode("the cats") == {
        "input_ids": ids(["[CLS]", "the", "cat", "##s", "[SEP]"]),
        "input_mask": [1] * 5, "segment_ids": [0] * 5}
    assert ours.encode("the cats", "a cat") == {
        "input_ids": ids(["[CLS]", "the", "cat", "##s", "[SEP]", "a", "cat", "[SEP]"]),
        "input_mask": [1] * 8, "segment_ids": [0] * 5 + [1] * 3}
    long_text = " ".join(["cat"] * 300)
    assert len(ours.encode(long_text)["input_ids"]) == 302
    assert ours.encode("the cats", max_seq_length=8)["input_ids"] == ids(
        ["[CLS]", "the", "cat", "##s", "[SEP]"]) + [0, 0, 0]
    # The original's single-segment truncation: the first max_seq_length - 2 tokens.
    assert ours.encode("the cats", max_seq_length=4)["input_ids"] == ids(
        ["[CLS]", "the", "cat", "[SEP]"])
    with pytest.raises(UserError, match="max_seq_length 2 is too short for .* b \\[SEP\\]"):
        ours.encode("a", "b", max_seq_length=2)


def test_the_call_is_encode_row_by_row(pair_of_tokenizers, corpus):
    ours, _ = pair_of_tokenizers
    texts_a, texts_b = corpus[:40:2], corpus[1:40:2]
    texts_b[3] = ""  # a single-segment row in a batch of pairs
    rows = [ours.encode(a, b, max_seq_length=64) for a, b in zip(texts_a, texts_b)]
    keys = ("input_ids", "input_mask", "segment_ids")
    # The original's features: truncate and pad to max_length.
    as_lists = ours(texts_a, texts_b, padding="max_length", truncation=True, max_length=64)
    assert as_lists == {k: [row[k] for row in rows] for k in keys}
    as_np = ours(texts_a, texts_b, padding="max_length", truncation=True, max_length=64,
                 return_tensors="np")
    for k in keys:
        assert as_np[k].dtype == np.int32 and as_np[k].shape == (20, 64)
        np.testing.assert_array_equal(as_np[k], as_lists[k])
    # Without max_length: no truncation, and padding=True pads to the longest row.
    unpadded = [ours.encode(a, b) for a, b in zip(texts_a, texts_b)]
    longest = max(len(row["input_ids"]) for row in unpadded)
    assert longest > 64
    padded = ours(texts_a, texts_b, padding=True, return_tensors="np")
    for k in keys:
        assert padded[k].shape == (20, longest)
        for row, full in zip(unpadded, padded[k]):
            assert list(full) == row[k] + [0] * (longest - len(row[k]))
    assert ours(texts_a, texts_b) == {k: [row[k] for row in unpadded] for k in keys}
    # Truncation without padding, and padding="longest" after truncation.
    truncated = ours(texts_a, texts_b, truncation=True, max_length=64)
    assert truncated["input_ids"] == [
        row[:sum(mask)] for row, mask in zip(as_lists["input_ids"], as_lists["input_mask"])]
    shortest_batch = ours(texts_a[:2], padding="longest", truncation=True, max_length=500)
    assert len(shortest_batch["input_ids"][0]) == max(
        len(ours.encode(a)["input_ids"]) for a in texts_a[:2])


def test_the_call_on_one_text_and_as_tensorflow(small):
    import tensorflow as tf
    ours = small[0]
    one = ours("the cats", "a cat")
    assert one == ours.encode("the cats", "a cat")
    as_tf = ours(["the cats", "a"], padding=True, return_tensors="tf")
    assert set(as_tf) == {"input_ids", "input_mask", "segment_ids"}
    for value in as_tf.values():
        assert isinstance(value, tf.Tensor) and value.dtype == tf.int32
    assert as_tf["input_ids"].numpy().tolist() == [
        ours.encode("the cats")["input_ids"], ours.encode("a", max_seq_length=5)["input_ids"]]
    assert as_tf["input_mask"].numpy().tolist() == [[1] * 5, [1, 1, 1, 0, 0]]
    batch_of_one = ours("the cats", return_tensors="np")
    assert batch_of_one["input_ids"].shape == (1, 5)


@pytest.mark.parametrize("kwargs, message", [
    ({"padding": "max"}, "padding='max'"),
    ({"truncation": "only_second", "max_length": 8}, "truncation='only_second'"),
    ({"return_tensors": "pt"}, "return_tensors='pt'"),
    ({"truncation": True}, "truncation=True needs max_length"),
    ({"padding": "max_length"}, "padding='max_length' needs max_length"),
    ({"return_tensors": "np"}, "needs examples of one length .* padding=True"),
    ({"text_pair": ["a"]}, "text has 2 texts but text_pair has 1"),
    ({"text_pair": "a"}, "text_pair must be a list"),
    ({"text_pair": ["a", "b"], "truncation": True, "max_length": 2}, "too short"),
])
def test_the_call_refuses_arguments_in_one_line(small, kwargs, message):
    with pytest.raises(UserError, match=message):
        small[0](["the cats", "a"], **kwargs)


# ------------------------------------------------------------------ decode


def test_decode_and_convert_tokens_to_string(small):
    ours = small[0]
    tokens = ["[CLS]", "un", "##aff", "##able", "cat", "##s", ",", "don", "'", "t", "!",
              "[SEP]", "[PAD]", "[PAD]"]
    ids = ours.convert_tokens_to_ids(tokens)
    assert ours.convert_tokens_to_string(tokens) == (
        "[CLS] unaffable cats , don ' t ! [SEP] [PAD] [PAD]")
    assert ours.decode(ids) == "[CLS] unaffable cats, don ' t! [SEP] [PAD] [PAD]"
    assert ours.decode(np.array(ids, np.int32), skip_special_tokens=True) == (
        "unaffable cats, don ' t!")
    assert ours.decode(ids, clean_up_tokenization_spaces=False) == (
        ours.convert_tokens_to_string(tokens))
    assert ours.decode([]) == ""
    # Round trip of an encoding: the tokenized text.
    assert ours.decode(ours.encode("The CATS, unaffable!")["input_ids"],
                       skip_special_tokens=True) == "the cats, unaffable!"


def test_an_id_outside_the_vocab_is_a_one_line_error_naming_it_and_the_vocab_size(small):
    ours = small[0]
    size = len(ours.vocab)
    for ids in ([2, size], np.array([2, size], np.int64), [-1]):
        for convert in (ours.decode, ours.convert_ids_to_tokens):
            with pytest.raises(UserError) as error:
                convert(ids)
            assert str(error.value) == "id %d is not in the vocabulary (%d tokens: ids 0 to %d)" % (
                ids[-1], size, size - 1)
            assert isinstance(error.value, KeyError)  # the original's lookup error, too


# ------------------------------------------------------------------ never_split


def test_never_split_keeps_vocab_tokens_whole(small, tmp_path):
    vocab_file = _write_vocab(tmp_path / "vocab.txt", list(small[0].vocab))
    keep = tokenization.FullTokenizer(vocab_file, never_split=["[MASK]", "[unused1]"])
    text = "The [MASK] cats [unused1] a[MASK] [mask] [MASK]."
    assert small[0].tokenize(text)[:6] == ["the", "[", "mask", "]", "cat", "##s"]
    # A word of the text that is a never_split token exactly stays whole (not
    # lower-cased, split or word-pieced); inside a word, or with punctuation
    # attached, it is text.
    assert keep.tokenize(text) == [
        "the", "[MASK]", "cat", "##s", "[unused1]", "a", "[", "mask", "]",
        "[", "mask", "]", "[", "mask", "]", "."]
    assert keep.encode("[MASK] cats")["input_ids"] == keep.convert_tokens_to_ids(
        ["[CLS]", "[MASK]", "cat", "##s", "[SEP]"])
    # never_split is preserve_unused_tokens' rule, for any tokens; the two add up.
    text = "[unused1] [unused4] [MASK] [unused9]"
    unused = [t for t in small[0].vocab if t.startswith("[unused")]
    assert tokenization.FullTokenizer(vocab_file, never_split=unused).tokenize(text) == (
        tokenization.FullTokenizer(vocab_file, preserve_unused_tokens=True).tokenize(text))
    assert tokenization.FullTokenizer(
        vocab_file, preserve_unused_tokens=True, never_split=["[MASK]"]).tokenize(text)[:3] == [
            "[unused1]", "[unused4]", "[MASK]"]
    # BasicTokenizer takes never_split too, without a vocab.
    assert tokenization.BasicTokenizer(never_split=["[Not.In.Vocab]"]).tokenize(
        "A [Not.In.Vocab] B") == ["a", "[Not.In.Vocab]", "b"]
    with pytest.raises(UserError, match="never_split token '\\[MAKS\\]' is not in the vocab"):
        tokenization.FullTokenizer(vocab_file, never_split=["[MAKS]"])
    for bad in ("a b", "", "x\x00", "中文"):
        with pytest.raises(UserError, match="never_split token .* can never be a word"):
            tokenization.FullTokenizer(vocab_file, never_split=[bad])
    with pytest.raises(UserError, match="never_split must be a list"):
        tokenization.FullTokenizer(vocab_file, never_split="[MASK]")


def test_never_split_agrees_with_hugging_face_added_tokens_between_spaces(small, tmp_path):
    _theirs(small)
    import tokenizers as hf_tokenizers
    vocab_file = _write_vocab(tmp_path / "vocab.txt", list(small[0].vocab))
    ours = tokenization.FullTokenizer(vocab_file, never_split=["[MASK]", "[unused3]"])
    theirs = hf_tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=True)
    theirs.add_tokens([hf_tokenizers.AddedToken("[unused3]", single_word=True, normalized=False)])
    text = "The [MASK] cats [unused3] b [unused1] , [MASK] ."
    assert ours.tokenize(text) == ["the", "[MASK]", "cat", "##s", "[unused3]", "b", "[", "[UNK]",
                                   "]", ",", "[MASK]", "."]
    assert ours.encode(text)["input_ids"] == theirs.encode(text).ids


# ------------------------------------------------------------------ against Hugging Face


def test_ids_equal_hugging_face_tokenizers(pair_of_tokenizers, corpus):
    ours, theirs = pair_of_tokenizers
    theirs.no_truncation()
    encodings = theirs.encode_batch(corpus)
    for text, encoding in zip(corpus, encodings):
        assert ours.encode(text)["input_ids"] == encoding.ids, text
        assert ours.tokenize(text) == encoding.tokens[1:-1], text
    unk = ours.vocab["[UNK]"]
    assert any(unk in e.ids for e in encodings) and any(len(set(e.ids)) > 50 for e in encodings)
    pairs = _pairs(corpus)
    for (a, b), encoding in zip(pairs, theirs.encode_batch(pairs)):
        got = ours.encode(a, b)
        assert got["input_ids"] == encoding.ids, (a, b)
        assert got["segment_ids"] == encoding.type_ids
        assert got["input_mask"] == encoding.attention_mask


@pytest.mark.parametrize("max_seq_length", [32, 63, 128])
def test_truncated_ids_equal_hugging_face_tokenizers(pair_of_tokenizers, corpus, max_seq_length):
    """Equal, but for the one pinned case of pairs (see test_difference_truncation_of_a_tie)."""
    ours, theirs = pair_of_tokenizers
    theirs.enable_truncation(max_seq_length)
    try:
        for text, encoding in zip(corpus, theirs.encode_batch(corpus)):
            assert ours.encode(text, max_seq_length=max_seq_length)["input_ids"] == (
                encoding.ids + [0] * (max_seq_length - len(encoding.ids))), text
        pairs = _pairs(corpus)
        budget = max_seq_length - 3
        ties = 0
        for (a, b), encoding in zip(pairs, theirs.encode_batch(pairs)):
            got = ours.encode(a, b, max_seq_length=max_seq_length)
            n = sum(got["input_mask"])
            len_a, len_b = len(ours.tokenize(a)), len(ours.tokenize(b))
            if budget % 2 and min(len_a, len_b) > budget // 2 and len_a <= len_b:
                # Both segments are cut to half the budget; ours keeps the odd
                # token in a, Hugging Face in b.
                ties += 1
                assert got["segment_ids"][:n].count(0) == 2 + budget // 2 + 1
                assert encoding.type_ids.count(0) == 2 + budget // 2
                assert len(encoding.ids) == n == max_seq_length
            else:
                assert got["input_ids"][:n] == encoding.ids, (a, b)
                assert got["segment_ids"][:n] == encoding.type_ids
        assert ties > 0 if budget % 2 else ties == 0
    finally:
        theirs.no_truncation()


def test_decode_equals_hugging_face_tokenizers(pair_of_tokenizers, corpus):
    ours, theirs = pair_of_tokenizers
    for (a, b), encoding in zip(_pairs(corpus), theirs.encode_batch(_pairs(corpus))):
        for skip in (False, True):
            assert ours.decode(encoding.ids, skip_special_tokens=skip) == theirs.decode(
                encoding.ids, skip_special_tokens=skip), (a, b)


# ------------------------------------------------------------------ the differences, pinned


def test_difference_max_input_chars_per_word(small):
    """A word of 101 to 200 characters: word pieces here (the original's 200), [UNK] in HF (100)."""
    ours, theirs = small[0], _theirs(small)
    word = "a" * 101
    assert ours.tokenize(word) == ["a"] + ["##a"] * 100
    assert theirs.encode(word).tokens == ["[CLS]", "[UNK]", "[SEP]"]
    assert ours.tokenize("a" * 201) == ["[UNK]"]
    assert ours.encode("a" * 100)["input_ids"] == theirs.encode("a" * 100).ids


def test_difference_private_use_characters(small):
    """HF deletes private-use characters (U+E000-U+F8FF, planes 15-16); the original keeps them."""
    ours, theirs = small[0], _theirs(small)
    for char in ("\ue000", "\uf8ff", "\U000f0000"):
        assert ours.tokenize("a%sb c" % char) == ["[UNK]", "c"]
        assert theirs.encode("a%sb c" % char).tokens == ["[CLS]", "a", "##b", "c", "[SEP]"]


def test_difference_cjk_extension_e_start(small):
    """U+2B820-U+2B91F are CJK ideographs to the original (isolated); HF's start at U+2B920."""
    ours, theirs = small[0], _theirs(small)
    char = "\U0002B820"
    assert ours.tokenize("a%sa" % char) == ["a", char, "a"]
    assert theirs.encode("a%sa" % char).tokens == ["[CLS]", "a", "##" + char, "##a", "[SEP]"]
    assert ours.tokenize("a\U0002B920a") == theirs.encode("a\U0002B920a").tokens[1:-1]


def test_difference_characters_newer_unicode_versions_classify(small):
    """The original's character classes follow Python's `unicodedata`; HF's are older tables.

    E.g. U+2E55 (a bracket, punctuation since Unicode 14, Python >= 3.11) is
    split off here and part of the word in HF.
    """
    import unicodedata
    ours, theirs = small[0], _theirs(small)
    assert unicodedata.category("\u2e55") == "Ps"
    assert ours.tokenize("a\u2e55b") == ["a", "\u2e55", "b"]
    assert theirs.encode("a\u2e55b").tokens == ["[CLS]", "[UNK]", "[SEP]"]


def test_difference_greek_final_sigma(small):
    """Uncased: Python's lower() writes a word-final capital sigma as "ς"; HF as "σ"."""
    ours, theirs = small[0], _theirs(small)
    assert ours.tokenize("ΟΔΟΣ") == ["ο", "##δ", "##ο", "##ς"]
    assert theirs.encode("ΟΔΟΣ").tokens[1:-1] == ["ο", "##δ", "##ο", "##σ"]
    assert ours.tokenize("ΣΟ") == theirs.encode("ΣΟ").tokens[1:-1] == ["σ", "##ο"]


def test_difference_truncation_of_a_tie(small):
    """Both segments over half an odd budget: the original keeps the odd token in a, HF in b."""
    ours, theirs = small[0], _theirs(small)
    a, b = "a a a a a", "b b b b b"
    # max_seq_length 8: budget 5 for the segments.
    got = ours.encode(a, b, max_seq_length=8)
    assert ours.convert_ids_to_tokens(got["input_ids"]) == [
        "[CLS]", "a", "a", "a", "[SEP]", "b", "b", "[SEP]"]
    theirs.enable_truncation(8)
    try:
        assert theirs.encode(a, b).tokens == ["[CLS]", "a", "a", "[SEP]", "b", "b", "b", "[SEP]"]
        # An even budget (max_seq_length 9) halves both alike.
        theirs.enable_truncation(9)
        assert ours.encode(a, b, max_seq_length=9)["input_ids"] == theirs.encode(a, b).ids
    finally:
        theirs.no_truncation()


def test_difference_empty_second_text(small):
    """A second text that is empty or tokenizes to nothing: a single segment in the original."""
    ours, theirs = small[0], _theirs(small)
    for b in ("", " ", "\x00"):
        assert ours.convert_ids_to_tokens(ours.encode("a", b)["input_ids"]) == [
            "[CLS]", "a", "[SEP]"]
        assert theirs.encode("a", b).tokens == ["[CLS]", "a", "[SEP]", "[SEP]"]
    # And a second segment truncated to nothing gets no [SEP] of its own.
    assert ours.convert_ids_to_tokens(ours.encode("a", "b", max_seq_length=3)["input_ids"]) == [
        "[CLS]", "[SEP]", "[PAD]"]


def test_difference_special_tokens_written_in_the_text(small):
    """HF finds its special tokens anywhere in the raw text; the original tokenizes them as text."""
    ours, theirs = small[0], _theirs(small)
    assert ours.tokenize("a [MASK] x[CLS]y") == [
        "a", "[", "mask", "]", "x", "[", "cl", "##s", "]", "y"]
    assert theirs.encode("a [MASK] x[CLS]y").tokens == [
        "[CLS]", "a", "[MASK]", "x", "[CLS]", "y", "[SEP]"]


def test_difference_vocab_file_with_a_repeated_line(tmp_path):
    """A repeated line: ids count distinct tokens here (pip's load_vocab), lines in HF."""
    hf_tokenizers = pytest.importorskip(
        "tokenizers", reason="tokenizers (requirements-dev.txt) compares with Hugging Face")
    vocab_file = _write_vocab(tmp_path / "vocab.txt", RESERVED + ["a", "##b", "a", "c"])
    ours = tokenization.FullTokenizer(vocab_file)
    theirs = hf_tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=True)
    assert ours.encode("ab c")["input_ids"][1:-1] == [10, 11, 12]
    assert theirs.encode("ab c").ids[1:-1] == [12, 11, 13]


def test_difference_decode_of_unknown_ids_and_the_default(small):
    """An id the vocab lacks is a KeyError (HF drops it); special tokens are kept by default.

    `tokenizers`' decode skips special tokens by default; `decode` here keeps
    them, as transformers' `BertTokenizer.decode` does.
    """
    ours, theirs = small[0], _theirs(small)
    ids = ours.convert_tokens_to_ids(["[CLS]", "a", "[SEP]"])
    assert ours.decode(ids) == "[CLS] a [SEP]"
    assert theirs.decode(ids) == "a"
    assert theirs.decode(ids + [10 ** 6]) == "a"
    with pytest.raises(KeyError, match="id %d is not in the vocabulary" % 10 ** 6):
        ours.decode(ids + [10 ** 6])
