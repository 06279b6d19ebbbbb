"""Multi-label classification: the loss, the metrics, learning, and run_classifier --multi_label.

* The loss is NumPy's binary cross-entropy of the sigmoid, averaged over the
  labels, on the same logits; the metrics equal counts made by hand.
* A 1-layer model learns a synthetic task whose labels say which key words
  a sequence holds (Keras `fit` / `evaluate` / `predict`), far above the
  all-zero and all-one baselines; the model's config round-trips.
* `run_classifier --task_name=multilabel --multi_label` trains, evaluates
  and predicts: multi-hot [num_labels] `label_ids` records, eval_results.txt
  with the multi-label keys, test_results.tsv one column per label (in the
  order of labels.txt); bad inputs are one-line errors before anything is
  written.
* The export (slow): the serving signatures return per-label probabilities,
  the multi-hot predictions and the labels over the threshold.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.tasks.classifier import data_processors as classifier_processors
from bert_tf.errors import UserError
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.classifier.model import multi_label_example_loss
from bert_tf.tasks.classifier.model import multi_label_metrics
from bert_tf.training.optimization import create_optimizer
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.tools import toolrun


# ------------------------------------------------------------------ loss and metrics


def test_loss_is_numpys_binary_cross_entropy_mean_over_labels():
    rng = np.random.RandomState(0)
    logits = rng.normal(0.0, 3.0, (5, 4)).astype(np.float32)
    labels = rng.randint(0, 2, (5, 4)).astype(np.int32)
    loss, probabilities = multi_label_example_loss(tf.constant(logits), tf.constant(labels))
    p = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    expected = np.mean(-labels * np.log(p) - (1 - labels) * np.log(1 - p), axis=-1)
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(probabilities.numpy(), p, rtol=1e-5)


def test_metrics_equal_counts_by_hand():
    # 4 examples, 3 labels; predicted = probability >= 0.5 (0.5 itself counts).
    probabilities = np.array([[0.9, 0.2, 0.5],    # predicts {0, 2}
                              [0.1, 0.8, 0.3],    # {1}
                              [0.6, 0.7, 0.1],    # {0, 1}
                              [0.2, 0.4, 0.49]])  # {}
    labels = np.array([[1, 0, 1],    # exact
                       [0, 1, 1],    # misses 2
                       [1, 0, 0],    # extra 1
                       [0, 0, 1]])   # misses 2
    # Label 0: tp 2 (ex 0, 2), fp 0, fn 0 -> F1 1.
    # Label 1: tp 1 (ex 1), fp 1 (ex 2), fn 0 -> F1 2/3.
    # Label 2: tp 1 (ex 0), fp 0, fn 2 (ex 1, 3) -> F1 2/4 = 1/2.
    # Micro: tp 4, fp 1, fn 2 -> precision 4/5, recall 4/6, F1 8/11.
    results = multi_label_metrics(probabilities, labels, 0.5)
    assert results["micro_precision"] == pytest.approx(0.8)
    assert results["micro_recall"] == pytest.approx(4 / 6)
    assert results["micro_f1"] == pytest.approx(8 / 11)
    assert results["macro_f1"] == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    assert results["exact_match"] == pytest.approx(0.25)
    # Threshold 0.45: example 3 now predicts {2} (0.49), exactly its labels.
    results = multi_label_metrics(probabilities, labels, 0.45)
    assert results["exact_match"] == pytest.approx(0.5)
    assert results["micro_f1"] == pytest.approx(2 * 5 / (2 * 5 + 1 + 1))


# ------------------------------------------------------------------ learning (Keras)

KEY_WORDS = (10, 11, 12)  # label j: token KEY_WORDS[j] is in the sequence
SEQ_LENGTH = 8


def synthetic_task(num_examples, seed):
    """Features and multi-hot labels: [CLS] 5 tokens [SEP], label j iff key word j is there."""
    rng = np.random.RandomState(seed)
    input_ids = np.zeros((num_examples, SEQ_LENGTH), np.int32)
    labels = np.zeros((num_examples, len(KEY_WORDS)), np.int32)
    for i in range(num_examples):
        words = list(rng.randint(20, 99, 5))
        present = rng.rand(len(KEY_WORDS)) < 0.5
        slots = rng.permutation(5)
        for j in np.flatnonzero(present):
            words[slots[j]] = KEY_WORDS[j]
        labels[i] = present
        input_ids[i, :7] = [1] + words + [2]
    features = {"input_ids": input_ids,
                "input_mask": (input_ids > 0).astype(np.int32),
                "segment_ids": np.zeros_like(input_ids)}
    return features, labels


@pytest.mark.slow
def test_a_tiny_model_learns_which_key_words_are_there():
    tf.keras.utils.set_random_seed(1)
    config = one_layer_config(initializer_range=0.2)
    model = BertClassifier(config, len(KEY_WORDS), multi_label=True)
    x, y = synthetic_task(256, seed=0)
    x_dev, y_dev = synthetic_task(64, seed=1)
    steps = 8 * 256 // 32
    model.compile(optimizer=create_optimizer(3e-3, steps, steps // 10))
    model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    results = model.evaluate(x_dev, y_dev, batch_size=32, return_dict=True, verbose=0)
    assert set(results) >= {"eval_loss", "micro_f1", "macro_f1", "micro_precision",
                            "micro_recall", "exact_match", "loss"}
    # All-zero predictions have micro F1 0; all-one about 2p / (1 + p) ~ 0.67.
    all_ones = multi_label_metrics(np.ones(y_dev.shape), y_dev)["micro_f1"]
    assert results["micro_f1"] > max(0.9, all_ones + 0.2), results
    assert results["exact_match"] > 0.6, results
    outputs = model.predict(x_dev, batch_size=32, verbose=0)
    assert outputs["probabilities"].shape == (64, 3)
    np.testing.assert_array_equal(outputs["predictions"],
                                  (outputs["probabilities"] >= 0.5).astype(np.int32))

    # The config round trip keeps multi_label and the threshold.
    config_dict = model.get_config()
    assert config_dict["multi_label"] is True and config_dict["threshold"] == 0.5
    again = BertClassifier.from_config(dict(config_dict, threshold=0.7))
    assert again.multi_label and again.threshold == 0.7 and again.make_task().multi_label


def test_keras_refuses_labels_that_are_not_multi_hot():
    from bert_tf.errors import UserError
    model = BertClassifier(one_layer_config(), 3, multi_label=True)
    model.compile(optimizer="adam")
    x, _ = synthetic_task(4, seed=0)
    with pytest.raises(UserError, match=r"multi-hot labels \[n, 3\]"):
        model.evaluate(x, np.array([0, 1, 2, 1]), verbose=0)
    with pytest.raises(UserError, match="multi-hot labels are 0 or 1"):
        model.evaluate(x, np.full((4, 3), 2), verbose=0)


# ------------------------------------------------------------------ run_classifier

TOPICS = {"sport": ["ball", "goal", "team"], "music": ["song", "band", "guitar"],
          "food": ["bread", "soup", "cheese"]}
FILLER = ["the", "a", "today", "we", "saw", "new", "old", "big", "small", "and"]
LABELS = ["music", "sport", "food"]  # labels.txt: its order, not sorted


def _write_task(data_dir, seed=3, sizes=(("train.tsv", 36), ("dev.tsv", 10), ("test.tsv", 7))):
    rng = np.random.RandomState(seed)
    os.makedirs(data_dir)
    for name, count in sizes:
        lines = []
        for _ in range(count):
            topics = [t for t in LABELS if rng.rand() < 0.5] or [LABELS[rng.randint(3)]]
            words = [str(w) for w in rng.choice(FILLER, 4)]
            for t in topics:
                words.append(str(rng.choice(TOPICS[t])))
            rng.shuffle(words)
            lines.append("%s\t%s\n" % (" ".join(words), ",".join(topics)))
        with open(os.path.join(data_dir, name), "w", encoding="utf-8") as f:
            f.write("".join(lines))
    with open(os.path.join(data_dir, "labels.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(LABELS) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("multi_label")
    data_dir = str(tmp / "topics")
    _write_task(data_dir)
    words = sorted(set(FILLER) | {w for ws in TOPICS.values() for w in ws})
    vocab_file = str(tmp / "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    config = one_layer_config(vocab_size=5 + len(words), initializer_range=0.2)
    return {"tmp": tmp, "data_dir": data_dir, "vocab": vocab_file,
            "config": write_config(config, str(tmp / "bert_config.json"))}


def _flags(files, output_dir, **overrides):
    values = {
        "task_name": "multilabel", "multi_label": "true", "do_train": "true",
        "do_eval": "true", "do_predict": "true", "data_dir": files["data_dir"],
        "vocab_file": files["vocab"], "bert_config_file": files["config"],
        "max_seq_length": 16, "train_batch_size": 6, "learning_rate": 1e-3,
        "num_train_epochs": 1.0, "eval_batch_size": 4, "predict_batch_size": 4,
        "output_dir": str(output_dir),
    }
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


@pytest.mark.slow
def test_run_classifier_multi_label_writes_its_files(files):
    output_dir = files["tmp"] / "out"
    toolrun.run_tool("run_classifier", _flags(files, output_dir))
    with open(output_dir / "eval_results.txt") as f:
        keys = [line.split(" = ")[0] for line in f.read().splitlines()]
    assert set(keys) >= {"eval_loss", "micro_f1", "macro_f1", "micro_precision",
                         "micro_recall", "exact_match", "global_step"}
    assert "eval_accuracy" not in keys
    with open(output_dir / "test_results.tsv") as f:
        rows = [line.split("\t") for line in f.read().splitlines()]
    assert len(rows) == 7 and all(len(row) == len(LABELS) for row in rows)
    assert all(0.0 <= float(p) <= 1.0 for row in rows for p in row)
    # The records: multi-hot label_ids [num_labels] in labels.txt's order.
    spec = classifier_data.name_to_features(16, num_labels=len(LABELS))
    record = next(iter(tf.data.TFRecordDataset(str(output_dir / "eval.tf_record"))))
    parsed = tf.io.parse_single_example(record, spec)
    with open(os.path.join(files["data_dir"], "dev.tsv")) as f:
        first_labels = f.readline().rstrip("\n").split("\t")[-1].split(",")
    np.testing.assert_array_equal(parsed["label_ids"].numpy(),
                                  [int(label in first_labels) for label in LABELS])


def test_labels_come_from_train_tsv_without_labels_txt(files, tmp_path):
    processor = classifier_processors.get_processor("multilabel")
    data_dir = str(tmp_path / "no_labels_txt")
    _write_task(data_dir)
    os.remove(os.path.join(data_dir, "labels.txt"))
    assert processor.read_labels(data_dir) == sorted(LABELS)
    examples = processor.get_dev_examples(data_dir)
    assert all(isinstance(e.label, list) and e.label for e in examples)


def test_every_row_has_its_files_first_rows_columns(tmp_path):
    processor = classifier_processors.get_processor("multilabel")
    data_dir = str(tmp_path / "task")
    _write_task(data_dir, sizes=(("train.tsv", 6), ("dev.tsv", 4), ("test.tsv", 3)))
    processor.read_labels(data_dir)
    train = os.path.join(data_dir, "train.tsv")
    with open(train, encoding="utf-8") as f:
        lines = f.read().splitlines(True)

    def rows_of(edited):
        with open(train, "w", encoding="utf-8") as f:
            f.write("".join(edited))
        return processor.get_train_examples(data_dir)

    # Pairs: every row text_a, text_b, labels.
    pairs = [line.replace("\t", "\tand more\t", 1) for line in lines]
    assert [e.text_b for e in rows_of(pairs)] == ["and more"] * 6
    cases = [
        (lines[:3] + [lines[3].replace("\t", "\tx\t", 1)] + lines[4:],
         "line 4: 3 tab-separated column(s), expected 2 (text_a, labels) as line 1 has"),
        (pairs[:2] + [lines[2]] + pairs[3:],
         "line 3: 2 tab-separated column(s), expected 3 (text_a, text_b, labels) as line 1 has"),
        ([lines[0].replace("\t", "\tx\ty\t", 1)] + lines[1:],
         "line 1: 4 tab-separated column(s), expected 2 (text_a, labels) or 3 (text_a, "
         "text_b, labels)"),
        (["no labels at all\n"] + lines[1:],
         "line 1: 1 tab-separated column(s), expected 2 (text_a, labels) or 3"),
    ]
    for edited, expected in cases:
        with pytest.raises(UserError) as e:
            rows_of(edited)
        assert str(e.value).startswith("%s %s" % (train, expected)), str(e.value)
    # Without labels.txt the label set is read from train.tsv, with the same check.
    os.remove(os.path.join(data_dir, "labels.txt"))
    with open(train, "w", encoding="utf-8") as f:
        f.write("".join(cases[0][0]))
    with pytest.raises(UserError) as e:
        processor.read_labels(data_dir)
    assert str(e.value).startswith("%s %s" % (train, cases[0][1])), str(e.value)


def _copy_with(files, name, edit, edited="dev.tsv"):
    data_dir = str(files["tmp"] / name)
    os.makedirs(data_dir)
    for split in ("train.tsv", "dev.tsv", "test.tsv", "labels.txt"):
        with open(os.path.join(files["data_dir"], split), encoding="utf-8") as f:
            lines = f.read().splitlines(True)
        if split == edited:
            edit(lines)
        with open(os.path.join(data_dir, split), "w", encoding="utf-8") as f:
            f.write("".join(lines))
    return data_dir


def test_bad_input_gives_one_line_errors_before_anything_is_written(files):
    def empty_labels(lines):
        lines[2] = lines[2].split("\t")[0] + "\t\n"

    def unknown_label(lines):
        lines[1] = lines[1].rstrip("\n") + ",weather\n"

    def extra_columns(lines):  # sed -i '5s/\t/\tx\ty\t/' train.tsv
        lines[4] = lines[4].replace("\t", "\tx\ty\t", 1)

    empty = _copy_with(files, "empty_labels", empty_labels)
    unknown = _copy_with(files, "unknown_label", unknown_label)
    extra = _copy_with(files, "extra_columns", extra_columns, edited="train.tsv")
    cases = [
        ("a row with extra columns", {"data_dir": extra},
         ["%s line 5: 4 tab-separated column(s), expected 2 (text_a, labels) as line 1 has"
          % os.path.join(extra, "train.tsv")]),
        ("empty label list", {"data_dir": empty},
         ["%s line 3: empty label list" % os.path.join(empty, "dev.tsv")]),
        ("label not in the label set", {"data_dir": unknown},
         ["%s line 2: label 'weather' is not one of the multilabel task's labels 'music', "
          "'sport', 'food'" % os.path.join(unknown, "dev.tsv")]),
        ("multilabel without --multi_label", {"multi_label": None},
         ["--task_name=multilabel is a multi-label task: pass --multi_label"]),
        ("threshold outside (0, 1)", {"multi_label_threshold": 1.5},
         ["--multi_label_threshold must be in (0, 1), got 1.5"]),
    ]
    argvs = [(name, _flags(files, files["tmp"] / ("bad_%d" % index), **overrides))
             for index, (name, overrides, _) in enumerate(cases)]
    results = toolrun.user_errors_here("run_classifier", argvs)
    for index, (name, _, expected) in enumerate(cases):
        message = results[name]
        assert message is not None and "\n" not in message, (name, message)
        for part in expected:
            assert part in message, (name, message)
        assert not (files["tmp"] / ("bad_%d" % index)).exists(), name


@pytest.mark.slow
def test_cli_exits_2_on_an_empty_label_list(files):
    data_dir = _copy_with(files, "cli_empty", lambda lines: lines.__setitem__(0, "text\t\n"))
    output_dir = files["tmp"] / "cli"
    tool = os.path.join(toolrun.REPO_ROOT, "tools", "run_classifier.py")
    rc, _, err = toolrun.run([sys.executable, tool] + _flags(files, output_dir,
                                                             data_dir=data_dir))
    assert rc == 2, err[-3000:]
    assert "line 1: empty label list" in err and "Traceback" not in err
    assert not output_dir.exists()


@pytest.mark.slow
def test_export_serves_per_label_probabilities_and_the_labels_over_the_threshold(files):
    from bert_tf.export.saved_model import export_saved_model
    output_dir = files["tmp"] / "out"
    if not (output_dir / "checkpoint").exists():
        toolrun.run_tool("run_classifier", _flags(files, output_dir, do_eval="false",
                                                  do_predict="false"))
    # A high threshold, then a low one: no label, then every label.
    served = {}
    for threshold in (0.999, 0.001):
        path = export_saved_model("multilabel", files["config"], files["vocab"], True,
                                  str(output_dir), str(files["tmp"] / "export"),
                                  max_seq_length=16, version=int(threshold * 1000) + 1,
                                  multi_label=True, multi_label_threshold=threshold,
                                  data_dir=files["data_dir"])
        signature = tf.saved_model.load(path).signatures["serving_default"]
        served[threshold] = signature(text_a=tf.constant(["the ball and a song", "soup"]),
                                      text_b=tf.constant(["", ""]))
    probabilities = served[0.001]["probabilities"].numpy()
    assert probabilities.shape == (2, 3)
    assert np.all((probabilities > 0.001) & (probabilities < 0.999))
    assert list(served[0.999]["label"].numpy()) == [b"", b""]
    assert list(served[0.001]["label"].numpy()) == [b"music,sport,food"] * 2
    np.testing.assert_array_equal(served[0.001]["predictions"].numpy(), np.ones((2, 3)))
    np.testing.assert_allclose(served[0.999]["probabilities"].numpy(), probabilities,
                               atol=1e-6)
