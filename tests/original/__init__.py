"""Runs Google's original BERT code (PyPI `bert-tensorflow==1.0.4`) as a test oracle.

The original needs TF1 graph mode and legacy Keras, which must never leak into
the Keras 3 code under test, so it runs in another process: `run_oracle`
sends each job to one oracle process kept for the life of the test process
(`tests/original/server.py`: TensorFlow 1 and the original package load
once; each job runs on a fresh graph, with the original's scripts and their
flags imported anew, as `python -m tests.original.<module>` would).
`BERT_TF_TEST_ORACLE=process` starts a fresh process for every job instead;
`BERT_TF_TEST_ORACLE=skip` (`make test-fast`) skips every test that needs the
original code, at its first job.
"""

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env():
    env = dict(os.environ)
    env.pop("KERAS_BACKEND", None)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


class _OracleProcess(object):
    """`python -m tests.original.server`: jobs in on stdin, answers back on a pipe of their own."""

    def __init__(self):
        read_end, write_end = os.pipe()
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.original.server", "--answers", str(write_end)],
            cwd=REPO_ROOT, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=self._stderr, pass_fds=(write_end,), text=True)
        os.close(write_end)
        self._answers = os.fdopen(read_end, "r", encoding="utf-8")

    def stderr_tail(self):
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-4000:]

    def run(self, module, args, timeout):
        """The job's answer (a dict); raises AssertionError if the process dies or times out."""
        self.proc.stdin.write(json.dumps({"module": module, "argv": args}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self._answers], [], [], timeout)
        line = self._answers.readline() if ready else None
        if not line:
            self.close()
            raise AssertionError("original-code oracle %s %s:\n%s" % (
                module, "timed out after %ss" % timeout if ready == [] else "ended the oracle "
                "process (exit %s)" % self.proc.returncode, self.stderr_tail()))
        return json.loads(line)

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._answers.close()
        self._stderr.close()


_oracles = {}  # module -> its _OracleProcess


def _close_oracles():
    for oracle in _oracles.values():
        if oracle.alive():
            oracle.close()


atexit.register(_close_oracles)


def run_oracle(module, *args, timeout=600):
    """Runs `python -m tests.original.<module> *args` (in the kept oracle process).

    Returns what it printed; raises AssertionError with its error if it fails.
    Each oracle module imports `tests.original.shim` first.
    """
    args = [str(a) for a in args]
    mode = os.environ.get("BERT_TF_TEST_ORACLE")
    if mode == "skip":
        import pytest  # pylint: disable=g-import-not-at-top
        pytest.skip("the original code does not run here (BERT_TF_TEST_ORACLE=skip: "
                    "make test-fast); make test runs it")
    if mode == "process":
        proc = subprocess.run(
            [sys.executable, "-m", "tests.original." + module] + args,
            cwd=REPO_ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError("original-code oracle %s failed (exit %d):\n%s"
                                 % (module, proc.returncode, proc.stderr[-4000:]))
        return proc.stdout
    oracle = _oracles.get("oracle")
    if oracle is None or not oracle.alive():
        oracle = _oracles["oracle"] = _OracleProcess()
    answer = oracle.run(module, args, timeout)
    if not answer["ok"]:
        raise AssertionError("original-code oracle %s failed:\n%s"
                             % (module, answer["error"][-4000:]))
    return answer["stdout"]


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
