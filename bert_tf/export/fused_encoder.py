"""The encoder's inference pass as the exports serve it: the same numbers in fewer, larger ops.

At a batch of one a CPU server pays for the number of ops as much as for
their size. `FusedEncoder` runs `BertEncoder`'s layers (training off) with:

* query, key and value as one [D, 3D] matmul, whose kernel and bias are made
  once, at export, from the three (the SavedModel stores them in place of
  the three: `replaced_variables`);
* the heads split by one reshape and one transpose of that [B*S, 3D] product,
  the scores and the context as batched matmuls (no einsum);
* activations kept 2-D ([B*S, D]) from layer to layer, as the original's
  `reshape_to_matrix` kept them, so every dense is a plain MatMul + BiasAdd
  (+ GELU) that Grappler fuses, with no reshape around it.

The other sub-layers (the attention output's dense, dropout-free LayerNorm,
intermediate and output) are the model's own Keras layers, called on the
2-D activations. The outputs equal `BertEncoder`'s up to float32 rounding
(tests/test_export.py). `fusable` says which encoders qualify: float32
weights, no pruned heads.
"""

import math

import numpy as np
import tensorflow as tf

from bert_tf.modeling.layers.transformer import BertEncoder


def fusable(bert_model):
    """Whether `bert_model` (a `BertModel`) can run its encoder fused: float32
    weights and every head kept."""
    encoder = getattr(bert_model, "encoder", None)
    if not isinstance(encoder, BertEncoder):
        return False
    return (all(v.dtype == "float32" for v in encoder.weights)
            and encoder.compute_dtype == "float32"
            and not any(layer.attention.pruned_heads for layer in encoder.layers))


class FusedEncoder(tf.Module):
    """`BertEncoder`'s inference pass in fewer ops (see the module docstring).

    Args:
      encoder: a loaded float32 `BertEncoder` without pruned heads (`fusable`).

    Call: `(hidden_states [B, S, D], attention_adder [B, 1, 1, S])` -> the list
    of every layer's output [B, S, D], as `BertEncoder` with `training=False`.
    """

    def __init__(self, encoder, name="fused_encoder"):
        super().__init__(name=name)
        # Not tracked (a function, not the layer): the encoder's variables are the model's.
        self._encoder = lambda: encoder
        kernels, biases = [], []
        for i, layer in enumerate(encoder.layers):
            attention = layer.attention.self_attention
            parts = (attention.query, attention.key, attention.value)
            kernels.append(tf.Variable(np.concatenate([p.kernel.numpy() for p in parts], 1),
                                       trainable=False, name="layer_%d/qkv/kernel" % i))
            biases.append(tf.Variable(np.concatenate([p.bias.numpy() for p in parts], 0),
                                      trainable=False, name="layer_%d/qkv/bias" % i))
        self.qkv_kernels = kernels
        self.qkv_biases = biases

    def replaced_variables(self):
        """The model's query, key and value variables, which the fused ones stand for."""
        return [v for layer in self._encoder().layers
                for dense in (layer.attention.self_attention.query,
                              layer.attention.self_attention.key,
                              layer.attention.self_attention.value)
                for v in (dense.kernel, dense.bias)]

    def __call__(self, hidden_states, attention_adder):
        encoder = self._encoder()
        width = encoder.hidden_size
        heads = encoder.num_attention_heads
        size_per_head = width // heads
        shape = tf.shape(hidden_states)
        batch_size, seq_length = shape[0], shape[1]
        x = tf.reshape(hidden_states, [-1, width])  # [B*S, D]
        outputs = []
        for i, layer in enumerate(encoder.layers):
            qkv = tf.nn.bias_add(tf.matmul(x, self.qkv_kernels[i]), self.qkv_biases[i])
            qkv = tf.transpose(tf.reshape(qkv, [batch_size, seq_length, 3, heads, size_per_head]),
                               [2, 0, 3, 1, 4])  # [3, B, N, S, H]
            # Scaled by multiplication, then the adder, as the original.
            scores = tf.matmul(qkv[0], qkv[1], transpose_b=True) * (
                1.0 / math.sqrt(float(size_per_head)))  # [B, N, F, T]
            probs = tf.nn.softmax(scores + attention_adder, axis=-1)
            context = tf.transpose(tf.matmul(probs, qkv[2]), [0, 2, 1, 3])  # [B, F, N, H]
            context = tf.reshape(context, [-1, width])  # [B*F, D]
            attended = layer.attention.attention_output(context, x, training=False)
            x = layer.output_block(layer.intermediate(attended), attended, training=False)
            outputs.append(tf.reshape(x, [batch_size, seq_length, width]))
        return outputs
