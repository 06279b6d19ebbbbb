"""`python tools/run_classifier_with_tfhub.py`: the `bert_tf.tools` tool on this clone's bert_tf.

Installed, the same tool is `bert-run-classifier-with-tfhub`; `--help` shows its flags.
"""

import sys

try:  # tools/_bootstrap.py: in a clone, the clone's own bert_tf; quiet TensorFlow
    import _bootstrap  # noqa: F401
except ImportError:  # a tool copied out of tools/, or run by runpy: the bert_tf installed
    pass

from bert_tf.tools.run_classifier_with_tfhub import main

if __name__ == "__main__":
    sys.exit(main())
