"""Output heads with the original's variable names (original: `run_pretraining.get_*_output`).

The heads live under the TF1 root scope `cls`, next to `bert`:

  cls/predictions/transform/dense/{kernel [D, D], bias [D]}
  cls/predictions/transform/LayerNorm/{beta, gamma} [D]
  cls/predictions/output_bias [vocab_size]     (logits tied to bert/embeddings/word_embeddings)
  cls/seq_relationship/output_weights [2, D], output_bias [2]
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops

from bert_tf.modeling import activations
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.dropout import Dropout
from bert_tf.modeling.layers.initializers import create_initializer
from bert_tf.modeling.layers.initializers import float32_variables_dtype
from bert_tf.modeling.layers.initializers import layer_norm


def _float32_variables(kwargs):
    """The heads keep float32 variables under the inference policies (see initializers)."""
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = float32_variables_dtype()
    return kwargs


def _add_output_weights(layer, num_outputs):
    """The original's output layer of a head: `output_weights` [num_outputs, hidden_size]
    (truncated normal, `layer.initializer_range`), then `output_bias` [num_outputs] (zeros).

    Stored [num_outputs, hidden_size] and used transposed (x @ W^T + b), as the
    original's next-sentence, classifier and SQuAD heads each wrote it.
    """
    layer.output_weights = layer.add_weight(
        name="output_weights", shape=(num_outputs, layer.hidden_size),
        initializer=create_initializer(layer.initializer_range))
    layer.output_bias = layer.add_weight(name="output_bias", shape=(num_outputs,),
                                         initializer="zeros")


def gather_indexes(sequence_tensor, positions):
    """Gathers the vectors at `positions` (original: `gather_indexes`).

    Args:
      sequence_tensor: float Tensor of shape [batch_size, seq_length, width].
      positions: int32 Tensor of shape [batch_size, num_positions].

    Returns:
      float Tensor of shape [batch_size, num_positions, width]. (The original
      flattens to [batch_size * num_positions, width]; the values are the same.)
    """
    positions = ops.cast(positions, "int32")
    return ops.take_along_axis(sequence_tensor, positions[:, :, None], axis=1)


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMTransform(keras.layers.Layer):
    """`LayerNorm(act(dense(x)))`; TF1 scope `cls/predictions/transform`."""

    def __init__(self, hidden_size=768, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**_float32_variables(kwargs))
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.dense = BertDense(
            hidden_size, activation=activations.get_activation(hidden_act),
            kernel_initializer=create_initializer(initializer_range), name="dense",
            dtype=float32_variables_dtype())
        self.layer_norm = layer_norm("LayerNorm")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, x):
        return self.layer_norm(self.dense(x))

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_size": self.hidden_size, "hidden_act": self.hidden_act,
                       "initializer_range": self.initializer_range})
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMHead(keras.layers.Layer):
    """The masked-LM head; TF1 scope `cls/predictions`.

    The output projection is the (tied) word embedding table, plus a separate
    `output_bias`.

    Call args:
      sequence_output: float Tensor [batch_size, seq_length, hidden_size].
      masked_lm_positions: int32 Tensor [batch_size, max_predictions_per_seq].
      embedding_table: the `bert/embeddings/word_embeddings` variable [vocab_size, hidden_size].

    Returns:
      float32 logits of shape [batch_size, max_predictions_per_seq, vocab_size].
      Under mixed precision the matmul with the embedding table runs in the
      compute dtype (bfloat16 / float16); its result is cast to float32 before
      `output_bias` is added.
    """

    def __init__(self, vocab_size, hidden_size=768, hidden_act="gelu", initializer_range=0.02,
                 **kwargs):
        super().__init__(**_float32_variables(kwargs))
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        # We apply one more non-linear transformation before the output layer.
        # This matrix is not used after pre-training.
        self.transform = MaskedLMTransform(hidden_size, hidden_act, initializer_range,
                                           name="transform")

    def build(self, input_shape=None):
        self.transform.build()
        # The output weights are the same as the input embeddings, but there is
        # an output-only bias for each token.
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,),
                                           initializer="zeros")
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        x = gather_indexes(sequence_output, masked_lm_positions)  # [B, P, D]
        x = self.transform(x)
        logits = ops.matmul(x, ops.transpose(ops.cast(embedding_table, x.dtype)))  # [B, P, V]
        logits = ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")
        return logits

    # Written out per layer on purpose (see modeling/layers/__init__.py): its own arguments.
    def get_config(self):
        config = super().get_config()
        config.update({"vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
                       "hidden_act": self.hidden_act,
                       "initializer_range": self.initializer_range})
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class NextSentenceHead(keras.layers.Layer):
    """The next-sentence head; TF1 scope `cls/seq_relationship`.

    Simple binary classification; 0 is "next sentence" and 1 is "random sentence".
    `output_weights` is stored [2, hidden_size] and used transposed, as the original.

    Call args:
      pooled_output: float Tensor [batch_size, hidden_size].

    Returns:
      float32 logits of shape [batch_size, 2].
    """

    def __init__(self, hidden_size=768, initializer_range=0.02, **kwargs):
        super().__init__(**_float32_variables(kwargs))
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        _add_output_weights(self, 2)
        self.built = True

    def call(self, pooled_output):
        logits = ops.matmul(pooled_output, ops.transpose(self.output_weights))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_size": self.hidden_size,
                       "initializer_range": self.initializer_range})
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainingHeads(keras.layers.Layer):
    """The pre-training heads under the TF1 root scope `cls`.

    Built by the constructor, so the variables exist (and can be loaded) before
    the first call. `masked_lm` is `cls/predictions`, `next_sentence` is
    `cls/seq_relationship`.

    Call args:
      sequence_output, pooled_output: `BertModel` outputs.
      masked_lm_positions: int32 Tensor [batch_size, max_predictions_per_seq].
      embedding_table: `BertModel.embedding_table`.

    Returns:
      (masked_lm_logits [B, P, vocab_size], next_sentence_logits [B, 2]), float32.
    """

    def __init__(self, config, name="cls", **kwargs):
        super().__init__(name=name, **_float32_variables(kwargs))
        self.config = config
        self.masked_lm = MaskedLMHead(
            config.vocab_size, config.hidden_size, config.hidden_act, config.initializer_range,
            name="predictions")
        self.next_sentence = NextSentenceHead(config.hidden_size, config.initializer_range,
                                              name="seq_relationship")
        self.build()

    def build(self, input_shape=None):
        if self.built:
            return
        self.masked_lm.build()
        self.next_sentence.build()
        self.built = True

    def call(self, sequence_output, pooled_output, masked_lm_positions, embedding_table):
        masked_lm_logits = self.masked_lm(sequence_output, masked_lm_positions, embedding_table)
        next_sentence_logits = self.next_sentence(pooled_output)
        return masked_lm_logits, next_sentence_logits

    def get_config(self):
        config = super().get_config()
        config.update({"config": self.config.to_dict()})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        bert_config = BertConfig.from_dict(config.pop("config"))
        return cls(bert_config, name=config.get("name", "cls"))


# The fine-tuning heads hard-code what the original hard-coded: stddev 0.02
# (not the config's initializer_range) and, for the classifier, dropout 0.1
# on the pooled output (not hidden_dropout_prob).
FINETUNING_INITIALIZER_RANGE = 0.02
CLASSIFIER_DROPOUT_RATE = 0.1


@keras.saving.register_keras_serializable(package="bert_tf")
class ClassifierHead(keras.layers.Layer):
    """The classification head (original: `run_classifier.create_model`'s `output_weights`).

    Checkpoint variables (unscoped, as the original's `tf.get_variable` at
    the root): output_weights [num_labels, hidden_size], output_bias
    [num_labels]. The layer must be named "classifier" (`bert_tf.modeling.checkpoint`
    maps `classifier/output_*` to the unscoped names).

    Call args:
      pooled_output: float Tensor [batch_size, hidden_size].
      training: Python bool; dropout 0.1 on `pooled_output` only when True.

    Returns:
      float32 logits [batch_size, num_labels] (`tf.nn.bias_add(matmul(x, W^T), b)`).
    """

    def __init__(self, num_labels, hidden_size=768,
                 initializer_range=FINETUNING_INITIALIZER_RANGE,
                 dropout_rate=CLASSIFIER_DROPOUT_RATE, name="classifier", **kwargs):
        super().__init__(name=name, **_float32_variables(kwargs))
        self.num_labels = num_labels
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.dropout = Dropout(dropout_rate)
        self.build()

    def build(self, input_shape=None):
        if self.built:
            return
        _add_output_weights(self, self.num_labels)
        self.built = True

    def call(self, pooled_output, training=None):
        x = self.dropout(pooled_output, training=training)
        logits = ops.matmul(x, ops.transpose(ops.cast(self.output_weights, x.dtype)))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    # Written out per layer on purpose (see modeling/layers/__init__.py): its own arguments.
    def get_config(self):
        config = super().get_config()
        config.update({"num_labels": self.num_labels, "hidden_size": self.hidden_size,
                       "initializer_range": self.initializer_range,
                       "dropout_rate": self.dropout_rate})
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class SquadOutput(keras.layers.Layer):
    """Start/end logits for every position; TF1 scope `cls/squad` (inside `SquadHead`).

    Checkpoint variables: cls/squad/output_weights [2, hidden_size],
    cls/squad/output_bias [2]. Row 0 is the start, row 1 the end. No dropout
    and no masking of the question or padding, as the original.
    """

    def __init__(self, hidden_size=768, initializer_range=FINETUNING_INITIALIZER_RANGE,
                 name="squad", **kwargs):
        super().__init__(name=name, **_float32_variables(kwargs))
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        if self.built:
            return
        _add_output_weights(self, 2)
        self.built = True

    def call(self, sequence_output):
        logits = ops.einsum("bsh,nh->bsn", sequence_output,
                            ops.cast(self.output_weights, sequence_output.dtype))  # [B, S, 2]
        logits = ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")
        return logits[:, :, 0], logits[:, :, 1]

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_size": self.hidden_size,
                       "initializer_range": self.initializer_range})
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class SquadHead(keras.layers.Layer):
    """The SQuAD span head under the TF1 root scope `cls` (original: `run_squad.create_model`).

    Call args:
      sequence_output: float Tensor [batch_size, seq_length, hidden_size].

    Returns:
      (start_logits, end_logits), float32 [batch_size, seq_length] each.
    """

    def __init__(self, hidden_size=768, initializer_range=FINETUNING_INITIALIZER_RANGE,
                 name="cls", **kwargs):
        super().__init__(name=name, **_float32_variables(kwargs))
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.squad = SquadOutput(hidden_size, initializer_range, name="squad")
        # Built here (inside this layer's `cls` scope), so the variables are
        # cls/squad/* and exist before the first call.
        self.build()

    def build(self, input_shape=None):
        if self.built:
            return
        self.squad.build()
        self.built = True

    def call(self, sequence_output):
        return self.squad(sequence_output)

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_size": self.hidden_size,
                       "initializer_range": self.initializer_range})
        return config
