"""Keras' TensorFlow backend, chosen before Keras loads.

Every bert_tf module that imports keras imports this module first: it makes
KERAS_BACKEND default to "tensorflow" before Keras reads it, and stops with
one ImportError if Keras would run (or runs) on another backend. TensorFlow
starts here, its start-up lines on stderr filtered (`bert_tf.tf_stderr`). The modules
that need no Keras (tokenization, config, fileio, errors, the data package's
text modules) do not import it, so importing them leaves the environment and
Keras alone.
"""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def _backend_in_use():
    """The backend Keras has fixed (importing TensorFlow fixes it too), else the one it will read."""
    if "keras" in sys.modules:
        return sys.modules["keras"].config.backend()
    config = sys.modules.get("keras.src.backend.config")
    if config is not None:
        return config.backend()
    return os.environ["KERAS_BACKEND"]


def _check(backend):
    if backend != "tensorflow":
        raise ImportError(
            "bert_tf needs Keras' TensorFlow backend, but Keras runs on %r (KERAS_BACKEND=%r); "
            "set KERAS_BACKEND=tensorflow before importing keras or tensorflow."
            % (backend, os.environ.get("KERAS_BACKEND")))


# Checked before `import keras` too: another backend's package may be missing.
_check(_backend_in_use())

from bert_tf import tf_stderr  # noqa: E402

# TensorFlow starts here (importing Keras imports it; listing the devices starts CUDA,
# which TensorFlow's first op would do anyway, and leaves them configurable): its
# start-up notes and the expected cuInit failure filtered off descriptor 2, as the
# tools filter them (`bert_tf.tf_stderr`), unless TF_CPP_MIN_LOG_LEVEL is 0 or 1.
with tf_stderr.tensorflow_start():
    import keras  # noqa: E402
    import tensorflow as _tf  # noqa: E402
    _tf.config.list_physical_devices()

_check(keras.config.backend())
