"""Tokenization: the original's `tokenization.py` in Python, and the same in a TensorFlow graph.

  full_tokenizer   FullTokenizer, BasicTokenizer, WordpieceTokenizer: the
                   original `tokenization.py`, token for token, in pure
                   Python (no TensorFlow); FullTokenizer's `encode` /
                   batched call / `decode`.
  vocab            the vocab file: `load_vocab` (the original's reading),
                   `check_vocab` (against a config's vocab_size and the
                   special tokens), `convert_by_vocab` and its two forms.
  pair_features    `build_pair_features` and `truncate_seq_pair`: the
                   original's `[CLS] a [SEP] b [SEP]` features.
  graph_tokenizer  GraphTokenizer: the same tokens and packing as core
                   TensorFlow ops (SavedModels, tf.data), tables built from
                   full_tokenizer's own predicates.
  preprocessor     BertPreprocessor: a Keras layer over GraphTokenizer, raw
                   text -> the features of `convert_single_example`.

`bert_tf.tokenization.FullTokenizer` and the original module's other public
names are here, as in the original (`tokenization.FullTokenizer(vocab_file,
do_lower_case)`); importing this package does not import TensorFlow.
"""

from bert_tf.tokenization.full_tokenizer import SPECIAL_TOKENS  # noqa: F401
from bert_tf.tokenization.full_tokenizer import BasicTokenizer  # noqa: F401
from bert_tf.tokenization.full_tokenizer import FullTokenizer  # noqa: F401
from bert_tf.tokenization.full_tokenizer import WordpieceTokenizer  # noqa: F401
from bert_tf.tokenization.full_tokenizer import convert_to_unicode  # noqa: F401
from bert_tf.tokenization.full_tokenizer import printable_text  # noqa: F401
from bert_tf.tokenization.full_tokenizer import validate_case_matches_checkpoint  # noqa: F401
from bert_tf.tokenization.full_tokenizer import whitespace_tokenize  # noqa: F401
from bert_tf.tokenization.vocab import check_vocab  # noqa: F401
from bert_tf.tokenization.vocab import convert_by_vocab  # noqa: F401
from bert_tf.tokenization.vocab import convert_ids_to_tokens  # noqa: F401
from bert_tf.tokenization.vocab import convert_tokens_to_ids  # noqa: F401
from bert_tf.tokenization.vocab import load_vocab  # noqa: F401
from bert_tf.tokenization.pair_features import PairFeatures  # noqa: F401
from bert_tf.tokenization.pair_features import build_pair_features  # noqa: F401
from bert_tf.tokenization.pair_features import truncate_seq_pair  # noqa: F401
