"""BERT model configuration (original: `modeling.BertConfig`)."""

import copy
import json
import os

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.modeling import huggingface

# The 11 keys of a released `bert_config.json`, with the original constructor's
# defaults (note `type_vocab_size` defaults to 16, while every release says 2).
_DEFAULTS = (
    ("vocab_size", None),
    ("hidden_size", 768),
    ("num_hidden_layers", 12),
    ("num_attention_heads", 12),
    ("intermediate_size", 3072),
    ("hidden_act", "gelu"),
    ("hidden_dropout_prob", 0.1),
    ("attention_probs_dropout_prob", 0.1),
    ("max_position_embeddings", 512),
    ("type_vocab_size", 16),
    ("initializer_range", 0.02),
)
CONFIG_KEYS = tuple(k for k, _ in _DEFAULTS)

_INT_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
             "intermediate_size", "max_position_embeddings", "type_vocab_size")
_FLOAT_KEYS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range")

# Written only by a pruned model (`BertModel.prune_heads`): {"layer": [heads]}.
PRUNED_HEADS_KEY = "pruned_heads"
# Written only when True (`BertModel`'s `gradient_checkpointing`): a training option.
GRADIENT_CHECKPOINTING_KEY = "gradient_checkpointing"


class BertConfig(object):
    """Configuration for `BertModel`, with the original's fields and defaults.

    Args:
      vocab_size: Vocabulary size of `input_ids`.
      hidden_size: Size of the encoder layers and the pooler layer.
      num_hidden_layers: Number of hidden layers in the Transformer encoder.
      num_attention_heads: Number of attention heads for each attention layer.
      intermediate_size: The size of the "intermediate" (i.e., feed-forward) layer.
      hidden_act: The non-linear activation function in the encoder and pooler
        ("gelu" is the original's tanh approximation; "gelu_exact" is the erf form
        of the first 2018 release).
      hidden_dropout_prob: Dropout probability for all fully connected layers in
        the embeddings, encoder, and pooler.
      attention_probs_dropout_prob: The dropout ratio for the attention probabilities.
      max_position_embeddings: The maximum sequence length this model might ever
        be used with.
      type_vocab_size: The vocabulary size of the `token_type_ids`.
      initializer_range: The stdev of the truncated_normal_initializer for
        initializing all weight matrices.

    As in the original, `from_dict` keeps unknown keys as attributes (the
    Chinese and multilingual configs carry `pooler_*` and `directionality`), and
    a missing key keeps the constructor default.

    `pruned_heads` ({layer index: sorted original head indices}, empty unless
    `BertModel.prune_heads` removed some) is not one of the 11 keys: it is
    written to JSON only when non-empty (as `"pruned_heads": {"0": [1, 3]}`),
    so every released bert_config.json round-trips unchanged.

    `gradient_checkpointing` (False unless set; see `BertModel`) is likewise
    not one of the 11 keys: a training option, written to JSON only when True.
    """

    def __init__(self,
                 vocab_size,
                 hidden_size=768,
                 num_hidden_layers=12,
                 num_attention_heads=12,
                 intermediate_size=3072,
                 hidden_act="gelu",
                 hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1,
                 max_position_embeddings=512,
                 type_vocab_size=16,
                 initializer_range=0.02):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.hidden_act = hidden_act
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range

    @classmethod
    def from_dict(cls, json_object, source="bert_config"):
        """Constructs a `BertConfig` from a Python dictionary of parameters."""
        if not isinstance(json_object, dict):
            raise UserError("%s: expected a JSON object, got %s" % (source, type(json_object).__name__))
        config = BertConfig(vocab_size=None)
        unknown = []
        for key, value in json_object.items():
            if key not in CONFIG_KEYS and key not in (PRUNED_HEADS_KEY,
                                                      GRADIENT_CHECKPOINTING_KEY):
                unknown.append(key)
            config.__dict__[key] = value
        if unknown:
            logging.info("%s: keeping extra keys %s (ignored by the model)", source, sorted(unknown))
        config.validate(source)
        return config

    @classmethod
    def from_json_file(cls, json_file):
        """Constructs a `BertConfig` from a json file of parameters.

        Also a Hugging Face BERT's `config.json` (it has `model_type`), or
        the directory that holds it: its keys are the same, and its
        `hidden_act` is mapped (`bert_tf.modeling.huggingface.bert_config_dict`:
        Hugging Face's "gelu" is the exact erf form, bert_tf's "gelu_exact").
        """
        json_file = os.fspath(json_file)
        if huggingface.is_hf_directory(json_file):
            json_file = os.path.join(json_file, huggingface.CONFIG_NAME)
        if not fileio.exists(json_file) or fileio.isdir(json_file):
            raise UserError("bert_config_file %s: no such file" % json_file)
        with fileio.open_file(json_file, "r") as reader:
            text = reader.read()
        try:
            data = json.loads(text)
        except ValueError as e:
            raise UserError("bert_config_file %s: not valid JSON (%s)" % (json_file, e))
        if huggingface.is_hf_config(data):
            data = huggingface.bert_config_dict(data, source=json_file)
        return cls.from_dict(data, source=json_file)

    @property
    def pruned_heads(self):
        """{layer index: sorted list of original head indices} removed by pruning ({} if none)."""
        raw = self.__dict__.get(PRUNED_HEADS_KEY) or {}
        if not isinstance(raw, dict):
            return raw  # validate() names it
        return {int(layer): sorted(int(h) for h in heads) for layer, heads in raw.items()}

    @pruned_heads.setter
    def pruned_heads(self, value):
        value = {int(layer): sorted(int(h) for h in heads)
                 for layer, heads in (value or {}).items() if heads}
        if value:
            self.__dict__[PRUNED_HEADS_KEY] = {str(layer): value[layer] for layer in sorted(value)}
        else:
            self.__dict__.pop(PRUNED_HEADS_KEY, None)

    @property
    def gradient_checkpointing(self):
        """Whether `BertModel` recomputes each encoder layer in the backward pass (False)."""
        return self.__dict__.get(GRADIENT_CHECKPOINTING_KEY, False)

    @gradient_checkpointing.setter
    def gradient_checkpointing(self, value):
        if value:
            self.__dict__[GRADIENT_CHECKPOINTING_KEY] = True
        else:
            self.__dict__.pop(GRADIENT_CHECKPOINTING_KEY, None)

    def _validate_pruned_heads(self, source):
        raw = self.__dict__.get(PRUNED_HEADS_KEY)
        if raw is None:
            return
        where = "%s: key \"%s\"" % (source, PRUNED_HEADS_KEY)
        if not isinstance(raw, dict):
            raise UserError("%s must be an object {layer: [heads]}, got %r" % (where, raw))
        for layer, heads in raw.items():
            try:
                index = int(layer)
            except (TypeError, ValueError):
                index = -1
            if not 0 <= index < self.num_hidden_layers:
                raise UserError("%s: layer %r is not in [0, %d)"
                                % (where, layer, self.num_hidden_layers))
            if (not isinstance(heads, (list, tuple)) or
                    any(isinstance(h, bool) or not isinstance(h, int) for h in heads)):
                raise UserError("%s: layer %s must list head indices, got %r"
                                % (where, layer, heads))
            for head in heads:
                if not 0 <= head < self.num_attention_heads:
                    raise UserError("%s: layer %s head %d is not in [0, %d)"
                                    % (where, layer, head, self.num_attention_heads))
            if len(set(heads)) >= self.num_attention_heads:
                raise UserError("%s: layer %s prunes all %d heads (at least one must stay)"
                                % (where, layer, self.num_attention_heads))

    def validate(self, source="bert_config"):
        """Raises `UserError` naming the key if a value cannot build a model."""
        if self.vocab_size is None:
            raise UserError("%s: missing key \"vocab_size\"" % source)
        for key in _INT_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise UserError("%s: key \"%s\" must be a positive integer, got %r" % (source, key, value))
        for key in _FLOAT_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UserError("%s: key \"%s\" must be a number, got %r" % (source, key, value))
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise UserError("%s: key \"%s\" must be in [0, 1), got %r" % (source, key, getattr(self, key)))
        if self.hidden_size % self.num_attention_heads != 0:
            raise UserError(
                "%s: hidden_size (%d) is not a multiple of num_attention_heads (%d)"
                % (source, self.hidden_size, self.num_attention_heads))
        self._validate_pruned_heads(source)
        if not isinstance(self.gradient_checkpointing, bool):
            raise UserError("%s: key \"%s\" must be true or false, got %r"
                            % (source, GRADIENT_CHECKPOINTING_KEY, self.gradient_checkpointing))
        from bert_tf.modeling import activations  # pylint: disable=g-import-not-at-top (loads Keras)
        try:
            activations.get_activation(self.hidden_act)
        except ValueError:
            raise UserError("%s: key \"hidden_act\" has unsupported activation %r" % (source, self.hidden_act))

    def check_max_seq_length(self, max_seq_length, source="bert_config_file"):
        """Raises `UserError` if `max_seq_length` is longer than the position embeddings.

        The original's check (run_classifier, run_squad), naming the flag.
        """
        if max_seq_length > self.max_position_embeddings:
            raise UserError(
                "--max_seq_length=%d: Cannot use sequence length %d because the BERT model "
                "was only trained up to sequence length %d (max_position_embeddings in %s)"
                % (max_seq_length, max_seq_length, self.max_position_embeddings, source))

    def to_dict(self):
        """Serializes this instance to a Python dictionary."""
        return copy.deepcopy(self.__dict__)

    def to_json_string(self):
        """Serializes this instance to a JSON string (the original's format)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        """Writes `to_json_string()` to `json_file` atomically."""
        fileio.write_text(json_file, self.to_json_string())

    def __repr__(self):
        return "BertConfig(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in CONFIG_KEYS)
