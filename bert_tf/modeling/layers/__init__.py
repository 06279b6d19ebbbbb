"""Keras 3 layers that mirror the scopes of the original `modeling.py`.

Repeated on purpose: each layer (and each head of `bert_tf.modeling.heads`)
keeps its TF1 scope's hyper-parameters as attributes and returns exactly
its own constructor's arguments from `get_config` (what Keras' `from_config`
passes back), with its own `compute_output_shape`. These lists look alike
from layer to layer, as the original's scopes take alike arguments; a shared
base class or table would hide, behind indirection, which arguments a layer
takes and which it saves, and would tie the layers' saved configs together.
"""

from bert_tf.modeling.layers.attention import BertAttention
from bert_tf.modeling.layers.attention import BertSelfAttention
from bert_tf.modeling.layers.embeddings import BertEmbeddings
from bert_tf.modeling.layers.masks import attention_mask_adder
from bert_tf.modeling.layers.masks import create_attention_mask_from_input_mask
from bert_tf.modeling.layers.transformer import BertEncoder
from bert_tf.modeling.layers.transformer import BertLayer
from bert_tf.modeling.layers.transformer import BertPooler
