"""BERT for SQuAD: the span model, its loss and its task (original: `run_squad.py`).

`BertSquad` is `bert` plus `cls/squad/output_weights [2, H]` and
`cls/squad/output_bias [2]` (original: `create_model`). The loss re-states
the original's (`model_fn`):

  start_loss = mean(-log softmax(start_logits)[start_positions])
  end_loss   = mean(-log softmax(end_logits)[end_positions])
  total_loss = (start_loss + end_loss) / 2

`SquadTask` packages it for `bert_tf.training.Trainer`, and `BertSquad` trains
with Keras's `compile` / `fit` and `predict`s (`bert_tf.tasks.task_model.TaskModel`,
the trainer's replica step).
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.heads import SquadHead
from bert_tf.tasks.base import Task
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import passed_through
from bert_tf.tasks.base import safe_div
from bert_tf.tasks.task_model import TaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSquad(TaskModel, keras.Model):
    """BERT with the SQuAD start/end head on the sequence output.

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length].
      training: Python bool; dropout only when True.
      head_mask, output_attentions: as `BertModel`'s; with
        `output_attentions=True` the dict also holds `attentions`.

    Returns:
      dict: `start_logits`, `end_logits` float32 [batch_size, seq_length].

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on the SQuAD training features (with `start_positions`,
    `end_positions`), or on `(x, y)` with `y` a dict of them; training logs
    `loss`, `start_accuracy`, `end_accuracy`. No `evaluate` (the original's
    run_squad has no eval mode: score `predict`'s logits with
    `bert_tf.tasks.squad.data.write_predictions` and `bert_tf.tasks.squad.data_evaluate`).
    `predict` returns `start_logits`, `end_logits` (and `unique_ids` when the
    features hold them).
    """

    task_name = "squad"
    hf_architecture = "BertForQuestionAnswering"
    fresh_head = True

    def __init__(self, config, name="bert_squad", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.bert = BertModel(config)
        self.cls = SquadHead(config.hidden_size, name="cls")
        self.build()

    def call(self, features, training=None, head_mask=None, output_attentions=False):
        _, outputs = self.backbone(features, training, head_mask=head_mask,
                                   output_attentions=output_attentions)
        start_logits, end_logits = self.cls(outputs["sequence_output"])
        return self._with_attentions(
            {"start_logits": start_logits, "end_logits": end_logits}, outputs)

    def make_task(self):
        return SquadTask(self.config)

    def get_config(self):
        config = super().get_config()
        config["config"] = self.config.to_dict()
        return config


def span_example_loss(logits, positions):
    """Per-example `-log softmax(logits)[position]`, float32 [batch_size]."""
    logits = tf.cast(logits, tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot_positions = tf.one_hot(tf.reshape(positions, [-1]), depth=tf.shape(logits)[-1],
                                   dtype=tf.float32)
    return -tf.reduce_sum(one_hot_positions * log_probs, axis=-1)


class SquadTask(Task):
    """Start/end span prediction. Training only and prediction, as the original (no eval mode).

    Training: `(mean start loss + mean end loss) / 2` over the global batch.
    Predictions: `start_logits`, `end_logits` [seq_length], and `unique_ids` when the
    features hold them.

    Args:
      config: `BertConfig`.
    """

    name = "squad"
    label_keys = ("start_positions", "end_positions")
    metric_sum_keys = ("start_correct", "end_correct", "examples")
    # The official SQuAD F1 of the predictions (the runs score them; no eval_step).
    default_best_metric = "f1"
    # The rows stay whole: the original's span loss is a softmax over every
    # position of the row, padding included, and its n-best answers are drawn
    # from the logits of every position; a cut would change both.
    skips_padding = False

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
        predictions = {"start_logits": outputs["start_logits"],
                       "end_logits": outputs["end_logits"]}
        predictions.update(passed_through(features, ("unique_ids",)))
        return predictions
