"""The sentence embedder's SavedModel: raw text or features in, embeddings out.

`EmbeddingsServingModule` (bert-export-saved-model's embeddings kind,
`bert_tf.export.kinds.EXPORTS`), and `embed`, the pooled embeddings of a
features dict that it and the int8 export compute.
"""

import tensorflow as tf

from bert_tf.export import serving_module
from bert_tf.tasks.embeddings.model import check_pooling
from bert_tf.tasks.embeddings.model import pool


def embed(model, features, pooling, normalize):
    """A `BertModel`'s embeddings of a features dict: float32 [B, H], pooled over the real tokens."""
    out = model(features["input_ids"], input_mask=features["input_mask"],
                token_type_ids=features["segment_ids"], training=False)
    return pool(out["sequence_output"], features["input_mask"], pooling, normalize)


class EmbeddingsServingModule(serving_module.TextServingModule):
    """A sentence embedder served from raw text or features (`bert_tf.tasks.embeddings.model`).

    Each text is embedded on its own (`[CLS] text [SEP]`, truncated to
    max_seq_length - 2 tokens), as `SentenceEmbedder.encode` does.

    Args:
      model: `BertModel` (float32, loaded).
      pooling: "cls", "mean" or "max", over the real tokens.
      normalize: bool, L2-normalize the embeddings.
      tokenizer, max_seq_length, vocab_file: see `serving_module.TextServingModule`.

    Returns (every signature): `embeddings` float32 [batch_size, hidden_size].
    """

    def __init__(self, model, tokenizer, max_seq_length, vocab_file, pooling, normalize,
                 name="embeddings_serving"):
        super().__init__(model, tokenizer, max_seq_length, vocab_file, name=name)
        self._pooling = check_pooling(pooling)
        self._normalize = bool(normalize)
        self.pooling = tf.Variable(self._pooling, trainable=False, name="pooling")
        self.normalize = tf.Variable(self._normalize, trainable=False, name="normalize")

    def outputs(self, features):
        return {"embeddings": embed(self.model, features, self._pooling,
                                     self._normalize)}  # [B, H]

    def signatures(self):
        # One text per example: the default signature is serve_text_a's.
        return {
            tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: self.serve_text_a,
            "serve_text_a": self.serve_text_a,
            "serve_features": self.serve_features,
        }
