"""BERT pre-training: the model, its losses and metrics (original: `run_pretraining.model_fn`).

`BertPretrainer` is `bert` (the backbone) plus `cls` (the masked-LM and
next-sentence heads), so its variables carry exactly the names of the original
pre-training graph (`bert/...`, `cls/predictions/...`, `cls/seq_relationship/...`).

The losses re-state the original's maths:

  masked LM:      loss = sum(w * l) / (sum(w) + 1e-5), l = -log p(masked_lm_ids)
  next sentence:  loss = mean(-log p(next_sentence_labels))
  total_loss = masked LM loss + next sentence loss (no weighting)

`bert_tf.tasks.PretrainingTask` packages them for `bert_tf.training.Trainer`,
and for Keras's `compile` / `fit` / `evaluate` / `predict` on `BertPretrainer`
itself (`bert_tf.training.keras_model.TaskModel`, the trainer's replica step).
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.heads import BertPretrainingHeads
from bert_tf.modeling import BertModel
from bert_tf.training.keras_model import TaskModel

# The original's `+ 1e-5` in the masked-LM loss denominator.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(TaskModel, keras.Model):
    """BERT with the pre-training heads (original: `BertModel` + `get_*_output` in `model_fn`).

    Checkpoint variables: every `bert/...` variable of `BertModel`, plus
    cls/predictions/transform/dense/{kernel [D, D], bias [D]},
    cls/predictions/transform/LayerNorm/{beta, gamma} [D],
    cls/predictions/output_bias [vocab_size],
    cls/seq_relationship/{output_weights [2, D], output_bias [2]}.
    The weights exist after the constructor, so a checkpoint loads before any call.

    Args:
      config: `BertConfig`.
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`, `segment_ids`
        [batch_size, seq_length] and `masked_lm_positions`
        [batch_size, max_predictions_per_seq].
      training: Python bool; dropout only when True (the original's `is_training`).

    Returns:
      dict: `masked_lm_logits` float32 [batch_size, max_predictions_per_seq,
      vocab_size], `next_sentence_logits` float32 [batch_size, 2],
      `sequence_output`, `pooled_output` (the backbone's).

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on the pre-training records' features
    (`bert_tf.data.input_pipeline`), or on `(x, y)` with `y` a dict of
    `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`. The loss is
    the original's total_loss (masked LM with denominator sum(w) + 1e-5, plus
    the next-sentence mean), the normalizers summed over replicas; training
    logs `loss`, `masked_lm_accuracy`, `next_sentence_accuracy`. `evaluate`
    returns the original's `masked_lm_accuracy`, `masked_lm_loss`,
    `next_sentence_accuracy`, `next_sentence_loss` and the Estimator's
    `loss`. `predict` returns `masked_lm_logits` and `next_sentence_logits`.
    """

    def __init__(self, config, name="bert_pretrainer", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPretrainingHeads(config)
        self.build()

    def build(self, input_shape=None):
        # Every weight is made by the constructors (a checkpoint loads before any call).
        self.built = True

    def call(self, features, training=None):
        features = self.model_inputs(features)
        outputs = self.bert(features["input_ids"], input_mask=features["input_mask"],
                            token_type_ids=features["segment_ids"], training=training)
        masked_lm_logits, next_sentence_logits = self.cls(
            outputs["sequence_output"], outputs["pooled_output"],
            features["masked_lm_positions"], self.bert.embedding_table)
        return {
            "masked_lm_logits": masked_lm_logits,
            "next_sentence_logits": next_sentence_logits,
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
        }

    def make_task(self):
        from bert_tf.tasks.pretraining import PretrainingTask
        return PretrainingTask(self.config)

    def task_label_keys(self):
        return ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")

    def prediction_outputs(self, outputs, features):
        return {"masked_lm_logits": outputs["masked_lm_logits"],
                "next_sentence_logits": outputs["next_sentence_logits"]}

    def get_config(self):
        config = super().get_config()
        config["config"] = self.config.to_dict()
        return config


def masked_lm_example_loss(masked_lm_logits, masked_lm_ids):
    """Per-prediction masked-LM loss and log-probs (original: inside `get_masked_lm_output`).

    Args:
      masked_lm_logits: float32 Tensor [batch_size, max_predictions_per_seq, vocab_size].
      masked_lm_ids: int32 Tensor [batch_size, max_predictions_per_seq].

    Returns:
      (per_example_loss float32 [batch_size * max_predictions_per_seq],
       log_probs float32 [batch_size * max_predictions_per_seq, vocab_size]),
      flattened as the original's.
    """
    vocab_size = masked_lm_logits.shape[-1]
    logits = tf.reshape(tf.cast(masked_lm_logits, tf.float32), [-1, vocab_size])
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    label_ids = tf.reshape(masked_lm_ids, [-1])
    one_hot_labels = tf.one_hot(label_ids, depth=vocab_size, dtype=tf.float32)
    # The `positions` tensor might be zero-padded (if the sequence is too
    # short to have the maximum number of predictions). The `label_weights`
    # tensor has a value of 1.0 for every real prediction and 0.0 for the
    # padding predictions.
    per_example_loss = -tf.reduce_sum(log_probs * one_hot_labels, axis=[-1])
    return per_example_loss, log_probs


def next_sentence_example_loss(next_sentence_logits, next_sentence_labels):
    """Per-example next-sentence loss and log-probs (original: in `get_next_sentence_output`).

    Simple binary classification. Note that 0 is "next sentence" and 1 is
    "random sentence".

    Args:
      next_sentence_logits: float32 Tensor [batch_size, 2].
      next_sentence_labels: int32 Tensor [batch_size, 1] (or [batch_size]).

    Returns:
      (per_example_loss float32 [batch_size], log_probs float32 [batch_size, 2]).
    """
    log_probs = tf.nn.log_softmax(tf.cast(next_sentence_logits, tf.float32), axis=-1)
    labels = tf.reshape(next_sentence_labels, [-1])
    one_hot_labels = tf.one_hot(labels, depth=2, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
    return per_example_loss, log_probs


def get_masked_lm_output(masked_lm_logits, masked_lm_ids, masked_lm_weights):
    """The original's masked-LM loss (original: `get_masked_lm_output`, after the head).

    The head itself (gather, transform, tied output embedding, bias) is
    `bert_tf.heads.MaskedLMHead`; this is the loss on its logits.

    Args:
      masked_lm_logits: float32 Tensor [batch_size, max_predictions_per_seq, vocab_size].
      masked_lm_ids: int32 Tensor [batch_size, max_predictions_per_seq].
      masked_lm_weights: float32 Tensor [batch_size, max_predictions_per_seq];
        1.0 for real predictions, 0.0 for padding.

    Returns:
      (loss float32 scalar, per_example_loss [batch_size * max_predictions_per_seq],
       log_probs [batch_size * max_predictions_per_seq, vocab_size]), with
      loss = sum(w * per_example_loss) / (sum(w) + 1e-5).
    """
    per_example_loss, log_probs = masked_lm_example_loss(masked_lm_logits, masked_lm_ids)
    label_weights = tf.reshape(tf.cast(masked_lm_weights, tf.float32), [-1])
    numerator = tf.reduce_sum(label_weights * per_example_loss)
    denominator = tf.reduce_sum(label_weights) + MASKED_LM_DENOMINATOR_EPSILON
    loss = numerator / denominator
    return loss, per_example_loss, log_probs


def get_next_sentence_output(next_sentence_logits, next_sentence_labels):
    """The original's next-sentence loss (original: `get_next_sentence_output`, after the head).

    Args:
      next_sentence_logits: float32 Tensor [batch_size, 2].
      next_sentence_labels: int32 Tensor [batch_size, 1].

    Returns:
      (loss float32 scalar = mean(per_example_loss), per_example_loss [batch_size],
       log_probs [batch_size, 2]).
    """
    per_example_loss, log_probs = next_sentence_example_loss(next_sentence_logits,
                                                             next_sentence_labels)
    loss = tf.reduce_mean(per_example_loss)
    return loss, per_example_loss, log_probs
