"""BERT for SQuAD: the span model and its loss (original: `run_squad.create_model` / `model_fn`).

`BertSquad` is `bert` plus `cls/squad/output_weights [2, H]` and
`cls/squad/output_bias [2]`. The loss re-states the original's:

  start_loss = mean(-log softmax(start_logits)[start_positions])
  end_loss   = mean(-log softmax(end_logits)[end_positions])
  total_loss = (start_loss + end_loss) / 2

`BertSquad` also trains with Keras's `compile` / `fit` and `predict`s
(`bert_tf.training.keras_model.TaskModel`, the trainer's replica step).
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.heads import SquadHead
from bert_tf.modeling import BertModel
from bert_tf.training.keras_model import TaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSquad(TaskModel, keras.Model):
    """BERT with the SQuAD start/end head on the sequence output.

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length].
      training: Python bool; dropout only when True.

    Returns:
      dict: `start_logits`, `end_logits` float32 [batch_size, seq_length].

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on the SQuAD training features (with `start_positions`,
    `end_positions`), or on `(x, y)` with `y` a dict of them; training logs
    `loss`, `start_accuracy`, `end_accuracy`. No `evaluate` (the original's
    run_squad has no eval mode: score `predict`'s logits with
    `bert_tf.data.squad_data.write_predictions` and `bert_tf.squad_evaluate`).
    `predict` returns `start_logits`, `end_logits` (and `unique_ids` when the
    features hold them).
    """

    def __init__(self, config, name="bert_squad", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.bert = BertModel(config)
        self.cls = SquadHead(config.hidden_size, name="cls")
        self.build()

    def build(self, input_shape=None):
        # Every weight is made by the constructors (a checkpoint loads before any call).
        self.built = True

    def call(self, features, training=None):
        features = self.model_inputs(features)
        outputs = self.bert(features["input_ids"], input_mask=features["input_mask"],
                            token_type_ids=features["segment_ids"], training=training)
        start_logits, end_logits = self.cls(outputs["sequence_output"])
        return {"start_logits": start_logits, "end_logits": end_logits}

    def make_task(self):
        from bert_tf.tasks.squad import SquadTask
        return SquadTask(self.config)

    def task_label_keys(self):
        return ("start_positions", "end_positions")

    def prediction_outputs(self, outputs, features):
        predictions = {"start_logits": outputs["start_logits"],
                       "end_logits": outputs["end_logits"]}
        if "unique_ids" in features:
            predictions["unique_ids"] = features["unique_ids"]
        return predictions

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
