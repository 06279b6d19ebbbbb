"""`--seed`: reproducible training, and a run killed at any step that resumes exactly.

* Two runs with one seed write the same checkpoints, bit for bit; the
  initial weights (head included) follow from the seed. Dropout is on in
  every run here.
* A run stopped right after the checkpoint at a step drawn at random
  (seeded), then again between two later saves (as kill -9 stops it: nothing
  saved at that step), each time run again with the same arguments, ends
  with the final checkpoint of the run that was never stopped, bit for bit:
  the input continues at the next unseen batch and the dropout masks are
  those of the same steps. For pre-training (files shuffled and interleaved,
  records shuffled) and the classifier (records shuffled; and with
  --bucket_by_length, batches of similar lengths in a seeded order; every
  batch cut after its longest row), on one device and
  on 2 replicas (MirroredStrategy over 2 logical CPU devices, in a child
  process: devices are set before TensorFlow starts; pre-training there with
  2 accumulation micro-batches, killed once between two saves, the classifier
  once right after a save).
* `--seed` reaches the trainer from the tools' flags.

The stopped runs use `iterations_per_loop=1` (so a stop lands on any step)
and the uninterrupted ones a longer host loop: the result does not depend
on how the steps are grouped into host calls either. A real kill -9 of the
tools, many times over: `bench/fault_injection.py`.
"""

if __name__ == "__main__":
    # The child process: two logical CPU devices, before TensorFlow starts.
    import tensorflow as tf
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0],
        [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
    from tests.conftest import turn_off_grappler_rewrites
    turn_off_grappler_rewrites()

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.data import input_pipeline
from bert_tf.modeling import checkpoint
from bert_tf.runs import finetuning
from bert_tf.models import BertClassifier
from bert_tf.models import BertPretrainer
from bert_tf.training import distribute
from bert_tf.training import trainer as trainer_lib
from tests.test_pretraining import MAX_PREDICTIONS, SEQ_LENGTH
from tests.test_pretraining import random_batches, one_layer_config, write_records

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUM_STEPS = 8
SAVE_STEPS = 3
BATCH_SIZE = 8
NUM_LABELS = 3


class _Killed(Exception):
    """Stands in for kill -9: the run stops at once, saving nothing more."""


def _stop_after(trainer, stop_step, after_save):
    """Makes `trainer.train` die once global_step reaches `stop_step`.

    `after_save`: right after the checkpoint at `stop_step` is written (a
    multiple of the save period); otherwise before anything is saved at it.
    """
    if after_save:
        save = trainer.save

        def save_then_die(step=None):
            prefix = save(step)
            if trainer.global_step >= stop_step:
                raise _Killed()
            return prefix
        trainer.save = save_then_die
    else:
        check_finite = trainer._check_finite

        def check_then_die(losses, step):
            check_finite(losses, step)
            if step + len(losses) >= stop_step:
                raise _Killed()
        trainer._check_finite = check_then_die


def _write_pretraining_data(directory):
    """Three pre-training files (the pipeline shuffles and interleaves files, then records)."""
    os.makedirs(directory, exist_ok=True)
    return [write_records(os.path.join(directory, "data-%d.tfrecord" % i),
                          random_batches(2, seed=20 + i)) for i in range(3)]


def _write_classifier_data(path, num_examples=40, seed=3):
    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(num_examples):
            length = rng.randint(4, SEQ_LENGTH + 1)
            mask = (np.arange(SEQ_LENGTH) < length).astype(np.int64)
            features = {"input_ids": rng.randint(1, 99, SEQ_LENGTH) * mask,
                        "input_mask": mask,
                        "segment_ids": (np.arange(SEQ_LENGTH) >= length // 2) * mask,
                        "label_ids": [rng.randint(NUM_LABELS)], "is_real_example": [1]}
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                k: tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(v).ravel()))
                for k, v in features.items()})).SerializeToString())
    return path


def _train(kind, data, output_dir, seed, strategy=None, stop_step=None, after_save=False,
           iterations_per_loop=4, num_accumulation_steps=1):
    """One `Trainer.train` of `kind` ("pretraining" | "classifier" | "classifier_bucketed")
    with dropout 0.1.

    Returns True if it ran to the end, False if it was stopped (`stop_step`).
    """
    strategy = strategy or distribute.get_strategy("off")
    config = one_layer_config(dropout=0.1)
    if kind == "pretraining":
        build_model = lambda: BertPretrainer(config)  # noqa: E731

        def dataset_fn(input_context):
            return input_pipeline.create_pretraining_dataset(
                data, SEQ_LENGTH, MAX_PREDICTIONS,
                input_context.get_per_replica_batch_size(BATCH_SIZE), True,
                input_context=input_context, seed=seed, check_files=False, config=config)
    else:
        build_model = lambda: BertClassifier(config, NUM_LABELS)  # noqa: E731
        dataset_fn = finetuning.train_dataset_fn(
            data, classifier_data.name_to_features(SEQ_LENGTH), BATCH_SIZE,
            input_pipeline.record_limits(config, SEQ_LENGTH, num_labels=NUM_LABELS), seed=seed,
            bucket_by_length=kind == "classifier_bucketed")
    trainer = trainer_lib.Trainer(strategy, build_model, output_dir, seed=seed, log_steps=100)
    if stop_step is not None:
        _stop_after(trainer, stop_step, after_save)
    try:
        trainer.train(dataset_fn, BATCH_SIZE, NUM_STEPS, 1e-3, 2, save_checkpoints_steps=SAVE_STEPS,
                      iterations_per_loop=iterations_per_loop,
                      num_accumulation_steps=num_accumulation_steps)
    except _Killed:
        return False
    return True


def _final(output_dir):
    return checkpoint.read_checkpoint(os.path.join(output_dir, "model.ckpt-%d" % NUM_STEPS))


def _differences(a, b):
    """The variables whose values differ in any bit (or that only one holds)."""
    return sorted(name for name in set(a) | set(b)
                  if name not in a or name not in b or a[name].dtype != b[name].dtype
                  or a[name].tobytes() != b[name].tobytes())


def _kill_points(rng):
    """Two kills of one run: right after a random checkpoint, then between two saves later."""
    saved = rng.choice(range(SAVE_STEPS, NUM_STEPS, SAVE_STEPS))
    between = rng.choice([k for k in range(saved + 1, NUM_STEPS) if k % SAVE_STEPS])
    return [(saved, True), (between, False)]


def _stopped_and_resumed(kind, data, output_dir, kill_points, strategy=None, **options):
    """A run killed at each of `kill_points` in turn, each time run again; its final checkpoint."""
    for stop_step, after_save in kill_points:
        assert not _train(kind, data, output_dir, 7, strategy, stop_step=stop_step,
                          after_save=after_save, iterations_per_loop=1, **options)
        latest = tf.train.latest_checkpoint(output_dir)
        expected = stop_step if after_save else stop_step // SAVE_STEPS * SAVE_STEPS
        assert latest == (os.path.join(output_dir, "model.ckpt-%d" % expected)
                          if expected else None), (stop_step, after_save, latest)
    assert _train(kind, data, output_dir, 7, strategy, iterations_per_loop=1, **options)
    return _final(output_dir)


def _resume_trial(kind, root, rng, strategy=None, kills=(0, 1), **options):
    """An uninterrupted run and one killed at `kills` of `_kill_points` (both: twice).

    Returns ([kill points], the variables that differ).
    """
    if kind == "pretraining":
        data = _write_pretraining_data(os.path.join(root, "data"))
    else:
        os.makedirs(root, exist_ok=True)
        data = _write_classifier_data(os.path.join(root, "train.tf_record"))
    assert _train(kind, data, os.path.join(root, "uninterrupted"), 7, strategy, **options)
    points = _kill_points(rng)
    kill_points = [points[k] for k in kills]
    resumed = _stopped_and_resumed(kind, data, os.path.join(root, "resumed"), kill_points,
                                   strategy, **options)
    differences = _differences(resumed, _final(os.path.join(root, "uninterrupted")))
    return kill_points, differences


# ----------------------------------------------------------------- one device


@pytest.mark.slow
def test_one_seed_gives_one_checkpoint_and_another_seed_another(tmp_path):
    data = _write_pretraining_data(str(tmp_path / "data"))
    assert _train("pretraining", data, str(tmp_path / "a"), 7)
    assert _train("pretraining", data, str(tmp_path / "b"), 7, iterations_per_loop=2)
    for step in (3, 6, NUM_STEPS):
        name = "model.ckpt-%d" % step
        a = checkpoint.read_checkpoint(str(tmp_path / "a" / name))
        assert int(a["global_step"]) == step
        assert _differences(a, checkpoint.read_checkpoint(str(tmp_path / "b" / name))) == []
    # The initial weights (head included) follow from the seed.
    config = one_layer_config(dropout=0.1)
    strategy = distribute.get_strategy("off")

    def initial(seed):
        trainer = trainer_lib.Trainer(strategy, lambda: BertClassifier(config, NUM_LABELS),
                                      str(tmp_path / "unused"), seed=seed)
        return {checkpoint.tf1_name(v): v.numpy() for v in trainer.model.trainable_variables}
    first, again, other = initial(7), initial(7), initial(8)
    assert "output_weights" in first and _differences(first, again) == []
    assert {"output_weights", "bert/embeddings/word_embeddings"} <= set(
        _differences(first, other))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pretraining", "classifier", "classifier_bucketed"])
def test_killed_twice_and_resumed_equals_the_uninterrupted_run(tmp_path, kind):
    kill_points, differences = _resume_trial(kind, str(tmp_path), random.Random(kind))
    assert differences == [], (kill_points, differences)


def test_seed_flag_reaches_the_trainer_and_the_input():
    from bert_tf.errors import UserError
    from tests.test_tpu_flags import scale_out_of
    assert scale_out_of().trainer_options()["seed"] is None
    assert scale_out_of("--seed=42").trainer_options()["seed"] == 42
    with pytest.raises(UserError, match="--seed=-1"):
        scale_out_of("--seed=-1")


def test_resumed_input_skips_the_batches_of_the_steps_done():
    def dataset_fn(input_context):
        return tf.data.Dataset.range(100).shard(input_context.num_input_pipelines,
                                                input_context.input_pipeline_id)
    resumed = trainer_lib._resumed_input(dataset_fn, 5)
    one = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                     num_replicas_in_sync=1)
    two_replicas = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                              num_replicas_in_sync=2)
    # Two workers of one replica each: each pipeline feeds one replica.
    two_workers = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
                                             num_replicas_in_sync=2)
    first = lambda context: int(next(iter(resumed(context).as_numpy_iterator())))
    assert (first(one), first(two_replicas), first(two_workers)) == (5, 10, 11)


# ----------------------------------------------------------------- 2 replicas


def _two_replicas_child(output_dir):
    """In the child: resumed runs under MirroredStrategy over 2 devices, as JSON results."""
    assert len(tf.config.list_logical_devices("CPU")) == 2
    mirrored = distribute.get_strategy("mirrored")
    assert mirrored.num_replicas_in_sync == 2
    results = {}
    # One kill each (the one-device tests kill twice): pre-training between two
    # saves, the classifier right after a save.
    for kind, options in (("pretraining", {"num_accumulation_steps": 2, "kills": (1,)}),
                          ("classifier", {"kills": (0,)})):
        results[kind] = _resume_trial(kind, os.path.join(output_dir, kind),
                                      random.Random("%s-two-replicas" % kind), mirrored,
                                      **options)
    with open(os.path.join(output_dir, "results.json"), "w") as f:
        json.dump(results, f)


def _child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_CONFIG", None)
    return env


@pytest.mark.slow
def test_two_replicas_stopped_and_resumed_equal_the_uninterrupted_run(tmp_path):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "two_replicas",
                           str(tmp_path)], cwd=REPO_ROOT, env=_child_env(), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(tmp_path / "results.json") as f:
        results = json.load(f)
    for kind in ("pretraining", "classifier"):
        kill_points, differences = results[kind]
        assert differences == [], (kind, kill_points, differences)


if __name__ == "__main__":
    if sys.argv[1] == "two_replicas":
        _two_replicas_child(sys.argv[2])
