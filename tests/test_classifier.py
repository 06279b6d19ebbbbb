"""Tests for bert_tf/tasks/classifier/model.py and ClassifierTask (original: run_classifier.py's model_fn).

* Checkpoint names: `BertClassifier` saves exactly `bert/*` plus the
  original's unscoped `output_weights` / `output_bias`.
* NumPy re-statements of the losses (mean of -log softmax[label]; regression's
  squared error) and of the regression correlations.
* `Trainer.predict` / `Trainer.evaluate` on a `FiniteInput` whose example
  count does not divide the batch: every example once, in input order.
* Differential (`original`): tests/original/finetuning_oracle.py runs the
  original `create_model` + `create_optimizer` with `sess.run(train_op)` on
  fixed batches from the same initial checkpoint, config dropouts 0. The
  original head's `tf.nn.dropout(keep_prob=0.9)` is hard-coded and random, so
  for the training comparison the oracle patches that one call to the
  identity (in its own process only), and ours trains a `BertClassifier`
  whose head dropout rate is set to 0 (`_NoHeadDropoutTask`). Then: the same
  per-step losses and final variables (adam slots and global_step included);
  the original restores our model.ckpt-4 and predicts our probabilities; and
  our `Trainer.evaluate` of 10 examples in batches of 4 (padded with
  is_real_example=0) gives the original `metric_fn`'s eval_accuracy /
  eval_loss and the Estimator's `loss` on its unpadded batches of 4, 4, 2
  (the original on CPU/GPU, drop_remainder=False).
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.training import distribute
from bert_tf import training
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.classifier.model import classification_example_loss
from bert_tf.data.finite_input import FiniteInput
from bert_tf.tasks.classifier.model import pearson
from bert_tf.tasks.classifier.model import spearman
from tests.test_pretraining import in_memory_dataset_fn
from tests.test_pretraining import random_batches
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.tolerances import LAYER_ATOL
from tests.tolerances import MODEL_ATOL

NUM_LABELS = 3
BATCH_SIZE = 8
NUM_STEPS = 4         # the whole run (num_train_steps); model.ckpt-4 on both sides
WARMUP = 2            # lr 0 on the first update
LEARNING_RATE = 1e-3
NUM_EXAMPLES = 10     # eval / predict: 10 examples in batches of 4 -> 4, 4, 2
EVAL_BATCH_SIZE = 4


def random_examples(num_examples, seed, num_labels=NUM_LABELS, regression=False):
    """Single classification examples [num_examples, ...] (the original's keys and dtypes)."""
    features = random_batches(1, batch_size=num_examples, seed=seed)
    examples = {k: features[k][0] for k in ("input_ids", "input_mask", "segment_ids")}
    rng = np.random.RandomState(seed + 100)
    if regression:
        # STS-B-like scores on a 0.5 grid, so the labels have ties.
        examples["label_ids"] = (rng.randint(0, 11, num_examples) / 2.0).astype(np.float32)
    else:
        examples["label_ids"] = rng.randint(0, num_labels, num_examples).astype(np.int32)
    return examples


def random_train_batches(num_steps, seed):
    """[num_steps, BATCH_SIZE, ...] training batches for `in_memory_dataset_fn`."""
    flat = random_examples(num_steps * BATCH_SIZE, seed)
    return {k: v.reshape((num_steps, BATCH_SIZE) + v.shape[1:]) for k, v in flat.items()}


def finite_input(examples, global_batch_size):
    """A `FiniteInput` of in-memory single examples."""
    return FiniteInput(lambda: tf.data.Dataset.from_tensor_slices(examples),
                       len(examples["input_ids"]), global_batch_size)


def np_log_softmax(x):
    x = x.astype(np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def make_trainer(output_dir, build_model):
    return training.Trainer(distribute.get_strategy("off"), build_model, str(output_dir))


def _no_head_dropout(config, num_labels):
    """A `BertClassifier` with head dropout 0 (the original's 0.1 is patched out in the oracle)."""
    model = BertClassifier(config, num_labels)
    model.classifier.dropout.rate = 0.0
    model.classifier.dropout_rate = 0.0
    return model


# ----------------------------------------------------------------- names


def test_classifier_saves_exactly_bert_and_the_unscoped_head(tmp_path):
    config = tiny_config()
    model = BertClassifier(config, NUM_LABELS)
    want = dict(checkpoint.expected_tf1_variables(config))
    want["output_weights"] = (NUM_LABELS, config.hidden_size)
    want["output_bias"] = (NUM_LABELS,)
    assert {checkpoint.tf1_name(v): tuple(v.shape) for v in model.weights} == want
    prefix = checkpoint.save_checkpoint(model, str(tmp_path / "model.ckpt"), update_state=False)
    assert dict(checkpoint.list_checkpoint_variables(prefix)) == want


def test_head_dropout_is_the_originals_hard_coded_0_1():
    model = BertClassifier(tiny_config(), NUM_LABELS)  # config dropouts 0
    assert model.classifier.dropout.rate == 0.1
    features = random_examples(4, seed=5)
    keras.utils.set_random_seed(0)
    logits = model(features, training=False)["logits"].numpy()
    assert not np.allclose(model(features, training=True)["logits"].numpy(), logits)
    model.classifier.dropout.rate = 0.0
    np.testing.assert_array_equal(model(features, training=True)["logits"].numpy(), logits)


# ----------------------------------------------------------------- losses


def test_classification_loss_is_the_mean_negative_log_softmax_of_the_label():
    config = tiny_config()
    model = BertClassifier(config, NUM_LABELS)
    task = model.task
    features = random_examples(6, seed=6)
    logits = model(features, training=False)["logits"].numpy()
    log_probs = np_log_softmax(logits)
    want = -log_probs[np.arange(6), features["label_ids"]]
    per_example, probabilities, _ = classification_example_loss(logits, features["label_ids"])
    np.testing.assert_allclose(per_example.numpy(), want, atol=LAYER_ATOL, rtol=LAYER_ATOL)
    np.testing.assert_allclose(probabilities.numpy(), np.exp(log_probs), atol=LAYER_ATOL)
    loss, sums = task.compute_loss(model, features, task.loss_normalizers(features),
                                   training=False)
    np.testing.assert_allclose(loss.numpy(), want.mean(), atol=LAYER_ATOL, rtol=LAYER_ATOL)
    assert float(sums["examples"]) == 6
    assert float(sums["correct"]) == np.sum(logits.argmax(-1) == features["label_ids"])


def test_regression_loss_is_the_mean_squared_error():
    model = BertClassifier(tiny_config(), 1, is_regression=True)
    task = model.task
    assert task.num_labels == 1 and model.classifier.output_weights.shape == (1, 32)
    features = random_examples(6, seed=7, regression=True)
    predictions = model(features, training=False)["logits"].numpy()[:, 0]
    loss, _ = task.compute_loss(model, features, task.loss_normalizers(features),
                                training=False)
    want = np.mean((predictions.astype(np.float64) - features["label_ids"]) ** 2)
    np.testing.assert_allclose(loss.numpy(), want, atol=LAYER_ATOL, rtol=LAYER_ATOL)


def test_pearson_and_spearman_on_a_hand_worked_case():
    # x = 1 2 3 4, y = 1 3 2 4: Spearman = 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 12/60.
    np.testing.assert_allclose(spearman([1, 2, 3, 4], [1, 3, 2, 4]), 0.8, rtol=1e-12)
    # Pearson of the same: deviations (-1.5 -.5 .5 1.5) and (-1.5 .5 -.5 1.5): 4 / 5.
    np.testing.assert_allclose(pearson([1, 2, 3, 4], [1, 3, 2, 4]), 0.8, rtol=1e-12)
    # Ties share their average rank: ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4),
    # deviations (-1.5 0 0 1.5) and (-1.5 -.5 .5 1.5): 4.5 / sqrt(4.5 * 5).
    np.testing.assert_allclose(spearman([10, 20, 20, 30], [1, 2, 3, 4]),
                               4.5 / np.sqrt(22.5), rtol=1e-12)
    # Pearson is not rank-based: (1, 2, 3, 10) against (1, 2, 3, 4).
    x = np.array([1.0, 2, 3, 10]) - 4
    np.testing.assert_allclose(pearson([1, 2, 3, 10], [1, 2, 3, 4]),
                               (x @ [-1.5, -0.5, 0.5, 1.5]) / np.sqrt((x @ x) * 5), rtol=1e-12)


def _average_ranks(values):
    """Rank of each value among `values` (1-based), ties averaged: #smaller + (#equal + 1) / 2."""
    values = np.asarray(values, np.float64)
    return np.array([np.sum(values < v) + (np.sum(values == v) + 1) / 2.0 for v in values])


def test_regression_eval_on_a_finite_input_gives_mse_and_correlations(tmp_path):
    trainer = make_trainer(tmp_path, lambda: BertClassifier(tiny_config(), 1, is_regression=True))  # no checkpoint: the initial weights
    examples = random_examples(NUM_EXAMPLES, seed=8, regression=True)
    assert len(np.unique(examples["label_ids"])) < NUM_EXAMPLES  # ties
    results = trainer.evaluate(finite_input(examples, EVAL_BATCH_SIZE), EVAL_BATCH_SIZE)
    predictions = trainer.model(examples, training=False)["logits"].numpy()[:, 0]
    labels = examples["label_ids"].astype(np.float64)
    squared = (predictions.astype(np.float64) - labels) ** 2
    assert set(results) == {"eval_loss", "loss", "pearson", "spearman", "global_step"}
    np.testing.assert_allclose(results["eval_loss"], squared.mean(), rtol=1e-5)
    # The Estimator's `loss`: the mean of the batches' means (batches of 4, 4, 2).
    batch_means = [squared[0:4].mean(), squared[4:8].mean(), squared[8:10].mean()]
    np.testing.assert_allclose(results["loss"], np.mean(batch_means), rtol=1e-5)
    np.testing.assert_allclose(results["pearson"], np.corrcoef(predictions, labels)[0, 1],
                               atol=1e-5)
    np.testing.assert_allclose(
        results["spearman"],
        np.corrcoef(_average_ranks(predictions), _average_ranks(labels))[0, 1], atol=1e-5)
    assert results["global_step"] == 0


# ----------------------------------------------------------------- predict


def test_predict_returns_every_example_once_in_input_order(tmp_path):
    trainer = make_trainer(tmp_path, lambda: BertClassifier(tiny_config(), NUM_LABELS))
    examples = random_examples(NUM_EXAMPLES, seed=9)
    data = finite_input(examples, EVAL_BATCH_SIZE)
    assert (data.num_steps, data.num_padding_examples) == (3, 2)
    outputs = trainer.predict(data)
    # The one prediction contract (model.predict returns the same keys).
    assert set(outputs) == {"logits", "probabilities", "label_ids"}
    np.testing.assert_array_equal(outputs["label_ids"], examples["label_ids"])
    logits = trainer.model(examples, training=False)["logits"].numpy()
    np.testing.assert_allclose(outputs["logits"], logits, atol=LAYER_ATOL)
    assert outputs["probabilities"].shape == (NUM_EXAMPLES, NUM_LABELS)
    np.testing.assert_allclose(outputs["probabilities"], np.exp(np_log_softmax(logits)),
                               atol=LAYER_ATOL)


# ----------------------------------------------------------------- the original


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    """Trains ours, then runs the original (one process); returns paths and results."""
    from tests.original import run_oracle
    tmp = tmp_path_factory.mktemp("classifier_parity")
    config = tiny_config()
    config_file = write_config(config, str(tmp / "bert_config.json"))
    # The initial checkpoint holds the head too (random, with a non-zero
    # bias), so both sides start from exactly the same variables.
    keras.utils.set_random_seed(1)
    init_model = BertClassifier(config, NUM_LABELS)
    init_model.classifier.output_bias.assign(np.array([0.1, -0.2, 0.05], np.float32))
    init = checkpoint.save_checkpoint(init_model, str(tmp / "init" / "bert_model.ckpt"),
                                      update_state=False)
    batches = random_train_batches(NUM_STEPS, seed=3)
    np.savez(tmp / "batches.npz", **batches)
    examples = random_examples(NUM_EXAMPLES, seed=4)
    # The original's input_fn gave is_real_example = 1 for every real example.
    np.savez(tmp / "examples.npz", is_real_example=np.ones(NUM_EXAMPLES, np.int32), **examples)

    # Ours: 4 steps (host loops of 2), model.ckpt-4.
    ours_dir = str(tmp / "ours")
    trainer = make_trainer(ours_dir, lambda: _no_head_dropout(config, NUM_LABELS))
    history = trainer.train(in_memory_dataset_fn(batches), BATCH_SIZE, NUM_STEPS, LEARNING_RATE,
                            WARMUP, init_checkpoint=init, save_checkpoints_steps=NUM_STEPS,
                            iterations_per_loop=2)
    losses = np.concatenate([h["losses"] for h in history])
    # A fresh trainer restores model.ckpt-4 for eval and predict (as do_eval / do_predict).
    evaluator = make_trainer(ours_dir, lambda: BertClassifier(config, NUM_LABELS))
    ours_eval = evaluator.evaluate(finite_input(examples, EVAL_BATCH_SIZE), EVAL_BATCH_SIZE)
    ours_predict = evaluator.predict(finite_input(examples, EVAL_BATCH_SIZE))

    ours_ckpt = os.path.join(ours_dir, "model.ckpt-%d" % NUM_STEPS)
    common = {"task": "classifier", "config": config_file, "num_labels": NUM_LABELS}
    runs = [
        dict(common, mode="train", ckpt=init, batches=str(tmp / "batches.npz"),
             out=str(tmp / "original.npz"), learning_rate=LEARNING_RATE,
             num_train_steps=NUM_STEPS, num_warmup_steps=WARMUP, save_at=NUM_STEPS,
             save_prefix=str(tmp / "original" / ("model.ckpt-%d" % NUM_STEPS))),
        dict(common, mode="eval", ckpt=ours_ckpt, examples=str(tmp / "examples.npz"),
             batch_size=EVAL_BATCH_SIZE, out=str(tmp / "original_eval.json")),
        dict(common, mode="predict", ckpt=ours_ckpt, examples=str(tmp / "examples.npz"),
             batch_size=EVAL_BATCH_SIZE, out=str(tmp / "original_predict.npz")),
    ]
    with open(tmp / "runs.json", "w") as f:
        json.dump(runs, f)
    run_oracle("finetuning_oracle", tmp / "runs.json")
    with open(tmp / "original_eval.json") as f:
        original_eval = json.load(f)
    return {
        "tmp": tmp, "init": init, "ours_ckpt": ours_ckpt, "losses": losses,
        "original": dict(np.load(tmp / "original.npz")),
        "ours_eval": ours_eval, "original_eval": original_eval,
        "ours_predict": ours_predict,
        "original_predict": dict(np.load(tmp / "original_predict.npz")),
    }


@pytest.mark.original
def test_training_steps_match_the_original(parity):
    original = parity["original"]
    np.testing.assert_allclose(parity["losses"], original["total_loss"], atol=MODEL_ATOL,
                               rtol=MODEL_ATOL)
    np.testing.assert_array_equal(original["global_step"], np.arange(1, NUM_STEPS + 1))
    final = checkpoint.read_checkpoint(parity["ours_ckpt"])
    # Weights, adam_m, adam_v, global_step: the names of the original's graph.
    assert set(final) == {k[len("final:"):] for k in original if k.startswith("final:")}
    for name in sorted(final):
        np.testing.assert_allclose(final[name], original["final:" + name], atol=MODEL_ATOL,
                                   rtol=MODEL_ATOL, err_msg=name)
    assert int(final["global_step"]) == NUM_STEPS
    # ... and of the original's own model.ckpt-4.
    theirs = checkpoint.read_checkpoint(
        str(parity["tmp"] / "original" / ("model.ckpt-%d" % NUM_STEPS)))
    assert {k: v.shape for k, v in final.items()} == {k: v.shape for k, v in theirs.items()}
    # The head and the backbone did move (lr > 0 after the first step).
    init = checkpoint.read_checkpoint(parity["init"])
    for name in ("output_weights", "bert/pooler/dense/kernel"):
        assert np.abs(final[name] - init[name]).max() > 1e-4, name


@pytest.mark.original
def test_the_original_restores_our_checkpoint_and_predicts_our_probabilities(parity):
    ours, theirs = parity["ours_predict"], parity["original_predict"]
    assert theirs["probabilities"].shape == (NUM_EXAMPLES, NUM_LABELS)
    np.testing.assert_allclose(ours["probabilities"], theirs["probabilities"], atol=MODEL_ATOL,
                               rtol=MODEL_ATOL)


@pytest.mark.original
def test_eval_of_a_finite_input_matches_the_originals_metric_fn(parity):
    ours, theirs = parity["ours_eval"], parity["original_eval"]
    assert theirs.pop("num_batches") == 3  # 4, 4, 2: the original did not pad on CPU/GPU
    assert set(ours) == set(theirs) == {"eval_accuracy", "eval_loss", "loss", "global_step"}
    assert ours["global_step"] == theirs["global_step"] == NUM_STEPS
    for key in ("eval_accuracy", "eval_loss", "loss"):
        np.testing.assert_allclose(ours[key], theirs[key], atol=MODEL_ATOL, rtol=MODEL_ATOL,
                                   err_msg=key)
    # The smaller last batch weighs as much as the others in `loss`, not in `eval_loss`.
    assert abs(ours["loss"] - ours["eval_loss"]) > 1e-6
