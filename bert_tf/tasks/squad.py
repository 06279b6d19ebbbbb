"""SQuAD span prediction as a `Task` (original: `run_squad.model_fn`)."""

import tensorflow as tf

from bert_tf.squad import BertSquad
from bert_tf.squad import span_example_loss
from bert_tf.tasks.base import Task
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import safe_div


class SquadTask(Task):
    """Start/end span prediction. Training only and prediction, as the original (no eval mode).

    Training: `(mean start loss + mean end loss) / 2` over the global batch.
    Predictions: `unique_ids`, `start_logits`, `end_logits` [seq_length].

    Args:
      config: `BertConfig`.
    """

    name = "squad"
    metric_sum_keys = ("start_correct", "end_correct", "examples")

    def __init__(self, config):
        self.config = config

    def build_model(self):
        return BertSquad(self.config)

    def loss_normalizers(self, features):
        return {"examples": num_examples(features)}

    def compute_loss(self, model, features, normalizers, training=True):
        outputs = model(features, training=training)
        start_loss = span_example_loss(outputs["start_logits"], features["start_positions"])
        end_loss = span_example_loss(outputs["end_logits"], features["end_positions"])
        loss = (tf.reduce_sum(start_loss) + tf.reduce_sum(end_loss)) / (
            2.0 * normalizers["examples"])

        def correct(logits, positions):
            predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return tf.reduce_sum(tf.cast(
                tf.equal(predicted, tf.reshape(tf.cast(positions, tf.int32), [-1])), tf.float32))

        return loss, {"start_correct": correct(outputs["start_logits"], features["start_positions"]),
                      "end_correct": correct(outputs["end_logits"], features["end_positions"]),
                      "examples": num_examples(features)}

    def train_metrics(self, sums):
        return {"start_accuracy": safe_div(sums["start_correct"], sums["examples"]),
                "end_accuracy": safe_div(sums["end_correct"], sums["examples"])}

    def predict_step(self, model, features):
        outputs = model(features, training=False)
        return {"unique_ids": tf.reshape(features["unique_ids"], [-1]),
                "start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}
