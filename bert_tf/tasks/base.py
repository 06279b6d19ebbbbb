"""The task contract: what `bert_tf.training.Trainer` and Keras `fit` read from a task.

The original wrote one `model_fn` per script: build `BertModel` and a head,
compute the loss, and per mode a train op, eval metrics or predictions. A
`Task` says the same things to the trainer, which owns everything else
(strategy, loops, checkpoints, precision, summaries). A task is one module of
this package: its Keras model class (`TaskModel` + `keras.Model`, the model
and its head), its per-example losses, and its `Task` subclass; the head
layers are in `bert_tf/modeling/heads.py`, the feature spec in the task's
`data` module.

One direction: the model names its task (`model.task`, made by its
`make_task()`), and a task knows no model class: its steps are given the
model (`compute_loss(model, ...)`). The trainer takes a callable that builds
the model (`Trainer(strategy, lambda: BertClassifier(config, 2), ...)`) and
reads the task from it, as Keras's `fit` on the model does.

Everything the trainer, the runs and the models' Keras methods read from a
task is in this contract: `config`, `label_keys`, the loss
(`loss_normalizers`, `compute_loss`, `train_metrics`), evaluation
(`eval_step`, `eval_batch_loss`, `eval_results`, and
`eval_results_from_predictions` where a metric needs every prediction) and
the one prediction contract, `predict_step`: `Trainer.predict` and the
models' `predict` both return what it returns.

How a loss is split across replicas and accumulation micro-batches: the
trainer all-reduces `loss_normalizers(features)` (local sums, e.g. the number
of examples) over the whole global batch and passes the totals to
`compute_loss`, which divides its local sums by them. Summed over replicas
and micro-batches, the gradient is then exactly the original's on the
global batch, whatever the number of devices.

Evaluation works the same way with sums: `eval_step` returns per-replica
sums weighted by `is_real_example` (padding examples weigh 0), the trainer
adds them over replicas and batches, and `eval_results` turns them into the
original's metrics.

The same contract drives Keras: the models' `fit` / `evaluate` / `predict`
(`bert_tf.tasks.task_model.TaskModel`) run the trainer's replica step, keep
these sums in Keras metrics and return `predict_step`'s outputs.

No work on padding: for a task that reads no padding position
(`skips_padding`), the steps hand the loss, `eval_step` and `predict_step`
each batch cut after its longest row (`trim_padding`, which reads
`sequence_features`), with the encoder skipping the padding of the shorter
rows (`bert_tf.modeling.padding.padding_skipped`), and put `predict_step`'s
per-position outputs (`sequence_outputs`) back at the rows' length.
"""

import abc

import tensorflow as tf

from bert_tf.modeling import padding


class Task(abc.ABC):
    """What a training task tells the trainer.

    Args:
      config: the model's `BertConfig`.

    Attributes:
      config: the model's `BertConfig` (the runs check records against it).
      name: a short name for logs.
      label_keys: the label features the loss reads; Keras's `y` fills them
        (a bare `y` fills the only one, when there is one).
      metric_sum_keys: keys of the training metric sums `compute_loss` returns.
      eval_sum_keys: keys of the sums `eval_step` returns.
      default_best_metric: the evaluation result that ranks checkpoints
        while training (`bert_tf.training.dev_eval`) unless the user names
        another.
    """

    name = "task"
    label_keys = ()
    metric_sum_keys = ()
    eval_sum_keys = ()
    default_best_metric = "loss"
    # Whether no loss, metric or prediction reads a padding position (input_mask
    # 0): the steps then cut each batch after its longest row (`trim_padding`)
    # and the encoder skips the padding inside it too
    # (`bert_tf.modeling.padding.padding_skipped`).
    skips_padding = True
    # The features with a value per position [batch_size, seq_length], cut with
    # the batch (`trim_padding`).
    sequence_features = ("input_ids", "input_mask", "segment_ids")
    # `predict_step`'s outputs with a value per position [batch_size,
    # seq_length, ...]: name -> the value the positions cut off are given back
    # (`bert_tf.training.steps.predict_outputs`).
    sequence_outputs = {}

    def __init__(self, config):
        self.config = config
    # Whether `eval_results_from_predictions` adds metrics that need every
    # prediction (e.g. a rank correlation), not only sums.
    needs_eval_predictions = False

    def trim_padding(self, features):
        """`features` cut after the batch's last attended position: no work on padding.

        Every feature of `sequence_features` is cut to the batch's longest row
        (its last position whose `input_mask` is not 0), rounded up to a
        multiple of `padding.TRAINING_LENGTH_MULTIPLE` (at most the rows'
        length). The loss, the eval sums and the predictions at the kept
        positions are those of the whole rows (within float32 rounding): no
        loss reads a padding position, and no attention sees one. Features
        without `input_mask`, or with `inputs_embeds` / `position_ids` (given
        whole by the user), and the features of a task that reads padding
        (`skips_padding` False), are kept as they are.
        """
        if not self.skips_padding or features.get("input_mask") is None or any(
                features.get(key) is not None for key in ("inputs_embeds", "position_ids")):
            return features
        return padding.trim_padding(features, self.sequence_features,
                                    padding.TRAINING_LENGTH_MULTIPLE)

    @abc.abstractmethod
    def loss_normalizers(self, features):
        """{name: float32 scalar}: this (micro-)batch's share of the loss's denominators."""

    @abc.abstractmethod
    def compute_loss(self, model, features, normalizers, training=True):
        """This batch's share of the global batch's loss.

        Args:
          model: the task model (whose `task` this is).
          features: dict of per-replica (micro-)batch Tensors.
          normalizers: `loss_normalizers` summed over the whole global batch.
          training: bool, dropout on.

        Returns:
          (loss float32 scalar, {key: float32 scalar} for `metric_sum_keys`).
        """

    def train_metrics(self, sums):
        """Training metrics (logged, summarized) from summed metric values.

        `sums` holds Python floats (the trainer) or float32 Tensors (the
        models' Keras `fit`); divide with `safe_div`, which takes both.
        """
        return {}

    def eval_step(self, model, features):
        """{key: float32 scalar} for `eval_sum_keys`: one replica's eval sums."""
        raise NotImplementedError("task %s has no evaluation" % self.name)

    def eval_batch_loss(self, batch_sums):
        """The loss of one global eval batch from its summed values (the Estimator's `loss`)."""
        raise NotImplementedError("task %s has no evaluation" % self.name)

    def eval_results(self, sums, num_batches):
        """The metrics, from sums over all batches (with `batch_loss_sum`).

        Python floats (the trainer) or float32 Tensors (Keras `evaluate`), as
        for `train_metrics`.
        """
        raise NotImplementedError("task %s has no evaluation" % self.name)

    def eval_results_from_predictions(self, outputs):
        """Metrics from every example's `predict_step` outputs, in input order."""
        return {}

    @abc.abstractmethod
    def predict_step(self, model, features):
        """{name: Tensor [batch_size, ...]}: per-example outputs (the original's `predictions`).

        The one prediction contract: `Trainer.predict` and the models' Keras
        `predict` both return these (the trainer in input order, padding
        dropped). Features that identify or score an example (`unique_ids`,
        `label_ids`) are passed through when the batch holds them.
        """


class WeightedAccuracyTask(Task):
    """A `Task` whose `eval_step` sums `weight`, `loss_sum` and `correct` over real examples.

    Its eval results are `eval_loss` and `eval_accuracy` (weighted means) and
    `loss` (the mean batch loss), as the original classifier's.
    """

    def eval_batch_loss(self, batch_sums):
        return batch_sums["loss_sum"] / tf.maximum(batch_sums["weight"], 1.0)

    def eval_results(self, sums, num_batches):
        return {"eval_loss": safe_div(sums["loss_sum"], sums["weight"]),
                "eval_accuracy": safe_div(sums["correct"], sums["weight"]),
                "loss": safe_div(sums["batch_loss_sum"], num_batches)}


def real_example_weights(features):
    """float32 [batch_size]: `is_real_example` (1 real, 0 padding), or ones if absent.

    As the original `model_fn`: `tf.cast(features["is_real_example"], tf.float32)`
    when the feature exists, else `tf.ones(tf.shape(label_ids))`.
    """
    if "is_real_example" in features:
        return tf.reshape(tf.cast(features["is_real_example"], tf.float32), [-1])
    return tf.ones([tf.shape(features["input_ids"])[0]], tf.float32)


def num_examples(features):
    """float32 scalar: the batch size of `features`."""
    return tf.cast(tf.shape(features["input_ids"])[0], tf.float32)


def safe_div(numerator, denominator):
    """`numerator / denominator`, 0.0 when the denominator is 0.

    On Python numbers (the trainer's host-side sums) a float; on Tensors (the
    sums a Keras metric holds, inside or outside a tf.function) a float32
    Tensor, so `train_metrics` and `eval_results` serve both.
    """
    if tf.is_tensor(numerator) or tf.is_tensor(denominator):
        return tf.math.divide_no_nan(tf.cast(numerator, tf.float32),
                                     tf.cast(denominator, tf.float32))
    numerator = float(numerator)
    denominator = float(denominator)
    return numerator / denominator if denominator else 0.0


def passed_through(features, keys):
    """{key: int Tensor [batch_size]} for each of `keys` that `features` holds.

    What `predict_step` hands back beside its outputs, so a prediction can be
    matched to its example (`unique_ids`) or scored (`label_ids`).
    """
    return {key: tf.reshape(features[key], [-1]) for key in keys if key in features}
