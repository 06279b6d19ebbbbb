"""Plumbing shared by the absl scripts in `tools/` (the library reads no flags)."""

import os
import sys

from absl import app
from absl import logging

from bert_tf.errors import UserError


def run(main):
    """Runs `main` under `absl.app.run`; a `UserError` becomes one line and exit 2.

    Anything else (a bug) keeps its traceback.
    """

    def _wrapped(argv):
        logging.set_verbosity(logging.INFO)
        try:
            return main(argv)
        except UserError as e:
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            sys.stderr.write("error: %s\n" % message)
            sys.stderr.flush()
            os._exit(2)  # no traceback, no atexit noise from TensorFlow

    app.run(_wrapped)


def split_comma_list(value):
    """`"a, b,,c"` -> `["a", "b", "c"]` (the original's comma-separated flags)."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]
