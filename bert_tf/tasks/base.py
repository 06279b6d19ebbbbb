"""The task contract between a model and `bert_tf.training.Trainer` (original: a `model_fn`).

The original wrote one `model_fn` per script: build `BertModel` and a head,
compute the loss, and per mode a train op, eval metrics or predictions. A
`Task` says the same things to the trainer, which owns everything else
(strategy, loops, checkpoints, precision, summaries). A new task is one
module: a head (`bert_tf/heads.py`), a feature spec (`bert_tf/data/`), and a
`Task` subclass.

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

The same contract drives Keras: the models' `fit` / `evaluate`
(`bert_tf.training.keras_model.TaskModel`) run the trainer's replica step and
keep these sums in Keras metrics.
"""

import abc

import tensorflow as tf


class Task(abc.ABC):
    """What a training task tells the trainer.

    Attributes:
      name: a short name for logs.
      metric_sum_keys: keys of the training metric sums `compute_loss` returns.
      eval_sum_keys: keys of the sums `eval_step` returns.
    """

    name = "task"
    metric_sum_keys = ()
    eval_sum_keys = ()
    # Whether `eval_results_from_predictions` adds metrics that need every
    # prediction (e.g. a rank correlation), not only sums.
    needs_eval_predictions = False

    @abc.abstractmethod
    def build_model(self):
        """A new `keras.Model` (called under the strategy's scope and dtype policy)."""

    @abc.abstractmethod
    def loss_normalizers(self, features):
        """{name: float32 scalar}: this (micro-)batch's share of the loss's denominators."""

    @abc.abstractmethod
    def compute_loss(self, model, features, normalizers, training=True):
        """This batch's share of the global batch's loss.

        Args:
          model: the model `build_model` made.
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

    def predict_step(self, model, features):
        """{name: Tensor [batch_size, ...]}: per-example outputs (the original's `predictions`)."""
        raise NotImplementedError("task %s has no predictions" % self.name)


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
