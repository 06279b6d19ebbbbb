# coding=utf-8
"""TF Hub's BERT pair: a preprocessor and an encoder SavedModel (`--format=tfhub`).

`export_tfhub(...)` writes the two SavedModels that TF Hub's BERT models come
as (e.g. `bert_en_uncased_preprocess` + `bert_en_uncased_L-12_H-768_A-12`), so
that code written for those runs unchanged on our checkpoints:

  preprocessor = hub.KerasLayer("out/preprocessor")   # or tf.saved_model.load
  encoder = hub.KerasLayer("out/encoder", trainable=True)
  outputs = encoder(preprocessor(tf.constant(["Hello, world!"])))
  outputs["pooled_output"]   # float32 [batch, hidden_size]

Preprocessor (`output_dir/preprocessor`):
  * `__call__(sentences)`: string Tensor [batch] -> dict of int32 Tensors
    [batch, max_seq_length]: `input_word_ids`, `input_mask`, `input_type_ids`
    (single sentences: `[CLS] a [SEP]`, zero-padded).
  * `tokenize(sentences)`: string Tensor [batch] -> int32 RaggedTensor
    [batch, (words), (wordpieces)]: the words of BasicTokenizer (whitespace,
    punctuation and CJK splits, after cleaning, lower-casing and accent
    stripping) and the WordPiece ids of each. Merging the two ragged
    dimensions gives exactly `FullTokenizer.tokenize` + `convert_tokens_to_ids`.
  * `tokenize.get_special_tokens_dict()` -> dict of int32 scalars:
    `vocab_size`, `start_of_sequence_id` ([CLS]), `end_of_segment_id`
    ([SEP]), `padding_id` (0, what the packing pads with), and `mask_id`
    ([MASK]) when the vocab has it.
  * `bert_pack_inputs(segments, seq_length=max_seq_length)`: `segments` is a
    list of 1 or 2 int32 RaggedTensors [batch, (tokens)] or [batch, (words),
    (tokens)] with int64 row splits (the words dimension is merged away;
    ranks may be mixed); `seq_length` an int32 scalar Tensor, or omitted. Returns the dict of the root call, with
    [batch, seq_length] Tensors.
  * `vocab_file` (a `tf.saved_model.Asset`) and `do_lower_case` (a bool
    `tf.Variable`).

Encoder (`output_dir/encoder`):
  * `__call__(inputs, training=False)`: `inputs` a dict of int32 Tensors
    [batch, seq_length] `input_word_ids`, `input_mask`, `input_type_ids`;
    returns a dict: `pooled_output` float32 [batch, H], `default` (the same
    Tensor as `pooled_output`), `sequence_output` float32 [batch, S, H] and
    `encoder_outputs`, a list of `num_hidden_layers` float32 [batch, S, H]
    (the output of every Transformer layer, the last == sequence_output).
    `training=True` runs dropout.
  * `variables`, `trainable_variables` (every weight of `BertModel`, all
    trainable, for `hub.KerasLayer(..., trainable=True)`), and an empty
    `regularization_losses`.
  * `vocab_file` and `do_lower_case`, as TF Hub's BERT encoders have them.
  * The `serving_default` signature (TF Serving, `saved_model_cli`):
    `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length]
    -> `pooled_output`, `default`, `sequence_output` and `encoder_outputs`
    stacked, float32 [batch, num_hidden_layers, S, H]; no dropout.

Deviations from TF Hub's BERT preprocessors, all to follow the ORIGINAL BERT
(`run_classifier.py` / `extract_features.py`, i.e.
`bert_tf.tokenization.pair_features.build_pair_features`) exactly:
  * Tokenization is `bert_tf.tokenization.graph_tokenizer.GraphTokenizer`: FullTokenizer's
    exact ids from core TensorFlow ops, so neither SavedModel needs
    tensorflow_text (TF Hub's need its ops registered with
    `import tensorflow_text`). A word of over 200 characters is one [UNK], as
    WordpieceTokenizer does (TF Text's BertTokenizer: over 100 bytes).
  * Pairs are truncated by `truncate_seq_pair`: the longer segment loses its
    last token until both fit (on a tie, the second). TF Hub's BertPackInputs
    trims round-robin instead. A single segment keeps its first
    seq_length - 2 tokens (the same in both).
  * A row whose second segment is empty (or truncated to nothing) is packed
    as a single segment, `[CLS] a [SEP]`, as the original's `if tokens_b:`;
    TF Hub's packer would give `[CLS] a [SEP] [SEP]`.
  * At most 2 segments (TF Hub's packer takes any number).
  * No `tokenize_with_offsets`.
  * seq_length must be >= 2 (one segment) or >= 3 (two); a smaller one fails
    with InvalidArgumentError.

Loading needs only `tensorflow`: neither SavedModel imports keras, tf_keras,
tensorflow_text or bert_tf.
"""

import os

import tensorflow as tf

from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.item_progress import PhaseLog
from bert_tf.modeling import checkpoint as checkpoint_lib
from bert_tf.modeling import precision
from bert_tf.modeling.bert_model import BertModel
from bert_tf.tokenization import graph_tokenizer

PREPROCESSOR_DIR = "preprocessor"
ENCODER_DIR = "encoder"
ENCODER_INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")

# ---------------------------------------------------------------------------
# Packing with a Tensor seq_length
# ---------------------------------------------------------------------------


def pack_inputs(segments, seq_length, cls_id, sep_id):
    """`[CLS] a [SEP] (b [SEP])` under TF Hub's keys, as `pair_features.build_pair_features`.

    `graph_tokenizer.pack_segments` (the packing of `GraphTokenizer.pack_pair`)
    with a seq_length that may be a Tensor (TF Hub's `bert_pack_inputs` takes
    it as an argument), checked in the graph.

    Args:
      segments: list of 1 or 2 int RaggedTensors [batch, (tokens)] or
        [batch, (words), (tokens)].
      seq_length: int32 scalar (Python int or Tensor), >= 2 (>= 3 for 2
        segments).
      cls_id, sep_id: Python ints.

    Returns:
      dict of int32 Tensors [batch, seq_length]: `input_word_ids`
      (zero-padded), `input_mask`, `input_type_ids`.
    """
    segments = list(segments)
    if not 1 <= len(segments) <= 2:
        raise UserError("bert_pack_inputs takes 1 or 2 segments, got %d" % len(segments))
    static_length = seq_length if isinstance(seq_length, int) else None
    seq_length = tf.convert_to_tensor(seq_length, tf.int32)
    minimum = 2 if len(segments) == 1 else 3
    checks = [tf.debugging.assert_greater_equal(
        seq_length, minimum,
        message="seq_length is too short for [CLS] a [SEP]%s"
        % ("" if len(segments) == 1 else " b [SEP]"))]
    with tf.control_dependencies(checks):
        seq_length = tf.identity(seq_length)
    features = graph_tokenizer.pack_segments(
        segments, seq_length if static_length is None else static_length, cls_id, sep_id)
    return {"input_word_ids": features["input_ids"], "input_mask": features["input_mask"],
            "input_type_ids": features["segment_ids"]}


# ---------------------------------------------------------------------------
# The SavedModel objects
# ---------------------------------------------------------------------------


class _SpecialTokens(tf.Module):
    def __init__(self, special):
        super().__init__()
        self._special = dict(special)

    @tf.function(input_signature=[])
    def __call__(self):
        return {k: tf.constant(v, tf.int32) for k, v in self._special.items()}


class _Tokenize(tf.Module):
    """`preprocessor.tokenize`: string [batch] -> int32 [batch, (words), (wordpieces)]."""

    def __init__(self, tokenizer, special):
        super().__init__()
        self.tokenizer = tokenizer
        self.get_special_tokens_dict = _SpecialTokens(special)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sentences")],
                 autograph=False)
    def __call__(self, sentences):
        return self.tokenizer.tokenize_words(sentences)


class _BertPackInputs(tf.Module):
    """`preprocessor.bert_pack_inputs(segments, seq_length=default)`."""

    def __init__(self, cls_id, sep_id, default_seq_length):
        super().__init__()
        self._cls_id = int(cls_id)
        self._sep_id = int(sep_id)
        self._default_seq_length = int(default_seq_length)
        # Traced here so that the SavedModel holds every input form: 1 or 2
        # segments, each of ragged rank 1 or 2 (mixed too).
        def spec(ragged_rank):
            return tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32,
                                       ragged_rank=ragged_rank, row_splits_dtype=tf.int64)

        for ranks in ((1,), (2,), (1, 1), (1, 2), (2, 1), (2, 2)):
            specs = [spec(r) for r in ranks]
            self.__call__.get_concrete_function(specs)
            self.__call__.get_concrete_function(specs, seq_length=tf.TensorSpec([], tf.int32))

    @tf.function(autograph=False)
    def __call__(self, segments, seq_length=None):
        if seq_length is None:
            seq_length = self._default_seq_length
        return pack_inputs(segments, seq_length, self._cls_id, self._sep_id)


class HubPreprocessor(tf.Module):
    """The preprocessor SavedModel's root object (see the module docstring)."""

    def __init__(self, vocab_file, do_lower_case, seq_length, name=None):
        super().__init__(name=name)
        vocab = tokenization.load_vocab(vocab_file)
        for token in ("[UNK]", "[CLS]", "[SEP]"):
            if token not in vocab:
                raise UserError("the vocab %s has no %s token" % (vocab_file, token))
        seq_length = int(seq_length)
        if seq_length < 3:
            raise UserError("max_seq_length must be >= 3, got %d" % seq_length)
        special = {"vocab_size": len(vocab), "start_of_sequence_id": vocab["[CLS]"],
                   "end_of_segment_id": vocab["[SEP]"], "padding_id": 0}
        if "[MASK]" in vocab:
            special["mask_id"] = vocab["[MASK]"]
        self.seq_length = seq_length
        self.tokenizer = graph_tokenizer.GraphTokenizer(vocab, do_lower_case=do_lower_case)
        self.tokenize = _Tokenize(self.tokenizer, special)
        self.bert_pack_inputs = _BertPackInputs(vocab["[CLS]"], vocab["[SEP]"], seq_length)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False,
                                         name="do_lower_case")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sentences")],
                 autograph=False)
    def __call__(self, sentences):
        ids = self.tokenizer.tokenize(sentences)
        return pack_inputs([ids], self.seq_length, self.bert_pack_inputs._cls_id,
                           self.bert_pack_inputs._sep_id)


class HubEncoder(tf.train.Checkpoint):
    """The encoder SavedModel's root object (see the module docstring).

    The Keras model is closed over by the function, not tracked: the
    SavedModel holds its variables (in `variables`) and the traced calls,
    nothing of Keras.
    """

    def __init__(self, model, vocab_file, do_lower_case):
        super().__init__()
        self.variables = list(model.variables)
        self.trainable_variables = list(model.trainable_variables)
        self.regularization_losses = []
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False,
                                         name="do_lower_case")

        def call(inputs, training=False):
            outputs = model(inputs["input_word_ids"], input_mask=inputs["input_mask"],
                            token_type_ids=inputs["input_type_ids"], training=bool(training))
            # float32 whatever the model computes in (a mixed-precision export).
            pooled = tf.cast(outputs["pooled_output"], tf.float32)
            return {
                "pooled_output": pooled,
                "default": pooled,
                "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
                "encoder_outputs": [tf.cast(x, tf.float32)
                                    for x in outputs["all_encoder_layers"]],
            }

        call = tf.function(call, autograph=False)
        spec = {k: tf.TensorSpec([None, None], tf.int32, name=k) for k in ENCODER_INPUT_KEYS}
        for training in (False, True):
            call.get_concrete_function(spec, training=training)
        call.get_concrete_function(spec)
        self.__call__ = call

        # TF Serving's entry point (and saved_model_cli's): flat named inputs
        # and outputs, the layers stacked into one Tensor as a signature needs.
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=k)
                                      for k in ENCODER_INPUT_KEYS], autograph=False)
        def serve(input_word_ids, input_mask, input_type_ids):
            outputs = call({"input_word_ids": input_word_ids, "input_mask": input_mask,
                            "input_type_ids": input_type_ids}, training=False)
            outputs = dict(outputs)
            outputs["encoder_outputs"] = tf.stack(outputs["encoder_outputs"], axis=1)
            return outputs

        self.serve = serve


# ---------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------


def export_tfhub(config, vocab_file, do_lower_case, init_checkpoint, output_dir,
                 max_seq_length, mixed_precision=None, phases=None):
    """Writes `output_dir/preprocessor/` and `output_dir/encoder/` (TF Hub's BERT pair).

    Args:
      config: `bert_tf.modeling.config.BertConfig`.
      vocab_file: the WordPiece vocab (must hold [UNK], [CLS], [SEP]; at
        most `config.vocab_size` entries).
      do_lower_case: as FullTokenizer's.
      init_checkpoint: resolved checkpoint prefix of the BERT weights.
      output_dir: directory to write into (created if missing).
      max_seq_length: the preprocessor's default seq_length (>= 3, at most
        `config.max_position_embeddings`).
      mixed_precision: None (float32), "bf16" or "fp16": the encoder computes
        in that precision (float32 variables and outputs).
      phases: a `bert_tf.item_progress.PhaseLog` that logs each phase (by
        default a new one, "TF Hub export").

    Returns:
      (preprocessor path, encoder path).
    """
    phases = phases or PhaseLog("TF Hub export")
    tokenization.check_vocab(vocab_file, config)
    max_seq_length = int(max_seq_length)
    config.check_max_seq_length(max_seq_length)
    preprocessor_dir = os.path.join(output_dir, PREPROCESSOR_DIR)
    encoder_dir = os.path.join(output_dir, ENCODER_DIR)
    tf.io.gfile.makedirs(output_dir)
    preprocessor = HubPreprocessor(vocab_file, do_lower_case, max_seq_length)
    tf.saved_model.save(preprocessor, preprocessor_dir)
    phases.done("preprocessor traced and saved")
    with precision.inference_policy(mixed_precision):
        model = BertModel(config)
    checkpoint_lib.load_checkpoint(model, init_checkpoint, strict=True)
    phases.done("checkpoint loaded into the encoder")
    encoder = HubEncoder(model, vocab_file, do_lower_case)
    phases.done("encoder traced")
    tf.saved_model.save(encoder, encoder_dir, signatures={"serving_default": encoder.serve})
    phases.done("encoder saved")
    return preprocessor_dir, encoder_dir
