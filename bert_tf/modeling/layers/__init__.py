"""Keras 3 layers that mirror the scopes of the original `modeling.py`."""

from bert_tf.modeling.layers.attention import BertAttention
from bert_tf.modeling.layers.attention import BertSelfAttention
from bert_tf.modeling.layers.embeddings import BertEmbeddings
from bert_tf.modeling.layers.masks import attention_mask_adder
from bert_tf.modeling.layers.masks import create_attention_mask_from_input_mask
from bert_tf.modeling.layers.transformer import BertEncoder
from bert_tf.modeling.layers.transformer import BertLayer
from bert_tf.modeling.layers.transformer import BertPooler
