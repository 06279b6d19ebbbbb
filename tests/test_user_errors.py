"""User mistakes that every tool shares: one line, before any work, or at the bad record.

* `fileio.check_writable`: an output path that cannot be written (under a
  file, a file where a directory is expected and the reverse, a read-only
  directory) is refused naming the flag, and nothing is created.
* `Trainer` turns a bad input record, found by the pipeline's per-record
  check inside its compiled loops, into the one-line `UserError` naming the
  file and the record: in training, evaluation and prediction; the run stops
  without saving.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import distribute
from bert_tf import fileio
from bert_tf import training
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.data import input_pipeline
from bert_tf.errors import UserError
from bert_tf.models import BertClassifier
from bert_tf.models import BertPretrainer
from tests.test_pretraining import MAX_PREDICTIONS
from tests.test_pretraining import SEQ_LENGTH
from tests.test_pretraining import random_batches
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_records

# ----------------------------------------------------------------- outputs


def test_output_paths_that_cannot_be_written_are_refused_naming_the_flag(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    under = str(blocker / "out")
    with pytest.raises(UserError) as e:
        fileio.check_writable(under, "output_dir")
    assert str(e.value) == "--output_dir=%s: %s is a file, not a directory" % (under, blocker)
    deeper = str(blocker / "a" / "b" / "out.jsonl")
    with pytest.raises(UserError) as e:
        fileio.check_writable(deeper, "output_file", directory=False)
    assert str(e.value) == ("--output_file=%s: %s is a file, not a directory"
                            % (deeper, blocker))
    with pytest.raises(UserError) as e:
        fileio.check_writable(str(blocker), "export_dir")
    assert str(e.value) == "--export_dir=%s is a file, not a directory" % blocker
    with pytest.raises(UserError) as e:
        fileio.check_writable(str(tmp_path), "output_file", directory=False)
    assert str(e.value) == "--output_file=%s is a directory, not a file" % tmp_path
    with pytest.raises(UserError, match="^--output_dir: no path given$"):
        fileio.check_writable("", "output_dir")
    # Paths that can be written pass, and nothing is created.
    fileio.check_writable(str(tmp_path / "new" / "deeper"), "output_dir")
    fileio.check_writable(str(tmp_path / "new" / "out.jsonl"), "output_file", directory=False)
    fileio.check_writable(str(tmp_path), "output_dir")
    fileio.check_writable("gs://bucket/output", "output_dir")  # checked when written
    assert sorted(os.listdir(tmp_path)) == ["a_file"]


def test_read_only_directory_is_refused(tmp_path, monkeypatch):
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    if os.access(str(read_only), os.W_OK):
        # Root writes anyway: pretend to be someone else for this directory.
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode: (
            False if str(path) == str(read_only) else real_access(path, mode)))
    try:
        with pytest.raises(UserError) as e:
            fileio.check_writable(str(read_only / "run"), "output_dir")
        assert str(e.value) == ("--output_dir=%s: the directory %s is not writable"
                                % (read_only / "run", read_only))
        with pytest.raises(UserError) as e:
            fileio.check_writable(str(read_only / "out.jsonl"), "output_file", directory=False)
        assert str(e.value) == ("--output_file=%s: the directory %s is not writable"
                                % (read_only / "out.jsonl", read_only))
    finally:
        read_only.chmod(0o755)


# ----------------------------------------------------------------- bad records in the loops


@pytest.fixture(scope="module")
def pretraining_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad_records")
    batches = random_batches(4, seed=3)  # 32 records of 8 per batch
    good = write_records(str(tmp / "good.tfrecord"), batches)
    batches["input_ids"][2, 3, 1] = 150  # record 2 * 8 + 3 = 19; vocab_size is 99
    return {"tmp": tmp, "good": good,
            "bad": write_records(str(tmp / "bad.tfrecord"), batches)}


def _dataset_fn(files, is_training, config):
    def dataset_fn(input_context):
        return input_pipeline.create_pretraining_dataset(
            files, SEQ_LENGTH, MAX_PREDICTIONS, input_context.get_per_replica_batch_size(8),
            is_training, input_context=input_context, seed=1, config=config)
    return dataset_fn


EXPECTED = ("%s: record 19 (counting from 0): feature input_ids holds 150, outside "
            "[0, vocab_size=99) of bert_config_file (data made with another vocab?)")


@pytest.mark.slow
def test_trainer_stops_at_a_bad_record_with_one_line(pretraining_files):
    config = tiny_config()
    output_dir = str(pretraining_files["tmp"] / "output")
    trainer = training.Trainer(distribute.get_strategy("off"),
                               lambda: BertPretrainer(config), output_dir)
    files = [pretraining_files["good"], pretraining_files["bad"]]
    # Evaluation reads in order: the good file (4 batches), then the bad file's
    # third batch holds record 19.
    with pytest.raises(UserError) as e:
        trainer.evaluate(_dataset_fn(files, False, config), 8, max_eval_steps=8)
    assert str(e.value) == EXPECTED % pretraining_files["bad"]
    # Training (shuffled) meets it too, inside the compiled loop, and saves nothing.
    with pytest.raises(UserError) as e:
        trainer.train(_dataset_fn([pretraining_files["bad"]], True, config), 8, 40, 1e-3, 1,
                      iterations_per_loop=40)
    assert str(e.value) == EXPECTED % pretraining_files["bad"]
    assert not tf.io.gfile.exists(os.path.join(output_dir, "checkpoint"))
    # The same data without the bad record trains.
    history = trainer.train(_dataset_fn([pretraining_files["good"]], True, config), 8, 2,
                            1e-3, 1)
    assert np.isfinite(history[-1]["loss"])


def test_prediction_stops_at_a_bad_record_with_one_line(tmp_path):
    config = tiny_config()
    path = str(tmp_path / "predict.tf_record")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(10):
            ids = [2, 5 + i, 3] + [0] * (SEQ_LENGTH - 3)
            if i == 6:
                ids[1] = 99
            feature = {"input_ids": ids, "input_mask": [1] * 3 + [0] * (SEQ_LENGTH - 3),
                       "segment_ids": [0] * SEQ_LENGTH, "label_ids": [0],
                       "is_real_example": [1]}
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
                for k, v in feature.items()})).SerializeToString())
    spec = classifier_data.name_to_features(SEQ_LENGTH)
    data = input_pipeline.finite_records_input(
        path, spec, 10, 4, limits=input_pipeline.record_limits(config, SEQ_LENGTH, 2))
    trainer = training.Trainer(distribute.get_strategy("off"), lambda: BertClassifier(config, 2),
                               str(tmp_path / "output"))
    with pytest.raises(UserError) as e:
        trainer.predict(data)
    assert str(e.value) == ("%s: record 6 (counting from 0): feature input_ids holds 99, "
                            "outside [0, vocab_size=99) of bert_config_file (data made with "
                            "another vocab?)" % path)
