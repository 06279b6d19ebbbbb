"""bert_tf.fileio: `atomic_write` and `write_text` write a file all at once, or not at all.

A reader (the original's `tf.train.latest_checkpoint`, a user's `cat
eval_results.txt`, a run that resumes) never sees a half-written file under
its final name: the bytes go to a temporary name that is renamed when the
block ends, and a block that raises leaves the old file as it was and no
temporary file behind.
"""

import os

import pytest

from bert_tf import fileio

OLD = b"eval_accuracy = 0.5\r\nlatin-1 \xe9, no UTF-8\n"


class Interrupted(Exception):
    """A failure inside the block (a bug, a Ctrl-C, a full disk)."""


def _write_old(path):
    with open(path, "wb") as f:
        f.write(OLD)
    return path


def _read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("mode,new", [("wb", b"eval_accuracy = 0.9\n"),
                                      ("w", "eval_accuracy = 0.9\n")])
def test_a_block_that_raises_leaves_the_old_file_and_no_temporary_file(tmp_path, mode, new):
    path = _write_old(str(tmp_path / "eval_results.txt"))
    with pytest.raises(Interrupted):
        with fileio.atomic_write(path, mode) as f:
            f.write(new * 1000)
            f.flush()
            raise Interrupted()
    assert _read(path) == OLD
    assert os.listdir(str(tmp_path)) == ["eval_results.txt"]


def test_a_new_file_appears_under_its_name_only_when_the_block_ends(tmp_path):
    path = str(tmp_path / "out" / "predictions.json")
    with fileio.atomic_write(path, "wb") as f:
        f.write(b"{}")
        f.flush()
        assert not os.path.exists(path)
    assert _read(path) == b"{}"
    assert os.listdir(str(tmp_path / "out")) == ["predictions.json"]
    # A new file whose block raises is never there at all.
    other = str(tmp_path / "out" / "nbest_predictions.json")
    with pytest.raises(Interrupted):
        with fileio.atomic_write(other, "wb") as f:
            f.write(b"{")
            f.flush()
            raise Interrupted()
    assert os.listdir(str(tmp_path / "out")) == ["predictions.json"]


def test_an_old_file_is_replaced_only_when_the_block_ends(tmp_path):
    path = _write_old(str(tmp_path / "checkpoint"))
    with fileio.atomic_write(path, "w") as f:
        f.write("model_checkpoint_path: \"model.ckpt-2\"\n")
        f.flush()
        assert _read(path) == OLD
    assert _read(path) == b"model_checkpoint_path: \"model.ckpt-2\"\n"
    assert os.listdir(str(tmp_path)) == ["checkpoint"]


def test_a_relative_path_is_written_the_same_way(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_old("eval_results.txt")
    with pytest.raises(Interrupted):
        with fileio.atomic_write("eval_results.txt", "w") as f:
            f.write("eval_loss = 1.0\n")
            f.flush()
            raise Interrupted()
    assert _read("eval_results.txt") == OLD
    with fileio.atomic_write("eval_results.txt", "w") as f:
        f.write("eval_loss = 1.0\n")
        f.flush()
        assert _read("eval_results.txt") == OLD
    assert _read("eval_results.txt") == b"eval_loss = 1.0\n"
    assert os.listdir(".") == ["eval_results.txt"]


def test_write_text_that_fails_midway_leaves_the_old_file(tmp_path):
    path = _write_old(str(tmp_path / "test_results.tsv"))
    # A lone surrogate cannot be encoded: the write fails after the text before it.
    with pytest.raises(UnicodeEncodeError):
        fileio.write_text(path, "0.25\t0.75\n" * 10000 + "\ud800")
    assert _read(path) == OLD
    assert os.listdir(str(tmp_path)) == ["test_results.tsv"]
    assert fileio.write_text(path, "0.25\t0.75\r\n") == path
    assert _read(path) == b"0.25\t0.75\r\n"  # newlines as given
    assert os.listdir(str(tmp_path)) == ["test_results.tsv"]
