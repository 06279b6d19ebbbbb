"""BERT pre-training: the model, its losses and metrics (original: `run_pretraining.model_fn`).

`BertPretrainer` is `bert` (the backbone) plus `cls` (the masked-LM and
next-sentence heads), so its variables carry exactly the names of the original
pre-training graph (`bert/...`, `cls/predictions/...`, `cls/seq_relationship/...`).

The losses re-state the original's maths:

  masked LM:      loss = sum(w * l) / (sum(w) + 1e-5), l = -log p(masked_lm_ids)
  next sentence:  loss = mean(-log p(next_sentence_labels))
  total_loss = masked LM loss + next sentence loss (no weighting)

`PretrainingTask` packages them for `bert_tf.training.Trainer`: on one device
it computes exactly the original's `total_loss`; split over replicas (and
over gradient-accumulation micro-batches) each part divides by the
normalizers of the WHOLE global batch, so the summed gradients are those of
the original's loss on that batch.
"""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.errors import UserError
from bert_tf.heads import BertPretrainingHeads
from bert_tf.modeling import BertModel

# The original's `+ 1e-5` in the masked-LM loss denominator.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5

# Feature keys of the pre-training TFRecords (original `input_fn_builder`).
FEATURE_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(keras.Model):
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
    """

    def __init__(self, config, name="bert_pretrainer", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPretrainingHeads(config)

    def call(self, features, training=None):
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

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(BertConfig.from_dict(config["config"]),
                   name=config.get("name", "bert_pretrainer"))


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


class PretrainingTask(object):
    """The masked-LM + next-sentence objective, for `bert_tf.training.Trainer`.

    A task tells the trainer how to build the model and how to turn a
    (per-replica, per-micro-batch) batch into its share of the global loss.

    Args:
      config: `BertConfig`.
      max_seq_length: int, `--max_seq_length` (checked against the records).
      max_predictions_per_seq: int, `--max_predictions_per_seq`.
    """

    name = "pretraining"
    # Keys of the sums `compute_loss` and `eval_step` return.
    metric_sum_keys = ("masked_lm_correct", "masked_lm_weight", "next_sentence_correct",
                       "next_sentence_count")
    eval_sum_keys = ("masked_lm_weight", "masked_lm_loss_sum", "masked_lm_correct",
                     "next_sentence_count", "next_sentence_loss_sum", "next_sentence_correct")

    def __init__(self, config, max_seq_length=None, max_predictions_per_seq=None):
        self.config = config
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq

    def build_model(self):
        """A new `BertPretrainer` (the trainer calls this under the strategy's scope)."""
        return BertPretrainer(self.config)

    # Port note: on one device this is exactly the original's loss. On several
    # replicas the original (TPU, CrossShardOptimizer) averaged per-core losses,
    # each with its own masked-LM denominator; here every replica divides by the
    # global batch's denominator, so N replicas (and N accumulation
    # micro-batches) give the single-device original's update on the whole batch.
    def loss_normalizers(self, features):
        """Local (this replica / micro-batch) sums the global loss divides by.

        Returns:
          {"masked_lm_weight": sum(masked_lm_weights), "examples": batch_size}.
        """
        return {
            "masked_lm_weight": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32),
        }

    def compute_loss(self, model, features, normalizers, training=True):
        """This batch's share of the original's `total_loss` on the global batch.

        Args:
          model: the `BertPretrainer`.
          features: dict of per-replica (micro-)batch Tensors.
          normalizers: `loss_normalizers` summed over the whole global batch.
          training: bool, dropout on.

        Returns:
          (loss float32 scalar, metric sums dict). On a single device with the
          whole batch, loss == the original's masked_lm_loss + next_sentence_loss.
        """
        sums = _eval_sums(model(features, training=training), features)
        masked_lm_loss = sums["masked_lm_loss_sum"] / (
            normalizers["masked_lm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
        next_sentence_loss = sums["next_sentence_loss_sum"] / normalizers["examples"]
        loss = masked_lm_loss + next_sentence_loss
        metrics = {k: sums[k] for k in self.metric_sum_keys}
        return loss, metrics

    def train_metrics(self, sums):
        """Host-side training summaries from summed metric values."""
        return {
            "masked_lm_accuracy": _safe_div(sums["masked_lm_correct"], sums["masked_lm_weight"]),
            "next_sentence_accuracy": _safe_div(sums["next_sentence_correct"],
                                                sums["next_sentence_count"]),
        }

    def eval_step(self, model, features):
        """Per-replica sums of one eval batch (the original's `metric_fn` inputs).

        Returns:
          dict of float32 scalars; the trainer sums them over replicas and batches.
        """
        outputs = model(features, training=False)
        return _eval_sums(outputs, features)

    def eval_results(self, sums, num_batches):
        """The original's eval metrics from summed values.

        `tf.metrics.accuracy(weights=w)` = sum(w * correct) / sum(w);
        `tf.metrics.mean(values, weights=w)` = sum(w * values) / sum(w);
        the Estimator's `loss` = mean over batches of each batch's total_loss
        (see `eval_batch_loss`).

        Returns:
          dict with masked_lm_accuracy, masked_lm_loss, next_sentence_accuracy,
          next_sentence_loss, loss (floats).
        """
        return {
            "masked_lm_accuracy": _safe_div(sums["masked_lm_correct"], sums["masked_lm_weight"]),
            "masked_lm_loss": _safe_div(sums["masked_lm_loss_sum"], sums["masked_lm_weight"]),
            "next_sentence_accuracy": _safe_div(sums["next_sentence_correct"],
                                                sums["next_sentence_count"]),
            "next_sentence_loss": _safe_div(sums["next_sentence_loss_sum"],
                                            sums["next_sentence_count"]),
            "loss": _safe_div(sums["batch_loss_sum"], num_batches),
        }

    @staticmethod
    def eval_batch_loss(batch_sums):
        """The original's `total_loss` of one global eval batch, from its summed values."""
        return (batch_sums["masked_lm_loss_sum"]
                / (batch_sums["masked_lm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
                + batch_sums["next_sentence_loss_sum"] / batch_sums["next_sentence_count"])


def _safe_div(numerator, denominator):
    numerator = float(numerator)
    denominator = float(denominator)
    return numerator / denominator if denominator else 0.0


def check_pretraining_records(input_files, config, max_seq_length, num_records=8):
    """Checks the ids in the first records of the first input file against the model.

    Port note: new. The original did not check; out-of-range ids failed deep
    in the graph on CPU and gave silent garbage or NaNs on GPU/TPU.

    `bert_tf.data.input_pipeline.check_first_records` checks the features and
    their lengths; this checks what only the model config knows: token ids
    below `vocab_size` (the original's README: a vocab that does not match the
    config gives "NaNs when training on GPU or TPU due to unchecked
    out-of-bounds access"), segment ids below `type_vocab_size`, masked
    positions inside the sequence, and `max_seq_length <= max_position_embeddings`.

    Args:
      input_files: list of TFRecord paths (already globbed).
      config: `BertConfig`.
      max_seq_length: the flag.
      num_records: how many records to check.

    Raises:
      UserError: one line naming the file, the feature and what is wrong.
    """
    if max_seq_length > config.max_position_embeddings:
        raise UserError(
            "--max_seq_length=%d is longer than max_position_embeddings=%d of bert_config_file"
            % (max_seq_length, config.max_position_embeddings))
    if not input_files:
        raise UserError("--input_file matches no file")
    path = input_files[0]
    try:
        records = list(tf.data.TFRecordDataset([path]).take(num_records).as_numpy_iterator())
    except tf.errors.OpError as e:
        raise UserError("--input_file %s is not a readable TFRecord file (%s)"
                        % (path, e.message.splitlines()[0] if e.message else type(e).__name__)
                        ) from None
    for record in records:
        try:
            features = tf.train.Example.FromString(record).features.feature
        except Exception:  # noqa: BLE001 (protobuf's DecodeError)
            raise UserError("--input_file %s: a record is not a tf.train.Example" % path) from None
        for key, limit, what in (("input_ids", config.vocab_size, "vocab_size"),
                                 ("masked_lm_ids", config.vocab_size, "vocab_size"),
                                 ("segment_ids", config.type_vocab_size, "type_vocab_size"),
                                 ("masked_lm_positions", max_seq_length, "--max_seq_length")):
            if key not in features:
                continue
            values = features[key].int64_list.value
            if values and (max(values) >= limit or min(values) < 0):
                bad = max(values) if max(values) >= limit else min(values)
                raise UserError(
                    "--input_file %s: feature %s holds %d, outside [0, %s=%d)%s"
                    % (path, key, bad, what, limit,
                       " of bert_config_file (data made with another vocab?)"
                       if what != "--max_seq_length" else ""))
