"""Hugging Face BERT directories: the one map between their tensors and the original's names (new).

A Hugging Face BERT directory holds `config.json`, the weights
(`model.safetensors`, or shards `model-0000i-of-0000n.safetensors` with
`model.safetensors.index.json`), `vocab.txt` and `tokenizer_config.json`.
Its tensors are PyTorch modules' parameters; each has one Google TF1 name:

  Hugging Face (torch)                           Google TF1 checkpoint
  [bert.]embeddings.word_embeddings.weight       bert/embeddings/word_embeddings
  [bert.]embeddings.LayerNorm.weight|bias        bert/embeddings/LayerNorm/gamma|beta
    (older files: .gamma|.beta)
  [bert.]encoder.layer.N.attention.self.query    bert/encoder/layer_N/attention/self/query
    .weight|bias                                   /kernel|bias (weight transposed)
  ... (key, value, attention.output.dense, attention.output.LayerNorm,
       intermediate.dense, output.dense, output.LayerNorm likewise)
  [bert.]pooler.dense.weight|bias                bert/pooler/dense/kernel|bias
  cls.predictions.transform.dense|LayerNorm      cls/predictions/transform/dense|LayerNorm
  cls.predictions.bias (= decoder.bias)          cls/predictions/output_bias
  cls.predictions.decoder.weight                 (tied to the word embeddings: checked equal)
  cls.seq_relationship.weight|bias               cls/seq_relationship/output_weights|output_bias
  classifier.weight|bias                         output_weights|output_bias (run_classifier's)
  qa_outputs.weight|bias                         cls/squad/output_weights|output_bias

A torch `Linear.weight` is [out, in] and a TF1 dense kernel [in, out], so
dense weights are transposed; embeddings and the heads' `output_weights`
([num_labels, hidden] in the original too) are not. The backbone's keys
carry `bert.` in the `BertFor*` models and none in `BertModel`; both are
read, and each is written as Hugging Face writes it. `embeddings.position_ids`
(a buffer) is skipped.

`config.json` <-> `BertConfig`: Hugging Face's `"gelu"` is the exact erf
GELU (bert_tf's `"gelu_exact"`), its `"gelu_new"` and `"gelu_pytorch_tanh"`
the original's tanh form (bert_tf's `"gelu"`); `relu`, `tanh` and `linear`
are the same. Anything else is an error.

transformers' TF models (`TFBertModel.save_pretrained(..., safe_serialization=True)`)
write their safetensors in TF's layout (`"format": "tf"` in the file's
metadata: `bert/encoder/layer_._0/.../kernel:0`, kernels [in, out]); those
are read too (`google_name_of_tf`). What bert_tf writes is the torch layout,
which every transformers loader reads.

The weights are read with `safetensors.numpy` (no PyTorch); bfloat16 and
float16 tensors are read as float32. A `pytorch_model.bin` is a pickle and is
never unpickled: a directory with only that is refused.

The reader (`SafetensorsReader`) has TensorFlow's `CheckpointReader`
interface, under the Google names, so `bert_tf.modeling.checkpoint`'s strict
checks read a Hugging Face directory as they read a Google checkpoint.

No TensorFlow here.
"""

import collections
import json
import os
import re
import shutil
import struct

import numpy as np
from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.tokenization import huggingface as hf_tokenizer

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
PICKLE_WEIGHTS_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")

# Hugging Face hidden_act -> bert_tf's, and back.
ACTIVATIONS_FROM_HF = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                       "relu": "relu", "tanh": "tanh", "linear": "linear"}
ACTIVATIONS_TO_HF = {"gelu": "gelu_new", "gelu_exact": "gelu", "gelu_erf": "gelu",
                     "relu": "relu", "tanh": "tanh", "linear": "linear"}
# The 11 keys of bert_config.json: Hugging Face's config.json has the same names.
_CONFIG_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "hidden_act", "hidden_dropout_prob",
                "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
                "initializer_range")
LAYER_NORM_EPS = 1e-12

# The architectures, by the head they hold (None: the backbone alone).
ARCHITECTURE_OF_HEAD = {None: "BertModel", "pretraining": "BertForPreTraining",
                        "classifier": "BertForSequenceClassification",
                        "squad": "BertForQuestionAnswering"}
MULTIPLE_CHOICE = "BertForMultipleChoice"
# What each architecture leaves out (its tensors start from their initializer when read).
_ABSENT_BY_ARCHITECTURE = {
    "BertForMaskedLM": ("bert/pooler/", "cls/seq_relationship/"),
    "BertLMHeadModel": ("bert/pooler/", "cls/seq_relationship/"),
    "BertForTokenClassification": ("bert/pooler/",),
    "BertForQuestionAnswering": ("bert/pooler/",),
}

# ------------------------------------------------------------------ the name map

# (Hugging Face module, Google scope, kind): "dense" (weight transposed to kernel, bias),
# "norm" (weight|gamma -> gamma, bias|beta -> beta) or "raw" (the tensor itself).
_BACKBONE = (
    ("embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", "raw"),
    ("embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings", "raw"),
    ("embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings", "raw"),
    ("embeddings.LayerNorm", "bert/embeddings/LayerNorm", "norm"),
    ("pooler.dense", "bert/pooler/dense", "dense"),
)
_LAYER = (
    ("attention.self.query", "attention/self/query", "dense"),
    ("attention.self.key", "attention/self/key", "dense"),
    ("attention.self.value", "attention/self/value", "dense"),
    ("attention.output.dense", "attention/output/dense", "dense"),
    ("attention.output.LayerNorm", "attention/output/LayerNorm", "norm"),
    ("intermediate.dense", "intermediate/dense", "dense"),
    ("output.dense", "output/dense", "dense"),
    ("output.LayerNorm", "output/LayerNorm", "norm"),
)
_HEADS = (
    ("cls.predictions.transform.dense", "cls/predictions/transform/dense", "dense"),
    ("cls.predictions.transform.LayerNorm", "cls/predictions/transform/LayerNorm", "norm"),
    ("cls.predictions.bias", "cls/predictions/output_bias", "raw"),
    ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights", "raw"),
    ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias", "raw"),
    ("classifier.weight", "output_weights", "raw"),
    ("classifier.bias", "output_bias", "raw"),
    ("qa_outputs.weight", "cls/squad/output_weights", "raw"),
    ("qa_outputs.bias", "cls/squad/output_bias", "raw"),
)
_SUFFIXES = {"dense": (("weight", "kernel"), ("bias", "bias")),
             "norm": (("weight", "gamma"), ("bias", "beta"))}
BUFFERS = ("embeddings.position_ids",)
TIED_DECODER = "cls.predictions.decoder.weight"
DECODER_BIAS = "cls.predictions.decoder.bias"
BACKBONE_PREFIX = "bert."


def _tensor_names(module, scope, kind):
    """[(hf_name, google_name, transposed)] of one entry of the tables."""
    if kind == "raw":
        return [(module, scope, False)]
    return [("%s.%s" % (module, hf), "%s/%s" % (scope, google), kind == "dense" and hf == "weight")
            for hf, google in _SUFFIXES[kind]]


def _from_hf_table():
    table = {}
    for module, scope, kind in _BACKBONE + _HEADS:
        for hf, google, transposed in _tensor_names(module, scope, kind):
            table[hf] = (google, transposed)
    return table


_FROM_HF = _from_hf_table()
_LAYER_RE = re.compile(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$")
_HEAD_MODULES = ("cls.", "classifier.", "qa_outputs.")
_LAYER_SCOPES = {module: (scope, kind) for module, scope, kind in _LAYER}


def google_name(hf_name):
    """(Google TF1 name, transposed) of a Hugging Face tensor name; None for a buffer.

    Raises:
      KeyError: a tensor that has no place in BERT (the caller names the file).
    """
    name = hf_name[len(BACKBONE_PREFIX):] if hf_name.startswith(BACKBONE_PREFIX) else hf_name
    if name in BUFFERS:
        return None
    if name != hf_name and name.startswith(_HEAD_MODULES):
        raise KeyError(hf_name)  # the heads' keys never carry `bert.`
    if ".LayerNorm." in "." + name and name.endswith((".gamma", ".beta")):
        name = name.rsplit(".", 1)[0] + (".weight" if name.endswith(".gamma") else ".bias")
    if name in _FROM_HF:
        return _FROM_HF[name]
    match = _LAYER_RE.match(name)
    if match and match.group(2) in _LAYER_SCOPES:
        scope, kind = _LAYER_SCOPES[match.group(2)]
        suffix = dict(_SUFFIXES[kind])[match.group(3)]
        return ("bert/encoder/layer_%s/%s/%s" % (match.group(1), scope, suffix),
                kind == "dense" and match.group(3) == "weight")
    raise KeyError(hf_name)


# transformers' TF models write their safetensors in TF's layout ("format": "tf"): Keras
# names, kernels already [in, out]; only the heads' output_weights are [in, out] there.
_TF_NAMES = {
    "bert/embeddings/word_embeddings/weight": ("bert/embeddings/word_embeddings", False),
    "bert/embeddings/position_embeddings/embeddings": ("bert/embeddings/position_embeddings",
                                                       False),
    "bert/embeddings/token_type_embeddings/embeddings": ("bert/embeddings/token_type_embeddings",
                                                         False),
    "cls/predictions/bias": ("cls/predictions/output_bias", False),
    "cls/seq_relationship/kernel": ("cls/seq_relationship/output_weights", True),
    "cls/seq_relationship/bias": ("cls/seq_relationship/output_bias", False),
    "classifier/kernel": ("output_weights", True),
    "classifier/bias": ("output_bias", False),
    "qa_outputs/kernel": ("cls/squad/output_weights", True),
    "qa_outputs/bias": ("cls/squad/output_bias", False),
}
_TF_SCOPES = ("bert/embeddings/LayerNorm/", "bert/pooler/dense/",
              "cls/predictions/transform/dense/", "cls/predictions/transform/LayerNorm/")


def google_name_of_tf(tf_name):
    """(Google TF1 name, transposed) of a tensor of transformers' TF layout ("format": "tf").

    `bert/encoder/layer_._0/attention/self/query/kernel:0` is
    `bert/encoder/layer_0/attention/self/query/kernel`; the heads' scopes lose
    their `mlm___` / `nsp___` marks.

    Raises:
      KeyError: a tensor that has no place in BERT.
    """
    name = re.sub(r":\d+$", "", tf_name)
    name = re.sub(r"^(mlm|nsp)___", "", name).replace("/layer_._", "/layer_")
    if name in _TF_NAMES:
        return _TF_NAMES[name]
    match = re.match(r"^bert/encoder/layer_(\d+)/(.+)/(kernel|bias|gamma|beta)$", name)
    if match and match.group(2) in {scope for _, scope, _ in _LAYER}:
        return name, False
    if name.startswith(_TF_SCOPES) and name.rsplit("/", 1)[1] in ("kernel", "bias", "gamma",
                                                                   "beta"):
        return name, False
    raise KeyError(tf_name)


def hf_name(name, prefixed):
    """(Hugging Face tensor name, transposed) of a Google TF1 name.

    `prefixed`: the backbone's keys start with `bert.` (the `BertFor*` models).

    Raises:
      KeyError: a name that has no Hugging Face tensor (optimizer state, ...).
    """
    prefix = BACKBONE_PREFIX if prefixed else ""
    for hf, (google, transposed) in _FROM_HF.items():
        if google == name:
            return (prefix + hf if hf.startswith(("embeddings.", "pooler.")) else hf), transposed
    match = re.match(r"^bert/encoder/layer_(\d+)/(.+)/(kernel|bias|gamma|beta)$", name)
    if match:
        for module, scope, kind in _LAYER:
            if scope == match.group(2):
                hf_suffix = {google: hf for hf, google in _SUFFIXES[kind]}[match.group(3)]
                return ("%sencoder.layer.%s.%s.%s" % (prefix, match.group(1), module, hf_suffix),
                        kind == "dense" and match.group(3) == "kernel")
    raise KeyError(name)


# ------------------------------------------------------------------ config.json

def is_hf_config(data):
    """Whether a config dict is Hugging Face's (config.json) rather than a bert_config.json."""
    return isinstance(data, dict) and ("model_type" in data or "architectures" in data)


def bert_config_dict(data, source):
    """The bert_config.json keys (bert_tf's activation names) of a Hugging Face config.json.

    Raises:
      UserError: naming `source` and the key: a model_type that is not "bert",
        an activation bert_tf does not have, a layer_norm_eps or
        position_embedding_type BERT does not use.
    """
    model_type = data.get("model_type")
    architectures = data.get("architectures") or []
    if model_type != "bert" and not (model_type is None and architectures and all(
            str(a).startswith("Bert") for a in architectures)):
        raise UserError("%s: model_type %r is not \"bert\"" % (source, model_type))
    if data.get("position_embedding_type", "absolute") != "absolute":
        raise UserError("%s: position_embedding_type %r: only \"absolute\" is BERT's"
                        % (source, data["position_embedding_type"]))
    eps = data.get("layer_norm_eps", LAYER_NORM_EPS)
    if not isinstance(eps, (int, float)) or abs(eps - LAYER_NORM_EPS) > 1e-18:
        raise UserError("%s: layer_norm_eps %r: BERT's LayerNorm uses 1e-12" % (source, eps))
    if data.get("is_decoder") or data.get("add_cross_attention"):
        raise UserError("%s: a decoder (is_decoder / add_cross_attention) is not BERT's encoder"
                        % source)
    missing = [key for key in _CONFIG_KEYS if key not in data]
    if missing:
        raise UserError("%s: missing key \"%s\"" % (source, missing[0]))
    config = {key: data[key] for key in _CONFIG_KEYS}
    act = data["hidden_act"]
    if act not in ACTIVATIONS_FROM_HF:
        raise UserError("%s: key \"hidden_act\" %r has no bert_tf activation (one of %s)"
                        % (source, act, ", ".join(sorted(ACTIVATIONS_FROM_HF))))
    config["hidden_act"] = ACTIVATIONS_FROM_HF[act]
    return config


def hf_config(config_dict, architecture, num_labels=None, labels=None):
    """Hugging Face's config.json of a bert_config dict (`BertConfig.to_dict()`).

    `num_labels` (a classifier head's) writes `id2label` / `label2id`: `labels`
    (the label of each id) where known, else LABEL_<id>; one label of
    `BertForSequenceClassification` is a regression. `BertForMultipleChoice`
    writes none: its one score per choice is no label.

    Raises:
      UserError: an activation Hugging Face has no name for, a pruned model.
    """
    act = config_dict["hidden_act"]
    if not isinstance(act, str) or act.lower() not in ACTIVATIONS_TO_HF:
        raise UserError("hidden_act %r has no Hugging Face name (one of %s)"
                        % (act, ", ".join(sorted(ACTIVATIONS_TO_HF))))
    if config_dict.get("pruned_heads"):
        raise UserError("a model with pruned heads has no Hugging Face BertConfig of the same "
                        "shapes; save it in Google's format")
    data = collections.OrderedDict()
    data["architectures"] = [architecture]
    data["model_type"] = "bert"
    for key in _CONFIG_KEYS:
        data[key] = config_dict[key]
    data["hidden_act"] = ACTIVATIONS_TO_HF[act.lower()]
    data["layer_norm_eps"] = LAYER_NORM_EPS
    data["pad_token_id"] = 0
    data["position_embedding_type"] = "absolute"
    data["classifier_dropout"] = None
    data["use_cache"] = True
    if num_labels is not None and architecture != MULTIPLE_CHOICE:
        if labels is None or len(labels) != num_labels:
            labels = ["LABEL_%d" % i for i in range(num_labels)]
        data["id2label"] = {str(i): str(label) for i, label in enumerate(labels)}
        data["label2id"] = {str(label): i for i, label in enumerate(labels)}
        data["num_labels"] = num_labels
        if num_labels == 1 and architecture == ARCHITECTURE_OF_HEAD["classifier"]:
            data["problem_type"] = "regression"
    return data


def labels_of(directory):
    """The labels of a directory's config.json `id2label`, in id order; None without real names.

    None too for no config.json, and for Hugging Face's placeholder names
    (LABEL_0, LABEL_1, ...), which name nothing.
    """
    path = os.path.join(directory, CONFIG_NAME)
    if not os.path.isfile(path):
        return None
    id2label = read_config(directory).get("id2label") or {}
    try:
        labels = [str(id2label[str(i)]) for i in range(len(id2label))]
    except KeyError:
        return None
    if not labels or labels == ["LABEL_%d" % i for i in range(len(labels))]:
        return None
    return labels


def read_config(directory):
    """The config.json of a directory (a dict)."""
    path = os.path.join(directory, CONFIG_NAME)
    if not os.path.isfile(path):
        raise UserError("%s: no %s (not a Hugging Face BERT directory)" % (directory, CONFIG_NAME))
    return hf_tokenizer.read_json_object(path)


# ------------------------------------------------------------------ the directory

def is_hf_directory(path):
    """Whether `path` is a local directory laid out as Hugging Face's (config.json or weights)."""
    path = os.fspath(path)
    if "://" in path or not os.path.isdir(path):
        return False
    return any(os.path.exists(os.path.join(path, name)) for name in
               (CONFIG_NAME, WEIGHTS_NAME, WEIGHTS_INDEX_NAME) + PICKLE_WEIGHTS_NAMES)


def weights_files(directory):
    """The safetensors files of a directory: model.safetensors, or the index's shards.

    Raises:
      UserError: only a pytorch_model.bin (a pickle: never unpickled), no
        weights file, an index that is unreadable or names a missing shard.
    """
    single = os.path.join(directory, WEIGHTS_NAME)
    if os.path.isfile(single):
        return [single]
    index = os.path.join(directory, WEIGHTS_INDEX_NAME)
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as f:
                weight_map = json.load(f)["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise UnreadableWeightsError(index, "not a safetensors index with a weight_map (%s)"
                                         % e)
        for shard in shards:
            if not os.path.isfile(os.path.join(directory, shard)):
                raise UnreadableWeightsError(index, "its shard %s is missing" % shard)
        return [os.path.join(directory, shard) for shard in shards]
    for name in PICKLE_WEIGHTS_NAMES:
        if os.path.exists(os.path.join(directory, name)):
            raise UserError(
                "%s: only %s, a pickle, which bert_tf never unpickles; convert it to safetensors "
                "first: in transformers, BertModel.from_pretrained(dir).save_pretrained(new_dir, "
                "safe_serialization=True)" % (directory, name))
    raise UserError("%s: no %s or %s (no weights)" % (directory, WEIGHTS_NAME,
                                                      WEIGHTS_INDEX_NAME))


class UnreadableWeightsError(UserError):
    """A weights file that cannot be read (truncated, corrupt, not safetensors)."""

    def __init__(self, path, reason):
        super().__init__("%s: %s" % (path, reason))
        self.path = path
        self.reason = "%s: %s" % (path, reason)


def _read_header(path):
    """The JSON header of a safetensors file, read by hand (for the dtypes NumPy lacks)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(length)), 8 + length


_DTYPE_NAMES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64",
                "I64": "int64", "I32": "int32"}


class SafetensorsReader(object):
    """A Hugging Face directory's weights under the Google names, as TF's `CheckpointReader`.

    `get_variable_to_shape_map`, `get_variable_to_dtype_map`, `get_tensor`,
    `has_tensor`: the same calls `bert_tf.modeling.checkpoint` makes on a
    Google checkpoint. Shapes come from the files' headers; a value is read
    when asked for (floating point as float32, dense weights transposed).

    Attributes:
      directory: the directory.
      architecture: config.json's first architecture ("BertModel" if none).
      absent_by_design: the Google names' scopes the architecture does not
        save (BertForMaskedLM's pooler, ...): a model's variables there start
        from their initializer.

    Raises:
      UserError: an unknown tensor (one line naming it and its file), a
        pickle-only directory, no weights; `UnreadableWeightsError`: a file
        that is not readable safetensors.
    """

    def __init__(self, directory):
        from safetensors import safe_open  # pylint: disable=g-import-not-at-top
        self._safe_open = safe_open
        self.directory = os.fspath(directory)
        config = read_config(self.directory) if os.path.isfile(
            os.path.join(self.directory, CONFIG_NAME)) else {}
        self.architecture = (config.get("architectures") or ["BertModel"])[0]
        self._where = {}  # google name -> (file, hf name, transposed)
        self._shapes = {}
        self._dtypes = {}
        extra = {}  # the tied decoder's tensors, checked against what they tie to
        for path in weights_files(self.directory):
            try:
                with safe_open(path, framework="numpy") as f:
                    names = list(f.keys())
                    tf_layout = (f.metadata() or {}).get("format") == "tf"
                    slices = {n: f.get_slice(n) for n in names}
                    info = {n: (s.get_shape(), s.get_dtype()) for n, s in slices.items()}
            except Exception as e:  # pylint: disable=broad-except (safetensors' own error type)
                raise UnreadableWeightsError(path, "not a readable safetensors file (%s)"
                                             % str(e).splitlines()[0])
            for name in names:
                if name in (TIED_DECODER, DECODER_BIAS):
                    extra[name] = path
                    continue
                try:
                    mapped = google_name_of_tf(name) if tf_layout else google_name(name)
                except KeyError:
                    raise UserError("%s: tensor %s has no place in BERT (architecture %s)"
                                    % (path, name, self.architecture))
                if mapped is None:
                    continue
                google, transposed = mapped
                if google in self._where:
                    raise UserError("%s: tensor %s is there twice (as %s too)"
                                    % (path, name, self._where[google][1]))
                shape, dtype = info[name]
                self._where[google] = (path, name, transposed)
                self._shapes[google] = list(reversed(shape)) if transposed else list(shape)
                self._dtypes[google] = dtype
        self._check_tied(extra)
        self.absent_by_design = tuple(
            scope for scope in _ABSENT_BY_ARCHITECTURE.get(self.architecture, ())
            if not any(name.startswith(scope) for name in self._shapes))

    def _check_tied(self, extra):
        bias = "cls/predictions/output_bias"
        if DECODER_BIAS in extra:
            decoder_bias = self._read(extra[DECODER_BIAS], DECODER_BIAS, False)
            if bias in self._where:
                if not np.array_equal(decoder_bias, self.get_tensor(bias)):
                    raise UserError("%s: tensor %s differs from cls.predictions.bias (they are "
                                    "one tensor in BERT)" % (extra[DECODER_BIAS], DECODER_BIAS))
            else:
                self._where[bias] = (extra[DECODER_BIAS], DECODER_BIAS, False)
                self._shapes[bias] = list(decoder_bias.shape)
                self._dtypes[bias] = "F32"
        if TIED_DECODER in extra:
            words = "bert/embeddings/word_embeddings"
            decoder = self._read(extra[TIED_DECODER], TIED_DECODER, False)
            if words not in self._where or not np.array_equal(decoder, self.get_tensor(words)):
                raise UserError("%s: tensor %s is not the word embeddings (BERT's masked-LM "
                                "decoder is tied to them)" % (extra[TIED_DECODER], TIED_DECODER))

    def _read(self, path, name, transposed):
        try:
            with self._safe_open(path, framework="numpy") as f:
                dtype = f.get_slice(name).get_dtype()
                if dtype == "BF16":
                    value = self._read_bfloat16(path, name)
                else:
                    value = f.get_tensor(name)
        except UserError:
            raise
        except Exception as e:  # pylint: disable=broad-except
            raise UnreadableWeightsError(path, "tensor %s cannot be read (%s)"
                                         % (name, str(e).splitlines()[0]))
        if value.dtype.kind == "f" and value.dtype != np.float32:
            value = value.astype(np.float32)
        return np.ascontiguousarray(value.T) if transposed else value

    @staticmethod
    def _read_bfloat16(path, name):
        # NumPy has no bfloat16: its 16 bits are the top half of a float32's.
        header, start = _read_header(path)
        begin, end = header[name]["data_offsets"]
        with open(path, "rb") as f:
            f.seek(start + begin)
            raw = np.frombuffer(f.read(end - begin), dtype="<u2")
        return (raw.astype(np.uint32) << 16).view(np.float32).reshape(header[name]["shape"])

    def get_variable_to_shape_map(self):
        return {name: list(shape) for name, shape in self._shapes.items()}

    def get_variable_to_dtype_map(self):
        import tensorflow as tf  # pylint: disable=g-import-not-at-top (a CheckpointReader's dtypes)
        return {name: (tf.float32 if self._dtypes[name] in ("F32", "F16", "BF16", "F64")
                       else tf.as_dtype(_DTYPE_NAMES.get(self._dtypes[name], "float32")))
                for name in self._shapes}

    def has_tensor(self, name):
        return name in self._where

    def get_tensor(self, name):
        if name not in self._where:
            raise UserError("%s: no tensor for %s" % (self.directory, name))
        return self._read(*self._where[name])

    def read_all(self):
        """{Google name: np.ndarray} of every tensor, sorted by name."""
        return collections.OrderedDict((n, self.get_tensor(n)) for n in sorted(self._where))


def architecture_of(names):
    """The Hugging Face architecture of a set of Google names (by the head they hold).

    The names alone cannot tell run_classifier's head from the token
    classifier's or the multiple-choice score (the same `output_weights`):
    they give `BertForSequenceClassification`. A model's own class says which
    (`write_directory(architecture=)`, from `hf_architecture`).
    """
    names = set(names)
    if "cls/predictions/output_bias" in names:
        return ARCHITECTURE_OF_HEAD["pretraining"]
    if "output_weights" in names:
        return ARCHITECTURE_OF_HEAD["classifier"]
    if "cls/squad/output_weights" in names:
        return ARCHITECTURE_OF_HEAD["squad"]
    return ARCHITECTURE_OF_HEAD[None]


def to_hf_tensors(tensors, architecture):
    """{Hugging Face name: contiguous np.ndarray} of {Google name: value} (torch layout)."""
    prefixed = architecture != "BertModel"
    out = collections.OrderedDict()
    for name, value in tensors.items():
        try:
            hf, transposed = hf_name(name, prefixed)
        except KeyError:
            raise UserError("variable %s has no Hugging Face tensor (not a BERT variable)" % name)
        value = np.asarray(value)
        out[hf] = np.ascontiguousarray(value.T if transposed else value)
    return out


def write_directory(directory, tensors, config_dict, vocab_tokens, do_lower_case,
                    overwrite=False, architecture=None, labels=None):
    """Writes a Hugging Face BERT directory, all at once.

    Args:
      directory: the directory to write; it must not exist or be empty,
        unless `overwrite` (then it is replaced).
      tensors: {Google name: np.ndarray}: the backbone and at most one head.
      config_dict: `BertConfig.to_dict()`.
      vocab_tokens: the vocabulary, in id order (vocab.txt's lines).
      do_lower_case: the tokenizer's casing (tokenizer_config.json).
      overwrite: replace an existing non-empty directory.
      architecture: config.json's architecture (the model's `hf_architecture`);
        None: the one its head's names give (`architecture_of`).
      labels: the classifier head's label of each id (config.json's `id2label`).

    The files are written under `<directory>.tmp-<pid>` and that directory is
    renamed to `directory`: a failure leaves nothing under the name.

    Returns:
      `directory`.
    """
    import safetensors.numpy  # pylint: disable=g-import-not-at-top
    architecture = architecture or architecture_of(tensors)
    num_labels = int(np.shape(tensors["output_weights"])[0]) if "output_weights" in tensors \
        else None
    config = hf_config(config_dict, architecture, num_labels, labels)
    hf_tensors = to_hf_tensors(tensors, architecture)
    files = {
        CONFIG_NAME: json.dumps(config, indent=2) + "\n",
        "vocab.txt": "".join(token + "\n" for token in vocab_tokens),
        hf_tokenizer.TOKENIZER_CONFIG: json.dumps(hf_tokenizer.tokenizer_config(
            do_lower_case, config_dict["max_position_embeddings"]), indent=2) + "\n",
        hf_tokenizer.SPECIAL_TOKENS_MAP: json.dumps(hf_tokenizer.special_tokens_map(),
                                                    indent=2) + "\n",
    }

    def write(staging):
        for name, text in files.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8", newline="") as f:
                f.write(text)
        safetensors.numpy.save_file(hf_tensors, os.path.join(staging, WEIGHTS_NAME),
                                    metadata={"format": "pt"})

    write_new_directory(directory, write, overwrite)
    logging.info("Wrote %s (%s, %d tensors)", directory, architecture, len(hf_tensors))
    return directory


def write_new_directory(directory, write, overwrite=False):
    """Calls `write(staging)` on a fresh `<directory>.tmp-<pid>`, then renames it to `directory`.

    An existing non-empty `directory` is refused in one line unless
    `overwrite` (it is then replaced, after the new one is complete). A
    failure removes the staging directory and leaves `directory` as it was.

    Raises:
      UserError: the directory is there and not empty; a full disk (one line).
    """
    directory = os.fspath(directory).rstrip("/") or "/"
    if fileio.is_remote(directory):
        raise UserError("%s: save_pretrained writes local directories only" % directory)
    existing = os.path.isdir(directory) and bool(os.listdir(directory))
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UserError("%s: a file is there, not a directory" % directory)
    if existing and not overwrite:
        raise UserError("%s is not empty; pass overwrite=True (--overwrite) to replace it"
                        % directory)
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    staging = fileio.temporary_name(directory)
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        write(staging)
        if os.path.isdir(directory):
            old = fileio.temporary_name(directory) + ".old"
            os.rename(directory, old)
            os.rename(staging, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, directory)
    except Exception as e:  # pylint: disable=broad-except
        shutil.rmtree(staging, ignore_errors=True)
        failure = fileio.no_room_error(directory, e)
        if failure is None:
            raise
        raise failure from e
    return directory
