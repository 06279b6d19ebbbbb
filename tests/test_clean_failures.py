"""A run that fails on a user's mistake leaves `output_dir` as it found it.

* A `bert_config_file` that is not the checkpoint's (another hidden_size or
  vocab_size) is refused by run_classifier, run_squad, run_pretraining and
  extract_features with one line naming the flag, the variable and the
  shapes, before anything is written: a new `output_dir` is not created, an
  existing one keeps its files, byte for byte, and gets no new one. A resumed
  run checks the checkpoint it resumes from (`--output_dir`'s, strictly:
  another num_hidden_layers too), not `--init_checkpoint`, which is checked as
  the original's `init_from_checkpoint` loads it (the layers both have).
* A failure after the records are written but before training or prediction
  produce anything (here: a checkpoint whose data file is missing, which the
  index alone does not show) removes the records this run wrote, and the
  directory if this run made it; what was there before stays.
* `fileio.InputFiles` itself: what a run produced (a checkpoint) is never
  removed; neither is anything that was there before.
* The tool as a user runs it: `error: ...` as the last line, exit status 2,
  no output_dir.
"""

import os
import shutil
import sys

import numpy as np
import pytest

from bert_tf import fileio
from bert_tf.modeling.config import BertConfig
from bert_tf.data import demo_corpus
from bert_tf.data import vocab
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.runs import extract_features
from bert_tf.tasks.classifier import run as run_classifier
from bert_tf.tasks.pretraining import run as run_pretraining
from bert_tf.tasks.squad import run as run_squad
from bert_tf.training.schedule import Schedule
from tests.test_pretraining import MAX_PREDICTIONS
from tests.test_pretraining import SEQ_LENGTH
from tests.test_pretraining import random_batches
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_init_checkpoint
from tests.test_pretraining import write_records
from tests.tools import toolrun
from tests.squad_task import write_squad_task

CONFIG_HINT = "(is bert_config_file the checkpoint's config?)"
# 16 variables per Transformer layer.
LAYER_VARIABLES = 16


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny MRPC-layout task, SQuAD file and pre-training records; vocab, configs, checkpoint."""
    tmp = tmp_path_factory.mktemp("clean_failures")
    data_dir = str(tmp / "MRPC")
    demo_corpus.write_sentence_pair_task(
        data_dir, sizes=(("train.tsv", 16), ("dev.tsv", 6), ("test.tsv", 5)))
    squad_file = str(tmp / "train-v1.1.json")
    write_squad_task(squad_file, 8)
    vocab_file = str(tmp / "vocab.txt")
    tokens = vocab.build_vocab([os.path.join(data_dir, "train.tsv")], vocab_file,
                               vocab_size=200, lower_thresh=2)
    config = tiny_config(vocab_size=len(tokens))
    ckpt = write_init_checkpoint(config, str(tmp / "init" / "bert_model.ckpt"))
    # The same checkpoint without its data file: its index (names and shapes)
    # is whole, its values cannot be read.
    no_data = tmp / "no_data"
    no_data.mkdir()
    shutil.copy(ckpt + ".index", str(no_data / "bert_model.ckpt.index"))
    configs = {"right": write_config(config, str(tmp / "bert_config.json"))}
    for name, overrides in (("hidden_size", {"hidden_size": 48}),
                            ("vocab_size", {"vocab_size": len(tokens) + 8}),
                            ("more_layers", {"num_hidden_layers": 3}),
                            ("fewer_layers", {"num_hidden_layers": 1})):
        values = dict({"vocab_size": len(tokens)}, **overrides)
        configs[name] = write_config(tiny_config(**values),
                                     str(tmp / ("bert_config_%s.json" % name)))
    return {"tmp": tmp, "data_dir": data_dir, "squad": squad_file, "vocab": vocab_file,
            "vocab_size": len(tokens), "ckpt": ckpt, "no_data": str(no_data / "bert_model.ckpt"),
            "configs": configs,
            "records": write_records(str(tmp / "records.tfrecord"),
                                     random_batches(1, seed=3, vocab_size=len(tokens)))}


def _expected(files, wrong, flag="init_checkpoint", ckpt=None):
    """The one-line message for the config `wrong` against the tiny checkpoint."""
    where = "--%s=%s" % (flag, ckpt or files["ckpt"])
    v = files["vocab_size"]
    return {
        "hidden_size": "%s: variable bert/embeddings/word_embeddings has shape [%d, 32] in the "
                       "checkpoint but [%d, 48] in the model %s" % (where, v, v, CONFIG_HINT),
        "vocab_size": "%s: variable bert/embeddings/word_embeddings has shape [%d, 32] in the "
                      "checkpoint but [%d, 32] in the model %s" % (where, v, v + 8, CONFIG_HINT),
        "more_layers": "%s: variable bert/encoder/layer_2/attention/self/query/kernel (shape "
                       "[32, 32]) is missing from the checkpoint (and %d more) %s"
                       % (where, LAYER_VARIABLES - 1, CONFIG_HINT),
        "fewer_layers": "%s: checkpoint variable bert/encoder/layer_1/attention/output/LayerNorm/"
                        "beta (shape [32]) has no place in the model (and %d more) %s"
                        % (where, LAYER_VARIABLES - 1, CONFIG_HINT),
    }[wrong]


def _snapshot(directory):
    """{relative path: (bytes, mtime_ns)} of everything under `directory`, or None."""
    if not os.path.isdir(directory):
        return None
    result = {}
    for root, dirs, names in os.walk(directory):
        for name in dirs + names:
            path = os.path.join(root, name)
            key = os.path.relpath(path, directory)
            if os.path.isdir(path):
                result[key + "/"] = None
            else:
                with open(path, "rb") as f:
                    result[key] = (f.read(), os.stat(path).st_mtime_ns)
    return result


def _earlier_run(directory):
    """An output_dir holding an earlier run's files (no checkpoint)."""
    os.makedirs(directory)
    with open(os.path.join(directory, "train.tf_record"), "wb") as f:
        f.write(b"an earlier run's records")
    with open(os.path.join(directory, "notes.txt"), "w") as f:
        f.write("mine\n")
    return _snapshot(directory)


def _classifier(files, output_dir, config="right", **overrides):
    args = dict(task_name="MRPC", data_dir=files["data_dir"],
                bert_config_file=files["configs"][config], vocab_file=files["vocab"],
                output_dir=str(output_dir), init_checkpoint=files["ckpt"], max_seq_length=32,
                do_train=True, do_eval=True, do_predict=True,
                schedule=Schedule(train_batch_size=8, num_train_epochs=1.0))
    args.update(overrides)
    return run_classifier.run_classifier(**args)


def _squad(files, output_dir, config="right", **overrides):
    args = dict(bert_config_file=files["configs"][config], vocab_file=files["vocab"],
                output_dir=str(output_dir), train_file=files["squad"], predict_file=files["squad"],
                init_checkpoint=files["ckpt"], max_seq_length=64, doc_stride=32,
                max_query_length=16, do_train=True, do_predict=True,
                schedule=Schedule(train_batch_size=8, num_train_epochs=1.0))
    args.update(overrides)
    return run_squad.run_squad(**args)


def _pretraining(files, output_dir, config="right", **overrides):
    args = dict(bert_config_file=files["configs"][config], input_file=files["records"],
                output_dir=str(output_dir), init_checkpoint=files["ckpt"],
                max_seq_length=SEQ_LENGTH, max_predictions_per_seq=MAX_PREDICTIONS,
                do_train=True, do_eval=True, train_batch_size=8, num_train_steps=2,
                num_warmup_steps=1)
    args.update(overrides)
    return run_pretraining.run_pretraining(**args)


RUNS = {"run_classifier": _classifier, "run_squad": _squad, "run_pretraining": _pretraining}
# Another num_hidden_layers is no mistake to --init_checkpoint (the original's
# init_from_checkpoint loads the layers both have); a resume and extract_features'
# strict load refuse it (below).
WRONG = ("hidden_size", "vocab_size")


# ----------------------------------------------------------------- a config not the checkpoint's


@pytest.mark.parametrize("wrong", WRONG)
@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_config_that_is_not_the_checkpoints_is_refused_before_anything_is_written(
        files, tmp_path, run, wrong):
    new_dir = tmp_path / "new" / "output"
    with pytest.raises(UserError) as e:
        RUNS[run](files, new_dir, config=wrong)
    assert str(e.value) == _expected(files, wrong)
    assert not (tmp_path / "new").exists()

    existing = str(tmp_path / "existing")
    before = _earlier_run(existing)
    with pytest.raises(UserError) as e:
        RUNS[run](files, existing, config=wrong)
    assert str(e.value) == _expected(files, wrong)
    assert _snapshot(existing) == before


@pytest.mark.parametrize("wrong", ("hidden_size", "more_layers"))
def test_extract_features_refuses_the_config_before_it_reads_the_input(files, tmp_path, wrong):
    output_file = tmp_path / "out" / "features.jsonl"
    with pytest.raises(UserError) as e:
        # The input file is not there: the config is the first mistake named.
        extract_features.extract_features(
            str(tmp_path / "missing_input.txt"), str(output_file), files["configs"][wrong],
            files["ckpt"], files["vocab"], layers="-1", max_seq_length=16)
    assert str(e.value) == _expected(files, wrong)
    assert os.listdir(tmp_path) == []


def test_a_checkpoint_of_something_else_is_named_so(files, tmp_path):
    other = checkpoint.write_checkpoint(str(tmp_path / "other" / "model.ckpt"),
                                        {"encoder/kernel": np.zeros((4, 4), np.float32)},
                                        update_state=False)
    with pytest.raises(UserError) as e:
        _classifier(files, tmp_path / "output", init_checkpoint=other)
    assert str(e.value) == ("--init_checkpoint=%s shares no variable with the model (another "
                            "architecture, or not a BERT checkpoint?)" % other)
    assert sorted(os.listdir(tmp_path)) == ["other"]


@pytest.mark.parametrize("wrong", ("hidden_size", "more_layers", "fewer_layers"))
def test_a_resumed_run_checks_the_checkpoint_it_resumes_from(files, tmp_path, wrong):
    # output_dir holds an earlier run's checkpoint: the run would resume from
    # it (and ignore --init_checkpoint), strictly, so that is the one checked.
    output_dir = str(tmp_path / "resumed")
    _earlier_run(output_dir)
    values = checkpoint.read_checkpoint(files["ckpt"])
    resumed = checkpoint.write_checkpoint(os.path.join(output_dir, "model.ckpt-3"), values)
    before = _snapshot(output_dir)
    with pytest.raises(UserError) as e:
        _classifier(files, output_dir, config=wrong, init_checkpoint=None)
    assert str(e.value) == _expected(files, wrong, flag="output_dir", ckpt=resumed)
    assert _snapshot(output_dir) == before


def test_init_checkpoint_with_other_layers_is_checked_as_the_original_loads_it(files):
    """Not strict: the layers both have must fit; missing or extra layers are no error."""
    config = BertConfig.from_json_file(files["configs"]["more_layers"])
    assert checkpoint.check_checkpoint_fits(config, files["ckpt"], strict=False) == files["ckpt"]
    config = BertConfig.from_json_file(files["configs"]["fewer_layers"])
    assert checkpoint.check_checkpoint_fits(config, files["ckpt"], strict=False) == files["ckpt"]
    config = BertConfig.from_json_file(files["configs"]["hidden_size"])
    with pytest.raises(UserError) as e:
        checkpoint.check_checkpoint_fits(config, files["ckpt"], strict=False)
    assert str(e.value) == _expected(files, "hidden_size")


# ----------------------------------------------------------------- after the records are written


@pytest.mark.parametrize("run", ["run_classifier", "run_squad"])
def test_a_failure_before_training_removes_the_records_this_run_wrote(files, tmp_path, run):
    # The checkpoint's index fits the config; its values cannot be read, which
    # shows only when training starts from it, after the records are written.
    new_dir = tmp_path / "new"
    with pytest.raises(UserError, match="^--init_checkpoint=%s: the checkpoint's data file .* "
                                        "is missing" % files["no_data"]):
        RUNS[run](files, new_dir, init_checkpoint=files["no_data"])
    assert not new_dir.exists()

    existing = str(tmp_path / "existing")
    before = _earlier_run(existing)
    with pytest.raises(UserError, match="data file .* is missing"):
        # Prediction alone: its eval.tf_record is new, the earlier files stay.
        RUNS[run](files, existing, init_checkpoint=files["no_data"], do_train=False)
    assert _snapshot(existing) == before


def test_input_files_removes_only_what_the_block_wrote_before_it_produced_anything(tmp_path):
    existing = str(tmp_path / "existing")
    before = _earlier_run(existing)
    # Inputs written, then an error: the new input goes; what was there stays.
    with pytest.raises(RuntimeError):
        with fileio.InputFiles(existing) as inputs:
            fileio.write_text(inputs.add(os.path.join(existing, "eval.tf_record")), "new")
            fileio.write_text(inputs.add(os.path.join(existing, "train.tf_record")), "rewritten")
            raise RuntimeError("conversion failed")
    assert sorted(os.listdir(existing)) == ["notes.txt", "train.tf_record"]
    assert _snapshot(existing)["notes.txt"] == before["notes.txt"]

    # A run that produced a checkpoint keeps it, and its inputs.
    made = str(tmp_path / "made" / "output")
    with pytest.raises(RuntimeError):
        with fileio.InputFiles(made) as inputs:
            fileio.write_text(inputs.add(os.path.join(made, "train.tf_record")), "records")
            fileio.write_text(os.path.join(made, "model.ckpt-100.index"), "a checkpoint")
            raise RuntimeError("evaluation failed")
    assert sorted(os.listdir(made)) == ["model.ckpt-100.index", "train.tf_record"]

    # Only inputs: the directory and the parents the block made go too.
    with pytest.raises(RuntimeError):
        with fileio.InputFiles(str(tmp_path / "a" / "b")) as inputs:
            fileio.write_text(inputs.add(str(tmp_path / "a" / "b" / "train.tf_record")), "x")
            raise RuntimeError("restore failed")
    assert sorted(os.listdir(tmp_path)) == ["existing", "made"]

    # A process that is not the chief removes nothing.
    worker = str(tmp_path / "worker")
    with pytest.raises(RuntimeError):
        with fileio.InputFiles(worker) as inputs:
            inputs.enabled = False
            fileio.write_text(inputs.add(os.path.join(worker, "train.tf_record")), "x")
            raise RuntimeError("a worker failed")
    assert os.listdir(worker) == ["train.tf_record"]


# ----------------------------------------------------------------- the tool


@pytest.mark.slow
def test_the_tool_prints_one_error_line_exits_2_and_writes_nothing(files, tmp_path):
    output_dir = tmp_path / "output"
    flags = {"task_name": "MRPC", "do_train": "true", "do_eval": "true", "do_predict": "true",
             "data_dir": files["data_dir"], "vocab_file": files["vocab"],
             "bert_config_file": files["configs"]["hidden_size"],
             "init_checkpoint": files["ckpt"], "max_seq_length": 32,
             "output_dir": str(output_dir)}
    rc, _, err = toolrun.run([sys.executable, os.path.join(toolrun.REPO_ROOT, "tools",
                                                           "run_classifier.py")]
                             + ["--%s=%s" % item for item in flags.items()])
    assert rc == 2, err[-3000:]
    assert "Traceback" not in err
    assert err.rstrip("\n").splitlines()[-1] == "error: " + _expected(files, "hidden_size")
    assert not output_dir.exists()
