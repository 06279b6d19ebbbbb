"""The README's Python examples, run as a user runs them: in order, in one namespace.

Every ```python block of README.md runs, in a fresh directory that holds what
the README's text says is there: a Google release directory
`uncased_L-12_H-768_A-12/` (here a tiny model: 2 layers, hidden 32, with a
vocab of real words, written in Google's format) and a sentence-pair task in
MRPC's layout under `glue/MRPC/`. A block the machine cannot run is preceded
by a `<!-- not run: why -->` line; the test holds that each such block says
why, and that there are only the three that need a server, another process or the network.
"""

import json
import logging
import os
import re

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = "uncased_L-12_H-768_A-12"
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


def readme_blocks():
    """[(line number, code, reason it is not run or None)] of README.md's ```python blocks."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            match = NOT_RUN.search(previous)
            i += 1
            code = []
            while lines[i].strip() != "```":
                code.append(lines[i])
                i += 1
            blocks.append((start + 1, "\n".join(code) + "\n", match and match.group(1)))
        i += 1
    return blocks


def _write_release(directory):
    """A tiny uncased release: bert_config.json, vocab.txt, bert_model.ckpt (with the cls heads)."""
    import keras
    from bert_tf.data import demo_corpus
    from bert_tf.data import vocab as vocab_lib
    from bert_tf.modeling import checkpoint
    from bert_tf.modeling.config import BertConfig
    from bert_tf.tasks.pretraining import BertPretrainer

    os.makedirs(directory)
    corpus = os.path.join(directory, "corpus.txt")
    demo_corpus.write_pydoc_corpus(corpus, max_docs=40)
    vocab_file = os.path.join(directory, "vocab.txt")
    vocab_lib.build_vocab([corpus], vocab_file, vocab_size=1000, do_lower_case=True,
                          lower_thresh=2)
    os.remove(corpus)
    with open(vocab_file, encoding="utf-8") as f:
        vocab_size = len(f.read().splitlines())
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


def test_every_block_runs_or_says_why_not(tmp_path, monkeypatch, caplog):
    from bert_tf.data import demo_corpus

    blocks = readme_blocks()
    assert len(blocks) >= 5
    skipped = [(line, reason) for line, _, reason in blocks if reason]
    assert len(skipped) == 3, skipped  # TF Serving's gRPC client, TF Hub's KerasLayer, a download
    monkeypatch.chdir(tmp_path)
    _write_release(str(tmp_path / RELEASE))
    demo_corpus.write_sentence_pair_task(str(tmp_path / "glue" / "MRPC"),
                                         sizes=(("train.tsv", 16), ("dev.tsv", 12), ("test.tsv", 8)))
    namespace = {"__name__": "__readme__"}
    for line, code, reason in blocks:
        if reason:
            continue
        _run_block(line, code, namespace)

    # The Keras example run a second time, as a user re-runs a script: the
    # fit resumes from the first run's checkpoint and says so.
    keras_example = [(line, code) for line, code, reason in blocks
                     if not reason and "CheckpointCallback(" in code]
    assert len(keras_example) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        _run_block(keras_example[0][0], keras_example[0][1], namespace)
    assert re.search(r"CheckpointCallback: resumed from output_dir/model\.ckpt-\d+ at global "
                     r"step \d+", caplog.text), caplog.text


def _run_block(line, code, namespace):
    try:
        exec(compile(code, "README.md:%d" % line, "exec"), namespace)  # noqa: S102
    except Exception as e:  # pylint: disable=broad-except
        pytest.fail("README.md's block at line %d fails: %s: %s" % (line, type(e).__name__, e))
