"""The Python examples of README.md and docs/, run as a user runs them: each one on its own.

Every ```python block of README.md and of docs/**/*.md runs in a fresh
namespace (a block copied alone must work: it makes its own imports and
names) and in a fresh directory that holds a fresh copy of the files its code
names, as its text says they are there:

  uncased_L-12_H-768_A-12/  a Google release directory (here a tiny model:
                            2 layers, hidden 32, a vocab of real words,
                            written in Google's format, with the cls heads)
  glue/MRPC/                the demo's sentence-pair task in MRPC's layout
  demo_output/              what `make demo` leaves (tools/demo.sh): its
                            bert_config.json (2 layers, hidden 128), vocab.txt
                            and pretraining_output/model.ckpt-400 with the
                            `checkpoint` state file

The fixtures are built once per module and copied for each block. A block the
machine cannot run is preceded by a `<!-- not run: needs ...: why -->` line;
the test holds that each such block says what it needs, and that there are
only the three that need the network, a TF Serving server or a process of
their own.
"""

import collections
import glob
import json
import logging
import os
import re
import shutil

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = "uncased_L-12_H-768_A-12"
PAIR_TASK = os.path.join("glue", "MRPC")
DEMO = "demo_output"
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")
# The blocks not run, by what each needs: a download, TF Serving's gRPC server,
# TF Hub's KerasLayer (tf-keras, in a process of its own).
EXPECTED_NOT_RUN = 3

Block = collections.namedtuple("Block", ["path", "line", "code", "reason", "prose"])


def doc_files():
    """README.md and every page of docs/, relative to the repository."""
    pages = sorted(glob.glob(os.path.join(REPO_ROOT, "docs", "**", "*.md"), recursive=True))
    return ["README.md"] + [os.path.relpath(p, REPO_ROOT).replace(os.sep, "/") for p in pages]


def python_blocks(path):
    """[Block] of a Markdown file's ```python blocks.

    `reason` is the `<!-- not run: ... -->` text of the line before the block
    (None: the block runs); `prose` is the paragraph before that.
    """
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            before = [j for j in range(i - 1, -1, -1) if lines[j].strip()]
            previous = lines[before[0]] if before else ""
            match = NOT_RUN.search(previous)
            # The paragraph above the block (above its marker, if any).
            j = before[1] if match and len(before) > 1 else (before[0] if before else -1)
            prose = []
            while j >= 0 and lines[j].strip():
                prose.insert(0, lines[j])
                j -= 1
            i += 1
            code = []
            while lines[i].strip() != "```":
                code.append(lines[i])
                i += 1
            blocks.append(Block(path, start + 1, "\n".join(code) + "\n",
                                match and match.group(1), "\n".join(prose)))
        i += 1
    return blocks


ALL_BLOCKS = [block for path in doc_files() for block in python_blocks(path)]
RUN_BLOCKS = [block for block in ALL_BLOCKS if not block.reason]
# The Keras example with CheckpointCallback runs twice, in its own test.
KERAS_BLOCKS = [block for block in RUN_BLOCKS if "CheckpointCallback(" in block.code]
OTHER_BLOCKS = [block for block in RUN_BLOCKS if block not in KERAS_BLOCKS]


def _where(block):
    return "%s:%d" % (block.path, block.line)


# ------------------------------------------------------------------ fixtures


_LEARNED_VOCAB = []  # the text of the vocab once learned


def _write_vocab(directory):
    """vocab.txt learned from the pydoc corpus, in `directory`: (its path, its size).

    Learned once, then written again (the release and the demo have the same).
    """
    if not _LEARNED_VOCAB:
        vocab_file, _ = _learn_vocab(directory)
        with open(vocab_file, encoding="utf-8", newline="") as f:
            _LEARNED_VOCAB.append(f.read())
    vocab_file = os.path.join(directory, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8", newline="") as f:
        f.write(_LEARNED_VOCAB[0])
    return vocab_file, len(_LEARNED_VOCAB[0].splitlines())


def _learn_vocab(directory):
    from bert_tf.data import demo_corpus
    from bert_tf.data import vocab as vocab_lib

    corpus = os.path.join(directory, "corpus.txt")
    demo_corpus.write_pydoc_corpus(corpus, max_docs=40)
    vocab_file = os.path.join(directory, "vocab.txt")
    vocab_lib.build_vocab([corpus], vocab_file, vocab_size=1000, do_lower_case=True,
                          lower_thresh=2)
    os.remove(corpus)
    with open(vocab_file, encoding="utf-8") as f:
        return vocab_file, len(f.read().splitlines())


def _write_release(directory):
    """A tiny uncased release: bert_config.json, vocab.txt, bert_model.ckpt (with the cls heads)."""
    import keras
    from bert_tf.modeling import checkpoint
    from bert_tf.modeling.config import BertConfig
    from bert_tf.tasks.pretraining.model import BertPretrainer

    os.makedirs(directory)
    _, vocab_size = _write_vocab(directory)
    config = {"vocab_size": vocab_size, "hidden_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 4, "intermediate_size": 37, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
              "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02}
    with open(os.path.join(directory, "bert_config.json"), "w") as f:
        json.dump(config, f)
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertConfig.from_dict(config))
    checkpoint.save_checkpoint(model, os.path.join(directory, "bert_model.ckpt"),
                               update_state=False)


def _write_demo_output(directory):
    """demo_output/ as tools/demo.sh leaves it, as far as the examples read it.

    The demo's architecture (configs/uncased_L-2_H-128_A-2.json, vocab_size
    the vocab's, written as demo.sh writes it), its vocab.txt (here learned
    from fewer documents) and a pre-training run's output_dir ending at
    model.ckpt-400.
    """
    import keras
    from bert_tf.data import demo_corpus
    from bert_tf.modeling import checkpoint
    from bert_tf.modeling.config import BertConfig
    from bert_tf.tasks.pretraining.model import BertPretrainer

    os.makedirs(directory)
    vocab_file, _ = _write_vocab(directory)
    config_file = os.path.join(directory, "bert_config.json")
    demo_corpus.write_demo_config(
        os.path.join(REPO_ROOT, "configs", "uncased_L-2_H-128_A-2.json"), vocab_file, config_file)
    with open(config_file) as f:
        config = json.load(f)
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertConfig.from_dict(config))
    checkpoint.save_checkpoint(model, os.path.join(directory, "pretraining_output",
                                                   "model.ckpt-400"), global_step=400)


def _write_pair_task(directory):
    from bert_tf.data import demo_corpus

    demo_corpus.write_sentence_pair_task(
        directory, sizes=(("train.tsv", 16), ("dev.tsv", 12), ("test.tsv", 8)))


# What a block's code may name: the fixture is copied in when its name is there.
FIXTURES = collections.OrderedDict([
    (RELEASE, _write_release),
    (PAIR_TASK, _write_pair_task),
    (DEMO, _write_demo_output),
])


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    """The directory that holds every fixture, built once for the module."""
    root = tmp_path_factory.mktemp("doc_fixtures")
    for name, write in FIXTURES.items():
        write(str(root / name))
    return root


def _named_fixtures(code):
    return [name for name in FIXTURES if name.replace(os.sep, "/") in code]


def _prepare(block, fixtures, directory):
    """A fresh copy of every fixture the block names, in `directory`."""
    for name in _named_fixtures(block.code):
        shutil.copytree(str(fixtures / name), str(directory / name))


def _run_block(block):
    namespace = {"__name__": "__doc_example__"}
    try:
        exec(compile(block.code, _where(block), "exec"), namespace)  # noqa: S102
    except Exception as e:  # pylint: disable=broad-except
        pytest.fail("%s's block at line %d fails: %s: %s"
                    % (block.path, block.line, type(e).__name__, e))


# ------------------------------------------------------------------ the blocks


def test_the_blocks_are_found():
    assert [b for b in ALL_BLOCKS if b.path == "README.md"], "README.md has no Python example"
    assert len(RUN_BLOCKS) >= 10, [_where(b) for b in RUN_BLOCKS]
    assert len(KERAS_BLOCKS) == 1, [_where(b) for b in KERAS_BLOCKS]
    # README's "Start here" loads what `make demo` wrote.
    assert any(DEMO in b.code for b in RUN_BLOCKS if b.path == "README.md")


def test_blocks_not_run_are_few_and_say_why():
    skipped = [(_where(b), b.reason) for b in ALL_BLOCKS if b.reason]
    # TF Serving's gRPC client, TF Hub's KerasLayer, a download.
    assert len(skipped) == EXPECTED_NOT_RUN, skipped
    for block in ALL_BLOCKS:
        if not block.reason:
            continue
        assert re.match(r"needs [^:]+: .+", block.reason), (
            "%s: say what the block needs and why: <!-- not run: needs X: why -->"
            % _where(block))
        if block.reason.startswith("needs the network"):
            assert "network" in block.prose, (
                "%s: the text above a block that needs the network says so" % _where(block))


@pytest.mark.slow
@pytest.mark.parametrize("block", OTHER_BLOCKS, ids=_where)
def test_block_runs_on_its_own(block, fixtures, tmp_path, monkeypatch, capsys):
    _prepare(block, fixtures, tmp_path)
    monkeypatch.chdir(tmp_path)
    _run_block(block)
    if DEMO in block.code and "pooled_output" in block.code:
        # The start-here example prints the pooled output's shape: the demo's hidden size.
        assert "(1, 128)" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("block", KERAS_BLOCKS, ids=_where)
def test_keras_example_resumes_when_run_again(block, fixtures, tmp_path, monkeypatch, caplog):
    """The Keras example, then the same again in the same directory, as a user re-runs a
    script: the second fit resumes from the first run's checkpoint and says so."""
    _prepare(block, fixtures, tmp_path)
    monkeypatch.chdir(tmp_path)
    _run_block(block)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        _run_block(block)
    assert re.search(r"CheckpointCallback: resumed from output_dir/model\.ckpt-\d+ at global "
                     r"step \d+", caplog.text), caplog.text
