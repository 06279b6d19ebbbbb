"""A NumPy re-statement of the original `modeling.py` equations, for tests.

Takes the weights by TF1 name, so it checks our layers against the original's
maths without sharing any code with them.
"""

import math

import numpy as np


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def bert_forward(w, config, input_ids, input_mask, token_type_ids):
    """Returns (all_encoder_layers, pooled_output) in float64."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    b, s = input_ids.shape
    d, n = config.hidden_size, config.num_attention_heads
    h = d // n
    x = (w["bert/embeddings/word_embeddings"][input_ids]
         + np.eye(config.type_vocab_size)[token_type_ids] @ w["bert/embeddings/token_type_embeddings"]
         + w["bert/embeddings/position_embeddings"][:s][None])
    x = layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
    mask = np.ones((b, s, 1)) * input_mask.reshape(b, 1, s)  # [B, F, T]
    adder = (1.0 - mask[:, None]) * -10000.0  # [B, 1, F, T]
    layers = []
    for i in range(config.num_hidden_layers):
        p = "bert/encoder/layer_%d/" % i

        def dense(t, name):
            return t @ w[p + name + "/kernel"] + w[p + name + "/bias"]

        q = dense(x, "attention/self/query").reshape(b, s, n, h).transpose(0, 2, 1, 3)
        k = dense(x, "attention/self/key").reshape(b, s, n, h).transpose(0, 2, 1, 3)
        v = dense(x, "attention/self/value").reshape(b, s, n, h).transpose(0, 2, 1, 3)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(h) + adder
        ctx = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
        a = layer_norm(dense(ctx, "attention/output/dense") + x,
                       w[p + "attention/output/LayerNorm/gamma"],
                       w[p + "attention/output/LayerNorm/beta"])
        inter = gelu(dense(a, "intermediate/dense"))
        x = layer_norm(dense(inter, "output/dense") + a, w[p + "output/LayerNorm/gamma"],
                       w[p + "output/LayerNorm/beta"])
        layers.append(x)
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    return layers, pooled
