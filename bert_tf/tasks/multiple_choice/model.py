"""Multiple choice (SWAG): the model, its loss and its task (new; the BERT paper's §4.4).

The paper fine-tunes SWAG as four input sequences per example, each the
context (sentence A) with one possible continuation (sentence B); "the only
task-specific parameters introduced is a vector whose dot product with the
[CLS] token representation C denotes a score for each choice which is
normalized with a softmax layer". `BertMultipleChoice` is `bert` (the
backbone) plus that vector as the classifier's unscoped variables with one
label, `output_weights` [1, hidden_size] and `output_bias` [1], so its
checkpoints carry run_classifier's names:

  score_i = dropout(pooled_output_i, 0.1) @ output_weights^T + output_bias
  logits = [score_0, ..., score_{num_choices-1}]
  per_example_loss = -log softmax(logits)[label]
  loss = mean(per_example_loss)

`MultipleChoiceTask` is the classifier's task (`ClassifierTask`: the loss
averaged over the batch, `eval_accuracy` / `eval_loss` / `loss` weighted by
`is_real_example`, `probabilities`) over the choices, for
`bert_tf.training.Trainer` and Keras's `compile` / `fit` / `evaluate` /
`predict` on the model itself.

The features hold every choice of an example: `input_ids`, `input_mask`,
`segment_ids` int32 [batch_size, num_choices, seq_length], or flattened
[batch_size, num_choices * seq_length] as the records store them (the model
then needs `num_choices`). Raw text (with a preprocessor): a dict with
`context` [batch_size] (SWAG's sent1), `endings` [batch_size, num_choices]
and optionally `start` [batch_size] (SWAG's sent2); choice i is the pair
(context, start + " " + ending_i), as `bert_tf.tasks.multiple_choice.data`
packs it.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.heads import ClassifierHead
from bert_tf.tasks.classifier.model import ClassifierTask
from bert_tf.tasks.task_model import TaskModel

# The keys of raw text in a features dict.
TEXT_KEYS = ("context", "start", "endings")
_FEATURE_KEYS = ("input_ids", "input_mask", "segment_ids")


def choice_pairs(context, start, endings):
    """The (text_a, text_b) of every choice: string Tensors [batch_size * num_choices].

    Choice i of an example is (context, start + " " + ending_i), or
    (context, ending_i) where `start` is empty (`multiple_choice_data.choice_texts`).

    Args:
      context: string Tensor [batch_size].
      start: string Tensor [batch_size], or None.
      endings: string Tensor [batch_size, num_choices].
    """
    num_choices = tf.shape(endings)[1]
    text_a = tf.reshape(tf.repeat(context[:, None], num_choices, axis=1), [-1])  # [B*C]
    text_b = tf.reshape(endings, [-1])  # [B*C]
    if start is not None:
        start = tf.reshape(tf.repeat(start[:, None], num_choices, axis=1), [-1])  # [B*C]
        text_b = tf.where(tf.equal(start, ""), text_b,
                          tf.strings.join([start, text_b], separator=" "))
    return text_a, text_b


def unflatten_choices(features, num_choices):
    """Features [batch_size * num_choices, seq_length] -> [batch_size, num_choices, seq_length]."""
    return {key: tf.reshape(value, [-1, num_choices, tf.shape(value)[-1]])
            for key, value in features.items()}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertMultipleChoice(TaskModel, keras.Model):
    """BERT with the paper's multiple-choice head: a vector dotted with each choice's [CLS].

    Checkpoint variables: every `bert/...` variable of `BertModel`, plus
    output_weights [1, hidden_size] and output_bias [1] (unscoped, the
    classifier's names with one label).

    Args:
      config: `BertConfig` (or its dict).
      num_choices: (optional) int, the choices per example of flattened
        features [batch_size, num_choices * seq_length] (the records'); the
        3-D features and raw text carry their own number of choices.
      preprocessor: (optional) a `bert_tf.tokenization.preprocessor.BertPreprocessor`;
        the model then also takes raw text (see Call args).
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.modeling.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, num_choices, seq_length] (or flattened,
        see `num_choices`); with a preprocessor, also a dict of raw text:
        `context` string [batch_size], `endings` string [batch_size,
        num_choices] and optionally `start` string [batch_size].
      training: Python bool; dropout only when True.
      head_mask, output_attentions: as `BertModel`'s (every choice is one
        sequence of the backbone's batch).

    Returns:
      dict: `logits` float32 [batch_size, num_choices], `pooled_output`
      [batch_size, num_choices, hidden_size].

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on `(x, y)` with `y` the right choices' indexes (or feature
    dicts with `label_ids`); Keras's `x` also takes a list of
    `(context, endings)` or `(context, start, endings)` rows. `evaluate`
    returns `eval_accuracy`, `eval_loss` and `loss`; `predict` returns
    `logits`, `probabilities` [batch_size, num_choices] and `predictions`
    (the chosen index) [batch_size].

    Example:
      ```python
      model = BertMultipleChoice(config, preprocessor=BertPreprocessor(
          "vocab.txt", do_lower_case=True, max_seq_length=64))
      model.compile(optimizer=create_optimizer(2e-5, 1000, 100))
      model.fit([("She opens the door.", ["She walks in.", "The door eats."])], [0])
      ```
    """

    # Keras's x holds choices, its y the right ones' indexes (`keras_data.UserData`).
    multiple_choice = True

    task_name = "multiple_choice"
    hf_architecture = "BertForMultipleChoice"
    fresh_head = True
    pretrained_options = ("max_seq_length",)  # its preprocessor's

    @classmethod
    def from_parts(cls, parts):
        from bert_tf.tokenization.preprocessor import BertPreprocessor  # pylint: disable=g-import-not-at-top
        max_seq_length = parts.options.get("max_seq_length")
        if max_seq_length is None and parts.recorded is not None:
            max_seq_length = parts.recorded.get("max_seq_length")  # the run's
        return cls(parts.config, preprocessor=BertPreprocessor(
            parts.vocab_file, do_lower_case=bool(parts.do_lower_case),
            max_seq_length=max_seq_length or min(128, parts.config.max_position_embeddings)))

    def __init__(self, config, num_choices=None, preprocessor=None,
                 name="bert_multiple_choice", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        if num_choices is not None and (isinstance(num_choices, bool) or int(num_choices) < 2):
            raise UserError("BertMultipleChoice: num_choices must be at least 2, got %r"
                            % (num_choices,))
        self.num_choices = None if num_choices is None else int(num_choices)
        if preprocessor is not None:
            from bert_tf.tokenization.preprocessor import check_preprocessor  # pylint: disable=g-import-not-at-top
            check_preprocessor(preprocessor, config, "BertMultipleChoice")
        self.preprocessor = preprocessor
        self.bert = BertModel(config)
        self.classifier = ClassifierHead(1, config.hidden_size, name="classifier")
        self.build()

    def model_inputs(self, x):
        """`x` as a dict of features [batch_size, num_choices, seq_length] (raw text tokenized)."""
        if not (isinstance(x, dict) and "endings" in x):
            return super().model_inputs(x)
        if self.preprocessor is None:
            raise UserError("BertMultipleChoice takes a dict of features (input_ids, input_mask, "
                            "segment_ids); for raw text (context, endings), build it with "
                            "preprocessor=bert_tf.tokenization.preprocessor.BertPreprocessor(...)")
        features = {k: v for k, v in x.items() if k not in TEXT_KEYS}
        endings = tf.convert_to_tensor(x["endings"])
        start = x.get("start")
        text_a, text_b = choice_pairs(tf.convert_to_tensor(x["context"]),
                                      None if start is None else tf.convert_to_tensor(start),
                                      endings)
        features.update(unflatten_choices(dict(self.preprocessor((text_a, text_b))),
                                          tf.shape(endings)[1]))
        return features

    def _choices(self, input_ids):
        """(num_choices, seq_length) of the features: static ints where known."""
        if input_ids.shape.rank == 3:
            return input_ids.shape[1] or tf.shape(input_ids)[1], (
                input_ids.shape[2] or tf.shape(input_ids)[2])
        if self.num_choices is None:
            raise UserError("BertMultipleChoice got flattened features [batch_size, %s]: build "
                            "it with num_choices=, or give them as [batch_size, num_choices, "
                            "seq_length]" % input_ids.shape[-1])
        length = input_ids.shape[-1] or tf.shape(input_ids)[-1]
        return self.num_choices, length // self.num_choices

    def call(self, features, training=None, head_mask=None, output_attentions=False):
        features = self.model_inputs(features)
        num_choices, seq_length = self._choices(features["input_ids"])
        # Every choice is one sequence of the backbone's batch: [B * C, S].
        flat = {key: tf.reshape(features[key], [-1, seq_length])
                for key in _FEATURE_KEYS if key in features}
        _, outputs = self.backbone(flat, training, head_mask=head_mask,
                                   output_attentions=output_attentions)
        scores = self.classifier(outputs["pooled_output"], training=training)  # [B*C, 1]
        pooled = outputs["pooled_output"]
        return self._with_attentions({
            "logits": tf.reshape(scores, [-1, num_choices]),  # [B, C]
            "pooled_output": tf.reshape(pooled, [-1, num_choices, pooled.shape[-1]]),  # [B, C, H]
        }, outputs)

    def make_task(self):
        return MultipleChoiceTask(self.config, self.num_choices)

    def get_config(self):
        from bert_tf.tokenization.preprocessor import serialize_preprocessor  # pylint: disable=g-import-not-at-top
        config = super().get_config()
        config.update({
            "config": self.config.to_dict(),
            "num_choices": self.num_choices,
            "preprocessor": serialize_preprocessor(self.preprocessor),
        })
        return config

    @classmethod
    def from_config(cls, config):
        from bert_tf.tokenization.preprocessor import with_preprocessor  # pylint: disable=g-import-not-at-top
        return cls(**with_preprocessor(config))


class MultipleChoiceTask(ClassifierTask):
    """The classifier's task over the choices of each example (the paper's SWAG fine-tuning).

    Training: `mean(-log softmax(logits)[label])` over the global batch, as
    run_classifier's; evaluation (weighted by `is_real_example`):
    `eval_accuracy`, `eval_loss` and the Estimator's `loss`; predictions:
    `logits`, `probabilities` [num_choices], `predictions` (the chosen
    index), and `label_ids` when the features hold them.

    Args:
      config: `BertConfig`.
      num_choices: the choices of flattened features (the records'), or None.
    """

    name = "multiple_choice"

    def __init__(self, config, num_choices=None):
        super().__init__(config, num_labels=0)
        # Keras checks label ids against num_labels (None: the data's number of choices).
        self.num_labels = self.num_choices = num_choices

    def trim_padding(self, features):
        """Every choice's row cut after the batch's longest choice (flattened records
        [batch_size, num_choices * seq_length] first unflattened)."""
        input_ids = features.get("input_ids")
        if input_ids is not None and input_ids.shape.rank == 2 and self.num_choices:
            features = dict(features)
            length = (input_ids.shape[-1] or tf.shape(input_ids)[-1]) // self.num_choices
            features.update({key: tf.reshape(features[key], [-1, self.num_choices, length])
                             for key in _FEATURE_KEYS if key in features})
        return super().trim_padding(features)

    def _example_losses(self, logits, label_ids):
        # The classifier's softmax cross-entropy, for a number of choices known
        # only when the batch comes (the classifier's one_hot needs it before).
        logits = tf.cast(logits, tf.float32)
        per_example_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(tf.cast(label_ids, tf.int32), [-1]), logits=logits)
        return per_example_loss, tf.argmax(logits, axis=-1, output_type=tf.int32)

    def predict_step(self, model, features):
        outputs = super().predict_step(model, features)
        outputs["predictions"] = tf.argmax(outputs["probabilities"], axis=-1,
                                           output_type=tf.int32)  # [B]
        return outputs
