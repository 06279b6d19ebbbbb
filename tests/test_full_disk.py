"""A full disk: a write that fails midway is one line, and leaves what was there.

A checkpoint, a record file or a text file that cannot be written because the
file system took no more bytes (ENOSPC; a quota, EDQUOT; the process's file
size limit, EFBIG) raises `bert_tf.errors.UserError` with one line naming the
file and the OS's words, which a tool prints as `error: ...` with exit status
2. The previous checkpoint, the `checkpoint` state file and an older file of
the same name stay byte for byte as they were, and no temporary file is left.

The real errors: a file behind the temporary name is linked to `/dev/full`
(every write to it fails with ENOSPC, through Python's `open` and through
TensorFlow's file system alike); TensorFlow's `SaveV2` writes to a random
temporary name, so it is replaced by one that fails as TensorFlow does
(`ResourceExhaustedError`, "<file>; No space left on device"), and run for
real under a file size limit in a tool's process.
"""

import os
import subprocess
import sys
import textwrap
import types

import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.training import output_dir
from tests.conftest import TINY_CONFIG

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULL = "/dev/full"
needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full")


def _no_room_at(path):
    """Makes every write to `path`'s temporary file fail with ENOSPC."""
    os.symlink(FULL, fileio.temporary_name(path))


def _snapshot(directory):
    """{name: bytes} of every file in `directory`."""
    out = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = f.read()
    return out


def test_only_a_write_that_found_no_room_is_a_user_error():
    import errno
    for number, words in [(errno.ENOSPC, "No space left on device"),
                          (errno.EDQUOT, "Disk quota exceeded"), (errno.EFBIG, "File too large")]:
        error = fileio.no_room_error("out/train.tf_record", OSError(number, os.strerror(number)))
        assert str(error) == "out/train.tf_record: could not be written: %s" % words
    as_tensorflow_says = tf.errors.ResourceExhaustedError(
        None, None, "out/x.tempstate1; No space left on device [Op:SaveV2]")
    assert str(fileio.no_room_error("out/model.ckpt-2", as_tensorflow_says)) == (
        "out/model.ckpt-2: could not be written: No space left on device")
    for other in [OSError(errno.EACCES, "Permission denied"), RuntimeError("No space left"),
                  tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")]:
        assert fileio.no_room_error("out/x", other) is None


@needs_dev_full
def test_atomic_write_on_a_full_disk(tmp_path):
    path = str(tmp_path / "eval_results.txt")
    fileio.write_text(path, "eval_accuracy = 0.5\n")
    before = _snapshot(str(tmp_path))
    _no_room_at(path)
    with pytest.raises(UserError) as e:
        fileio.write_text(path, "eval_accuracy = 0.9\n" * 1000)
    assert str(e.value) == "%s: could not be written: No space left on device" % path
    assert _snapshot(str(tmp_path)) == before
    # A new file: nothing under its name, no temporary file.
    new = str(tmp_path / "predictions.json")
    _no_room_at(new)
    with pytest.raises(UserError, match="predictions.json: could not be written: No space left"):
        with fileio.atomic_write(new, "wb") as f:
            f.write(b"{}")
    assert _snapshot(str(tmp_path)) == before


def _fail_save_as_tensorflow_does(monkeypatch):
    """SaveV2 that writes part of its files, then fails as TensorFlow fails on a full disk."""

    def save_v2(prefix, tensor_names, shape_and_slices, tensors, name=None):
        del tensor_names, shape_and_slices, tensors, name
        data = prefix.numpy().decode() + ".data-00000-of-00001"
        with open(data, "wb") as f:
            f.write(b"\0" * 100)  # the data file done, the index not
        raise tf.errors.ResourceExhaustedError(
            None, None, "{{function_node __wrapped__SaveV2_dtypes_1_device_/job:localhost/"
            "replica:0/task:0/device:CPU:0}} %s.index.tempstate42; No space left on device "
            "[Op:SaveV2]" % prefix.numpy().decode())

    monkeypatch.setattr(tf.raw_ops, "SaveV2", lambda **kwargs: save_v2(
        **{k: tf.convert_to_tensor(v) if k == "prefix" else v for k, v in kwargs.items()}))


def test_a_checkpoint_save_on_a_full_disk_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    """Trainer and the Keras CheckpointCallback save through `Checkpoints.save`."""
    out = str(tmp_path / "output_dir")
    model = BertModel(BertConfig.from_dict(TINY_CONFIG))
    checkpoints = output_dir.Checkpoints(out, save_checkpoints_steps=1)
    checkpoints.prepare()
    checkpoints.save(model, None, 1)
    before = _snapshot(out)
    assert "checkpoint" in before and "model.ckpt-1.index" in before
    _fail_save_as_tensorflow_does(monkeypatch)
    with pytest.raises(UserError) as e:
        checkpoints.save(model, None, 2)
    assert str(e.value) == ("%s: could not be written: No space left on device"
                            % os.path.join(out, "model.ckpt-2"))
    assert _snapshot(out) == before
    assert tf.train.latest_checkpoint(out) == os.path.join(out, "model.ckpt-1")


@needs_dev_full
def test_a_checkpoint_state_file_on_a_full_disk_keeps_the_old_one(tmp_path):
    out = str(tmp_path)
    model = BertModel(BertConfig.from_dict(TINY_CONFIG))
    checkpoint.save_checkpoint(model, os.path.join(out, "model.ckpt-1"), global_step=1)
    state = os.path.join(out, "checkpoint")
    with open(state, "rb") as f:
        old_state = f.read()
    _no_room_at(state)
    with pytest.raises(UserError, match=r"checkpoint: could not be written: No space left on "
                                        r"device$"):
        checkpoint.save_checkpoint(model, os.path.join(out, "model.ckpt-2"), global_step=2)
    with open(state, "rb") as f:
        assert f.read() == old_state
    assert not any(".tmp-" in name for name in os.listdir(out))


@needs_dev_full
def test_the_classifier_records_on_a_full_disk(tmp_path):
    from bert_tf.tasks.classifier import data as classifier_data
    from bert_tf.tokenization import FullTokenizer
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\n")
    tokenizer = FullTokenizer(str(vocab), do_lower_case=True)
    examples = [classifier_data.InputExample("train-%d" % i, "the cat sat", "the cat", "1")
                for i in range(200)]
    records = tmp_path / "output_dir"
    records.mkdir()
    path = str(records / "train.tf_record")
    classifier_data.file_based_convert_examples_to_features(examples, ["0", "1"], 16, tokenizer,
                                                            path)
    before = _snapshot(str(records))
    _no_room_at(path)
    with pytest.raises(UserError) as e:
        classifier_data.file_based_convert_examples_to_features(examples, ["0", "1"], 16,
                                                                tokenizer, path)
    assert str(e.value) == "%s: could not be written: No space left on device" % path
    assert _snapshot(str(records)) == before


@needs_dev_full
def test_squad_and_pretraining_records_on_a_full_disk(tmp_path):
    from bert_tf.tasks.squad import data as squad_data
    from bert_tf.data import tfrecord
    path = str(tmp_path / "train.tf_record")
    _no_room_at(path)
    feature = types.SimpleNamespace(unique_id=1000000000, input_ids=[2, 5, 3], input_mask=[1] * 3,
                                    segment_ids=[0] * 3)
    with pytest.raises(UserError) as e:
        with squad_data.FeatureWriter(path, is_training=False) as writer:
            for _ in range(1000):
                writer.process_feature(feature)
    assert str(e.value) == "%s: could not be written: No space left on device" % path
    assert os.listdir(str(tmp_path)) == []
    # create_pretraining_data's writer, without TensorFlow: named by the final name.
    _no_room_at(path)
    with pytest.raises(UserError) as e:
        with tfrecord.TFRecordWriter(fileio.temporary_name(path), name=path) as writer:
            writer.write_framed(tfrecord.frame_records([b"x" * 100] * 1000))
    assert str(e.value) == "%s: could not be written: No space left on device" % path


_TOOL = """
import os, resource, signal, sys
sys.path.insert(0, {root!r})
from bert_tf.tools import cli

def main():
    from bert_tf import BertConfig, BertModel
    from bert_tf.training import output_dir
    config = BertConfig.from_dict({config!r})
    checkpoints = output_dir.Checkpoints({out!r}, save_checkpoints_steps=1)
    checkpoints.prepare()
    model = BertModel(config)
    checkpoints.save(model, None, 1)
    print("saved 1", flush=True)
    # The file size limit (ulimit -f): past it, a write fails with EFBIG.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE,
                       (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    checkpoints.save(model, None, 2)

sys.exit(cli.Tool(__name__, lambda: main, ()).main())
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE as on Linux")
def test_a_tool_whose_checkpoint_finds_no_room_prints_one_line_and_exits_2(tmp_path):
    """TensorFlow's real SaveV2 error, through the tools' runner."""
    out = str(tmp_path / "output_dir")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_TOOL.format(root=ROOT, config=TINY_CONFIG, out=out)))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 2, result.stderr
    assert "saved 1" in result.stdout
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "error: %s: could not be written: File too large" % os.path.join(out, "model.ckpt-2"))
    assert sorted(os.listdir(out)) == ["checkpoint", "model.ckpt-1.data-00000-of-00001",
                                       "model.ckpt-1.index"]
    assert tf.train.latest_checkpoint(out) == os.path.join(out, "model.ckpt-1")
