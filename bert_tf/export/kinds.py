"""The kinds of export: one `ExportKind` each, read with no branch per kind.

`EXPORTS` maps each kind (`export_saved_model`'s task_name, or "classifier"
for any task of run_classifier's registry) to its `ExportKind`: the task model
it loads, the checkpoint head it needs and the run that writes it, the flags
only it takes, its serving module, whether its SavedModel has `serve_features`
(what `--format=onnx` converts) and how its int8 model is made
(`--quantize=int8`). `bert_tf.export.saved_model` and `bert_tf.export.quantize`
read it, and neither names a kind.

Here too are the serving modules of the kinds whose task folder has none: the
classifier's, the encoder's, the embedder's and multiple_choice's (each a
`serving_module.ModelServingModule`), and `SquadRoot`, the root of a SQuAD
export. squad's, fill_mask's and ner's own modules are in their task folders
(`bert_tf/tasks/<task>/serving.py`).
"""

import collections

import tensorflow as tf

from bert_tf import tokenization
from bert_tf.data import text_windows
from bert_tf.export import serving_module
from bert_tf.tasks.classifier.model import head_outputs
from bert_tf.tasks.embeddings import model as embeddings
from bert_tf.tasks.multiple_choice import model as multiple_choice
from bert_tf.tasks.pretraining.serving import FillMaskServingModule
from bert_tf.tasks.squad.serving import SquadServingModule
from bert_tf.tasks.token_classification.serving import NerServingModule

CLASSIFIER = "classifier"
ENCODER = "encoder"
FILL_MASK = "fill_mask"
EMBEDDINGS = "embeddings"
MULTIPLE_CHOICE = "multiple_choice"
SQUAD = "squad"
NER = "ner"


class ServingSettings(collections.namedtuple("ServingSettings", [
        "labels", "is_regression", "max_seq_length", "vocab_file", "do_lower_case",
        "multi_label", "threshold", "doc_stride", "top_k", "max_windows", "pooling",
        "normalize", "max_query_length", "n_best_size", "max_answer_length"],
        defaults=(None,) * 15)):
    """The export's settings a serving module (`ExportKind.serve`) or an int8 model
    (`Int8Export`) is built from; a kind reads those it takes."""

    __slots__ = ()


class Int8Export(collections.namedtuple("Int8Export", ["outputs", "config"])):
    """How a kind's int8 model (`bert_tf.export.quantize`, a LiteRT model on features) is made.

    Attributes:
      outputs: fn(model, features, `ServingSettings`) -> the numeric outputs of
        the SavedModel's serve_features (no strings) on a features dict, from
        the float32 model: what the LiteRT model's signature returns.
      config: fn(`ServingSettings`) -> what export_config.json holds for this
        kind beyond every int8 export's keys (a classifier's labels, an
        embedder's pooling), for a caller to read the answers.
    """

    __slots__ = ()


class ExportKind(collections.namedtuple("ExportKind", [
        "task", "model", "head", "trained_by", "options", "serve", "num_labels",
        "serve_features", "int8"], defaults=(False, None))):
    """One kind of export (`EXPORTS`).

    Attributes:
      task: the registry's task (`bert_tf.tasks.registry`) whose training run's
        output_dir this kind exports by default (bert_tf_run.json's "task"), or None.
      model: fn(cls, config, num_labels, multi_label) -> the model its checkpoint loads
        into, `cls` the registry's class of `task` (None: the backbone).
      head: the checkpoint's head it needs (`checkpoint.expected_tf1_variables`), or None.
      trained_by: the run that writes that head ("%s": the task's name), for a
        checkpoint without it.
      options: the export's flags for this kind alone ("doc_stride", "max_windows",
        "pooling", "multi_label", "tfhub", "labels_file": its run's labels.txt).
      serve: fn(model, tokenizer, `ServingSettings`) -> (tf.Module, signatures).
      num_labels: the head's outputs when fixed (multiple choice: one score), else None.
      serve_features: whether its SavedModel has the `serve_features` signature
        (features in, no tokenizer), which `--format=onnx` converts
        (`bert_tf.export.onnx`); False where the graph tokenizes and decodes text
        inside (squad, fill_mask, ner).
      int8: its `Int8Export` (`--quantize=int8`, a LiteRT model), or None: none.
    """

    __slots__ = ()


# ---------------------------------------------------------------------------
# Serving modules
# ---------------------------------------------------------------------------


def _text_specs(pair):
    specs = [serving_module.text_spec()]
    if pair:
        specs.append(serving_module.text_spec(serving_module.TEXT_B))
    return specs


def _feature_specs(rank=2):
    # Any row length up to max_seq_length (`serving_module.checked_features`).
    return [tf.TensorSpec([None] * rank, tf.int32, name=name)
            for name in ("input_ids", "input_mask", "segment_ids")]


class _ServingModule(serving_module.ModelServingModule):
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
            self._serve_features, input_signature=_feature_specs(), autograph=False)
        self.serving_default = tf.function(self._serving_default, input_signature=_text_specs(True),
                                      autograph=False)
        self.serve_text_a = tf.function(self._serve_text_a, input_signature=_text_specs(False),
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


class ClassifierServingModule(_ServingModule):
    """A `BertClassifier` served from raw text, features or tf.train.Examples.

    Args:
      model: `BertClassifier` (float32, loaded).
      tokenizer: `GraphTokenizer`.
      labels: list of str, the processor's labels (ignored for regression).
      is_regression: bool (STS-B): the signatures return `score`.
      max_seq_length, vocab_file: see `_ServingModule`.

      multi_label, threshold: a multi-label classifier and its decision threshold.
      doc_stride: None, or an int (`text_windows.check_doc_stride`): the text
        signatures cut each text_a into doc-stride windows
        (`text_windows.window_features`) and answer per text with the mean
        of its windows' logits; `serving_default` then takes text_a alone.

    Returns (every signature): `probabilities` float32 [batch_size, num_labels]
    (softmax of the logits, as `test_results.tsv`) and `label` string
    [batch_size] (the label of the argmax); regression: `score` float32
    [batch_size]; multi-label: `probabilities` (a sigmoid per label),
    `predictions` int32 [batch_size, num_labels] (1 where the probability is
    at least the threshold) and `label` string [batch_size] (those labels,
    comma-separated, in the labels' order; "" for none).
    """

    def __init__(self, model, tokenizer, labels, is_regression, max_seq_length, vocab_file,
                 name="classifier_serving", multi_label=False, threshold=0.5, doc_stride=None):
        super().__init__(model, tokenizer, max_seq_length, vocab_file, name=name)
        self._doc_stride = doc_stride
        if doc_stride is not None:
            self.doc_stride = tf.Variable(int(doc_stride), trainable=False, name="doc_stride")
            self.serve_text_a = tf.function(self._serve_windows,
                                            input_signature=_text_specs(False), autograph=False)
        self.is_regression = bool(is_regression)
        self._multi_label = bool(multi_label) and not self.is_regression
        self._threshold = float(threshold)
        if self._multi_label:
            self.threshold = tf.Variable(self._threshold, trainable=False, name="threshold")
        self._labels = None if self.is_regression else [str(label) for label in labels]
        if self._labels is not None:
            self.labels = tf.Variable(self._labels, trainable=False, name="labels")
        self.serve_examples = tf.function(
            self._serve_examples,
            input_signature=[tf.TensorSpec([None], tf.string, name="examples")],
            autograph=False)

    def outputs(self, features):
        outputs = head_outputs(self.model(features, training=False)["logits"],
                               self.is_regression, self._multi_label, self._threshold)
        if self.is_regression:
            return outputs  # score [B]
        if self._multi_label:
            over = outputs["predictions"] > 0  # [B, num_labels]
            names = tf.broadcast_to(tf.constant(self._labels), tf.shape(over))
            outputs["label"] = tf.strings.reduce_join(
                tf.ragged.boolean_mask(names, over), axis=-1, separator=",")  # [B]
            return outputs
        outputs["label"] = tf.gather(tf.constant(self._labels),
                                     tf.argmax(outputs["probabilities"], axis=-1))  # [B]
        return outputs

    def _serve_windows(self, text_a):
        # Every window of every text through the model at once; the model's
        # call averages each text's windows' logits (by `text_index`).
        features = text_windows.window_features(
            self.tokenizer.tokenize(text_a), self._seq_length, self._doc_stride,
            self.tokenizer.cls_id, self.tokenizer.sep_id)
        return self.outputs(self.without_padding(features))

    def _serve_examples(self, examples):
        # run_classifier's record schema; label_ids and is_real_example are not read.
        spec = {name: tf.io.FixedLenFeature([self._seq_length], tf.int64)
                for name in ("input_ids", "input_mask", "segment_ids")}
        parsed = tf.io.parse_example(examples, spec)  # int64 [B, S] each
        return self.serve_features(**{k: tf.cast(v, tf.int32) for k, v in parsed.items()})

    def signatures(self):
        signatures = super().signatures()
        signatures["serve_examples"] = self.serve_examples
        if self._doc_stride is not None:
            # One text per example: the default signature is serve_text_a's.
            signatures[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY] = self.serve_text_a
        return signatures


class EncoderServingModule(_ServingModule):
    """A `BertModel` served from raw text or features.

    Returns: `pooled_output` float32 [batch_size, hidden_size],
    `sequence_output` [batch_size, seq_length, hidden_size],
    `encoder_outputs` [batch_size, num_hidden_layers, seq_length,
    hidden_size] (every layer's output; the last is sequence_output), zeros
    at the padding positions (input_mask 0); the text signatures also return
    `input_mask` int32 [batch_size, max_seq_length] (which positions hold
    tokens). seq_length is max_seq_length for text, the rows' length for
    features.
    """

    def __init__(self, model, tokenizer, max_seq_length, vocab_file, name="encoder_serving"):
        super().__init__(model, tokenizer, max_seq_length, vocab_file, name=name)

    def _serve_features(self, input_ids, input_mask, segment_ids):
        outputs = super()._serve_features(input_ids, input_mask, segment_ids)
        # The model ran on the batch's attended positions only (trim_padding):
        # back to the rows' length with zeros, as every padding position is. The
        # mask's product keeps the rows' static length (max_seq_length for text)
        # in the signatures' output shapes.
        kept = tf.cast(input_mask != 0, tf.float32)  # [B, S]
        cut = tf.shape(input_ids)[1] - tf.shape(outputs["sequence_output"])[1]
        outputs["sequence_output"] = tf.pad(
            outputs["sequence_output"], [[0, 0], [0, cut], [0, 0]]) * kept[:, :, None]
        outputs["encoder_outputs"] = tf.pad(
            outputs["encoder_outputs"], [[0, 0], [0, 0], [0, cut], [0, 0]]) * kept[:, None, :, None]
        return outputs

    def outputs(self, features):
        return serving_module.encoder_outputs(self.model, features)

    def text_outputs(self, features):
        return {"input_mask": features["input_mask"]}  # [B, S]


def _embed(model, features, pooling, normalize):
    """A `BertModel`'s embeddings of a features dict: float32 [B, H], pooled over the real tokens."""
    out = model(features["input_ids"], input_mask=features["input_mask"],
                token_type_ids=features["segment_ids"], training=False)
    return embeddings.pool(out["sequence_output"], features["input_mask"], pooling, normalize)


class EmbeddingsServingModule(_ServingModule):
    """A sentence embedder served from raw text or features (`bert_tf.tasks.embeddings.model`).

    Each text is embedded on its own (`[CLS] text [SEP]`, truncated to
    max_seq_length - 2 tokens), as `SentenceEmbedder.encode` does.

    Args:
      model: `BertModel` (float32, loaded).
      pooling: "cls", "mean" or "max", over the real tokens.
      normalize: bool, L2-normalize the embeddings.
      tokenizer, max_seq_length, vocab_file: see `_ServingModule`.

    Returns (every signature): `embeddings` float32 [batch_size, hidden_size].
    """

    def __init__(self, model, tokenizer, max_seq_length, vocab_file, pooling, normalize,
                 name="embeddings_serving"):
        super().__init__(model, tokenizer, max_seq_length, vocab_file, name=name)
        self._pooling = embeddings.check_pooling(pooling)
        self._normalize = bool(normalize)
        self.pooling = tf.Variable(self._pooling, trainable=False, name="pooling")
        self.normalize = tf.Variable(self._normalize, trainable=False, name="normalize")

    def outputs(self, features):
        return {"embeddings": _embed(self.model, features, self._pooling,
                                     self._normalize)}  # [B, H]

    def signatures(self):
        # One text per example: the default signature is serve_text_a's.
        return {
            tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: self.serve_text_a,
            "serve_text_a": self.serve_text_a,
            "serve_features": self.serve_features,
        }


class MultipleChoiceServingModule(serving_module.ModelServingModule):
    """A `BertMultipleChoice` served from raw text or features (`bert_tf.tasks.multiple_choice.model`).

    The text signature packs choice i as the pair (context, start + " " +
    ending i) with the GraphTokenizer (`multiple_choice.choice_pairs`), as
    bert-run-multiple-choice's records and the model's preprocessor do.

    Args:
      model: `BertMultipleChoice` (float32, loaded).
      tokenizer, max_seq_length, vocab_file: see `_ServingModule`.

    Returns (both signatures): `probabilities` float32 [batch_size,
    num_choices] (the softmax over the choices, as test_results.tsv) and
    `predictions` int32 [batch_size] (the chosen index).
    """

    def __init__(self, model, tokenizer, max_seq_length, vocab_file,
                 name="multiple_choice_serving"):
        super().__init__(model, tokenizer, max_seq_length, name=name)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.serve_features = tf.function(
            self._serve_features, autograph=False, input_signature=_feature_specs(rank=3))
        self.serving_default = tf.function(
            self._serving_default, autograph=False, input_signature=[
                tf.TensorSpec([None], tf.string, name="context"),
                tf.TensorSpec([None], tf.string, name="start"),
                tf.TensorSpec([None, None], tf.string, name="endings")])

    def _serve_features(self, input_ids, input_mask, segment_ids):
        features = self.without_padding(
            self.checked_features(input_ids, input_mask, segment_ids))
        logits = self.model(features, training=False)["logits"]
        logits = tf.cast(logits, tf.float32)  # [B, C]
        return {"probabilities": tf.nn.softmax(logits, axis=-1),  # [B, C]
                "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}  # [B]

    def _serving_default(self, context, start, endings):
        check = tf.debugging.assert_equal(
            [tf.size(context), tf.size(start)], [tf.shape(endings)[0]] * 2,
            message="context, start and endings must have the same batch size")
        with tf.control_dependencies([check]):
            # Only what the tokenizer reads, before choice_pairs repeats and joins it.
            text_a, text_b = multiple_choice.choice_pairs(
                *(self.tokenizer.bytes_read(x) for x in (context, start, endings)))
        features = self.tokenizer(text_a, text_b, max_seq_length=self._seq_length)  # [B*C, S]
        return self.serve_features(**multiple_choice.unflatten_choices(
            features, tf.shape(endings)[1]))

    def signatures(self):
        return {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: self.serving_default,
                "serve_features": self.serve_features}


class SquadRoot(tf.Module):
    """The saved root of a SQuAD export: `bert_tf.tasks.squad.serving.SquadServingModule` as `squad`,
    plus `do_lower_case`, `max_seq_length` and the vocab asset, as the other exports have.
    """

    def __init__(self, squad, do_lower_case, max_seq_length, vocab_file, name="squad_serving"):
        super().__init__(name=name)
        self.squad = squad
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False,
                                         name="do_lower_case")
        self.max_seq_length = tf.Variable(int(max_seq_length), trainable=False,
                                          name="max_seq_length")
        self.vocab_file = tf.saved_model.Asset(vocab_file)


# ---------------------------------------------------------------------------
# The table: one entry a kind
# ---------------------------------------------------------------------------


def _serve_classifier(model, tokenizer, s):
    module = ClassifierServingModule(model, tokenizer, s.labels, s.is_regression,
                                     s.max_seq_length, s.vocab_file, multi_label=s.multi_label,
                                     threshold=s.threshold, doc_stride=s.doc_stride)
    return module, module.signatures()


def _serve_encoder(model, tokenizer, s):
    module = EncoderServingModule(model, tokenizer, s.max_seq_length, s.vocab_file)
    return module, module.signatures()


def _serve_fill_mask(model, tokenizer, s):
    module = FillMaskServingModule(model, tokenizer, list(tokenization.load_vocab(s.vocab_file)),
                                   s.max_seq_length, s.top_k)
    return module, module.signatures()


def _serve_ner(model, tokenizer, s):
    module = NerServingModule(model, tokenizer, list(tokenization.load_vocab(s.vocab_file)),
                              s.labels, s.max_seq_length, s.doc_stride,
                              max_windows=s.max_windows)
    return module, module.signatures()


def _serve_embeddings(model, tokenizer, s):
    module = EmbeddingsServingModule(model, tokenizer, s.max_seq_length, s.vocab_file,
                                     s.pooling, s.normalize)
    return module, module.signatures()


def _serve_multiple_choice(model, tokenizer, s):
    module = MultipleChoiceServingModule(model, tokenizer, s.max_seq_length, s.vocab_file)
    return module, module.signatures()


def _serve_squad(model, tokenizer, s):
    module = SquadServingModule(model, tokenizer, max_seq_length=s.max_seq_length,
                                doc_stride=s.doc_stride, max_query_length=s.max_query_length,
                                n_best_size=s.n_best_size, max_answer_length=s.max_answer_length)
    # A tf.function with an input_signature, or a concrete function.
    signatures = {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: module.serving_default}
    return SquadRoot(module, s.do_lower_case, s.max_seq_length, s.vocab_file), signatures


def _plain(cls, config, num_labels, multi_label):
    return cls(config)


def _classifier_int8_outputs(model, features, s):
    return head_outputs(model(features, training=False)["logits"], s.is_regression,
                        s.multi_label, s.threshold)


def _classifier_int8_config(s):
    return {"labels": None if s.is_regression else list(s.labels),
            "is_regression": bool(s.is_regression), "multi_label": bool(s.multi_label),
            "threshold": float(s.threshold)}


def _embeddings_int8_outputs(model, features, s):
    return {"embeddings": _embed(model, features, s.pooling, s.normalize)}  # [B, H]


def _encoder_int8_outputs(model, features, s):
    del s  # the encoder takes no settings
    return serving_module.encoder_outputs(model, features)  # as the SavedModel's encoder


# In the order a message lists the kinds that take a flag (`listed`).
EXPORTS = collections.OrderedDict([
    (CLASSIFIER, ExportKind(
        "classifier", lambda cls, config, num_labels, multi_label: cls(
            config, num_labels, multi_label=multi_label),
        "classifier", "run_classifier.py fine-tuned on %s", ("doc_stride", "multi_label"),
        _serve_classifier, None, serve_features=True,
        int8=Int8Export(_classifier_int8_outputs, _classifier_int8_config))),
    # The backbone alone (task None: BertModel), which any run's model exports as.
    (ENCODER, ExportKind(None, _plain, None, None, ("tfhub",), _serve_encoder, None,
                         serve_features=True,
                         int8=Int8Export(_encoder_int8_outputs, lambda s: {}))),
    (EMBEDDINGS, ExportKind(
        None, _plain, None, None, ("pooling",), _serve_embeddings, None, serve_features=True,
        int8=Int8Export(_embeddings_int8_outputs,
                        lambda s: {"pooling": s.pooling, "normalize": s.normalize}))),
    (MULTIPLE_CHOICE, ExportKind("multiple_choice", _plain, "classifier",
                                 "run_multiple_choice.py fine-tuned", (),
                                 _serve_multiple_choice, 1, serve_features=True)),
    (SQUAD, ExportKind("squad", _plain, "squad", "run_squad.py fine-tuned", ("doc_stride",),
                       _serve_squad, None)),
    (NER, ExportKind(
        "token_classification", lambda cls, config, num_labels, multi_label: cls(
            config, num_labels),
        "classifier", "bert-run-ner fine-tuned", ("doc_stride", "max_windows", "labels_file"),
        _serve_ner, None)),
    (FILL_MASK, ExportKind("pretraining", _plain, "pretraining", "run_pretraining.py trained",
                           (), _serve_fill_mask, None)),
])


def kinds_with(field):
    """The kinds whose `ExportKind.<field>` is set (true, not None), in EXPORTS' order."""
    return [kind for kind, export in EXPORTS.items() if getattr(export, field)]


def listed(which, classifier="a classifier"):
    """The kinds `which` as a message lists them: "a classifier, encoder or embeddings".

    `classifier` names the classifier kind, which a task's own name selects
    (--task_name=mrpc), not its kind's.
    """
    names = [classifier if kind == CLASSIFIER else kind for kind in which]
    return " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)
