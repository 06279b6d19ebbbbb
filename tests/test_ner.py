"""Named entities (bert-run-ner, BertTokenClassifier): the data, learning, windows, Keras, export.

* The features: the first sub-token of each word is labelled (`label_mask`
  1), each word once, in its max-context window (run_squad's rule).
* A 1-layer model fine-tuned by `run_ner` on synthetic CoNLL files (known
  words are entities, some of them two sub-tokens) finds the entities far
  above chance; the records, the checkpoint's variable names and the output
  files are checked; conlleval's scores of its predictions are seqeval's.
* Keras's `evaluate` on the same checkpoint and data gives the tool's
  metrics; `predict_words` gives the tool's labels, a sentence longer than
  max_seq_length included (every word labelled, from its max-context window).
* Bad input (a wrong column count, an unseen label, an empty file, no
  train.txt) is one line naming the file (and line), with nothing written.
* The export (slow) answers raw text with the labels and entities of
  `predict_entities`, offsets included, in a TensorFlow-only process.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.tasks.token_classification import data_conlleval as conlleval
from bert_tf.tasks.token_classification import data as ner_data
from bert_tf.data import squad_windows
from bert_tf.modeling import checkpoint
from bert_tf.tasks.token_classification.model import BertTokenClassifier
from tests import bare_tf
from tests.test_ner_metrics import seqeval_scores
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import write_config
from tests.tools import toolrun
from tests.squad_reference import check_is_max_context

# Entities of the synthetic task: (words, type). "Johnson" and "Parisville" are two
# sub-tokens each (john ##son, paris ##ville); "Jordan" is a person or a place at random,
# so no model is always right.
ENTITIES = [(["John"], "PER"), (["Mary"], "PER"), (["John", "Smith"], "PER"),
            (["Johnson"], "PER"), (["Paris"], "LOC"), (["Berlin"], "LOC"),
            (["Parisville"], "LOC"), (["Acme", "Corp"], "ORG"), (["Globex"], "ORG"),
            (["Jordan"], "PER"), (["Jordan"], "LOC")]
FILLER = ["the", "a", "today", "we", "saw", "met", "visited", "in", "and", "with", "said",
          "big", "new", "old", "at"]
MAX_SEQ_LENGTH = 16


def _sentence(rng):
    words, labels = [], []
    for _ in range(rng.randint(1, 3)):
        for _ in range(rng.randint(1, 4)):
            words.append(FILLER[rng.randint(len(FILLER))])
            labels.append("O")
        entity, kind = ENTITIES[rng.randint(len(ENTITIES))]
        words.extend(entity)
        labels.extend(["B-" + kind] + ["I-" + kind] * (len(entity) - 1))
    return words, labels


def _write_conll(path, sentences, extra_columns=True):
    lines = ["-DOCSTART- -X- -X- O\n" if extra_columns else "-DOCSTART- O\n", "\n"]
    for words, labels in sentences:
        for word, label in zip(words, labels):
            lines.append("%s NN I-NP %s\n" % (word, label) if extra_columns
                         else "%s %s\n" % (word, label))
        lines.append("\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(lines))


def _long_sentence(rng, num_parts=6):
    words, labels = [], []
    for _ in range(num_parts):
        w, l = _sentence(rng)
        words += w
        labels += l
    return words, labels


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ner")
    data_dir = tmp / "conll"
    os.makedirs(data_dir)
    rng = np.random.RandomState(0)
    _write_conll(data_dir / "train.txt", [_sentence(rng) for _ in range(96)])
    _write_conll(data_dir / "dev.txt", [_sentence(rng) for _ in range(24)])
    # The test file: short sentences and one far longer than max_seq_length (windows).
    test = [_sentence(rng) for _ in range(6)] + [_long_sentence(rng)]
    _write_conll(data_dir / "test.txt", test, extra_columns=False)
    words = sorted({w.lower() for w in FILLER} | {"john", "mary", "smith", "paris", "berlin",
                                                    "acme", "corp", "globex", "jordan"})
    vocab_file = str(tmp / "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
                          + ["##son", "##ville"]) + "\n")
    config = one_layer_config(vocab_size=7 + len(words), initializer_range=0.2)
    return {"tmp": tmp, "data_dir": str(data_dir), "vocab": vocab_file, "test": test,
            "config": write_config(config, str(tmp / "bert_config.json"))}


def _flags(files, output_dir, **overrides):
    values = {
        "do_train": "true", "do_eval": "true", "do_predict": "true",
        "data_dir": files["data_dir"], "vocab_file": files["vocab"],
        "bert_config_file": files["config"], "max_seq_length": MAX_SEQ_LENGTH,
        "doc_stride": 5, "train_batch_size": 8, "learning_rate": 3e-3,
        "num_train_epochs": 3.0, "eval_batch_size": 8, "predict_batch_size": 8,
        "output_dir": str(output_dir),
    }
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


@pytest.fixture(scope="module")
def trained(files):
    """One run_ner on the synthetic files: its output_dir and results."""
    output_dir = files["tmp"] / "out"
    tf.keras.utils.set_random_seed(0)
    results, log = toolrun.run_tool("run_ner", _flags(files, output_dir))
    return {"output_dir": output_dir, "results": results, "log": log}


def _model(files, output_dir):
    """The run's model, read back as a user reads it, with the run's windows."""
    import bert_tf
    model = bert_tf.from_pretrained(str(output_dir), head="token_classification",
                                    bert_config_file=files["config"],
                                    vocab_file=files["vocab"]).model
    model.max_seq_length, model.doc_stride = MAX_SEQ_LENGTH, 5
    return model


def _read_predictions(path):
    """[[(word, gold, predicted)]] of a predictions file (a blank line after each sentence)."""
    with open(path, encoding="utf-8") as f:
        blocks = f.read().split("\n\n")
    assert blocks[-1] == ""
    return [[tuple(line.split(" ")) for line in block.split("\n")] for block in blocks[:-1]]


# ------------------------------------------------------------------ features


def test_features_label_each_words_first_sub_token_once_in_its_max_context_window(files):
    tokenizer = tokenization.FullTokenizer(files["vocab"])
    rng = np.random.RandomState(5)
    for max_seq_length, doc_stride in ((8, 2), (10, 3), (16, 5), (64, 64)):
        words, _ = _long_sentence(rng)
        label_ids = list(range(len(words)))
        features = ner_data.convert_sentence(3, words, label_ids, tokenizer, max_seq_length,
                                             doc_stride)
        pieces = ner_data.word_pieces(tokenizer, words)
        tokens = [t for p in pieces for t in p]
        first = np.cumsum([0] + [len(p) for p in pieces])[:-1]
        spans = squad_windows.doc_spans(len(tokens), max_seq_length - 2, doc_stride)
        assert len(features) == len(spans) and (len(spans) > 1) == (len(tokens) > max_seq_length - 2)
        seen = []
        for index, feature in enumerate(features):
            assert feature.sentence_index == 3 and len(feature.input_ids) == max_seq_length
            assert feature.input_ids[0] == tokenizer.vocab["[CLS]"]
            for position in np.flatnonzero(feature.label_mask):
                word = feature.word_indexes[position]
                token = spans[index].start + position - 1
                assert token == first[word]
                assert check_is_max_context(spans, index, token)
                assert feature.label_ids[position] == label_ids[word]
                seen.append(word)
        assert seen == list(range(len(words)))  # every word once, in order


def test_split_words_gives_the_basic_tokenizers_words_with_offsets():
    text = "EU rejects  German call,to boycott (British) lamb.\u00a0Über-cool 東京"
    words = ner_data.split_words(text)
    assert [w for w, _, _ in words] == ["EU", "rejects", "German", "call", ",", "to", "boycott",
                                        "(", "British", ")", "lamb", ".", "Über", "-", "cool",
                                        "東", "京"]
    assert all(text[start:end] == word for word, start, end in words)
    basic = tokenization.BasicTokenizer(do_lower_case=False)
    assert [w for w, _, _ in words] == basic.tokenize(text)


# ------------------------------------------------------------------ the tool


@pytest.mark.slow
def test_run_ner_learns_the_entities_and_writes_its_files(files, trained):
    output_dir = trained["output_dir"]
    with open(output_dir / "eval_results.txt") as f:
        results = dict(line.split(" = ") for line in f.read().splitlines())
    assert sorted(results) == ["eval_accuracy", "eval_loss", "f1", "global_step", "loss",
                               "precision", "recall"]
    # Chance: every word "O" finds no entity (f1 0); the synthetic entities are learnable
    # but for "Jordan" (a person or a place at random: about 0.83 at best on this dev set).
    assert float(results["f1"]) > 0.75, results
    assert float(results["eval_accuracy"]) > 0.9, results
    assert int(results["global_step"]) == int(96 / 8 * 3)
    assert ner_data.read_labels(str(output_dir / "labels.txt")) == [
        "O", "B-LOC", "B-ORG", "B-PER", "I-ORG", "I-PER"]

    # eval_predictions.txt: every dev word with its gold label; conlleval on it is eval_results'.
    dev = ner_data.read_conll(os.path.join(files["data_dir"], "dev.txt"))
    rows = _read_predictions(output_dir / "eval_predictions.txt")
    assert [[(w, g) for w, g, _ in r] for r in rows] == [
        list(zip(s.words, s.labels)) for s in dev]
    gold = [[g for _, g, _ in r] for r in rows]
    predicted = [[p for _, _, p in r] for r in rows]
    assert gold != predicted  # some mistakes to score
    scores = conlleval.evaluate(gold, predicted)
    reference = seqeval_scores(gold, predicted)  # the reference scorer on a real run's labels
    for key in ("precision", "recall", "f1"):
        assert float(results[key]) == pytest.approx(scores[key], abs=1e-6), key
        assert scores[key] == pytest.approx(reference[key], abs=1e-12), key

    # test_predictions.txt: every word of every test sentence, the long one's too.
    rows = _read_predictions(output_dir / "test_predictions.txt")
    assert [[(w, g) for w, g, _ in r] for r in rows] == [
        list(zip(w, l)) for w, l in files["test"]]

    # The records: int64 features of run_classifier's kind, one per window.
    spec = ner_data.name_to_features(MAX_SEQ_LENGTH)
    records = list(tf.data.TFRecordDataset(str(output_dir / "predict.tf_record")))
    assert len(records) > len(files["test"])  # the long sentence's windows
    parsed = tf.io.parse_single_example(records[0], spec)
    example = tf.train.Example.FromString(records[0].numpy())
    assert sorted(example.features.feature) == sorted(ner_data.FEATURE_NAMES)
    assert all(example.features.feature[k].WhichOneof("kind") == "int64_list"
               for k in ner_data.FEATURE_NAMES)
    for name in ("input_ids", "input_mask", "segment_ids", "label_ids", "label_mask"):
        assert parsed[name].shape == (MAX_SEQ_LENGTH,), name
    words = files["test"][0][0]
    assert int(parsed["label_mask"].numpy().sum()) == len(words)
    assert int(parsed["sentence_ids"]) == 0 and int(parsed["is_real_example"]) == 1

    # The checkpoint: the backbone's names and run_classifier's unscoped head.
    shapes = dict(tf.train.list_variables(tf.train.latest_checkpoint(str(output_dir))))
    assert shapes["output_weights"] == [6, 32] and shapes["output_bias"] == [6]
    config = one_layer_config(vocab_size=len(tokenization.load_vocab(files["vocab"])))
    expected = checkpoint.expected_tf1_variables(config, head="classifier", num_labels=6)
    model_names = {n for n in shapes if not checkpoint.is_optimizer_variable(n)}
    assert model_names == set(expected)


@pytest.mark.slow
def test_keras_evaluate_and_predict_words_agree_with_the_tool(files, trained):
    output_dir = trained["output_dir"]
    model = _model(files, output_dir)
    assert model.labels == ner_data.read_labels(str(output_dir / "labels.txt"))
    with open(output_dir / "eval_results.txt") as f:
        results = {k: float(v) for k, v in (line.split(" = ") for line in f.read().splitlines())}
    dev = ner_data.read_conll(os.path.join(files["data_dir"], "dev.txt"))
    features = ner_data.convert_sentences(dev, model.labels, model.tokenizer, MAX_SEQ_LENGTH, 5)
    x = {k: np.array([getattr(f, k) for f in features], np.int32)
         for k in ("input_ids", "input_mask", "segment_ids", "label_mask")}
    x["sentence_ids"] = np.array([f.sentence_index for f in features], np.int32)
    y = np.array([f.label_ids for f in features], np.int32)
    model.compile(optimizer="adam")
    keras_results = model.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    for key in ("eval_loss", "eval_accuracy", "precision", "recall", "f1"):
        assert keras_results[key] == pytest.approx(results[key], abs=1e-5), key

    # Labels -1 where no word starts: the same loss as label_mask.
    y_ignored = np.where(x["label_mask"] > 0, y, -1)
    without_mask = {k: v for k, v in x.items() if k != "label_mask"}
    again = model.evaluate(without_mask, y_ignored, batch_size=8, return_dict=True, verbose=0)
    assert again["eval_loss"] == pytest.approx(keras_results["eval_loss"], rel=1e-5)

    # predict_words: the tool's test labels, the long sentence's (windows) included.
    rows = _read_predictions(output_dir / "test_predictions.txt")
    predicted = model.predict_words([w for w, _ in files["test"]])
    assert predicted == [[p for _, _, p in r] for r in rows]
    assert len(predicted[-1]) > MAX_SEQ_LENGTH  # the long sentence: every word labelled

    # Each word's label is the argmax at its first sub-token in its max-context window.
    words = files["test"][-1][0]
    long_features = ner_data.convert_sentence(0, words, None, model.tokenizer, MAX_SEQ_LENGTH, 5)
    logits = model({k: np.array([getattr(f, k) for f in long_features], np.int32)
                    for k in ("input_ids", "input_mask", "segment_ids")})["logits"].numpy()
    by_word = {}
    for row, feature in enumerate(long_features):
        for position, word in feature.word_indexes.items():
            by_word[word] = model.labels[int(np.argmax(logits[row, position]))]
    assert [by_word[i] for i in range(len(words))] == predicted[-1]

    # predict_entities: character offsets into the text.
    text = "We met John Smith in Parisville and Acme Corp ."
    entities = model.predict_entities(text)
    assert all(text[e["start"]:e["end"]] == e["text"] for e in entities)
    assert {(e["entity"], e["text"]) for e in entities} >= {("PER", "John Smith"),
                                                            ("LOC", "Parisville")}


@pytest.mark.slow
def test_keras_fit_trains_on_dicts_of_features(files):
    tf.keras.utils.set_random_seed(2)
    tokenizer = tokenization.FullTokenizer(files["vocab"])
    train = ner_data.read_conll(os.path.join(files["data_dir"], "train.txt"))
    labels = ner_data.get_labels(train)
    features = ner_data.convert_sentences(train, labels, tokenizer, MAX_SEQ_LENGTH, 5)
    x = {k: np.array([getattr(f, k) for f in features], np.int32)
         for k in ("input_ids", "input_mask", "segment_ids", "label_mask", "label_ids")}
    config = one_layer_config(vocab_size=len(tokenizer.vocab), initializer_range=0.2)
    model = BertTokenClassifier(config, len(labels), labels=labels)
    from bert_tf.training.optimization import create_optimizer
    model.compile(optimizer=create_optimizer(3e-3, 48, 4))
    history = model.fit(x, batch_size=16, epochs=8, verbose=0)
    assert history.history["accuracy"][-1] > 0.9
    outputs = model.predict(x, batch_size=16, verbose=0)
    assert outputs["predictions"].shape == x["input_ids"].shape
    assert outputs["logits"].shape == x["input_ids"].shape + (len(labels),)
    again = BertTokenClassifier.from_config(model.get_config())
    assert again.labels == labels and again.num_labels == len(labels)


def test_the_loss_counts_only_each_words_first_sub_token():
    """The loss and the metrics are the mean over the `label_mask` positions only.

    A word's continuation sub-tokens, [CLS], [SEP] (input_mask 1, label_mask
    0) and padding carry label 1, which the model finds unlikely (its bias
    favours label 0), while every labelled position carries label 0: a loss
    that counts any unlabelled position is far above the hand-computed one.
    """
    tf.keras.utils.set_random_seed(0)
    model = BertTokenClassifier(one_layer_config(), num_labels=3)
    model.classifier.output_bias.assign([4.0, 0.0, 0.0])
    # [CLS] w ##a w ##b ##c [SEP] pad / [CLS] w w ##a ##b [SEP] pad pad
    input_mask = np.array([[1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 0, 0]], np.int32)
    label_mask = np.array([[0, 1, 0, 1, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0, 0, 0]], np.int32)
    features = {"input_ids": np.array([[2, 10, 11, 12, 13, 14, 3, 0],
                                       [2, 15, 16, 17, 18, 3, 0, 0]], np.int32),
                "input_mask": input_mask, "segment_ids": np.zeros_like(input_mask),
                "label_mask": label_mask,
                "label_ids": np.where(label_mask > 0, 0, 1).astype(np.int32)}
    assert (label_mask < input_mask).sum() == 9  # unlabelled sub-tokens, [CLS], [SEP]

    logits = model(features)["logits"].numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    labelled = label_mask > 0
    expected = -log_probs[..., 0][labelled].mean()
    everywhere = -np.take_along_axis(log_probs, features["label_ids"][..., None], -1).mean()
    assert everywhere > expected + 1.0  # the labels elsewhere would move the loss

    task = model.make_task()
    tensors = {k: tf.constant(v) for k, v in features.items()}
    loss, sums = task.compute_loss(model, tensors, task.loss_normalizers(tensors),
                                   training=False)
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert float(sums["words"]) == labelled.sum() == float(sums["correct"])
    tensors["is_real_example"] = tf.ones([2], tf.int32)
    eval_sums = task.eval_step(model, tensors)
    assert float(eval_sums["weight"]) == labelled.sum()
    assert float(eval_sums["loss_sum"]) / labelled.sum() == pytest.approx(expected, rel=1e-5)

    # Keras: evaluate on the feature dict and on (x, y) give the same mean.
    model.compile(optimizer="adam")
    x = {k: v for k, v in features.items() if k != "label_ids"}
    results = model.evaluate(x, features["label_ids"], batch_size=2, return_dict=True,
                             verbose=0)
    assert results["eval_loss"] == pytest.approx(expected, rel=1e-5)
    assert results["eval_accuracy"] == 1.0


# ------------------------------------------------------------------ bad input


def _copy_with(files, name, edit, edited="dev.txt", drop=()):
    data_dir = files["tmp"] / name
    os.makedirs(data_dir)
    for split in ("train.txt", "dev.txt", "test.txt"):
        if split in drop:
            continue
        with open(os.path.join(files["data_dir"], split), encoding="utf-8") as f:
            lines = f.read().splitlines(True)
        if split == edited:
            edit(lines)
        with open(data_dir / split, "w", encoding="utf-8") as f:
            f.write("".join(lines))
    return str(data_dir)


def test_bad_input_gives_one_line_errors_before_anything_is_written(files):
    def set_line(number, text):
        return lambda lines: lines.__setitem__(number - 1, text)

    wrong_count = _copy_with(files, "wrong_count", set_line(4, "Paris NN B-LOC\n"))
    one_column = _copy_with(files, "one_column", set_line(4, "Paris\n"))
    unseen = _copy_with(files, "unseen", set_line(3, "Rome NN I-NP B-CITY\n"))
    empty = _copy_with(files, "empty", lambda lines: lines.__setitem__(
        slice(None), ["-DOCSTART- -X- -X- O\n", "\n"]), edited="test.txt")
    no_train = _copy_with(files, "no_train", lambda lines: None, drop=("train.txt",))
    cases = [
        ("wrong column count", {"data_dir": wrong_count},
         "%s line 4: 3 columns, but the file's first line has 4"
         % os.path.join(wrong_count, "dev.txt")),
        ("one column", {"data_dir": one_column},
         "%s line 4: 1 column, but a line holds a word and its label"
         % os.path.join(one_column, "dev.txt")),
        ("unseen label", {"data_dir": unseen},
         "%s line 3: label B-CITY was not seen in training" % os.path.join(unseen, "dev.txt")),
        ("empty file", {"data_dir": empty},
         "%s: no sentence" % os.path.join(empty, "test.txt")),
        ("no train.txt", {"data_dir": no_train},
         "%s: no such file" % os.path.join(no_train, "train.txt")),
        ("no labels without training", {"do_train": "false"}, "no labels.txt in --output_dir"),
    ]
    argvs = [(name, _flags(files, files["tmp"] / ("bad_%d" % index), **overrides))
             for index, (name, overrides, _) in enumerate(cases)]
    results = toolrun.user_errors_here("run_ner", argvs)
    for index, (name, _, expected) in enumerate(cases):
        message = results[name]
        assert message is not None and "\n" not in message, (name, message)
        assert expected in message, (name, message)
        assert not (files["tmp"] / ("bad_%d" % index)).exists(), name


def test_a_bad_conll_file_is_one_line_before_tensorflow_loads(files):
    """The tool reads the CoNLL files before it imports the run (and TensorFlow with it):
    a bad file is one line in a fraction of a second, not after TensorFlow's start."""
    data_dir = _copy_with(files, "early", lambda lines: lines.__setitem__(3, "Paris\n"))
    output_dir = files["tmp"] / "early_out"
    code = ("import sys\nfrom bert_tf.tools import run_ner\n"
            "rc = run_ner.main(['run_ner'] + sys.argv[1:])\n"
            "print(rc, 'tensorflow' in sys.modules)\n")
    # --verbosity=1: no stderr filter, so main returns its status where TensorFlow
    # has not loaded (after it has, it ends the process at once).
    rc, out, err = toolrun.run([sys.executable, "-c", code, "--verbosity=1"]
                               + _flags(files, output_dir, data_dir=data_dir))
    assert rc == 0 and out.split() == ["2", "False"], (out, err[-3000:])
    assert err.splitlines()[-1].startswith(
        "error: %s line 4: 1 column, but a line holds a word and its label"
        % os.path.join(data_dir, "dev.txt")), err
    assert not output_dir.exists()


@pytest.mark.slow
def test_cli_exits_2_on_an_unseen_label(files):
    data_dir = _copy_with(files, "cli_unseen", lambda lines: lines.__setitem__(
        2, "Rome NN I-NP B-CITY\n"))
    output_dir = files["tmp"] / "cli"
    tool = os.path.join(toolrun.REPO_ROOT, "tools", "run_ner.py")
    rc, _, err = toolrun.run([sys.executable, tool] + _flags(files, output_dir,
                                                             data_dir=data_dir))
    assert rc == 2, err[-3000:]
    assert "line 3: label B-CITY was not seen in training" in err and "Traceback" not in err
    assert not output_dir.exists()


# ------------------------------------------------------------------ the export

_BARE_SERVE = bare_tf.PRELUDE + r'''
import json
export, texts_file, out = sys.argv[1:4]
texts = json.load(open(texts_file))
serve = tf.saved_model.load(export).signatures["serving_default"]
got = serve(text_a=tf.constant(texts))
rows = []
for i in range(len(texts)):
    n, k = int(got["num_words"][i]), int(got["num_entities"][i])
    rows.append({
        "words": [w.decode() for w in got["words"][i][:n].numpy()],
        "labels": [w.decode() for w in got["labels"][i][:n].numpy()],
        "word_start": got["word_start"][i][:n].numpy().tolist(),
        "entities": [{"entity": t.decode(), "text": x.decode(), "start": int(s), "end": int(e)}
                     for t, x, s, e in zip(got["entity_types"][i][:k].numpy(),
                                           got["entity_texts"][i][:k].numpy(),
                                           got["entity_start"][i][:k].numpy(),
                                           got["entity_end"][i][:k].numpy())]})
json.dump({"rows": rows, "inputs": sorted(serve.structured_input_signature[1]),
           "blocked": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)},
          open(out, "w"))
'''


@pytest.mark.slow
def test_the_export_serves_keras_predict_entities_to_a_plain_tensorflow_process(
        files, trained, tmp_path):
    import json
    output_dir = trained["output_dir"]
    export_dir, _ = toolrun.run_tool("export_saved_model", [
        "--task_name=ner", "--init_checkpoint=%s" % output_dir,
        "--bert_config_file=%s" % files["config"], "--vocab_file=%s" % files["vocab"],
        "--max_seq_length=%d" % MAX_SEQ_LENGTH, "--doc_stride=5",
        "--export_dir=%s" % (tmp_path / "export"), "--version=1"])
    long_text = " ".join(files["test"][-1][0]) + " , with Jordan!"
    texts = ["We met John Smith in Parisville and Acme Corp .", "", "  Globex\u00a0said: Mary",
             "B\u00e9rlin \u00fcber Johnson's caf\u00e9 \u6771", long_text]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    bare_tf.run_script(_BARE_SERVE, [export_dir, tmp_path / "texts.json", tmp_path / "out.json"],
                       tmp_path)
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["blocked"] == [] and got["inputs"] == ["text_a"]
    model = _model(files, output_dir)
    entities = model.predict_entities(texts)
    for text, row, want in zip(texts, got["rows"], entities):
        words = ner_data.split_words(text)
        assert row["words"] == [w for w, _, _ in words]
        assert row["word_start"] == [s for _, s, _ in words]
        assert row["labels"] == (model.predict_words([w for w, _, _ in words]) if words else [])
        assert row["entities"] == [{k: e[k] for k in ("entity", "text", "start", "end")}
                                   for e in want]
    assert len(got["rows"][-1]["words"]) > MAX_SEQ_LENGTH and got["rows"][0]["entities"]
