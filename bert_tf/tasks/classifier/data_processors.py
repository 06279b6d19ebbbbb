"""run_classifier's processors: a task's TSV files -> `InputExample`s.

Ports `DataProcessor` (with `_read_tsv`), `XnliProcessor`, `MnliProcessor`,
`MrpcProcessor`, `ColaProcessor` and the `processors` dict of `main` with its
task lookup (P = pip bert-tensorflow 1.0.4, lines 180-377 and 789-816). The
records, the TSV reading and the conversion to features and records are
`bert_tf.tasks.classifier.data`'s.

The four original processors read the same rows, columns, guids and labels as
the original. Beyond the original: the other GLUE tasks in the layout the GLUE
benchmark distributes (SST-2, QNLI, QQP, RTE, WNLI and the STS-B regression),
the `multilabel` task (`MultiLabelProcessor`, a comma-separated label list),
a registry a user's task can join (`register_processor`), and one-line
`UserError`s for a missing file, a short row or an unknown label (the original
stopped with an IndexError or a KeyError traceback).

Imports no TensorFlow (as classifier_data, it loads it only for `gs://` paths).
"""

import collections
import os

from absl import logging

from bert_tf import fileio
from bert_tf.tasks.classifier.data import InputExample
from bert_tf.tasks.classifier.data import TsvRow
from bert_tf.tasks.classifier.data import iter_text_lines
from bert_tf.tasks.classifier.data import iter_tsv
from bert_tf.tasks.classifier.data import read_tsv
from bert_tf.errors import UserError


# --------------------------------------------------------------------------
# Processors.
# --------------------------------------------------------------------------

class DataProcessor(object):
    """Base class for data converters for sequence classification data sets.

    A task is one small subclass: `files` (split -> file under data_dir),
    `get_labels()` and `create_example(row, set_type)`; then
    `register_processor("my_task", MyProcessor)`. A subclass may also
    override `get_*_examples` as the original's processors do.

    Attributes:
      task_name: str, the task's name in error messages (default: the class
        name without "Processor").
      is_regression: bool; True for a task whose label is a float score
        (`get_labels()` is then `[None]`).
      files: dict split ("train", "dev", "test") -> path relative to data_dir.
      header: bool, or a dict split -> bool: whether row 0 of the file is a
        header (skipped).
    """

    task_name = None
    is_regression = False
    multi_label = False
    files = {}
    header = True

    def get_train_examples(self, data_dir):
        """Gets a collection of `InputExample`s for the train set."""
        return self._read_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        """Gets a collection of `InputExample`s for the dev set."""
        return self._read_examples(data_dir, "dev")

    def get_test_examples(self, data_dir):
        """Gets a collection of `InputExample`s for prediction."""
        return self._read_examples(data_dir, "test")

    def get_labels(self):
        """Gets the list of labels for this data set."""
        raise NotImplementedError()

    def create_example(self, row, set_type):
        """An `InputExample` from a `TsvRow`, or None to skip the row.

        `set_type` is the split ("train", "dev", "test", or the guid prefix
        the task uses for it).
        """
        raise NotImplementedError()

    @classmethod
    def read_tsv(cls, input_file, quotechar=None):
        """Reads a tab separated value file (original: `_read_tsv`); see `read_tsv`."""
        return read_tsv(input_file, quotechar)

    @classmethod
    def _read_tsv(cls, input_file, quotechar=None):
        # The original's name, for code written against it.
        return read_tsv(input_file, quotechar)

    def get_task_name(self):
        """`task_name`, or the class name without "Processor" (for messages)."""
        if self.task_name:
            return self.task_name
        name = type(self).__name__
        if name.endswith("Processor") and len(name) > len("Processor"):
            name = name[:-len("Processor")]
        return name

    # -- helpers for subclasses -------------------------------------------

    def split_path(self, data_dir, split):
        """The path of `split`'s file under data_dir; UserError if it is missing."""
        task = self.get_task_name()
        if split not in self.files:
            raise UserError("the %s task has no %s examples (it reads %s)"
                            % (task, split, self._describe_files()))
        filename = self.files[split]
        path = os.path.join(data_dir, filename)
        if not fileio.exists(path):
            raise UserError("--data_dir=%s: no %s (the %s task reads %s)"
                            % (data_dir, filename, task, self._describe_files()))
        return path

    def read_rows(self, data_dir, split):
        """Yields the `TsvRow`s of `split`'s file, the header included."""
        path = self.split_path(data_dir, split)
        task = self.get_task_name()
        for index, (line_number, fields) in enumerate(iter_tsv(path)):
            yield TsvRow(index, line_number, fields, path, task)

    def has_header(self, split):
        if isinstance(self.header, dict):
            return self.header.get(split, True)
        return bool(self.header)

    def check_label(self, label, row):
        """The label, checked against `get_labels()` (a float for regression).

        Raises:
          UserError: naming the file, line, the label and the allowed labels
            (the original raised a KeyError when converting the example).
        """
        if self.is_regression:
            try:
                return float(label)
            except (TypeError, ValueError):
                raise row.error("score %r of the %s task is not a number"
                                % (label, self.get_task_name()))
        labels = self.get_labels()
        if label not in labels:
            raise row.error("label %r is not one of the %s task's labels %s"
                            % (label, self.get_task_name(), ", ".join(repr(l) for l in labels)))
        return label

    def check_labels(self, text, row):
        """A multi-label example's labels: `text` split on commas, each checked.

        Spaces around a label are dropped; a label listed twice counts once.

        Raises:
          UserError: the list is empty (or has an empty entry), or a label is
            not one of `get_labels()`, naming the file and line.
        """
        labels = [label.strip() for label in text.split(",")]
        if not any(labels):
            raise row.error("empty label list (the %s task needs at least one label, "
                            "comma-separated)" % self.get_task_name())
        if not all(labels):
            raise row.error("empty label in the label list %r" % text)
        known = self.get_labels()
        result = []
        for label in labels:
            if label not in known:
                raise row.error("label %r is not one of the %s task's labels %s"
                                % (label, self.get_task_name(),
                                   ", ".join(repr(l) for l in known)))
            if label not in result:
                result.append(label)
        return result

    def _read_examples(self, data_dir, split, set_type=None):
        set_type = set_type or split
        skip_header = self.has_header(split)
        examples = []
        for row in self.read_rows(data_dir, split):
            if skip_header and row.index == 0:
                continue
            example = self.create_example(row, set_type)
            if example is not None:
                examples.append(example)
        return examples

    def _describe_files(self):
        names = [self.files[s] for s in ("train", "dev", "test") if s in self.files]
        names += sorted(f for s, f in self.files.items() if s not in ("train", "dev", "test"))
        if len(names) <= 1:
            return "".join(names)
        return "%s and %s" % (", ".join(names[:-1]), names[-1])


class XnliProcessor(DataProcessor):
    """Processor for the XNLI data set (original: `XnliProcessor`).

    Train: `multinli/multinli.train.<language>.tsv` (premise, hypo, label;
    "contradictory" is read as "contradiction"). Dev: `xnli.dev.tsv`, only
    the rows whose column 0 is the language. There is no test set. Both files
    have a header. The original hard-codes language "zh".
    """

    task_name = "XNLI"

    def __init__(self, language="zh"):
        self.language = language
        self.files = {"train": os.path.join("multinli", "multinli.train.%s.tsv" % language),
                      "dev": "xnli.dev.tsv"}

    def get_labels(self):
        return ["contradiction", "entailment", "neutral"]

    def create_example(self, row, set_type):
        if set_type == "train":
            text_a, text_b, label = row.columns(0, 1, 2)
            if label == "contradictory":
                label = "contradiction"
        else:
            if row.get(0) != self.language:
                return None
            text_a, text_b, label = row.columns(6, 7, 1)
        guid = "%s-%d" % (set_type, row.index)
        return InputExample(guid, text_a, text_b, self.check_label(label, row))


class MnliProcessor(DataProcessor):
    """Processor for the MultiNLI data set, GLUE version (original: `MnliProcessor`).

    `train.tsv`, `dev_matched.tsv`, `test_matched.tsv` (the mismatched sets
    are not read), each with a header; text_a is column 8, text_b column 9,
    the label the last column; guid `<set>-<column 0>`; test examples get the
    dummy label "contradiction".
    """

    task_name = "MNLI"
    files = {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv"}

    def get_dev_examples(self, data_dir):
        return self._read_examples(data_dir, "dev", "dev_matched")

    def get_labels(self):
        return ["contradiction", "entailment", "neutral"]

    def create_example(self, row, set_type):
        guid = "%s-%s" % (set_type, row.get(0))
        text_a, text_b = row.columns(8, 9)
        if set_type == "test":
            label = "contradiction"
        else:
            label = self.check_label(row.get(-1), row)
        return InputExample(guid, text_a, text_b, label)


class MrpcProcessor(DataProcessor):
    """Processor for the MRPC data set, GLUE version (original: `MrpcProcessor`).

    `train.tsv`, `dev.tsv`, `test.tsv` with a header: Quality, #1 ID, #2 ID,
    #1 String, #2 String (test: index instead of Quality, dummy label "0").
    """

    task_name = "MRPC"
    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}

    def get_labels(self):
        return ["0", "1"]

    def create_example(self, row, set_type):
        guid = "%s-%s" % (set_type, row.index)
        text_a, text_b = row.columns(3, 4)
        label = "0" if set_type == "test" else self.check_label(row.get(0), row)
        return InputExample(guid, text_a, text_b, label)


class ColaProcessor(DataProcessor):
    """Processor for the CoLA data set, GLUE version (original: `ColaProcessor`).

    train/dev: no header; source, label, original label, sentence. test: a
    header, then index, sentence (dummy label "0"). Single sentences.
    """

    task_name = "CoLA"
    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    # Only the test set has a header.
    header = {"train": False, "dev": False, "test": True}

    def get_labels(self):
        return ["0", "1"]

    def create_example(self, row, set_type):
        guid = "%s-%s" % (set_type, row.index)
        if set_type == "test":
            text_a = row.get(1)
            label = "0"
        else:
            text_a = row.get(3)
            label = self.check_label(row.get(1), row)
        return InputExample(guid, text_a, None, label)


class _GluePairProcessor(DataProcessor):
    """A GLUE pair task: `train.tsv`, `dev.tsv`, `test.tsv`, each with a header.

    Subclasses set their labels, the text columns (train/dev and test), the
    label column and whether the guid is `<set>-<column 0>` (the file's id
    column) or `<set>-<row index>`.
    """

    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    labels = ("0", "1")
    text_columns = (1, 2)
    test_text_columns = (1, 2)
    label_column = -1
    guid_from_id_column = True

    def get_labels(self):
        return list(self.labels)

    def test_label(self):
        """The dummy label of test examples (the original's "0"/"contradiction" rule)."""
        return 0.0 if self.is_regression else self.get_labels()[0]

    def create_example(self, row, set_type):
        if self.guid_from_id_column:
            guid = "%s-%s" % (set_type, row.get(0))
        else:
            guid = "%s-%s" % (set_type, row.index)
        if set_type == "test":
            columns = self.test_text_columns
            label = self.test_label()
        else:
            columns = self.text_columns
            label = None
        texts = row.columns(*columns)
        text_a = texts[0]
        text_b = texts[1] if len(texts) > 1 else None
        if label is None:
            label = self.check_label(row.get(self.label_column), row)
        return InputExample(guid, text_a, text_b, label)


class Sst2Processor(_GluePairProcessor):
    """SST-2 (GLUE): train/dev `sentence, label`; test `index, sentence`. Single sentences."""

    task_name = "SST-2"
    text_columns = (0,)
    test_text_columns = (1,)
    label_column = 1
    guid_from_id_column = False


class QnliProcessor(_GluePairProcessor):
    """QNLI (GLUE): `index, question, sentence, label`; test without the label."""

    task_name = "QNLI"
    labels = ("entailment", "not_entailment")


class RteProcessor(_GluePairProcessor):
    """RTE (GLUE): `index, sentence1, sentence2, label`; test without the label."""

    task_name = "RTE"
    labels = ("entailment", "not_entailment")


class WnliProcessor(_GluePairProcessor):
    """WNLI (GLUE): `index, sentence1, sentence2, label` ("0"/"1"); test without the label."""

    task_name = "WNLI"


class QqpProcessor(_GluePairProcessor):
    """QQP (GLUE): `id, qid1, qid2, question1, question2, is_duplicate`; test `id, question1, question2`.

    Some distributions of QQP's train set hold a few broken rows (a question
    that runs over a line end). As TF Model Garden and HF transformers do,
    train/dev rows with too few columns are skipped; a warning names the
    file, the count and the first such line.
    """

    task_name = "QQP"
    text_columns = (3, 4)
    label_column = 5

    def _read_examples(self, data_dir, split, set_type=None):
        self._skipped = []
        examples = super()._read_examples(data_dir, split, set_type)
        if self._skipped:
            logging.warning("%s: skipped %d row(s) with fewer than 6 columns (first: line %d)",
                            self.split_path(data_dir, split), len(self._skipped),
                            self._skipped[0])
        return examples

    def create_example(self, row, set_type):
        if set_type != "test" and len(row) < 6:
            self._skipped.append(row.line_number)
            return None
        return super().create_example(row, set_type)


class StsbProcessor(_GluePairProcessor):
    """STS-B (GLUE), a regression task: the label is the float similarity score.

    `index, genre, filename, year, old_index, source1, source2, sentence1,
    sentence2, score`; test without the score (dummy 0.0).
    """

    task_name = "STS-B"
    labels = (None,)
    is_regression = True
    text_columns = (7, 8)
    test_text_columns = (7, 8)


class MultiLabelProcessor(DataProcessor):
    """A generic multi-label task (`--task_name=multilabel --multi_label`), new.

    `train.tsv`, `dev.tsv`, `test.tsv` in data_dir, no header, each row
    `text_a<TAB>labels` or `text_a<TAB>text_b<TAB>labels`, every row of a
    file with its first row's columns (a row with more or fewer is an error
    naming the file, the line and both counts), the labels a comma-separated
    list (at least one; test.tsv's are not read and may be empty). The label set: `labels.txt` in data_dir (one label a line, in
    the order of the model's outputs) when there is one, else every label of
    train.tsv, sorted. `read_labels(data_dir)` reads it (run_classifier calls
    it before `get_labels()`).
    """

    task_name = "multilabel"
    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    header = False
    multi_label = True
    labels_file = "labels.txt"
    # A row's number of columns -> what they are (for the messages).
    layouts = {2: "text_a, labels", 3: "text_a, text_b, labels"}

    def __init__(self):
        self._labels = None

    def read_rows(self, data_dir, split):
        """The rows of `split`'s file, each with its first row's 2 or 3 columns.

        A row with another number of columns (an extra tab in a text, a
        column added or lost) is an error naming the file, the line and both
        counts, never a text read from the wrong column.
        """
        expected = first = None
        for row in super().read_rows(data_dir, split):
            if expected is None:
                if len(row) not in self.layouts:
                    raise row.error("%d tab-separated column(s), expected 2 (%s) or 3 (%s)"
                                    % (len(row), self.layouts[2], self.layouts[3]))
                expected, first = len(row), row.line_number
            elif len(row) != expected:
                raise row.error("%d tab-separated column(s), expected %d (%s) as line %d has"
                                % (len(row), expected, self.layouts[expected], first))
            yield row

    def read_labels(self, data_dir):
        """Reads the label set from `labels.txt`, or train.tsv; returns it."""
        path = os.path.join(data_dir, self.labels_file)
        if fileio.exists(path):
            labels = []
            for line_number, line in enumerate(iter_text_lines(path), 1):
                label = line.strip()
                if not label:
                    continue
                if "," in label:
                    raise UserError("%s line %d: a label cannot hold a comma: %r"
                                    % (path, line_number, label))
                if label in labels:
                    raise UserError("%s line %d: label %r is listed twice"
                                    % (path, line_number, label))
                labels.append(label)
            if not labels:
                raise UserError("%s: no labels" % path)
        else:
            found = set()
            for row in self.read_rows(data_dir, "train"):
                text = row.get(-1)
                if not text.strip():
                    raise row.error("empty label list (the %s task needs at least one "
                                    "label, comma-separated)" % self.task_name)
                found.update(label.strip() for label in text.split(",") if label.strip())
            labels = sorted(found)
            if not labels:
                raise UserError("%s: no labels" % self.split_path(data_dir, "train"))
        self._labels = labels
        return list(labels)

    def get_labels(self):
        if self._labels is None:
            raise UserError("the %s task reads its labels from data_dir: call "
                            "read_labels(data_dir) first" % self.task_name)
        return list(self._labels)

    def create_example(self, row, set_type):
        guid = "%s-%s" % (set_type, row.index)
        if len(row) not in self.layouts:
            raise row.error("%d tab-separated column(s), expected 2 (%s) or 3 (%s)"
                            % (len(row), self.layouts[2], self.layouts[3]))
        text_a = row.get(0)
        text_b = row.get(1) if len(row) > 2 else None
        if set_type == "test":
            labels = []
        else:
            labels = self.check_labels(row.get(-1), row)
        return InputExample(guid, text_a, text_b, labels)


# --------------------------------------------------------------------------
# Registry.
# --------------------------------------------------------------------------

# Task name (lower case, as `--task_name` is looked up) -> processor class.
PROCESSORS = collections.OrderedDict([
    ("cola", ColaProcessor),
    ("mnli", MnliProcessor),
    ("mrpc", MrpcProcessor),
    ("xnli", XnliProcessor),
    ("sst-2", Sst2Processor),
    ("sst2", Sst2Processor),
    ("qnli", QnliProcessor),
    ("qqp", QqpProcessor),
    ("rte", RteProcessor),
    ("wnli", WnliProcessor),
    ("sts-b", StsbProcessor),
    ("stsb", StsbProcessor),
    ("multilabel", MultiLabelProcessor),
])


def register_processor(name, cls, replace=False):
    """Makes `cls` the processor of task `name` (looked up lower-cased).

    Args:
      name: str, the `--task_name` of the task.
      cls: a `DataProcessor` subclass (called without arguments).
      replace: whether `name` may already name another processor.

    Raises:
      UserError: `name` is taken by another class and `replace` is False.
    """
    key = name.lower()
    if not replace and key in PROCESSORS and PROCESSORS[key] is not cls:
        raise UserError("task %r already names %s (pass replace=True to replace it)"
                        % (key, PROCESSORS[key].__name__))
    PROCESSORS[key] = cls
    return cls


def check_split_files(task_name, data_dir, do_train, do_eval, do_predict,
                      dev_while_training=False):
    """The files of the splits a run reads exist: `split_path`'s one-line error if not.

    Light (no TensorFlow, nothing read): `bert-run-classifier` checks them
    before TensorFlow loads, so a missing file is one line at once; the run
    reads them (and checks their rows) itself. A task without a file for a
    split (one that reads its files its own way) is left to the run.
    """
    if not data_dir:
        return
    processor = get_processor(task_name)
    wanted = {"train": do_train, "dev": do_eval or (dev_while_training and do_train),
              "test": do_predict}
    for split in ("train", "dev", "test"):
        if wanted[split] and split in processor.files:
            processor.split_path(data_dir, split)


def get_processor(task_name):
    """A new processor for `task_name` (lower-cased, as the original's main does).

    Raises:
      UserError: "Task not found: <name> (known: ...)".
    """
    key = task_name.lower()
    if key not in PROCESSORS:
        raise UserError("Task not found: %s (known: %s)" % (key, ", ".join(PROCESSORS)))
    return PROCESSORS[key]()
