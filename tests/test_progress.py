"""Progress lines of the long phases: count done / total, rate, elapsed, ETA.

`bert_tf.item_progress.ItemProgress` on a fake clock (when it logs, and what
the line says), then the lines a user sees from each long phase on tiny
data: evaluation (in chunks, with the results of one host call), prediction,
writing classifier records, SQuAD feature conversion and the exports.
"""

import re

import keras
import pytest
import tensorflow as tf

from bert_tf import item_progress
from bert_tf import tokenization
from bert_tf import training
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.tasks.squad import data as squad_data
from bert_tf.export import hub
from bert_tf.export import saved_model
from bert_tf.item_progress import ItemProgress
from bert_tf.item_progress import PhaseLog
from bert_tf.models import BertClassifier
from bert_tf.models import BertPretrainer
from bert_tf.training import distribute
from bert_tf.training import steps as steps_lib
from tests.test_classifier import NUM_LABELS
from tests.test_classifier import finite_input
from tests.test_classifier import random_examples
from tests.test_pretraining import BATCH_SIZE
from tests.test_pretraining import in_memory_dataset_fn
from tests.test_pretraining import random_batches
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_init_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
         "a", "dog", "ran", "where", "did", "?", ".", "##s"]


class FakeClock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _messages(caplog, prefix):
    return [r.getMessage() for r in caplog.records
            if r.name == "absl" and r.getMessage().startswith(prefix)]


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    yield
    keras.backend.clear_session()


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(token + "\n" for token in VOCAB))
    return str(path)


# ----------------------------------------------------------------- the helper


def test_count_trigger_logs_every_n_items_and_a_last_line(info_logs):
    clock = FakeClock()
    progress = ItemProgress("things", 10, "examples", every=3, seconds=None, clock=clock)
    for _ in range(10):
        clock.now += 1.0
        progress.add()
    progress.finish()  # already done at 10/10: no second last line
    assert _messages(info_logs, "things:") == [
        "things: 3/10 examples, 1 examples/s, elapsed 3s, ETA 7s",
        "things: 6/10 examples, 1 examples/s, elapsed 6s, ETA 4s",
        "things: 9/10 examples, 1 examples/s, elapsed 9s, ETA 1s",
        "things: 10/10 examples, 1 examples/s, elapsed 10s, done",
    ]


def test_time_trigger_logs_slow_items_every_seconds(info_logs):
    clock = FakeClock()
    progress = ItemProgress("slow", 8, "batches", every=100, seconds=10.0, clock=clock)
    for _ in range(7):
        clock.now += 4.0  # 4 s a batch: a line at 12 s and 24 s (10 s or more since the last)
        progress.add()
    assert _messages(info_logs, "slow:") == [
        "slow: 3/8 batches, 0.25 batches/s, elapsed 12s, ETA 20s",
        "slow: 6/8 batches, 0.25 batches/s, elapsed 24s, ETA 8s",
    ]
    with progress:
        pass  # leaving the block logs the last line
    assert _messages(info_logs, "slow:")[-1] == "slow: 7/8 batches, 0.25 batches/s, " \
                                                 "elapsed 28s, done"


def test_rate_eta_and_detail_text():
    clock = FakeClock()
    progress = ItemProgress("f.tf_record", 4000, "examples", clock=clock)
    clock.now += 2.5
    progress.done = 1000
    assert progress.line(clock.now, "1234 features") == (
        "f.tf_record: 1000/4000 examples (1234 features), 400 examples/s, elapsed 2s, ETA 8s")
    clock.now += 3600.0
    assert progress.line(clock.now).endswith("elapsed 1h00m02s, ETA 3h00m08s")
    assert item_progress.format_rate(0.0412) == "0.0412"
    assert item_progress.format_rate(3941.4) == "3941"


def test_total_unknown_has_no_eta_and_finish_logs_once(info_logs):
    clock = FakeClock()
    progress = ItemProgress("stream", None, "lines", every=2, seconds=None, clock=clock)
    for _ in range(3):
        clock.now += 1.0
        progress.add()
    assert progress.finish() and not progress.finish()
    assert _messages(info_logs, "stream:") == [
        "stream: 2 lines, 1 lines/s, elapsed 2s",
        "stream: 3 lines, 1 lines/s, elapsed 3s, done",
    ]


def test_an_exception_leaves_no_last_line(info_logs):
    with pytest.raises(RuntimeError):
        with ItemProgress("broken", 5, seconds=None):
            raise RuntimeError("stop")
    assert _messages(info_logs, "broken:") == []


def test_phase_log_says_each_phase_and_its_time(info_logs):
    clock = FakeClock()
    phases = PhaseLog("export", clock=clock)
    clock.now += 1.25
    phases.done("checkpoint %s loaded", "ckpt")
    clock.now += 61.0
    phases.done("saved")
    assert _messages(info_logs, "export:") == [
        "export: checkpoint ckpt loaded (1.2s, elapsed 1.2s)",
        "export: saved (1m01s, elapsed 1m02s)",
    ]


def test_training_progress_keeps_format_duration():
    from bert_tf.training.progress import format_duration
    assert format_duration is item_progress.format_duration
    assert format_duration(3725) == "1h02m05s" and format_duration(None) == "?"


# ----------------------------------------------------------------- evaluate / predict


def _pretraining_trainer(output_dir, log_steps):
    return training.Trainer(distribute.get_strategy("off"),
                            lambda: BertPretrainer(tiny_config()),
                            str(output_dir), log_steps=log_steps)


@pytest.mark.slow
def test_evaluate_in_chunks_logs_progress_and_gives_the_one_call_results(tmp_path, info_logs,
                                                                         monkeypatch):
    batches = random_batches(5, seed=3)
    init = write_init_checkpoint(tiny_config(), str(tmp_path / "init" / "bert_model.ckpt"))

    # Today's evaluation: the eval loop over the 5 batches in one host call.
    trainer = _pretraining_trainer(tmp_path / "one", log_steps=100)
    trainer.restore(init, with_optimizer=False)
    loop = steps_lib.build_eval_loop(trainer.strategy, trainer.task, trainer.model)
    iterator = iter(trainer.strategy.distribute_datasets_from_function(
        in_memory_dataset_fn(batches, repeat=True)))
    sums = loop(iterator, tf.constant(5, tf.int32), steps_lib.initial_eval_sums(trainer.task))
    one_call = trainer.task.eval_results({k: float(v) for k, v in sums.items()}, 5)

    # log_steps=2: chunks of 1 (timing), 1, 2, 1 batches; a line at 2, 4 and 5.
    trainer = _pretraining_trainer(tmp_path / "chunks", log_steps=2)
    results = trainer.evaluate(in_memory_dataset_fn(batches, repeat=True), BATCH_SIZE, 5,
                               init_checkpoint=init)
    lines = _messages(info_logs, "evaluation:")
    assert lines[0] == ("evaluation: tracing the step (its first call builds the graph; the "
                        "next progress line comes after it)")
    lines = lines[1:]
    assert [re.match(r"evaluation: (\d+)/5 batches, ", l).group(1) for l in lines] == [
        "2", "4", "5"]
    assert "ETA" in lines[0] and "elapsed" in lines[0] and lines[-1].endswith(", done")
    results.pop("global_step")
    assert results == one_call  # the same float32 sums, to the bit

    # Slow batches (here: a 0 s bound): a chunk and a line for every batch.
    monkeypatch.setattr(item_progress, "PROGRESS_SECONDS", 0.0)
    trainer = _pretraining_trainer(tmp_path / "slow", log_steps=100)
    assert [trainer._next_eval_chunk(d, 5, 1.0) for d in range(5)] == [1] * 5
    info_logs.clear()
    results = trainer.evaluate(in_memory_dataset_fn(batches, repeat=True), BATCH_SIZE, 5,
                               init_checkpoint=init)
    assert len(_messages(info_logs, "evaluation:")) == 1 + 5  # the tracing, each batch
    results.pop("global_step")
    assert results == one_call


def test_eval_chunks_reach_each_log_step_and_fit_in_10_seconds(tmp_path):
    trainer = _pretraining_trainer(tmp_path, log_steps=100)
    assert trainer._next_eval_chunk(0, 500, None) == 1           # the first times a step
    assert trainer._next_eval_chunk(1, 500, 0.001) == 99         # up to step 100
    assert trainer._next_eval_chunk(1, 500, 1.0) == 10           # 1 s a step: 10 s
    assert trainer._next_eval_chunk(100, 500, 30.0) == 1         # slower than 10 s: one
    assert trainer._next_eval_chunk(495, 500, 0.001) == 5        # the rest


def test_train_chunks_reach_each_log_step_and_fit_in_10_seconds(tmp_path):
    trainer = _pretraining_trainer(tmp_path, log_steps=100)
    trainer.checkpoints.save_checkpoints_steps = 1000
    assert trainer._next_chunk(0, 500, 1000, None) == 1          # the first times a step
    assert trainer._next_chunk(1, 500, 1000, 0.001) == 99        # up to step 100
    assert trainer._next_chunk(1, 500, 1000, 1.0) == 10          # 1 s a step: 10 s
    assert trainer._next_chunk(100, 500, 1000, 30.0) == 1        # slower than 10 s: one
    assert trainer._next_chunk(495, 500, 1000, 0.001) == 5       # the rest
    assert trainer._next_chunk(10, 500, 20, 0.001) == 20         # iterations_per_loop


@pytest.mark.slow
def test_training_says_it_traces_then_logs_slow_steps_one_by_one(tmp_path, info_logs,
                                                                  monkeypatch):
    """A run shorter than log_steps is not silent until its end: a line before the
    first call (the tracing), one after the first step, then one at least every
    10 s (here a 0 s bound: every step)."""
    init = write_init_checkpoint(tiny_config(), str(tmp_path / "init" / "bert_model.ckpt"))
    monkeypatch.setattr(item_progress, "PROGRESS_SECONDS", 0.0)
    trainer = _pretraining_trainer(tmp_path / "out", log_steps=100)
    history = trainer.train(in_memory_dataset_fn(random_batches(3, seed=5)), BATCH_SIZE, 3,
                            1e-3, 1, init_checkpoint=init)
    lines = [r.getMessage() for r in info_logs.records if r.name == "absl"]
    steps = [l for l in lines if re.match(r"step \d+/3: loss = ", l)]
    assert [l.split(":")[0] for l in steps] == ["step 1/3", "step 2/3", "step 3/3"]
    assert [len(h["losses"]) for h in history] == [1, 1, 1]
    tracing = lines.index("training: tracing the step (its first call builds the graph; the "
                          "next progress line comes after it)")
    assert tracing < lines.index(steps[0])
    # The first loop's time is mostly the tracing: no ETA from it.
    assert steps[0].endswith("ETA ? (this loop traced the step)")
    assert re.search(r"ETA \d+s$", steps[1]) and steps[2].endswith("ETA 0s")


def test_predict_logs_every_log_steps_and_every_10_seconds(tmp_path, info_logs, monkeypatch):
    examples = random_examples(10, seed=4)
    trainer = training.Trainer(distribute.get_strategy("off"),
                               lambda: BertClassifier(tiny_config(), NUM_LABELS), str(tmp_path),
                               log_steps=2)
    trainer.predict(finite_input(examples, 2))  # 5 steps of 2 examples
    lines = _messages(info_logs, "predict:")
    assert lines[0] == ("predict: tracing the step (its first call builds the graph; the "
                        "next progress line comes after it)")
    lines = lines[1:]
    assert [re.match(r"predict: (\d+)/10 examples, ", l).group(1) for l in lines] == [
        "4", "8", "10"]
    assert "ETA" in lines[0] and "elapsed" in lines[0] and lines[-1].endswith(", done")

    # Steps slower than the time bound (here 0 s) show each, whatever log_steps is.
    monkeypatch.setattr(item_progress, "PROGRESS_SECONDS", 0.0)
    trainer.log_steps = 100
    info_logs.clear()
    trainer.predict(finite_input(examples, 2))
    assert len(_messages(info_logs, "predict:")) == 5  # traced once, by the first call


# ----------------------------------------------------------------- writing features


def test_classifier_records_log_progress_and_keep_the_originals_line(tmp_path, vocab_file,
                                                                      info_logs):
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    examples = [classifier_data.InputExample("train-%d" % i, "The cat sat on the mat.",
                                             "A dog ran." if i % 2 else None, "1")
                for i in range(5)]
    output_file = tmp_path / "train.tf_record"
    n = classifier_data.file_based_convert_examples_to_features(
        examples, ["0", "1"], 16, tokenizer, str(output_file), progress_every=2)
    assert n == 5 and output_file.exists()
    lines = _messages(info_logs, "train.tf_record:")
    assert [re.match(r"train.tf_record: (\d+)/5 examples, ", l).group(1) for l in lines] == [
        "2", "4", "5"]
    assert lines[-1].endswith(", done")
    # The original's own line stays, once for 5 examples.
    assert _messages(info_logs, "Writing example ") == ["Writing example 0 of 5"]


def test_squad_conversion_logs_examples_and_features(vocab_file, info_logs):
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    doc = ("the cat sat on the mat . " * 4).split()
    examples = [squad_data.SquadExample("q%d" % i, "where did the cat sit ?", doc)
                for i in range(3)]
    features = []
    squad_data.convert_examples_to_features(examples, tokenizer, 16, 4, 8, False,
                                            features.append, progress_every=1)
    per_example = len(features) // 3
    assert per_example > 1  # several windows each
    assert _messages(info_logs, "SQuAD features:")[0].startswith(
        "SQuAD features: 1/3 examples (%d features), " % per_example)
    last = _messages(info_logs, "SQuAD features:")[-1]
    assert last.startswith("SQuAD features: 3/3 examples (%d features), " % len(features))
    assert last.endswith(", done") and len(_messages(info_logs, "SQuAD features:")) == 3


# ----------------------------------------------------------------- export


@pytest.fixture
def encoder_checkpoint(tmp_path, vocab_file):
    config = tiny_config()
    prefix = write_init_checkpoint(config, str(tmp_path / "ckpt" / "bert_model.ckpt"))
    return config, prefix


@pytest.mark.slow
def test_export_logs_each_phase_with_its_time(tmp_path, vocab_file, encoder_checkpoint,
                                              info_logs):
    config, prefix = encoder_checkpoint
    final_dir = saved_model.export_saved_model("encoder", config, vocab_file, True, prefix,
                                               str(tmp_path / "export"), max_seq_length=8,
                                               version=1)
    phases = [re.sub(r" \([\d.hms]+, elapsed [\d.hms]+\)$", "", line)
              for line in _messages(info_logs, "export:")]
    assert phases == [
        "export: inputs checked (task encoder, checkpoint %s)" % prefix,
        "export: checkpoint loaded into the encoder model",
        "export: serving module built (tokenizer tables, signatures serve_features, "
        "serve_text_a, serving_default)",
        "export: signatures traced and SavedModel saved",
        "export: written to %s" % final_dir,
    ]
    assert all(re.search(r"\(\d+\.\ds, elapsed \d+\.\ds\)$", line)
               for line in _messages(info_logs, "export:"))


@pytest.mark.slow
def test_tfhub_export_logs_each_phase(tmp_path, vocab_file, encoder_checkpoint, info_logs):
    config, prefix = encoder_checkpoint
    hub.export_tfhub(config, vocab_file, True, prefix, str(tmp_path / "hub"), 8)
    phases = [re.sub(r" \([\d.hms]+, elapsed [\d.hms]+\)$", "", line)
              for line in _messages(info_logs, "TF Hub export:")]
    assert phases == ["TF Hub export: preprocessor traced and saved",
                      "TF Hub export: checkpoint loaded into the encoder",
                      "TF Hub export: encoder traced",
                      "TF Hub export: encoder saved"]
    assert all(line.endswith("s)") for line in _messages(info_logs, "TF Hub export:"))
