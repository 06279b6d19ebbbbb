"""Sentence(-pair) classification: the model, its losses and its task (original: `run_classifier.py`).

`BertClassifier` is `bert` (the backbone) plus the unscoped `output_weights` /
`output_bias` (original: `create_model`), so its checkpoints carry exactly the
original's names. The loss re-states the original's maths:

  logits = dropout(pooled_output, 0.1) @ output_weights^T + output_bias
  per_example_loss = -log softmax(logits)[label]
  loss = mean(per_example_loss)

`ClassifierTask` packages them for `bert_tf.training.Trainer` (original:
`model_fn`), and for Keras's `compile` / `fit` / `evaluate` / `predict` on
`BertClassifier` itself (`bert_tf.tasks.task_model.TaskModel`, the trainer's
replica step).

New: regression (STS-B), with one output and the squared error
`(logits[:, 0] - label)^2` as the per-example loss, evaluated with Pearson's
and Spearman's correlations; multi-label classification (`multi_label=True`:
the same head, a sigmoid per label and the binary cross-entropy averaged over
the labels, `label_ids` multi-hot [batch_size, num_labels], evaluated with
micro/macro F1, micro precision and recall and the exact match at a decision
threshold); raw-text input through a `BertPreprocessor`; long documents
(`doc_stride`): a text cut into run_squad's doc-stride windows
(`bert_tf.data.text_windows`), its logits the mean of its windows' logits.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import numpy as np
import tensorflow as tf

from bert_tf.data import text_windows
from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.heads import ClassifierHead
from bert_tf.tasks.base import Task
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import passed_through
from bert_tf.tasks.base import real_example_weights
from bert_tf.tasks.base import safe_div
from bert_tf.tasks.task_model import TaskModel
from bert_tf.tasks.task_model import checkpoint_num_labels


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(TaskModel, keras.Model):
    """BERT with a classification (or regression) head on the pooled output.

    Checkpoint variables: every `bert/...` variable of `BertModel`, plus
    output_weights [num_labels, hidden_size] and output_bias [num_labels]
    (unscoped, as the original).

    Args:
      config: `BertConfig` (or its dict).
      num_labels: int, the number of classes (1 for regression).
      is_regression: bool; `fit` then trains the squared error of
        `logits[:, 0]` against float labels (STS-B; num_labels must be 1).
      multi_label: bool; each example holds any number of the labels:
        `label_ids` multi-hot int [batch_size, num_labels], a sigmoid per
        label and the binary cross-entropy (mean over labels); `evaluate`
        returns `eval_loss`, `micro_f1`, `macro_f1`, `micro_precision`,
        `micro_recall`, `exact_match` and `loss`; `predict` per-label
        `probabilities` and `predictions` (multi-hot, at the threshold).
      threshold: float, the per-label decision threshold of multi_label (0.5).
      preprocessor: (optional) a `bert_tf.tokenization.preprocessor.BertPreprocessor`;
        the model then also takes raw text (see Call args).
      doc_stride: (optional) int: with a preprocessor, raw text longer than a
        row's room (the preprocessor's max_seq_length - 2 tokens) is cut into
        run_squad's doc-stride windows (`bert_tf.data.text_windows`), the
        model runs on every window and a text's `logits` (and
        `pooled_output`) are the mean of its windows', so `predict`,
        `evaluate` and `fit` on raw text see one row per text (`fit` trains
        that mean; run_classifier --doc_stride trains every window). Single
        texts only. Feature dicts are rows as ever; `evaluate` on
        run_classifier's window records (with `document_index`) averages
        each document's windows too (the model's task evaluates per
        document: run_classifier --doc_stride builds its model so, without a
        preprocessor). None: texts are truncated.
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.modeling.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length]; with a preprocessor, also a
        string Tensor [batch_size], `(text_a, text_b)`, or a dict with
        `text_a` (and `text_b`). A dict with `text_index` int32 [num_windows]
        (windows, `text_windows.window_features`) gives one row per text:
        the mean over its windows.
      training: Python bool; dropout only when True.
      head_mask, output_attentions: as `BertModel`'s; with
        `output_attentions=True` the dict also holds `attentions`.

    Returns:
      dict: `logits` float32 [batch_size, num_labels], `pooled_output`.

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on feature dicts with `label_ids` (int32 [batch_size]; float32
    for regression), or on `(x, y)` with `y` the label ids. The loss is the
    original's `mean(-log softmax(logits)[label])` (regression: the mean
    squared error); training logs `loss` and `accuracy` (regression:
    `mean_squared_error`). `evaluate` returns the original's `eval_accuracy`
    and `eval_loss` (weighted by `is_real_example` when the features hold it)
    and the Estimator's `loss`; regression: `eval_loss` (mean squared error),
    `loss`, and `pearson` / `spearman` over every example evaluated, as
    `Trainer.evaluate` and run_classifier's eval_results.txt.
    `predict` returns `ClassifierTask.predict_step`'s outputs: `logits` and
    `probabilities` [batch_size, num_labels] (regression: `logits` and
    `score` [batch_size], as the exports name it: `head_outputs`), and
    `label_ids` when the features hold them.

    Example:
      ```python
      model = BertClassifier(config, num_labels=2)
      bert_tf.modeling.checkpoint.load_checkpoint(model.bert, "uncased_L-12_H-768_A-12")
      model.compile(optimizer=bert_tf.training.optimization.create_optimizer(
          2e-5, num_train_steps=1000, num_warmup_steps=100))
      model.fit(train_dataset, epochs=1, steps_per_epoch=1000)
      model.evaluate(eval_dataset, return_dict=True)
      # {"eval_accuracy": ..., "eval_loss": ..., "loss": ...}
      ```
    """

    task_name = "classifier"
    hf_architecture = "BertForSequenceClassification"
    fresh_head = True
    pretrained_options = ("num_labels",)

    @classmethod
    def from_parts(cls, parts):
        return cls(parts.config, checkpoint_num_labels(parts, cls.task_name))

    def __init__(self, config, num_labels, is_regression=False, preprocessor=None,
                 name="bert_classifier", multi_label=False, threshold=0.5, doc_stride=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.num_labels = int(num_labels)
        self.is_regression = bool(is_regression)
        if self.is_regression and self.num_labels != 1:
            raise UserError("BertClassifier: is_regression=True needs num_labels=1, got %d"
                            % self.num_labels)
        self.multi_label = bool(multi_label)
        self.threshold = float(threshold)
        if self.multi_label and self.is_regression:
            raise UserError("BertClassifier: multi_label=True and is_regression=True exclude "
                            "each other")
        check_threshold(self.threshold, "BertClassifier: threshold")
        if preprocessor is not None:
            from bert_tf.tokenization.preprocessor import check_preprocessor  # pylint: disable=g-import-not-at-top
            check_preprocessor(preprocessor, config, "BertClassifier")
        self.preprocessor = preprocessor
        if doc_stride is not None:
            doc_stride = text_windows.check_doc_stride(doc_stride, "BertClassifier: doc_stride")
        self.doc_stride = doc_stride
        self.bert = BertModel(config)
        self.classifier = ClassifierHead(self.num_labels, config.hidden_size, name="classifier")
        self.build()

    def call(self, features, training=None, head_mask=None, output_attentions=False):
        features, outputs = self.backbone(features, training, head_mask=head_mask,
                                          output_attentions=output_attentions)
        pooled_output = outputs["pooled_output"]
        result = {"logits": self.classifier(pooled_output, training=training),
                  "pooled_output": pooled_output}
        if text_windows.TEXT_INDEX in features:
            # Windows of texts: each text's mean over its windows (every text has one).
            text_index = features[text_windows.TEXT_INDEX]  # [W]
            result = {k: tf.math.unsorted_segment_mean(tf.cast(v, tf.float32), text_index,
                                                       _num_texts(text_index))  # [B, ...]
                      for k, v in result.items()}
        return self._with_attentions(result, outputs)

    def model_inputs(self, x):
        """Raw text cut into windows, with `doc_stride` (see `TaskModel.model_inputs`)."""
        if self.doc_stride is None or self.preprocessor is None or (isinstance(x, dict) and (
                "input_ids" in x or "inputs_embeds" in x)):
            return super().model_inputs(x)
        features = {}
        if isinstance(x, dict):
            text_keys = self.preprocessor.text_keys
            features = {k: v for k, v in x.items() if k not in text_keys}
            x = {k: x[k] for k in text_keys if k in x}
        text_a, text_b = self.preprocessor.texts(x)
        if text_b is not None:
            raise UserError("BertClassifier(doc_stride=...) cuts single texts into windows, "
                            "not pairs: got a text_b")
        tokenizer = self.preprocessor.tokenizer
        features.update(text_windows.window_features(
            tokenizer.tokenize(text_a), self.preprocessor.max_seq_length, self.doc_stride,
            tokenizer.cls_id, tokenizer.sep_id))
        return features

    def make_task(self):
        return ClassifierTask(self.config, self.num_labels, is_regression=self.is_regression,
                              multi_label=self.multi_label, threshold=self.threshold,
                              per_document=self.doc_stride is not None)

    def get_config(self):
        from bert_tf.tokenization.preprocessor import serialize_preprocessor  # pylint: disable=g-import-not-at-top
        config = super().get_config()
        config.update({
            "config": self.config.to_dict(),
            "num_labels": self.num_labels,
            "is_regression": self.is_regression,
            "multi_label": self.multi_label,
            "threshold": self.threshold,
            "doc_stride": self.doc_stride,
            "preprocessor": serialize_preprocessor(self.preprocessor),
        })
        return config

    @classmethod
    def from_config(cls, config):
        from bert_tf.tokenization.preprocessor import with_preprocessor  # pylint: disable=g-import-not-at-top
        return cls(**with_preprocessor(config))


def classification_example_loss(logits, label_ids):
    """(per_example_loss [batch_size], probabilities, log_probs) as the original.

    Args:
      logits: float32 [batch_size, num_labels].
      label_ids: int32 [batch_size].
    """
    logits = tf.cast(logits, tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot_labels = tf.one_hot(tf.reshape(label_ids, [-1]), depth=logits.shape[-1],
                                dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
    return per_example_loss, tf.nn.softmax(logits, axis=-1), log_probs


def multi_label_example_loss(logits, label_ids):
    """(per_example_loss [batch_size], probabilities [batch_size, num_labels]) (new).

    The binary cross-entropy of a sigmoid per label, averaged over the labels:
    per_example_loss = mean_j(-y_j log sigmoid(z_j) - (1 - y_j) log(1 - sigmoid(z_j))).

    Args:
      logits: float32 [batch_size, num_labels].
      label_ids: multi-hot (0/1) [batch_size, num_labels], any numeric dtype.
    """
    logits = tf.cast(logits, tf.float32)
    labels = tf.reshape(tf.cast(label_ids, tf.float32), tf.shape(logits))
    per_label = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    return tf.reduce_mean(per_label, axis=-1), tf.sigmoid(logits)


def check_threshold(threshold, name):
    """UserError unless 0 < threshold < 1 (a multi-label decision threshold)."""
    if not 0.0 < threshold < 1.0:
        raise UserError("%s must be in (0, 1), got %r" % (name, threshold))


def multi_label_metrics(probabilities, label_ids, threshold=0.5):
    """Micro/macro F1, micro precision/recall and exact match of multi-label predictions.

    A label is predicted when its probability is >= threshold. Micro: the
    true/false positives and false negatives counted over every (example,
    label) pair; macro: the mean over labels of each label's F1 (0 for a
    label with no true positive, predicted or not); exact_match: the share of
    examples whose predicted label set is exactly their label set.

    Args:
      probabilities: float [num_examples, num_labels].
      label_ids: multi-hot (0/1) [num_examples, num_labels].

    Returns:
      dict of float: micro_f1, macro_f1, micro_precision, micro_recall, exact_match.
    """
    predicted = np.asarray(probabilities, np.float64) >= threshold
    truth = np.asarray(label_ids).reshape(predicted.shape) > 0
    tp = np.sum(predicted & truth, axis=0).astype(np.float64)
    fp = np.sum(predicted & ~truth, axis=0).astype(np.float64)
    fn = np.sum(~predicted & truth, axis=0).astype(np.float64)

    def f1(tp, fp, fn):
        denominator = 2 * tp + fp + fn
        return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)

    total_tp, total_fp, total_fn = tp.sum(), fp.sum(), fn.sum()
    return {
        "micro_f1": float(f1(total_tp, total_fp, total_fn)),
        "macro_f1": float(np.mean(f1(tp, fp, fn))) if tp.size else 0.0,
        "micro_precision": float(total_tp / (total_tp + total_fp)) if total_tp + total_fp else 0.0,
        "micro_recall": float(total_tp / (total_tp + total_fn)) if total_tp + total_fn else 0.0,
        "exact_match": (float(np.mean(np.all(predicted == truth, axis=-1)))
                        if len(predicted) else 0.0),
    }


def regression_example_loss(logits, labels):
    """(per_example_loss [batch_size], predictions [batch_size]): squared error (new)."""
    predictions = tf.reshape(tf.cast(logits, tf.float32), [-1])
    labels = tf.reshape(tf.cast(labels, tf.float32), [-1])
    return tf.square(predictions - labels), predictions


def _ranks(values):
    """Ranks 1..n, ties sharing their average rank (as Spearman's rho needs)."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return ranks


def pearson(x, y):
    """Pearson's r of two 1-D arrays (0.0 when either is constant)."""
    x = np.asarray(x, np.float64) - np.mean(x)
    y = np.asarray(y, np.float64) - np.mean(y)
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator else 0.0


def spearman(x, y):
    """Spearman's rho: Pearson's r of the ranks (ties averaged)."""
    return pearson(_ranks(x), _ranks(y))


def _num_texts(text_index):
    """int32 scalar: the texts of a batch of windows, from each window's `text_index`."""
    return tf.reduce_max(tf.concat([text_index, [-1]], 0)) + 1


def _num_examples(features):
    """float32 scalar: the examples of a batch: its rows, or the texts its windows are of."""
    if text_windows.TEXT_INDEX in features:
        return tf.cast(_num_texts(features[text_windows.TEXT_INDEX]), tf.float32)
    return num_examples(features)


def _label_ids(features):
    """int32 [batch_size]: the class labels (int64 ones too, e.g. from numpy through Keras)."""
    return tf.reshape(tf.cast(features["label_ids"], tf.int32), [-1])


def _exact_matches(predictions, label_ids):
    """float32 [batch_size]: 1 where the predicted multi-hot row equals the labels'."""
    labels = tf.reshape(tf.cast(label_ids, tf.int32), tf.shape(predictions))
    return tf.cast(tf.reduce_all(tf.equal(predictions, labels), axis=-1), tf.float32)


class ClassifierTask(Task):
    """Classification (or regression) on the pooled output (original: `run_classifier.model_fn`).

    Training: the original's `loss = mean(per_example_loss)` over the global
    batch. Evaluation, weighted by `is_real_example` as the original's
    `metric_fn`: `eval_accuracy`, `eval_loss`, and the Estimator's `loss` (the
    mean over batches of each batch's mean loss over its real examples, as
    the original computed it on CPU/GPU, where the last batch was smaller).
    Regression (new, STS-B): `eval_loss` (mean squared error), `pearson`,
    `spearman`. Predictions: `logits` and `probabilities` [num_labels] (the
    original's; regression: `logits` and `score`: `head_outputs`), plus `label_ids`
    when the features hold them.

    Multi-label (new, `multi_label=True`): `label_ids` multi-hot
    [batch_size, num_labels]; the per-example loss is the binary
    cross-entropy averaged over the labels (`multi_label_example_loss`), the
    mean over the batch as the original's; training logs `exact_match`;
    evaluation `eval_loss`, `loss` and, from every prediction,
    `multi_label_metrics` at `threshold`; predictions `logits`, per-label
    `probabilities` (sigmoid) and `predictions` (multi-hot int32).

    Long documents (new, `per_document=True`: run_classifier --doc_stride):
    the records are windows, each with its example's `document_index`,
    which `predict_step` passes through. Training trains every window;
    evaluation reads every window's prediction and computes its metrics per
    document (`document_outputs`: the mean of the windows' logits), `loss`
    then being `eval_loss` (there are no batches of documents).

    Args:
      config: `BertConfig`.
      num_labels: int (ignored for regression, which has one output).
      is_regression: bool.
      multi_label: bool.
      threshold: float in (0, 1), multi_label's per-label decision threshold.
      per_document: bool, evaluate window records per document.
    """

    name = "classifier"
    label_keys = ("label_ids",)

    def __init__(self, config, num_labels, is_regression=False, multi_label=False,
                 threshold=0.5, per_document=False):
        super().__init__(config)
        self.per_document = bool(per_document)
        self.is_regression = bool(is_regression)
        self.num_labels = 1 if self.is_regression else int(num_labels)
        self.multi_label = bool(multi_label) and not self.is_regression
        self.threshold = float(threshold)
        check_threshold(self.threshold, "threshold")
        if self.multi_label:
            self.metric_sum_keys = ("exact", "examples")
            self.eval_sum_keys = ("weight", "loss_sum")
        elif self.is_regression:
            self.metric_sum_keys = ("squared_error", "examples")
            self.eval_sum_keys = ("weight", "loss_sum")
        else:
            self.metric_sum_keys = ("correct", "examples")
            self.eval_sum_keys = ("weight", "loss_sum", "correct")

    def _example_losses(self, logits, label_ids):
        """(per_example_loss, predictions): class ids, multi-hot, or scores for regression."""
        if self.multi_label:
            per_example_loss, probabilities = multi_label_example_loss(logits, label_ids)
            return per_example_loss, tf.cast(probabilities >= self.threshold, tf.int32)
        if self.is_regression:
            return regression_example_loss(logits, label_ids)
        # Class ids as int32 whatever a user's dataset holds (float labels of a
        # tf.data pipeline; in-memory labels are checked before Keras gets them).
        label_ids = tf.cast(label_ids, tf.int32)
        per_example_loss, _, log_probs = classification_example_loss(logits, label_ids)
        return per_example_loss, tf.argmax(log_probs, axis=-1, output_type=tf.int32)

    def loss_normalizers(self, features):
        return {"examples": _num_examples(features)}

    def compute_loss(self, model, features, normalizers, training=True):
        logits = model(features, training=training)["logits"]
        per_example_loss, predictions = self._example_losses(logits, features["label_ids"])
        loss = tf.reduce_sum(per_example_loss) / normalizers["examples"]
        if self.multi_label:
            first = tf.reduce_sum(_exact_matches(predictions, features["label_ids"]))
        elif self.is_regression:
            first = tf.reduce_sum(per_example_loss)
        else:
            first = tf.reduce_sum(tf.cast(tf.equal(predictions, _label_ids(features)),
                                          tf.float32))
        return loss, dict(zip(self.metric_sum_keys, (first, _num_examples(features))))

    def train_metrics(self, sums):
        if self.multi_label:
            return {"exact_match": safe_div(sums["exact"], sums["examples"])}
        if self.is_regression:
            return {"mean_squared_error": safe_div(sums["squared_error"], sums["examples"])}
        return {"accuracy": safe_div(sums["correct"], sums["examples"])}

    def eval_step(self, model, features):
        logits = model(features, training=False)["logits"]
        per_example_loss, predictions = self._example_losses(logits, features["label_ids"])
        weights = (real_example_weights(features) if text_windows.TEXT_INDEX not in features
                   else tf.ones_like(per_example_loss))  # one per text
        sums = {"weight": tf.reduce_sum(weights),
                "loss_sum": tf.reduce_sum(weights * per_example_loss)}
        if not self.is_regression and not self.multi_label:
            sums["correct"] = tf.reduce_sum(
                weights * tf.cast(tf.equal(predictions, _label_ids(features)), tf.float32))
        return sums

    def eval_batch_loss(self, batch_sums):
        return batch_sums["loss_sum"] / tf.maximum(batch_sums["weight"], 1.0)

    def eval_results(self, sums, num_batches):
        results = {"eval_loss": safe_div(sums["loss_sum"], sums["weight"]),
                   "loss": safe_div(sums["batch_loss_sum"], num_batches)}
        if not self.is_regression and not self.multi_label:
            results["eval_accuracy"] = safe_div(sums["correct"], sums["weight"])
        return results

    # Regression's correlations, multi-label's F1s and documents' metrics need every
    # prediction, not sums.
    @property
    def needs_eval_predictions(self):
        return self.is_regression or self.multi_label or self.per_document

    @property
    def default_best_metric(self):
        if self.multi_label:
            return "micro_f1"
        return "pearson" if self.is_regression else "eval_accuracy"

    def eval_results_from_predictions(self, outputs):
        """`pearson` and `spearman` of the predictions against the labels (regression);
        multi-label: `multi_label_metrics` of the probabilities at the threshold.

        Window records (`outputs` with `document_index`): every metric per
        document (`document_outputs`): `eval_loss` and `loss` (the mean
        per-document loss), `eval_accuracy` (single-label), then the above.
        """
        results = {}
        if text_windows.DOCUMENT_INDEX in outputs:
            outputs = self.document_outputs(outputs)
            per_example_loss, predictions = self._example_losses(
                tf.constant(outputs["logits"]), tf.constant(outputs["label_ids"]))
            results["eval_loss"] = results["loss"] = float(np.mean(per_example_loss.numpy()))
            if not self.is_regression and not self.multi_label:
                results["eval_accuracy"] = float(np.mean(
                    predictions.numpy() == outputs["label_ids"].astype(np.int32)))
        if self.multi_label:
            results.update(multi_label_metrics(outputs["probabilities"], outputs["label_ids"],
                                               self.threshold))
        elif self.is_regression:
            results.update({"pearson": pearson(outputs["score"], outputs["label_ids"]),
                            "spearman": spearman(outputs["score"], outputs["label_ids"])})
        return results

    def document_outputs(self, outputs):
        """One row per document from `predict_step`'s rows of its windows.

        A document's `logits` are the mean of its windows' logits; the other
        outputs follow from them as `predict_step`'s do (`head_outputs`);
        its `label_ids` are its windows'.

        Args:
          outputs: dict of numpy arrays [num_windows, ...] with
            `document_index` (each document 0..N-1 has a window).

        Returns:
          dict of numpy arrays [num_documents, ...], in document order.
        """
        index = np.asarray(outputs[text_windows.DOCUMENT_INDEX])
        documents, first, counts = np.unique(index, return_index=True, return_counts=True)
        logits = np.asarray(outputs["logits"], np.float32)  # [W, num_labels]
        sums = np.zeros((len(documents),) + logits.shape[1:], np.float32)
        np.add.at(sums, np.searchsorted(documents, index), logits)
        mean = sums / counts[:, None].astype(np.float32)  # [D, num_labels]
        result = {k: v.numpy() for k, v in self._head_outputs(tf.constant(mean)).items()}
        if "label_ids" in outputs:
            result["label_ids"] = np.asarray(outputs["label_ids"])[first]
        return result

    def predict_step(self, model, features):
        outputs = self._head_outputs(model(features, training=False)["logits"])
        outputs.update(passed_through(features, self.label_keys + (text_windows.DOCUMENT_INDEX,)))
        if self.multi_label and "label_ids" in features:
            # Multi-hot rows [B, num_labels], not flattened.
            outputs["label_ids"] = tf.reshape(features["label_ids"], [-1, self.num_labels])
        return outputs

    def _head_outputs(self, logits):
        """`logits` [B, num_labels] and what follows from them (`head_outputs`)."""
        outputs = {"logits": logits}
        outputs.update(head_outputs(logits, self.is_regression, self.multi_label,
                                    self.threshold))
        return outputs


def head_outputs(logits, is_regression=False, multi_label=False, threshold=0.5):
    """What a classifier answers from its logits, under the names every form of it uses.

    `ClassifierTask.predict_step` (Keras's `predict`, run_classifier's
    predictions), the SavedModel's signatures and the int8 export all call
    this, so each names an output the same:

      single-label: `probabilities` float32 [B, num_labels], the softmax;
      regression: `score` float32 [B], the one logit;
      multi-label: `probabilities` float32 [B, num_labels], a sigmoid per
        label, and `predictions` int32 [B, num_labels], 1 where the
        probability is at least `threshold`.

    Args:
      logits: float Tensor [B, num_labels] (any float dtype: read as float32).
      is_regression, multi_label, threshold: the classifier's.

    Returns:
      dict of float32 / int32 Tensors (no strings: the exports add `label`).
    """
    scores = tf.cast(logits, tf.float32)  # [B, num_labels]
    if is_regression:
        return {"score": tf.reshape(scores, [-1])}  # [B]
    if multi_label:
        probabilities = tf.sigmoid(scores)  # [B, num_labels]
        return {"probabilities": probabilities,
                "predictions": tf.cast(probabilities >= threshold, tf.int32)}
    return {"probabilities": tf.nn.softmax(scores, axis=-1)}  # [B, num_labels]
