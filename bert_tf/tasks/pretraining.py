"""Masked LM + next sentence pre-training as a `Task` (original: `run_pretraining.model_fn`)."""

import tensorflow as tf

from bert_tf.pretraining import MASKED_LM_DENOMINATOR_EPSILON
from bert_tf.pretraining import BertPretrainer
from bert_tf.pretraining import masked_lm_example_loss
from bert_tf.pretraining import next_sentence_example_loss
from bert_tf.tasks.base import Task
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import safe_div


def _eval_sums(outputs, features):
    """Per-batch sums behind the losses and the original's `metric_fn` (float32 scalars)."""
    mlm_example_loss, mlm_log_probs = masked_lm_example_loss(
        outputs["masked_lm_logits"], features["masked_lm_ids"])
    nsp_example_loss, nsp_log_probs = next_sentence_example_loss(
        outputs["next_sentence_logits"], features["next_sentence_labels"])
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    mlm_ids = tf.reshape(tf.cast(features["masked_lm_ids"], tf.int32), [-1])
    mlm_predictions = tf.argmax(mlm_log_probs, axis=-1, output_type=tf.int32)
    nsp_labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    nsp_predictions = tf.argmax(nsp_log_probs, axis=-1, output_type=tf.int32)
    return {
        "masked_lm_weight": tf.reduce_sum(weights),
        "masked_lm_loss_sum": tf.reduce_sum(weights * mlm_example_loss),
        "masked_lm_correct": tf.reduce_sum(
            weights * tf.cast(tf.equal(mlm_predictions, mlm_ids), tf.float32)),
        "next_sentence_count": tf.cast(tf.size(nsp_labels), tf.float32),
        "next_sentence_loss_sum": tf.reduce_sum(nsp_example_loss),
        "next_sentence_correct": tf.reduce_sum(
            tf.cast(tf.equal(nsp_predictions, nsp_labels), tf.float32)),
    }


class PretrainingTask(Task):
    """The masked-LM + next-sentence objective.

    On one device `compute_loss` is exactly the original's `total_loss`
    (masked_lm_loss + next_sentence_loss); split over replicas and
    micro-batches each part divides by the normalizers of the whole global
    batch.

    Args:
      config: `BertConfig`.
      max_seq_length: int, `--max_seq_length` (checked against the records).
      max_predictions_per_seq: int, `--max_predictions_per_seq`.
    """

    name = "pretraining"
    metric_sum_keys = ("masked_lm_correct", "masked_lm_weight", "next_sentence_correct",
                       "next_sentence_count")
    eval_sum_keys = ("masked_lm_weight", "masked_lm_loss_sum", "masked_lm_correct",
                     "next_sentence_count", "next_sentence_loss_sum", "next_sentence_correct")

    def __init__(self, config, max_seq_length=None, max_predictions_per_seq=None):
        self.config = config
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq

    def build_model(self):
        return BertPretrainer(self.config)

    # Port note: on one device this is exactly the original's loss. On several
    # replicas the original (TPU, CrossShardOptimizer) averaged per-core losses,
    # each with its own masked-LM denominator; here every replica divides by the
    # global batch's denominator, so N replicas (and N accumulation
    # micro-batches) give the single-device original's update on the whole batch.
    def loss_normalizers(self, features):
        """{"masked_lm_weight": sum(masked_lm_weights), "examples": batch_size}."""
        return {
            "masked_lm_weight": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            "examples": num_examples(features),
        }

    def compute_loss(self, model, features, normalizers, training=True):
        sums = _eval_sums(model(features, training=training), features)
        masked_lm_loss = sums["masked_lm_loss_sum"] / (
            normalizers["masked_lm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
        next_sentence_loss = sums["next_sentence_loss_sum"] / normalizers["examples"]
        return masked_lm_loss + next_sentence_loss, {k: sums[k] for k in self.metric_sum_keys}

    def train_metrics(self, sums):
        return {
            "masked_lm_accuracy": safe_div(sums["masked_lm_correct"], sums["masked_lm_weight"]),
            "next_sentence_accuracy": safe_div(sums["next_sentence_correct"],
                                               sums["next_sentence_count"]),
        }

    def eval_step(self, model, features):
        return _eval_sums(model(features, training=False), features)

    def eval_results(self, sums, num_batches):
        """The original's eval metrics from summed values.

        `tf.metrics.accuracy(weights=w)` = sum(w * correct) / sum(w);
        `tf.metrics.mean(values, weights=w)` = sum(w * values) / sum(w);
        the Estimator's `loss` = mean over batches of each batch's total_loss.
        """
        return {
            "masked_lm_accuracy": safe_div(sums["masked_lm_correct"], sums["masked_lm_weight"]),
            "masked_lm_loss": safe_div(sums["masked_lm_loss_sum"], sums["masked_lm_weight"]),
            "next_sentence_accuracy": safe_div(sums["next_sentence_correct"],
                                               sums["next_sentence_count"]),
            "next_sentence_loss": safe_div(sums["next_sentence_loss_sum"],
                                           sums["next_sentence_count"]),
            "loss": safe_div(sums["batch_loss_sum"], num_batches),
        }

    def eval_batch_loss(self, batch_sums):
        return (batch_sums["masked_lm_loss_sum"]
                / (batch_sums["masked_lm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
                + batch_sums["next_sentence_loss_sum"] / batch_sums["next_sentence_count"])

    def predict_step(self, model, features):
        outputs = model(features, training=False)
        return {"masked_lm_log_probs": tf.nn.log_softmax(outputs["masked_lm_logits"], axis=-1),
                "next_sentence_log_probs": tf.nn.log_softmax(outputs["next_sentence_logits"],
                                                             axis=-1)}
