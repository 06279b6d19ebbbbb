"""bert_tf: Google's original BERT, faithfully, on TensorFlow 2 / Keras 3.

`import bert_tf` is light: the names below load on first use (PEP 562), and
importing `bert_tf.tokenization`, `bert_tf.modeling.config`, `bert_tf.fileio` or the
`bert_tf.data` text modules imports neither TensorFlow nor Keras (validating a
`BertConfig` loads Keras, for its activation names). The model-side modules
select Keras' TensorFlow backend when they load (`bert_tf._backend`).
`TF_CPP_MIN_LOG_LEVEL` defaults to 2 (TensorFlow's C++ warnings off), and
TensorFlow's start-up lines are filtered while it starts (`bert_tf.tf_stderr`).
"""

import os as _os

from bert_tf import _lazy

__version__ = "0.2.0"

# TensorFlow's C++ INFO and WARNING lines (Grappler's "Skipping loop
# optimization", XLA's start-up notes, the CPU feature guard) stay hidden
# unless the environment asks for them: TensorFlow reads this when it loads,
# and every bert_tf module that loads it loads this package first. (The few
# lines TensorFlow writes while loading, before its logging starts, it ignores:
# `bert_tf._backend` starts TensorFlow through a filter on stderr for those,
# `bert_tf.tf_stderr`, and the tools filter their whole run.)
# (Whether the value is this default, not the user's: the tools' --verbosity=1
# lowers it.)
_tf_log_level_defaulted = "TF_CPP_MIN_LOG_LEVEL" not in _os.environ
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Public name -> (module, attribute); attribute None means the module itself.
_LAZY = {
    "BertConfig": ("bert_tf.modeling.config", "BertConfig"),
    "BertModel": ("bert_tf.modeling.bert_model", "BertModel"),
    "from_pretrained": ("bert_tf.pretrained", "from_pretrained"),
    "Pretrained": ("bert_tf.pretrained", "Pretrained"),
    "models": ("bert_tf.models", None),
    "BertPretrainer": ("bert_tf.models", "BertPretrainer"),
    "BertFillMask": ("bert_tf.models", "BertFillMask"),
    "BertClassifier": ("bert_tf.models", "BertClassifier"),
    "BertSquad": ("bert_tf.models", "BertSquad"),
    "BertPreprocessor": ("bert_tf.models", "BertPreprocessor"),
    "SentenceEmbedder": ("bert_tf.models", "SentenceEmbedder"),
    "BertMultipleChoice": ("bert_tf.models", "BertMultipleChoice"),
    "BertTokenClassifier": ("bert_tf.models", "BertTokenClassifier"),
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = _lazy.names(__name__, _LAZY)
