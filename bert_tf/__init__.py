"""bert_tf: Google's original BERT, faithfully, on TensorFlow 2 / Keras 3."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402

if keras.config.backend() != "tensorflow":
    raise ImportError(
        "bert_tf needs Keras' TensorFlow backend, but KERAS_BACKEND=%r; set "
        "KERAS_BACKEND=tensorflow before importing keras." % keras.config.backend())

from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.modeling import BertModel  # noqa: E402

__version__ = "0.1.0"
__all__ = ["BertConfig", "BertModel"]
