"""The original's TPU flags, checked as far as they can be without a TPU.

* run_pretraining (and the other training tools): `--num_tpu_cores` is ignored
  with a warning, because TPUStrategy uses every core of the TPU it connects
  to. The strategy is a stand-in with a known number of replicas.
* extract_features accepts `--use_tpu`, `--master`, `--num_tpu_cores` and
  `--use_one_hot_embeddings`, says so, and runs on the local device: its
  output equals the output without them (both runs call the tool in this
  process: `toolrun.run_tool`).
* `--help` of each training tool, as a user runs it (a child process that
  loads no TensorFlow), lists the shared flags.
"""

import json
import logging as std_logging
import os
import re
import sys

import keras
import numpy as np
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf.modeling import checkpoint
from bert_tf.training import distribute
from tests.conftest import TINY_CONFIG, write_config
from tests.tolerances import JSON_ATOL
from tests.tools import toolrun


def scale_out_of(*argv):
    """The `ScaleOut` that run_pretraining's flags in `argv` make (as the tool hands it on)."""
    from bert_tf.tools import run_pretraining
    values, _, _ = run_pretraining.TOOL.parse(
        ["run_pretraining", "--input_file=x", "--bert_config_file=x", "--output_dir=x"]
        + list(argv))
    return run_pretraining.TOOL.call_arguments(values)["scale_out"]


def test_num_tpu_cores_is_ignored_with_a_warning(monkeypatch, caplog):
    # A TPU that turns out to have one core: the default strategy (1 replica).
    requested = []

    def get_strategy(name, *args, **kwargs):
        requested.append(name)
        return tf.distribute.get_strategy()

    monkeypatch.setattr(distribute, "get_strategy", get_strategy)
    caplog.set_level(std_logging.WARNING, logger="absl")
    strategy = scale_out_of(
        "--use_tpu=True", "--tpu_name=my-tpu", "--num_tpu_cores=8").create_strategy()
    assert requested == ["tpu"]
    assert strategy.num_replicas_in_sync == 1  # the run goes on with every core it has
    warnings = [r.getMessage() for r in caplog.records if r.levelno == std_logging.WARNING]
    assert any("--num_tpu_cores=8 is ignored" in w for w in warnings), (
        "--use_tpu with --num_tpu_cores=8 on a 1-core TPU must warn that the flag is ignored; "
        "warnings: %s" % warnings)

    # Matching the TPU, or without --use_tpu (the original: "Only used if
    # `use_tpu` is True"), there is nothing to say.
    caplog.clear()
    scale_out_of("--use_tpu=True", "--tpu_name=my-tpu", "--num_tpu_cores=1").create_strategy()
    scale_out_of("--num_tpu_cores=8").create_strategy()
    assert not [r for r in caplog.records if "num_tpu_cores" in r.getMessage()]


def _extract_features_setup(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "the", "loop", "else",
             "clause", "is", "executed", "when", "terminates", "a", "b", "##s", "##ed"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config_file = write_config(tmp_path / "bert_config.json",
                               dict(TINY_CONFIG, vocab_size=len(vocab)))
    keras.utils.set_random_seed(6)
    model = BertModel(BertConfig.from_json_file(config_file))
    ckpt = checkpoint.save_checkpoint(model, str(tmp_path / "bert_model.ckpt"),
                                      update_state=False)
    (tmp_path / "input.txt").write_text(
        "The else clause is executed.\nthe loop terminates ||| a b\n\nloops\n", encoding="utf-8")
    return ["--input_file=%s" % (tmp_path / "input.txt"),
            "--vocab_file=%s" % (tmp_path / "vocab.txt"),
            "--bert_config_file=%s" % config_file, "--init_checkpoint=%s" % ckpt,
            "--layers=-1,-2", "--max_seq_length=16", "--batch_size=2"]


def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_extract_features_accepts_the_tpu_flags_and_runs_locally(tmp_path):
    common = _extract_features_setup(tmp_path)
    plain = str(tmp_path / "plain.jsonl")
    toolrun.run_tool("extract_features", ["--output_file=" + plain] + common)
    with_tpu_flags = str(tmp_path / "tpu_flags.jsonl")
    _, log = toolrun.run_tool("extract_features", [
        "--output_file=" + with_tpu_flags, "--use_tpu=True", "--master=grpc://10.0.0.2:8470",
        "--num_tpu_cores=2", "--use_one_hot_embeddings=True"] + common)
    assert "--use_tpu" in log  # the warning: the run stays on the local device

    ours, reference = _read_jsonl(with_tpu_flags), _read_jsonl(plain)
    assert len(ours) == len(reference) == 4
    for a, b in zip(ours, reference):
        assert a["linex_index"] == b["linex_index"]
        assert [t["token"] for t in a["features"]] == [t["token"] for t in b["features"]]
        for ta, tb in zip(a["features"], b["features"]):
            for la, lb in zip(ta["layers"], tb["layers"]):
                assert la["index"] == lb["index"]
                np.testing.assert_allclose(la["values"], lb["values"], atol=JSON_ATOL)


def test_help_lists_the_tpu_and_scale_out_flags_of_each_training_tool():
    """`--help` (not only `--helpfull`) shows the shared flags; --num_tpu_cores says it is ignored."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for tool in ("run_pretraining", "run_classifier", "run_squad"):
        result = subprocess.run([sys.executable, os.path.join(root, "tools", tool + ".py"),
                                 "--help"], capture_output=True, text=True, timeout=120)
        text = result.stdout + result.stderr
        for flag in ("log_steps", "num_gpus", "distribution_strategy", "mixed_precision",
                     "num_accumulation_steps", "use_tpu", "tpu_name", "num_tpu_cores"):
            assert re.search(r"--(\[no\])?%s:" % flag, text), (tool, flag)
        assert "Total number of TPU cores to use" not in text, tool
        assert "ignored with a warning" in " ".join(text.split()), tool
