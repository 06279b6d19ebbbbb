"""Hugging Face BERT directories in and out (bert_tf/modeling/huggingface.py and its users).

* The name map, both ways, against the names Hugging Face's modeling_bert.py
  gives (written out here, not derived from the map): backbone, pre-training
  heads, classifier, SQuAD; `bert.`-prefixed and bare keys, old gamma/beta.
* config.json <-> BertConfig with the activations (HF "gelu" is the erf form).
* `save_pretrained(format="huggingface")` of every task model, read back
  bit-exactly; Google -> Hugging Face -> Google with `bert-convert-checkpoint`
  gives every variable back bit for bit; `from_pretrained(<HF dir>)` gives
  the Google checkpoint's outputs exactly; a tool runs on `--init_checkpoint=<HF dir>`.
* Directories laid out as Hugging Face writes them: sharded with an index,
  bfloat16, the tied decoder, no pooler (BertForMaskedLM), tokenizer.json only.
* Each bad directory: one line naming the file or tensor, nothing written.
* (slow) transformers 4.44.2's own TFBert* loaders, in bench/.hf-peer.
"""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

import bert_tf
from bert_tf import BertConfig
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.modeling import huggingface
from bert_tf.tasks import registry
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.multiple_choice.model import BertMultipleChoice
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.tasks.squad.model import BertSquad
from bert_tf.tasks.token_classification.model import BertTokenClassifier
from tests.conftest import TINY_CONFIG
from tests.conftest import make_inputs
from tests.tools import toolrun

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF_PEER = os.path.join(REPO, "bench", ".hf-peer", "bin", "python")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "Hello", "world", ",", "!",
         "the", "##s"]
# Hugging Face's torch names (modeling_bert.py's module tree) and the original's, written out.
BACKBONE_PAIRS = [
    ("embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", False),
    ("embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings", False),
    ("embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings", False),
    ("embeddings.LayerNorm.weight", "bert/embeddings/LayerNorm/gamma", False),
    ("embeddings.LayerNorm.bias", "bert/embeddings/LayerNorm/beta", False),
    ("encoder.layer.1.attention.self.query.weight",
     "bert/encoder/layer_1/attention/self/query/kernel", True),
    ("encoder.layer.1.attention.self.key.bias", "bert/encoder/layer_1/attention/self/key/bias",
     False),
    ("encoder.layer.0.attention.self.value.weight",
     "bert/encoder/layer_0/attention/self/value/kernel", True),
    ("encoder.layer.0.attention.output.dense.weight",
     "bert/encoder/layer_0/attention/output/dense/kernel", True),
    ("encoder.layer.0.attention.output.LayerNorm.weight",
     "bert/encoder/layer_0/attention/output/LayerNorm/gamma", False),
    ("encoder.layer.0.intermediate.dense.weight",
     "bert/encoder/layer_0/intermediate/dense/kernel", True),
    ("encoder.layer.0.output.dense.bias", "bert/encoder/layer_0/output/dense/bias", False),
    ("encoder.layer.1.output.LayerNorm.bias", "bert/encoder/layer_1/output/LayerNorm/beta", False),
    ("pooler.dense.weight", "bert/pooler/dense/kernel", True),
    ("pooler.dense.bias", "bert/pooler/dense/bias", False),
]
HEAD_PAIRS = [
    ("cls.predictions.transform.dense.weight", "cls/predictions/transform/dense/kernel", True),
    ("cls.predictions.transform.dense.bias", "cls/predictions/transform/dense/bias", False),
    ("cls.predictions.transform.LayerNorm.weight", "cls/predictions/transform/LayerNorm/gamma",
     False),
    ("cls.predictions.transform.LayerNorm.bias", "cls/predictions/transform/LayerNorm/beta", False),
    ("cls.predictions.bias", "cls/predictions/output_bias", False),
    ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights", False),
    ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias", False),
    ("classifier.weight", "output_weights", False),
    ("classifier.bias", "output_bias", False),
    ("qa_outputs.weight", "cls/squad/output_weights", False),
    ("qa_outputs.bias", "cls/squad/output_bias", False),
]
NER_LABELS = ["O", "B-PER", "I-PER"]
HEADS = {"pretraining": (BertPretrainer, {}), "classifier": (BertClassifier, {"num_labels": 3}),
         "squad": (BertSquad, {}),
         "token_classification": (BertTokenClassifier, {"num_labels": 3, "labels": NER_LABELS}),
         "multiple_choice": (BertMultipleChoice, {})}


def _write_vocab(path, tokens=VOCAB):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    return str(path)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each task model (random weights) saved in both formats: {head: {google, hf, values}}."""
    root = tmp_path_factory.mktemp("saved")
    vocab = _write_vocab(root / "vocab.txt")
    result = {"vocab": vocab, "root": root}
    for i, (head, (cls, kwargs)) in enumerate(HEADS.items()):
        keras.utils.set_random_seed(10 + i)
        model = cls(BertConfig.from_dict(dict(TINY_CONFIG)), **kwargs)
        google = model.save_pretrained(str(root / (head + "_google")), vocab_file=vocab)
        hf = model.save_pretrained(str(root / (head + "_hf")), format="huggingface",
                                   vocab_file=vocab, do_lower_case=False)
        result[head] = {"google": google, "hf": hf, "model": model,
                        "values": checkpoint.read_checkpoint(
                            os.path.join(google, "bert_model.ckpt"))}
    return result


def _safetensors(directory, name="model.safetensors"):
    from safetensors.numpy import load_file
    return load_file(os.path.join(directory, name))


def _write_hf(directory, tensors, config, vocab=VOCAB, tokenizer_config=None,
              name="model.safetensors"):
    """A directory as Hugging Face writes it, from its own tensor names."""
    from safetensors.numpy import save_file
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f)
    if vocab is not None:
        _write_vocab(os.path.join(directory, "vocab.txt"), vocab)
    if tokenizer_config is not None:
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer_config, f)
    if tensors is not None:
        save_file(tensors, os.path.join(directory, name), metadata={"format": "pt"})
    return str(directory)


def _hf_config(architecture="BertModel", **overrides):
    config = dict(TINY_CONFIG, model_type="bert", architectures=[architecture],
                  layer_norm_eps=1e-12, hidden_act="gelu_new")
    config.update(overrides)
    return config


# ------------------------------------------------------------------ the map

@pytest.mark.parametrize("prefixed", [False, True])
def test_every_backbone_name_maps_both_ways(prefixed):
    for hf, google, transposed in BACKBONE_PAIRS:
        hf = ("bert." + hf) if prefixed else hf
        assert huggingface.google_name(hf) == (google, transposed), hf
        assert huggingface.hf_name(google, prefixed) == (hf, transposed), google


def test_every_head_name_maps_both_ways_and_never_takes_the_prefix():
    for hf, google, transposed in HEAD_PAIRS:
        assert huggingface.google_name(hf) == (google, transposed)
        for prefixed in (False, True):
            assert huggingface.hf_name(google, prefixed) == (hf, transposed)
        with pytest.raises(KeyError):
            huggingface.google_name("bert." + hf)


def test_old_gamma_beta_names_and_the_position_ids_buffer():
    assert huggingface.google_name("bert.embeddings.LayerNorm.gamma") == (
        "bert/embeddings/LayerNorm/gamma", False)
    assert huggingface.google_name("encoder.layer.1.output.LayerNorm.beta") == (
        "bert/encoder/layer_1/output/LayerNorm/beta", False)
    assert huggingface.google_name("cls.predictions.transform.LayerNorm.gamma") == (
        "cls/predictions/transform/LayerNorm/gamma", False)
    assert huggingface.google_name("bert.embeddings.position_ids") is None
    for unknown in ("encoder.layer.0.crossattention.self.query.weight", "lm_head.weight"):
        with pytest.raises(KeyError):
            huggingface.google_name(unknown)


def test_transformers_tf_layout_names():
    """transformers' TF models save Keras names ("format": "tf"), kernels [in, out]."""
    assert huggingface.google_name_of_tf("bert/encoder/layer_._1/attention/self/query/kernel:0") \
        == ("bert/encoder/layer_1/attention/self/query/kernel", False)
    assert huggingface.google_name_of_tf("bert/embeddings/word_embeddings/weight:0") == (
        "bert/embeddings/word_embeddings", False)
    assert huggingface.google_name_of_tf("mlm___cls/predictions/bias:0") == (
        "cls/predictions/output_bias", False)
    assert huggingface.google_name_of_tf("nsp___cls/seq_relationship/kernel:0") == (
        "cls/seq_relationship/output_weights", True)
    assert huggingface.google_name_of_tf("classifier/kernel:0") == ("output_weights", True)
    assert huggingface.google_name_of_tf("qa_outputs/bias:0") == ("cls/squad/output_bias", False)
    with pytest.raises(KeyError):
        huggingface.google_name_of_tf("bert/encoder/layer_._0/crossattention/self/query/kernel:0")


def test_the_map_covers_every_variable_of_every_head(tiny_config):
    for head, num_labels in ((None, None), ("pretraining", None), ("classifier", 3),
                             ("squad", None)):
        names = checkpoint.expected_tf1_variables(tiny_config, head=head, num_labels=num_labels)
        for prefixed in (False, True):
            hf = [huggingface.hf_name(n, prefixed)[0] for n in names]
            assert len(set(hf)) == len(names)
            assert [huggingface.google_name(n)[0] for n in hf] == list(names)


# ------------------------------------------------------------------ config.json

@pytest.mark.parametrize("hf_act, ours", [("gelu", "gelu_exact"), ("gelu_new", "gelu"),
                                          ("gelu_pytorch_tanh", "gelu"), ("relu", "relu"),
                                          ("tanh", "tanh"), ("linear", "linear")])
def test_config_json_activations(tmp_path, hf_act, ours):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_hf_config(hidden_act=hf_act, num_labels=2)))
    config = BertConfig.from_json_file(str(tmp_path))  # the directory names its config.json
    assert config.hidden_act == ours
    assert {k: getattr(config, k) for k in TINY_CONFIG if k != "hidden_act"} == {
        k: v for k, v in TINY_CONFIG.items() if k != "hidden_act"}
    back = huggingface.hf_config(config.to_dict(), "BertModel")
    assert back["hidden_act"] == ("gelu_new" if hf_act == "gelu_pytorch_tanh" else hf_act)
    assert back["model_type"] == "bert" and back["layer_norm_eps"] == 1e-12


@pytest.mark.parametrize("overrides, words", [
    ({"hidden_act": "silu"}, "hidden_act"),
    ({"model_type": "roberta"}, "model_type 'roberta'"),
    ({"layer_norm_eps": 1e-5}, "layer_norm_eps"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
])
def test_a_config_json_bert_tf_cannot_honour_is_one_line(tmp_path, overrides, words):
    (tmp_path / "config.json").write_text(json.dumps(_hf_config(**overrides)))
    with pytest.raises(UserError) as e:
        BertConfig.from_json_file(str(tmp_path / "config.json"))
    assert words in str(e.value) and "config.json" in str(e.value)
    assert "\n" not in str(e.value)


def test_the_written_config_json_has_hugging_faces_keys(saved):
    with open(os.path.join(saved["classifier"]["hf"], "config.json")) as f:
        config = json.load(f)
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["num_labels"] == 3 and config["id2label"] == {
        "0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    assert config["hidden_act"] == "gelu_new"  # the original's tanh GELU
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                "max_position_embeddings", "type_vocab_size", "initializer_range"):
        assert config[key] == TINY_CONFIG[key], key
    with open(os.path.join(saved["classifier"]["hf"], "tokenizer_config.json")) as f:
        tokenizer = json.load(f)
    assert tokenizer["do_lower_case"] is False and tokenizer["tokenizer_class"] == "BertTokenizer"
    assert tokenizer["model_max_length"] == TINY_CONFIG["max_position_embeddings"]
    with open(os.path.join(saved["classifier"]["hf"], "vocab.txt")) as f:
        assert f.read().split("\n")[:-1] == VOCAB


# ------------------------------------------------------------------ out and back in

@pytest.mark.parametrize("head, architecture, prefix", [
    ("pretraining", "BertForPreTraining", "bert."),
    ("classifier", "BertForSequenceClassification", "bert."),
    ("squad", "BertForQuestionAnswering", "bert.")])
def test_save_pretrained_writes_the_torch_layout(saved, head, architecture, prefix):
    directory = saved[head]["hf"]
    with open(os.path.join(directory, "config.json")) as f:
        assert json.load(f)["architectures"] == [architecture]
    from safetensors import safe_open
    with safe_open(os.path.join(directory, "model.safetensors"), framework="numpy") as f:
        assert f.metadata() == {"format": "pt"}
    tensors = _safetensors(directory)
    values = saved[head]["values"]
    assert len(tensors) == len(values)
    for hf, google, transposed in BACKBONE_PAIRS:
        want = values[google].T if transposed else values[google]
        np.testing.assert_array_equal(tensors[prefix + hf], want, err_msg=hf)
    for hf, google, transposed in HEAD_PAIRS:
        if google in values:
            want = values[google].T if transposed else values[google]
            np.testing.assert_array_equal(tensors[hf], want, err_msg=hf)
    # [out, in]: the query weight of a torch Linear.
    assert tensors[prefix + "encoder.layer.0.intermediate.dense.weight"].shape == (
        TINY_CONFIG["intermediate_size"], TINY_CONFIG["hidden_size"])


def test_a_backbone_is_written_as_hugging_faces_bert_model_without_prefix(saved, tmp_path):
    model = saved["pretraining"]["model"].bert
    directory = model.save_pretrained(str(tmp_path / "hf"), format="huggingface",
                                      vocab_file=saved["vocab"])
    tensors = _safetensors(directory)
    assert "embeddings.word_embeddings.weight" in tensors and "pooler.dense.weight" in tensors
    assert not any(n.startswith(("bert.", "cls.")) for n in tensors)
    with open(os.path.join(directory, "config.json")) as f:
        assert json.load(f)["architectures"] == ["BertModel"]


@pytest.mark.parametrize("head", list(HEADS))
def test_google_to_hugging_face_to_google_is_bit_exact(saved, tmp_path, head):
    toolrun.run_tool("convert_checkpoint", [
        "--from=google", "--to=huggingface", "--input=" + saved[head]["google"],
        "--output_dir=%s" % (tmp_path / "hf")])
    toolrun.run_tool("convert_checkpoint", [
        "--from=huggingface", "--to=google", "--input=%s" % (tmp_path / "hf"),
        "--output_dir=%s" % (tmp_path / "google")])
    back = checkpoint.read_checkpoint(str(tmp_path / "google" / "bert_model.ckpt"))
    values = saved[head]["values"]
    assert list(back) == list(values)
    for name, value in values.items():
        assert back[name].dtype == value.dtype and np.array_equal(back[name], value), name
    with open(tmp_path / "google" / "bert_config.json") as f:
        assert json.load(f) == TINY_CONFIG  # the original's keys, "gelu" for the tanh form
    # The converter's Hugging Face directory is save_pretrained's, tensor for tensor.
    ours = _safetensors(saved[head]["hf"])
    converted = _safetensors(str(tmp_path / "hf"))
    assert sorted(ours) == sorted(converted)
    assert all(np.array_equal(ours[n], converted[n]) for n in ours)


@pytest.mark.parametrize("head", list(HEADS))
def test_from_pretrained_hf_gives_the_google_checkpoints_outputs_exactly(saved, head):
    inputs = make_inputs(vocab_size=len(VOCAB))
    google = bert_tf.from_pretrained(saved[head]["google"], head=head)
    hf = bert_tf.from_pretrained(saved[head]["hf"], head=head)
    assert hf.config.to_dict() == google.config.to_dict()
    assert hf.tokenizer.basic_tokenizer.do_lower_case is False  # tokenizer_config.json
    assert google.tokenizer.basic_tokenizer.do_lower_case is True
    features = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                "segment_ids": inputs["token_type_ids"]}
    if head == "pretraining":
        features["masked_lm_positions"] = inputs["masked_lm_positions"]
    if head == "multiple_choice":  # one example, its rows the choices
        features = {k: v[None] for k, v in features.items()}
    a = google.model(features, training=False)
    b = hf.model(features, training=False)
    a = a if isinstance(a, dict) else {"out": a}
    b = b if isinstance(b, dict) else {"out": b}
    assert sorted(a) == sorted(b)
    for key in a:
        for x, y in zip(np.atleast_1d(a[key]), np.atleast_1d(b[key])):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=key)
    for variable in hf.model.weights:
        name = checkpoint.tf1_name(variable)
        np.testing.assert_array_equal(variable.numpy(), saved[head]["values"][name], name)


def test_extract_features_runs_on_a_hugging_face_directory(saved, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("hello world !\nthe hellos ||| world\n")
    outputs = {}
    for kind in ("google", "hf"):
        directory = saved["pretraining"][kind]
        output = str(tmp_path / (kind + ".jsonl"))
        config = "bert_config.json" if kind == "google" else "config.json"
        checkpoint_flag = (os.path.join(directory, "bert_model.ckpt") if kind == "google"
                           else directory)
        vocab = os.path.join(directory, "vocab.txt") if kind == "google" else directory
        toolrun.run_tool("extract_features", [
            "--input_file=%s" % text, "--output_file=" + output,
            "--bert_config_file=" + os.path.join(directory, config),
            "--init_checkpoint=" + checkpoint_flag, "--vocab_file=" + vocab,
            "--layers=-1,0", "--max_seq_length=16", "--batch_size=2"])
        with open(output) as f:
            outputs[kind] = f.read()
    assert outputs["hf"] == outputs["google"] and outputs["hf"].count("\n") == 2


# ------------------------------------------------------------------ Hugging Face's own layouts

def _hf_tensors(values, architecture, old_norm_names=False):
    """Hugging Face's tensors from Google values, renamed here by hand (not by the map)."""
    prefix = "" if architecture == "BertModel" else "bert."
    raw = {google: hf for hf, google, _ in BACKBONE_PAIRS[:3] + HEAD_PAIRS
           if not hf.endswith(("dense.weight", "dense.bias", "LayerNorm.weight",
                               "LayerNorm.bias"))}
    suffixes = {"kernel": "weight", "bias": "bias",
                "gamma": "gamma" if old_norm_names else "weight",
                "beta": "beta" if old_norm_names else "bias"}
    out = {}
    for google, value in values.items():
        if google in raw:
            hf = (prefix if google.startswith("bert/") else "") + raw[google]
        else:
            scope, suffix = google.rsplit("/", 1)
            module = scope.replace("bert/encoder/layer_", "encoder.layer.").replace("/", ".")
            if module.startswith("bert."):
                module = module[len("bert."):]
            hf = (prefix if google.startswith("bert/") else "") + module + "." + suffixes[suffix]
            value = value.T if suffix == "kernel" else value
        out[hf] = np.ascontiguousarray(value)
    out[prefix + "embeddings.position_ids"] = np.arange(
        TINY_CONFIG["max_position_embeddings"], dtype=np.int64)[None]
    return out


def test_hand_written_names_are_the_writers(saved):
    """The test's own renaming (from the pairs above) gives save_pretrained's tensors."""
    ours = _safetensors(saved["pretraining"]["hf"])
    by_hand = _hf_tensors(saved["pretraining"]["values"], "BertForPreTraining")
    by_hand.pop("bert.embeddings.position_ids")
    assert sorted(by_hand) == sorted(ours)
    assert all(np.array_equal(by_hand[n], ours[n]) for n in ours)


def test_an_unprefixed_bert_model_with_old_names_loads(saved, tmp_path):
    values = {k: v for k, v in saved["pretraining"]["values"].items() if k.startswith("bert/")}
    tensors = _hf_tensors(values, "BertModel", old_norm_names=True)
    assert "embeddings.LayerNorm.gamma" in tensors
    directory = _write_hf(tmp_path / "old", tensors, _hf_config())
    loaded = bert_tf.from_pretrained(directory)
    for variable in loaded.model.weights:
        np.testing.assert_array_equal(variable.numpy(), values[checkpoint.tf1_name(variable)])


def test_sharded_bfloat16_and_the_tied_decoder(saved, tmp_path):
    from safetensors.numpy import save_file
    values = saved["pretraining"]["values"]
    tensors = _hf_tensors(values, "BertForPreTraining")
    tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"]
    tensors["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"]
    directory = str(tmp_path / "sharded")
    _write_hf(directory, None, _hf_config("BertForPreTraining"))
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[:len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for shard, shard_names in shards.items():
        save_file({n: tensors[n] for n in shard_names}, os.path.join(directory, shard),
                  metadata={"format": "pt"})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": {n: s for s, ns in shards.items() for n in ns}},
                  f)
    loaded = bert_tf.from_pretrained(directory, head="pretraining")
    for variable in loaded.model.weights:
        np.testing.assert_array_equal(variable.numpy(), values[checkpoint.tf1_name(variable)])

    # A decoder that is not the word embeddings is refused by name.
    tensors["cls.predictions.decoder.weight"] = tensors["cls.predictions.decoder.weight"] + 1
    bad = _write_hf(tmp_path / "untied", tensors, _hf_config("BertForPreTraining"))
    with pytest.raises(UserError, match="cls.predictions.decoder.weight is not the word emb"):
        bert_tf.from_pretrained(bad, head="pretraining")


def test_bfloat16_and_float16_tensors_load_as_float32(saved, tmp_path):
    import struct
    values = {k: v for k, v in saved["pretraining"]["values"].items() if k.startswith("bert/")}
    tensors = _hf_tensors(values, "BertModel")
    tensors = {k: (v.astype(np.float16) if k.endswith("query.weight") else v)
               for k, v in tensors.items()}
    directory = _write_hf(tmp_path / "half", tensors, _hf_config())
    # One tensor written as bfloat16 by hand (NumPy has no bfloat16): its top 16 bits.
    name = "encoder.layer.1.output.dense.weight"
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for key, value in tensors.items():
        if key == name:
            dtype, data = "BF16", (value.view("<u4") >> 16).astype("<u2").tobytes()
        else:
            dtype = {"float32": "F32", "float16": "F16", "int64": "I64"}[str(value.dtype)]
            data = value.tobytes()
        header[key] = {"dtype": dtype, "shape": list(value.shape),
                       "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(os.path.join(directory, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    loaded = bert_tf.from_pretrained(directory)
    weights = {checkpoint.tf1_name(v): v.numpy() for v in loaded.model.weights}
    query = "bert/encoder/layer_0/attention/self/query/kernel"
    assert weights[query].dtype == np.float32
    np.testing.assert_array_equal(weights[query], values[query].astype(np.float16).astype(
        np.float32))
    dense = "bert/encoder/layer_1/output/dense/kernel"
    want = (values[dense].view("<u4") & 0xFFFF0000).view(np.float32)
    np.testing.assert_array_equal(weights[dense], want)
    assert not np.array_equal(weights[dense], values[dense])


def test_masked_lm_without_pooler_loads_with_a_warning(saved, tmp_path):
    values = {k: v for k, v in saved["pretraining"]["values"].items()
              if not k.startswith(("bert/pooler/", "cls/seq_relationship/"))}
    directory = _write_hf(tmp_path / "mlm", _hf_tensors(values, "BertForMaskedLM"),
                          _hf_config("BertForMaskedLM"))
    with toolrun.captured_logs() as logs:
        loaded = bert_tf.from_pretrained(directory, head="pretraining")
    assert "bert/pooler/dense/kernel" in logs.text and "initializer" in logs.text
    weights = {checkpoint.tf1_name(v): v.numpy() for v in loaded.model.weights}
    for name, value in values.items():
        np.testing.assert_array_equal(weights[name], value, name)
    # A BertModel directory without its pooler is still an error: only the
    # architectures that save none may lack it.
    directory = _write_hf(tmp_path / "nopooler", _hf_tensors(
        {k: v for k, v in values.items() if k.startswith("bert/")}, "BertModel"), _hf_config())
    with pytest.raises(UserError, match="bert/pooler/dense/kernel .* is missing"):
        bert_tf.from_pretrained(directory)


def test_tokenizer_json_alone_gives_the_vocab(saved, tmp_path):
    directory = str(tmp_path / "tokjson")
    shutil.copytree(saved["classifier"]["hf"], directory)
    os.remove(os.path.join(directory, "vocab.txt"))
    with open(os.path.join(directory, "tokenizer.json"), "w") as f:
        json.dump({"model": {"type": "WordPiece", "vocab": {t: i for i, t in enumerate(VOCAB)}}},
                  f)
    loaded = bert_tf.from_pretrained(directory, head="classifier")
    assert list(loaded.tokenizer.vocab) == VOCAB
    assert loaded.tokenizer.tokenize("Hello worlds") == ["Hello", "world", "##s"]


def test_a_setting_the_tokenizer_cannot_honour_is_one_line(saved, tmp_path):
    directory = str(tmp_path / "accents")
    shutil.copytree(saved["classifier"]["hf"], directory)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "strip_accents": False}, f)
    with toolrun.captured_logs() as logs:
        loaded = bert_tf.from_pretrained(directory, head="classifier")
    assert loaded.tokenizer.basic_tokenizer.do_lower_case is True
    assert [line for line in logs.lines if "strip_accents=False" in line]


# ------------------------------------------------------------------ save_pretrained's directory

def test_save_pretrained_refuses_a_non_empty_directory_and_overwrites_when_asked(saved,
                                                                               tmp_path):
    model = saved["squad"]["model"]
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="is not empty; pass overwrite=True"):
        model.save_pretrained(str(target), format="huggingface", vocab_file=saved["vocab"])
    assert os.listdir(target) == ["keep.txt"]
    model.save_pretrained(str(target), format="huggingface", vocab_file=saved["vocab"],
                          overwrite=True)
    assert sorted(os.listdir(target)) == ["config.json", "model.safetensors",
                                          "special_tokens_map.json", "tokenizer_config.json",
                                          "vocab.txt"]
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temporary directory left


def test_save_pretrained_that_fails_writes_nothing(saved, tmp_path):
    model = saved["squad"]["model"]
    with pytest.raises(UserError, match="pass vocab_file="):
        model.save_pretrained(str(tmp_path / "a"))
    model.bert.config.hidden_act = "sigmoid-ish"
    try:
        with pytest.raises(UserError, match="hidden_act 'sigmoid-ish' has no Hugging Face name"):
            model.save_pretrained(str(tmp_path / "b"), format="huggingface",
                                  vocab_file=saved["vocab"])
    finally:
        model.bert.config.hidden_act = "gelu"
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------ bad directories

def _bad_directories(saved, root):
    """{case: (directory, words of the error)}."""
    source = saved["pretraining"]["hf"]
    cases = {}

    def copy(name):
        directory = str(root / name)
        shutil.copytree(source, directory)
        return directory

    d = copy("no_weights")
    os.remove(os.path.join(d, "model.safetensors"))
    cases["no weights"] = (d, "no model.safetensors or model.safetensors.index.json")
    d = copy("pickle")
    os.rename(os.path.join(d, "model.safetensors"), os.path.join(d, "pytorch_model.bin"))
    cases["pickle only"] = (d, "pytorch_model.bin, a pickle, which bert_tf never unpickles")
    d = copy("roberta")
    with open(os.path.join(d, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(dict(config, model_type="roberta"), f)
    cases["model_type"] = (d, "model_type 'roberta' is not \"bert\"")
    d = copy("shape")
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(dict(config, intermediate_size=40), f)
    cases["shape"] = (d, "has shape [32, 37] in the checkpoint but [32, 40] in the model")
    d = copy("truncated")
    path = os.path.join(d, "model.safetensors")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:-100])
    cases["truncated"] = (d, "not a readable safetensors file")
    tensors = _safetensors(source)
    d = copy("unknown")
    tensors_unknown = dict(tensors, **{"bert.encoder.layer.0.crossattention.self.query.weight":
                                       tensors["bert.pooler.dense.weight"]})
    _write_hf(d, tensors_unknown, config, vocab=None)
    cases["unknown tensor"] = (d, "tensor bert.encoder.layer.0.crossattention.self.query.weight "
                                  "has no place in BERT")
    d = copy("missing")
    _write_hf(d, {k: v for k, v in tensors.items()
                  if k != "bert.encoder.layer.1.output.LayerNorm.weight"}, config, vocab=None)
    cases["missing tensor"] = (d, "bert/encoder/layer_1/output/LayerNorm/gamma")
    return cases


def test_each_bad_directory_is_one_line_naming_it_and_nothing_is_written(saved, tmp_path):
    cases = _bad_directories(saved, tmp_path / "bad")
    for case, (directory, words) in cases.items():
        with pytest.raises(UserError) as e:
            bert_tf.from_pretrained(directory, head="pretraining")
        message = str(e.value)
        assert words in message and directory in message and "\n" not in message, (case,
                                                                                  message)
        output = tmp_path / ("out_" + case.replace(" ", "_"))
        with pytest.raises(UserError) as e:
            toolrun.run_tool("convert_checkpoint", [
                "--from=huggingface", "--to=google", "--input=" + directory,
                "--output_dir=%s" % output])
        assert words in str(e.value), (case, str(e.value))
        assert not output.exists(), case
    assert not [n for n in os.listdir(tmp_path) if "tmp" in n]


def test_a_fine_tuned_output_dir_becomes_a_sequence_classification_directory(saved, tmp_path):
    """run_classifier's output_dir (model.ckpt-N with Adam slots and global_step, no config or
    vocab beside it) -> bert-convert-checkpoint -> BertForSequenceClassification."""
    values = saved["classifier"]["values"]
    output_dir = tmp_path / "mrpc_output"
    os.makedirs(output_dir)
    trained = dict(values)
    for name in list(values):
        trained[name + "/adam_m"] = np.ones_like(values[name])
        trained[name + "/adam_v"] = np.ones_like(values[name])
    trained["global_step"] = np.int64(12)
    checkpoint.write_checkpoint(str(output_dir / "model.ckpt-12"), trained)
    google = saved["classifier"]["google"]
    toolrun.run_tool("convert_checkpoint", [
        "--from=google", "--to=huggingface", "--input=%s" % output_dir,
        "--bert_config_file=" + os.path.join(google, "bert_config.json"),
        "--vocab_file=" + saved["vocab"], "--do_lower_case=False",
        "--output_dir=%s" % (tmp_path / "mrpc_hf")])
    directory = str(tmp_path / "mrpc_hf")
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["num_labels"] == 3
    tensors = _safetensors(directory)
    assert not any("adam" in n or "global_step" in n for n in tensors)
    np.testing.assert_array_equal(tensors["classifier.weight"], values["output_weights"])
    np.testing.assert_array_equal(tensors["bert.pooler.dense.weight"],
                                  values["bert/pooler/dense/kernel"].T)
    # The same directory save_pretrained writes from the classifier itself.
    saved_hf = _safetensors(saved["classifier"]["hf"])
    assert set(tensors) == set(saved_hf)
    for name, value in saved_hf.items():
        np.testing.assert_array_equal(tensors[name], value, err_msg=name)


@pytest.mark.parametrize("head", [h for h in registry.TASKS if h not in (None, "fill_mask")])
def test_every_head_written_as_hugging_face_names_its_own_architecture(saved, tmp_path, head):
    """config.json's architecture is the model's own class: transformers loads the right one."""
    if head in saved:
        directory = saved[head]["hf"]
    else:  # the backbone alone, and the embedder (the backbone and its pooling)
        directory = registry.model_class(head)(BertConfig.from_dict(dict(TINY_CONFIG))) \
            .save_pretrained(str(tmp_path / "hf"), format="huggingface",
                             vocab_file=saved["vocab"])
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    assert config["architectures"] == [registry.hf_architecture(head)]
    want = {None: "BertModel", "pretraining": "BertForPreTraining",
            "classifier": "BertForSequenceClassification", "squad": "BertForQuestionAnswering",
            "embeddings": "BertModel", "multiple_choice": "BertForMultipleChoice",
            "token_classification": "BertForTokenClassification"}[head]
    assert config["architectures"] == [want]
    if head == "token_classification":  # the labels by name, read back by from_pretrained
        assert config["id2label"] == {str(i): label for i, label in enumerate(NER_LABELS)}
        assert config["label2id"] == {label: i for i, label in enumerate(NER_LABELS)}
        assert bert_tf.from_pretrained(directory, head=head).model.labels == NER_LABELS
    if head == "multiple_choice":  # a score per choice: no labels, no regression
        assert "id2label" not in config and "problem_type" not in config


def test_a_recorded_token_classification_run_converts_to_its_own_architecture(saved, tmp_path):
    """An output_dir with its bert_tf_run.json says its task: the converter writes that class."""
    from bert_tf.training import run_record
    google = saved["token_classification"]["google"]
    output_dir = tmp_path / "ner_output"
    record = run_record.RunRecord(
        str(output_dir), "run_ner", "token_classification", {},
        bert_config_file=os.path.join(google, "bert_config.json"), vocab_file=saved["vocab"],
        labels=NER_LABELS, num_labels=len(NER_LABELS), do_lower_case=True)
    record.write()
    checkpoint.write_checkpoint(str(output_dir / "model.ckpt-3"),
                                saved["token_classification"]["values"])
    toolrun.run_tool("convert_checkpoint", [
        "--from=google", "--to=huggingface", "--input=%s" % output_dir,
        "--output_dir=%s" % (tmp_path / "ner_hf")])
    with open(tmp_path / "ner_hf" / "config.json") as f:
        config = json.load(f)
    assert config["architectures"] == ["BertForTokenClassification"]
    assert [config["id2label"][str(i)] for i in range(3)] == NER_LABELS


def test_the_converter_refuses_the_wrong_format_and_a_full_output_dir(saved, tmp_path):
    errors = toolrun.user_errors_here("convert_checkpoint", [
        ("hf as google", ["--from=google", "--to=huggingface",
                          "--input=" + saved["squad"]["hf"], "--output_dir=%s" % tmp_path]),
        ("bad format", ["--from=torch", "--to=google", "--input=x", "--output_dir=y"]),
        ("full", ["--from=google", "--to=huggingface", "--input=" + saved["squad"]["google"],
                  "--output_dir=" + saved["squad"]["hf"]]),
    ])
    assert "pass --from=huggingface" in errors["hf as google"]
    assert "--from_format" in errors["bad format"] and "torch" in errors["bad format"]
    assert "is not empty" in errors["full"]


# ------------------------------------------------------------------ Hugging Face's own loader

_TRANSFORMERS_LOAD = r"""
import json, sys
import numpy as np
import transformers
directory, cls_name, inputs_path = sys.argv[1:4]
inputs = dict(np.load(inputs_path))
model = getattr(transformers, cls_name).from_pretrained(directory, use_safetensors=True)
out = model(input_ids=inputs["input_ids"], attention_mask=inputs["input_mask"],
            token_type_ids=inputs["token_type_ids"], training=False)
result = {k: np.asarray(v).tolist() for k, v in out.items() if v is not None and k != "hidden_states"}
print(json.dumps(result))
"""

_TRANSFORMERS_SAVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
import transformers
directory, act, inputs_path = sys.argv[1:4]
config = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=37, hidden_act=act,
                                 max_position_embeddings=64, type_vocab_size=2)
tf.random.set_seed(0)
model = transformers.TFBertModel(config)
inputs = dict(np.load(inputs_path))
out = model(input_ids=inputs["input_ids"], attention_mask=inputs["input_mask"],
            token_type_ids=inputs["token_type_ids"], training=False)
model.save_pretrained(directory, safe_serialization=True)
print(json.dumps({"sequence_output": np.asarray(out.last_hidden_state).tolist(),
                  "pooled_output": np.asarray(out.pooler_output).tolist()}))
"""


def _peer(script, *args):
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("KERAS_BACKEND", None)
    proc = subprocess.run([HF_PEER, "-c", script] + [str(a) for a in args], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {k: np.array(v) for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}


@pytest.mark.slow
def test_hugging_faces_own_loader_agrees(saved, tmp_path):
    """bert_tf's directories in transformers' TFBert*, and transformers' in bert_tf, 1e-5."""
    if not os.path.exists(HF_PEER):
        pytest.skip("no bench/.hf-peer (bash bench/setup_hf_peer.sh .venv/bin/python makes it)")
    inputs = make_inputs(vocab_size=len(VOCAB))
    npz = str(tmp_path / "inputs.npz")
    np.savez(npz, **{k: inputs[k] for k in ("input_ids", "input_mask", "token_type_ids")})
    features = {k: inputs[k] for k in ("input_ids", "input_mask", "token_type_ids")}
    # The task models take the original's feature names (segment_ids).
    task_features = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                     "segment_ids": inputs["token_type_ids"]}
    diffs = {}

    def compare(name, ours, theirs):
        diffs[name] = float(np.max(np.abs(np.asarray(ours) - theirs)))
        np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0, err_msg=name)

    # bert_tf -> transformers.
    pre = saved["pretraining"]["model"]
    seq = pre.bert(training=False, **features)
    backbone_dir = pre.bert.save_pretrained(str(tmp_path / "backbone"), format="huggingface",
                                            vocab_file=saved["vocab"])
    out = _peer(_TRANSFORMERS_LOAD, backbone_dir, "TFBertModel", npz)
    compare("TFBertModel sequence", seq["sequence_output"], out["last_hidden_state"])
    compare("TFBertModel pooled", seq["pooled_output"], out["pooler_output"])

    out = _peer(_TRANSFORMERS_LOAD, saved["pretraining"]["hf"], "TFBertForMaskedLM", npz)
    batch, length = inputs["input_ids"].shape
    every_position = np.tile(np.arange(length, dtype=np.int32), (batch, 1))
    logits = pre(dict(task_features, masked_lm_positions=every_position),
                 training=False)["masked_lm_logits"]
    compare("TFBertForMaskedLM", np.reshape(logits, out["logits"].shape), out["logits"])

    classifier = saved["classifier"]["model"]
    out = _peer(_TRANSFORMERS_LOAD, saved["classifier"]["hf"],
                "TFBertForSequenceClassification", npz)
    compare("TFBertForSequenceClassification", classifier(task_features, training=False)["logits"],
            out["logits"])
    # BertForTokenClassification's classifier has run_classifier's names too: on every token.
    out = _peer(_TRANSFORMERS_LOAD, saved["classifier"]["hf"], "TFBertForTokenClassification",
                npz)
    values = saved["classifier"]["values"]
    tokens = classifier.bert(training=False, **features)["sequence_output"].numpy()
    compare("TFBertForTokenClassification",
            tokens @ values["output_weights"].T + values["output_bias"], out["logits"])

    # Each head's own class: the token classifier's labels and the multiple-choice scores.
    tagger = saved["token_classification"]["model"]
    out = _peer(_TRANSFORMERS_LOAD, saved["token_classification"]["hf"],
                "TFBertForTokenClassification", npz)
    compare("TFBertForTokenClassification (its own)",
            tagger(task_features, training=False)["logits"], out["logits"])
    choices_npz = str(tmp_path / "choices.npz")  # one example, its rows the choices
    np.savez(choices_npz, **{k: inputs[k][None] for k in ("input_ids", "input_mask",
                                                          "token_type_ids")})
    out = _peer(_TRANSFORMERS_LOAD, saved["multiple_choice"]["hf"], "TFBertForMultipleChoice",
                choices_npz)
    chooser = saved["multiple_choice"]["model"]
    compare("TFBertForMultipleChoice",
            chooser({k: v[None] for k, v in task_features.items()}, training=False)["logits"],
            out["logits"])

    squad = saved["squad"]["model"](task_features, training=False)
    out = _peer(_TRANSFORMERS_LOAD, saved["squad"]["hf"], "TFBertForQuestionAnswering", npz)
    compare("TFBertForQuestionAnswering start", squad["start_logits"], out["start_logits"])
    compare("TFBertForQuestionAnswering end", squad["end_logits"], out["end_logits"])

    # transformers -> bert_tf, with both GELUs.
    for act in ("gelu", "gelu_new"):
        directory = str(tmp_path / ("transformers_" + act))
        theirs = _peer(_TRANSFORMERS_SAVE, directory, act, npz)
        _write_vocab(os.path.join(directory, "vocab.txt"))
        loaded = bert_tf.from_pretrained(directory)
        assert loaded.config.hidden_act == {"gelu": "gelu_exact", "gelu_new": "gelu"}[act]
        ours = loaded.model(training=False, **features)
        compare("transformers %s sequence" % act, ours["sequence_output"],
                theirs["sequence_output"])
        compare("transformers %s pooled" % act, ours["pooled_output"], theirs["pooled_output"])
    sys.stderr.write("max |bert_tf - transformers|: %s\n" % json.dumps(diffs, indent=1))


def test_the_converter_command_line_help_and_a_mistake():
    """`python tools/convert_checkpoint.py`: --help exits 0; a bad flag is one line, exit 2."""
    script = os.path.join(REPO, "tools", "convert_checkpoint.py")
    proc = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "--from=google --to=huggingface" in proc.stdout
    assert "--from_format" in proc.stdout and "--output_dir" in proc.stdout
    proc = subprocess.run([sys.executable, script, "--from=torch", "--to=google", "--input=x",
                           "--output_dir=y"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: flag --from_format=torch: value should be one of <google|huggingface>"]
