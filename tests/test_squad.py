"""Tests for bert_tf/tasks/squad/model.py and SquadTask (original: run_squad.py's create_model and model_fn).

* Checkpoint names: `BertSquad` saves exactly `bert/*` plus
  `cls/squad/output_weights` [2, H] and `cls/squad/output_bias` [2].
* A NumPy re-statement of the loss: (mean start loss + mean end loss) / 2,
  each the mean over the batch of -log softmax(logits)[position].
* `Trainer.predict` on a `FiniteInput` whose example count does not divide
  the batch: every example once, in input order, with its unique_id.
* Differential (`original`): tests/original/finetuning_oracle.py runs the
  original `create_model` + the model_fn loss + `create_optimizer` with
  `sess.run(train_op)` on fixed batches from the same initial checkpoint,
  config dropouts 0 (the SQuAD head has no dropout of its own). Then: the same
  per-step losses and final variables (adam slots and global_step included),
  and the original restores our model.ckpt-4 and predicts our start/end logits.
  And ours resumes the original's model.ckpt-N, which has no adam slots for
  bert/pooler (no gradient reaches it; those slots start at zero here too).
"""

import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.tasks.squad.model import BertSquad
from bert_tf.tasks.squad.model import span_example_loss
from tests.test_classifier import finite_input
from tests.test_classifier import make_trainer
from tests.test_classifier import np_log_softmax
from tests.test_pretraining import SEQ_LENGTH
from tests.test_pretraining import in_memory_dataset_fn
from tests.test_pretraining import random_batches
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.tolerances import LAYER_ATOL
from tests.tolerances import MODEL_ATOL

BATCH_SIZE = 8
NUM_STEPS = 4         # the whole run (num_train_steps); model.ckpt-4 on both sides
WARMUP = 2            # lr 0 on the first update
LEARNING_RATE = 1e-3
NUM_EXAMPLES = 10     # predict: 10 examples in batches of 4 -> 4, 4, 2
PREDICT_BATCH_SIZE = 4
# The adam slots the original does not create for SQuAD (no gradient reaches the pooler).
NO_GRADIENT_SLOTS = {"bert/pooler/dense/%s/%s" % (v, s) for v in ("kernel", "bias")
                     for s in ("adam_m", "adam_v")}


def random_examples(num_examples, seed):
    """Single SQuAD training features [num_examples, ...] plus `unique_ids` (not in order)."""
    features = random_batches(1, batch_size=num_examples, seed=seed)
    examples = {k: features[k][0] for k in ("input_ids", "input_mask", "segment_ids")}
    rng = np.random.RandomState(seed + 100)
    lengths = examples["input_mask"].sum(axis=1)
    start = rng.randint(0, lengths).astype(np.int32)
    examples["start_positions"] = start
    examples["end_positions"] = np.minimum(start + rng.randint(0, 3, num_examples),
                                           lengths - 1).astype(np.int32)
    examples["unique_ids"] = (1000000000 + rng.permutation(num_examples)).astype(np.int32)
    return examples


def random_train_batches(num_steps, seed):
    """[num_steps, BATCH_SIZE, ...] training batches for `in_memory_dataset_fn`."""
    flat = random_examples(num_steps * BATCH_SIZE, seed)
    return {k: v.reshape((num_steps, BATCH_SIZE) + v.shape[1:]) for k, v in flat.items()
            if k != "unique_ids"}


# ----------------------------------------------------------------- names


def test_squad_model_saves_exactly_bert_and_cls_squad(tmp_path):
    config = tiny_config()
    model = BertSquad(config)
    want = dict(checkpoint.expected_tf1_variables(config))
    want["cls/squad/output_weights"] = (2, config.hidden_size)
    want["cls/squad/output_bias"] = (2,)
    assert {checkpoint.tf1_name(v): tuple(v.shape) for v in model.weights} == want
    prefix = checkpoint.save_checkpoint(model, str(tmp_path / "model.ckpt"), update_state=False)
    assert dict(checkpoint.list_checkpoint_variables(prefix)) == want


# ----------------------------------------------------------------- loss


def test_squad_loss_is_the_mean_of_start_and_end_losses():
    model = BertSquad(tiny_config())
    task = model.task
    features = random_examples(6, seed=5)
    outputs = model(features, training=False)
    start_logits = outputs["start_logits"].numpy()
    end_logits = outputs["end_logits"].numpy()
    assert start_logits.shape == end_logits.shape == (6, SEQ_LENGTH)
    rows = np.arange(6)
    start_loss = -np_log_softmax(start_logits)[rows, features["start_positions"]]
    end_loss = -np_log_softmax(end_logits)[rows, features["end_positions"]]
    np.testing.assert_allclose(span_example_loss(start_logits, features["start_positions"]),
                               start_loss, atol=LAYER_ATOL, rtol=LAYER_ATOL)
    loss, sums = task.compute_loss(model, features, task.loss_normalizers(features),
                                   training=False)
    np.testing.assert_allclose(loss.numpy(), (start_loss.mean() + end_loss.mean()) / 2.0,
                               atol=LAYER_ATOL, rtol=LAYER_ATOL)
    assert float(sums["examples"]) == 6
    assert float(sums["start_correct"]) == np.sum(
        start_logits.argmax(-1) == features["start_positions"])


# ----------------------------------------------------------------- predict


def test_predict_returns_every_example_once_in_input_order(tmp_path):
    trainer = make_trainer(tmp_path, lambda: BertSquad(tiny_config()))
    examples = random_examples(NUM_EXAMPLES, seed=6)
    data = finite_input(examples, PREDICT_BATCH_SIZE)
    assert (data.num_steps, data.num_padding_examples) == (3, 2)
    outputs = trainer.predict(data)
    assert set(outputs) == {"unique_ids", "start_logits", "end_logits"}
    np.testing.assert_array_equal(outputs["unique_ids"], examples["unique_ids"])
    direct = trainer.model(examples, training=False)
    for key in ("start_logits", "end_logits"):
        assert outputs[key].shape == (NUM_EXAMPLES, SEQ_LENGTH)
        np.testing.assert_allclose(outputs[key], direct[key].numpy(), atol=LAYER_ATOL,
                                   err_msg=key)


# ----------------------------------------------------------------- the original


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    """Trains ours, then runs the original (one process); returns paths and results."""
    from tests.original import run_oracle
    tmp = tmp_path_factory.mktemp("squad_parity")
    config = tiny_config()
    config_file = write_config(config, str(tmp / "bert_config.json"))
    # The initial checkpoint holds cls/squad too, so both sides start equal.
    keras.utils.set_random_seed(1)
    init_model = BertSquad(config)
    init_model.cls.squad.output_bias.assign(np.array([0.1, -0.2], np.float32))
    init = checkpoint.save_checkpoint(init_model, str(tmp / "init" / "bert_model.ckpt"),
                                      update_state=False)
    batches = random_train_batches(NUM_STEPS, seed=3)
    np.savez(tmp / "batches.npz", **batches)
    examples = random_examples(NUM_EXAMPLES, seed=4)
    np.savez(tmp / "examples.npz", **examples)

    # Ours: 4 steps (host loops of 2), model.ckpt-4.
    ours_dir = str(tmp / "ours")
    trainer = make_trainer(ours_dir, lambda: BertSquad(config))
    history = trainer.train(in_memory_dataset_fn(batches), BATCH_SIZE, NUM_STEPS, LEARNING_RATE,
                            WARMUP, init_checkpoint=init, save_checkpoints_steps=NUM_STEPS,
                            iterations_per_loop=2)
    losses = np.concatenate([h["losses"] for h in history])
    # A fresh trainer restores model.ckpt-4 (as do_predict).
    ours_predict = make_trainer(ours_dir, lambda: BertSquad(config)).predict(
        finite_input(examples, PREDICT_BATCH_SIZE))

    ours_ckpt = os.path.join(ours_dir, "model.ckpt-%d" % NUM_STEPS)
    common = {"task": "squad", "config": config_file}
    runs = [
        dict(common, mode="train", ckpt=init, batches=str(tmp / "batches.npz"),
             out=str(tmp / "original.npz"), learning_rate=LEARNING_RATE,
             num_train_steps=NUM_STEPS, num_warmup_steps=WARMUP, save_at=NUM_STEPS,
             save_prefix=str(tmp / "original" / ("model.ckpt-%d" % NUM_STEPS))),
        dict(common, mode="predict", ckpt=ours_ckpt, examples=str(tmp / "examples.npz"),
             batch_size=PREDICT_BATCH_SIZE, out=str(tmp / "original_predict.npz")),
    ]
    with open(tmp / "runs.json", "w") as f:
        json.dump(runs, f)
    run_oracle("finetuning_oracle", tmp / "runs.json")
    return {
        "tmp": tmp, "init": init, "ours_ckpt": ours_ckpt, "losses": losses,
        "original": dict(np.load(tmp / "original.npz")),
        "ours_predict": ours_predict, "examples": examples,
        "original_predict": dict(np.load(tmp / "original_predict.npz")),
    }


@pytest.mark.original
def test_training_steps_match_the_original(parity):
    original = parity["original"]
    np.testing.assert_allclose(parity["losses"], original["total_loss"], atol=MODEL_ATOL,
                               rtol=MODEL_ATOL)
    np.testing.assert_array_equal(original["global_step"], np.arange(1, NUM_STEPS + 1))
    final = checkpoint.read_checkpoint(parity["ours_ckpt"])
    # Weights, adam_m, adam_v, global_step: every variable of the original's graph.
    names = {k[len("final:"):] for k in original if k.startswith("final:")}
    assert names <= set(final)
    for name in sorted(names):
        np.testing.assert_allclose(final[name], original["final:" + name], atol=MODEL_ATOL,
                                   rtol=MODEL_ATOL, err_msg=name)
    assert int(final["global_step"]) == NUM_STEPS
    # The original makes adam slots only for variables with a gradient; the
    # SQuAD loss does not reach bert/pooler, so it has no pooler slots. Ours
    # may hold them, untouched zeros (the original's Saver ignores them).
    extra = set(final) - names
    assert extra <= NO_GRADIENT_SLOTS, sorted(extra)
    for name in extra:
        assert not final[name].any(), name
    # ... and the original's own model.ckpt-4 holds the same as its graph.
    theirs = checkpoint.read_checkpoint(
        str(parity["tmp"] / "original" / ("model.ckpt-%d" % NUM_STEPS)))
    assert set(theirs) == names
    # The head and the backbone did move (lr > 0 after the first step).
    init = checkpoint.read_checkpoint(parity["init"])
    for name in ("cls/squad/output_weights", "bert/encoder/layer_1/output/dense/kernel"):
        assert np.abs(final[name] - init[name]).max() > 1e-4, name


@pytest.mark.original
def test_the_original_restores_our_checkpoint_and_predicts_our_logits(parity):
    ours, theirs = parity["ours_predict"], parity["original_predict"]
    np.testing.assert_array_equal(ours["unique_ids"], parity["examples"]["unique_ids"])
    for key in ("start_logits", "end_logits"):
        assert theirs[key].shape == (NUM_EXAMPLES, SEQ_LENGTH)
        np.testing.assert_allclose(ours[key], theirs[key], atol=MODEL_ATOL, rtol=MODEL_ATOL,
                                   err_msg=key)


@pytest.mark.original
def test_ours_resumes_the_originals_checkpoint(parity, tmp_path):
    # The original's model.ckpt-4 in a fresh output_dir (the Estimator's model_dir).
    for name in os.listdir(parity["tmp"] / "original"):
        if name.startswith("model.ckpt-%d." % NUM_STEPS):
            shutil.copy(parity["tmp"] / "original" / name, tmp_path / name)
    tf.compat.v1.train.update_checkpoint_state(str(tmp_path), "model.ckpt-%d" % NUM_STEPS)
    trainer = make_trainer(tmp_path, lambda: BertSquad(tiny_config()))
    # global_step == num_train_steps: restores everything, then trains nothing.
    assert trainer.train(in_memory_dataset_fn(random_train_batches(1, seed=5)), BATCH_SIZE,
                         NUM_STEPS, LEARNING_RATE, WARMUP) == []
    assert trainer.global_step == NUM_STEPS
    original = parity["original"]
    for variable in trainer.model.weights:
        name = checkpoint.tf1_name(variable)
        np.testing.assert_array_equal(variable.numpy(), original["final:" + name], err_msg=name)
