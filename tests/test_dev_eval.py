"""Evaluation on the dev set while training, the best checkpoint, early stopping (new).

* `BestCheckpoint` alone (a stand-in evaluation): the ranking (higher is
  better, lower for losses), the best checkpoint kept and the one before it
  removed, patience, the history read back by a resumed run, an evaluation
  at a step the history already holds replacing what follows, and a run that
  stopped early training no further.
* Every fine-tuning tool takes `--eval_every_steps`, `--best_metric` and
  `--early_stopping_patience` (from one option group), and the runs use them:
  run_classifier evaluates dev.tsv every N steps and after the last one,
  keeps `best/model.ckpt-N`, and its eval_results.txt and test_results.tsv
  come from that checkpoint; with no gain, patience stops training early and
  a rerun trains no further; run_squad ranks by the F1 of --predict_file.
* Keras: `BestCheckpointCallback` does the same from `fit`, and a regression
  model's `evaluate` reports Pearson and Spearman as `Trainer.evaluate` does.
"""

import json
import os

import keras
import numpy as np
import pytest

from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.training.dev_eval import BestCheckpoint
from bert_tf.training.dev_eval import DevEval
from tests.tools import toolrun
from tests.tools.test_run_classifier_tool import NUM_TRAIN_STEPS
from tests.tools.test_run_classifier_tool import _flags as classifier_flags
from tests.tools.test_run_classifier_tool import _read_eval_results
from tests.tools.test_run_classifier_tool import _read_test_results
from tests.tools.test_run_classifier_tool import files  # noqa: F401  (a fixture)


def _fake_save(prefix):
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    for suffix in (".index", ".data-00000-of-00001"):
        with open(prefix + suffix, "w") as f:
            f.write("weights")


def _keeper(output_dir, scores, **options):
    """A BestCheckpoint whose evaluation at step s returns {"eval_accuracy": scores[s], ...}."""
    def evaluate(step):
        return {"eval_accuracy": scores[step], "eval_loss": 1.0 - scores[step],
                "global_step": step}
    return BestCheckpoint(str(output_dir), DevEval(**dict({"eval_every_steps": 10}, **options)),
                          "eval_accuracy", evaluate)


def _history(output_dir):
    with open(os.path.join(str(output_dir), "eval_history.jsonl")) as f:
        return [json.loads(line) for line in f]


def _best_files(output_dir):
    best = os.path.join(str(output_dir), "best")
    return sorted(name for name in os.listdir(best) if name.startswith("model.ckpt-"))


def test_the_best_evaluation_is_kept_and_the_one_before_it_removed(tmp_path):
    scores = {10: 0.5, 20: 0.7, 30: 0.6, 40: 0.7, 50: 0.8}
    keeper = _keeper(tmp_path, scores)
    assert [keeper.due(s) for s in (9, 10)] == [False, True]
    for step in sorted(scores):
        assert keeper.due(step) and not keeper.evaluate_and_record(step, _fake_save)
        assert not keeper.due(step)
    # A tie (0.7 at step 40) is no gain: the earlier one stays the best until 0.8.
    assert [e["best"] for e in _history(tmp_path)] == [True, True, False, False, True]
    assert _best_files(tmp_path) == ["model.ckpt-50.data-00000-of-00001", "model.ckpt-50.index"]
    assert keeper.best_checkpoint() == str(tmp_path / "best" / "model.ckpt-50")
    with open(tmp_path / "best" / "eval_results.txt") as f:
        assert "global_step = 50\n" in f.read()


def test_a_loss_is_better_lower(tmp_path):
    keeper = _keeper(tmp_path, {10: 0.5, 20: 0.4}, best_metric="eval_loss")
    keeper.evaluate_and_record(10, _fake_save)
    keeper.evaluate_and_record(20, _fake_save)
    assert [e["best"] for e in _history(tmp_path)] == [True, False]  # loss 0.5, then 0.6


def test_patience_stops_after_that_many_evaluations_without_gain(tmp_path):
    keeper = _keeper(tmp_path, {10: 0.5, 20: 0.6, 30: 0.6, 40: 0.55, 50: 0.9},
                     early_stopping_patience=2)
    stops = [keeper.evaluate_and_record(step, _fake_save) for step in (10, 20, 30, 40)]
    assert stops == [False, False, False, True]
    assert _history(tmp_path)[-1]["stopped"] is True and keeper.stopped_early


def test_a_resumed_run_reads_the_history_and_replaces_what_it_evaluates_again(tmp_path):
    scores = {10: 0.5, 20: 0.9, 30: 0.6}
    keeper = _keeper(tmp_path, scores, early_stopping_patience=2)
    for step in (10, 20, 30):
        keeper.evaluate_and_record(step, _fake_save)
    # Killed after evaluating at 30 and resumed from checkpoint 10: the evaluation at 20
    # replaces 20 and 30, and the best of step 20 is written anew.
    again = _keeper(tmp_path, {10: 0.5, 20: 0.7, 30: 0.4, 40: 0.5}, early_stopping_patience=2)
    assert again.best()["global_step"] == 20 and not again.due(20)
    assert not again.evaluate_and_record(20, _fake_save)
    assert [e["global_step"] for e in _history(tmp_path)] == [10, 20]
    assert again.best()["results"]["eval_accuracy"] == 0.7
    assert _best_files(tmp_path) == ["model.ckpt-20.data-00000-of-00001", "model.ckpt-20.index"]
    # Patience counts on across the resume: 30 and 40 without gain stop it.
    assert not again.evaluate_and_record(30, _fake_save)
    assert again.evaluate_and_record(40, _fake_save)


def test_options_refuse_what_no_run_can_use(tmp_path):
    with pytest.raises(UserError, match="--early_stopping_patience needs --eval_every_steps"):
        DevEval(early_stopping_patience=3).check()
    with pytest.raises(UserError, match="--best_metric needs --eval_every_steps"):
        DevEval(best_metric="f1").check()
    with pytest.raises(UserError, match="--eval_every_steps must be a non-negative integer"):
        DevEval(eval_every_steps=-1).check()
    keeper = _keeper(tmp_path, {10: 0.5}, best_metric="f1")
    with pytest.raises(UserError, match=r"--best_metric=f1 is not a result .* \(it has "
                                        r"eval_accuracy, eval_loss\)"):
        keeper.evaluate_and_record(10, _fake_save)
    (tmp_path / "eval_history.jsonl").write_text("not json\n")
    with pytest.raises(UserError, match=r"eval_history.jsonl:1 is not an evaluation line"):
        _keeper(tmp_path, {})


def test_every_fine_tuning_tool_takes_the_options_from_one_group():
    from bert_tf.tools import flag_groups
    from bert_tf.tools import run_classifier, run_classifier_with_tfhub, run_ner, run_squad
    names = {flag.name for flag in flag_groups.DEV_EVAL}
    assert names == {"eval_every_steps", "best_metric", "early_stopping_patience"}
    for tool in (run_classifier, run_classifier_with_tfhub, run_squad, run_ner):
        assert names <= {flag.name for flag in tool.TOOL.flags}, tool.__name__
        assert any(isinstance(d, DevEval) for d in tool.TOOL.function().__defaults__), (
            tool.__name__)


# ----------------------------------------------------------------- run_classifier


def _run_classifier(files, output_dir, **overrides):  # noqa: F811
    from bert_tf.tools import run_classifier
    return run_classifier.TOOL.run(["run_classifier"]
                                   + classifier_flags(files, output_dir, **overrides))


@pytest.mark.slow
def test_run_classifier_evaluates_while_training_and_uses_the_best(files, tmp_path):  # noqa: F811
    output_dir = tmp_path / "out"
    results = _run_classifier(files, output_dir, eval_every_steps=5, learning_rate=1e-3)
    history = _history(output_dir)
    # Every 5 steps and after the last one (21).
    assert [e["global_step"] for e in history] == [5, 10, 15, 20, NUM_TRAIN_STEPS]
    best = max(history, key=lambda e: (e["results"]["eval_accuracy"], -e["global_step"]))
    assert [e["global_step"] for e in history if e["best"]][-1] == best["global_step"]
    prefix = str(output_dir / "best" / ("model.ckpt-%d" % best["global_step"]))
    assert _best_files(output_dir) == [os.path.basename(prefix) + ".data-00000-of-00001",
                                       os.path.basename(prefix) + ".index"]
    # The best is a Google checkpoint of the weights: no optimizer slots, its global_step.
    values = checkpoint.read_checkpoint(prefix)
    assert int(values["global_step"]) == best["global_step"]
    assert "output_weights" in values and not any(k.endswith("/adam_m") for k in values)
    # --do_eval and --do_predict ran on it: its step and its score.
    _, ours = _read_eval_results(output_dir / "eval_results.txt")
    assert ours["global_step"] == best["global_step"]
    assert ours["eval_accuracy"] == pytest.approx(best["results"]["eval_accuracy"], abs=1e-6)
    assert results["eval"]["global_step"] == best["global_step"]
    _, probabilities = _read_test_results(output_dir / "test_results.tsv")
    assert probabilities.shape[0] == 21
    # The run's own cadence is unchanged: the last checkpoint is the last step's.
    assert os.path.exists(str(output_dir / ("model.ckpt-%d.index" % NUM_TRAIN_STEPS)))


@pytest.mark.slow
def test_run_classifier_stops_early_and_a_rerun_trains_no_further(files, tmp_path):  # noqa: F811
    output_dir = tmp_path / "out"
    # Learning rate 0: every evaluation scores the same, none is a gain.
    _run_classifier(files, output_dir, eval_every_steps=4, early_stopping_patience=2,
                    best_metric="eval_loss", learning_rate=0.0, do_predict="false")
    history = _history(output_dir)
    assert [e["global_step"] for e in history] == [4, 8, 12]
    assert [e["best"] for e in history] == [True, False, False] and history[-1]["stopped"]
    # Training ended there, with its checkpoint, as at a last step.
    assert os.path.exists(str(output_dir / "model.ckpt-12.index"))
    assert not os.path.exists(str(output_dir / "model.ckpt-16.index"))
    _, ours = _read_eval_results(output_dir / "eval_results.txt")
    assert ours["global_step"] == 4
    with toolrun.captured_logs() as rerun:  # a result line (INFO), shown at every --verbosity
        _run_classifier(files, output_dir, eval_every_steps=4, early_stopping_patience=2,
                        best_metric="eval_loss", learning_rate=0.0, do_predict="false")
    assert ("holds a finished run (stopped early at global_step 12, eval_history.jsonl): not "
            "training again; evaluating its model") in rerun.text
    assert len(_history(output_dir)) == 3
    assert not os.path.exists(str(output_dir / "model.ckpt-16.index"))


@pytest.mark.slow
def test_run_classifier_refuses_a_best_metric_its_evaluation_has_not(files, tmp_path):  # noqa: F811
    with pytest.raises(UserError, match="--best_metric=f1 is not a result"):
        _run_classifier(files, tmp_path / "out", eval_every_steps=5, best_metric="f1")


# ----------------------------------------------------------------- run_squad


@pytest.mark.slow
def test_run_squad_ranks_by_the_f1_of_the_predict_file(tmp_path_factory):
    from bert_tf.tools import run_squad
    from tests.tools.test_run_squad_tool import _flags as squad_flags
    from tests.tools.test_run_squad_tool import write_files
    files = write_files(tmp_path_factory.mktemp("squad_files"))
    output_dir = tmp_path_factory.mktemp("squad_dev_eval")
    results = run_squad.TOOL.run(["run_squad"] + squad_flags(
        files, output_dir, eval_every_steps=1, num_train_epochs=0.75))
    history = _history(output_dir)
    assert history and all(set(e["results"]) >= {"exact_match", "f1"} for e in history)
    best = [e for e in history if e["best"]][-1]
    assert best["results"]["f1"] == max(e["results"]["f1"] for e in history)
    # predictions.json is the best checkpoint's: its scores are the best's.
    assert results["scores"]["f1"] == pytest.approx(best["results"]["f1"], abs=1e-9)
    with pytest.raises(UserError, match="--eval_every_steps scores --predict_file while "
                                        "training: give a --predict_file with answers"):
        run_squad.TOOL.run(["run_squad"] + squad_flags(
            files, tmp_path_factory.mktemp("no_answers"), eval_every_steps=1,
            predict_file=None, do_predict="false"))


# ----------------------------------------------------------------- Keras


def _regression_data(config, num_examples=12, seq_length=8, seed=3):
    rng = np.random.RandomState(seed)
    mask = np.ones((num_examples, seq_length), np.int32)
    mask[:, seq_length // 2:] = rng.randint(0, 2, (num_examples, seq_length - seq_length // 2))
    features = {
        "input_ids": rng.randint(0, config.vocab_size, (num_examples, seq_length)).astype(np.int32),
        "input_mask": mask,
        "segment_ids": np.zeros((num_examples, seq_length), np.int32),
    }
    return features, rng.uniform(0.0, 5.0, num_examples).astype(np.float32)


@pytest.mark.slow
def test_keras_evaluate_of_a_regression_reports_pearson_and_spearman_as_the_trainer(tmp_path):
    import tensorflow as tf
    from bert_tf.data.finite_input import FiniteInput
    from bert_tf.tasks.classifier.model import BertClassifier
    from bert_tf.training import distribute
    from bert_tf.training.trainer import Trainer
    from tests.test_pretraining import one_layer_config
    config = one_layer_config()
    features, labels = _regression_data(config)
    keras.utils.set_random_seed(1)
    trainer = Trainer(distribute.get_strategy("off"),
                      lambda: BertClassifier(config, 1, is_regression=True), str(tmp_path / "out"))
    data = FiniteInput(
        lambda: tf.data.Dataset.from_tensor_slices(dict(features, label_ids=labels)),
        len(labels), 5)
    ours = trainer.evaluate(data, 5)
    model = BertClassifier(config, 1, is_regression=True)
    model.set_weights(trainer.model.get_weights())
    model.compile(optimizer=keras.optimizers.SGD())
    theirs = model.evaluate(features, labels, batch_size=5, return_dict=True, verbose=0)
    assert set(theirs) == {"eval_loss", "loss", "pearson", "spearman"}
    for key in ("pearson", "spearman", "eval_loss"):
        assert theirs[key] == pytest.approx(ours[key], abs=1e-5), key
    assert isinstance(model.evaluate(features, labels, batch_size=5, verbose=0), list)


@pytest.mark.slow
def test_keras_fit_keeps_the_best_checkpoint_and_stops_early(tmp_path):
    from bert_tf.tasks.classifier.model import BertClassifier
    from bert_tf.training.callbacks import BestCheckpointCallback
    from bert_tf.training.optimization import create_optimizer
    from tests.test_pretraining import one_layer_config
    config = one_layer_config()
    features, scores = _regression_data(config, num_examples=16)
    labels = (scores > 2.5).astype(np.int32)
    keras.utils.set_random_seed(2)
    model = BertClassifier(config, 2)
    # Learning rate 0: no evaluation gains on the first, so patience 2 stops at step 6.
    model.compile(optimizer=create_optimizer(0.0, num_train_steps=100, num_warmup_steps=0))
    callback = BestCheckpointCallback(str(tmp_path), (features, labels), eval_every_steps=2,
                                      early_stopping_patience=2)
    model.fit(features, labels, batch_size=2, epochs=2, verbose=0, callbacks=[callback])
    history = _history(tmp_path)
    assert [e["global_step"] for e in history] == [2, 4, 6]
    assert history[-1]["stopped"] and set(history[0]["results"]) >= {"eval_accuracy"}
    assert callback.best_checkpoint() == str(tmp_path / "best" / "model.ckpt-2")
    values = checkpoint.read_checkpoint(callback.best_checkpoint())
    assert int(values["global_step"]) == 2
    np.testing.assert_array_equal(values["output_bias"], model.classifier.output_bias.numpy())
