"""Multi-head self-attention (original: `attention_layer` and the `attention/output` block)."""

import math

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops

from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.dropout import Dropout
from bert_tf.modeling.layers.initializers import create_initializer
from bert_tf.modeling.layers.initializers import layer_norm
from bert_tf.modeling.layers.masks import rows_to_tokens
from bert_tf.modeling.layers.masks import tokens_to_rows
from bert_tf.modeling.layers.surgery import replace_tracked


def _dense(units, initializer_range, name, activation=None):
    # A TF1 `tf.layers.dense`: kernel [in, out] (truncated normal), bias [out] (zeros).
    return BertDense(units, activation=activation, name=name,
                     kernel_initializer=create_initializer(initializer_range))


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSelfAttention(keras.layers.Layer):
    """Multi-headed scaled dot-product self-attention; TF1 scope `attention/self`.

    Dimension letters follow the original: B batch, F from-length, T to-length,
    N heads, H size_per_head, D hidden_size (= N * H).

      Q:[BFNH] = Input[BFD] . Wq[D, N*H] (split into heads)
      K:[BTNH], V:[BTNH] likewise
      scores:[BNFT] = einsum('BTNH,BFNH->BNFT', K, Q) * 1/sqrt(H) + adder
      probs = dropout(softmax(scores)) (* head_mask)
      context:[BFNH] = einsum('BNFT,BTNH->BFNH', probs, V)

    Checkpoint variables: {query,key,value}/kernel [D, D], {query,key,value}/bias [D].
    The kernels keep the checkpoint's 2-D shape; heads are split in `call`
    (head n uses kernel columns n*H:(n+1)*H, as the original).

    Pruned heads (`pruned_heads`, original head indices; see
    `BertModel.prune_heads`) have no columns: the kernels are [D, n*H] and the
    biases [n*H] for the n = N - len(pruned_heads) heads kept, in their
    original order.

    Call args:
      hidden_states: float Tensor of shape [batch_size, seq_length, D].
      attention_adder: (optional) float Tensor broadcastable to [B, N, F, T],
        0 where attended and -10000.0 where masked (see `attention_mask_adder`).
      training: Python bool; attention-probability dropout only when True.
      head_mask: (optional) float Tensor [n], one factor per kept head: the
        attention probabilities are multiplied by it after dropout (1 keeps a
        head, 0 silences it).
      output_attentions: Python bool; also return the attention probabilities.
      token_positions: (optional) int32 Tensor [T] (`masks.token_positions`):
        `hidden_states` is then the batch's attended tokens alone, [T, D], and
        so is the result, [T, n*H] (`BertEncoder.skip_padding`).

    Returns:
      float Tensor of shape [batch_size, seq_length, n*H], the heads' contexts
      concatenated (before `attention/output/dense`); with `output_attentions`,
      a pair (that, probs), probs the float32 [batch_size, n, F, T] softmax
      output (after the mask adder, before dropout and head_mask).
    """

    def __init__(self, hidden_size=768, num_attention_heads=12,
                 attention_probs_dropout_prob=0.1, initializer_range=0.02, pruned_heads=(),
                 **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads != 0:
            raise ValueError(
                "The hidden size (%d) is not a multiple of the number of attention heads (%d)"
                % (hidden_size, num_attention_heads))
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.size_per_head = hidden_size // num_attention_heads
        self.pruned_heads = sorted(set(int(h) for h in pruned_heads))
        # The original indices of the heads this layer computes, in kernel column order.
        self.kept_heads = [h for h in range(num_attention_heads) if h not in self.pruned_heads]
        units = self.all_head_size
        self.query = _dense(units, initializer_range, "query")
        self.key = _dense(units, initializer_range, "key")
        self.value = _dense(units, initializer_range, "value")
        self.dropout = Dropout(attention_probs_dropout_prob)

    @property
    def all_head_size(self):
        """The width of the concatenated contexts: kept heads * size_per_head."""
        return len(self.kept_heads) * self.size_per_head

    def build(self, input_shape=None):
        for dense in (self.query, self.key, self.value):
            dense.build((None, None, self.hidden_size))
        self.built = True

    def _split_heads(self, x):
        shape = ops.shape(x)
        return ops.reshape(x, (shape[0], shape[1], len(self.kept_heads), self.size_per_head))

    def prune(self, heads):
        """Removes the query, key and value columns of `heads` (original indices).

        Returns the kept columns' indices into the old [.., n*H] context, for
        the rows of `attention/output/dense/kernel` (see `BertAttention.prune_heads`).
        """
        heads = set(int(h) for h in heads)
        positions = [i for i, h in enumerate(self.kept_heads) if h not in heads]
        columns = [i * self.size_per_head + j
                   for i in positions for j in range(self.size_per_head)]
        for attr in ("query", "key", "value"):
            old = getattr(self, attr)
            new = _replace_dense(self, attr, old.kernel.shape[0], len(columns))
            new.kernel.assign(ops.take(old.kernel, columns, axis=1))
            new.bias.assign(ops.take(old.bias, columns, axis=0))
        self.pruned_heads = sorted(set(self.pruned_heads) | heads)
        self.kept_heads = [h for h in self.kept_heads if h not in heads]
        return columns

    def call(self, hidden_states, attention_adder=None, training=None, head_mask=None,
             output_attentions=False, token_positions=None):
        query, key, value = self.query(hidden_states), self.key(hidden_states), \
            self.value(hidden_states)
        if token_positions is not None:
            # The batch's attended tokens alone, packed [T, D] (BertEncoder.skip_padding):
            # the scores need them in their rows, zeros at padding.
            query, key, value = (tokens_to_rows(x, token_positions, attention_adder)
                                 for x in (query, key, value))
        query = self._split_heads(query)  # [B, F, N, H]
        key = self._split_heads(key)  # [B, T, N, H]
        value = self._split_heads(value)  # [B, T, N, H]
        # Take the dot product between "query" and "key" to get the raw
        # attention scores, then scale them (multiplied, as the original).
        scores = ops.einsum("BTNH,BFNH->BNFT", key, query)  # [B, N, F, T]
        scores = scores * (1.0 / math.sqrt(float(self.size_per_head)))
        # The mask adder and the softmax run in float32 even under mixed precision.
        scores = ops.cast(scores, "float32")
        if attention_adder is not None:
            scores = scores + ops.cast(attention_adder, "float32")
        attention_probs = ops.softmax(scores, axis=-1)  # [B, N, F, T]
        probs = ops.cast(attention_probs, self.compute_dtype)
        # This is actually dropping out entire tokens to attend to, which might
        # seem a bit unusual, but is taken from the original Transformer paper.
        probs = self.dropout(probs, training=training)
        if head_mask is not None:
            # As Hugging Face's BERT: after dropout, one factor per head.
            probs = probs * ops.reshape(ops.cast(head_mask, self.compute_dtype), (1, -1, 1, 1))
        context = ops.einsum("BNFT,BTNH->BFNH", probs, value)  # [B, F, N, H]
        shape = ops.shape(context)
        context = ops.reshape(context, (shape[0], shape[1], self.all_head_size))  # [B, F, D]
        if token_positions is not None:
            context = rows_to_tokens(context, token_positions)  # [T, D]
        if output_attentions:
            return context, attention_probs
        return context

    def compute_output_shape(self, input_shape, attention_adder_shape=None):
        return tuple(input_shape[:-1]) + (self.all_head_size,)

    # Written out per layer on purpose (see modeling/layers/__init__.py): its own arguments.
    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_attention_heads,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "initializer_range": self.initializer_range,
        })
        if self.pruned_heads:
            config["pruned_heads"] = list(self.pruned_heads)
        return config


def _replace_dense(parent, attr, input_size, units):
    """`parent.<attr>` (a BertDense) replaced by a new, built one of [input_size, units].

    The new variables keep the old ones' paths (their TF1 names) and the
    parent's tracking slot, so `weights` lists no stale variable (see
    `surgery.replace_tracked`).
    """
    def make(old):
        new = BertDense(units, activation=old.activation, name=old.name,
                        kernel_initializer=old.kernel_initializer, dtype=old.dtype_policy)
        new.build((None, None, input_size))
        return new
    return replace_tracked(parent, attr, make)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDenseResidualNorm(keras.layers.Layer):
    """`LayerNorm(dropout(dense(x)) + residual)`; TF1 scopes `attention/output` and `output`.

    Checkpoint variables: dense/kernel [in, D], dense/bias [D], LayerNorm/beta [D],
    LayerNorm/gamma [D].
    """

    def __init__(self, input_size, hidden_size=768, hidden_dropout_prob=0.1,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range
        self.dense = _dense(hidden_size, initializer_range, "dense")
        self.dropout = Dropout(hidden_dropout_prob)
        self.layer_norm = layer_norm("LayerNorm")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.input_size))
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, hidden_states, residual, training=None):
        output = self.dense(hidden_states)
        output = self.dropout(output, training=training)
        return self.layer_norm(output + residual)

    # Written out per layer on purpose (see modeling/layers/__init__.py): its shape, arguments.
    def compute_output_shape(self, input_shape, residual_shape=None):
        return tuple(input_shape[:-1]) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "input_size": self.input_size,
            "hidden_size": self.hidden_size,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "initializer_range": self.initializer_range,
        })
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertAttention(keras.layers.Layer):
    """Self-attention plus its output projection; TF1 scope `attention`.

    `attention/self` (BertSelfAttention), then `attention/output`:
    `LayerNorm(dropout(dense(context)) + hidden_states)`.

    Checkpoint variables: self/{query,key,value}/{kernel,bias},
    output/dense/{kernel [D, D], bias [D]}, output/LayerNorm/{beta,gamma} [D].
    With pruned heads, output/dense/kernel is [n*H, D] (the kept heads' rows).

    Call args: as `BertSelfAttention`; with `output_attentions`, returns
    (output, attention probabilities).
    """

    def __init__(self, hidden_size=768, num_attention_heads=12, hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, initializer_range=0.02, pruned_heads=(),
                 **kwargs):
        super().__init__(**kwargs)
        # This scope's arguments, for get_config (written out per layer: see layers/__init__.py).
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.self_attention = BertSelfAttention(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            initializer_range=initializer_range, pruned_heads=pruned_heads, name="self")
        self.attention_output = BertDenseResidualNorm(
            input_size=self.self_attention.all_head_size, hidden_size=hidden_size,
            hidden_dropout_prob=hidden_dropout_prob, initializer_range=initializer_range,
            name="output")

    @property
    def pruned_heads(self):
        """The original indices of this layer's pruned heads, sorted."""
        return list(self.self_attention.pruned_heads)

    def build(self, input_shape=None):
        self.self_attention.build((None, None, self.hidden_size))
        self.attention_output.build((None, None, self.self_attention.all_head_size))
        self.built = True

    def prune_heads(self, heads):
        """Removes `heads` (original indices; checked by `BertModel.prune_heads`).

        Their query, key and value columns go, and their rows of
        `attention/output/dense/kernel`: the variables are replaced by smaller ones.
        """
        rows = self.self_attention.prune(heads)
        output = self.attention_output
        old = output.dense
        new = _replace_dense(output, "dense", len(rows), old.units)
        new.kernel.assign(ops.take(old.kernel, rows, axis=0))
        new.bias.assign(old.bias)
        output.input_size = len(rows)

    def call(self, hidden_states, attention_adder=None, training=None, head_mask=None,
             output_attentions=False, token_positions=None):
        context = self.self_attention(hidden_states, attention_adder, training=training,
                                      head_mask=head_mask, output_attentions=output_attentions,
                                      token_positions=token_positions)
        if output_attentions:
            context, attention_probs = context
            output = self.attention_output(context, hidden_states, training=training)
            return output, attention_probs
        return self.attention_output(context, hidden_states, training=training)

    def compute_output_shape(self, input_shape, attention_adder_shape=None):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_attention_heads,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "initializer_range": self.initializer_range,
        })
        if self.pruned_heads:
            config["pruned_heads"] = self.pruned_heads
        return config
