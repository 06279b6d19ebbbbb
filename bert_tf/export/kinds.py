"""The kinds of export: one `ExportKind` each, read with no branch per kind.

`EXPORTS` maps each kind (`export_saved_model`'s task_name, or "classifier"
for any task of run_classifier's registry) to its `ExportKind`: the task model
it loads, the checkpoint head it needs and the run that writes it, the flags
only it takes, its serving module, whether its SavedModel has `serve_features`
(what `--format=onnx` converts) and how its int8 model is made
(`--quantize=int8`). `bert_tf.export.saved_model` and `bert_tf.export.quantize`
read it, and neither names a kind.

Each task's serving module is in its folder (`bert_tf/tasks/<task>/serving.py`);
here is the encoder's (`EncoderServingModule`: the backbone is no task).
"""

import collections

import tensorflow as tf

from bert_tf import tokenization
from bert_tf.export import serving_module
from bert_tf.tasks.classifier.model import head_outputs
from bert_tf.tasks.classifier.serving import ClassifierServingModule
from bert_tf.tasks.embeddings import serving as embeddings_serving
from bert_tf.tasks.embeddings.serving import EmbeddingsServingModule
from bert_tf.tasks.multiple_choice.serving import MultipleChoiceServingModule
from bert_tf.tasks.pretraining.serving import FillMaskServingModule
from bert_tf.tasks.squad.serving import SquadRoot
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


class EncoderServingModule(serving_module.TextServingModule):
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
    return {"embeddings": embeddings_serving.embed(model, features, s.pooling, s.normalize)}  # [B, H]


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
