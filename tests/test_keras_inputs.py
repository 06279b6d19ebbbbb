"""The task models' Keras data: every form a Keras user writes, in fit / evaluate / predict.

bert_tf/tasks/keras_data.py (`UserData`, what `TaskModel` hands to Keras). A `BertClassifier`
with a `BertPreprocessor` takes raw text as lists (of str or bytes), tuples,
NumPy arrays (str, bytes, object), pandas Series and DataFrames, string
Tensors, dicts of these and batched `tf.data.Dataset`s; pairs as a
`(texts_a, texts_b)` tuple, a list of `(text_a, text_b)` rows, an [n, 2]
array or a dict; labels as lists, tuples, NumPy arrays, Series, Tensors or a
dict. Each form gives what the canonical string Tensors and int32 labels
give:

* `predict`: the same probabilities;
* `evaluate`: the same eval_loss and eval_accuracy (texts and labels read in
  the same order, pairs as pairs);
* `fit`: the step's loss is `evaluate`'s on the same weights (dropout 0), so
  the step saw the same examples and labels; its `validation_data`'s
  metrics are `evaluate`'s too.

The model trains with a learning rate of 0, so its weights never move and
every form compares with the one set of references the module computes.
Anything else, and an x and y (or text_a and text_b) of different lengths, is
a one-line `UserError` naming the argument and the forms it takes.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.errors import UserError
from bert_tf.models import BertClassifier
from bert_tf.models import BertPreprocessor
from bert_tf.models import BertSquad
from bert_tf.training import create_optimizer
from tests.conftest import TINY_CONFIG
from tests.conftest import make_inputs
from tests.test_keras_models import MAX_SEQ_LENGTH
from tests.test_keras_models import PAIRS
from tests.test_keras_models import VOCAB

NUM_LABELS = 3
TEXTS_A = [a for a, _ in PAIRS]
TEXTS_B = [b for _, b in PAIRS]
LABELS = [0, 1, 2, 1, 0, 2]
NUM_EXAMPLES = len(PAIRS)
# Dropout 0: a fit step's loss is then evaluate's loss on the same weights.
CONFIG = dict(TINY_CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
ATOL = 1e-5


def pandas():
    return pytest.importorskip("pandas")


# Raw text as a user writes it: name -> fn(texts_a, texts_b) -> x. `SINGLE` reads texts_a only.
SINGLE = {
    "list_of_str": lambda a, b: list(a),
    "list_of_bytes": lambda a, b: [t.encode("utf-8") for t in a],
    "tuple_of_str": lambda a, b: tuple(a),
    "numpy_str": lambda a, b: np.array(a),
    "numpy_bytes": lambda a, b: np.array([t.encode("utf-8") for t in a]),
    "numpy_object": lambda a, b: np.array(a, dtype=object),
    "numpy_column": lambda a, b: np.array(a)[:, None],
    "tensor": lambda a, b: tf.constant(a),
    "dict_text_a": lambda a, b: {"text_a": list(a)},
    "pandas_series": lambda a, b: pandas().Series(a),
    "pandas_one_column": lambda a, b: pandas().DataFrame({"sentence": a}),
}
PAIR = {
    "tuple_of_lists": lambda a, b: (list(a), list(b)),
    "tuple_of_numpy_str": lambda a, b: (np.array(a), np.array(b)),
    "tuple_of_tensors": lambda a, b: (tf.constant(a), tf.constant(b)),
    "list_of_pairs": lambda a, b: list(zip(a, b)),
    "list_of_two_arrays": lambda a, b: [np.array(a), np.array(b, dtype=object)],
    "numpy_rows": lambda a, b: np.array(list(zip(a, b))),
    "dict_of_lists": lambda a, b: {"text_a": list(a), "text_b": list(b)},
    "dict_of_series": lambda a, b: {"text_a": pandas().Series(a), "text_b": pandas().Series(b)},
    "pandas_text_columns": lambda a, b: pandas().DataFrame({"text_a": a, "text_b": b}),
    "pandas_two_columns": lambda a, b: pandas().DataFrame({"sentence1": a, "sentence2": b}),
}
TEXT_FORMS = ([pytest.param(False, f, id=name) for name, f in SINGLE.items()]
              + [pytest.param(True, f, id=name) for name, f in PAIR.items()])

# Labels as a user writes them: name -> fn(labels) -> y.
LABEL_FORMS = {
    "list_of_int": list,
    "list_of_float": lambda y: [float(v) for v in y],     # whole numbers: class ids
    "tuple": tuple,
    "numpy_float32": lambda y: np.array(y, np.float32),
    "numpy_column": lambda y: np.array(y, np.int32)[:, None],
    "tensor": lambda y: tf.constant(y),
    "dict_of_list": lambda y: {"label_ids": list(y)},
    "pandas_series": lambda y: pandas().Series(y),
    "pandas_label_column": lambda y: pandas().DataFrame({"label_ids": y}),
}


def canonical_x(pair):
    """What Keras itself takes: string Tensors."""
    if pair:
        return {"text_a": tf.constant(TEXTS_A), "text_b": tf.constant(TEXTS_B)}
    return tf.constant(TEXTS_A)


def canonical_y():
    return np.array(LABELS, np.int32)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """One tiny raw-text classifier for the module."""
    vocab_file = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab_file.write_text("".join(token + "\n" for token in VOCAB), encoding="utf-8")
    preprocessor = BertPreprocessor(str(vocab_file), do_lower_case=True,
                                    max_seq_length=MAX_SEQ_LENGTH)
    classifier = BertClassifier(BertConfig.from_dict(CONFIG), NUM_LABELS,
                                preprocessor=preprocessor)
    classifier.classifier.dropout.rate = 0.0
    return classifier


@pytest.fixture
def model(classifier):
    """The module's classifier, compiled to run eagerly with a learning rate of 0."""
    return compiled(classifier, run_eagerly=True)


def compiled(model, run_eagerly):
    """`model`, compiled (again, if it ran the other way) with a learning rate of 0.

    Eagerly for the forms in memory: each converts to the same Tensors, and
    tracing the steps for each would cost more than running them. Compiled
    (as users run it) for datasets, where the traced steps see relaxed shapes.
    """
    if model.compiled and model.run_eagerly == run_eagerly:
        return model
    model.compile(optimizer=create_optimizer(0.0, 1000, 1), run_eagerly=run_eagerly)
    return model


@pytest.fixture(scope="module")
def reference(classifier):
    """{pair: (probabilities, evaluate's results)} on the canonical forms (string Tensors)."""
    model = compiled(classifier, run_eagerly=True)
    return {pair: (model.predict(canonical_x(pair), verbose=0)["probabilities"],
                   evaluate(model, canonical_x(pair), canonical_y()))
            for pair in (False, True)}


def evaluate(model, x, y):
    return model.evaluate(x, y, batch_size=NUM_EXAMPLES, verbose=0, return_dict=True)


def assert_same_eval(got, want):
    for key in ("eval_loss", "eval_accuracy"):
        np.testing.assert_allclose(got[key], want[key], atol=ATOL, err_msg=key)


def assert_fit_is_evaluate(history, want):
    """A one-step epoch's loss and its validation metrics are `evaluate`'s results."""
    np.testing.assert_allclose(history.history["loss"], [want["eval_loss"]], atol=ATOL)
    assert_same_eval({key: history.history["val_" + key][0]
                      for key in ("eval_loss", "eval_accuracy")}, want)


# ----------------------------------------------------------------- raw text


@pytest.mark.slow
@pytest.mark.parametrize("pair, form", TEXT_FORMS)
def test_predict_takes_the_form(model, reference, pair, form):
    got = model.predict(form(TEXTS_A, TEXTS_B), verbose=0)["probabilities"]
    np.testing.assert_allclose(got, reference[pair][0], atol=ATOL)


@pytest.mark.slow
@pytest.mark.parametrize("pair, form", TEXT_FORMS)
def test_evaluate_takes_the_form(model, reference, pair, form):
    assert_same_eval(evaluate(model, form(TEXTS_A, TEXTS_B), LABELS), reference[pair][1])


@pytest.mark.slow
@pytest.mark.parametrize("pair, form", TEXT_FORMS)
def test_fit_and_its_validation_data_take_the_form(model, reference, pair, form):
    history = model.fit(form(TEXTS_A, TEXTS_B), LABELS, batch_size=NUM_EXAMPLES, verbose=0,
                        validation_data=(form(TEXTS_A, TEXTS_B), LABELS))
    assert_fit_is_evaluate(history, reference[pair][1])


# ----------------------------------------------------------------- labels


@pytest.mark.slow
@pytest.mark.parametrize("form", LABEL_FORMS.values(), ids=LABEL_FORMS.keys())
def test_fit_evaluate_and_validation_data_take_the_labels(model, reference, form):
    x = canonical_x(pair=True)
    want = reference[True][1]
    assert_same_eval(evaluate(model, x, form(LABELS)), want)
    history = model.fit(x, form(LABELS), batch_size=NUM_EXAMPLES, verbose=0,
                        validation_data=(x, form(LABELS)))
    assert_fit_is_evaluate(history, want)


# ----------------------------------------------------------------- datasets


@pytest.mark.slow
def test_datasets_of_x_and_of_x_y(classifier, reference):
    model = compiled(classifier, run_eagerly=False)
    batch = NUM_EXAMPLES // 2
    pairs = tf.data.Dataset.from_tensor_slices((TEXTS_A, TEXTS_B))
    labels = tf.data.Dataset.from_tensor_slices(LABELS)
    # predict: a dataset of texts; of (text_a, text_b) (both are x: labels are never text);
    # of [batch_size, 2] rows.
    got = model.predict(tf.data.Dataset.from_tensor_slices(TEXTS_A).batch(batch), verbose=0)
    np.testing.assert_allclose(got["probabilities"], reference[False][0], atol=ATOL)
    for dataset in (pairs, tf.data.Dataset.from_tensor_slices(list(zip(TEXTS_A, TEXTS_B)))):
        got = model.predict(dataset.batch(batch), verbose=0)
        np.testing.assert_allclose(got["probabilities"], reference[True][0], atol=ATOL)
    # evaluate, fit and validation_data: ((text_a, text_b), labels), ({"text_a", "text_b"},
    # labels).
    want = reference[True][1]
    assert_same_eval(model.evaluate(tf.data.Dataset.zip(pairs, labels).batch(NUM_EXAMPLES),
                                    verbose=0, return_dict=True), want)
    as_dicts = tf.data.Dataset.zip(pairs.map(lambda a, b: {"text_a": a, "text_b": b}), labels)
    history = model.fit(as_dicts.batch(NUM_EXAMPLES), verbose=0,
                        validation_data=tf.data.Dataset.zip(pairs, labels).batch(NUM_EXAMPLES))
    assert_fit_is_evaluate(history, want)


def test_feature_dicts_and_label_dicts_of_lists():
    """A model without a preprocessor: feature dicts (the pipelines' form), here of lists."""
    config = BertConfig.from_dict(CONFIG)
    squad = BertSquad(config)
    squad.compile(optimizer=create_optimizer(1e-3, 1000, 1), run_eagerly=True)
    inputs = make_inputs(batch_size=4, seq_length=8)
    features = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                "segment_ids": inputs["token_type_ids"]}
    want = squad.predict(features, verbose=0)
    got = squad.predict({k: v.tolist() for k, v in features.items()}, verbose=0)
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(got[key], want[key], atol=ATOL, err_msg=key)
    history = squad.fit({k: v.tolist() for k, v in features.items()},
                        {"start_positions": [0, 1, 2, 1], "end_positions": (1, 1, 3, 2)},
                        verbose=0)
    assert np.isfinite(history.history["loss"][0])
    with pytest.raises(UserError, match=r"^BertSquad.fit: BertSquad takes its labels as a dict "
                                        r"y=\{start_positions, end_positions: \.\.\.\}, got list "
                                        r"as y$"):
        squad.fit(features, [0, 1, 2, 1], verbose=0)
    with pytest.raises(UserError, match=r"^BertSquad.predict: x takes a dict of features "
                                        r"\(input_ids, input_mask, segment_ids, \.\.\.\) or a "
                                        r"tf.data.Dataset of x or of \(x, y\); got list$"):
        squad.predict(["some text"], verbose=0)


# ----------------------------------------------------------------- user errors

TEXT_ACCEPTED = r"; it takes raw text \(a list, NumPy array, pandas Series or string Tensor"


def _call(method, x, y=None, **kwargs):
    def call(model):
        if method == "predict":
            return model.predict(x, verbose=0)
        return getattr(model, method)(x, y, verbose=0, **kwargs)
    return call


ERRORS = {
    "numbers_as_text": (_call("predict", [1, 2]), r"^BertClassifier.predict: x\[0\] is int, "
                        r"not a text \(str or bytes\)" + TEXT_ACCEPTED),
    "missing_text": (_call("predict", np.array(["a", None], dtype=object)),
                     r"x\[1\] is NoneType, not a text"),
    "nan_text": (_call("evaluate", {"text_a": ["a", float("nan")]}, [0, 1]),
                 r"x\['text_a'\]\[1\] is float, not a text \(str or bytes\) \(fill missing "
                 r"texts first"),
    "single_string": (_call("predict", "a good film"),
                      r"x is a single text; it takes one per example, e\.g\. \['a good film'\]"),
    "x_and_y_lengths": (_call("fit", TEXTS_A, LABELS[:4]),
                        r"^BertClassifier.fit: x has 6 examples but y has 4$"),
    "pair_lengths": (_call("fit", (TEXTS_A, TEXTS_B[:5]), LABELS),
                     r"^BertClassifier.fit: x\['text_a'\] has 6 examples but x\['text_b'\] "
                     r"has 5$"),
    "validation_lengths": (_call("fit", TEXTS_A, LABELS, validation_data=(TEXTS_A, [0])),
                           r"^BertClassifier.fit: validation_data's x has 6 examples but "
                           r"validation_data's y has 1$"),
    "validation_form": (_call("fit", TEXTS_A, LABELS, validation_data=TEXTS_A[0]),
                        r"^BertClassifier.fit: validation_data takes \(x, y\) .* or a "
                        r"tf.data.Dataset of x or of \(x, y\); got str$"),
    "validation_text": (_call("fit", TEXTS_A, LABELS, validation_data=({"text": TEXTS_A},
                                                                       LABELS)),
                        r"validation_data's x is a dict with keys \['text'\]; it takes a dict "
                        r"of features \(input_ids, .*\) or text_a \(and text_b\) for raw text$"),
    "text_labels": (_call("fit", TEXTS_A, ["pos"] * 6),
                    r"^BertClassifier.fit: y holds text, not numbers; it takes numbers, one per "
                    r"example \(a list, tuple, NumPy array, pandas Series or Tensor\)$"),
    "ragged_labels": (_call("evaluate", TEXTS_A, [[0], [1, 2]] * 3), r"y is ragged"),
    "label_out_of_range": (_call("fit", TEXTS_A, [0, 1, 2, 3, 0, 1]),
                           r"^BertClassifier.fit: y holds label 3; BertClassifier "
                           r"\(num_labels=3\) takes class ids 0 to 2$"),
    "fractional_label": (_call("evaluate", TEXTS_A, [0, 0.5, 1, 1, 0, 2]),
                         r"y holds 0.5, not a class id; BertClassifier's labels are class ids"),
    "missing_label": (_call("fit", TEXTS_A, [0, float("nan"), 1, 1, 0, 2]),
                      r"^BertClassifier.fit: y holds NaN \(a missing value\?\); it takes "
                      r"numbers"),
    "class_weight": (_call("fit", TEXTS_A, LABELS, class_weight={0: 1.0, 1: 2.0, 2: 1.0}),
                     r"^BertClassifier takes no class_weight: the original's training loss "
                     r"weighs every example alike"),
    "unknown_label_key": (_call("fit", TEXTS_A, {"labels": LABELS}),
                          r"y has keys \['labels'\] that are no labels of BertClassifier "
                          r"\(label_ids\)$"),
    "no_labels": (_call("fit", TEXTS_A), r"^BertClassifier.fit: y is missing: fit needs the "
                                         r"labels \(label_ids\)"),
    "three_columns": (_call("predict", (TEXTS_A, TEXTS_B, TEXTS_A)),
                      r"x is a tuple of 3 columns; a pair of texts is a tuple \(texts_a, "
                      r"texts_b\)$"),
    "rows_of_three": (_call("predict", [(a, a, a) for a in TEXTS_A]),
                      r"x is a list of rows of 3 texts; a list of pairs holds \(text_a, text_b\)"),
    "number_tensor": (_call("predict", tf.constant([1, 2])),
                      r"x is a int32 Tensor" + TEXT_ACCEPTED),
    "unbatched_dataset": (_call("predict", tf.data.Dataset.from_tensor_slices(TEXTS_A)),
                          r"x is a tf.data.Dataset of single examples .*; batch it first"),
    "dataset_and_y": (_call("fit", tf.data.Dataset.from_tensor_slices(TEXTS_A).batch(2), LABELS),
                      r"y must be None when x is a .*Dataset.*: its elements carry the labels"),
    "pairs_without_labels": (
        _call("fit", tf.data.Dataset.from_tensor_slices((TEXTS_A, TEXTS_B)).batch(2)),
        r"x is a tf.data.Dataset of \(text_a, text_b\) without labels; fit needs "
        r"\(\(text_a, text_b\), labels\)$"),
    "validation_sample_weight": (
        _call("fit", TEXTS_A, LABELS, validation_data=(TEXTS_A, LABELS, np.ones(6))),
        r"validation_data takes no sample weights"),
}


@pytest.mark.parametrize("call, message", ERRORS.values(), ids=ERRORS.keys())
def test_user_mistakes_are_one_line_errors_naming_the_argument(model, call, message):
    iterations = int(model.optimizer.iterations.numpy())
    with pytest.raises(UserError, match=message) as error:
        call(model)
    assert "\n" not in str(error.value)
    assert int(model.optimizer.iterations.numpy()) == iterations  # refused before any step


def test_a_model_without_a_preprocessor_says_how_to_take_raw_text():
    model = BertClassifier(BertConfig.from_dict(CONFIG), NUM_LABELS)
    model.compile(optimizer=create_optimizer(1e-3, 1000, 1))
    with pytest.raises(UserError, match=r"^BertClassifier.fit: x takes a dict of features .*; "
                                        r"got list \(for raw text, build the model with "
                                        r"preprocessor=bert_tf.tokenization.preprocessor."
                                        r"BertPreprocessor\(\.\.\.\)\)$"):
        model.fit(TEXTS_A, LABELS, verbose=0)
    with pytest.raises(UserError, match=r"x holds raw text \(text_a\) but BertClassifier has no "
                                        r"preprocessor"):
        model.predict({"text_a": TEXTS_A}, verbose=0)
