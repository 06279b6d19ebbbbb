"""Keras-native training and inference: bert_tf/models.py, training/callbacks.py, the preprocessor.

* `fit` is the trainer's step: from the same weights on the same batches
  with the same schedule (dropout 0), `fit` gives `Trainer.train`'s weights,
  adam slots and global_step (classifier with Keras's `(x, y)`, regression,
  pre-training from the record pipeline, SQuAD); under MirroredStrategy on 2
  logical CPUs (a child process) `fit` and `evaluate` give the one-device
  results on the same global batches.
* Differential (`original`): `fit` with `CheckpointCallback` of a
  `BertClassifier` makes the original's 4 training steps
  (tests/original/finetuning_oracle.py: weights, adam slots, global_step),
  the original restores the fit-written model.ckpt-4 and predicts our
  `predict` probabilities, and `evaluate` gives the original `metric_fn`'s
  metrics and the Estimator's `loss` on the same batches.
* `CheckpointCallback`: model.ckpt-N every N steps, the newest kept, the
  state file; a new model resumes and ends where an uninterrupted `fit` ends.
* `.keras` files: every model and the preprocessor load back with the same
  outputs and config; a compiled model keeps its optimizer (schedule, slots,
  step) and trains on as the one that was saved.
* `BertPreprocessor`: raw text gives `FullTokenizer` + `build_pair_features`
  exactly; a classifier predicts and fits on raw text as on those features.
* One-line `UserError`s for the user's mistakes.
"""

if __name__ == "__main__":
    # The child process: two logical CPU devices, before TensorFlow starts.
    from bert_tf.training import distribute as _distribute
    _distribute.set_logical_cpu_devices(2)
    from tests.conftest import turn_off_grappler_rewrites
    turn_off_grappler_rewrites()

import json
import logging
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.training import distribute
from bert_tf.training import optimization
from bert_tf import tokenization
from bert_tf import training
from bert_tf.training.callbacks import CheckpointCallback
from bert_tf.data import input_pipeline
from bert_tf.tokenization.pair_features import build_pair_features
from bert_tf.errors import UserError
from bert_tf.models import BertClassifier
from bert_tf.models import BertModel
from bert_tf.models import BertPreprocessor
from bert_tf.models import BertPretrainer
from bert_tf.models import BertSquad
from tests.test_classifier import NUM_LABELS
from tests.test_classifier import random_examples
from tests.test_classifier import random_train_batches
from tests.test_pretraining import BATCH_SIZE
from tests.test_pretraining import MAX_PREDICTIONS
from tests.test_pretraining import SEQ_LENGTH
from tests.test_pretraining import in_memory_dataset_fn
from tests.test_pretraining import random_batches
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_records
from tests.tolerances import MODEL_ATOL
from tests.tolerances import REPLICA_ATOL

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEARNING_RATE = 1e-3
NUM_STEPS = 4
WARMUP = 1            # lr 0 on the first update, as the original's warmup from 0
INPUT_KEYS = ("input_ids", "input_mask", "segment_ids")


# ----------------------------------------------------------------- helpers


def make_model(kind, config):
    """A model of `kind` with every dropout 0 (the config's are; the classifier head's too)."""
    if kind == "classifier":
        model = BertClassifier(config, NUM_LABELS)
    elif kind == "regression":
        model = BertClassifier(config, 1, is_regression=True)
    elif kind == "pretrainer":
        model = BertPretrainer(config)
    else:
        model = BertSquad(config)
    if isinstance(model, BertClassifier):
        # The original's head dropout (0.1, hard-coded) off, as in tests/test_classifier.py.
        model.classifier.dropout.rate = 0.0
    return model


def train_batches(kind, num_steps, seed=3):
    """[num_steps, BATCH_SIZE, ...] feature dicts (labels included) for `kind`."""
    if kind in ("classifier", "regression"):
        if kind == "classifier":
            return random_train_batches(num_steps, seed)
        flat = random_examples(num_steps * BATCH_SIZE, seed, regression=True)
        return {k: v.reshape((num_steps, BATCH_SIZE) + v.shape[1:]) for k, v in flat.items()}
    batches = random_batches(num_steps, seed=seed)
    if kind == "pretrainer":
        return batches
    rng = np.random.RandomState(seed)
    squad = {k: batches[k] for k in INPUT_KEYS}
    lengths = batches["input_mask"].sum(-1)
    squad["start_positions"] = (rng.rand(*lengths.shape) * lengths).astype(np.int32)
    squad["end_positions"] = np.minimum(squad["start_positions"] + 2, lengths - 1).astype(np.int32)
    return squad


def keras_data(kind, batches, directory):
    """The batches as Keras data: (x, y) for the classifiers; for pre-training,
    the project's record pipeline (TFRecords read in order, repeated); feature
    dicts for SQuAD."""
    if kind in ("classifier", "regression"):
        x = {k: batches[k] for k in INPUT_KEYS}
        return tf.data.Dataset.from_tensor_slices((x, batches["label_ids"]))
    if kind == "pretrainer":
        records = write_records(str(directory / "train.tf_record"), batches)
        return input_pipeline.create_pretraining_dataset(
            [records], SEQ_LENGTH, MAX_PREDICTIONS, BATCH_SIZE, is_training=False)
    return tf.data.Dataset.from_tensor_slices(batches)


def init_checkpoint(kind, config, prefix, seed=1):
    """Random weights of `kind`'s model (a non-zero classifier bias) as a Google checkpoint."""
    keras.utils.set_random_seed(seed)
    model = make_model(kind, config)
    if kind == "classifier":
        model.classifier.output_bias.assign(np.array([0.1, -0.2, 0.05], np.float32))
    return checkpoint.save_checkpoint(model, str(prefix), update_state=False)


def compiled_model(kind, config, init, num_train_steps=NUM_STEPS, run_eagerly=False):
    """`kind`'s model from `init`, compiled with the original's optimizer.

    `run_eagerly=True` where a test is about the host side (callbacks,
    files): the same steps without tracing them (the compiled steps have
    their own tests).
    """
    model = make_model(kind, config)
    checkpoint.load_checkpoint(model, init, strict=True)
    model.compile(optimizer=optimization.create_optimizer(LEARNING_RATE, num_train_steps, WARMUP),
                  run_eagerly=run_eagerly)
    return model


def state(model, prefix):
    """Weights, adam slots and global_step of a model, as its Google checkpoint holds them."""
    step = int(model.optimizer.iterations.numpy())
    checkpoint.save_checkpoint(model, str(prefix), optimizer=model.optimizer, global_step=step,
                               update_state=False)
    return checkpoint.read_checkpoint(str(prefix))


def assert_same_state(ours, theirs, atol, prefix=""):
    assert set(ours) == set(k[len(prefix):] for k in theirs if k.startswith(prefix))
    for name in sorted(ours):
        np.testing.assert_allclose(ours[name], theirs[prefix + name], atol=atol, rtol=atol,
                                   err_msg=name)


# ----------------------------------------------------------------- fit == Trainer


@pytest.mark.parametrize("kind", ["classifier", "pretrainer",
                                  pytest.param("regression", marks=pytest.mark.slow),
                                  pytest.param("squad", marks=pytest.mark.slow)])
@pytest.mark.slow
def test_fit_makes_the_trainers_steps(tmp_path, kind):
    config = one_layer_config()
    init = init_checkpoint(kind, config, tmp_path / "init" / "bert_model.ckpt")
    num_steps = 2
    batches = train_batches(kind, num_steps)
    trainer = training.Trainer(distribute.get_strategy("off"), lambda: make_model(kind, config),
                               str(tmp_path / "trainer"))
    # One host loop of both steps (not a timed first step alone), so its record
    # holds the two batches' loss and metrics, as Keras' epoch log does.
    trainer._time_bound = lambda chunk, seconds_per_step: chunk
    history = trainer.train(in_memory_dataset_fn(batches), BATCH_SIZE, num_steps, LEARNING_RATE,
                            WARMUP, init_checkpoint=init, save_checkpoints_steps=num_steps)
    theirs = checkpoint.read_checkpoint(str(tmp_path / "trainer" / "model.ckpt-2"))

    model = compiled_model(kind, config, init, num_train_steps=num_steps)
    logs = model.fit(keras_data(kind, batches, tmp_path), epochs=1, steps_per_epoch=num_steps,
                     verbose=0).history
    ours = state(model, tmp_path / "fit" / "model.ckpt-2")
    assert int(ours["global_step"]) == num_steps
    assert_same_state(ours, theirs, REPLICA_ATOL)
    # The loss log is the mean of the two global batches' losses.
    np.testing.assert_allclose(logs["loss"][0], np.mean(history[0]["losses"]), atol=REPLICA_ATOL)
    train_metrics = {"classifier": ["accuracy"], "regression": ["mean_squared_error"],
                     "pretrainer": ["masked_lm_accuracy", "next_sentence_accuracy"],
                     "squad": ["start_accuracy", "end_accuracy"]}[kind]
    assert sorted(logs) == sorted(["loss"] + train_metrics)
    for key in train_metrics:
        np.testing.assert_allclose(logs[key][0], history[0][key], atol=REPLICA_ATOL, err_msg=key)


@pytest.mark.slow
def test_pretrainer_evaluate_and_predict_are_the_trainers(tmp_path):
    config = one_layer_config()
    init = init_checkpoint("pretrainer", config, tmp_path / "init" / "bert_model.ckpt")
    batches = random_batches(3, seed=5)
    trainer = training.Trainer(distribute.get_strategy("off"), lambda: BertPretrainer(config),
                               str(tmp_path / "trainer"))
    theirs = trainer.evaluate(in_memory_dataset_fn(batches), BATCH_SIZE, max_eval_steps=3,
                              init_checkpoint=init)
    model = compiled_model("pretrainer", config, init)
    ours = model.evaluate(tf.data.Dataset.from_tensor_slices(batches), verbose=0,
                          return_dict=True)
    assert set(ours) == set(theirs) - {"global_step"} == {
        "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
        "next_sentence_loss", "loss"}
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], atol=REPLICA_ATOL, err_msg=key)
    outputs = model.predict(tf.data.Dataset.from_tensor_slices(batches), verbose=0)
    direct = model({k: v[0] for k, v in batches.items()}, training=False)
    assert set(outputs) == {"masked_lm_logits", "next_sentence_logits"}
    assert outputs["masked_lm_logits"].shape == (3 * BATCH_SIZE, 4, config.vocab_size)
    for key in outputs:
        np.testing.assert_allclose(outputs[key][:BATCH_SIZE], direct[key], atol=REPLICA_ATOL)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "regression", "squad", "pretrainer"])
def test_model_predict_is_the_trainers_predict(tmp_path, kind):
    """One prediction contract: Keras `predict` and `Trainer.predict` return the same outputs."""
    from tests.test_classifier import finite_input
    from tests.test_squad import random_examples as squad_examples
    config = one_layer_config()
    if kind == "squad":
        examples = squad_examples(10, seed=5)
    elif kind == "pretrainer":
        examples = {k: v.reshape((10,) + v.shape[2:])
                    for k, v in random_batches(1, batch_size=10, seed=5).items()}
    else:
        examples = random_examples(10, seed=5, regression=kind == "regression")
    trainer = training.Trainer(distribute.get_strategy("off"), lambda: make_model(kind, config),
                               str(tmp_path))
    theirs = trainer.predict(finite_input(examples, 4))
    ours = trainer.model.predict(tf.data.Dataset.from_tensor_slices(examples).batch(4),
                                 verbose=0)
    assert set(ours) == set(theirs)
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], atol=REPLICA_ATOL, err_msg=key)
    if kind in ("classifier", "regression"):
        np.testing.assert_array_equal(ours["label_ids"], examples["label_ids"])
    if kind == "squad":
        np.testing.assert_array_equal(ours["unique_ids"], examples["unique_ids"])


# ----------------------------------------------------------------- 2 replicas


def _mirrored_child(directory):
    """fit 2 steps + evaluate under MirroredStrategy on 2 logical CPUs; writes results.json."""
    config = one_layer_config()
    strategy = distribute.get_strategy("mirrored")
    assert strategy.num_replicas_in_sync == 2
    batches = random_batches(2, seed=7)
    with strategy.scope():
        model = compiled_model("pretrainer", config, os.path.join(directory, "init", "bert_model.ckpt"),
                               num_train_steps=2)
    logs = model.fit(tf.data.Dataset.from_tensor_slices(batches), epochs=1, verbose=0).history
    results = model.evaluate(tf.data.Dataset.from_tensor_slices(batches), verbose=0,
                             return_dict=True)
    state(model, os.path.join(directory, "mirrored", "model.ckpt-2"))
    with open(os.path.join(directory, "results.json"), "w") as f:
        json.dump({"fit": {k: v[0] for k, v in logs.items()}, "evaluate": results,
                   "replicas": strategy.num_replicas_in_sync}, f)


@pytest.mark.slow
def test_fit_and_evaluate_on_2_replicas_are_the_one_device_results(tmp_path):
    config = one_layer_config()
    init = init_checkpoint("pretrainer", config, tmp_path / "init" / "bert_model.ckpt")
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "mirrored",
                              str(tmp_path)], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    # One device, meanwhile, on the same global batches.
    model = compiled_model("pretrainer", config, init, num_train_steps=2)
    batches = random_batches(2, seed=7)
    logs = model.fit(tf.data.Dataset.from_tensor_slices(batches), epochs=1, verbose=0).history
    results = model.evaluate(tf.data.Dataset.from_tensor_slices(batches), verbose=0,
                             return_dict=True)
    ours = state(model, tmp_path / "one" / "model.ckpt-2")
    _, stderr = child.communicate(timeout=600)
    assert child.returncode == 0, stderr[-4000:]
    with open(tmp_path / "results.json") as f:
        mirrored = json.load(f)
    assert mirrored["replicas"] == 2
    assert_same_state(checkpoint.read_checkpoint(str(tmp_path / "mirrored" / "model.ckpt-2")),
                      ours, REPLICA_ATOL)
    for key, value in logs.items():
        np.testing.assert_allclose(mirrored["fit"][key], value[0], atol=REPLICA_ATOL, err_msg=key)
    assert set(mirrored["evaluate"]) == set(results)
    for key, value in results.items():
        np.testing.assert_allclose(mirrored["evaluate"][key], value, atol=REPLICA_ATOL,
                                   err_msg=key)


# ----------------------------------------------------------------- the original


@pytest.mark.original
def test_classifier_fit_is_the_originals_training_and_the_original_restores_it(tmp_path):
    from tests.original import run_oracle
    config = one_layer_config()
    config_file = write_config(config, str(tmp_path / "bert_config.json"))
    init = init_checkpoint("classifier", config, tmp_path / "init" / "bert_model.ckpt")
    batches = random_train_batches(NUM_STEPS, seed=3)
    np.savez(tmp_path / "batches.npz", **batches)
    examples = random_examples(10, seed=4)
    np.savez(tmp_path / "examples.npz", is_real_example=np.ones(10, np.int32), **examples)

    output_dir = tmp_path / "fit"
    model = compiled_model("classifier", config, init)
    callback = CheckpointCallback(str(output_dir), save_checkpoints_steps=2)
    model.fit(tf.data.Dataset.from_tensor_slices(batches), epochs=1, verbose=0,
              callbacks=[callback])
    ours_ckpt = str(output_dir / "model.ckpt-4")
    assert callback.last_saved == ours_ckpt
    assert tf.train.latest_checkpoint(str(output_dir)) == ours_ckpt
    eval_data = tf.data.Dataset.from_tensor_slices(
        dict(examples, is_real_example=np.ones(10, np.int32))).batch(4)  # 4, 4, 2
    ours_eval = model.evaluate(eval_data, verbose=0, return_dict=True)
    ours_predict = model.predict(eval_data, verbose=0)

    common = {"task": "classifier", "config": config_file, "num_labels": NUM_LABELS}
    runs = [
        dict(common, mode="train", ckpt=init, batches=str(tmp_path / "batches.npz"),
             out=str(tmp_path / "original.npz"), learning_rate=LEARNING_RATE,
             num_train_steps=NUM_STEPS, num_warmup_steps=WARMUP),
        dict(common, mode="eval", ckpt=ours_ckpt, examples=str(tmp_path / "examples.npz"),
             batch_size=4, out=str(tmp_path / "original_eval.json")),
        dict(common, mode="predict", ckpt=ours_ckpt, examples=str(tmp_path / "examples.npz"),
             batch_size=4, out=str(tmp_path / "original_predict.npz")),
    ]
    with open(tmp_path / "runs.json", "w") as f:
        json.dump(runs, f)
    run_oracle("finetuning_oracle", tmp_path / "runs.json")

    # The fit-written model.ckpt-4 holds the original's variables after its 4 steps.
    original = dict(np.load(tmp_path / "original.npz"))
    final = checkpoint.read_checkpoint(ours_ckpt)
    assert int(final["global_step"]) == NUM_STEPS
    assert_same_state(final, original, MODEL_ATOL, prefix="final:")
    # The original restores it and predicts what we predict.
    theirs = dict(np.load(tmp_path / "original_predict.npz"))
    for key in ("probabilities", "logits"):
        np.testing.assert_allclose(ours_predict[key], theirs[key], atol=MODEL_ATOL,
                                   rtol=MODEL_ATOL, err_msg=key)
    # evaluate: the original metric_fn's metrics, the Estimator's loss (batches 4, 4, 2).
    with open(tmp_path / "original_eval.json") as f:
        original_eval = json.load(f)
    assert original_eval["num_batches"] == 3
    assert set(ours_eval) == {"eval_accuracy", "eval_loss", "loss"}
    for key in ours_eval:
        np.testing.assert_allclose(ours_eval[key], original_eval[key], atol=MODEL_ATOL,
                                   rtol=MODEL_ATOL, err_msg=key)
    # Padding examples (is_real_example 0) weigh nothing in eval_accuracy / eval_loss.
    padded = {k: np.concatenate([v, v[:2]]) for k, v in examples.items()}
    padded["is_real_example"] = np.array([1] * 10 + [0] * 2, np.int32)
    padded_eval = model.evaluate(tf.data.Dataset.from_tensor_slices(padded).batch(4), verbose=0,
                                 return_dict=True)
    for key in ("eval_accuracy", "eval_loss"):
        np.testing.assert_allclose(padded_eval[key], ours_eval[key], atol=REPLICA_ATOL,
                                   err_msg=key)


# ----------------------------------------------------------------- CheckpointCallback


@pytest.mark.slow
def test_checkpoint_callback_keeps_the_newest_and_a_new_model_resumes_the_same_run(tmp_path):
    config = one_layer_config()
    init = init_checkpoint("pretrainer", config, tmp_path / "init" / "bert_model.ckpt")
    batches = random_batches(NUM_STEPS, seed=9)

    def data(start, stop):
        return tf.data.Dataset.from_tensor_slices({k: v[start:stop] for k, v in batches.items()})

    uninterrupted = compiled_model("pretrainer", config, init, run_eagerly=True)
    uninterrupted.fit(data(0, NUM_STEPS), epochs=1, verbose=0)
    want = state(uninterrupted, tmp_path / "uninterrupted" / "model.ckpt-4")

    output_dir = tmp_path / "output"
    first = compiled_model("pretrainer", config, init, run_eagerly=True)
    first.fit(data(0, 2), epochs=1, verbose=0,
              callbacks=[CheckpointCallback(str(output_dir), save_checkpoints_steps=1,
                                            keep_checkpoint_max=2)])
    assert checkpoint.read_checkpoint(str(output_dir / "model.ckpt-2"))["global_step"] == 2

    # A new process's model: other random weights, a fresh optimizer.
    keras.utils.set_random_seed(123)
    second = BertPretrainer(config)
    second.compile(optimizer=optimization.create_optimizer(LEARNING_RATE, NUM_STEPS, WARMUP),
                   run_eagerly=True)
    callback = CheckpointCallback(str(output_dir), save_checkpoints_steps=1,
                                  keep_checkpoint_max=2)
    second.fit(data(2, NUM_STEPS), epochs=1, verbose=0, callbacks=[callback])
    assert callback.restored_step == 2
    assert int(second.optimizer.iterations.numpy()) == NUM_STEPS
    assert_same_state(state(second, tmp_path / "resumed" / "model.ckpt-4"), want, REPLICA_ATOL)
    # Saved at steps 1..4; the newest 2 kept, listed in the state file.
    names = sorted(p for p in os.listdir(output_dir) if p.endswith(".index"))
    assert names == ["model.ckpt-3.index", "model.ckpt-4.index"]
    state_file = tf.train.get_checkpoint_state(str(output_dir))
    assert [os.path.basename(p) for p in state_file.all_model_checkpoint_paths] == [
        "model.ckpt-3", "model.ckpt-4"]
    assert_same_state(checkpoint.read_checkpoint(str(output_dir / "model.ckpt-4")), want,
                      REPLICA_ATOL)


@pytest.mark.slow
def test_a_second_fit_into_an_output_dir_says_it_resumed_and_refuses_an_ended_schedule(
        tmp_path, caplog):
    """Running a script twice: the resume is a warning; a run with no step left is an error.

    (Before, the second run silently replaced the model's weights with the
    checkpoint's and trained every step at learning rate 0.)
    """
    config = one_layer_config()
    init = init_checkpoint("classifier", config, tmp_path / "init" / "bert_model.ckpt")
    batches = random_train_batches(4, seed=3)
    output_dir = str(tmp_path / "output")

    def fit(num_train_steps, steps):
        model = compiled_model("classifier", config, init, num_train_steps=num_train_steps,
                               run_eagerly=True)
        data = tf.data.Dataset.from_tensor_slices(batches).take(steps)
        callback = CheckpointCallback(output_dir, save_checkpoints_steps=100)
        model.fit(data, epochs=1, verbose=0, callbacks=[callback])
        return model, callback

    with caplog.at_level(logging.WARNING):
        fit(num_train_steps=2, steps=2)
    assert "resumed" not in caplog.text

    # The same script again: the schedule (2 steps) has ended.
    with pytest.raises(UserError, match=r"nothing left to train: .*model\.ckpt-2 is at global "
                                        r"step 2, the end of the learning-rate schedule "
                                        r"\(num_train_steps=2\)"):
        fit(num_train_steps=2, steps=2)

    # A longer schedule trains on from step 2, and says so; steps past its end are a warning.
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        model, callback = fit(num_train_steps=5, steps=4)
    assert callback.restored_step == 2
    assert int(model.optimizer.iterations.numpy()) == 6
    assert re.search(r"resumed from .*model\.ckpt-2 at global step 2", caplog.text)
    assert ("fit asks for 4 steps from global step 2, but the learning-rate schedule ends at "
            "step 5 (num_train_steps): the last 1 train at learning rate 0") in caplog.text


def test_checkpoint_callback_errors_are_one_line(tmp_path):
    with pytest.raises(UserError, match="save_checkpoints_steps must be a positive integer"):
        CheckpointCallback(str(tmp_path), save_checkpoints_steps=0)
    model = BertClassifier(one_layer_config(), NUM_LABELS)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    batches = random_train_batches(1, seed=0)
    with pytest.raises(UserError, match="CheckpointCallback needs an optimizer from "
                                        "bert_tf.training.optimization"):
        model.fit(tf.data.Dataset.from_tensor_slices(batches), verbose=0,
                  callbacks=[CheckpointCallback(str(tmp_path))])


# ----------------------------------------------------------------- .keras files


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "is", "this", "jack", "##son", "##ville",
         "?", "no", "it", "not", ".", "the", "dog", "hairy", ",", "un", "##want", "##ed", "runn",
         "##ing", "!", "cafe", "中", "##s", "a"]


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(token + "\n" for token in VOCAB), encoding="utf-8")
    return str(path)


def _same_outputs(a, b):
    for key in a:
        values_a, values_b = a[key], b[key]
        if isinstance(values_a, list):  # all_encoder_layers
            for x, y in zip(values_a, values_b):
                np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=key)
        else:
            np.testing.assert_array_equal(np.asarray(values_a), np.asarray(values_b), err_msg=key)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["BertModel", "BertPretrainer", "BertClassifier", "BertSquad",
                                  "BertPreprocessor"])
def test_every_model_round_trips_through_a_keras_file(tmp_path, vocab_file, kind):
    config = one_layer_config()
    features = {k: v[0] for k, v in random_batches(1, batch_size=3).items()}
    texts = {"text_a": tf.constant(["Is this jacksonville?", "the dog"]),
             "text_b": tf.constant(["No it is not.", ""])}
    preprocessor = BertPreprocessor(vocab_file, do_lower_case=True, max_seq_length=12)
    keras.utils.set_random_seed(2)
    if kind == "BertModel":
        model = BertModel(config)
        run = lambda m: m(features["input_ids"], input_mask=features["input_mask"],  # noqa: E731
                          token_type_ids=features["segment_ids"])
    elif kind == "BertPreprocessor":
        model = preprocessor
        run = lambda m: m(texts)  # noqa: E731
    else:
        model = {"BertPretrainer": lambda: BertPretrainer(config),
                 "BertClassifier": lambda: BertClassifier(config, NUM_LABELS,
                                                          preprocessor=preprocessor),
                 "BertSquad": lambda: BertSquad(config)}[kind]()
        run = lambda m: m(features)  # noqa: E731
    before = run(model)
    path = str(tmp_path / "model.keras")
    model.save(path) if isinstance(model, keras.Model) else keras.saving.save_model(
        keras.Sequential([keras.Input((), dtype="string"), model]), path)
    loaded = keras.saving.load_model(path)
    if kind == "BertPreprocessor":
        loaded = loaded.layers[0]
    assert type(loaded) is type(model)
    _same_outputs(before, run(loaded))
    config_before, config_after = model.get_config(), loaded.get_config()
    assert config_after == config_before
    # Chained to Keras's own config (name, trainable, dtype policy).
    assert {"name", "trainable", "dtype"} <= set(config_after)
    assert [v.path for v in loaded.weights] == [v.path for v in model.weights]
    if kind == "BertClassifier":
        assert loaded.preprocessor.vocabulary == VOCAB
        _same_outputs(model(texts), loaded(texts))  # raw text through the loaded preprocessor


def test_a_compiled_model_keeps_its_optimizer_in_a_keras_file_and_trains_on(tmp_path):
    config = one_layer_config()
    init = init_checkpoint("pretrainer", config, tmp_path / "init" / "bert_model.ckpt")
    batches = random_batches(3, seed=11)
    model = compiled_model("pretrainer", config, init, num_train_steps=3, run_eagerly=True)
    model.fit(tf.data.Dataset.from_tensor_slices({k: v[:2] for k, v in batches.items()}),
              verbose=0)
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.run_eagerly  # the compile arguments travel too
    optimizer = loaded.optimizer
    assert isinstance(optimizer, optimization.AdamWeightDecay)
    assert optimizer.get_config() == model.optimizer.get_config()
    assert optimizer.get_config()["learning_rate"]["class_name"] == "WarmupLinearDecay"
    assert_same_state(state(loaded, tmp_path / "loaded" / "model.ckpt-2"),
                      state(model, tmp_path / "saved" / "model.ckpt-2"), 0.0)
    # The third step, on both: the schedule goes on at step 2.
    last = tf.data.Dataset.from_tensor_slices({k: v[2:] for k, v in batches.items()})
    model.fit(last, verbose=0)
    loaded.fit(last, verbose=0)
    assert_same_state(state(loaded, tmp_path / "loaded" / "model.ckpt-3"),
                      state(model, tmp_path / "saved" / "model.ckpt-3"), REPLICA_ATOL)


# ----------------------------------------------------------------- BertPreprocessor


PAIRS = [("Is this Jacksonville?", "No it is not."),
         ("The dog is hairy, unwanted!", ""),                      # a single segment
         ("un un un un un un un un un un un", "runn running runn"),  # truncated pair
         ("Café 中 xyzzy", "the  dogs"),                            # accents, CJK, [UNK]
         ("", "it is"),                                             # empty a
         ("this is this is this is this is this is this", "")]      # truncated single
MAX_SEQ_LENGTH = 12


def python_features(vocab_file, pairs, max_seq_length=MAX_SEQ_LENGTH):
    """The original's way: FullTokenizer + convert_single_example's packing."""
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    rows = [build_pair_features(tokenizer.tokenize(a), tokenizer.tokenize(b) if b else None,
                                max_seq_length, tokenizer) for a, b in pairs]
    return {k: np.array([getattr(r, k) for r in rows], np.int32) for k in INPUT_KEYS}


def test_preprocessor_gives_convert_single_examples_features(vocab_file):
    preprocessor = BertPreprocessor(vocab_file, do_lower_case=True, max_seq_length=MAX_SEQ_LENGTH)
    want = python_features(vocab_file, PAIRS)
    texts_a, texts_b = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    for inputs in ({"text_a": texts_a, "text_b": texts_b}, (tf.constant(texts_a),
                                                            tf.constant(texts_b))):
        got = preprocessor(inputs)
        for key in INPUT_KEYS:
            np.testing.assert_array_equal(got[key].numpy(), want[key], err_msg=key)
    # Single texts: as a pair with an empty b.
    singles = python_features(vocab_file, [(a, "") for a in texts_a])
    got = preprocessor(np.array(texts_a))
    for key in INPUT_KEYS:
        np.testing.assert_array_equal(got[key].numpy(), singles[key], err_msg=key)
    # From its config alone (the vocabulary travels in it).
    clone = BertPreprocessor.from_config(preprocessor.get_config())
    assert clone.vocabulary == VOCAB
    np.testing.assert_array_equal(clone(np.array(texts_a))["input_ids"], singles["input_ids"])


@pytest.mark.slow
def test_classifier_predicts_and_fits_on_raw_text_as_on_its_features(tmp_path, vocab_file):
    config = one_layer_config()
    init = init_checkpoint("classifier", config, tmp_path / "init" / "bert_model.ckpt")
    preprocessor = BertPreprocessor(vocab_file, do_lower_case=True, max_seq_length=MAX_SEQ_LENGTH)
    # A list and a numpy array of str (Keras itself takes only string Tensors).
    texts = {"text_a": [a for a, _ in PAIRS], "text_b": np.array([b for _, b in PAIRS])}
    features = python_features(vocab_file, PAIRS)
    labels = np.array([0, 1, 2, 1, 0, 2])  # int64, numpy's default (the records' are int32)

    def model(with_preprocessor):
        m = BertClassifier(config, NUM_LABELS,
                           preprocessor=preprocessor if with_preprocessor else None)
        m.classifier.dropout.rate = 0.0
        checkpoint.load_checkpoint(m, init, strict=True)
        # The raw-text model runs compiled (string ops in the graph); the
        # reference on features eagerly.
        m.compile(optimizer=optimization.create_optimizer(LEARNING_RATE, NUM_STEPS, WARMUP),
                  run_eagerly=not with_preprocessor)
        return m

    on_text, on_features = model(True), model(False)
    got = on_text.predict(texts, batch_size=3, verbose=0)
    want = on_features.predict(features, batch_size=3, verbose=0)
    for key in ("logits", "probabilities"):
        np.testing.assert_allclose(got[key], want[key], atol=REPLICA_ATOL, err_msg=key)
    # Two steps of fit on raw text (x, y) are two steps on the features.
    on_text.fit(texts, labels, batch_size=3, shuffle=False, verbose=0)
    on_features.fit(features, labels, batch_size=3, shuffle=False, verbose=0)
    assert int(on_text.optimizer.iterations.numpy()) == 2
    for a, b in zip(on_text.weights, on_features.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=REPLICA_ATOL, err_msg=a.path)


# ----------------------------------------------------------------- user errors


def test_user_mistakes_are_one_line_errors(vocab_file):
    config = one_layer_config()
    model = BertClassifier(config, NUM_LABELS)
    with pytest.raises(UserError, match=r"BertClassifier.compile\(\) needs optimizer=: e.g. "
                                        r"bert_tf.training.optimization.create_optimizer"):
        model.compile()
    with pytest.raises(UserError, match=r"compile\(\) takes no loss="):
        model.compile(optimizer="adam", loss="mse")
    with pytest.raises(UserError, match="is_regression=True needs num_labels=1, got 3"):
        BertClassifier(config, NUM_LABELS, is_regression=True)
    with pytest.raises(UserError, match="BertClassifier takes a dict of features .* for raw "
                                        "text, build it with preprocessor="):
        model(tf.constant(["some text"]))
    with pytest.raises(UserError, match="vocabulary has 150 tokens but the model's vocab_size "
                                        "is 99"):
        BertClassifier(config, NUM_LABELS, preprocessor=BertPreprocessor(
            vocabulary=VOCAB + ["w%d" % i for i in range(150 - len(VOCAB))]))
    with pytest.raises(UserError, match="vocabulary has %d tokens but the model's vocab_size "
                                        "is %d" % (len(VOCAB), len(VOCAB) + 128)):
        BertClassifier(one_layer_config(vocab_size=len(VOCAB) + 128), NUM_LABELS,
                       preprocessor=BertPreprocessor(vocabulary=VOCAB))
    with pytest.raises(UserError, match="the vocabulary has no \\[CLS\\] token"):
        BertPreprocessor(vocabulary=["[UNK]", "[SEP]", "a"])
    with pytest.raises(UserError, match="exactly one of vocab_file= or vocabulary="):
        BertPreprocessor()
    with pytest.raises(UserError, match="max_seq_length must be >= 3"):
        BertPreprocessor(vocab_file, max_seq_length=2)

    model.compile(optimizer=optimization.create_optimizer(LEARNING_RATE, NUM_STEPS, WARMUP))
    batches = random_train_batches(1, seed=0)
    x = {k: batches[k][0] for k in INPUT_KEYS}
    with pytest.raises(UserError, match="BertClassifier takes no sample_weight"):
        model.fit(x, batches["label_ids"][0], sample_weight=np.ones(BATCH_SIZE), verbose=0)
    pretrainer = BertPretrainer(config)
    pretrainer.compile(optimizer=optimization.create_optimizer(LEARNING_RATE, NUM_STEPS, WARMUP))
    features = {k: v[0] for k, v in random_batches(1).items()}
    with pytest.raises(UserError, match=r"BertPretrainer takes its labels as a dict "
                                        r"y=\{masked_lm_ids, masked_lm_weights, "
                                        r"next_sentence_labels: \.\.\.\}"):
        pretrainer.fit(features, features["next_sentence_labels"], verbose=0)
    squad = BertSquad(config)
    squad.compile(optimizer=optimization.create_optimizer(LEARNING_RATE, NUM_STEPS, WARMUP))
    with pytest.raises(UserError, match=r"BertSquad has no evaluate\(\)"):
        squad.evaluate(x, verbose=0)


if __name__ == "__main__":
    if sys.argv[1] == "mirrored":
        _mirrored_child(sys.argv[2])
    else:
        raise SystemExit("unknown mode %s" % sys.argv[1])
