"""The data Keras users hand to `fit` / `evaluate` / `predict`, as the task models take it.

`UserData` turns `x`, `y` and `validation_data` in every form a Keras user
writes (Python lists and tuples, NumPy arrays of str, bytes or objects, pandas
Series and DataFrames, dicts of these, Tensors, batched `tf.data.Dataset`s)
into what Keras's data adapters slice, for `bert_tf.tasks.task_model.TaskModel`;
anything else is a one-line `UserError` naming the argument and the forms it
takes.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)

import keras
import numpy as np
import tensorflow as tf

from bert_tf.errors import UserError


_TEXT_FORMS = ("raw text (a list, NumPy array, pandas Series or string Tensor of str or bytes; "
               "a (texts_a, texts_b) tuple or a list of (text_a, text_b) pairs; a dict with "
               "text_a (and text_b))")
_CHOICE_FORMS = ("raw text of multiple choices (a list of (context, endings) or (context, start, "
                 "endings) rows; a dict with context, endings [n, num_choices] and optionally "
                 "start)")
_FEATURE_FORMS = "a dict of features (input_ids, input_mask, segment_ids, ...)"
_DATASET_FORMS = "a tf.data.Dataset of x or of (x, y)"
_LABEL_FORMS = "numbers, one per example (a list, tuple, NumPy array, pandas Series or Tensor)"


class UserData(object):
    """Keras's `x`, `y` and `validation_data` as users write them -> what Keras's adapters slice.

    Keras slices NumPy arrays and Tensors (its NumPy path refuses str dtypes)
    and iterates datasets. Users write more: Python lists and tuples, NumPy
    arrays of str, bytes or objects, pandas Series and DataFrames (duck-typed:
    pandas is not imported), dicts of these. In-memory text becomes string
    Tensors (a pair becomes a dict of `text_a` and `text_b`: a tuple would read
    as Keras's `(x, y)`), features and labels NumPy arrays (a classifier's
    labels int32 class ids), and anything else, or examples that do not line
    up, is a one-line `UserError` naming the argument and the forms it takes.
    A `tf.data.Dataset` passes with its pairs of texts as dicts; generators
    and `PyDataset`s pass as they are.

    Args:
      model: the `TaskModel`.
      method: "fit", "evaluate" or "predict" (the errors name it).
    """

    def __init__(self, model, method):
        self.name = type(model).__name__
        self.method = method
        self.takes_text = hasattr(model, "preprocessor")
        self.preprocessor = getattr(model, "preprocessor", None)
        self.label_keys = tuple(model.task.label_keys)
        # A classification task's labels are class ids (ClassifierTask: is_regression False).
        self.num_classes = (None if getattr(model.task, "is_regression", True)
                            else getattr(model.task, "num_labels", None))
        # A multi-label classifier's labels are multi-hot rows [n, num_labels].
        self.multi_hot = getattr(model.task, "multi_label", False)
        # A multiple-choice model's x holds choices; its labels are indexes among them.
        self.multiple_choice = getattr(model, "multiple_choice", False)
        self.model_num_choices = getattr(model, "num_choices", None)

    def error(self, message, *args):
        return UserError("%s.%s: %s" % (self.name, self.method, message % args))

    def x_forms(self):
        forms = [_FEATURE_FORMS, _DATASET_FORMS]
        if self.preprocessor is not None:
            forms.insert(0, _CHOICE_FORMS if self.multiple_choice else _TEXT_FORMS)
        return ", ".join(forms[:-1]) + " or " + forms[-1]

    # ------------------------------------------------------------ x and y

    def x_and_y(self, x, y, x_name, y_name):
        """(x, y) for Keras; `y` stays None when `x` is a dataset or holds the labels."""
        if _is_stream(x):
            if y is not None:
                raise self.error("%s must be None when %s is a %s: its elements carry the "
                                 "labels, as (x, y)", y_name, x_name,
                                 "tf.data.Dataset" if isinstance(x, tf.data.Dataset)
                                 else type(x).__name__)
            if isinstance(x, tf.data.Dataset):
                x = self.dataset(x, x_name)
            return x, None
        if x is None:
            raise self.error("%s is missing: it takes %s", x_name, self.x_forms())
        x = self.inputs(x, x_name)
        if self.multiple_choice:
            self.num_classes = self.num_choices(x)
        y = self.labels(y, y_name)
        num_x = self.num_examples(x, x_name)
        if y is not None:
            num_y = self.num_examples(y, y_name)
            if num_x != num_y:
                raise self.error("%s has %d examples but %s has %d", x_name, num_x, y_name, num_y)
        elif self.method != "predict" and not all(
                isinstance(x, dict) and key in x for key in self.label_keys):
            raise self.error("%s is missing: %s needs the labels (%s) as y or in x's dict of "
                             "features", y_name, self.method, ", ".join(self.label_keys))
        return x, y

    def validation_data(self, data):
        """`fit`'s validation_data: (x, y), or a dataset."""
        if _is_stream(data):
            return self.x_and_y(data, None, "validation_data", "validation_data's y")
        if not isinstance(data, (tuple, list)) or len(data) not in (1, 2, 3):
            raise self.error("validation_data takes (x, y) with x as fit's x and y as fit's y, or "
                             "%s; got %s", _DATASET_FORMS, describe(data))
        if len(data) == 3 and data[2] is not None:
            raise self.error("validation_data takes no sample weights (x, y, sample_weight): "
                             "evaluation weighs examples by the is_real_example feature")
        x, y = self.x_and_y(data[0], data[1] if len(data) > 1 else None,
                            "validation_data's x", "validation_data's y")
        return (x,) if y is None else (x, y)

    def dataset(self, dataset, name):
        """A `tf.data.Dataset` with its pairs of texts as dicts; refuses what would run wrong.

        Its element_spec says what the steps cannot: Keras's step functions
        relax the shapes they were traced with (a [batch_size, 2] batch of
        rows may arrive with no known rank), and `(text_a, text_b)` reads as
        Keras's `(x, y)`. A dataset of single examples (not `.batch()`ed)
        would run as batches of one row.
        """
        self.check_dataset(dataset, name)
        spec = dataset.element_spec
        if _is_text_rows(spec):
            return dataset.map(_rows_as_pair)
        if isinstance(spec, tuple) and spec and _is_text_rows(spec[0]):
            return dataset.map(lambda x, *rest: (_rows_as_pair(x),) + rest)
        if ((self.method == "predict" or not self.label_keys) and isinstance(spec, tuple)
                and len(spec) == 2 and is_text_pair(*spec)):
            # A pair of texts, not (x, y): predict's, and a task without labels (the
            # sentence embedder trains on (anchor, positive) pairs).
            return dataset.map(lambda a, b: {"text_a": a, "text_b": b})
        return dataset

    def check_dataset(self, dataset, name):
        """Refuses single examples, and (text_a, text_b) without labels to fit or evaluate
        (a task with labels)."""
        spec = dataset.element_spec
        if (self.method != "predict" and self.label_keys and isinstance(spec, tuple)
                and len(spec) == 2 and is_text_pair(*spec)):
            raise self.error("%s is a tf.data.Dataset of (text_a, text_b) without labels; %s "
                             "needs ((text_a, text_b), labels)", name, self.method)
        x_spec = spec[0] if isinstance(spec, tuple) and spec else spec
        single = [s for s in tf.nest.flatten(spec)
                  if isinstance(s, tf.TensorSpec) and s.dtype == tf.string and s.shape.rank == 0]
        if (isinstance(x_spec, dict) and isinstance(x_spec.get("input_ids"), tf.TensorSpec)
                and x_spec["input_ids"].shape.rank == 1):
            single.append(x_spec["input_ids"])
        if single:
            raise self.error("%s is a tf.data.Dataset of single examples (%s); batch it first, "
                             "e.g. dataset.batch(32)", name, single[0])

    def num_examples(self, value, name):
        """The examples in a converted x or y (every column of a dict the same)."""
        def length(column, where):
            if len(column.shape) == 0:
                raise self.error("%s is a single value; it takes one per example", where)
            return int(column.shape[0])

        if not isinstance(value, dict):
            return length(value, name)
        counts = [(key, length(column, "%s['%s']" % (name, key)))
                  for key, column in value.items()]
        for key, count in counts[1:]:
            if count != counts[0][1]:
                raise self.error("%s['%s'] has %d examples but %s['%s'] has %d", name,
                                 counts[0][0], counts[0][1], name, key, count)
        return counts[0][1]

    # ------------------------------------------------------------ x

    def inputs(self, x, name):
        """A dict (features or text), or a string Tensor of texts."""
        if self.multiple_choice and not (isinstance(x, dict) and "input_ids" in x):
            return self.choice_inputs(x, name)
        if _is_frame(x):
            columns = _columns(x)
            if "input_ids" in columns or "text_a" in columns or len(columns) > 2:
                x = columns
            elif len(columns) == 1:
                x = list(columns.values())[0]
            else:  # two text columns, in their order
                x = tuple(columns.values())
        if isinstance(x, dict):
            return self.input_dict(x, name)
        if self.preprocessor is None:
            raise self.error(
                "%s takes %s; got %s%s", name, self.x_forms(), describe(x),
                " (for raw text, build the model with preprocessor=bert_tf.tokenization."
                "preprocessor.BertPreprocessor(...))" if self.takes_text else "")
        if isinstance(x, tuple) and not any(isinstance(t, (str, bytes)) for t in x):
            if len(x) != 2:
                raise self.error("%s is a tuple of %d columns; a pair of texts is a tuple "
                                 "(texts_a, texts_b)", name, len(x))
            return self.input_dict({"text_a": x[0], "text_b": x[1]}, name)
        if (isinstance(x, list) and x
                and all(isinstance(t, (np.ndarray, tf.Tensor)) or _is_series(t) for t in x)):
            # Keras's list of inputs: [texts_a, texts_b].
            if len(x) != 2:
                raise self.error("%s is a list of %d arrays; a pair of texts is (texts_a, "
                                 "texts_b)", name, len(x))
            return self.input_dict({"text_a": x[0], "text_b": x[1]}, name)
        if isinstance(x, list) and x and all(isinstance(t, (tuple, list)) for t in x):
            if any(len(row) != 2 for row in x):
                raise self.error(
                    "%s is a list of rows of %d texts; a list of pairs holds (text_a, text_b) "
                    "rows (two columns are a tuple (texts_a, texts_b))", name,
                    next(len(row) for row in x if len(row) != 2))
            return self.input_dict({"text_a": [row[0] for row in x],
                                    "text_b": [row[1] for row in x]}, name)
        texts = self.texts(x, name, self.x_forms())
        if texts.shape.rank == 2 and texts.shape[1] == 2:  # [n, 2]: pairs as rows
            return {"text_a": texts[:, 0], "text_b": texts[:, 1]}
        return texts

    def choice_inputs(self, x, name):
        """A multiple-choice model's raw text: {context [n], start [n], endings [n, num_choices]}."""
        if self.preprocessor is None:
            raise self.error("%s takes %s; got %s (for raw text, build the model with "
                             "preprocessor=bert_tf.tokenization.preprocessor.BertPreprocessor"
                             "(...))", name, self.x_forms(), describe(x))
        if isinstance(x, list) and x and all(isinstance(row, (tuple, list)) for row in x):
            if any(len(row) not in (2, 3) for row in x):
                raise self.error("%s is a list of rows of %d items; a row is (context, endings) "
                                 "or (context, start, endings)", name,
                                 next(len(row) for row in x if len(row) not in (2, 3)))
            x = {"context": [row[0] for row in x], "endings": [row[-1] for row in x],
                 "start": [row[1] if len(row) == 3 else "" for row in x]}
        if not isinstance(x, dict) or "context" not in x or "endings" not in x:
            raise self.error("%s takes %s; got %s", name, self.x_forms(), describe(x))
        unknown = sorted(str(key) for key in x if key not in ("context", "start", "endings"))
        if unknown:
            raise self.error("%s has keys %s; raw multiple-choice text is context, endings and "
                             "optionally start", name, unknown)
        converted = {key: self.texts(x[key], "%s['%s']" % (name, key))
                     for key in ("context", "start") if key in x}
        endings = x["endings"]
        if _is_series(endings):
            endings = endings.to_numpy()
        rows = [list(row) for row in endings] if not tf.is_tensor(endings) else None
        if rows is not None:
            if any(isinstance(row, (str, bytes)) for row in endings) or any(
                    len(row) != len(rows[0]) for row in rows):
                raise self.error("%s['endings'] takes a list of endings per example, each of "
                                 "the same number of choices", name)
            endings = tf.reshape(tf.constant(self.utf8(sum(rows, []), "%s['endings']" % name),
                                             tf.string), [len(rows), -1])
        if endings.dtype != tf.string or endings.shape.rank != 2 or endings.shape[1] < 2:
            raise self.error("%s['endings'] is %s; it takes [n, num_choices] texts, at least 2 "
                             "choices", name, describe(endings))
        converted["endings"] = endings
        return converted

    def num_choices(self, x):
        """The choices per example of a multiple-choice model's converted x."""
        if "endings" in x:
            return int(x["endings"].shape[1])
        if len(x["input_ids"].shape) == 3:
            return int(x["input_ids"].shape[1])
        return self.model_num_choices

    def input_dict(self, x, name):
        keys = [str(key) for key in x]
        is_text = "text_a" in keys or "text_b" in keys
        if "input_ids" not in keys and not is_text:
            raise self.error("%s is a dict with keys %s; it takes %s%s", name, sorted(keys),
                             _FEATURE_FORMS, " or text_a (and text_b) for raw text"
                             if self.preprocessor is not None else "")
        if "input_ids" not in keys:
            if self.preprocessor is None:
                raise self.error(
                    "%s holds raw text (text_a) but %s has no preprocessor; it takes %s%s", name,
                    self.name, _FEATURE_FORMS,
                    " (for raw text, build it with preprocessor=bert_tf.tokenization."
                    "preprocessor.BertPreprocessor(...))" if self.takes_text else "")
            if "text_a" not in keys:
                raise self.error("%s has text_b but no text_a", name)
        converted = {}
        for key, value in x.items():
            where = "%s['%s']" % (name, key)
            if "input_ids" not in keys and key in self.preprocessor.text_keys:
                texts = self.texts(value, where)
                if texts.shape.rank != 1:
                    raise self.error("%s holds a [%s] array of texts; it takes one text per "
                                     "example", where, ", ".join(map(str, texts.shape)))
                converted[key] = texts
            elif "input_ids" in keys and _is_strings(value):
                converted[key] = tf.constant(value)  # e.g. ids, passed by, as Keras takes them
            else:
                converted[key] = self.numbers(value, where, "features are numbers (raw text "
                                              "goes under text_a and text_b)")
        return converted

    def texts(self, value, name, forms=_TEXT_FORMS):
        """A string Tensor [n] (or [n, 1] -> [n], or [n, 2] for pairs) of `value`'s texts."""
        if isinstance(value, (str, bytes)):
            raise self.error("%s is a single text; it takes one per example, e.g. [%r]",
                             name, value[:20])
        if _is_series(value):
            value = value.to_numpy()
        if tf.is_tensor(value):
            if value.dtype != tf.string:
                raise self.error("%s is a %s Tensor; it takes %s", name, value.dtype.name,
                                 forms)
            texts = value
        elif isinstance(value, np.ndarray):
            if value.dtype.kind in "US":
                texts = tf.constant(value)
            elif value.dtype.kind == "O":
                texts = tf.reshape(tf.constant(self.utf8(value.ravel().tolist(), name),
                                               tf.string), value.shape)
            else:
                raise self.error("%s is a NumPy array of %s; it takes %s", name, value.dtype,
                                 forms)
        elif isinstance(value, (list, tuple)):
            texts = tf.constant(self.utf8(value, name), tf.string)
        else:
            raise self.error("%s takes %s; got %s", name, forms, describe(value))
        if texts.shape.rank == 0:
            raise self.error("%s is a single text; it takes one per example", name)
        if texts.shape[0] == 0:
            raise self.error("%s holds no texts", name)
        if texts.shape.rank == 2 and texts.shape[1] == 1:
            texts = tf.reshape(texts, [-1])
        if texts.shape.rank != 1 and not (texts.shape.rank == 2 and texts.shape[1] == 2):
            raise self.error("%s is a [%s] array of texts; it takes one text per example (or "
                             "[n, 2] rows of pairs)", name, ", ".join(map(str, texts.shape)))
        return texts

    def utf8(self, values, name):
        """A list of str / bytes as a list of bytes; anything else in it is the user's mistake."""
        texts = []
        for i, value in enumerate(values):
            if isinstance(value, str):
                value = value.encode("utf-8")
            elif not isinstance(value, bytes):
                raise self.error("%s[%d] is %s, not a text (str or bytes)%s; it takes %s", name,
                                 i, describe(value), " (fill missing texts first, e.g. "
                                 "fillna(\"\"))" if isinstance(value, float) else "",
                                 _TEXT_FORMS)
            texts.append(value)
        return texts

    # ------------------------------------------------------------ y

    def labels(self, y, name):
        """None, an array of one label per example, or a dict of `label_keys` of them."""
        if y is None:
            return None
        if _is_frame(y):
            columns = _columns(y)
            y = (list(columns.values())[0] if len(columns) == 1 and not set(columns) & set(
                self.label_keys) else columns)
        if isinstance(y, dict):
            unknown = sorted(str(key) for key in y if key not in self.label_keys)
            if unknown:
                raise self.error("%s has keys %s that are no labels of %s (%s)", name, unknown,
                                 self.name, ", ".join(self.label_keys))
            y = {key: self.numbers(value, "%s['%s']" % (name, key), "labels are " +
                                   _LABEL_FORMS) for key, value in y.items()}
            if self.num_classes and self.label_keys[0] in y:
                key = self.label_keys[0]
                y[key] = self.class_ids(y[key], "%s['%s']" % (name, key))
            return y
        if len(self.label_keys) != 1:
            raise self.error("%s takes its labels as a dict y={%s: ...}, got %s as %s", self.name,
                             ", ".join(self.label_keys), describe(y), name)
        y = self.numbers(y, name, "it takes " + _LABEL_FORMS)
        return self.class_ids(y, name) if self.num_classes else y

    def class_ids(self, labels, name):
        """int32 [n] class ids (whole floats too: 1.0 is class 1), each in [0, num_classes).

        An id out of range would train on a zero one-hot row without a word.
        Multi-label: int32 multi-hot rows [n, num_labels] of 0 and 1.
        """
        ids = labels.numpy() if tf.is_tensor(labels) else labels
        if self.multi_hot:
            if ids.ndim != 2 or ids.shape[1] != self.num_classes:
                raise self.error("%s has shape %s; %s (multi_label, num_labels=%d) takes "
                                 "multi-hot labels [n, %d]", name, list(ids.shape), self.name,
                                 self.num_classes, self.num_classes)
            bad = ids[(ids != 0) & (ids != 1)]
            if bad.size:
                raise self.error("%s holds %s; multi-hot labels are 0 or 1", name, bad[0])
            return ids.astype(np.int32)
        if ids.ndim == 2 and ids.shape[1] == 1:
            ids = ids[:, 0]
        if ids.ndim != 1:
            raise self.error("%s has shape %s; %s takes one class id per example", name,
                             list(ids.shape), self.name)
        last = self.num_classes - 1
        if ids.dtype.kind == "f":
            fractional = ids[ids != np.round(ids)]
            if fractional.size:
                raise self.error("%s holds %s, not a class id; %s's labels are class ids 0 to %d",
                                 name, fractional[0], self.name, last)
        out_of_range = ids[(ids < 0) | (ids > last)]
        if out_of_range.size:
            raise self.error("%s holds label %s; %s (%s=%d) takes class ids 0 to %d",
                             name, out_of_range[0], self.name, "num_choices"
                             if self.multiple_choice else "num_labels", self.num_classes, last)
        return ids.astype(np.int32)

    def numbers(self, value, name, forms):
        """A numeric NumPy array or Tensor [n, ...] of `value` (features, labels)."""
        if _is_series(value):
            value = value.to_numpy()
        if isinstance(value, (list, tuple)):
            try:
                value = np.asarray(value)
            except ValueError:
                raise self.error("%s is ragged (rows of different lengths); %s", name,
                                 forms) from None
        if isinstance(value, np.ndarray) and value.dtype.kind == "O":
            try:  # pandas' object columns: rows of numbers
                value = np.array(value.tolist())
            except ValueError:
                raise self.error("%s is ragged (rows of different lengths); %s", name,
                                 forms) from None
        if isinstance(value, np.ndarray):
            kind = value.dtype.kind
        elif tf.is_tensor(value):
            kind = "S" if value.dtype == tf.string else "f"
        else:
            raise self.error("%s is %s; %s", name, describe(value), forms)
        if kind == "O":  # what np.array made no number of: a missing value, a str
            odd = next(v for v in value.ravel() if not isinstance(v, (int, float, np.number)))
            raise self.error("%s holds %s, not numbers; %s", name,
                             "text" if isinstance(odd, (str, bytes)) else describe(odd), forms)
        if kind not in "biuf":
            raise self.error("%s holds %s, not numbers; %s", name,
                             "text" if kind in "US" else value.dtype, forms)
        if len(value.shape) == 0:
            raise self.error("%s is a single number; %s", name, forms)
        if kind == "f" and isinstance(value, np.ndarray) and np.isnan(value).any():
            raise self.error("%s holds NaN (a missing value?); %s", name, forms)
        return value


def is_text_pair(x, y):
    """Whether `(x, y)` (Tensors or TensorSpecs) is a pair of texts: labels are never strings."""
    return all((tf.is_tensor(t) or isinstance(t, tf.TensorSpec)) and t.dtype == tf.string
               for t in (x, y))


def _is_text_rows(spec):
    """Whether a dataset's element is [batch_size, 2]: rows of (text_a, text_b)."""
    return (isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.rank == 2
            and spec.shape[1] == 2)


def _rows_as_pair(rows):
    return {"text_a": rows[:, 0], "text_b": rows[:, 1]}


def _is_stream(value):
    """Data that Keras iterates rather than slices: datasets, PyDatasets, generators."""
    return (isinstance(value, (tf.data.Dataset, keras.utils.PyDataset,
                               tf.distribute.DistributedDataset))
            or (hasattr(value, "__next__") and not isinstance(value, (list, tuple, dict))))


def _is_strings(value):
    """A string Tensor, or a NumPy array of str or bytes."""
    if tf.is_tensor(value):
        return value.dtype == tf.string
    return isinstance(value, np.ndarray) and value.dtype.kind in "US"


def _columns(frame):
    """{name: column} of a DataFrame, in its order."""
    return {str(name): frame[name] for name in frame.columns}


def _is_frame(value):
    """A pandas (or pandas-like) DataFrame: named columns and `to_numpy`."""
    return hasattr(value, "columns") and hasattr(value, "to_numpy") and not tf.is_tensor(value)


def _is_series(value):
    """A pandas (or pandas-like) Series: one column with `to_numpy`."""
    return (hasattr(value, "to_numpy") and not hasattr(value, "columns")
            and not tf.is_tensor(value) and not isinstance(value, np.ndarray))


def no_weights_error(name, argument):
    return UserError(
        "%s takes no %s: the original's training loss weighs every example alike; for "
        "evaluation, put is_real_example (1 real, 0 padding) in the features" % (name, argument))


def describe(value):
    """A value, in a few words, for an error message."""
    if isinstance(value, dict):
        return "a dict with keys %s" % sorted(value)
    dtype = getattr(value, "dtype", None)
    return "%s%s" % (type(value).__name__, "" if dtype is None else " of dtype %s" % dtype)
