"""A broken newest checkpoint in an output_dir (bert_tf/training/output_dir.py, checkpoint.py).

A crash on a file system without atomic rename, or a copy cut short, can leave
the newest `model.ckpt-N` unreadable. A resuming run (`Trainer`, the Keras
`CheckpointCallback`) goes back to the newest checkpoint that reads, with a
warning line naming each one it skipped, and the state file lists only good
checkpoints once it saves; with none readable it stops with one line. A
checkpoint that reads but does not fit the model is the strict error, never
skipped; a user's own checkpoint (`from_pretrained`, `--init_checkpoint`) is
never replaced by an older one.
"""

import logging
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import pretrained
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.models import BertPretrainer
from bert_tf.runs import finetuning
from bert_tf.training import output_dir as output_dir_lib
from bert_tf.training import optimization
from bert_tf.training.callbacks import CheckpointCallback
from tests.test_keras_models import compiled_model
from tests.test_keras_models import init_checkpoint as keras_init_checkpoint
from tests.test_pretraining import BATCH_SIZE
from tests.test_pretraining import in_memory_dataset_fn
from tests.test_pretraining import random_batches
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.test_training import _trainer

DATA = ".data-00000-of-00001"
DAMAGES = ("truncated data", "missing index", "garbage index", "missing data")


def _damage(prefix, how):
    if how == "truncated data":  # a copy cut short
        with open(prefix + DATA, "r+b") as f:
            f.truncate(os.path.getsize(prefix + DATA) // 2)
    elif how == "missing index":  # a crash between the two renames of a non-atomic file system
        os.remove(prefix + ".index")
    elif how == "garbage index":
        with open(prefix + ".index", "wb") as f:
            f.write(b"\x00not a checkpoint index" * 16)
    elif how == "missing data":
        os.remove(prefix + DATA)
    else:
        raise ValueError(how)


def _listed(output_dir):
    state = tf.train.get_checkpoint_state(str(output_dir))
    return [os.path.basename(p) for p in state.all_model_checkpoint_paths]


def _weights(model):
    return {checkpoint.tf1_name(v): v.numpy() for v in model.weights}


def _train(trainer, num_train_steps, save_checkpoints_steps):
    return trainer.train(in_memory_dataset_fn(random_batches(6, seed=4), repeat=True),
                         BATCH_SIZE, num_train_steps, 1e-3, 1,
                         save_checkpoints_steps=save_checkpoints_steps, iterations_per_loop=1)


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    yield
    keras.backend.clear_session()


@pytest.fixture(scope="module")
def three_checkpoints(tmp_path_factory):
    """An output_dir of a tiny run: model.ckpt-1, -2 and -3, all listed."""
    output_dir = tmp_path_factory.mktemp("three")
    _train(_trainer(output_dir), 3, save_checkpoints_steps=1)
    assert _listed(output_dir) == ["model.ckpt-1", "model.ckpt-2", "model.ckpt-3"]
    keras.backend.clear_session()
    return output_dir


@pytest.fixture
def output_dir(tmp_path, three_checkpoints):
    """A copy of `three_checkpoints` that a test may break."""
    copy = tmp_path / "output_dir"
    shutil.copytree(str(three_checkpoints), str(copy))
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("how", DAMAGES)
def test_a_resume_skips_a_broken_newest_checkpoint_with_a_warning(output_dir, how, caplog):
    newest = str(output_dir / "model.ckpt-3")
    _damage(newest, how)
    # What the tools check first (from the index alone: a truncated data file shows later).
    assert output_dir_lib.latest_checkpoint(str(output_dir)) == (
        newest if how == "truncated data" else str(output_dir / "model.ckpt-2"))
    finetuning.check_start_checkpoint(one_layer_config(), str(output_dir), None, head="pretraining")
    trainer = _trainer(output_dir)
    with caplog.at_level(logging.WARNING):
        # What evaluate and predict call first; train calls it with the optimizer.
        assert trainer.restore() == 2
    want = checkpoint.read_checkpoint(str(output_dir / "model.ckpt-2"))
    for name, value in _weights(trainer.model).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)
    skipped = [r.getMessage() for r in caplog.records if "Skipped checkpoint" in r.getMessage()]
    assert len(skipped) == 1, caplog.text
    assert skipped[0].startswith("Skipped checkpoint %s, which cannot be read (" % newest)
    assert "resuming from model.ckpt-2" in skipped[0] and "\n" not in skipped[0]
    # A restore writes nothing (an eval-only run leaves the output_dir as it was).
    assert _listed(output_dir) == ["model.ckpt-1", "model.ckpt-2", "model.ckpt-3"]


@pytest.mark.slow
def test_training_resumes_from_the_previous_step_and_lists_only_good_checkpoints(
        output_dir, caplog):
    _damage(str(output_dir / "model.ckpt-3"), "truncated data")
    trainer = _trainer(output_dir)
    with caplog.at_level(logging.WARNING):
        history = _train(trainer, 5, save_checkpoints_steps=2)
    assert [h["step"] for h in history] == [3, 4, 5]
    assert "Skipped checkpoint %s" % (output_dir / "model.ckpt-3") in caplog.text
    # The broken checkpoint is no longer listed; its files are left where they were.
    assert _listed(output_dir) == ["model.ckpt-1", "model.ckpt-2", "model.ckpt-4",
                                   "model.ckpt-5"]
    assert os.path.exists(str(output_dir / "model.ckpt-3.index"))
    assert int(checkpoint.read_checkpoint(str(output_dir / "model.ckpt-5"))["global_step"]) == 5
    # The next run resumes from the new checkpoint without a warning.
    keras.backend.clear_session()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert _trainer(output_dir).restore() == 5
    assert "Skipped" not in caplog.text


@pytest.mark.slow
@pytest.mark.parametrize("state_file", ["missing", "garbage"])
def test_without_a_readable_state_file_the_highest_readable_model_ckpt_n(output_dir, state_file,
                                                                         caplog):
    if state_file == "missing":
        os.remove(str(output_dir / "checkpoint"))
    else:
        (output_dir / "checkpoint").write_bytes(b"\xff\x00 not a state file {")
    _damage(str(output_dir / "model.ckpt-3"), "garbage index")
    trainer = _trainer(output_dir)
    with caplog.at_level(logging.WARNING):
        history = _train(trainer, 4, save_checkpoints_steps=2)
    assert [h["step"] for h in history] == [3, 4]
    assert "Skipped checkpoint %s" % (output_dir / "model.ckpt-3") in caplog.text
    # A new state file: the checkpoint resumed from and the new one.
    assert _listed(output_dir) == ["model.ckpt-2", "model.ckpt-4"]


def test_no_readable_checkpoint_is_one_line_naming_output_dir_and_the_newest(output_dir):
    for step, how in ((3, "garbage index"), (2, "truncated data"), (1, "missing index")):
        _damage(str(output_dir / ("model.ckpt-%d" % step)), how)
    trainer = _trainer(output_dir)
    with pytest.raises(checkpoint.UnreadableCheckpointError) as e:
        _train(trainer, 5, save_checkpoints_steps=2)
    message = str(e.value)
    assert message.startswith("--output_dir=%s: no checkpoint there can be read: the newest, "
                              "model.ckpt-3: " % output_dir), message
    assert "(and 2 older one(s) cannot be read either)" in message and "\n" not in message
    assert _listed(output_dir) == ["model.ckpt-1", "model.ckpt-2", "model.ckpt-3"]


@pytest.mark.slow
def test_a_state_file_whose_checkpoints_are_all_deleted_starts_anew(output_dir, caplog):
    # Not broken checkpoints but none at all (as the Estimator saw it): a warning, a new run.
    for path in output_dir.glob("model.ckpt-*"):
        path.unlink()
    trainer = _trainer(output_dir)
    with caplog.at_level(logging.WARNING):
        history = _train(trainer, 2, save_checkpoints_steps=2)
    assert [h["step"] for h in history] == [1, 2]
    assert "none of its checkpoints' files is there: nothing to resume from" in caplog.text
    assert _listed(output_dir) == ["model.ckpt-2"]


@pytest.mark.parametrize("how", [None, "truncated data"])
def test_a_checkpoint_that_does_not_fit_is_the_strict_error_not_a_fallback(output_dir, how):
    # Its index reads, so a wrong config shows first, and no older checkpoint is tried.
    if how:
        _damage(str(output_dir / "model.ckpt-3"), how)
    trainer = _trainer(output_dir, config=one_layer_config(intermediate_size=40))
    with pytest.raises(UserError) as e:
        trainer.restore()
    message = str(e.value)
    assert not isinstance(e.value, checkpoint.UnreadableCheckpointError)
    assert message.startswith("--output_dir=%s: variable " % (output_dir / "model.ckpt-3"))
    assert "in the checkpoint but [32, 40] in the model" in message and "\n" not in message


@pytest.mark.parametrize("how", ["truncated data", "missing index"])
def test_a_users_checkpoint_is_refused_not_replaced_by_an_older_one(output_dir, tmp_path, how):
    newest = str(output_dir / "model.ckpt-3")
    _damage(newest, how)
    model = BertPretrainer(one_layer_config())
    # --init_checkpoint naming the directory or the checkpoint.
    for path in (str(output_dir), newest):
        with pytest.raises(checkpoint.UnreadableCheckpointError) as e:
            checkpoint.load_checkpoint(model, path, strict=False)
        message = str(e.value)
        assert message.startswith("--init_checkpoint=%s" % path) and "\n" not in message
        assert e.value.checkpoint_path == newest and "model.ckpt-3" in message
    # from_pretrained on the output_dir.
    config_file = str(tmp_path / "bert_config.json")
    write_config(one_layer_config(), config_file)
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(
        "%s\n" % t for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        + ["w%d" % i for i in range(94)]))
    with pytest.raises(checkpoint.UnreadableCheckpointError) as e:
        pretrained.from_pretrained(str(output_dir), bert_config_file=config_file,
                                   vocab_file=str(vocab_file), do_lower_case=True)
    assert e.value.checkpoint_path == newest and "\n" not in str(e.value)


@pytest.mark.slow
def test_checkpoint_callback_resumes_from_the_newest_readable_checkpoint(tmp_path, caplog):
    config = one_layer_config()
    init = keras_init_checkpoint("pretrainer", config, tmp_path / "init" / "bert_model.ckpt")
    batches = random_batches(5, seed=9)

    def data(start, stop):
        return tf.data.Dataset.from_tensor_slices({k: v[start:stop] for k, v in batches.items()})

    output_dir = tmp_path / "output"
    first = compiled_model("pretrainer", config, init, num_train_steps=5, run_eagerly=True)
    first.fit(data(0, 3), epochs=1, verbose=0,
              callbacks=[CheckpointCallback(str(output_dir), save_checkpoints_steps=1)])
    assert _listed(output_dir) == ["model.ckpt-1", "model.ckpt-2", "model.ckpt-3"]
    _damage(str(output_dir / "model.ckpt-3"), "garbage index")

    keras.utils.set_random_seed(123)
    second = BertPretrainer(config)
    second.compile(optimizer=optimization.create_optimizer(1e-3, 5, 1), run_eagerly=True)
    callback = CheckpointCallback(str(output_dir), save_checkpoints_steps=2)
    with caplog.at_level(logging.WARNING):
        second.fit(data(2, 5), epochs=1, verbose=0, callbacks=[callback])
    assert callback.restored_step == 2
    assert int(second.optimizer.iterations.numpy()) == 5
    assert "Skipped checkpoint %s" % (output_dir / "model.ckpt-3") in caplog.text
    assert _listed(output_dir) == ["model.ckpt-1", "model.ckpt-2", "model.ckpt-4",
                                   "model.ckpt-5"]

    # All broken: one line, and fit does not start.
    for step in (1, 2, 4, 5):
        _damage(str(output_dir / ("model.ckpt-%d" % step)), "missing data")
    third = BertPretrainer(config)
    third.compile(optimizer=optimization.create_optimizer(1e-3, 9, 1), run_eagerly=True)
    with pytest.raises(checkpoint.UnreadableCheckpointError,
                       match=r"^--output_dir=.*: no checkpoint there can be read: the newest, "
                             r"model\.ckpt-5: the checkpoint's data file .* is missing"):
        third.fit(data(0, 1), epochs=1, verbose=0,
                  callbacks=[CheckpointCallback(str(output_dir))])
