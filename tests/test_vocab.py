# coding=utf-8
"""Tests for bert_tf.tokenization.vocab: the vocab file as the original reads it, and its checks.

`load_vocab`'s line handling (pip's: repeated lines skipped, "\\r" dropped),
the one-line errors for a missing or non-UTF-8 file, `check_vocab` against a
config, and that the vocab check has one home.
"""

import collections

import pytest

from bert_tf.errors import UserError
from bert_tf.tokenization import vocab as vocab_lib
from bert_tf.tokenization.full_tokenizer import FullTokenizer
from tests.test_layout import library_files_matching
from tests.test_tokenization import TEST_VOCAB
from tests.test_tokenization import _write_vocab


def test_convert_tokens_to_ids():
    vocab = {t: i for i, t in enumerate(TEST_VOCAB[:10])}
    assert vocab_lib.convert_tokens_to_ids(
        vocab, ["un", "##want", "##ed", "runn", "##ing"]) == [7, 4, 5, 8, 9]


def test_load_vocab_pip_dedupe(tmp_path):
    path = tmp_path / "dup.txt"
    # Duplicates (also after strip), CRLF, a lone "\r" inside a line (TF's
    # readline drops it), blank lines, no final newline.
    path.write_bytes(b"[UNK]\r\nhello\n  hello \nwor\rld\nworld\n\n\n##lo\n\xc3\xa9\nlast")
    vocab = vocab_lib.load_vocab(str(path))
    assert isinstance(vocab, collections.OrderedDict)
    assert list(vocab.items()) == [("[UNK]", 0), ("hello", 1), ("world", 2),
                                   ("", 3), ("##lo", 4), (u"\u00e9", 5), ("last", 6)]


def test_missing_vocab_file(tmp_path):
    missing = str(tmp_path / "nope" / "vocab.txt")
    with pytest.raises(UserError, match="vocab_file .*nope.*vocab.txt"):
        FullTokenizer(missing)
    with pytest.raises(UserError, match="vocab_file"):
        vocab_lib.load_vocab(str(tmp_path))  # a directory


def test_vocab_not_utf8(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"[UNK]\ncaf\xe9\n")
    with pytest.raises(UserError, match=r"latin1.txt is not valid utf-8 \(line 2\)"):
        vocab_lib.load_vocab(str(path))


# ---------------------------------------------------------------------------
# check_vocab: the vocab must fit the model (every tool that takes both)
# ---------------------------------------------------------------------------


class _Config(object):
    """Anything with `vocab_size` will do (a BertConfig in the tools)."""

    def __init__(self, vocab_size):
        self.vocab_size = vocab_size


def test_check_vocab_names_both_sizes_or_the_missing_token(tmp_path):
    vocab = _write_vocab(tmp_path / "vocab.txt", TEST_VOCAB)
    assert vocab_lib.check_vocab(vocab, _Config(len(TEST_VOCAB))) == len(TEST_VOCAB)
    # A table padded to a multiple of 8 or 128 rows (NVIDIA's, Megatron's checkpoints).
    padded = len(TEST_VOCAB) + vocab_lib.PADDING_ROWS - 1
    assert vocab_lib.check_vocab(vocab, _Config(padded)) == len(TEST_VOCAB)
    with pytest.raises(UserError) as e:
        vocab_lib.check_vocab(vocab, _Config(len(TEST_VOCAB) - 1), "cfg/bert_config.json")
    assert str(e.value) == ("--vocab_file=%s has 12 tokens, more than vocab_size 11 of "
                            "cfg/bert_config.json (the vocab is not the checkpoint's)" % vocab)
    # Another model's vocab: its ids would pick the wrong rows, without a word.
    for vocab_size in (padded + 1, 30522):
        with pytest.raises(UserError) as e:
            vocab_lib.check_vocab(vocab, _Config(vocab_size), "cfg/bert_config.json")
        assert str(e.value) == (
            "--vocab_file=%s has 12 tokens, fewer than vocab_size %d of cfg/bert_config.json "
            "(the vocab is not the checkpoint's; a model trained with it: pad it with "
            "[unusedN] lines to %d tokens)" % (vocab, vocab_size, vocab_size))
    for token in ("[UNK]", "[CLS]", "[SEP]"):
        without = _write_vocab(tmp_path / ("no_%s.txt" % token.strip("[]")),
                               [t for t in TEST_VOCAB if t != token])
        with pytest.raises(UserError) as e:
            vocab_lib.check_vocab(without, _Config(100))
        assert str(e.value) == "--vocab_file=%s has no %s token" % (without, token)
    with pytest.raises(UserError, match="vocab_file .*missing.txt cannot be read: No such file"):
        vocab_lib.check_vocab(str(tmp_path / "missing.txt"), _Config(100))


def test_the_vocab_check_has_one_home():
    """The tools, from_pretrained and every export check a vocab with tokenization.check_vocab."""
    homes = library_files_matching(r"^\s*(def check_vocab\b|check_vocab = )")
    assert homes == ["bert_tf/tokenization/vocab.py"]
    from bert_tf import tokenization as public
    from bert_tf.tokenization import full_tokenizer
    for name in ("load_vocab", "check_vocab", "convert_by_vocab", "convert_tokens_to_ids",
                 "convert_ids_to_tokens"):
        assert getattr(public, name) is getattr(vocab_lib, name), name
        assert getattr(full_tokenizer, name) is getattr(vocab_lib, name), name
