"""`python tools/run_multiple_choice.py`: `bert_tf.tools.run_multiple_choice` on this clone's own bert_tf.

Installed, the same tool is `bert-run-multiple-choice`; `--help` shows its flags.
"""

import sys

try:  # tools/_bootstrap.py: in a clone, the clone's own bert_tf; quiet TensorFlow
    import _bootstrap  # noqa: F401
except ImportError:  # a tool copied out of tools/, or run by runpy: the bert_tf installed
    pass

from bert_tf.tools.run_multiple_choice import main

if __name__ == "__main__":
    sys.exit(main())
