"""GLUE-style classification data (original: `run_classifier.py`'s data side).

Ports `InputExample`, `PaddingInputExample`, `InputFeatures`, `_read_tsv`
(`read_tsv`), `convert_single_example`, `convert_examples_to_features`,
`file_based_convert_examples_to_features` and the record spec and
`_decode_record` of `file_based_input_fn_builder` (P = pip
bert-tensorflow 1.0.4, lines 130-208, 380-557 and 770-784). The processors
(a task's files -> `InputExample`s, and the registry of `--task_name`s) are
`bert_tf.tasks.classifier.data_processors`'.

Beyond the original: one-line `UserError`s for a line that is not UTF-8, a
row too short for a task's columns (`TsvRow`) or an example's label outside
the label list (the original stopped with a UnicodeDecodeError, an
IndexError or a KeyError traceback).

Records: one `tf.train.Example` per example with `input_ids`, `input_mask`,
`segment_ids`, `label_ids` and `is_real_example`, as the original writes them.

Long documents (new, run_classifier --doc_stride): a text_a longer than a
record's room is cut into run_squad's doc-stride windows
(`bert_tf.data.text_windows`), one record per window
(`convert_example_windows`), each with its example's label and a
`document_index` int64 feature (the example's index in the split) after
`is_real_example`.

Multi-label (new, run_classifier --multi_label): an example's label is a list
of labels (the label column a comma-separated list, `DataProcessor.check_labels`
of `bert_tf.tasks.classifier.data_processors`); its record's `label_ids` is a
fixed-length multi-hot int64 feature [num_labels] (1 at each of its labels'
indices into `get_labels()`, `multi_hot`).

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
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress
from bert_tf.tokenization.pair_features import build_pair_features

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

def iter_text_lines(input_file):
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
    reader = csv.reader(iter_text_lines(input_file), delimiter="\t", quotechar=quotechar)
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
