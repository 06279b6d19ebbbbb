"""The benchmark harness: `make bench`'s runner, the peers' set-up, the shared timing helpers.

No benchmark runs here (speed is never asserted by a test): the runner runs
stand-in scripts, and the helpers are checked on known numbers.
"""

import glob
import os
import re
import subprocess
import sys
import textwrap

import pytest

from bench import benchlib
from bench import forward_bench
from bench import run as bench_run

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP_PEERS = os.path.join(REPO_ROOT, "bench", "setup_peers.sh")


# --- run.py: every benchmark is in `make bench` ---------------------------------------------

def test_run_py_knows_every_benchmark_script():
    on_disk = {os.path.basename(p)[:-3]
               for p in glob.glob(os.path.join(REPO_ROOT, "bench", "*_bench.py"))}
    known = [name for name, _, _, _ in bench_run.SCRIPTS]
    assert on_disk, "no bench/*_bench.py found"
    assert sorted(on_disk - set(known)) == [], "left out of bench/run.py's SCRIPTS"
    assert len(known) == len(set(known))
    assert all(name.endswith("_bench") for name in known)


def test_run_py_dry_run_quick_and_full_commands():
    proc = subprocess.run([sys.executable, "bench/run.py", "--dry_run", "--only",
                           "forward_bench,bf16_inference_bench", "--peer_python", sys.executable],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].split()[1:3] == ["bench/forward_bench.py", "--quick"]
    assert lines[0].split()[-1] == "--peer_python=" + bench_run.command_line([sys.executable])
    assert lines[1].split()[1:] == ["bench/bf16_inference_bench.py", "--quick"]
    # `make bench BENCH_FLAGS=--full` passes --quick --full: the last one counts.
    proc = subprocess.run([sys.executable, "bench/run.py", "--quick", "--full", "--dry_run",
                           "--only", "bf16_inference_bench"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.split()[1:] == ["bench/bf16_inference_bench.py"]


def test_run_py_unknown_benchmark_is_a_one_line_error():
    proc = subprocess.run([sys.executable, "bench/run.py", "--only", "no_such_bench"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "--only" in proc.stderr
    assert "no_such_bench" in proc.stderr


def _write(path, text):
    path.write_text(textwrap.dedent(text))


def test_run_py_runs_on_after_a_failure_and_collects_the_tables(tmp_path, capsys):
    _write(tmp_path / "good_bench.py", """\
        import sys
        print("log line, not in the summary")
        print()
        print("Caption of the table, %s." % " ".join(sys.argv[1:]))
        print("| impl | seq/s |")
        print("|---|---:|")
        print("| ours | 2.0 |")
        print("- a note under the table")
        print()
        print("trailing log")
        """)
    _write(tmp_path / "bad_bench.py", """\
        import sys
        print("| half | table |")
        sys.exit(3)
        """)
    _write(tmp_path / "plain_bench.py", """\
        print("log")
        print()
        print("result: 42 records/s")
        print("second line")
        print()
        """)
    scripts = (("good_bench", ["--quick"], ["--big"], False),
               ("missing_bench", ["--quick"], [], False),
               ("bad_bench", [], [], False),
               ("plain_bench", [], [], False))
    code = bench_run.main(["--quick"], scripts=scripts, bench_dir=str(tmp_path))
    out = capsys.readouterr().out
    assert code == 1
    summary = out.split("# Benchmark summary (quick mode)")[1]
    good = summary.split("## good_bench")[1].split("## ")[0]
    assert "good_bench.py --quick" in good
    assert ("Caption of the table, --quick.\n| impl | seq/s |\n|---|---:|\n| ours | 2.0 |\n"
            "- a note under the table\n") in good
    assert "log line" not in good and "trailing log" not in good
    status = summary.split("## Status")[1]
    assert re.search(r"- good_bench: ok, \d+ s", status)
    assert "- missing_bench: FAILED, missing" in status
    assert re.search(r"- bad_bench: FAILED, exit 3, \d+ s", status)
    assert "2 of 4 benchmarks succeeded; 2 failed." in status
    plain = summary.split("## plain_bench")[1].split("## ")[0]
    assert "(no table printed; its last lines:)\n\nresult: 42 records/s\nsecond line\n" in plain
    assert "log" not in plain
    # The bad script ran after the missing one: the run went on.
    assert out.index("=== bad_bench") > out.index("=== missing_bench")


def test_run_py_times_out_a_script(tmp_path, capsys):
    _write(tmp_path / "slow_bench.py",
           "import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    code = bench_run.main(["--timeout=1"], scripts=(("slow_bench", [], [], False),),
                          bench_dir=str(tmp_path))
    assert code == 1
    assert "slow_bench: FAILED, timed out after 1 s" in capsys.readouterr().out


def test_extract_tables_keeps_caption_and_notes_of_each_table():
    lines = ["noise", "", "Table one:", "| a |", "|---|", "| 1 |", "- note one",
             "Table two:", "| b |", "|---|", "", "unrelated log"]
    assert bench_run.extract_tables(lines) == [
        ["Table one:", "| a |", "|---|", "| 1 |", "- note one", "Table two:"],
        ["| b |", "|---|"]]
    assert bench_run.extract_tables(["no tables", ""]) == []
    # Markdown's own layout: blank lines around the table, notes as a list.
    lines = ["log", "", "Caption", "", "| c |", "|---|", "", "- note", "- note 2", "", "log",
             "", "", "| d |", "", "log after"]
    assert bench_run.extract_tables(lines) == [
        ["Caption", "", "| c |", "|---|", "", "- note", "- note 2"], ["| d |"]]
    # JSON lines above a table are data, not its caption.
    assert bench_run.extract_tables(['{"a": 1}', "", "| e |"]) == [["| e |"]]


# --- setup_peers.sh: every package pinned -----------------------------------------------------

def _pin_arrays():
    text = open(SETUP_PEERS).read()
    arrays = dict(re.findall(r"^(\w+_PINS)=\(\n(.*?)^\)", text, re.M | re.S))
    return text, {name: body.split() for name, body in arrays.items()}


def test_setup_peers_pins_every_package_it_installs():
    text, arrays = _pin_arrays()
    assert sorted(arrays) == ["KERAS_HUB_PINS", "MODEL_GARDEN_PINS"]
    for name, pins in arrays.items():
        assert pins, name
        for pin in pins:
            assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9.]*", pin), (name, pin)
    pins = [pin for pins in arrays.values() for pin in pins]
    for required in ("keras-hub==0.32.0", "tf-models-official==2.20.0", "tf-keras==2.21.0",
                     "gin-config==0.5.0"):
        assert required in pins
    assert any(pin.startswith("scipy==") for pin in pins)
    # Every install command installs only the pinned arrays (Model Garden without its own pins).
    installs = [line.strip() for line in text.splitlines()
                if re.match(r'\s*"\$\{PIP\[@\]\}"', line)]
    assert installs == ['"${PIP[@]}" "${KERAS_HUB_PINS[@]}"',
                        '"${PIP[@]}" --no-deps "${MODEL_GARDEN_PINS[@]}"']
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert len(re.findall(r"pip install", code)) == 1  # the PIP command itself


def test_setup_peers_is_idempotent_with_its_marker(tmp_path):
    _, arrays = _pin_arrays()
    venv = tmp_path / "peers"
    (venv / "bin").mkdir(parents=True)
    fake_python = venv / "bin" / "python"
    fake_python.write_text("#!/bin/sh\nexit 1\n")  # never run when the marker is current
    fake_python.chmod(0o755)
    pins = arrays["KERAS_HUB_PINS"] + arrays["MODEL_GARDEN_PINS"]
    (venv / ".installed").write_text(" ".join(pins))
    proc = subprocess.run(["bash", SETUP_PEERS, sys.executable, "--venv", str(venv)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "is set up" in proc.stdout


def test_setup_peers_bad_arguments_are_one_line_errors(tmp_path):
    for args in ([], [str(tmp_path / "no_python")], [sys.executable, "--bogus"]):
        proc = subprocess.run(["bash", SETUP_PEERS] + args, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2, args
        assert len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)


# --- benchlib: the figures of every table ----------------------------------------------------

def test_median_spread_summarize_ratio():
    assert benchlib.median([3.0, 1.0, 2.0]) == 2.0
    assert benchlib.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError):
        benchlib.median([])
    rounds = [[1.0, 2.0, 9.0], [4.0, 5.0, 6.0]]
    assert benchlib.spread(rounds) == (2.0, 5.0)
    assert benchlib.summarize(rounds) == {"median": 4.5, "low": 2.0, "high": 5.0, "rounds": 2,
                                          "calls": 6}
    assert benchlib.ratio(3.0, 2.0) == 1.5
    assert benchlib.ratio(3.0, 0) is None and benchlib.ratio(None, 2.0) is None
    assert benchlib.format_ratio(1.0 / 3.0) == "0.33x" and benchlib.format_ratio(None) == ""
    assert benchlib.format_number(12345.678) == "12,345.7"
    assert benchlib.format_spread(8.04, 9.96) == "8.0-10.0"
    assert benchlib.alternating_order("abc", 0) == ["a", "b", "c"]
    assert benchlib.alternating_order("abc", 1) == ["c", "b", "a"]


def test_markdown_table():
    assert benchlib.markdown_table(["impl", "seq/s", "vs peer"], [["ours", "2.0", "1.10x"]]) == (
        "| impl | seq/s | vs peer |\n|---|---:|---:|\n| ours | 2.0 | 1.10x |")
    assert benchlib.markdown_table(["a", "b"], [], align="ll") == "| a | b |\n|---|---|"
    with pytest.raises(ValueError):
        benchlib.markdown_table(["a", "b"], [["only one"]])


def test_worker_round_trip_and_errors(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(textwrap.dedent("""\
        import sys
        sys.path.insert(0, %r)
        import benchlib
        print("noise before ready")
        def handle(request):
            if request["cmd"] == "boom":
                raise ValueError("bad request")
            return {"double": 2 * request["x"]}
        benchlib.serve({"label": "child"}, handle)
        """ % os.path.join(REPO_ROOT, "bench")))
    worker = benchlib.Worker("child", [sys.executable, str(child)])
    try:
        assert worker.ready() == {"label": "child"}
        assert worker.request(cmd="double", x=21) == {"double": 42}
        with pytest.raises(benchlib.WorkerError, match="child: ValueError: bad request"):
            worker.request(cmd="boom")
        assert worker.request(cmd="double", x=1) == {"double": 2}
    finally:
        worker.close()
    crash = benchlib.Worker("crash", [sys.executable, "-c", "import sys; sys.exit('cannot start')"])
    with pytest.raises(benchlib.WorkerError, match="crash exited with code 1: cannot start"):
        crash.ready()
    crash.close()


def test_time_worker_rounds_alternates_and_drops_failing_workers(tmp_path):
    child = tmp_path / "timer.py"
    child.write_text(textwrap.dedent("""\
        import sys
        sys.path.insert(0, %r)
        import benchlib
        name = sys.argv[1]
        calls = []
        def handle(request):
            calls.append(request["steps"])
            if name == "flaky" and len(calls) == 2:
                raise RuntimeError("second round failed")
            return {"seconds_per_step": 0.5 * len(calls)}
        benchlib.serve({"name": name}, handle)
        """ % os.path.join(REPO_ROOT, "bench")))
    workers = [(key, benchlib.Worker(key, [sys.executable, str(child), key]))
               for key in ("steady", "flaky")]
    workers.append(("dead", benchlib.Worker("dead", [sys.executable, "-c", "raise SystemExit(3)"])))
    failures = []
    infos, times = benchlib.time_worker_rounds(workers, 3, 4, failures)
    assert infos == {"steady": {"name": "steady"}, "flaky": {"name": "flaky"}}
    # A worker that fails a request loses its row (its rounds would not alternate).
    assert times == {"steady": [[0.5], [1.0], [1.5]]}
    assert len(failures) == 2
    assert "dead exited with code 3" in failures[0]
    assert "flaky: RuntimeError: second round failed" in failures[1]


# --- forward_bench.py: ratios against the fastest peer of the same precision ----------------

def test_forward_bench_table_ratios_and_goals(capsys):
    args = forward_bench.parse_args(["--quick", "--batch_size=8", "--peer_python="])
    assert (args.rounds, args.iters, args.warmup) == (6, 1, 1)

    def row(impl, prec, variant, seq_per_s):
        seconds = 8.0 / seq_per_s
        return dict(impl=impl, prec=prec, variant=variant, label=impl, median=seconds,
                    low=seconds, high=seconds, rounds=2, calls=6)

    rows = [row("bert_tf", "fp32", "tf.function", 8.0),
            row("keras_hub", "fp32", "tf.function", 4.0),
            row("original", "fp32", "TF1 Session", 10.0),
            row("bert_tf", "bf16", "tf.function", 16.0),
            row("keras_hub", "bf16", "tf.function", 12.8)]
    infos = {("bert_tf", "bf16"): {"max_abs_diff_vs_fp32": {"tf.function": 0.0123}}}
    forward_bench.report(args, rows, infos, ["a note"], [])
    out = capsys.readouterr().out
    cells = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line.split("|")[-2].strip()
             for line in out.splitlines() if line.startswith("| ") and "implementation" not in line}
    assert cells[("bert_tf (tf.function)", "fp32")] == "0.80x"  # against the original, 10 seq/s
    assert cells[("original (TF1 Session)", "fp32")] == "1.00x"
    assert cells[("bert_tf (tf.function)", "bf16")] == "1.25x"
    assert "goal bf16 >= 15 seq/s: 16.0 seq/s, met" in out
    assert "goal bf16 >= 1.1x keras-hub bf16: 1.25x, met" in out
    assert "goal fp32 >= 1.0x the fastest fp32 peer: 0.80x, NOT met" in out
    assert "0.0123 (tf.function)" in out and "- a note" in out


def test_forward_bench_bad_flags_are_one_line_errors():
    for argv in (["--seq_length=513"], ["--precisions=fp8"], ["--rounds=0"], ["--quick", "--full"],
                 ["--peer_python=/nonexistent/python"]):
        proc = subprocess.run([sys.executable, "bench/forward_bench.py"] + argv, cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, argv
        assert len(proc.stderr.strip().splitlines()) == 1, (argv, proc.stderr)


def test_pretraining_bench_quick_leaves_out_the_xla_processes():
    from bench import pretraining_bench
    assert pretraining_bench.processes(pretraining_bench.parse_args(["--quick"])) == [
        ("bert_tf", False), ("model_garden", False)]
    assert pretraining_bench.processes(pretraining_bench.parse_args([])) == (
        pretraining_bench.PROCESSES)
    both = pretraining_bench.parse_args(["--quick", "--xla=both"])
    assert pretraining_bench.processes(both) == pretraining_bench.PROCESSES
    assert len(pretraining_bench.PROCESSES) == 3


def test_optimizer_bench_variables_are_the_pretraining_models():
    # The optimizer benchmark times the update of exactly the variables (names
    # and shapes) that pre-training trains, so its weight-decay exclusions and
    # sizes are the real ones.
    from bench import optimizer_bench
    from bert_tf.tasks.pretraining import model as pretraining
    from tests.test_pretraining import tiny_config
    config = tiny_config()
    model = pretraining.BertPretrainer(config)
    model.build()
    want = sorted((v.path, tuple(v.shape)) for v in model.trainable_variables)
    got = sorted(optimizer_bench.variable_shapes(config.to_dict()))
    assert got == want
