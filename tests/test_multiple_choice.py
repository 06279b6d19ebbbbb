"""Multiple choice (SWAG): bert-run-multiple-choice, BertMultipleChoice in Keras, the export.

* A 1-layer model learns a synthetic SWAG-layout task (the right ending
  names the animal of the context) through `run_multiple_choice`, far above
  chance (1 / 4): the records hold every choice's pair features flattened
  ([num_choices * max_seq_length], the classifier's feature names), the
  checkpoint run_classifier's names with one label, eval_results.txt and
  test_results.tsv (a probability per choice) run_classifier's layout.
* Keras: the same checkpoint through `from_pretrained(head="multiple_choice")`
  evaluates the dev file's raw text to the tool's eval_results.txt and
  predicts its test_results.tsv; any number of choices (2 here, 3 in Keras).
* Bad input is one line naming the file and line, before anything is
  written.
* The export (slow) answers raw text as the tool and Keras predict, in a
  process where only TensorFlow imports.
"""

import csv
import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.modeling import checkpoint
from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization import build_pair_features
from tests import bare_tf
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.tools import toolrun

ANIMALS = ["cat", "dog", "bird", "fish", "cow", "fox", "owl", "bee", "ant", "pig", "hen", "elk"]
FILLER = ["the", "a", "then", "and", "saw", "ran", "sat"]
SWAG_COLUMNS = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source"]
MAX_SEQ_LENGTH = 12


def swag_rows(count, num_choices, seed):
    """SWAG-layout rows: sent1 names an animal; the right ending names it again."""
    rng = np.random.RandomState(seed)
    rows = []
    for i in range(count):
        animal = str(rng.choice(ANIMALS))
        label = int(rng.randint(num_choices))
        endings = [str(a) for a in rng.choice([a for a in ANIMALS if a != animal], num_choices,
                                              replace=False)]
        endings[label] = animal
        sent1, sent2 = "the %s sat" % animal, "then the"
        rows.append(["v%d" % i, str(i), sent1 + " " + sent2, sent1, sent2, "gold"]
                    + ["%s ran" % e for e in endings] + [str(label)])
    return rows


def write_csv(path, rows, num_choices, label=True):
    header = SWAG_COLUMNS + ["ending%d" % i for i in range(num_choices)] + ["label"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header if label else header[:-1])
        writer.writerows(rows if label else [row[:-1] for row in rows])
    return str(path)


def write_swag(data_dir, num_choices=4, sizes=(256, 64, 5), seed=0):
    os.makedirs(data_dir, exist_ok=True)
    for (name, label), count, offset in zip((("train.csv", True), ("val.csv", True),
                                             ("test.csv", False)), sizes, range(3)):
        write_csv(os.path.join(data_dir, name), swag_rows(count, num_choices, seed + offset),
                  num_choices, label)
    return str(data_dir)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    endings = sorted(k for k in rows[0] if k.startswith("ending"))
    return ([r["sent1"] for r in rows], [r["sent2"] for r in rows],
            [[r[k] for k in endings] for r in rows], [int(r.get("label") or 0) for r in rows])


def flags(files, output_dir, **overrides):
    values = {"data_dir": files["data_dir"], "vocab_file": files["vocab"],
              "bert_config_file": files["config"], "output_dir": str(output_dir),
              "do_train": "true", "do_eval": "true", "do_predict": "true",
              "max_seq_length": MAX_SEQ_LENGTH, "train_batch_size": 16, "learning_rate": 1e-3,
              "num_train_epochs": 8.0, "eval_batch_size": 16, "predict_batch_size": 8}
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("multiple_choice")
    vocab = tmp / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                               + ANIMALS + FILLER) + "\n")
    config = one_layer_config(vocab_size=5 + len(ANIMALS) + len(FILLER), initializer_range=0.2)
    return {"tmp": tmp, "data_dir": write_swag(str(tmp / "swag")), "vocab": str(vocab),
            "config": write_config(config, str(tmp / "bert_config.json"))}


@pytest.fixture(scope="module")
def trained(files):
    """The tool's run: train (128 steps), evaluate, predict."""
    output_dir = files["tmp"] / "out"
    results, _ = toolrun.run_tool("run_multiple_choice", flags(files, output_dir))
    return output_dir, results


def _eval_results(path):
    with open(path) as f:
        return {k: float(v) for k, v in (line.split(" = ") for line in f.read().splitlines())}


def _test_results(path):
    with open(path) as f:
        return np.array([[float(p) for p in line.split("\t")] for line in f.read().splitlines()])


# ------------------------------------------------------------------ the tool


@pytest.mark.slow
def test_the_tool_learns_and_writes_run_classifiers_files(files, trained):
    output_dir, results = trained
    evaluated = _eval_results(output_dir / "eval_results.txt")
    assert set(evaluated) == {"eval_accuracy", "eval_loss", "global_step", "loss"}
    assert evaluated["global_step"] == 256 * 8 // 16
    assert evaluated["eval_accuracy"] > 0.7, evaluated  # chance: 0.25
    assert evaluated["eval_loss"] < 0.5 * np.log(4), evaluated
    probabilities = _test_results(output_dir / "test_results.tsv")
    assert probabilities.shape == (5, 4)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(np.argmax(probabilities, axis=1),
                                  results["predict"]["predictions"])

    # The records: the classifier's features, every choice's pair one after the other.
    record = next(iter(tf.data.TFRecordDataset(str(output_dir / "eval.tf_record"))))
    example = tf.train.Example.FromString(record.numpy()).features.feature
    assert sorted(example) == sorted(classifier_data.FEATURE_NAMES)
    assert all(example[k].WhichOneof("kind") == "int64_list" for k in example)
    sent1, sent2, endings, labels = read_csv(os.path.join(files["data_dir"], "val.csv"))
    tokenizer = FullTokenizer(files["vocab"], do_lower_case=True)
    want = [build_pair_features(tokenizer.tokenize(sent1[0]),
                                tokenizer.tokenize(sent2[0] + " " + ending), MAX_SEQ_LENGTH,
                                tokenizer) for ending in endings[0]]
    for key in ("input_ids", "input_mask", "segment_ids"):
        assert list(example[key].int64_list.value) == sum((getattr(f, key) for f in want), [])
    assert list(example["label_ids"].int64_list.value) == [labels[0]]
    assert list(example["is_real_example"].int64_list.value) == [1]

    # The checkpoint: the backbone and run_classifier's unscoped head with one label.
    shapes = checkpoint.list_checkpoint_variables(str(output_dir / "model.ckpt-128"))
    heads = {n: list(s) for n, s in shapes.items() if not n.startswith("bert/") and "adam" not in n
             and n != "global_step"}
    assert heads == {"output_weights": [1, 32], "output_bias": [1]}


@pytest.mark.slow
def test_keras_evaluates_and_predicts_as_the_tool(files, trained):
    output_dir, _ = trained
    _, model, _ = bert_tf.from_pretrained(str(output_dir), head="multiple_choice",
                                          bert_config_file=files["config"],
                                          vocab_file=files["vocab"],
                                          max_seq_length=MAX_SEQ_LENGTH)
    model.compile(optimizer="adam")  # evaluate() needs a compiled model
    sent1, sent2, endings, labels = read_csv(os.path.join(files["data_dir"], "val.csv"))
    x = {"context": sent1, "start": sent2, "endings": endings}
    results = model.evaluate(x, labels, batch_size=16, return_dict=True, verbose=0)
    tool = _eval_results(output_dir / "eval_results.txt")
    for key in ("eval_accuracy", "eval_loss", "loss"):
        assert results[key] == pytest.approx(tool[key], rel=1e-5), key
    # The test file, as rows of (context, start, endings).
    sent1, sent2, endings, _ = read_csv(os.path.join(files["data_dir"], "test.csv"))
    predicted = model.predict(list(zip(sent1, sent2, endings)), verbose=0)
    np.testing.assert_allclose(predicted["probabilities"],
                               _test_results(output_dir / "test_results.tsv"), atol=1e-5)
    # Any number of choices: three endings.
    three = model.predict([("the owl sat", "then the", ["fox ran", "owl ran", "cow ran"]),
                           ("the cow sat", "then the", ["cow ran", "ant ran", "pig ran"])],
                          verbose=0)
    assert three["probabilities"].shape == (2, 3)
    assert list(three["predictions"]) == [1, 0]


@pytest.mark.slow
def test_the_tool_takes_any_number_of_choices(files, trained):
    data_dir = write_swag(str(files["tmp"] / "two"), num_choices=2, sizes=(8, 20, 3), seed=7)
    output_dir = files["tmp"] / "two_out"
    toolrun.run_tool("run_multiple_choice", flags(
        files, output_dir, data_dir=data_dir, do_train="false", do_predict="false",
        init_checkpoint=str(trained[0] / "model.ckpt-128")))
    spec = classifier_data.name_to_features(2 * MAX_SEQ_LENGTH)
    record = next(iter(tf.data.TFRecordDataset(str(output_dir / "eval.tf_record"))))
    assert tf.io.parse_single_example(record, spec)["input_ids"].shape == [2 * MAX_SEQ_LENGTH]
    # The four-choice model picks the animal among two endings too.
    assert _eval_results(output_dir / "eval_results.txt")["eval_accuracy"] > 0.7


# ------------------------------------------------------------------ bad input


def test_bad_input_is_one_line_naming_the_file_and_line(files):
    tmp = files["tmp"] / "bad"
    rows = swag_rows(6, 4, seed=3)

    def data_dir(name, train=None, val=None, test=None, skip=()):
        path = tmp / name
        os.makedirs(path)
        for file, content in (("train.csv", train), ("val.csv", val), ("test.csv", test)):
            if file in skip:
                continue
            if isinstance(content, str):
                (path / file).write_text(content)
            else:
                write_csv(path / file, content or rows, 4)
        return str(path)

    header = ",".join(SWAG_COLUMNS + ["ending%d" % i for i in range(4)] + ["label"]) + "\n"
    short_row = data_dir("short_row", train=header + "v,1,s,a,b,g,e0,e1,e2,0\n")
    no_label = data_dir("no_label", val=header.replace(",label", "") + "v,1,s,a,b,g,e0,e1,e2,e3\n")
    big_label = data_dir("big_label", train=rows[:2] + [rows[2][:-1] + ["4"]])
    header_only = data_dir("header_only", val=header)
    no_test = data_dir("no_test", skip=("test.csv",))
    two_endings = data_dir("two_endings", skip=("test.csv",))
    write_csv(os.path.join(two_endings, "test.csv"), [r[:8] + ["0"] for r in rows], 2,
              label=False)
    cases = [
        ("another number of fields", short_row,
         "%s line 2: 10 fields, but the header has 11" % os.path.join(short_row, "train.csv")),
        ("no label column in dev", no_label,
         "%s line 1: the header has no label column" % os.path.join(no_label, "val.csv")),
        ("label out of range", big_label,
         "%s line 4: label '4' is not a choice (0 to 3)" % os.path.join(big_label, "train.csv")),
        ("header alone", header_only,
         "%s: no dev examples (an empty file, or its header alone)"
         % os.path.join(header_only, "val.csv")),
        ("missing file", no_test, "--data_dir=%s: no test.csv" % no_test),
        ("different numbers of endings", two_endings,
         "--data_dir=%s: the files have different numbers of endings (test.csv: 2, "
         "train.csv: 4, val.csv: 4)" % two_endings),
    ]
    argvs = [(name, flags(files, tmp / ("out_%d" % i), data_dir=path))
             for i, (name, path, _) in enumerate(cases)]
    errors = toolrun.user_errors_here("run_multiple_choice", argvs)
    for i, (name, _, expected) in enumerate(cases):
        assert errors[name] is not None and "\n" not in errors[name], (name, errors[name])
        assert expected in errors[name], (name, errors[name])
        assert not (tmp / ("out_%d" % i)).exists(), name


@pytest.mark.slow
def test_the_command_line_exits_2_with_one_line(files):
    data_dir = str(files["tmp"] / "cli")
    os.makedirs(data_dir)
    write_csv(os.path.join(data_dir, "train.csv"), swag_rows(3, 4, 0)[:2] + [["x"]], 4)
    output_dir = files["tmp"] / "cli_out"
    tool = os.path.join(toolrun.REPO_ROOT, "tools", "run_multiple_choice.py")
    rc, _, err = toolrun.run([sys.executable, tool] + flags(
        files, output_dir, data_dir=data_dir, do_eval="false", do_predict="false"))
    assert rc == 2, err[-3000:]
    assert "train.csv line 4: 1 fields, but the header has 11" in err and "Traceback" not in err
    assert not output_dir.exists()


# ------------------------------------------------------------------ the export

_BARE_SERVE = bare_tf.PRELUDE + r'''
import json
export, inputs_file, out = sys.argv[1:4]
inputs = json.load(open(inputs_file))
serve = tf.saved_model.load(export).signatures["serving_default"]
got = serve(context=tf.constant(inputs["context"]), start=tf.constant(inputs["start"]),
            endings=tf.constant(inputs["endings"]))
json.dump({"probabilities": got["probabilities"].numpy().tolist(),
           "predictions": got["predictions"].numpy().tolist(),
           "inputs": sorted(serve.structured_input_signature[1]),
           "blocked": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)},
          open(out, "w"))
'''


@pytest.mark.slow
def test_the_export_answers_raw_text_as_the_tool_and_keras_predict(files, trained, tmp_path):
    output_dir, _ = trained
    export_dir, _ = toolrun.run_tool("export_saved_model", [
        "--task_name=multiple_choice", "--init_checkpoint=%s" % output_dir,
        "--bert_config_file=%s" % files["config"], "--vocab_file=%s" % files["vocab"],
        "--max_seq_length=%d" % MAX_SEQ_LENGTH, "--export_dir=%s" % (tmp_path / "export"),
        "--version=1"])
    sent1, sent2, endings, _ = read_csv(os.path.join(files["data_dir"], "test.csv"))
    inputs = {"context": sent1, "start": sent2, "endings": endings}
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    bare_tf.run_script(_BARE_SERVE, [export_dir, tmp_path / "inputs.json",
                                     tmp_path / "out.json"], tmp_path)
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["blocked"] == [] and got["inputs"] == ["context", "endings", "start"]
    # test_results.tsv: the tool's predictions, which Keras predict gives too (above).
    want = _test_results(output_dir / "test_results.tsv")
    np.testing.assert_allclose(np.array(got["probabilities"]), want, atol=1e-5)
    assert got["predictions"] == np.argmax(want, axis=1).tolist()
