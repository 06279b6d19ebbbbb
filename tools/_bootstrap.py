"""What every tool does before it imports bert_tf (`import _bootstrap`, its first import).

Run from a clone (`python tools/run_classifier.py ...`), a tool imports the
clone's own `bert_tf` (its `bert_tf.tools.<name>`), ahead of any installed
copy, and so do the processes it starts (Apache Beam's workers): the clone's
root goes first on `sys.path` and on `PYTHONPATH`. A tool copied out of
`tools/` (or run by `runpy`) finds no `_bootstrap` and uses the installed
package, as the installed console scripts (`bert-run-classifier`, ...) do.

It also selects Keras' TensorFlow backend, unless the environment says
otherwise. TensorFlow's own log lines are the runner's business
(`bert_tf.tools.cli`, which sets TF_CPP_MIN_LOG_LEVEL if the user has not).
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isfile(os.path.join(_ROOT, "bert_tf", "__init__.py")):
    sys.path.insert(0, _ROOT)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
