"""tools/create_pretraining_data.py: the original's command line, and bad input.

The runs call the tool in this process (`toolrun.run_tool`: the flags parsed
and the library called as the command line does); the command line itself
runs as a user runs it where a process is the point: worker processes
(--num_workers=2 forks them), and the exit status and stderr of a mistake.
"""

import os
import subprocess
import sys

import pytest

from tests.data import pretraining_testlib as lib
from tests.tools import toolrun

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "create_pretraining_data.py")


def _start(args, cwd=REPO):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, TOOL] + list(args), cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc):
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tool_corpus"))
    paths = lib.write_corpus(d)
    paths["vocab"] = lib.write_vocab([paths["a"], paths["topics"]], os.path.join(d, "vocab.txt"),
                                     vocab_size=800)
    paths["dir"] = d
    return paths


@pytest.mark.original
def test_tool_is_a_drop_in_for_the_original(corpus, tmp_path):
    """Same command line (original flag names and bool syntax) -> same records."""
    outs = {}
    for who in ("ours", "original"):
        outs[who] = [str(tmp_path / ("%s_%d.tfrecord" % (who, i))) for i in range(2)]
    flags = ["--input_file=%s,%s" % (corpus["a"], corpus["b_glob"]),
             "--vocab_file=" + corpus["vocab"], "--do_lower_case=true", "--max_seq_length=48",
             "--max_predictions_per_seq=7", "--masked_lm_prob=0.15", "--random_seed=99",
             "--dupe_factor=2", "--short_seq_prob=0.3"]
    _, err = toolrun.run_tool("create_pretraining_data",
                              flags + ["--output_file=" + ",".join(outs["ours"])])
    lib.run_original(str(tmp_path),
                     [("pip", flags + ["--output_file=" + ",".join(outs["original"])])])
    total = 0
    for ours, theirs in zip(outs["ours"], outs["original"]):
        records = lib.read_records(ours)
        assert records and records == lib.canonical_records(theirs)
        total += len(records)
    assert "Wrote %d total instances" % total in err
    assert sorted(os.listdir(str(tmp_path))) == sorted(
        [os.path.basename(p) for p in outs["ours"] + outs["original"]] +
        ["oracle_0.json", "oracle_0.log", "oracle_runs.json"])


@pytest.mark.slow
def test_sharded_mode_from_the_command_line(corpus, tmp_path):
    def flags(n):
        return ["--input_file=" + corpus["all"], "--vocab_file=" + corpus["vocab"],
                "--output_file=%s/w%d.tfrecord" % (tmp_path, n), "--max_seq_length=32",
                "--max_predictions_per_seq=5", "--dupe_factor=1", "--documents_per_shard=50",
                "--num_workers=%d" % n]

    # 2 workers fork from the tool's process: a child process of its own, while
    # 1 worker (no fork) runs here.
    two = _start(flags(2))
    logs = {}
    _, logs[1] = toolrun.run_tool("create_pretraining_data", flags(1))
    rc, _, logs[2] = _finish(two)
    assert rc == 0, logs[2]
    results = {}
    for n in (1, 2):
        assert "Sharded mode: 50 documents per shard, %d worker process(es)" % n in logs[n]
        results[n] = lib.read_records("%s/w%d.tfrecord" % (tmp_path, n))
    assert results[1] and results[1] == results[2]


def test_bad_input_one_line_error_no_output(corpus, tmp_path):
    d = corpus["dir"]
    empty = os.path.join(d, "empty.txt")
    with open(empty, "w") as f:
        f.write("\n   \n")
    no_cls = os.path.join(d, "vocab_no_cls.txt")
    with open(corpus["vocab"]) as f:
        tokens = [t for t in f.read().split("\n") if t and t not in ("[CLS]", "[SEP]")]
    with open(no_cls, "w") as f:
        f.write("\n".join(tokens) + "\n")
    good = ["--input_file=" + corpus["a"], "--vocab_file=" + corpus["vocab"]]
    cases = {
        "missing_flag": (["--vocab_file=" + corpus["vocab"]], "error: --input_file is required"),
        "no_match": (["--input_file=" + os.path.join(d, "nope-*.txt"),
                      "--vocab_file=" + corpus["vocab"]], "error: --input_file: '"),
        "empty": (["--input_file=" + empty, "--vocab_file=" + corpus["vocab"]],
                  "error: input file %s has no text" % empty),
        "no_cls": (["--input_file=" + corpus["a"], "--vocab_file=" + no_cls],
                   "error: %s has no [CLS], [SEP] tokens" % no_cls),
        "no_vocab": (["--input_file=" + corpus["a"], "--vocab_file=" + os.path.join(d, "nv.txt")],
                     "error: vocab_file %s cannot be read" % os.path.join(d, "nv.txt")),
        "seq4": (good + ["--max_seq_length=4"], "error: --max_seq_length=4 cannot hold"),
        "pred0": (good + ["--max_predictions_per_seq=0"],
                  "error: --max_predictions_per_seq=0 cannot hold"),
        # The second output file's directory is a file.
        "under_a_file": (good, "error: --output_file=%s: %s is a file, not a directory"
                         % (tmp_path / "under_a_file" / "a_file" / "b.tfrecord",
                            tmp_path / "under_a_file" / "a_file")),
    }
    argvs = []
    for name, (args, _) in cases.items():
        out_dir = tmp_path / name
        out_dir.mkdir()
        second = out_dir
        if name == "under_a_file":
            second = out_dir / "a_file"
            second.write_text("not a directory\n")
        argvs.append(
            (name, args + ["--output_file=%s/a.tfrecord,%s/b.tfrecord" % (out_dir, second)]))
    # The command line too (a child process, while the cases run here): a
    # missing flag, exit status 2.
    cli = _start(dict(argvs)["missing_flag"])
    # Each case raises a one-line UserError (`main` prints it as `error: ...`).
    results = toolrun.user_errors_here("create_pretraining_data", argvs)
    rc, out, err = _finish(cli)
    for name, (_, message) in cases.items():
        error = results[name]
        assert error is not None, "%s: no error" % name
        assert "\n" not in error and ("error: " + error).startswith(message), (name, error)
        expected_entries = ["a_file"] if name == "under_a_file" else []
        assert os.listdir(str(tmp_path / name)) == expected_entries, name
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith(cases["missing_flag"][1]), err
    assert "Traceback" not in err
