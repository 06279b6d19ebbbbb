"""The Transformer encoder (original: `transformer_model`) and the pooler."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras

from bert_tf.modeling import activations
from bert_tf.modeling.layers.attention import BertAttention
from bert_tf.modeling.layers.attention import BertDenseResidualNorm
from bert_tf.modeling.layers.attention import _dense


@keras.saving.register_keras_serializable(package="bert_tf")
class BertIntermediate(keras.layers.Layer):
    """`act(dense(x))`, the feed-forward expansion; TF1 scope `intermediate`.

    The activation (GELU for every released model) is only applied here.

    Checkpoint variables: dense/kernel [D, I], dense/bias [I].
    """

    def __init__(self, hidden_size=768, intermediate_size=3072, hidden_act="gelu",
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.dense = _dense(intermediate_size, initializer_range, "dense",
                            activation=activations.get_activation(hidden_act))

    def build(self, input_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.built = True

    def call(self, hidden_states):
        return self.dense(hidden_states)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.intermediate_size,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "hidden_act": self.hidden_act,
            "initializer_range": self.initializer_range,
        })
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertLayer(keras.layers.Layer):
    """One post-LN Transformer block; TF1 scope `layer_<i>`.

      a = LayerNorm(dropout(dense(attention(x))) + x)          # attention, attention/output
      h = act(dense(a))                                         # intermediate
      o = LayerNorm(dropout(dense(h)) + a)                      # output

    Checkpoint variables: attention/..., intermediate/dense/{kernel [D, I], bias [I]},
    output/dense/{kernel [I, D], bias [D]}, output/LayerNorm/{beta,gamma} [D].
    """

    def __init__(self, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                 hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.attention = BertAttention(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads,
            hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            initializer_range=initializer_range, name="attention")
        # The activation is only applied to the "intermediate" hidden layer.
        self.intermediate = BertIntermediate(
            hidden_size=hidden_size, intermediate_size=intermediate_size, hidden_act=hidden_act,
            initializer_range=initializer_range, name="intermediate")
        self.output_block = BertDenseResidualNorm(
            input_size=intermediate_size, hidden_size=hidden_size,
            hidden_dropout_prob=hidden_dropout_prob, initializer_range=initializer_range,
            name="output")

    def build(self, input_shape=None):
        self.attention.build((None, None, self.hidden_size))
        self.intermediate.build((None, None, self.hidden_size))
        self.output_block.build((None, None, self.intermediate_size))
        self.built = True

    def call(self, hidden_states, attention_adder=None, training=None):
        attention_output = self.attention(hidden_states, attention_adder, training=training)
        intermediate_output = self.intermediate(attention_output)  # [B, S, I]
        return self.output_block(intermediate_output, attention_output, training=training)

    def compute_output_shape(self, input_shape, attention_adder_shape=None):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_act": self.hidden_act,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "initializer_range": self.initializer_range,
        })
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(keras.layers.Layer):
    """A stack of `num_hidden_layers` BertLayers; TF1 scope `encoder`.

    Call args:
      hidden_states: float Tensor of shape [batch_size, seq_length, hidden_size].
      attention_adder: (optional) float Tensor of shape [batch_size, 1, 1, seq_length].

    Returns:
      A list of `num_hidden_layers` float Tensors of shape
      [batch_size, seq_length, hidden_size]: entry i is the output of layer i
      (the embedding output is not in the list, as the original).
    """

    def __init__(self, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.layers = [
            BertLayer(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
                      intermediate_size=intermediate_size, hidden_act=hidden_act,
                      hidden_dropout_prob=hidden_dropout_prob,
                      attention_probs_dropout_prob=attention_probs_dropout_prob,
                      initializer_range=initializer_range, name="layer_%d" % i)
            for i in range(num_hidden_layers)
        ]

    def build(self, input_shape=None):
        for layer in self.layers:
            layer.build((None, None, self.hidden_size))
        self.built = True

    def call(self, hidden_states, attention_adder=None, training=None):
        all_layer_outputs = []
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_adder, training=training)
            all_layer_outputs.append(hidden_states)
        return all_layer_outputs

    def compute_output_shape(self, input_shape, attention_adder_shape=None):
        return [tuple(input_shape)] * self.num_hidden_layers

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_act": self.hidden_act,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "initializer_range": self.initializer_range,
        })
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPooler(keras.layers.Layer):
    """`tanh(dense(first_token))`; TF1 scope `pooler`. Always tanh, no dropout.

    Checkpoint variables: dense/kernel [D, D], dense/bias [D].
    """

    def __init__(self, hidden_size=768, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = _dense(hidden_size, initializer_range, "dense", activation="tanh")

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        # "Pool" the model by taking the hidden state of the first token.
        first_token_tensor = sequence_output[:, 0, :]  # [B, D]
        return self.dense(first_token_tensor)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_size": self.hidden_size,
                       "initializer_range": self.initializer_range})
        return config
