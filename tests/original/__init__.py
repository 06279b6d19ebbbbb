"""Runs Google's original BERT code (PyPI `bert-tensorflow==1.0.4`) as a test oracle.

Every oracle runs in its own Python process (see `run_oracle`), because the
original needs TF1 graph mode and legacy Keras, which must never leak into the
Keras 3 code under test.
"""

import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_oracle(module, *args, timeout=600):
    """Runs `python -m tests.original.<module> *args` in a fresh process.

    Returns the process's stdout; raises AssertionError with its stderr if it
    fails. Each oracle module imports `tests.original.shim` first.
    """
    env = dict(os.environ)
    env.pop("KERAS_BACKEND", None)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.original." + module] + [str(a) for a in args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("original-code oracle %s failed (exit %d):\n%s"
                             % (module, proc.returncode, proc.stderr[-4000:]))
    return proc.stdout


def code_point_ranges(predicate):
    """`[[first, last], ...]`: the runs of code points for which `predicate(cp)` holds.

    Both sides of the character-class comparison (ours and the oracle's) use
    it, so the two lists compare directly.
    """
    ranges = []
    for cp in range(sys.maxunicode + 1):
        if predicate(cp):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return ranges
