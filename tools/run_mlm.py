"""`python tools/run_mlm.py`: `bert_tf.tools.run_mlm` on this clone's own bert_tf.

Installed, the same tool is `bert-run-mlm`; `--help` shows its flags.
"""

import sys

try:  # tools/_bootstrap.py: in a clone, the clone's own bert_tf; quiet TensorFlow
    import _bootstrap  # noqa: F401
except ImportError:  # a tool copied out of tools/, or run by runpy: the bert_tf installed
    pass

from bert_tf.tools.run_mlm import main

if __name__ == "__main__":
    sys.exit(main())
