"""What every served model's `tf.Module` starts with (the classifier's, the encoder's, ...).

`ModelServingModule` holds a loaded Keras model out of the SavedModel's
object graph, whose variables go in instead (as Keras's `ExportArchive`
does: `tf.saved_model.save` would otherwise trace the Keras model's own
default signature), the `GraphTokenizer`, and `do_lower_case` and
`max_seq_length` as variables a server can read. The SQuAD module, which
keeps Python ints instead, holds its model with `Untracked` alone.

Every served model runs its encoder fused (`track_model_variables`,
`bert_tf.export.fused_encoder`) and on the batch's attended positions only
(`trim_padding`).
"""

import tensorflow as tf

from bert_tf.export import fused_encoder
# The cut every served model makes (its home: bert_tf.modeling.padding).
from bert_tf.modeling.padding import LENGTH_MULTIPLE  # noqa: F401
from bert_tf.modeling.padding import trim_padding


# Every text export's inputs: `text_a` (and `text_b`, a pair's second text), the
# original's InputExample names. The NER and fill-mask exports' `serving_default`
# took `text` before: their `serve_text` signature still does.
TEXT_A = "text_a"
TEXT_B = "text_b"
OLD_TEXT = "text"


def text_spec(name=TEXT_A):
    """A batch of texts as a signature's input: string [batch], named `name`."""
    return tf.TensorSpec([None], tf.string, name=name)


def single_text_signatures(serve_text_a, serve_text):
    """The signatures of an export of one text per example (ner, fill_mask).

    `serving_default` and `serve_text_a` take `text_a`, as every text export's
    do; `serve_text` the same text as `text` (the name these exports took
    before), answering the same.
    """
    return {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: serve_text_a,
            "serve_text_a": serve_text_a, "serve_text": serve_text}


class Untracked(object):
    """A plain holder (not trackable): `tf.Module` does not track `value`."""

    def __init__(self, value):
        self.value = value


def track_model_variables(module, model):
    """Tracks `model`'s variables on `module` (`model_variables`: the SavedModel's variables/).

    Where the model's encoder is `fused_encoder.fusable`, it runs its inference
    pass fused (`module.fused_encoder`), whose query/key/value variables are
    saved in place of the three.
    """
    replaced = set()
    bert = getattr(model, "bert", model)
    if fused_encoder.fusable(bert):
        module.fused_encoder = fused_encoder.FusedEncoder(bert.encoder)
        bert.encoder.set_inference_pass(module.fused_encoder)
        replaced = {id(v) for v in module.fused_encoder.replaced_variables()}
    # The tf.Variables behind the Keras variables.
    module.model_variables = [getattr(v, "value", v) for v in getattr(model, "weights", [])
                              if id(v) not in replaced]


def encoder_outputs(bert_model, features):
    """A `BertModel`'s outputs on a features dict, as the exports serve them.

    Returns: float32 `pooled_output` [B, H], `sequence_output` [B, S, H] and
    `encoder_outputs` [B, L, S, H] (every layer's output, stacked), the last
    two 0 at padding positions (input_mask 0).
    """
    out = bert_model(features["input_ids"], input_mask=features["input_mask"],
                     token_type_ids=features["segment_ids"], training=False)
    # [B, S, 1]; expand_dims (not [:, :, None]) so LiteRT converts it at any length.
    kept = tf.expand_dims(tf.cast(features["input_mask"] != 0, tf.float32), -1)
    return {
        "pooled_output": tf.cast(out["pooled_output"], tf.float32),
        "sequence_output": tf.cast(out["sequence_output"], tf.float32) * kept,
        "encoder_outputs": tf.cast(tf.stack(out["all_encoder_layers"], axis=1), tf.float32)
                           * tf.expand_dims(kept, 1),
    }


class ModelServingModule(tf.Module):
    """A loaded model's variables, its `GraphTokenizer` and its settings as variables.

    Args:
      model: a Keras model whose variables are loaded (float32 or an inference
        policy).
      tokenizer: `GraphTokenizer` of the model's vocab.
      max_seq_length: int, the length of every feature row.
      name: the `tf.Module` name.
    """

    def __init__(self, model, tokenizer, max_seq_length, name=None):
        super().__init__(name=name)
        self._keras = Untracked(model)
        self._trim = True
        track_model_variables(self, model)
        self.tokenizer = tokenizer
        self.max_seq_length = tf.Variable(int(max_seq_length), trainable=False,
                                          name="max_seq_length")
        self.do_lower_case = tf.Variable(bool(tokenizer.do_lower_case), trainable=False,
                                         name="do_lower_case")
        self._seq_length = int(max_seq_length)

    @property
    def model(self):
        return self._keras.value

    def without_padding(self, features):
        """`trim_padding(features)`, unless the module keeps the padding (`keep_padding`)."""
        return trim_padding(features) if self._trim else features

    def keep_padding(self):
        """Runs the model on whole rows, as given: for the ONNX conversion, whose
        clients send rows of their own length (and which tf2onnx converts wrongly
        with the cut). Call it before the signatures are traced (saved)."""
        self._trim = False

    def checked_features(self, input_ids, input_mask, segment_ids):
        """The feature signatures' inputs as a dict, checked: one shape, rows of at most
        max_seq_length (shorter rows are taken as they are: no padding needed).
        """
        checks = [
            tf.debugging.assert_equal(tf.shape(input_mask), tf.shape(input_ids), message=(
                "input_ids, input_mask and segment_ids must have the same shape")),
            tf.debugging.assert_equal(tf.shape(segment_ids), tf.shape(input_ids), message=(
                "input_ids, input_mask and segment_ids must have the same shape")),
            tf.debugging.assert_less_equal(tf.shape(input_ids)[-1], self._seq_length, message=(
                "feature rows longer than max_seq_length (%d)" % self._seq_length)),
        ]
        with tf.control_dependencies(checks):
            return {"input_ids": tf.identity(input_ids), "input_mask": input_mask,
                    "segment_ids": segment_ids}


def text_specs(pair):
    """A text signature's inputs: `text_a` (and `text_b`, for a pair)."""
    specs = [text_spec()]
    if pair:
        specs.append(text_spec(TEXT_B))
    return specs


def feature_specs(rank=2):
    """A features signature's inputs: int32 `input_ids`, `input_mask`, `segment_ids`."""
    # Any row length up to max_seq_length (`ModelServingModule.checked_features`).
    return [tf.TensorSpec([None] * rank, tf.int32, name=name)
            for name in ("input_ids", "input_mask", "segment_ids")]


class TextServingModule(ModelServingModule):
    """A model's variables, the GraphTokenizer and the signatures' tf.functions.

    The text signatures tokenize and pack (one trace of the tokenizer, shared)
    and call `serve_features` (one trace of the model, shared); `serve_text_a`
    is `serving_default` with empty `text_b`s, which the original reads as single
    segments.

    Args:
      model: a float32 Keras model whose variables are loaded.
      tokenizer: `GraphTokenizer` of the model's vocab.
      max_seq_length: int, the length of every feature row.
      vocab_file: path of the vocab (saved as an asset).
    """

    def __init__(self, model, tokenizer, max_seq_length, vocab_file, name=None):
        super().__init__(model, tokenizer, max_seq_length, name=name)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        # autograph=False: no Python control flow on tensors here.
        self.serve_features = tf.function(
            self._serve_features, input_signature=feature_specs(), autograph=False)
        self.serving_default = tf.function(self._serving_default, input_signature=text_specs(True),
                                           autograph=False)
        self.serve_text_a = tf.function(self._serve_text_a, input_signature=text_specs(False),
                                        autograph=False)

    def features(self, text_a, text_b):
        """The `run_classifier` features of raw text: int32 [batch, max_seq_length] each."""
        check = tf.debugging.assert_equal(
            tf.size(text_a), tf.size(text_b),
            message="text_a and text_b must have the same batch size")
        with tf.control_dependencies([check]):
            return self.tokenizer(text_a, text_b, max_seq_length=self._seq_length)

    def _serve_features(self, input_ids, input_mask, segment_ids):
        features = self.checked_features(input_ids, input_mask, segment_ids)
        return self.outputs(self.without_padding(features))

    def _serving_default(self, text_a, text_b):
        features = self.features(text_a, text_b)
        outputs = self.serve_features(**features)
        outputs.update(self.text_outputs(features))
        return outputs

    def _serve_text_a(self, text_a):
        return self.serving_default(text_a, tf.fill(tf.shape(text_a), ""))  # [B]: single segments

    def outputs(self, features):
        """The model's outputs on a features dict (the signatures' outputs)."""
        raise NotImplementedError

    def text_outputs(self, features):
        """What the text signatures return beyond `outputs`."""
        del features
        return {}

    def signatures(self):
        """{signature key: tf.function} for `tf.saved_model.save`.

        tf.functions rather than concrete functions: the save traces each once
        (functions traced before it are traced again inside its save context).
        """
        return {
            tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: self.serving_default,
            "serve_text_a": self.serve_text_a,
            "serve_features": self.serve_features,
        }
