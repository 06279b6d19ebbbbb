"""Keras 3 layers that mirror the scopes of the original `modeling.py`."""

from bert_tf.layers.attention import BertAttention
from bert_tf.layers.attention import BertSelfAttention
from bert_tf.layers.embeddings import BertEmbeddings
from bert_tf.layers.masks import attention_mask_adder
from bert_tf.layers.masks import create_attention_mask_from_input_mask
from bert_tf.layers.transformer import BertEncoder
from bert_tf.layers.transformer import BertLayer
from bert_tf.layers.transformer import BertPooler
