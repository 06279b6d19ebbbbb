"""One process that runs the original code's oracles, one job after another.

`python -m tests.original.server` imports the original code once (TF1 graph
mode, legacy Keras: `tests.original.shim`), then reads jobs from stdin, one
JSON line each, `{"module": "model_oracle", "argv": [...]}`, and runs each as
`python -m tests.original.<module> <argv...>` would: `sys.argv` set, the
module run as `__main__` in a fresh namespace, on a fresh default graph. Its
answer is one JSON line on the descriptor it was given (`--answers FD`):
`{"ok": true, "stdout": ...}`, or `{"ok": false, "error": <traceback>}`.
Before each job the original's scripts (`bert.run_classifier`, ...) and the
absl flags they define are unloaded, so a job imports them as a fresh process
would (two of them define flags of one name).

Starting TensorFlow 1 and the original package costs seconds a process; a
test process (`tests.original.run_oracle`) keeps one of these for its life.
"""

import contextlib
import io
import json
import os
import runpy
import sys
import traceback

from tests.original import shim  # noqa: F401  (must come first)

from absl import flags  # noqa: E402


# The original's scripts: each defines its absl flags when imported, several of the same
# names (input_file, output_dir, ...), as only one of them ever ran in a process.
_SCRIPTS = ("bert.run_classifier", "bert.run_classifier_with_tfhub", "bert.run_squad",
            "bert.run_pretraining", "bert.extract_features", "bert.create_pretraining_data")


def _forget_scripts():
    """Unloads the original's scripts and their flags: a job imports the ones it needs anew."""
    flag_values = flags.FLAGS
    by_module = flag_values.flags_by_module_dict()
    for name in _SCRIPTS:
        for flag in list(by_module.get(name, ())):  # delattr edits the list
            if flag.name in flag_values:
                delattr(flag_values, flag.name)
        sys.modules.pop(name, None)
        package, _, attribute = name.partition(".")
        if hasattr(sys.modules.get(package), attribute):  # `from bert import x` reads this
            delattr(sys.modules[package], attribute)


def run_job(job):
    """Runs one oracle job as its own process would: {"ok", "stdout"} or {"ok", "error"}."""
    _forget_scripts()
    shim.tf1.reset_default_graph()
    buffer = io.StringIO()
    saved_argv = sys.argv
    sys.argv = ["tests.original." + job["module"]] + [str(a) for a in job["argv"]]
    try:
        with contextlib.redirect_stdout(buffer):
            runpy.run_module("tests.original." + job["module"], run_name="__main__",
                             alter_sys=True)
    except SystemExit as e:
        if e.code not in (None, 0):
            return {"ok": False, "error": "exit %r\n%s" % (e.code, buffer.getvalue())}
    except BaseException:  # pylint: disable=broad-except
        return {"ok": False, "error": traceback.format_exc()}
    finally:
        sys.argv = saved_argv
    return {"ok": True, "stdout": buffer.getvalue()}


def main(argv):
    answers = os.fdopen(int(argv[argv.index("--answers") + 1]), "w", encoding="utf-8")
    for line in sys.stdin:
        if not line.strip():
            continue
        answers.write(json.dumps(run_job(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main(sys.argv)
