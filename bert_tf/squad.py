"""BERT for SQuAD: the span model and its loss (original: `run_squad.create_model` / `model_fn`).

`BertSquad` is `bert` plus `cls/squad/output_weights [2, H]` and
`cls/squad/output_bias [2]`. The loss re-states the original's:

  start_loss = mean(-log softmax(start_logits)[start_positions])
  end_loss   = mean(-log softmax(end_logits)[end_positions])
  total_loss = (start_loss + end_loss) / 2
"""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.heads import SquadHead
from bert_tf.modeling import BertModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSquad(keras.Model):
    """BERT with the SQuAD start/end head on the sequence output.

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length].
      training: Python bool; dropout only when True.

    Returns:
      dict: `start_logits`, `end_logits` float32 [batch_size, seq_length].
    """

    def __init__(self, config, name="bert_squad", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.bert = BertModel(config)
        self.cls = SquadHead(config.hidden_size, name="cls")

    def call(self, features, training=None):
        outputs = self.bert(features["input_ids"], input_mask=features["input_mask"],
                            token_type_ids=features["segment_ids"], training=training)
        start_logits, end_logits = self.cls(outputs["sequence_output"])
        return {"start_logits": start_logits, "end_logits": end_logits}

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(BertConfig.from_dict(config["config"]), name=config.get("name", "bert_squad"))


def span_example_loss(logits, positions):
    """Per-example `-log softmax(logits)[position]`, float32 [batch_size]."""
    logits = tf.cast(logits, tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot_positions = tf.one_hot(tf.reshape(positions, [-1]), depth=tf.shape(logits)[-1],
                                   dtype=tf.float32)
    return -tf.reduce_sum(one_hot_positions * log_probs, axis=-1)
