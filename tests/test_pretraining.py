"""Tests for bert_tf/tasks/pretraining/model.py (original: run_pretraining.py's model_fn, losses, metric_fn).

* NumPy re-statements of the losses (the `+ 1e-5` denominator, the NSP mean)
  and of the split-batch normalization.
* Differential (`original`): tests/original/pretraining_oracle.py runs the
  original `model_fn` maths (BertModel + get_masked_lm_output +
  get_next_sentence_output + create_optimizer) with `sess.run(train_op)` on
  fixed batches, dropout 0, from the same initial checkpoint. Ours
  (`Trainer` + `PretrainingTask`) must give the same per-step losses, the same
  model.ckpt-3 (weights, adam_m, adam_v, global_step) and the same final
  weights; each side resumes the other's model.ckpt-3 and lands on the same
  weights; eval metrics of a checkpoint equal the original's `tf.metrics`.

Helpers here (`tiny_config`, `random_batches`, `in_memory_dataset_fn`,
`write_init_checkpoint`, `write_config`, `write_records`) are shared by tests/test_training.py and
tests/test_distribute.py.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.training import distribute
from bert_tf.tasks.pretraining import model as pretraining
from bert_tf import training
from bert_tf.modeling.config import BertConfig
from bert_tf.data import input_pipeline
from bert_tf.errors import UserError
from tests.tolerances import MODEL_ATOL

SEQ_LENGTH = 16
MAX_PREDICTIONS = 4
BATCH_SIZE = 8


def tiny_config(dropout=0.0, **overrides):
    """2 layers, hidden 32, 4 heads (the original tester's sizes), dropout 0 by default."""
    values = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=37, hidden_act="gelu", hidden_dropout_prob=dropout,
                  attention_probs_dropout_prob=dropout, max_position_embeddings=64,
                  type_vocab_size=2, initializer_range=0.02)
    values.update(overrides)
    return BertConfig.from_dict(values)


def one_layer_config(dropout=0.0, **overrides):
    """`tiny_config` with 1 layer, for the tests of training's mechanics.

    Resuming, preemption, replicas, host loops and accumulation, Keras `fit`
    against the Trainer: the number of layers plays no part in them, and each
    layer adds about 400 ops to every step that is traced (a third of a tiny
    run's time). The model's own tests keep 2 layers.
    """
    return tiny_config(dropout, **dict({"num_hidden_layers": 1}, **overrides))


def random_batches(num_steps, batch_size=BATCH_SIZE, seed=0, vocab_size=99):
    """Pre-training features with a leading [num_steps] axis (the original's keys and dtypes).

    Padding, segment B, zero-padded prediction slots (weight 0) and a varying
    number of real predictions per sequence, so the `+ 1e-5` denominator and
    the weights matter.
    """
    rng = np.random.RandomState(seed)
    shape = (num_steps, batch_size)
    lengths = rng.randint(8, SEQ_LENGTH + 1, size=shape)
    positions_range = np.arange(SEQ_LENGTH)
    input_mask = (positions_range < lengths[..., None]).astype(np.int32)
    input_ids = rng.randint(1, vocab_size, size=shape + (SEQ_LENGTH,)).astype(np.int32) * input_mask
    segment_ids = ((positions_range >= (lengths[..., None] // 2)) * input_mask).astype(np.int32)
    num_real = rng.randint(1, MAX_PREDICTIONS + 1, size=shape)
    slots = np.arange(MAX_PREDICTIONS)
    weights = (slots < num_real[..., None]).astype(np.float32)
    positions = np.zeros(shape + (MAX_PREDICTIONS,), np.int32)
    for index in np.ndindex(*shape):
        chosen = np.sort(rng.choice(lengths[index], num_real[index], replace=False))
        positions[index][:num_real[index]] = chosen
    masked_lm_ids = (rng.randint(1, vocab_size, size=shape + (MAX_PREDICTIONS,))
                     * weights).astype(np.int32)
    return {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": segment_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": masked_lm_ids,
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.randint(0, 2, size=shape + (1,)).astype(np.int32),
    }


def in_memory_dataset_fn(batches, repeat=False):
    """A `dataset_fn(input_context)` that feeds `batches` (global batches) in order.

    Each global batch is cut into per-replica batches in replica order (and
    per input pipeline, the pipeline's consecutive share), so every replica
    layout sees the same global batch per step.
    """
    def dataset_fn(input_context):
        global_batch = batches["input_ids"].shape[1]
        per_replica = input_context.get_per_replica_batch_size(global_batch)
        per_pipeline = global_batch // input_context.num_input_pipelines
        start = input_context.input_pipeline_id * per_pipeline
        sliced = {k: v[:, start:start + per_pipeline] for k, v in batches.items()}
        dataset = tf.data.Dataset.from_tensor_slices(sliced).unbatch().batch(per_replica)
        return dataset.repeat() if repeat else dataset
    return dataset_fn


def write_init_checkpoint(config, prefix, seed=1):
    """A random `BertPretrainer` saved as a Google checkpoint (bert + cls, no optimizer)."""
    import keras
    keras.utils.set_random_seed(seed)
    model = pretraining.BertPretrainer(config)
    checkpoint.save_checkpoint(model, prefix, update_state=False)
    return prefix


def write_config(config, path):
    with open(path, "w") as f:
        f.write(config.to_json_string())
    return path


# ----------------------------------------------------------------- losses


def _np_log_softmax(x):
    x = x.astype(np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def test_masked_lm_loss_is_weighted_mean_with_1e5_denominator():
    rng = np.random.RandomState(0)
    logits = rng.randn(3, 4, 11).astype(np.float32)
    ids = rng.randint(0, 11, (3, 4)).astype(np.int32)
    weights = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]], np.float32)
    loss, per_example, log_probs = pretraining.get_masked_lm_output(logits, ids, weights)
    np_log_probs = _np_log_softmax(logits).reshape(-1, 11)
    np_per_example = -np_log_probs[np.arange(12), ids.reshape(-1)]
    want = (weights.reshape(-1) * np_per_example).sum() / (weights.sum() + 1e-5)
    np.testing.assert_allclose(log_probs.numpy(), np_log_probs, atol=1e-6)
    np.testing.assert_allclose(per_example.numpy(), np_per_example, atol=1e-6)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-6)
    # All weights 0: 0 / (0 + 1e-5) = 0, no NaN.
    zero_loss, _, _ = pretraining.get_masked_lm_output(logits, ids, np.zeros_like(weights))
    assert zero_loss.numpy() == 0.0


def test_next_sentence_loss_is_the_mean():
    rng = np.random.RandomState(1)
    logits = rng.randn(5, 2).astype(np.float32)
    labels = np.array([[0], [1], [1], [0], [1]], np.int32)
    loss, per_example, _ = pretraining.get_next_sentence_output(logits, labels)
    want = -_np_log_softmax(logits)[np.arange(5), labels[:, 0]]
    np.testing.assert_allclose(per_example.numpy(), want, atol=1e-6)
    np.testing.assert_allclose(loss.numpy(), want.mean(), rtol=1e-6)


def test_pretrainer_has_the_original_variable_names():
    config = tiny_config()
    model = pretraining.BertPretrainer(config)
    names = {checkpoint.tf1_name(v): tuple(v.shape) for v in model.weights}
    assert names["cls/predictions/transform/dense/kernel"] == (32, 32)
    assert names["cls/predictions/transform/LayerNorm/gamma"] == (32,)
    assert names["cls/predictions/output_bias"] == (99,)
    assert names["cls/seq_relationship/output_weights"] == (2, 32)
    assert names["cls/seq_relationship/output_bias"] == (2,)
    assert names["bert/embeddings/word_embeddings"] == (99, 32)
    # bert: 3 embeddings + 2 LN + 16 per layer + 2 pooler; cls: 7.
    assert len(names) == 5 + 16 * 2 + 2 + 7
    assert len(model.trainable_variables) == len(names)


def test_task_loss_on_whole_batch_is_the_original_total_loss_and_splits_exactly():
    config = tiny_config()
    model = pretraining.BertPretrainer(config)
    task = model.task
    batch = {k: v[0] for k, v in random_batches(1).items()}
    outputs = model(batch, training=False)
    mlm, _, _ = pretraining.get_masked_lm_output(
        outputs["masked_lm_logits"], batch["masked_lm_ids"], batch["masked_lm_weights"])
    nsp, _, _ = pretraining.get_next_sentence_output(
        outputs["next_sentence_logits"], batch["next_sentence_labels"])
    whole, _ = task.compute_loss(model, batch, task.loss_normalizers(batch), training=False)
    np.testing.assert_allclose(whole.numpy(), (mlm + nsp).numpy(), rtol=1e-6)
    # Halves with the global normalizers sum to the whole batch's loss (what
    # replicas and accumulation micro-batches compute).
    halves = [{k: v[:4] for k, v in batch.items()}, {k: v[4:] for k, v in batch.items()}]
    normalizers = task.loss_normalizers(batch)
    parts = [task.compute_loss(model, h, normalizers, training=False)[0] for h in halves]
    np.testing.assert_allclose(sum(p.numpy() for p in parts), whole.numpy(), rtol=1e-6)


def _without_masked_predictions(batches):
    """`batches` with every prediction slot zero-padded: masked_lm_weights all 0."""
    batches = dict(batches)
    for key in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
        batches[key] = np.zeros_like(batches[key])
    return batches


def test_task_loss_of_a_batch_without_masked_predictions_is_the_next_sentence_loss():
    """All-zero masked_lm_weights in the whole global batch: 0 / (0 + 1e-5), not 0 / 0."""
    config = tiny_config()
    model = pretraining.BertPretrainer(config)
    task = model.task
    batch = {k: v[0] for k, v in _without_masked_predictions(random_batches(1)).items()}
    outputs = model(batch, training=False)
    nsp, _, _ = pretraining.get_next_sentence_output(
        outputs["next_sentence_logits"], batch["next_sentence_labels"])
    normalizers = task.loss_normalizers(batch)
    whole, sums = task.compute_loss(model, batch, normalizers, training=False)
    assert np.isfinite(whole.numpy()), (
        "PretrainingTask.compute_loss is %s on a batch whose masked_lm_weights are all zero: "
        "the masked-LM denominator needs the original's + 1e-5" % whole.numpy())
    assert float(sums["masked_lm_weight"]) == 0.0
    np.testing.assert_allclose(whole.numpy(), nsp.numpy(), rtol=1e-6)
    # Split as replicas or micro-batches split it: each share finite, same sum.
    halves = [{k: v[:4] for k, v in batch.items()}, {k: v[4:] for k, v in batch.items()}]
    parts = [task.compute_loss(model, h, normalizers, training=False)[0].numpy() for h in halves]
    assert np.all(np.isfinite(parts)), parts
    np.testing.assert_allclose(sum(parts), whole.numpy(), rtol=1e-6)


def write_records(path, batches):
    """Writes `batches` ([steps, batch, ...]) as pre-training tf.train.Examples (spec §4.6)."""
    with tf.io.TFRecordWriter(path) as writer:
        flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in batches.items()}
        for i in range(flat["input_ids"].shape[0]):
            feature = {}
            for key, value in flat.items():
                value = value[i].reshape(-1)
                if key == "masked_lm_weights":
                    feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=value))
                else:
                    feature[key] = tf.train.Feature(
                        int64_list=tf.train.Int64List(value=value.astype(np.int64)))
            writer.write(tf.train.Example(
                features=tf.train.Features(feature=feature)).SerializeToString())
    return path


def test_check_pretraining_records_names_the_problem(tmp_path):
    config = tiny_config()
    good = write_records(str(tmp_path / "good.tfrecord"), random_batches(1))
    input_pipeline.check_pretraining_records([good], config, SEQ_LENGTH, MAX_PREDICTIONS)
    big = random_batches(1)
    big["input_ids"][0, 0, 0] = 500
    bad = write_records(str(tmp_path / "vocab.tfrecord"), big)
    with pytest.raises(UserError, match=r"vocab\.tfrecord: feature input_ids holds 500, "
                                        r"outside \[0, vocab_size=99\)"):
        input_pipeline.check_pretraining_records([bad], config, SEQ_LENGTH, MAX_PREDICTIONS)
    with pytest.raises(UserError, match="max_seq_length=128 is longer than "
                                        "max_position_embeddings=64"):
        input_pipeline.check_pretraining_records([good], config, 128, MAX_PREDICTIONS)


# ----------------------------------------------------------------- the original


NUM_STEPS = 5         # the whole run (num_train_steps)
SAVE_AT = 3           # model.ckpt-3 on both sides
WARMUP = 2            # lr 0 on the first update
LEARNING_RATE = 1e-3


def _train(output_dir, config, batches, init_checkpoint=None, iterations_per_loop=2):
    trainer = training.Trainer(distribute.get_strategy("off"),
                               lambda: pretraining.BertPretrainer(config),
                               output_dir)
    history = trainer.train(in_memory_dataset_fn(batches), BATCH_SIZE, NUM_STEPS, LEARNING_RATE,
                            WARMUP, init_checkpoint=init_checkpoint,
                            save_checkpoints_steps=SAVE_AT,
                            iterations_per_loop=iterations_per_loop)
    return trainer, np.concatenate([h["losses"] for h in history])


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    """Runs the original and ours; returns a dict of paths and results."""
    from tests.original import run_oracle
    tmp = tmp_path_factory.mktemp("pretraining_parity")
    config = tiny_config()
    config_file = write_config(config, str(tmp / "bert_config.json"))
    init = write_init_checkpoint(config, str(tmp / "init" / "bert_model.ckpt"))
    batches = random_batches(NUM_STEPS, seed=3)
    np.savez(tmp / "batches.npz", **batches)
    tail = {k: v[SAVE_AT:] for k, v in batches.items()}
    np.savez(tmp / "tail.npz", **tail)
    eval_batches = random_batches(3, seed=4)
    np.savez(tmp / "eval.npz", **eval_batches)

    # The original, from the initial checkpoint: 5 steps, model.ckpt-3 on the way.
    run_oracle("pretraining_oracle", "train", config_file, init, tmp / "batches.npz",
               tmp / "original.npz", LEARNING_RATE, NUM_STEPS, WARMUP, "init", SAVE_AT,
               tmp / "original" / "model.ckpt-3")
    # Ours, the same run (two host loops of 2 steps, then 1).
    ours_dir = str(tmp / "ours")
    trainer, losses = _train(ours_dir, config, batches, init_checkpoint=init)
    # The original resumes OUR model.ckpt-3 and runs steps 3 and 4.
    run_oracle("pretraining_oracle", "train", config_file,
               os.path.join(ours_dir, "model.ckpt-3"), tmp / "tail.npz",
               tmp / "original_resumed.npz", LEARNING_RATE, NUM_STEPS, WARMUP, "resume")
    # Ours resumes the ORIGINAL's model.ckpt-3 (copied into a fresh output_dir).
    resume_dir = tmp / "ours_resumed"
    resume_dir.mkdir()
    for name in os.listdir(tmp / "original"):
        if name.startswith("model.ckpt-3."):
            shutil.copy(tmp / "original" / name, resume_dir / name)
    tf.compat.v1.train.update_checkpoint_state(str(resume_dir), "model.ckpt-3")
    _, resumed_losses = _train(str(resume_dir), config, tail)
    # Eval of our final checkpoint, both sides.
    run_oracle("pretraining_oracle", "eval", config_file, os.path.join(ours_dir, "model.ckpt-5"),
               tmp / "eval.npz", tmp / "original_eval.json")
    evaluator = training.Trainer(distribute.get_strategy("off"),
                                 lambda: pretraining.BertPretrainer(config),
                                 ours_dir)
    ours_eval = evaluator.evaluate(in_memory_dataset_fn(eval_batches), BATCH_SIZE, 3)
    with open(tmp / "original_eval.json") as f:
        original_eval = json.load(f)
    return {
        "tmp": tmp, "ours_dir": ours_dir, "resume_dir": str(resume_dir),
        "original": dict(np.load(tmp / "original.npz")),
        "original_resumed": dict(np.load(tmp / "original_resumed.npz")),
        "losses": losses, "resumed_losses": resumed_losses,
        "ours_eval": ours_eval, "original_eval": original_eval,
    }


def _assert_same_variables(ours, theirs, prefix="", names=None):
    names = sorted(ours) if names is None else names
    for name in names:
        np.testing.assert_allclose(ours[name], theirs[prefix + name], atol=MODEL_ATOL,
                                   rtol=MODEL_ATOL, err_msg=name)


@pytest.mark.original
def test_training_steps_match_the_original(parity):
    original = parity["original"]
    np.testing.assert_allclose(parity["losses"], original["total_loss"], atol=MODEL_ATOL,
                               rtol=MODEL_ATOL)
    np.testing.assert_array_equal(original["global_step"], np.arange(1, NUM_STEPS + 1))
    final = checkpoint.read_checkpoint(os.path.join(parity["ours_dir"], "model.ckpt-5"))
    original_final = {k[len("final:"):] for k in original if k.startswith("final:")}
    assert set(final) == original_final  # weights, adam_m, adam_v, global_step
    _assert_same_variables(final, original, prefix="final:")
    assert int(final["global_step"]) == NUM_STEPS
    # The weights did move (lr > 0 after the first step).
    init = checkpoint.read_checkpoint(str(parity["tmp"] / "init" / "bert_model.ckpt"))
    assert np.abs(final["bert/pooler/dense/kernel"]
                  - init["bert/pooler/dense/kernel"]).max() > 1e-3


@pytest.mark.original
def test_checkpoint_at_step_3_equals_the_originals(parity):
    ours = checkpoint.read_checkpoint(os.path.join(parity["ours_dir"], "model.ckpt-3"))
    theirs = checkpoint.read_checkpoint(str(parity["tmp"] / "original" / "model.ckpt-3"))
    assert set(ours) == set(theirs)
    assert ours["global_step"].dtype == theirs["global_step"].dtype == np.int64
    assert int(ours["global_step"]) == int(theirs["global_step"]) == SAVE_AT
    _assert_same_variables(ours, theirs)


@pytest.mark.original
def test_ours_resumes_the_originals_checkpoint_and_continues_the_same_run(parity):
    original = parity["original"]
    np.testing.assert_allclose(parity["resumed_losses"], original["total_loss"][SAVE_AT:],
                               atol=MODEL_ATOL, rtol=MODEL_ATOL)
    final = checkpoint.read_checkpoint(os.path.join(parity["resume_dir"], "model.ckpt-5"))
    _assert_same_variables(final, original, prefix="final:")


@pytest.mark.original
def test_the_original_resumes_our_checkpoint_and_continues_the_same_run(parity):
    resumed = parity["original_resumed"]
    np.testing.assert_array_equal(resumed["global_step"], [SAVE_AT + 1, SAVE_AT + 2])
    np.testing.assert_allclose(resumed["total_loss"], parity["original"]["total_loss"][SAVE_AT:],
                               atol=MODEL_ATOL, rtol=MODEL_ATOL)
    final = checkpoint.read_checkpoint(os.path.join(parity["ours_dir"], "model.ckpt-5"))
    _assert_same_variables(final, resumed, prefix="final:")


@pytest.mark.original
def test_eval_metrics_match_the_originals_metric_fn(parity):
    ours, theirs = parity["ours_eval"], parity["original_eval"]
    assert set(ours) == set(theirs) == {"masked_lm_accuracy", "masked_lm_loss",
                                        "next_sentence_accuracy", "next_sentence_loss",
                                        "loss", "global_step"}
    assert ours["global_step"] == theirs["global_step"] == NUM_STEPS
    for key in sorted(theirs):
        np.testing.assert_allclose(ours[key], theirs[key], atol=MODEL_ATOL, rtol=MODEL_ATOL,
                                   err_msg=key)


@pytest.mark.original
def test_a_global_batch_without_masked_predictions_trains_as_the_original(tmp_path):
    """Step 1's global batch has no masked prediction at all; step 2 is ordinary.

    The original's loss is finite there (its masked-LM loss is 0 / (0 + 1e-5));
    the task's `compute_loss` and the Trainer must give its losses and weights.
    """
    from tests.original import run_oracle
    config = tiny_config()
    config_file = write_config(config, str(tmp_path / "bert_config.json"))
    init = write_init_checkpoint(config, str(tmp_path / "init" / "bert_model.ckpt"))
    batches = random_batches(2, seed=8)
    empty = _without_masked_predictions(batches)
    for key in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
        batches[key][0] = empty[key][0]
    np.savez(tmp_path / "batches.npz", **batches)
    # No warm-up: the first update has a non-zero learning rate.
    run_oracle("pretraining_oracle", "train", config_file, init, tmp_path / "batches.npz",
               tmp_path / "original.npz", LEARNING_RATE, 2, 0, "init")
    original = dict(np.load(tmp_path / "original.npz"))
    assert original["masked_lm_loss"][0] == 0.0 and np.isfinite(original["total_loss"]).all()

    model = pretraining.BertPretrainer(config)
    task = model.task
    checkpoint.load_checkpoint(model, init, strict=True)
    first = {k: v[0] for k, v in batches.items()}
    loss, _ = task.compute_loss(model, first, task.loss_normalizers(first), training=False)
    np.testing.assert_allclose(
        loss.numpy(), original["total_loss"][0], atol=MODEL_ATOL, rtol=MODEL_ATOL,
        err_msg="PretrainingTask.compute_loss on a global batch whose masked_lm_weights are "
                "all zero (the original's masked-LM denominator is sum(weights) + 1e-5)")

    output_dir = str(tmp_path / "ours")
    trainer = training.Trainer(distribute.get_strategy("off"),
                               lambda: pretraining.BertPretrainer(config), output_dir)
    history = trainer.train(in_memory_dataset_fn(batches), BATCH_SIZE, 2, LEARNING_RATE, 0,
                            init_checkpoint=init, iterations_per_loop=1)
    np.testing.assert_allclose(
        np.concatenate([h["losses"] for h in history]), original["total_loss"],
        atol=MODEL_ATOL, rtol=MODEL_ATOL,
        err_msg="Trainer losses on a global batch whose masked_lm_weights are all zero")
    final = checkpoint.read_checkpoint(os.path.join(output_dir, "model.ckpt-2"))
    _assert_same_variables(final, original, prefix="final:")
