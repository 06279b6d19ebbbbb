"""Running a tool as a user does: `python tools/<tool>.py --flags`, in a child process."""

import os
import subprocess

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
