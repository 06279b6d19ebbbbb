"""Long documents for classification: run_classifier --doc_stride, BertClassifier(doc_stride=...), the export.

A synthetic SST-2-layout task: a document of filler words is positive when
the word "key" is anywhere in it. Documents are several windows long
(max_seq_length 16: a window holds 14 tokens; --doc_stride 7: 3 windows). The dev set is
twins: a negative document, and the same document with "key" put past its
first 14 tokens; truncated, the twins are the same record, so a model that
reads the first window alone is at exactly 50% on them.

* One module-scoped run of `run_classifier --doc_stride=7` (train, eval,
  predict) on a 1-layer model; it learns the task, while the same weights
  evaluated without --doc_stride (truncated) are at chance on the twins.
* The records: every token of every document in some window, in order,
  `document_index` on each, the first window the truncated record.
* The edges, in the records, the graph's windows and Keras on raw text: an
  empty text is one empty window (none of its neighbours' tokens), a text
  exactly a window's room long one window, one token more two.
* eval_results.txt and test_results.tsv equal the mean of the windows'
  logits computed here from the records (Keras on the checkpoint).
* Keras `predict` on the raw text and the export (a TensorFlow-only
  process) give test_results.tsv's probabilities.
* A bad --doc_stride, or a pair task with --doc_stride, is a one-line error
  before anything is written.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.data import text_windows
from bert_tf.modeling import checkpoint as checkpoint_lib
from bert_tf.modeling.config import BertConfig
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tokenization.preprocessor import BertPreprocessor
from tests import bare_tf
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.tools import toolrun

SEQ_LENGTH = 16  # a window: [CLS] 14 tokens [SEP]
DOC_STRIDE = 7
DOC_LENGTH = 24  # 3 windows: tokens 0-13, 7-20, 14-23
FILLER = ["w%02d" % i for i in range(24)]
KEY = "key"


def _document(rng, key_at=None):
    words = [str(w) for w in rng.choice(FILLER, DOC_LENGTH)]
    if key_at is not None:
        words[key_at] = KEY
    return " ".join(words)


def _write_task(data_dir, rng):
    """SST-2's layout: train/dev `sentence<TAB>label`, test `index<TAB>sentence`."""
    os.makedirs(data_dir)
    train = []
    for i in range(64):
        positive = i % 2 == 1
        train.append((_document(rng, rng.randint(DOC_LENGTH) if positive else None), int(positive)))
    dev = []
    for _ in range(12):  # twins: the same text, "key" past the first window or not
        words = _document(rng).split()
        late = list(words)
        late[rng.randint(SEQ_LENGTH, DOC_LENGTH)] = KEY
        dev += [(" ".join(words), 0), (" ".join(late), 1)]
    test = [_document(rng, key_at) for key_at in (None, 2, 22, None, 17, 9, None)]
    test.append(" ".join(["w01"] * 5))  # short: one window
    for name, rows in (("train.tsv", train), ("dev.tsv", dev)):
        with open(os.path.join(data_dir, name), "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n" + "".join("%s\t%d\n" % row for row in rows))
    with open(os.path.join(data_dir, "test.tsv"), "w", encoding="utf-8") as f:
        f.write("index\tsentence\n" + "".join("%d\t%s\n" % row for row in enumerate(test)))
    return [text for text, _ in dev], test


def _flags(files, output_dir, **overrides):
    values = {
        "task_name": "sst-2", "do_train": "true", "do_eval": "true", "do_predict": "true",
        "data_dir": files["data_dir"], "vocab_file": files["vocab"],
        "bert_config_file": files["config"], "max_seq_length": SEQ_LENGTH,
        "doc_stride": DOC_STRIDE, "train_batch_size": 16, "learning_rate": 2e-3,
        "num_train_epochs": 10.0, "warmup_proportion": 0.1, "eval_batch_size": 8,
        "predict_batch_size": 8, "save_checkpoints_steps": 10000,
        "output_dir": str(output_dir),
    }
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("long_documents")
    data_dir = str(tmp / "keyword")
    dev, test = _write_task(data_dir, np.random.RandomState(0))
    vocab_file = str(tmp / "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", KEY] + FILLER) + "\n")
    config = one_layer_config(vocab_size=6 + len(FILLER), initializer_range=0.2)
    return {"tmp": tmp, "data_dir": data_dir, "vocab": vocab_file, "dev": dev, "test": test,
            "config": write_config(config, str(tmp / "bert_config.json"))}


@pytest.fixture(scope="module")
def trained(files):
    """run_classifier --doc_stride: train, eval, predict."""
    output_dir = files["tmp"] / "windows"
    tf.keras.utils.set_random_seed(0)  # the initial weights and the shuffle
    result, _ = toolrun.run_tool("run_classifier", _flags(files, output_dir))
    return {"dir": output_dir, "result": result,
            "checkpoint": checkpoint_lib.resolve_checkpoint(str(output_dir))}


@pytest.fixture(scope="module")
def preprocessor(files):
    return BertPreprocessor(files["vocab"], max_seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def keras_model(files, trained, preprocessor):
    """BertClassifier(doc_stride=...) with the run's weights."""
    model = BertClassifier(BertConfig.from_json_file(files["config"]), 2,
                           preprocessor=preprocessor, doc_stride=DOC_STRIDE)
    checkpoint_lib.load_checkpoint(model, trained["checkpoint"])
    return model


def _eval_results(path):
    with open(path) as f:
        return {k: float(v) for k, v in (line.split(" = ") for line in f.read().splitlines())}


def _test_results(path):
    with open(path) as f:
        return np.array([[float(x) for x in line.split("\t")] for line in f.read().splitlines()])


def _records(path, windows=True):
    spec = classifier_data.name_to_features(SEQ_LENGTH, windows=windows)
    serialized = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
    parsed = tf.io.parse_example(tf.constant(serialized), spec)
    return serialized, {k: v.numpy() for k, v in parsed.items()}


def _softmax(logits):
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def _window_logits(model, records):
    """Each record's logits (features are rows, windows or not)."""
    features = {k: records[k].astype(np.int32) for k in ("input_ids", "input_mask",
                                                        "segment_ids")}
    return model.predict(features, batch_size=64, verbose=0)["logits"]


# ------------------------------------------------------------------ the records


@pytest.mark.slow
def test_every_token_is_in_a_window_and_every_window_names_its_document(files, trained,
                                                                        preprocessor):
    tokenizer = tokenization.FullTokenizer(files["vocab"], do_lower_case=True)
    _, records = _records(trained["dir"] / "predict.tf_record")
    index = records[text_windows.DOCUMENT_INDEX]
    assert list(np.unique(index)) == list(range(len(files["test"])))
    assert np.all(np.diff(index) >= 0)
    for d, text in enumerate(files["test"]):
        ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
        windows = records["input_ids"][index == d]
        covered = []
        for span, row in zip(text_windows.spans(len(ids), SEQ_LENGTH, DOC_STRIDE), windows):
            # [CLS] the span's tokens [SEP], and the span starts every DOC_STRIDE tokens.
            assert list(row[1:1 + span.length]) == ids[span.start:span.start + span.length]
            assert row[0] == 2 and row[1 + span.length] == 3
            covered += range(span.start, span.start + span.length)
        assert sorted(set(covered)) == list(range(len(ids)))
        assert len(windows) == (3 if len(ids) == DOC_LENGTH else 1)
    # The graph's windows (Keras, the export) are these records.
    graph = text_windows.window_features(
        preprocessor.tokenizer.tokenize(tf.constant(files["test"])), SEQ_LENGTH, DOC_STRIDE,
        preprocessor.tokenizer.cls_id, preprocessor.tokenizer.sep_id)
    for key in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(graph[key].numpy(), records[key])
    np.testing.assert_array_equal(graph[text_windows.TEXT_INDEX].numpy(), index)


def test_an_empty_text_a_full_window_and_one_token_past_it_are_cut_exactly(files,
                                                                           preprocessor):
    """The edges of the windows, in the records, the graph and Keras on raw text.

    An empty text is one empty window (`[CLS] [SEP]`, its neighbours' tokens
    not in it); a text of exactly a window's room (14 tokens) is one window;
    one token more is two (tokens 0-13 and 7-14).
    """
    full = ["w%02d" % i for i in range(SEQ_LENGTH - 2)]
    texts = ["", " ".join(full), " ".join(full + ["w20"]), "", "w01 w02"]
    ids = [[FILLER.index(w) + 6 for w in t.split()] for t in texts]
    assert [text_windows.spans(len(i), SEQ_LENGTH, DOC_STRIDE) for i in ids[:3]] == [
        [(0, 0)], [(0, 14)], [(0, 14), (7, 8)]]
    windows = [[], ids[1], ids[2][:14], ids[2][7:], [], ids[4]]
    want = np.zeros((len(windows), SEQ_LENGTH), np.int64)
    for row, window in zip(want, windows):
        row[:len(window) + 2] = [2] + window + [3]

    # run_classifier's records.
    tokenizer = tokenization.FullTokenizer(files["vocab"], do_lower_case=True)
    records = [w for i, t in enumerate(texts) for w in classifier_data.convert_example_windows(
        i, classifier_data.InputExample(str(i), t, label="0"), ["0", "1"], SEQ_LENGTH,
        tokenizer, DOC_STRIDE)]
    np.testing.assert_array_equal([r.input_ids for r in records], want)
    np.testing.assert_array_equal([r.input_mask for r in records], want > 0)
    assert [r.document_index for r in records] == [0, 1, 2, 2, 3, 4]

    # The graph's (BertClassifier on raw text, the export).
    graph = text_windows.window_features(
        preprocessor.tokenizer.tokenize(tf.constant(texts)), SEQ_LENGTH, DOC_STRIDE,
        preprocessor.tokenizer.cls_id, preprocessor.tokenizer.sep_id)
    np.testing.assert_array_equal(graph["input_ids"].numpy(), want)
    np.testing.assert_array_equal(graph["input_mask"].numpy(), want > 0)
    np.testing.assert_array_equal(graph[text_windows.TEXT_INDEX].numpy(), [0, 1, 2, 2, 3, 4])

    # One row per text, each the mean of its windows' logits.
    tf.keras.utils.set_random_seed(0)
    model = BertClassifier(BertConfig.from_json_file(files["config"]), 2,
                           preprocessor=preprocessor, doc_stride=DOC_STRIDE)
    by_text = model.predict(texts, batch_size=8, verbose=0)["logits"]
    by_window = model.predict({"input_ids": want.astype(np.int32),
                               "input_mask": (want > 0).astype(np.int32),
                               "segment_ids": np.zeros_like(want, np.int32)},
                              batch_size=8, verbose=0)["logits"]
    np.testing.assert_allclose(by_text, [by_window[0], by_window[1], by_window[2:4].mean(0),
                                         by_window[4], by_window[5]], atol=1e-5)


@pytest.mark.slow
def test_windows_learn_what_truncation_cannot_see(files, trained):
    windows = _eval_results(trained["dir"] / "eval_results.txt")
    # 24 documents: 17 right and a loss below chance's log 2.
    assert windows["eval_accuracy"] >= 0.7 and windows["eval_loss"] < 0.6, windows
    # The same weights without --doc_stride: the twins' records are the same, so
    # their predictions are too, and exactly one of each twin is right.
    truncated_dir = files["tmp"] / "truncated"
    toolrun.run_tool("run_classifier", _flags(
        files, truncated_dir, do_train="false", do_predict="false", doc_stride=None,
        init_checkpoint=trained["checkpoint"]))
    assert _eval_results(truncated_dir / "eval_results.txt")["eval_accuracy"] == 0.5
    # Truncated records are the original's (no document_index), each the first window.
    truncated, parsed = _records(truncated_dir / "eval.tf_record", windows=False)
    assert len(truncated) == len(files["dev"])
    assert set(tf.train.Example.FromString(truncated[0]).features.feature) == set(
        classifier_data.FEATURE_NAMES)
    _, windowed = _records(trained["dir"] / "eval.tf_record")
    first = np.flatnonzero(np.diff(windowed[text_windows.DOCUMENT_INDEX], prepend=-1))
    for key in ("input_ids", "input_mask", "segment_ids", "label_ids"):
        np.testing.assert_array_equal(parsed[key], windowed[key][first])


# ------------------------------------------------------------------ per-document results


@pytest.mark.slow
def test_results_are_the_mean_of_the_windows_logits(files, trained, keras_model):
    # Evaluation: each document's mean logits, its softmax loss and its argmax.
    _, records = _records(trained["dir"] / "eval.tf_record")
    logits = _window_logits(keras_model, records).astype(np.float64)
    index = records[text_windows.DOCUMENT_INDEX]
    documents = np.unique(index)
    mean = np.stack([logits[index == d].mean(axis=0) for d in documents])
    labels = np.array([records["label_ids"][index == d][0] for d in documents])
    log_probs = np.log(_softmax(mean))
    loss = -log_probs[np.arange(len(labels)), labels].mean()
    results = _eval_results(trained["dir"] / "eval_results.txt")
    assert results["eval_accuracy"] == pytest.approx(np.mean(mean.argmax(-1) == labels))
    assert results["eval_loss"] == pytest.approx(loss, rel=1e-5)
    assert results["loss"] == pytest.approx(loss, rel=1e-5)
    # Prediction: one row per test example, the softmax of its mean logits.
    _, records = _records(trained["dir"] / "predict.tf_record")
    logits = _window_logits(keras_model, records).astype(np.float64)
    index = records[text_windows.DOCUMENT_INDEX]
    mean = np.stack([logits[index == d].mean(axis=0) for d in np.unique(index)])
    written = _test_results(trained["dir"] / "test_results.tsv")
    assert written.shape == (len(files["test"]), 2)
    np.testing.assert_allclose(written, _softmax(mean), atol=1e-6)
    np.testing.assert_allclose(trained["result"]["predict"]["probabilities"], written,
                               atol=1e-6)


@pytest.mark.parametrize("kind", ["regression", "multi_label"])
def test_regression_and_multi_label_documents_are_their_windows_mean_logits(kind):
    from bert_tf.tasks.classifier import model as classifier
    task = classifier.ClassifierTask(one_layer_config(), num_labels=3,
                                     is_regression=kind == "regression",
                                     multi_label=kind == "multi_label", per_document=True)
    rng = np.random.RandomState(7)
    index = np.array([0, 0, 0, 1, 2, 2, 3, 3])  # four documents, one to three windows each
    width = 1 if kind == "regression" else 3
    logits = rng.normal(size=(len(index), width)).astype(np.float32)
    if kind == "regression":
        labels = rng.normal(size=4).astype(np.float32)[index]
    else:
        labels = rng.randint(2, size=(4, 3)).astype(np.int32)[index]
    outputs = {"logits": logits, "label_ids": labels, text_windows.DOCUMENT_INDEX: index}
    mean = np.stack([logits[index == d].mean(axis=0) for d in range(4)])
    documents = task.document_outputs(outputs)
    np.testing.assert_allclose(documents["logits"], mean, rtol=1e-6)
    results = task.eval_results_from_predictions(outputs)
    if kind == "regression":
        np.testing.assert_allclose(documents["score"], mean[:, 0], rtol=1e-6)
        want = classifier.pearson(mean[:, 0], labels[[0, 3, 4, 6]])
        assert results["pearson"] == pytest.approx(want)
        assert results["eval_loss"] == pytest.approx(
            np.mean((mean[:, 0] - labels[[0, 3, 4, 6]]) ** 2), rel=1e-5)
    else:
        probabilities = 1 / (1 + np.exp(-mean))
        np.testing.assert_allclose(documents["probabilities"], probabilities, rtol=1e-5)
        want = classifier.multi_label_metrics(probabilities, labels[[0, 3, 4, 6]])
        assert results["micro_f1"] == pytest.approx(want["micro_f1"])
        assert results["exact_match"] == pytest.approx(want["exact_match"])


@pytest.mark.slow
def test_keras_predict_on_raw_text_gives_one_row_per_text(files, trained, keras_model):
    model = keras_model
    outputs = model.predict(files["test"], batch_size=3, verbose=0)
    written = _test_results(trained["dir"] / "test_results.tsv")
    np.testing.assert_allclose(outputs["probabilities"], written, atol=1e-6)
    # The config round trip keeps the stride.
    again = BertClassifier.from_config(model.get_config())
    assert again.doc_stride == DOC_STRIDE and again.make_task().per_document


_SERVE = bare_tf.PRELUDE + r'''
import json
module = tf.saved_model.load(sys.argv[1])
texts = json.load(open(sys.argv[2], encoding="utf-8"))
outputs = module.signatures["serving_default"](text_a=tf.constant(texts))
json.dump({"probabilities": outputs["probabilities"].numpy().tolist(),
           "label": [x.decode() for x in outputs["label"].numpy()],
           "signatures": sorted(module.signatures),
           "doc_stride": int(module.doc_stride.numpy()),
           "modules": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)},
          open(sys.argv[3], "w"))
'''


@pytest.mark.slow
def test_the_export_windows_in_the_graph_as_the_tool(files, trained):
    import json
    path = toolrun.run_tool("export_saved_model", [
        "--task_name=sst-2", "--bert_config_file=" + files["config"],
        "--vocab_file=" + files["vocab"], "--init_checkpoint=" + str(trained["dir"]),
        "--export_dir=" + str(files["tmp"] / "export"), "--max_seq_length=%d" % SEQ_LENGTH,
        "--doc_stride=%d" % DOC_STRIDE, "--version=1"])[0]
    texts_file = str(files["tmp"] / "texts.json")
    with open(texts_file, "w", encoding="utf-8") as f:
        json.dump(files["test"], f)
    out = str(files["tmp"] / "served.json")
    bare_tf.run_script(_SERVE, [path, texts_file, out], files["tmp"])
    with open(out, encoding="utf-8") as f:
        served = json.load(f)
    assert served["modules"] == []
    assert served["doc_stride"] == DOC_STRIDE
    assert set(served["signatures"]) >= {"serving_default", "serve_text_a", "serve_features"}
    written = _test_results(trained["dir"] / "test_results.tsv")
    np.testing.assert_allclose(served["probabilities"], written, atol=1e-6)
    assert served["label"] == [str(i) for i in written.argmax(-1)]


# ------------------------------------------------------------------ mistakes


def test_a_bad_doc_stride_is_one_line_before_anything_is_written(files, preprocessor):
    mrpc_dir = str(files["tmp"] / "mrpc")
    os.makedirs(mrpc_dir)
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        with open(os.path.join(mrpc_dir, name), "w", encoding="utf-8") as f:
            f.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tw01 w02\tw03\n")
    cases = [
        ("zero", {"doc_stride": 0}, "--doc_stride=0: must be a positive integer, the tokens "
                                    "from the start of one window to the next"),
        ("negative", {"doc_stride": -3}, "--doc_stride=-3: must be a positive"),
        ("pairs", {"task_name": "mrpc", "data_dir": mrpc_dir},
         "--doc_stride cuts single texts into windows, but --task_name=mrpc has text pairs"),
    ]
    argvs = [(name, _flags(files, files["tmp"] / ("bad_%d" % i), **overrides))
             for i, (name, overrides, _) in enumerate(cases)]
    results = toolrun.user_errors_here("run_classifier", argvs)
    for i, (name, _, expected) in enumerate(cases):
        message = results[name]
        assert message is not None and "\n" not in message and expected in message, (
            name, message)
        assert not (files["tmp"] / ("bad_%d" % i)).exists(), name
    from bert_tf.errors import UserError
    config = BertConfig.from_json_file(files["config"])
    with pytest.raises(UserError, match="BertClassifier: doc_stride=0: must be a positive"):
        BertClassifier(config, 2, preprocessor=preprocessor, doc_stride=0)
    # Without a preprocessor the model reads window records (run_classifier --doc_stride's):
    # its task evaluates per document, and raw text asks for a preprocessor.
    records_model = BertClassifier(config, 2, doc_stride=7)
    assert records_model.task.per_document
    assert not BertClassifier(config, 2).task.per_document
    with pytest.raises(UserError, match="for raw text, build the model with preprocessor="):
        records_model.predict(["w01 w02"], verbose=0)
    model = BertClassifier(config, 2, preprocessor=preprocessor, doc_stride=7)
    with pytest.raises(UserError, match="cuts single texts into windows, not pairs"):
        model.predict({"text_a": ["w01"], "text_b": ["w02"]}, verbose=0)


def test_every_task_checks_its_stride_by_one_rule_and_defaults_it_in_one_place():
    """`text_windows.check_doc_stride` is the one rule (run_classifier, run_ner, run_squad,
    the models, the exports); `text_windows.DOC_STRIDES` the one default of each task,
    which its tool, its library function, its model and its export share."""
    import inspect
    from bert_tf.errors import UserError
    from bert_tf.tasks.squad.serving import SquadServingModule
    from bert_tf.tasks.token_classification.run import run_ner
    from bert_tf.tasks.squad.run import run_squad
    from bert_tf.tasks.squad.run import validate_flags_or_throw
    from bert_tf.tasks.token_classification.model import BertTokenClassifier
    from bert_tf.tools import export_saved_model as export_tool
    from bert_tf.tools import run_classifier as classifier_tool
    from bert_tf.tools import run_ner as ner_tool
    from bert_tf.tools import run_squad as squad_tool
    from tests.test_layout import library_files_matching

    # No stride compared anywhere else.
    assert library_files_matching(r"doc_stride\s*(<|>|<=|>=)\s*\d") == [
        "bert_tf/data/text_windows.py"]
    assert library_files_matching(r"def check_doc_stride\b") == ["bert_tf/data/text_windows.py"]
    message = r"doc_stride=0: must be a positive integer, the tokens from the start of one"
    with pytest.raises(UserError, match="^BertTokenClassifier: " + message):
        BertTokenClassifier(one_layer_config(), 3, doc_stride=0)
    with pytest.raises(UserError, match="^--" + message):
        validate_flags_or_throw(one_layer_config(), "bert_config.json", True, None, True,
                                "train.json", False, None, 64, 16, 0, 20, 30, 8)
    assert text_windows.check_doc_stride(np.int64(5)) == 5
    assert text_windows.check_doc_stride(None, optional=True) is None

    def flag_default(tool):
        return next(f.default for f in tool.TOOL.flags if f.name == "doc_stride")

    def argument_default(function, name="doc_stride"):
        return inspect.signature(function).parameters[name].default

    strides = text_windows.DOC_STRIDES
    assert flag_default(squad_tool) == argument_default(run_squad) == strides["squad"]
    assert argument_default(SquadServingModule.__init__) == strides["squad"]
    assert flag_default(ner_tool) == argument_default(run_ner) == strides["ner"]
    assert argument_default(BertTokenClassifier.__init__) == strides["ner"]
    assert flag_default(classifier_tool) is strides["classifier"] is None
    assert argument_default(BertClassifier.__init__) is None
    # The export's flag is unset: its stride is the run's, else the task's (test_run_record.py).
    assert flag_default(export_tool) is None
