"""Tests for bert_tf/training/trainer.py: the shared train/eval loop (original: TPUEstimator's behaviour).

Tiny BERT (2 layers, hidden 32), in-memory batches, one device. What the
Estimator did: checkpoints every save_checkpoints_steps, the last 5 kept,
resume from output_dir (optimizer state and global_step included, the same
run), `init_checkpoint` loading what it shares, eval_results.txt. What is new:
iterations_per_loop / accumulation / XLA leave the update unchanged, NaN
stop, mixed precision, LAMB, summaries. (Against the original code itself:
tests/test_pretraining.py; several replicas and workers: tests/test_distribute.py.)
"""

import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.training import distribute
from bert_tf import training
from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.models import BertPretrainer
from tests.test_pretraining import BATCH_SIZE
from tests.test_pretraining import in_memory_dataset_fn
from tests.test_pretraining import random_batches
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_init_checkpoint

# Different loop shapes of the same float32 maths: summation order only.
SAME_UPDATE_ATOL = 1e-5


def _trainer(output_dir, config=None, **kwargs):
    config = config or one_layer_config()
    return training.Trainer(distribute.get_strategy("off"),
                            lambda: BertPretrainer(config),
                            str(output_dir), **kwargs)


def _train(trainer, batches, num_train_steps, init_checkpoint=None, **kwargs):
    kwargs.setdefault("save_checkpoints_steps", 1000)
    kwargs.setdefault("iterations_per_loop", 1000)
    return trainer.train(in_memory_dataset_fn(batches), BATCH_SIZE, num_train_steps, 1e-3, 1,
                         init_checkpoint=init_checkpoint, **kwargs)


def _losses(history):
    return np.concatenate([h["losses"] for h in history])


def _assert_same_checkpoints(a, b, atol=SAME_UPDATE_ATOL):
    a, b = checkpoint.read_checkpoint(a), checkpoint.read_checkpoint(b)
    assert set(a) == set(b)
    for name in sorted(a):
        np.testing.assert_allclose(a[name], b[name], atol=atol, rtol=atol, err_msg=name)


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    # Every Trainer traces a new graph; dropping the previous ones keeps later
    # traces as fast as the first.
    yield
    keras.backend.clear_session()


@pytest.fixture(scope="module")
def init_checkpoint(tmp_path_factory):
    return write_init_checkpoint(one_layer_config(),
                                 str(tmp_path_factory.mktemp("init") / "bert_model.ckpt"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory, init_checkpoint):
    """4 steps, one step per loop, no accumulation: (output_dir, per-step losses)."""
    output_dir = tmp_path_factory.mktemp("reference")
    history = _train(_trainer(output_dir), random_batches(4, seed=5), 4, init_checkpoint,
                     iterations_per_loop=1)
    return str(output_dir), _losses(history)


@pytest.mark.slow
def test_loops_accumulation_and_xla_give_the_same_update(tmp_path, reference, init_checkpoint):
    ref_dir, ref_losses = reference
    batches = random_batches(4, seed=5)
    for name, kwargs, trainer_kwargs in (
            ("loop4_acc2", dict(iterations_per_loop=4, num_accumulation_steps=2), {}),
            ("loop3_acc4_xla", dict(iterations_per_loop=3, num_accumulation_steps=4),
             dict(use_xla=True))):
        trainer = _trainer(tmp_path / name, **trainer_kwargs)
        losses = _losses(_train(trainer, batches, 4, init_checkpoint, **kwargs))
        np.testing.assert_allclose(losses, ref_losses, atol=SAME_UPDATE_ATOL, err_msg=name)
        _assert_same_checkpoints(str(tmp_path / name / "model.ckpt-4"),
                                 os.path.join(ref_dir, "model.ckpt-4"))


@pytest.mark.slow
def test_checkpoints_keep_last_5_and_resume_continues_the_same_run(tmp_path, init_checkpoint,
                                                                  info_logs):
    batches = random_batches(7, seed=6)
    output_dir = tmp_path / "run"
    history = _train(_trainer(output_dir), batches, 7, init_checkpoint,
                     save_checkpoints_steps=1, iterations_per_loop=3)
    assert [h["step"] for h in history] == list(range(1, 8))  # loops cut at checkpoints
    state = tf.train.get_checkpoint_state(str(output_dir))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-%d" % i for i in range(3, 8)]
    on_disk = sorted(f for f in os.listdir(output_dir) if f.startswith("model.ckpt-"))
    assert on_disk == sorted("model.ckpt-%d.%s" % (i, s) for i in range(3, 8)
                             for s in ("index", "data-00000-of-00001"))
    final = str(tmp_path / "final")
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(str(output_dir / "model.ckpt-7") + suffix, final + suffix)

    # Killed after model.ckpt-4: later checkpoints gone, a writer's temporary
    # files and a data file without its index left behind.
    for i in (5, 6, 7):
        for f in tf.io.gfile.glob(str(output_dir / ("model.ckpt-%d.*" % i))):
            os.remove(f)
    tf.compat.v1.train.update_checkpoint_state(
        str(output_dir), "model.ckpt-4", all_model_checkpoint_paths=["model.ckpt-3",
                                                                     "model.ckpt-4"])
    (output_dir / "model.ckpt-5.tmp-999999.index").write_bytes(b"half")
    (output_dir / "model.ckpt-5.data-00000-of-00001").write_bytes(b"half")

    # The same command again: resumes at global_step 4 (init_checkpoint ignored)
    # and reaches the uninterrupted run's weights and optimizer state. The
    # input restarts from its beginning, as the Estimator's did; here the tail.
    tail = {k: v[4:] for k, v in batches.items()}
    trainer = _trainer(output_dir)
    history = _train(trainer, tail, 7, init_checkpoint, save_checkpoints_steps=1,
                     iterations_per_loop=3)
    assert history[0]["step"] == 5
    assert "Resuming from %s (global_step 4)" % (output_dir / "model.ckpt-4") in info_logs.text
    assert not (output_dir / "model.ckpt-5.tmp-999999.index").exists()
    _assert_same_checkpoints(str(output_dir / "model.ckpt-7"), final, atol=1e-6)

    # Once more: nothing to do (the Estimator's "Skipping training since
    # max_steps has already saved"; here a result line), and eval reports the
    # checkpoint's step.
    trainer = _trainer(output_dir)
    assert _train(trainer, tail, 7, init_checkpoint) == []
    results = trainer.evaluate(in_memory_dataset_fn(batches, repeat=True), BATCH_SIZE, 2)
    assert results["global_step"] == 7

    # Summaries for TensorBoard in output_dir: loss, learning rate, accuracies.
    tags = set()
    for path in tf.io.gfile.glob(str(output_dir / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(v.tag for v in event.summary.value)
    assert {"loss", "learning_rate", "masked_lm_accuracy", "next_sentence_accuracy",
            "global_step/sec", "examples/sec"} <= tags
    assert tf.io.gfile.glob(str(output_dir / "eval" / "events.out.tfevents.*"))


def _assert_global_step(prefix, expected):
    values = checkpoint.read_checkpoint(prefix)
    has_global_step = "global_step" in values
    assert has_global_step, "%s holds no global_step" % prefix
    assert values["global_step"].dtype == np.int64, (prefix, values["global_step"].dtype)
    assert int(values["global_step"]) == expected, (
        "%s holds global_step %d, not %d" % (prefix, int(values["global_step"]), expected))


@pytest.mark.slow
def test_checkpoints_hold_global_step_and_a_resumed_run_continues_from_it(tmp_path,
                                                                          init_checkpoint):
    # save_checkpoint writes global_step when given one (a model.ckpt-N), none
    # otherwise (a release's bert_model.ckpt has none).
    model = BertModel(one_layer_config())
    direct = checkpoint.save_checkpoint(model, str(tmp_path / "direct" / "model.ckpt-7"),
                                        global_step=7)
    _assert_global_step(direct, 7)
    assert "global_step" not in checkpoint.list_checkpoint_variables(init_checkpoint)

    # The Trainer's model.ckpt-N hold global_step N.
    batches = random_batches(3, seed=9)
    output_dir = tmp_path / "run"
    _train(_trainer(output_dir), batches, 3, init_checkpoint, save_checkpoints_steps=2,
           iterations_per_loop=1)
    for step in (2, 3):
        _assert_global_step(str(output_dir / ("model.ckpt-%d" % step)), step)

    # A new Trainer on the same output_dir restores global_step 3 (into the
    # optimizer's step, which drives the learning-rate schedule) and runs 4 and 5.
    trainer = _trainer(output_dir)
    assert trainer.restore() == 3, "restored global_step of %s" % (output_dir / "model.ckpt-3")
    history = trainer.train(in_memory_dataset_fn(batches, repeat=True), BATCH_SIZE, 5, 1e-3, 1,
                            init_checkpoint=init_checkpoint, iterations_per_loop=1)
    assert [h["step"] for h in history] == [4, 5], (
        "a run resumed from model.ckpt-3 must continue at global_step 4")
    assert int(trainer.base_optimizer.iterations.numpy()) == 5
    _assert_global_step(str(output_dir / "model.ckpt-5"), 5)


@pytest.mark.slow
def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, init_checkpoint):
    batches = random_batches(6, seed=7)
    batches["masked_lm_weights"][4, 0, 0] = np.nan  # the 5th step's loss is NaN
    output_dir = tmp_path / "nan"
    trainer = _trainer(output_dir)
    with pytest.raises(training.NonFiniteLossError) as error:
        _train(trainer, batches, 6, init_checkpoint, save_checkpoints_steps=2,
               iterations_per_loop=3)
    message = str(error.value)
    assert "\n" not in message
    assert "nan at global_step 5" in message
    assert "the last good checkpoint is %s" % (output_dir / "model.ckpt-4") in message
    assert isinstance(error.value, UserError)  # the tools print it as one line, exit 2
    assert tf.train.latest_checkpoint(str(output_dir)) == str(output_dir / "model.ckpt-4")
    assert not tf.io.gfile.glob(str(output_dir / "model.ckpt-5*"))
    assert not tf.io.gfile.glob(str(output_dir / "model.ckpt-6*"))
    values = checkpoint.read_checkpoint(str(output_dir / "model.ckpt-4"))
    assert all(np.isfinite(v).all() for v in values.values())
    assert int(values["global_step"]) == 4


@pytest.mark.slow
@pytest.mark.parametrize("mixed_precision,rtol", [("bf16", 2e-2), ("fp16", 2e-3)])
def test_mixed_precision_trains_with_float32_variables(tmp_path, reference, init_checkpoint,
                                                       mixed_precision, rtol):
    _, ref_losses = reference
    trainer = _trainer(tmp_path, mixed_precision=mixed_precision)
    assert keras.config.dtype_policy().name == "float32"  # restored after building
    policy = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}[mixed_precision]
    assert trainer.model.bert.encoder.dtype_policy.name == policy
    assert trainer.optimizer is None  # created by train()
    losses = _losses(_train(trainer, random_batches(4, seed=5), 4, init_checkpoint,
                            iterations_per_loop=2))
    np.testing.assert_allclose(losses, ref_losses, rtol=rtol)
    if mixed_precision == "fp16":
        assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    values = checkpoint.read_checkpoint(str(tmp_path / "model.ckpt-4"))
    assert int(values["global_step"]) == 4
    assert values["bert/embeddings/word_embeddings"].dtype == np.float32
    assert values["bert/embeddings/word_embeddings/adam_m"].dtype == np.float32


@pytest.mark.slow
def test_lamb_trains_and_saves_the_same_slot_names(tmp_path, init_checkpoint):
    trainer = _trainer(tmp_path)
    _train(trainer, random_batches(2, seed=8), 2, init_checkpoint, optimizer_type="lamb")
    assert type(trainer.optimizer).__name__ == "LAMB"
    names = checkpoint.list_checkpoint_variables(str(tmp_path / "model.ckpt-2"))
    assert "cls/predictions/output_bias/adam_m" in names
    assert "bert/encoder/layer_0/output/dense/kernel/adam_v" in names


def test_init_checkpoint_loads_what_it_shares(tmp_path, debug_logs):
    config = one_layer_config()
    keras.utils.set_random_seed(3)
    backbone = BertModel(config)
    prefix = str(tmp_path / "bert_only" / "bert_model.ckpt")
    checkpoint.save_checkpoint(backbone, prefix, update_state=False)
    trainer = _trainer(tmp_path / "out", config)
    heads_before = {v.path: v.numpy() for v in trainer.model.cls.weights}
    assert trainer.restore(prefix) == 0
    for ours, theirs in zip(trainer.model.bert.weights, backbone.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    for v in trainer.model.cls.weights:
        np.testing.assert_array_equal(v.numpy(), heads_before[v.path], err_msg=v.path)
    # The original's list of variables, at DEBUG (the tools' --verbosity=1).
    assert ("name = bert/pooler/dense/kernel, shape = (32, 32), *INIT_FROM_CKPT*"
            in debug_logs.text)
    assert "name = cls/predictions/output_bias, shape = (99,)\n" in debug_logs.text + "\n"


def test_init_checkpoint_of_another_architecture_is_a_one_line_error(tmp_path):
    other = write_init_checkpoint(one_layer_config(hidden_size=48, num_attention_heads=4),
                                  str(tmp_path / "other" / "bert_model.ckpt"))
    trainer = _trainer(tmp_path / "out")
    with pytest.raises(UserError, match=r"variable bert/embeddings/word_embeddings has shape "
                                        r"\[99, 48\] in the checkpoint but \[99, 32\]"):
        trainer.restore(other)
    unrelated = str(tmp_path / "unrelated" / "model.ckpt")
    checkpoint.write_checkpoint(unrelated, {"resnet/conv1/kernel": tf.zeros([3, 3])},
                                update_state=False)
    with pytest.raises(UserError, match="shares no variable with the model"):
        trainer.restore(unrelated)


def test_bad_arguments_are_one_line_errors(tmp_path):
    trainer = _trainer(tmp_path)
    batches = random_batches(1)
    with pytest.raises(UserError, match=r"--train_batch_size=6 must be divisible by the number "
                                        r"of replicas \(1\) times --num_accumulation_steps \(4\)"):
        trainer.train(in_memory_dataset_fn(batches), 6, 2, 1e-3, 0, num_accumulation_steps=4)
    with pytest.raises(UserError, match="--num_accumulation_steps must be a positive integer"):
        trainer.train(in_memory_dataset_fn(batches), 8, 2, 1e-3, 0, num_accumulation_steps=0)
    with pytest.raises(UserError, match="--mixed_precision must be one of bf16|fp16"):
        _trainer(tmp_path, mixed_precision="fp8")
    with pytest.raises(UserError, match="--max_eval_steps must be a positive integer"):
        trainer.evaluate(in_memory_dataset_fn(batches), 8, 0)


def test_write_eval_results_is_the_originals_format(tmp_path):
    path = str(tmp_path / "eval_results.txt")
    training.write_eval_results({"masked_lm_accuracy": 0.985479, "loss": 0.0979674,
                                 "global_step": 20, "next_sentence_loss": 3.45724e-05,
                                 "next_sentence_accuracy": 1.0,
                                 "masked_lm_loss": 0.0979328}, path)
    # The README's expected output (sorted keys, str() of numpy float32 / int64).
    with open(path) as f:
        assert f.read() == ("global_step = 20\n"
                            "loss = 0.0979674\n"
                            "masked_lm_accuracy = 0.985479\n"
                            "masked_lm_loss = 0.0979328\n"
                            "next_sentence_accuracy = 1.0\n"
                            "next_sentence_loss = 3.45724e-05\n")
    assert os.listdir(tmp_path) == ["eval_results.txt"]  # no temporary left


def test_the_trainer_takes_the_models_builder_and_reads_the_models_task(tmp_path):
    """One direction: the model names its task (`model.task`); no task builds a model."""
    from bert_tf.tasks import registry  # noqa: F401  (every task model's module)
    from bert_tf.tasks.base import Task
    from bert_tf.tasks.classifier import model_hub  # noqa: F401
    from bert_tf.tasks.classifier.model import ClassifierTask
    from bert_tf.tasks.masked_lm import model as masked_lm  # noqa: F401
    trainer = _trainer(tmp_path)
    assert isinstance(trainer.model, BertPretrainer)
    assert trainer.task is trainer.model.task and trainer.task.name == "pretraining"
    with pytest.raises(TypeError, match="a callable that builds the task model"):
        training.Trainer(distribute.get_strategy("off"),
                         ClassifierTask(one_layer_config(), 2), str(tmp_path))
    with pytest.raises(TypeError, match="must return a task model"):
        training.Trainer(distribute.get_strategy("off"),
                         lambda: BertModel(one_layer_config()), str(tmp_path))

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)
    tasks = set(subclasses(Task))
    assert len(tasks) >= 9
    assert [t.__name__ for t in tasks if hasattr(t, "build_model")] == []
