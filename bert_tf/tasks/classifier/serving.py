"""The classifier's SavedModel: raw text, features or tf.train.Examples in, labels out.

`ClassifierServingModule` (bert-export-saved-model's classifier kind,
`bert_tf.export.kinds.EXPORTS`): `serving_default` takes `text_a` and
`text_b`, `serve_text_a` single texts (or doc-stride windows of long ones),
`serve_features` the model's features, `serve_examples` run_classifier's
records; each answers the classifier's `head_outputs` and its label.
"""

import tensorflow as tf

from bert_tf.data import text_windows
from bert_tf.export import serving_module
from bert_tf.tasks.classifier.model import head_outputs


class ClassifierServingModule(serving_module.TextServingModule):
    """A `BertClassifier` served from raw text, features or tf.train.Examples.

    Args:
      model: `BertClassifier` (float32, loaded).
      tokenizer: `GraphTokenizer`.
      labels: list of str, the processor's labels (ignored for regression).
      is_regression: bool (STS-B): the signatures return `score`.
      max_seq_length, vocab_file: see `serving_module.TextServingModule`.

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
                                            input_signature=serving_module.text_specs(False), autograph=False)
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
