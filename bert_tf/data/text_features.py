"""`[CLS] a [SEP] b [SEP]` features from text (original: `convert_single_example`'s core).

The original builds the same sentence(-pair) features in three places:
`run_classifier.convert_single_example`, `extract_features.convert_examples_to_features`
and the Colab's `input_fn_builder`. They are built once, in
`bert_tf.tokenization.pair_features` (which `FullTokenizer.encode` uses
too), and used from here by extract_features, run_classifier and the
SavedModel export.
"""

from bert_tf.tokenization.pair_features import PairFeatures  # noqa: F401
from bert_tf.tokenization.pair_features import build_pair_features  # noqa: F401
from bert_tf.tokenization.pair_features import truncate_seq_pair  # noqa: F401
