"""Sentence(-pair) classification as a `Task` (original: `run_classifier.model_fn`)."""

import numpy as np
import tensorflow as tf

from bert_tf.classifier import BertClassifier
from bert_tf.classifier import classification_example_loss
from bert_tf.classifier import regression_example_loss
from bert_tf.tasks.base import Task
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import real_example_weights
from bert_tf.tasks.base import safe_div


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


def _label_ids(features):
    """int32 [batch_size]: the class labels (int64 ones too, e.g. from numpy through Keras)."""
    return tf.reshape(tf.cast(features["label_ids"], tf.int32), [-1])


class ClassifierTask(Task):
    """Classification (or regression) on the pooled output.

    Training: the original's `loss = mean(per_example_loss)` over the global
    batch. Evaluation, weighted by `is_real_example` as the original's
    `metric_fn`: `eval_accuracy`, `eval_loss`, and the Estimator's `loss` (the
    mean over batches of each batch's mean loss over its real examples, as
    the original computed it on CPU/GPU, where the last batch was smaller).
    Regression (new, STS-B): `eval_loss` (mean squared error), `pearson`,
    `spearman`. Predictions: `probabilities` [num_labels] (regression:
    `predictions`).

    Args:
      config: `BertConfig`.
      num_labels: int (ignored for regression, which has one output).
      is_regression: bool.
    """

    name = "classifier"

    def __init__(self, config, num_labels, is_regression=False):
        self.config = config
        self.is_regression = bool(is_regression)
        self.num_labels = 1 if self.is_regression else int(num_labels)
        if self.is_regression:
            self.metric_sum_keys = ("squared_error", "examples")
            self.eval_sum_keys = ("weight", "loss_sum")
        else:
            self.metric_sum_keys = ("correct", "examples")
            self.eval_sum_keys = ("weight", "loss_sum", "correct")

    def build_model(self):
        return BertClassifier(self.config, self.num_labels, is_regression=self.is_regression)

    def _example_losses(self, logits, label_ids):
        """(per_example_loss, predictions): class ids, or scores for regression."""
        if self.is_regression:
            return regression_example_loss(logits, label_ids)
        per_example_loss, _, log_probs = classification_example_loss(logits, label_ids)
        return per_example_loss, tf.argmax(log_probs, axis=-1, output_type=tf.int32)

    def loss_normalizers(self, features):
        return {"examples": num_examples(features)}

    def compute_loss(self, model, features, normalizers, training=True):
        logits = model(features, training=training)["logits"]
        per_example_loss, predictions = self._example_losses(logits, features["label_ids"])
        loss = tf.reduce_sum(per_example_loss) / normalizers["examples"]
        if self.is_regression:
            first = tf.reduce_sum(per_example_loss)
        else:
            first = tf.reduce_sum(tf.cast(tf.equal(predictions, _label_ids(features)),
                                          tf.float32))
        return loss, dict(zip(self.metric_sum_keys, (first, num_examples(features))))

    def train_metrics(self, sums):
        if self.is_regression:
            return {"mean_squared_error": safe_div(sums["squared_error"], sums["examples"])}
        return {"accuracy": safe_div(sums["correct"], sums["examples"])}

    def eval_step(self, model, features):
        logits = model(features, training=False)["logits"]
        per_example_loss, predictions = self._example_losses(logits, features["label_ids"])
        weights = real_example_weights(features)
        sums = {"weight": tf.reduce_sum(weights),
                "loss_sum": tf.reduce_sum(weights * per_example_loss)}
        if not self.is_regression:
            sums["correct"] = tf.reduce_sum(
                weights * tf.cast(tf.equal(predictions, _label_ids(features)), tf.float32))
        return sums

    def eval_batch_loss(self, batch_sums):
        return batch_sums["loss_sum"] / tf.maximum(batch_sums["weight"], 1.0)

    def eval_results(self, sums, num_batches):
        results = {"eval_loss": safe_div(sums["loss_sum"], sums["weight"]),
                   "loss": safe_div(sums["batch_loss_sum"], num_batches)}
        if not self.is_regression:
            results["eval_accuracy"] = safe_div(sums["correct"], sums["weight"])
        return results

    # Regression's correlations need every prediction, not sums.
    @property
    def needs_eval_predictions(self):
        return self.is_regression

    def eval_results_from_predictions(self, outputs):
        """`pearson` and `spearman` of the predictions against the labels (regression)."""
        return {"pearson": pearson(outputs["predictions"], outputs["label_ids"]),
                "spearman": spearman(outputs["predictions"], outputs["label_ids"])}

    def predict_step(self, model, features):
        logits = model(features, training=False)["logits"]
        outputs = {}
        if "label_ids" in features:
            outputs["label_ids"] = tf.reshape(features["label_ids"], [-1])
        if self.is_regression:
            outputs["predictions"] = tf.reshape(logits, [-1])
        else:
            outputs["probabilities"] = tf.nn.softmax(logits, axis=-1)
        return outputs
