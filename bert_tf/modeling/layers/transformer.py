"""The Transformer encoder (original: `transformer_model`) and the pooler."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras

from bert_tf.modeling import activations
from bert_tf.modeling.layers import masks
from bert_tf.modeling.layers.attention import BertAttention
from bert_tf.modeling.layers.attention import BertDenseResidualNorm
from bert_tf.modeling.layers.attention import _dense
from bert_tf.modeling.layers.recompute import recomputable


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

    # Written out per layer on purpose (see modeling/layers/__init__.py): its shape, arguments.
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

    `pruned_heads`, `head_mask` and `output_attentions`: see `BertSelfAttention`;
    with `output_attentions`, returns (output, attention probabilities).

    `gradient_checkpointing` (attribute, default False): when True, a call with
    `training=True` keeps only its inputs for the backward pass and is
    recomputed there, with the same dropout masks (`bert_tf.modeling.layers.recompute`).
    """

    def __init__(self, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                 hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 initializer_range=0.02, pruned_heads=(), **kwargs):
        super().__init__(**kwargs)
        # This scope's arguments, for get_config (written out per layer: see layers/__init__.py).
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
            initializer_range=initializer_range, pruned_heads=pruned_heads, name="attention")
        self.gradient_checkpointing = False
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

    @recomputable
    def call(self, hidden_states, attention_adder=None, training=None, head_mask=None,
             output_attentions=False, token_positions=None):
        # With token_positions, the batch's attended tokens alone, [T, D] (BertEncoder).
        attention_output = self.attention(hidden_states, attention_adder, training=training,
                                          head_mask=head_mask,
                                          output_attentions=output_attentions,
                                          token_positions=token_positions)
        if output_attentions:
            attention_output, attention_probs = attention_output
        intermediate_output = self.intermediate(attention_output)  # [B, S, I]
        layer_output = self.output_block(intermediate_output, attention_output, training=training)
        if output_attentions:
            return layer_output, attention_probs
        return layer_output

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
        if self.attention.pruned_heads:
            config["pruned_heads"] = self.attention.pruned_heads
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(keras.layers.Layer):
    """A stack of `num_hidden_layers` BertLayers; TF1 scope `encoder`.

    Args (besides the config's): pruned_heads: {layer index: original head
      indices} removed from those layers (see `BertModel.prune_heads`).

    Call args:
      hidden_states: float Tensor of shape [batch_size, seq_length, hidden_size].
      attention_adder: (optional) float Tensor of shape [batch_size, 1, 1, seq_length].
      head_mask: (optional) a list of `num_hidden_layers` entries, each None or
        a float Tensor [kept heads of that layer] (see `BertSelfAttention`).
      output_attentions: Python bool; also return each layer's attention probabilities.

    Returns:
      A list of `num_hidden_layers` float Tensors of shape
      [batch_size, seq_length, hidden_size]: entry i is the output of layer i
      (the embedding output is not in the list, as the original). With
      `output_attentions`, a pair (that list, the list of each layer's float32
      attention probabilities [batch_size, kept heads, seq_length, seq_length]).

    `skip_padding` (attribute, default False; the training steps set it while
    they trace a task's model that reads no padding position, see
    `bert_tf.modeling.padding.padding_skipped`): the layers run on the batch's
    attended tokens alone, packed [T, D] (the attention scores in the rows),
    so no dense layer, dropout or LayerNorm works on padding. The outputs at
    the attended positions are those of the whole rows (float32 rounding);
    at the padding positions they are 0 (the original computes values there,
    which no loss but SQuAD's reads).
    """

    skip_padding = False

    def __init__(self, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, initializer_range=0.02, pruned_heads=None,
                 **kwargs):
        super().__init__(**kwargs)
        # This scope's arguments, for get_config (written out per layer: see layers/__init__.py).
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        pruned_heads = {int(k): v for k, v in (pruned_heads or {}).items()}
        self.layers = [
            BertLayer(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
                      intermediate_size=intermediate_size, hidden_act=hidden_act,
                      hidden_dropout_prob=hidden_dropout_prob,
                      attention_probs_dropout_prob=attention_probs_dropout_prob,
                      initializer_range=initializer_range,
                      pruned_heads=pruned_heads.get(i, ()), name="layer_%d" % i)
            for i in range(num_hidden_layers)
        ]

    @property
    def gradient_checkpointing(self):
        """Whether every layer is recomputed in the backward pass (see `BertLayer`)."""
        return all(layer.gradient_checkpointing for layer in self.layers)

    @gradient_checkpointing.setter
    def gradient_checkpointing(self, value):
        for layer in self.layers:
            layer.gradient_checkpointing = bool(value)

    def build(self, input_shape=None):
        for layer in self.layers:
            layer.build((None, None, self.hidden_size))
        self.built = True

    def set_inference_pass(self, inference_pass):
        """Runs `inference_pass(hidden_states, attention_adder)` -> [every layer's output]
        instead of the layers, for calls with training off, no head mask and no
        attentions asked (None: the layers again). The exports set one that
        computes the same numbers in fewer ops (`bert_tf.export.fused_encoder`).
        """
        self._inference_pass = inference_pass

    def call(self, hidden_states, attention_adder=None, training=None, head_mask=None,
             output_attentions=False):
        inference_pass = getattr(self, "_inference_pass", None)
        if inference_pass is not None and not training and head_mask is None \
                and not output_attentions:
            return inference_pass(hidden_states, attention_adder)
        all_layer_outputs = []
        all_attentions = []
        positions = None
        if self.skip_padding and attention_adder is not None:
            positions = masks.token_positions(attention_adder)
            hidden_states = masks.rows_to_tokens(hidden_states, positions)  # [T, D]
        for i, layer in enumerate(self.layers):
            layer_head_mask = None if head_mask is None else head_mask[i]
            if layer_head_mask is None and not output_attentions and positions is None:
                hidden_states = layer(hidden_states, attention_adder, training=training)
            else:
                hidden_states = layer(hidden_states, attention_adder, training=training,
                                      head_mask=layer_head_mask,
                                      output_attentions=output_attentions,
                                      token_positions=positions)
            if output_attentions:
                hidden_states, attention_probs = hidden_states
                all_attentions.append(attention_probs)
            all_layer_outputs.append(hidden_states if positions is None else
                                     masks.tokens_to_rows(hidden_states, positions,
                                                          attention_adder))
        if output_attentions:
            return all_layer_outputs, all_attentions
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
        pruned_heads = {str(i): layer.attention.pruned_heads
                        for i, layer in enumerate(self.layers) if layer.attention.pruned_heads}
        if pruned_heads:
            config["pruned_heads"] = pruned_heads
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
