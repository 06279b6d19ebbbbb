"""Raw text to model features as a Keras layer (original: `run_classifier.convert_single_example`).

`BertPreprocessor` wraps the in-graph exact tokenizer
(`bert_tf.tokenization.graph_tokenizer.GraphTokenizer`, the one the SavedModel export
serves with): a string Tensor, or a pair of them, becomes `input_ids`,
`input_mask` and `segment_ids` exactly as `FullTokenizer` +
`bert_tf.tokenization.pair_features.build_pair_features` build them. Give it to a
classifier and `fit` / `evaluate` / `predict` take raw strings:

  preprocessor = BertPreprocessor("vocab.txt", do_lower_case=True, max_seq_length=128)
  model = BertClassifier(config, num_labels=2, preprocessor=preprocessor)
  model.predict({"text_a": ["Is this jacksonville?"], "text_b": ["No it is not."]})

It also works alone, e.g. in a tf.data pipeline:
`dataset.map(lambda text, label: (preprocessor(text), label))`.

Serialization: the vocabulary travels in the layer's config as the list of
tokens in id order (`get_config()["vocabulary"]`). So `get_config` /
`from_config`, `keras.models.clone_model` and `.keras` files are
self-contained and need no vocab file next to them; a BERT-base vocabulary
adds about 0.3 MB to a `.keras` file's `config.json`.
"""

from bert_tf import _backend  # noqa: F401  (Keras' TensorFlow backend, before keras)

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.errors import UserError  # noqa: E402
from bert_tf.tokenization.graph_tokenizer import GraphTokenizer  # noqa: E402
from bert_tf.tokenization.vocab import load_vocab  # noqa: E402
from bert_tf.tokenization.vocab import vocab_size_mismatch  # noqa: E402

# The keys of raw text in a features dict (TF Hub's and the export's names).
TEXT_KEYS = ("text_a", "text_b")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPreprocessor(keras.layers.Layer):
    """Raw text -> `input_ids`, `input_mask`, `segment_ids`, in the graph.

    The features of `convert_single_example`: `[CLS] a [SEP]` or
    `[CLS] a [SEP] b [SEP]`, pairs truncated by `truncate_seq_pair` to
    max_seq_length - 3, single texts to their first max_seq_length - 2
    tokens, zero-padded to `max_seq_length`. An empty `text_b` gives a
    single-segment example (the original tests `if tokens_b`).

    Args:
      vocab_file: path of the vocab file (one token per line, read as
        `bert_tf.tokenization.vocab.load_vocab` reads it); or None with `vocabulary`.
      do_lower_case: as `FullTokenizer`'s (True for uncased models).
      max_seq_length: int, the length of every feature row (>= 3).
      vocabulary: list of tokens in id order instead of `vocab_file` (what
        `get_config` holds).

    Call args:
      inputs: string Tensor of shape [batch_size] (or [batch_size, 1]): single
        texts; or `(text_a, text_b)`; or a dict with "text_a" and optionally
        "text_b". Python lists and numpy arrays of str are taken too.

    Returns:
      dict of int32 Tensors of shape [batch_size, max_seq_length]:
      `input_ids`, `input_mask`, `segment_ids`.

    Raises:
      UserError: no vocabulary (or both kinds), a vocabulary without
        "[UNK]", "[CLS]" or "[SEP]", or max_seq_length < 3.
    """

    text_keys = TEXT_KEYS

    def __init__(self, vocab_file=None, do_lower_case=True, max_seq_length=128, vocabulary=None,
                 **kwargs):
        super().__init__(**kwargs)
        if (vocab_file is None) == (vocabulary is None):
            raise UserError("BertPreprocessor needs exactly one of vocab_file= or vocabulary=")
        if vocab_file is not None:
            vocabulary = list(load_vocab(vocab_file))
        vocabulary = [str(token) for token in vocabulary]
        for token in ("[UNK]", "[CLS]", "[SEP]"):
            if token not in vocabulary:
                raise UserError("BertPreprocessor: the vocabulary%s has no %s token"
                                % (" %s" % vocab_file if vocab_file else "", token))
        if isinstance(max_seq_length, bool) or int(max_seq_length) < 3:
            raise UserError("BertPreprocessor: max_seq_length must be >= 3 ([CLS] a [SEP] b "
                            "[SEP] needs 3), got %r" % (max_seq_length,))
        self.do_lower_case = bool(do_lower_case)
        self.max_seq_length = int(max_seq_length)
        # A tuple of str: Keras does not track it, and the config copies it.
        self._vocabulary = tuple(vocabulary)
        self.tokenizer = GraphTokenizer(self._vocabulary, do_lower_case=self.do_lower_case,
                                        name="graph_tokenizer")
        # String ops: XLA cannot compile them (a model holding this layer then
        # resolves jit_compile="auto" to False).
        self.supports_jit = False
        # Python lists and numpy arrays of str are converted in `call` (Keras
        # would take a list's strings for non-tensor arguments).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    @property
    def vocabulary(self):
        """The tokens, in id order."""
        return list(self._vocabulary)

    @property
    def vocab_size(self):
        return len(self._vocabulary)

    def call(self, inputs):
        text_a, text_b = self.texts(inputs)
        if text_b is None:
            return self.tokenizer(text_a, max_seq_length=self.max_seq_length)
        check = tf.debugging.assert_equal(
            tf.size(text_a), tf.size(text_b),
            message="BertPreprocessor: text_a and text_b must have the same batch size")
        with tf.control_dependencies([check]):
            return self.tokenizer(text_a, text_b, max_seq_length=self.max_seq_length)

    def texts(self, inputs):
        """(text_a, text_b): string Tensors [batch_size] of `call`'s inputs (text_b None if none)."""
        if isinstance(inputs, dict):
            unknown = sorted(set(inputs) - set(TEXT_KEYS))
            if unknown or "text_a" not in inputs:
                raise UserError("BertPreprocessor takes a dict with text_a (and text_b), got "
                                "keys %s" % sorted(inputs))
            text_a, text_b = inputs["text_a"], inputs.get("text_b")
        elif isinstance(inputs, (list, tuple)) and len(inputs) == 2 and not all(
                isinstance(t, (str, bytes)) for t in inputs):
            text_a, text_b = inputs
        else:
            text_a, text_b = inputs, None
        return _texts(text_a), None if text_b is None else _texts(text_b)

    def compute_output_spec(self, inputs):
        spec = keras.KerasTensor((None, self.max_seq_length), dtype="int32")
        return {"input_ids": spec, "input_mask": spec, "segment_ids": spec}

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary": list(self._vocabulary),
            "do_lower_case": self.do_lower_case,
            "max_seq_length": self.max_seq_length,
        })
        return config


def serialize_preprocessor(preprocessor):
    """A model's `preprocessor=` as its `get_config` holds it (None stays None)."""
    return None if preprocessor is None else keras.saving.serialize_keras_object(preprocessor)


def with_preprocessor(config):
    """A model's `from_config` arguments: `config` with its preprocessor rebuilt."""
    config = dict(config)
    if config.get("preprocessor") is not None:
        config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
    return config


def check_preprocessor(preprocessor, config, owner):
    """A model's `preprocessor=`: a `BertPreprocessor` whose vocabulary and length fit `config`.

    Args:
      preprocessor: what the model was given.
      config: the model's `BertConfig`.
      owner: the model class's name, for the message.

    Raises:
      UserError: not a BertPreprocessor, a vocabulary that does not fit
        vocab_size (`vocab_size_mismatch`: larger, or smaller by
        `PADDING_ROWS` or more), a max_seq_length beyond
        max_position_embeddings.
    """
    if not isinstance(preprocessor, BertPreprocessor):
        raise UserError("%s: preprocessor= must be a bert_tf.tokenization.preprocessor."
                        "BertPreprocessor, got %s" % (owner, type(preprocessor).__name__))
    if vocab_size_mismatch(preprocessor.vocab_size, config.vocab_size):
        raise UserError("%s: the preprocessor's vocabulary has %d tokens but the model's "
                        "vocab_size is %d (is it the model's vocab.txt?)"
                        % (owner, preprocessor.vocab_size, config.vocab_size))
    config.check_max_seq_length(preprocessor.max_seq_length, source="the model's config")


def _texts(texts):
    """A rank-1 string Tensor [batch_size] from a Tensor, array or list of str."""
    texts = tf.convert_to_tensor(texts)
    if texts.dtype != tf.string:
        raise UserError("BertPreprocessor takes strings, got a %s Tensor" % texts.dtype.name)
    return tf.reshape(texts, [-1])
