"""A fresh Python process in which only TensorFlow can be imported: how TF Serving sees a SavedModel.

`PRELUDE` is the start of such a script: it makes `BLOCKED` unimportable (as
if not installed), imports `tensorflow as tf`, and checks the blocking works.
A script's body follows it and may report
`sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)`, which must be
empty.
"""

import os
import subprocess
import sys

BLOCKED = ("tensorflow_text", "keras", "tf_keras", "tensorflow_hub", "bert_tf", "tests")

PRELUDE = r'''
import importlib.abc, importlib.machinery, sys

BLOCKED = %r


class Refuse(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """As if not installed: found without a location, and importing it fails."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        raise ModuleNotFoundError("No module named %%r (blocked)" %% spec.name)

    def exec_module(self, module):
        raise ModuleNotFoundError("No module named %%r (blocked)" %% module.__name__)


sys.meta_path.insert(0, Refuse())
import tensorflow as tf

for name in BLOCKED:
    try:
        __import__(name)
    except ModuleNotFoundError:
        continue
    raise SystemExit("could import " + name)
''' % (BLOCKED,)


def run_script(script_text, args, cwd, env_update=None, timeout=300):
    """Runs `script_text` as a file in `cwd` with `args`, without this repository on the path.

    Raises AssertionError with the script's stderr if it fails.
    """
    script = os.path.join(str(cwd), "script.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(script_text)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BACKEND")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.update(env_update or {})
    proc = subprocess.run([sys.executable, script] + [str(a) for a in args], cwd=str(cwd),
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
