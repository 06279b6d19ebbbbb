"""BERT sentence(-pair) classification: the model and its loss (original: `run_classifier.create_model`).

`BertClassifier` is `bert` (the backbone) plus the unscoped `output_weights` /
`output_bias`, so its checkpoints carry exactly the original's names. The
loss re-states the original's maths:

  logits = dropout(pooled_output, 0.1) @ output_weights^T + output_bias
  per_example_loss = -log softmax(logits)[label]
  loss = mean(per_example_loss)

New: regression (STS-B), with one output and the squared error
`(logits[:, 0] - label)^2` as the per-example loss; Keras's `compile` / `fit`
/ `evaluate` / `predict` with that maths (`bert_tf.training.keras_model.TaskModel`,
the trainer's replica step); raw-text input through a `BertPreprocessor`.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.errors import UserError
from bert_tf.heads import ClassifierHead
from bert_tf.modeling import BertModel
from bert_tf.training.keras_model import TaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(TaskModel, keras.Model):
    """BERT with a classification (or regression) head on the pooled output.

    Checkpoint variables: every `bert/...` variable of `BertModel`, plus
    output_weights [num_labels, hidden_size] and output_bias [num_labels]
    (unscoped, as the original).

    Args:
      config: `BertConfig` (or its dict).
      num_labels: int, the number of classes (1 for regression).
      is_regression: bool; `fit` then trains the squared error of
        `logits[:, 0]` against float labels (STS-B; num_labels must be 1).
      preprocessor: (optional) a `bert_tf.preprocessing.BertPreprocessor`;
        the model then also takes raw text (see Call args).
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length]; with a preprocessor, also a
        string Tensor [batch_size], `(text_a, text_b)`, or a dict with
        `text_a` (and `text_b`).
      training: Python bool; dropout only when True.

    Returns:
      dict: `logits` float32 [batch_size, num_labels], `pooled_output`.

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on feature dicts with `label_ids` (int32 [batch_size]; float32
    for regression), or on `(x, y)` with `y` the label ids. The loss is the
    original's `mean(-log softmax(logits)[label])` (regression: the mean
    squared error); training logs `loss` and `accuracy` (regression:
    `mean_squared_error`). `evaluate` returns the original's `eval_accuracy`
    and `eval_loss` (weighted by `is_real_example` when the features hold it)
    and the Estimator's `loss`; regression: `eval_loss` (mean squared error)
    and `loss` (Pearson and Spearman need every prediction: apply
    `bert_tf.tasks.classifier.pearson` / `spearman` to `predict`'s output).
    `predict` returns `logits` and `probabilities` [batch_size, num_labels]
    (regression: `logits` and `predictions` [batch_size]).

    Example:
      ```python
      model = BertClassifier(config, num_labels=2)
      bert_tf.checkpoint.load_checkpoint(model.bert, "uncased_L-12_H-768_A-12")
      model.compile(optimizer=bert_tf.optimization.create_optimizer(
          2e-5, num_train_steps=1000, num_warmup_steps=100))
      model.fit(train_dataset, epochs=1, steps_per_epoch=1000)
      model.evaluate(eval_dataset, return_dict=True)
      # {"eval_accuracy": ..., "eval_loss": ..., "loss": ...}
      ```
    """

    label_key = "label_ids"

    def __init__(self, config, num_labels, is_regression=False, preprocessor=None,
                 name="bert_classifier", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.num_labels = int(num_labels)
        self.is_regression = bool(is_regression)
        if self.is_regression and self.num_labels != 1:
            raise UserError("BertClassifier: is_regression=True needs num_labels=1, got %d"
                            % self.num_labels)
        if preprocessor is not None:
            _check_preprocessor(preprocessor, config)
        self.preprocessor = preprocessor
        self.bert = BertModel(config)
        self.classifier = ClassifierHead(self.num_labels, config.hidden_size, name="classifier")
        self.build()

    def build(self, input_shape=None):
        # Every weight is made by the constructors (a checkpoint loads before any call).
        self.built = True

    def call(self, features, training=None):
        features = self.model_inputs(features)
        outputs = self.bert(features["input_ids"], input_mask=features["input_mask"],
                            token_type_ids=features["segment_ids"], training=training)
        logits = self.classifier(outputs["pooled_output"], training=training)
        return {"logits": logits, "pooled_output": outputs["pooled_output"]}

    def make_task(self):
        from bert_tf.tasks.classifier import ClassifierTask
        return ClassifierTask(self.config, self.num_labels, is_regression=self.is_regression)

    def task_label_keys(self):
        return (self.label_key,)

    def prediction_outputs(self, outputs, features):
        logits = outputs["logits"]
        if self.is_regression:
            return {"logits": logits, "predictions": tf.reshape(tf.cast(logits, tf.float32), [-1])}
        return {"logits": logits, "probabilities": tf.nn.softmax(tf.cast(logits, tf.float32),
                                                                 axis=-1)}

    def get_config(self):
        config = super().get_config()
        config.update({
            "config": self.config.to_dict(),
            "num_labels": self.num_labels,
            "is_regression": self.is_regression,
            "preprocessor": (None if self.preprocessor is None
                             else keras.saving.serialize_keras_object(self.preprocessor)),
        })
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return cls(**config)


def _check_preprocessor(preprocessor, config):
    """The preprocessor's vocabulary and max_seq_length must fit the model."""
    from bert_tf.preprocessing import BertPreprocessor
    if not isinstance(preprocessor, BertPreprocessor):
        raise UserError("BertClassifier: preprocessor= must be a "
                        "bert_tf.preprocessing.BertPreprocessor, got %s"
                        % type(preprocessor).__name__)
    if preprocessor.vocab_size > config.vocab_size:
        raise UserError("BertClassifier: the preprocessor's vocabulary has %d tokens but the "
                        "model's vocab_size is %d (is it the model's vocab.txt?)"
                        % (preprocessor.vocab_size, config.vocab_size))
    config.check_max_seq_length(preprocessor.max_seq_length, source="the model's config")


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
