"""Runs a Python child process and samples the memory of it and all its workers.

Shared by the create_pretraining_data benchmarks (`pretraining_data_bench.py`,
`beam_bench.py`): both compare modes that fork workers, so memory is the sum
over the process tree, read from /proc (Linux).
"""

import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def descendants(pid):
    """pid and all its descendants (from /proc/*/stat parent links)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def memory_kb(pid):
    """(Rss, Pss) of one process in kB, from /proc/<pid>/smaps_rollup."""
    rss = pss = 0
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def run_python(args):
    """Runs `python args` in the repository.

    Returns (stdout, wall seconds, peak tree RSS kB, peak tree PSS kB, the most
    processes seen). The sums over the process and its workers are sampled
    every 0.25 s (workers are looked up every second), so a short spike can be
    missed. PSS splits shared pages between the processes sharing them; RSS
    counts them in each.
    """
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    if "tests.original" in " ".join(args):
        env.pop("KERAS_BACKEND", None)  # the oracle uses legacy Keras
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable] + args, cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = {}

    def drain():
        outputs["out"], outputs["err"] = proc.communicate()

    reader = threading.Thread(target=drain)
    reader.start()
    peak_rss = peak_pss = samples = max_processes = 0
    pids = [proc.pid]
    while reader.is_alive():
        if not samples % 4:  # scanning /proc is the expensive part
            pids = descendants(proc.pid)
            max_processes = max(max_processes, len(pids))
        samples += 1
        memory = [memory_kb(p) for p in pids]
        peak_rss = max(peak_rss, sum(m[0] for m in memory))
        peak_pss = max(peak_pss, sum(m[1] for m in memory))
        reader.join(0.25)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(args), outputs["err"][-3000:]))
    return outputs["out"], wall, peak_rss, peak_pss, max_processes
