"""BERT sentence(-pair) classification: the model and its loss (original: `run_classifier.create_model`).

`BertClassifier` is `bert` (the backbone) plus the unscoped `output_weights` /
`output_bias`, so its checkpoints carry exactly the original's names. The
loss re-states the original's maths:

  logits = dropout(pooled_output, 0.1) @ output_weights^T + output_bias
  per_example_loss = -log softmax(logits)[label]
  loss = mean(per_example_loss)

New: regression (STS-B), with one output and the squared error
`(logits[:, 0] - label)^2` as the per-example loss.
"""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.heads import ClassifierHead
from bert_tf.modeling import BertModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(keras.Model):
    """BERT with a classification (or regression) head on the pooled output.

    Checkpoint variables: every `bert/...` variable of `BertModel`, plus
    output_weights [num_labels, hidden_size] and output_bias [num_labels]
    (unscoped, as the original).

    Args:
      config: `BertConfig`.
      num_labels: int, the number of classes (1 for regression).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length].
      training: Python bool; dropout only when True.

    Returns:
      dict: `logits` float32 [batch_size, num_labels], `pooled_output`.
    """

    def __init__(self, config, num_labels, name="bert_classifier", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.num_labels = num_labels
        self.bert = BertModel(config)
        self.classifier = ClassifierHead(num_labels, config.hidden_size, name="classifier")

    def call(self, features, training=None):
        outputs = self.bert(features["input_ids"], input_mask=features["input_mask"],
                            token_type_ids=features["segment_ids"], training=training)
        logits = self.classifier(outputs["pooled_output"], training=training)
        return {"logits": logits, "pooled_output": outputs["pooled_output"]}

    def get_config(self):
        return {"config": self.config.to_dict(), "num_labels": self.num_labels,
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(BertConfig.from_dict(config["config"]), config["num_labels"],
                   name=config.get("name", "bert_classifier"))


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


def regression_example_loss(logits, labels):
    """(per_example_loss [batch_size], predictions [batch_size]): squared error (new)."""
    predictions = tf.reshape(tf.cast(logits, tf.float32), [-1])
    labels = tf.reshape(tf.cast(labels, tf.float32), [-1])
    return tf.square(predictions - labels), predictions
