"""GLUE-style classification data (original: `run_classifier.py`'s data side).

Ports `InputExample`, `PaddingInputExample`, `InputFeatures`, `DataProcessor`
(with `_read_tsv`), `XnliProcessor`, `MnliProcessor`, `MrpcProcessor`,
`ColaProcessor`, the `processors` dict of `main`, `convert_single_example`,
`convert_examples_to_features`, `file_based_convert_examples_to_features` and
the record spec and `_decode_record` of `file_based_input_fn_builder`
(P = pip bert-tensorflow 1.0.4, lines 130-557 and 770-816).

The four original processors read the same rows, columns, guids and labels as
the original. Beyond the original: the other GLUE tasks in the layout the GLUE
benchmark distributes (SST-2, QNLI, QQP, RTE, WNLI and the STS-B regression),
a registry a user's task can join (`register_processor`), and one-line
`UserError`s for a missing file, a short row or an unknown label (the original
stopped with an IndexError or a KeyError traceback).

Records: one `tf.train.Example` per example with `input_ids`, `input_mask`,
`segment_ids`, `label_ids` and `is_real_example`, as the original writes them.

Long documents (new, run_classifier --doc_stride): a text_a longer than a
record's room is cut into run_squad's doc-stride windows
(`bert_tf.data.text_windows`), one record per window
(`convert_example_windows`), each with its example's label and a
`document_index` int64 feature (the example's index in the split) after
`is_real_example`.

Multi-label (new, run_classifier --multi_label): an example's label is a list
of labels (the label column a comma-separated list, `check_labels`); its
record's `label_ids` is a fixed-length multi-hot int64 feature [num_labels]
(1 at each of its labels' indices into `get_labels()`). The `multilabel`
task (`MultiLabelProcessor`) reads such a TSV without a header.

Port note: map entries are serialized in sorted key order (protobuf's
deterministic serialization). The original calls `SerializeToString()`, whose
map order under protobuf 7 (upb) changes from process to process; its records
equal ours after deterministic re-serialization.

TensorFlow is imported only by the functions that write or parse records.
"""

import collections
import csv
import os

from absl import logging

from bert_tf import fileio
from bert_tf import tokenization
from bert_tf.data import text_windows
from bert_tf.data.text_features import build_pair_features
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress

# The features of a classifier record, in the original's OrderedDict order.
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example")

# The original logs the first 5 examples' features at INFO; here at DEBUG (--verbosity=1).
_NUM_LOGGED_EXAMPLES = 5
_PROGRESS_EVERY = 10000
_READ_BLOCK_BYTES = 1 << 24


# --------------------------------------------------------------------------
# Data classes.
# --------------------------------------------------------------------------

class _Record(object):
    """Equality and repr by attributes (the original's classes have neither)."""

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in vars(self).items()))


class InputExample(_Record):
    """A single training/test example for simple sequence classification.

    Args:
      guid: Unique id for the example.
      text_a: string. The untokenized text of the first sequence. For single
        sequence tasks, only this sequence must be specified.
      text_b: (Optional) string. The untokenized text of the second sequence.
        Only must be specified for sequence pair tasks.
      label: (Optional) string. The label of the example (a float score for a
        regression task). This should be specified for train and dev
        examples; test examples carry a dummy label.
    """

    def __init__(self, guid, text_a, text_b=None, label=None):
        self.guid = guid
        self.text_a = text_a
        self.text_b = text_b
        self.label = label


class PaddingInputExample(_Record):
    """Fake example so the num input examples is a multiple of the batch size.

    When running eval/predict on the TPU, we need to pad the number of examples
    to be a multiple of the batch size, because the TPU requires a fixed batch
    size. The alternative is to drop the last batch, which is bad because it
    means the entire output data won't be generated.

    We use this class instead of `None` because treating `None` as padding
    batches could cause silent errors.
    """


class InputFeatures(_Record):
    """A single set of features of data.

    input_ids, input_mask, segment_ids: lists of int of length max_seq_length.
    label_id: int index into `get_labels()` (a float score for regression).
    is_real_example: False for a `PaddingInputExample`.
    document_index: (new) a window's example index in its split (None: the
      example's one record, as the original's).
    """

    def __init__(self, input_ids, input_mask, segment_ids, label_id, is_real_example=True,
                 document_index=None):
        # The original's class, field for field: its constructor is the API (alike, not shared).
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.label_id = label_id
        self.is_real_example = is_real_example
        self.document_index = document_index


# --------------------------------------------------------------------------
# Reading tab-separated files.
# --------------------------------------------------------------------------

def _iter_text_lines(input_file):
    """Yields the lines of `input_file` as `tf.gfile.GFile(input_file, "r")` does.

    The original iterates over a GFile, whose C++ reader splits on "\\n" only
    and drops every "\\r" byte ("\\r\\n" ends a line like "\\n"; "a\\rb" reads
    "ab"). Each line keeps its "\\n" (csv strips it).

    Raises:
      UserError: a line is not valid UTF-8 (the original stopped with a
        UnicodeDecodeError traceback), naming the file and line.
    """
    with fileio.open_file(input_file, "rb") as f:
        pending = b""
        line_number = 0
        while True:
            block = f.read(_READ_BLOCK_BYTES)
            if not block:
                break
            lines = (pending + block).split(b"\n")
            pending = lines.pop()
            for raw in lines:
                line_number += 1
                yield _decode_line(raw + b"\n", input_file, line_number)
        if pending:
            line = _decode_line(pending, input_file, line_number + 1)
            if line:
                yield line


def _decode_line(raw, input_file, line_number):
    if b"\r" in raw:
        raw = raw.replace(b"\r", b"")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError("%s line %d: not valid UTF-8 (%s)" % (input_file, line_number, e))


def iter_tsv(input_file, quotechar=None):
    """Yields `(line_number, row)` for each row of a tab-separated file.

    Rows are split as the original's `_read_tsv` splits them (see `read_tsv`);
    `line_number` is the 1-based line the row ends on.
    """
    reader = csv.reader(_iter_text_lines(input_file), delimiter="\t", quotechar=quotechar)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise UserError("%s line %d: %s" % (input_file, reader.line_num, e))
        yield reader.line_num, row


def read_tsv(input_file, quotechar=None):
    """Reads a tab separated value file (original: `DataProcessor._read_tsv`).

    `csv.reader(f, delimiter="\\t", quotechar=quotechar)` over the file's lines
    as `tf.gfile` reads them. With the default `quotechar=None` there is no
    quote processing: quote characters stay in the text literally (GLUE text
    has unbalanced `"`), and every line is one row.

    Returns:
      A list of rows, each a list of str.
    """
    return [row for _, row in iter_tsv(input_file, quotechar)]


class TsvRow(object):
    """One row of a processor's input file: its fields, file and line (for errors).

    Attributes:
      index: int, the 0-based row index (the original's `i`; row 0 is the
        header of a file that has one).
      line_number: int, the 1-based line of the file.
      fields: list of str.
      path: str, the file.
    """

    __slots__ = ("index", "line_number", "fields", "path", "_task")

    def __init__(self, index, line_number, fields, path, task):
        self.index = index
        self.line_number = line_number
        self.fields = fields
        self.path = path
        self._task = task

    def __len__(self):
        return len(self.fields)

    def get(self, column):
        """Column `column` (0-based; negative counts from the end) as str.

        Raises:
          UserError: the row has too few columns, naming the file and line.
        """
        return self.columns(column)[0]

    def columns(self, *columns):
        """A list of the given columns as str (see `get`)."""
        needed = max(c + 1 if c >= 0 else -c for c in columns)
        if len(self.fields) < needed:
            raise UserError(
                "%s line %d: %d tab-separated column(s), but the %s task reads "
                "column(s) %s (1-based), so it needs at least %d"
                % (self.path, self.line_number, len(self.fields), self._task,
                   ", ".join(str(c + 1 if c >= 0 else c) for c in columns), needed))
        return [tokenization.convert_to_unicode(self.fields[c]) for c in columns]

    def error(self, message):
        """A UserError naming this row's file and line."""
        return UserError("%s line %d: %s" % (self.path, self.line_number, message))


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
    `text_a<TAB>labels` or `text_a<TAB>text_b<TAB>labels`, the labels a
    comma-separated list (at least one; test.tsv's are not read and may be
    empty). The label set: `labels.txt` in data_dir (one label a line, in
    the order of the model's outputs) when there is one, else every label of
    train.tsv, sorted. `read_labels(data_dir)` reads it (run_classifier calls
    it before `get_labels()`).
    """

    task_name = "multilabel"
    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    header = False
    multi_label = True
    labels_file = "labels.txt"

    def __init__(self):
        self._labels = None

    def read_labels(self, data_dir):
        """Reads the label set from `labels.txt`, or train.tsv; returns it."""
        path = os.path.join(data_dir, self.labels_file)
        if fileio.exists(path):
            labels = []
            for line_number, line in enumerate(_iter_text_lines(path), 1):
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
                if len(row) < 2:
                    raise row.error("%d tab-separated column(s); the %s task reads "
                                    "text_a[, text_b], labels" % (len(row), self.task_name))
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
        if len(row) < 2:
            raise row.error("%d tab-separated column(s); the %s task reads "
                            "text_a[, text_b], labels" % (len(row), self.task_name))
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


def get_processor(task_name):
    """A new processor for `task_name` (lower-cased, as the original's main does).

    Raises:
      UserError: "Task not found: <name> (known: ...)".
    """
    key = task_name.lower()
    if key not in PROCESSORS:
        raise UserError("Task not found: %s (known: %s)" % (key, ", ".join(PROCESSORS)))
    return PROCESSORS[key]()


# --------------------------------------------------------------------------
# Features.
# --------------------------------------------------------------------------

def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer,
                           is_regression=False, multi_label=False):
    """Converts a single `InputExample` into a single `InputFeatures`.

    `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` (see `build_pair_features`);
    `text_b` counts only if it is non-empty and tokenizes to something. The
    first 5 examples (`ex_index < 5`) are logged as the original logs them.

    Args:
      ex_index: int, the example's index (for logging).
      example: `InputExample` or `PaddingInputExample` (all zeros,
        is_real_example=False).
      label_list: list of labels; label_id is the label's index.
      max_seq_length: int.
      tokenizer: `FullTokenizer`.
      is_regression: if True, label_id is `float(example.label)`.
      multi_label: if True, `example.label` is a list of labels (or a
        comma-separated str) and label_id a multi-hot list [len(label_list)].

    Returns:
      `InputFeatures`.

    Raises:
      UserError: the label is not in `label_list` (the original: KeyError).
    """
    if isinstance(example, PaddingInputExample):
        return InputFeatures(
            input_ids=[0] * max_seq_length,
            input_mask=[0] * max_seq_length,
            segment_ids=[0] * max_seq_length,
            label_id=(0.0 if is_regression else
                      [0] * len(label_list) if multi_label else 0),
            is_real_example=False)

    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    features = build_pair_features(tokens_a, tokens_b, max_seq_length, tokenizer)
    label_id = _label_id(example, label_list, is_regression, multi_label)
    if ex_index < _NUM_LOGGED_EXAMPLES:
        _log_example(example, features, label_id, is_regression, multi_label)
    return InputFeatures(
        input_ids=features.input_ids,
        input_mask=features.input_mask,
        segment_ids=features.segment_ids,
        label_id=label_id,
        is_real_example=True)


def convert_example_windows(ex_index, example, label_list, max_seq_length, tokenizer,
                            doc_stride, is_regression=False, multi_label=False):
    """A single-text `InputExample` as the `InputFeatures` of its doc-stride windows (new).

    `[CLS] window [SEP]` of each of `text_windows.spans` (every token of
    text_a is in some window; a text that fits is one window, the features
    `convert_single_example` gives), each with the example's label and
    `document_index = ex_index`. The first windows of the first 5 examples
    are logged as `convert_single_example` logs them.

    Raises:
      UserError: the example has a text_b (windows cut one text), or its
        label is not in `label_list`.
    """
    if example.text_b:
        raise UserError("example %s has a text_b: --doc_stride cuts single texts into "
                        "windows, not pairs" % example.guid)
    tokens = tokenizer.tokenize(example.text_a)
    label_id = _label_id(example, label_list, is_regression, multi_label)
    windows = []
    for span in text_windows.spans(len(tokens), max_seq_length, doc_stride):
        features = build_pair_features(tokens[span.start:span.start + span.length], None,
                                       max_seq_length, tokenizer)
        if ex_index < _NUM_LOGGED_EXAMPLES and not windows:
            _log_example(example, features, label_id, is_regression, multi_label)
        windows.append(InputFeatures(
            input_ids=features.input_ids, input_mask=features.input_mask,
            segment_ids=features.segment_ids, label_id=label_id, is_real_example=True,
            document_index=ex_index))
    return windows


def _label_id(example, label_list, is_regression, multi_label):
    """The record's label: a class index, a float score, or a multi-hot list."""
    if is_regression:
        label_id = float(example.label)
    elif multi_label:
        label_id = multi_hot(example, label_list)
    else:
        label_map = {}
        for (i, label) in enumerate(label_list):
            label_map[label] = i
        if example.label not in label_map:
            raise UserError("example %s: label %r is not one of the labels %s"
                            % (example.guid, example.label,
                               ", ".join(repr(l) for l in label_list)))
        label_id = label_map[example.label]
    return label_id


def _log_example(example, features, label_id, is_regression, multi_label):
    """The original's log of one of the first examples (at DEBUG here)."""
    logging.debug("*** Example ***")
    logging.debug("guid: %s", example.guid)
    logging.debug("tokens: %s",
                  " ".join(tokenization.printable_text(x) for x in features.tokens))
    logging.debug("input_ids: %s", " ".join(str(x) for x in features.input_ids))
    logging.debug("input_mask: %s", " ".join(str(x) for x in features.input_mask))
    logging.debug("segment_ids: %s", " ".join(str(x) for x in features.segment_ids))
    if is_regression or multi_label:
        logging.debug("label: %s (label_ids = %r)", example.label, label_id)
    else:
        logging.debug("label: %s (id = %d)", example.label, label_id)


def multi_hot(example, label_list):
    """The multi-hot list [len(label_list)] of a multi-label example's labels.

    `example.label`: a list of labels, or a comma-separated str.

    Raises:
      UserError: a label is not in `label_list`.
    """
    labels = example.label
    if isinstance(labels, str):
        labels = [label.strip() for label in labels.split(",") if label.strip()]
    index = {label: i for i, label in enumerate(label_list)}
    ids = [0] * len(label_list)
    for label in labels or ():
        if label not in index:
            raise UserError("example %s: label %r is not one of the labels %s"
                            % (example.guid, label, ", ".join(repr(l) for l in label_list)))
        ids[index[label]] = 1
    return ids


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                 is_regression=False, multi_label=False):
    """`InputExample`s -> a list of `InputFeatures` (the original's in-memory variant)."""
    features = []
    for ex_index, example in enumerate(examples):
        if ex_index % _PROGRESS_EVERY == 0:
            logging.info("Writing example %d of %d", ex_index, len(examples))
        features.append(convert_single_example(ex_index, example, label_list, max_seq_length,
                                               tokenizer, is_regression, multi_label))
    return features


def features_to_example(feature, is_regression=False):
    """The `tf.train.Example` of an `InputFeatures`, features in the original's order."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    features = collections.OrderedDict()
    features["input_ids"] = int_feature(feature.input_ids)
    features["input_mask"] = int_feature(feature.input_mask)
    features["segment_ids"] = int_feature(feature.segment_ids)
    if is_regression:
        features["label_ids"] = tf.train.Feature(
            float_list=tf.train.FloatList(value=[feature.label_id]))
    elif isinstance(feature.label_id, (list, tuple)):
        features["label_ids"] = int_feature(feature.label_id)  # multi-hot (multi-label)
    else:
        features["label_ids"] = int_feature([feature.label_id])
    features["is_real_example"] = int_feature([int(feature.is_real_example)])
    if feature.document_index is not None:
        features[text_windows.DOCUMENT_INDEX] = int_feature([feature.document_index])
    return tf.train.Example(features=tf.train.Features(feature=features))


def file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                            output_file, is_regression=False,
                                            progress_every=None, multi_label=False,
                                            doc_stride=None):
    """Converts a set of `InputExample`s to a TFRecord file, written atomically.

    One `tf.train.Example` per example (`FEATURE_NAMES`, all int64; for
    regression `label_ids` is a float); with `doc_stride` (new), one per
    window of each example (`convert_example_windows`, with `document_index`). The records go to
    `<output_file>.tmp-<pid>`, renamed to `output_file` at the end, so an
    interrupted run leaves no file under the final name, and a full disk is a
    one-line `UserError` naming `output_file` (`fileio.no_room_error`).

    Besides the original's "Writing example %d of %d" every 10000 examples,
    logs `<file name>: <done>/<total> examples, <rate>, elapsed, ETA` every 10 s
    (and every `progress_every` examples, if given) and when the file is done.

    Returns:
      int, the number of records written.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    num_records = 0
    fileio.makedirs(os.path.dirname(str(output_file)))
    tmp = fileio.temporary_name(output_file)
    progress = ItemProgress(os.path.basename(str(output_file)), len(examples), "examples",
                            every=progress_every)
    try:
        with tf.io.TFRecordWriter(tmp) as writer:
            for ex_index, example in enumerate(examples):
                if ex_index % _PROGRESS_EVERY == 0:
                    logging.info("Writing example %d of %d", ex_index, len(examples))
                if doc_stride is None:
                    features = [convert_single_example(ex_index, example, label_list,
                                                       max_seq_length, tokenizer, is_regression,
                                                       multi_label)]
                else:
                    features = convert_example_windows(ex_index, example, label_list,
                                                       max_seq_length, tokenizer, doc_stride,
                                                       is_regression, multi_label)
                for feature in features:
                    # Port note: deterministic (sorted-key) serialization, see the module
                    # docstring.
                    writer.write(features_to_example(feature, is_regression)
                                 .SerializeToString(deterministic=True))
                num_records += len(features)
                progress.add()
        fileio.rename(tmp, output_file)
        progress.finish()
    except Exception as e:  # pylint: disable=broad-except
        failure = fileio.no_room_error(output_file, e)
        if failure is None:
            raise
        raise failure from e
    finally:
        try:
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.remove(tmp)
        except (OSError, tf.errors.OpError):
            pass
    return num_records


def name_to_features(seq_length, is_regression=False, num_labels=None, windows=False):
    """The record spec of the original `file_based_input_fn_builder`.

    input_ids, input_mask, segment_ids: int64 [seq_length]; label_ids (float32
    for regression) and is_real_example: int64 scalars. `num_labels` (a
    multi-label task's): label_ids is multi-hot int64 [num_labels].
    `windows` (--doc_stride's records): also document_index, an int64 scalar.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if num_labels or windows:
        spec = name_to_features(seq_length, is_regression)
        if num_labels:
            spec["label_ids"] = tf.io.FixedLenFeature([num_labels], tf.int64)
        if windows:
            spec[text_windows.DOCUMENT_INDEX] = tf.io.FixedLenFeature([], tf.int64)
        return spec
    return {
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def decode_record(record, name_to_features):  # pylint: disable=redefined-outer-name
    """Decodes a record to a dict of Tensors (original: `_decode_record`).

    tf.Example only supports tf.int64, but the TPU only supports tf.int32.
    So cast all int64 to int32.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    example = tf.io.parse_single_example(record, name_to_features)
    for name in list(example.keys()):
        t = example[name]
        if t.dtype == tf.int64:
            t = tf.cast(t, tf.int32)
        example[name] = t
    return example
