"""Running a tool: in this process (`run_tool`), or as a user does, in a child process.

`run_tool("run_classifier", argv)` calls the tool's `TOOL.run` here, with its
log lines captured: what most tests need (the files a run writes, its
results, its log), without a new process that imports TensorFlow again.
`run([sys.executable, "tools/run_classifier.py", ...])` runs the command line
for real: what the exit status, stderr, signals, kill -9 and clusters need
(each tool keeps at least one such test).
"""

import contextlib
import importlib
import json
import logging
import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Lines(logging.Handler):
    """Keeps the formatted log records (absl's INFO progress, warnings, ...) as lines."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    @property
    def text(self):
        return "\n".join(self.lines) + "\n"


@contextlib.contextmanager
def captured_logs(logger_name=None, verbosity="info"):
    """Within: the log records of `logger_name` (default: every Python logger's) kept
    in `.lines` / `.text`; absl's verbosity set to `verbosity` (None: left as it is)."""
    from absl import logging as absl_logging
    handler = _Lines()
    logger = logging.getLogger(logger_name)
    old_verbosity = absl_logging.get_verbosity()
    if verbosity is not None:
        absl_logging.set_verbosity(verbosity)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        absl_logging.set_verbosity(old_verbosity)


def run_tool(name, argv):
    """Runs `bert_tf.tools.<name>` in this process: (its run's result, its log as text).

    A mistake in the flags or inputs raises the `UserError` that the command
    line prints as `error: <message>`.
    """
    module = importlib.import_module("bert_tf.tools." + name)
    with captured_logs() as logs:
        result = module.TOOL.run([name] + [str(a) for a in argv])
    return result, logs.text


def user_errors_here(name, cases):
    """{case name: the UserError's message, or None if the run returned}, in this process.

    `cases`: list of (name, argv, ...). Each case must fail before training
    (a bad flag or input), so nothing of the case lingers in this process.
    """
    from bert_tf.errors import UserError
    module = importlib.import_module("bert_tf.tools." + name)
    results = {}
    for case in cases:
        try:
            module.TOOL.run([name] + [str(a) for a in case[1]])
            results[case[0]] = None
        except UserError as e:
            results[case[0]] = str(e)
    return results


def tool_env():
    """The environment of a tool run: the repository importable, CPU only, no cluster."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_CONFIG", None)
    return env


def start(command):
    """Starts `command` (a list) in the repository root; stdout and stderr are captured."""
    return subprocess.Popen(command, cwd=REPO_ROOT, env=tool_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=300):
    """Waits for `proc`: (returncode, stdout, stderr); killed after `timeout` seconds."""
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


def run(command, timeout=300):
    return finish(start(command), timeout)


# ----------------------------------------------------------------- user errors
#
# Each tool's bad-input cases run in one child process (a fresh process per
# case would import TensorFlow each time): the tool's `TOOL.run(argv)` once per argv,
# recording the one-line `UserError` that its `main` would print as `error: <message>`.


def start_user_errors(tool, cases, work_dir):
    """Starts a child that runs `tool`'s `bert_tf.tools.<name>.TOOL.run` once per case.

    Args:
      tool: path of a script in tools/.
      cases: list of (name, argv, ...) (argv without the program name).
      work_dir: where the cases and results files go.

    Returns:
      (process, results file) for `read_user_errors`.
    """
    cases_json = os.path.join(str(work_dir), "cases.json")
    with open(cases_json, "w") as f:
        json.dump([[case[0], case[1]] for case in cases], f)
    results_json = os.path.join(str(work_dir), "results.json")
    return start([sys.executable, "-m", "tests.tools.toolrun", tool, cases_json,
                  results_json]), results_json


def read_user_errors(started):
    """{case name: the UserError's message, or None if main() returned}."""
    proc, results_json = started
    rc, _, err = finish(proc)
    assert rc == 0, err[-4000:]
    with open(results_json) as f:
        return json.load(f)


def user_errors(tool, cases, work_dir):
    return read_user_errors(start_user_errors(tool, cases, work_dir))


# ----------------------------------------------------------------- bad inputs
#
# Inputs that several tools must refuse with one line.


def vocab_with_extra_tokens(vocab_file, path, num_extra=3):
    """A copy of `vocab_file` with `num_extra` more tokens: (path, number of tokens)."""
    with open(vocab_file, encoding="utf-8") as f:
        tokens = f.read().splitlines()
    tokens += ["extra%d" % i for i in range(num_extra)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return str(path), len(tokens)


def vocab_without(vocab_file, path, token):
    """A copy of `vocab_file` without the line `token` (e.g. "[CLS]")."""
    with open(vocab_file, encoding="utf-8") as f:
        tokens = [t for t in f.read().splitlines() if t != token]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return str(path)


def path_under_a_file(directory, name="output"):
    """(`directory/a_file/<name>`, `directory/a_file`): a path that cannot be created."""
    os.makedirs(str(directory), exist_ok=True)
    blocker = os.path.join(str(directory), "a_file")
    with open(blocker, "w") as f:
        f.write("not a directory\n")
    return os.path.join(blocker, name), blocker


def _run_user_error_cases(tool, cases_json, results_json):
    sys.path.insert(0, os.path.dirname(tool))
    name = os.path.splitext(os.path.basename(tool))[0]
    importlib.import_module(name)  # tools/<name>.py: the clone's bert_tf, then the tool
    module = importlib.import_module("bert_tf.tools." + name)  # its Tool
    from bert_tf.errors import UserError
    with open(cases_json) as f:
        cases = json.load(f)
    results = {}
    for name, argv in cases:
        try:
            module.TOOL.run([tool] + argv)
            results[name] = None
        except UserError as e:
            results[name] = str(e)
    with open(results_json, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    _run_user_error_cases(*sys.argv[1:])
