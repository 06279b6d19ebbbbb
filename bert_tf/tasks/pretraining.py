"""BERT pre-training: the model, its losses and its task (original: `run_pretraining.py`).

`BertPretrainer` is `bert` (the backbone) plus `cls` (the masked-LM and
next-sentence heads), so its variables carry exactly the names of the original
pre-training graph (`bert/...`, `cls/predictions/...`, `cls/seq_relationship/...`).

The losses re-state the original's maths:

  masked LM:      loss = sum(w * l) / (sum(w) + 1e-5), l = -log p(masked_lm_ids)
  next sentence:  loss = mean(-log p(next_sentence_labels))
  total_loss = masked LM loss + next sentence loss (no weighting)

`PretrainingTask` packages them for `bert_tf.training.Trainer` (original:
`model_fn`), and for Keras's `compile` / `fit` / `evaluate` / `predict` on
`BertPretrainer` itself (`bert_tf.tasks.task_model.TaskModel`, the trainer's
replica step).
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.heads import BertPretrainingHeads
from bert_tf.modeling.layers.embeddings import replace_weight
from bert_tf.tasks.base import Task
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import safe_div
from bert_tf.tasks.task_model import TaskModel

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
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.modeling.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`, `segment_ids`
        [batch_size, seq_length] and `masked_lm_positions`
        [batch_size, max_predictions_per_seq].
      training: Python bool; dropout only when True (the original's `is_training`).
      head_mask, output_attentions: as `BertModel`'s; with
        `output_attentions=True` the dict also holds `attentions`.

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

    def call(self, features, training=None, head_mask=None, output_attentions=False):
        features, outputs = self.backbone(features, training, head_mask=head_mask,
                                          output_attentions=output_attentions)
        masked_lm_logits, next_sentence_logits = self.cls(
            outputs["sequence_output"], outputs["pooled_output"],
            features["masked_lm_positions"], self.bert.embedding_table)
        return self._with_attentions({
            "masked_lm_logits": masked_lm_logits,
            "next_sentence_logits": next_sentence_logits,
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
        }, outputs)

    def make_task(self):
        return PretrainingTask(self.config)

    def resize_token_embeddings(self, new_vocab_size):
        """`BertModel.resize_token_embeddings`, and the masked-LM head's output bias with it.

        `cls/predictions/output_bias` [vocab_size] keeps its first min(old, new)
        entries; new entries are zeros (as the original initializes it). Resize
        before `compile`. Returns the new `word_embeddings` variable.
        """
        table = self.bert.resize_token_embeddings(new_vocab_size)
        head = self.cls.masked_lm
        old = head.output_bias
        if new_vocab_size <= old.shape[0]:
            bias = old[:new_vocab_size]
        else:
            bias = tf.concat([tf.convert_to_tensor(old),
                              tf.zeros([new_vocab_size - old.shape[0]], old.dtype)], axis=0)
        replace_weight(head, "output_bias", bias)
        head.vocab_size = new_vocab_size
        for attr in ("train_function", "test_function", "predict_function"):
            if getattr(self, attr, None) is not None:
                setattr(self, attr, None)
        return table

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
    `bert_tf.modeling.heads.MaskedLMHead`; this is the loss on its logits.

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
    label_keys = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
    metric_sum_keys = ("masked_lm_correct", "masked_lm_weight", "next_sentence_correct",
                       "next_sentence_count")
    eval_sum_keys = ("masked_lm_weight", "masked_lm_loss_sum", "masked_lm_correct",
                     "next_sentence_count", "next_sentence_loss_sum", "next_sentence_correct")
    default_best_metric = "masked_lm_accuracy"

    def __init__(self, config, max_seq_length=None, max_predictions_per_seq=None):
        super().__init__(config)
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
        return {"masked_lm_logits": outputs["masked_lm_logits"],
                "next_sentence_logits": outputs["next_sentence_logits"]}
