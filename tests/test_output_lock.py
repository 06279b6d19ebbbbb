"""One run per output: `bert_tf.locks.OutputLock`, and the runs and tools that take it.

* A lock is taken (`<dir>/.bert_tf.lock`, JSON naming the host, pid, start
  and command) and removed when the block ends, by success or by an error;
  a directory the lock made is removed again when the block fails.
* While a live process of this host holds it, a second taker is refused with
  one line naming the holder's host, pid and start; the lock stays as it was.
* A lock of a process that has ended is taken over, with a one-line warning.
* A lock of another host is refused (its process cannot be checked here) and
  the message names the file to remove.
* In a multi-worker run only the chief locks (TF_CONFIG, before the strategy).
* A run that fails once it holds the lock (here: its strategy) leaves
  output_dir as it found it, lock included.
* The tool as a user runs it: refused with `error: ...` as the last line and
  exit status 2; the holder's files are untouched.
"""

import json
import os
import socket
import subprocess
import sys

import pytest

from bert_tf import locks
from bert_tf.errors import UserError
from tests.conftest import TINY_CONFIG
from tests.conftest import write_config
from tests.tools import toolrun

HOST = socket.gethostname()


@pytest.fixture
def live_pid():
    """The pid of a live child process of this test (another run, to the lock)."""
    child = subprocess.Popen(["sleep", "60"])
    yield child.pid
    child.kill()
    child.wait()


def _dead_pid():
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _write_lock(lock_file, pid, host=HOST, what="run_classifier"):
    os.makedirs(os.path.dirname(lock_file), exist_ok=True)
    record = {"host": host, "pid": pid, "started": "2026-01-02T03:04:05+00:00",
              "command": "tools/run_classifier.py --output_dir=out", "what": what}
    with open(lock_file, "w") as f:
        json.dump(record, f)
    with open(lock_file, "rb") as f:
        return f.read()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_the_lock_is_held_inside_the_block_and_removed_after(tmp_path):
    output_dir = tmp_path / "new" / "output"
    lock_file = output_dir / locks.LOCK_NAME
    with locks.OutputLock(str(output_dir), "run_classifier", command=["run", "--x=1"]) as lock:
        assert lock.held
        record = json.loads(lock_file.read_text())
        assert (record["host"], record["pid"], record["command"], record["what"]) == (
            HOST, os.getpid(), "run --x=1", "run_classifier")
        assert record["started"]
    assert not lock.held
    assert os.listdir(str(output_dir)) == []  # the run succeeded: its directory stays

    # A file's lock is `<file>.lock`, beside it.
    output_file = tmp_path / "features.jsonl"
    with locks.OutputLock(str(output_file), "extract_features", flag="output_file",
                          is_file=True):
        assert (tmp_path / "features.jsonl.lock").exists()
    assert not (tmp_path / "features.jsonl.lock").exists()


def test_a_live_holder_refuses_a_second_run_in_one_line(tmp_path, live_pid):
    lock_file = str(tmp_path / locks.LOCK_NAME)
    held = _write_lock(lock_file, live_pid)
    with pytest.raises(UserError) as e:
        with locks.OutputLock(str(tmp_path), "run_squad"):
            pytest.fail("entered a locked output_dir")
    message = str(e.value)
    assert message == (
        "--output_dir=%s is in use by run_classifier (pid %d on host %s, started "
        "2026-01-02T03:04:05+00:00): wait for it to end or choose another --output_dir (if no "
        "such run is alive, remove %s)" % (tmp_path, live_pid, HOST, lock_file))
    assert "\n" not in message
    assert _read(lock_file) == held

    # This process's own lock, taken a second time (two runs in one process), is refused too.
    with locks.OutputLock(str(tmp_path / "mine"), "run_classifier"):
        with pytest.raises(UserError, match="is in use by run_classifier \\(pid %d " % os.getpid()):
            with locks.OutputLock(str(tmp_path / "mine"), "run_classifier"):
                pass


def test_the_lock_of_an_ended_process_is_taken_over_with_a_warning(tmp_path, info_logs):
    lock_file = str(tmp_path / locks.LOCK_NAME)
    dead = _dead_pid()
    assert not locks.pid_is_alive(dead)
    _write_lock(lock_file, dead)
    with locks.OutputLock(str(tmp_path), "run_classifier"):
        assert json.loads(_read(lock_file))["pid"] == os.getpid()
    assert not os.path.exists(lock_file)
    warnings = [r.getMessage() for r in info_logs.records if r.levelname == "WARNING"]
    assert warnings == ["Taking over the lock of %s: run_classifier (pid %d on host %s, started "
                        "2026-01-02T03:04:05+00:00) has ended (its lock %s was left behind)"
                        % (tmp_path, dead, HOST, lock_file)]
    assert sorted(os.listdir(str(tmp_path))) == []  # no aside copy left


def test_another_hosts_lock_is_refused_and_the_message_says_how_to_clear_it(tmp_path):
    lock_file = str(tmp_path / locks.LOCK_NAME)
    held = _write_lock(lock_file, _dead_pid(), host="other-host.example")
    with pytest.raises(UserError) as e:
        with locks.OutputLock(str(tmp_path), "run_pretraining"):
            pass
    assert str(e.value).startswith("--output_dir=%s is locked by run_classifier (pid " % tmp_path)
    assert "on host other-host.example, started 2026-01-02T03:04:05+00:00" in str(e.value)
    assert str(e.value).endswith("if it has ended, remove %s" % lock_file)
    assert _read(lock_file) == held


def test_a_damaged_lock_is_refused_not_taken(tmp_path, monkeypatch):
    monkeypatch.setattr(locks, "_READ_PAUSE_S", 0.0)
    lock_file = tmp_path / locks.LOCK_NAME
    lock_file.write_text("not json")
    with pytest.raises(UserError, match="is not a bert_tf lock .*; if no run is writing"):
        with locks.OutputLock(str(tmp_path), "run_classifier"):
            pass
    assert lock_file.read_text() == "not json"


def test_the_lock_is_released_on_an_error_and_its_new_directory_removed(tmp_path):
    output_dir = tmp_path / "a" / "b"
    with pytest.raises(UserError):
        with locks.OutputLock(str(output_dir), "run_classifier"):
            raise UserError("--init_checkpoint: the checkpoint's data file is missing")
    assert os.listdir(str(tmp_path)) == []

    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "model.ckpt-3.index").write_text("a checkpoint")
    with pytest.raises(RuntimeError):
        with locks.OutputLock(str(existing), "run_classifier"):
            raise RuntimeError("a bug")
    assert os.listdir(str(existing)) == ["model.ckpt-3.index"]


def test_only_the_chief_locks_and_a_remote_path_is_not_locked(tmp_path):
    from bert_tf.training import distribute
    cluster = {"worker": ["w0:1", "w1:1"]}
    assert distribute.will_be_chief("multi_worker_mirrored", "")
    assert distribute.will_be_chief(
        "multi_worker_mirrored", json.dumps({"cluster": cluster,
                                             "task": {"type": "worker", "index": 0}}))
    assert not distribute.will_be_chief(
        "multi_worker_mirrored", json.dumps({"cluster": cluster,
                                             "task": {"type": "worker", "index": 1}}))
    with_chief = dict(cluster, chief=["c:1"])
    assert not distribute.will_be_chief(
        "multi_worker_mirrored", json.dumps({"cluster": with_chief,
                                             "task": {"type": "worker", "index": 0}}))
    assert distribute.will_be_chief(
        "multi_worker_mirrored", json.dumps({"cluster": with_chief,
                                             "task": {"type": "chief", "index": 0}}))
    # TF_CONFIG means nothing to a one-process strategy.
    assert distribute.will_be_chief(
        "mirrored", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}))

    with locks.OutputLock(str(tmp_path / "out"), "run_classifier", enabled=False) as lock:
        assert not lock.held
    with locks.OutputLock("gs://bucket/out", "run_classifier") as lock:
        assert not lock.held
    assert os.listdir(str(tmp_path)) == []


def _classifier_inputs(tmp_path):
    """A tiny MRPC-layout task, a vocab of TINY_CONFIG's size and its config."""
    from bert_tf.data import demo_corpus
    data_dir = str(tmp_path / "MRPC")
    demo_corpus.write_sentence_pair_task(data_dir, sizes=(("train.tsv", 4), ("dev.tsv", 2),
                                                          ("test.tsv", 2)))
    vocab_file = str(tmp_path / "vocab.txt")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words += ["word%d" % i for i in range(TINY_CONFIG["vocab_size"] - len(words))]
    with open(vocab_file, "w") as f:
        f.write("\n".join(words) + "\n")
    config = write_config(str(tmp_path / "bert_config.json"), TINY_CONFIG)
    return data_dir, vocab_file, config


def test_a_run_that_fails_holding_the_lock_leaves_output_dir_as_it_found_it(tmp_path):
    from bert_tf.tasks.classifier import run as run_classifier
    from bert_tf.training.scale_out import ScaleOut
    data_dir, vocab_file, config = _classifier_inputs(tmp_path)
    # More GPUs than the machine has: refused by the strategy, made after the lock.
    scale_out = ScaleOut(distribution_strategy="mirrored", num_gpus=64)

    def run(output_dir):
        with pytest.raises(UserError, match="^--num_gpus=64 but this machine has"):
            run_classifier.run_classifier(
                "MRPC", data_dir, config, vocab_file, str(output_dir), do_train=True,
                max_seq_length=16, scale_out=scale_out)

    run(tmp_path / "new" / "output")
    assert not (tmp_path / "new").exists()

    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "notes.txt").write_text("mine\n")
    run(existing)
    assert os.listdir(str(existing)) == ["notes.txt"]


def test_the_tool_refuses_an_output_held_by_a_live_run(tmp_path, live_pid):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\nthe dog sat too .\n\nanother document here .\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
                                "sat", "on", "mat", ".", "dog", "too", "another", "document",
                                "here"]) + "\n")
    output_file = str(tmp_path / "out" / "records.tfrecord")
    os.makedirs(os.path.dirname(output_file))
    with open(output_file, "wb") as f:
        f.write(b"the holder's records, half written")
    held = _write_lock(output_file + ".lock", live_pid, what="create_pretraining_data")
    rc, _, err = toolrun.run([sys.executable, os.path.join(toolrun.REPO_ROOT, "tools",
                                                           "create_pretraining_data.py"),
                              "--input_file=%s" % corpus, "--vocab_file=%s" % vocab,
                              "--output_file=%s" % output_file, "--dupe_factor=1"], timeout=120)
    assert rc == 2, err[-3000:]
    assert "Traceback" not in err
    assert err.rstrip("\n").splitlines()[-1] == (
        "error: --output_file=%s is in use by create_pretraining_data (pid %d on host %s, "
        "started 2026-01-02T03:04:05+00:00): wait for it to end or choose another "
        "--output_file (if no such run is alive, remove %s.lock)"
        % (output_file, live_pid, HOST, output_file))
    assert sorted(os.listdir(os.path.dirname(output_file))) == ["records.tfrecord",
                                                                "records.tfrecord.lock"]
    assert _read(output_file) == b"the holder's records, half written"
    assert _read(output_file + ".lock") == held
