"""bert_tf.data.vocab and tools/build_vocab.py: a WordPiece vocab from a corpus.

The tool's run calls it in this process (`toolrun.run_tool`: the flags parsed
and the library called as the command line does); the command line itself
runs as a user runs it for the exit status and stderr of a mistake.
"""

import os
import subprocess
import sys

import pytest

from bert_tf import tokenization
from bert_tf.data import text_files
from bert_tf.tasks.pretraining import data as pd
from bert_tf.data import vocab
from bert_tf.errors import UserError
from tests.data import pretraining_testlib as lib
from tests.tools import toolrun

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return lib.write_corpus(str(tmp_path_factory.mktemp("vocab_corpus")))


def _lines(paths):
    return [line.strip() for p in paths for line in text_files.iter_lines(p) if line.strip()]


def test_vocab_layout_and_no_unknown_words(corpus, tmp_path):
    files = [corpus["a"], corpus["edge"]]
    out = str(tmp_path / "vocab.txt")
    tokens = vocab.build_vocab(files, out, vocab_size=700, num_unused_tokens=4, lower_thresh=2)
    with open(out, encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == tokens
    assert tokens[:9] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                          "[unused0]", "[unused1]", "[unused2]", "[unused3]"]
    assert len(tokens) <= 700 and len(tokens) == len(set(tokens))
    tok = tokenization.FullTokenizer(out, do_lower_case=True)
    assert list(tok.vocab) == tokens  # no duplicates, ids = line numbers
    pieces = [t for line in _lines(files) for t in tok.tokenize(line)]
    assert "[UNK]" not in pieces
    # The vocab learned real pieces: most words are one token, some are split.
    assert sum(p.startswith("##") for p in pieces) < 0.2 * len(pieces)
    assert any(p.startswith("##") for p in pieces)
    # Lower-cased and accent-stripped like the tokenizer: no upper case, no "é".
    assert not any(any(c.isupper() for c in t) for t in tokens[9:])
    assert "\u00e9" not in "".join(tokens) and "caf" in "".join(tokens)
    assert not [f for f in os.listdir(str(tmp_path)) if "tmp" in f]


def test_vocab_is_deterministic_and_cased_vocab_keeps_case(corpus, tmp_path):
    files = [corpus["a"]]
    a = vocab.build_vocab(files, str(tmp_path / "a.txt"), vocab_size=500, lower_thresh=2)
    b = vocab.build_vocab(files, str(tmp_path / "b.txt"), vocab_size=500, lower_thresh=2)
    assert a == b
    cased = vocab.build_vocab(files, str(tmp_path / "c.txt"), vocab_size=500, lower_thresh=2,
                              do_lower_case=False)
    assert any(any(c.isupper() for c in t) for t in cased)
    tok = tokenization.FullTokenizer(str(tmp_path / "c.txt"), do_lower_case=False)
    assert "[UNK]" not in [t for line in _lines(files) for t in tok.tokenize(line)]


def test_overshoot_is_cut_to_vocab_size_keeping_characters(corpus, tmp_path):
    files = [corpus["a"]]
    counts = vocab.count_words(files)
    free = vocab.learn_vocab(counts, 10 ** 6, lower_thresh=2)
    size = len(free) - 40
    cut = vocab.learn_vocab(counts, size, lower_thresh=2)
    assert len(cut) <= size
    out = str(tmp_path / "cut.txt")
    vocab.write_vocab(cut, out)
    tok = tokenization.FullTokenizer(out)
    assert "[UNK]" not in [t for line in _lines(files) for t in tok.tokenize(line)]
    with pytest.raises(UserError, match="vocab_size=40 is too small"):
        vocab.learn_vocab(counts, 40, lower_thresh=2)
    with pytest.raises(UserError, match="no room beyond the 5 reserved"):
        vocab.learn_vocab(counts, 5)


def test_count_words_uses_the_original_basic_tokenizer(corpus):
    counts = vocab.count_words([corpus["edge"]])
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    expected = {}
    for line in _lines([corpus["edge"]]):
        for w in basic.tokenize(line):
            expected[w] = expected.get(w, 0) + 1
    assert dict(counts) == expected
    assert counts["hello"] == 1 and counts["\u535a"] == 1 and counts["cafe"] == 1


def _start_tool(*args):
    """The command line, in a child process."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, os.path.join(REPO, "tools", "build_vocab.py")]
                            + list(args), cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_tool_writes_vocab_and_rejects_bad_input(corpus, tmp_path):
    out = str(tmp_path / "vocab.txt")
    # The mistake as a user sees it (a child process, while the run goes on here).
    bad = _start_tool("--input_file=" + str(tmp_path / "missing*.txt"),
                      "--vocab_file=" + str(tmp_path / "not_written.txt"))
    toolrun.run_tool("build_vocab", ["--input_file=" + corpus["a"], "--vocab_file=" + out,
                                     "--vocab_size=400", "--lower_thresh=2",
                                     "--num_unused_tokens=2"])
    with open(out, encoding="utf-8") as f:
        tokens = f.read().split("\n")[:-1]
    assert tokens == vocab.learn_vocab(vocab.count_words([corpus["a"]]), 400,
                                       num_unused_tokens=2, lower_thresh=2)
    rc, _, err = toolrun.finish(bad)
    assert rc == 2
    assert err.strip().splitlines()[-1].startswith("error: --input_file:")
    assert "Traceback" not in err
    assert not (tmp_path / "not_written.txt").exists()


def test_the_demos_config_takes_its_vocab_size_from_the_vocab(corpus, tmp_path):
    """tools/demo.sh asks build_vocab for 2000 tokens; the config says how many it learned."""
    import json
    from bert_tf.data import demo_corpus
    out = str(tmp_path / "vocab.txt")
    tokens = vocab.build_vocab([corpus["a"]], out, vocab_size=2000, lower_thresh=2)
    assert len(tokens) < 2000  # a small corpus: fewer tokens than asked for
    base = os.path.join(REPO, "configs", "uncased_L-2_H-128_A-2.json")
    config_file = str(tmp_path / "bert_config.json")
    assert demo_corpus.write_demo_config(base, out, config_file) == len(tokens)
    with open(base) as f, open(config_file) as g:
        assert json.load(g) == dict(json.load(f), vocab_size=len(tokens))
    # Every id the model predicts is a token of the vocab.
    tokenizer = tokenization.FullTokenizer(out)
    assert tokenizer.convert_ids_to_tokens([len(tokens) - 1]) == tokens[-1:]
    with pytest.raises(UserError, match="id %d is not in the vocabulary \\(%d tokens"
                       % (len(tokens), len(tokens))):
        tokenizer.decode([len(tokens)])
    # The demo writes its config this way.
    with open(os.path.join(REPO, "tools", "demo.sh"), encoding="utf-8") as f:
        demo = f.read()
    assert "import write_demo_config as w;" in demo
    assert "w('configs/uncased_L-2_H-128_A-2.json', '$OUT/vocab.txt', '$OUT/bert_config.json')" \
        in demo
    assert "vocab_size\"] =" not in demo
