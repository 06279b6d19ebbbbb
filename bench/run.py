r"""The whole benchmark suite, one script after another: what `make bench` runs.

  .venv/bin/python bench/run.py [--quick | --full] [--only forward_bench,tokenizer_bench] \
      [--peer_python=bench/.peers/bin/python]

Runs each benchmark script of `bench/` in its own process, in the order of
SCRIPTS, with this interpreter; their output streams through as they run.
`--quick` (what `make bench` runs; about 24 minutes on 2 cores) passes each
script its quick flags; `--full` (`make bench-full`, for a quiet machine) its
full-size defaults. The peers (keras-hub, TF Model Garden) come from the
interpreter of `--peer_python` (`bench/setup_peers.sh` makes it). At the end,
every script's tables (with the lines around them) are printed again under one
heading each, with the exact command that produced them, then one status line
per script. A script that fails, times out or does not exist is reported in its
line with its exit code, and the others still run; the exit code is 1 if any
did not succeed.
"""

import os
import signal
import subprocess
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402

PEERS_PYTHON = os.path.join("bench", ".peers", "bin", "python")

# name -> (flags in quick mode, flags in full mode, whether it takes --peer_python), in run order.
# Every bench/*_bench.py is here (tests/test_bench_harness.py checks).
SCRIPTS = (
    ("forward_bench", ["--quick"], [], True),
    ("bf16_inference_bench", ["--quick"], [], False),
    ("serving_bench", ["--quick"], [], True),
    ("matmul_bench", ["--quick"], [], False),
    ("int8_bench", ["--quick"], [], False),
    ("pretraining_bench", ["--quick"], [], True),
    ("optimizer_bench", ["--quick"], [], True),
    ("finetuning_bench", ["--quick"], [], True),
    ("finetune_speed_bench", ["--quick"], [], False),
    ("step_parts_bench", ["--quick"], [], False),
    ("pretraining_data_bench", ["--quick"], [], False),
    ("tokenizer_bench", ["--quick"], [], False),
    ("graph_tokenizer_bench", ["--quick"], [], False),
    ("input_pipeline_bench", ["--quick"], [], False),
    ("input_check_bench", ["--num_batches=500", "--rounds=2"], [], False),
    ("scaling_bench", ["--quick"], [], False),
    ("recompute_memory_bench", ["--quick"], [], False),
    ("beam_bench", ["--sizes=1", "--original_max_size=1"], [], False),
)

# How much of a script's output goes with each of its tables into the summary.
_LINES_BEFORE = 5
_LINES_AFTER = 15


def _paragraph(lines, index, step, limit):
    """The index just past the paragraph that starts at `index` going `step` (+1 or -1):
    non-blank lines that are neither table rows nor JSON, at most `limit` of them."""
    count = 0
    while (0 <= index < len(lines) and count < limit and lines[index].strip()
           and not lines[index].startswith(("|", "{"))):  # JSON lines are data, not prose
        index += step
        count += 1
    return index


def extract_tables(lines):
    """The markdown tables of a script's stdout, each with its caption and notes.

    The caption is the paragraph just above the table (at most _LINES_BEFORE
    lines; one blank line may separate them), the notes the paragraph just below
    it (at most _LINES_AFTER lines), either right under the table or, after one
    blank line, a list ("- " lines). Paragraphs end at blank lines; a line is
    never in two blocks. Returns a list of blocks, each a list of lines.
    """
    lines = [line.rstrip("\n") for line in lines]
    blocks = []
    previous_end = 0
    i = 0
    while i < len(lines):
        if not lines[i].startswith("|"):
            i += 1
            continue
        end = i
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        above = i - 1
        if above >= 1 and not lines[above].strip() and lines[above - 1].strip():
            above -= 1  # one blank line between the caption and the table
        start = _paragraph(lines, above, -1, _LINES_BEFORE) + 1
        start = i if start > above else start
        start = max(start, previous_end)  # a note of the table before is not this one's caption
        below = end
        if (below + 1 < len(lines) and not lines[below].strip()
                and lines[below + 1].startswith("- ")):
            below += 1  # a list of notes after one blank line
        after = _paragraph(lines, below, +1, _LINES_AFTER)
        after = end if after == below else after
        blocks.append(lines[start:after])
        previous_end = after
        i = end
    return blocks


def last_paragraph(lines, limit=_LINES_AFTER):
    """The last paragraph of a script's stdout (at most `limit` lines)."""
    lines = [line.rstrip("\n") for line in lines]
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    start = end
    while start and end - start < limit and lines[start - 1].strip():
        start -= 1
    return lines[start:end]


def command_line(argv):
    """A command as it can be pasted in the repository root (paths made relative)."""
    def relative(path):
        if os.path.isabs(path) and path.startswith(REPO + os.sep):
            return os.path.relpath(path, REPO)
        return path

    def show(arg):
        flag, eq, value = arg.partition("=")
        arg = flag + eq + relative(value) if eq and flag.startswith("--") else relative(arg)
        return arg if arg and not set(arg) & set(" '\"$\\;&|<>*?()") else "'%s'" % arg
    return " ".join(show(arg) for arg in argv)


def run_script(argv, timeout):
    """Runs one script (stdout captured and echoed, stderr passed through).

    Returns (status, stdout lines, seconds); status is "ok", "exit N" or "timed out".
    """
    start = time.time()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True, bufsize=1,
                            start_new_session=True)
    deadline = start + timeout
    lines = []
    timed_out = False
    # A timer kills the script's process group when its time is up; reading stops at EOF.

    def kill():
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the script and its own children
        except ProcessLookupError:
            pass

    def time_up():
        nonlocal timed_out
        timed_out = True
        kill()

    timer = threading.Timer(max(0.0, deadline - time.time()), time_up)
    timer.start()
    try:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line)
        proc.wait()
    except KeyboardInterrupt:  # its own session does not see the terminal's Ctrl-C
        kill()
        raise
    finally:
        timer.cancel()
    seconds = time.time() - start
    if timed_out:
        return "timed out after %d s" % timeout, lines, seconds
    return ("ok" if proc.returncode == 0 else "exit %d" % proc.returncode), lines, seconds


def parse_args(argv, scripts):
    parser = benchlib.ArgumentParser(prog="run.py", description=__doc__.splitlines()[0])
    # The last of --quick / --full counts: `make bench BENCH_FLAGS=--full` is `--quick --full`.
    parser.add_argument("--quick", dest="mode", action="store_const", const="quick",
                        default="quick", help="every script's quick flags (the default)")
    parser.add_argument("--full", dest="mode", action="store_const", const="full",
                        help="every script's full-size defaults")
    parser.add_argument("--only", default="", help="comma-separated script names (default: all)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the scripts")
    parser.add_argument("--peer_python", default=None,
                        help="the peers' interpreter (default: %s when it exists)" % PEERS_PYTHON)
    parser.add_argument("--timeout", type=int, default=None,
                        help="seconds a script may run (default: 900 quick, 3600 full)")
    parser.add_argument("--dry_run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    names = [name for name, _, _, _ in scripts]
    args.only = [n[:-3] if n.endswith(".py") else n for n in args.only.split(",") if n]
    for name in args.only:
        if name not in names:
            parser.error("--only: unknown benchmark %r (one of %s)" % (name, ", ".join(names)))
    if args.timeout is None:
        args.timeout = 3600 if args.mode == "full" else 900
    elif args.timeout < 1:
        parser.error("--timeout must be at least 1, got %d" % args.timeout)
    if args.peer_python is None and os.path.exists(os.path.join(REPO, PEERS_PYTHON)):
        args.peer_python = os.path.join(REPO, PEERS_PYTHON)
    if args.peer_python and not os.path.exists(args.peer_python):
        parser.error("--peer_python: no such interpreter: %s" % args.peer_python)
    return args


def commands(args, scripts, bench_dir):
    """[(name, argv or None where the script does not exist)] in run order."""
    out = []
    for name, quick, full, takes_peer in scripts:
        if args.only and name not in args.only:
            continue
        path = os.path.join(bench_dir, name + ".py")
        argv = [args.python, path] + (full if args.mode == "full" else quick)
        if takes_peer and args.peer_python:
            argv.append("--peer_python=" + args.peer_python)
        out.append((name, argv if os.path.exists(path) else None))
    return out


def main(argv=None, scripts=SCRIPTS, bench_dir=BENCH):
    args = parse_args(sys.argv[1:] if argv is None else argv, scripts)
    mode = args.mode
    results = []
    for name, cmd in commands(args, scripts, bench_dir):
        if args.dry_run:
            print(command_line(cmd) if cmd else "# %s: no bench/%s.py" % (name, name))
            continue
        print("\n=== %s (%s) ===" % (name, mode))
        if cmd is None:
            print("bench/%s.py does not exist" % name)
            results.append((name, None, "missing", [], 0.0))
            continue
        print("$ " + command_line(cmd))
        sys.stdout.flush()
        status, lines, seconds = run_script(cmd, args.timeout)
        results.append((name, cmd, status, lines, seconds))
    if args.dry_run:
        return 0
    print("\n\n# Benchmark summary (%s mode)" % mode)
    for name, cmd, status, lines, _ in results:
        print("\n## %s\n" % name)
        if cmd:
            print("```\n%s\n```\n" % command_line(cmd))
        blocks = extract_tables(lines)
        for block in blocks:
            print("\n".join(block) + "\n")
        if status != "ok":
            print("(%s)\n" % ("bench/%s.py does not exist" % name if status == "missing"
                              else "failed: " + status))
        elif not blocks:
            tail = last_paragraph(lines)
            print("(no table printed; its last lines:)\n\n%s\n" % "\n".join(tail) if tail
                  else "(no output)\n")
    print("## Status\n")
    failed = 0
    for name, _, status, _, seconds in results:
        if status != "ok":
            failed += 1
        print("- %s: %s%s" % (name, "FAILED, " + status if status != "ok" else "ok",
                              ", %.0f s" % seconds if status != "missing" else ""))
    print("\n%d of %d benchmarks succeeded; %d failed." % (len(results) - failed, len(results),
                                                         failed))
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
