"""Multiple-choice data in SWAG's layout: CSV in, TFRecords out (new; the paper's §4.4).

The BERT paper fine-tunes SWAG as four sequences per example, each sentence
A (the context) with one continuation as sentence B. The original released
no script for it; this module reads SWAG's regular CSV files and writes
run_classifier-style records:

  video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label

The header names the columns: `sent1` (the context), `sent2` (the start of
the second sentence), `ending0` ... `ending<N-1>` (any number N >= 2 of
choices, the `ending*` columns) and `label` (the right ending's index; a
test file may lack it). Choice i is packed as the pair
(sent1, sent2 + " " + ending_i) by the classifier's `build_pair_features`
(`[CLS] a [SEP] b [SEP]`, `truncate_seq_pair` to max_seq_length - 3).

Records: one `tf.train.Example` per example with the classifier's features
(`classifier_data.FEATURE_NAMES`, all int64): `input_ids`, `input_mask`,
`segment_ids` of length num_choices * max_seq_length (the choices' rows one
after the other), `label_ids` and `is_real_example`; read back with
`classifier_data.name_to_features(num_choices * max_seq_length)`.

Files: `train.csv`, `val.csv` (SWAG's dev name; `dev.csv` too) and
`test.csv` in data_dir. A missing file, a header without the columns, a row
with another number of fields than the header, a label that is not a choice
and a file without examples are one-line `UserError`s naming the file (and
the line).

TensorFlow is imported only by the function that writes records.
"""

import csv
import os

from absl import logging

from bert_tf import fileio
from bert_tf import tokenization
from bert_tf.data import tfrecord
from bert_tf.tasks.classifier.data import InputFeatures
from bert_tf.tasks.classifier.data import features_to_example
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress
from bert_tf.tokenization.pair_features import build_pair_features

# split -> the file names it is read from, the first that exists.
FILES = {"train": ("train.csv",), "dev": ("val.csv", "dev.csv"), "test": ("test.csv",)}
_ENDING = "ending"
_NUM_LOGGED_EXAMPLES = 5
_FLUSH_RECORDS = 4096


class MultipleChoiceExample(object):
    """One example: a context, the start of its second sentence, its endings and the answer.

    Args:
      guid: str, "<split>-<row>".
      context: str, SWAG's `sent1` (sentence A of every choice).
      start: str, SWAG's `sent2` (sentence B of choice i is start + " " + ending i).
      endings: list of str, the choices.
      label: int, the right ending's index (0 for a test file without labels).
    """

    def __init__(self, guid, context, start, endings, label=0):
        self.guid = guid
        self.context = context
        self.start = start
        self.endings = list(endings)
        self.label = label

    def __repr__(self):
        return "MultipleChoiceExample(%s)" % ", ".join("%s=%r" % kv for kv in vars(self).items())


def choice_texts(start, ending):
    """Sentence B of a choice: `start + " " + ending` (SWAG's sent2 and ending i)."""
    return start + " " + ending if start else ending


def split_path(data_dir, split):
    """The file of `split` ("train", "dev", "test") in data_dir; UserError if there is none."""
    for name in FILES[split]:
        path = os.path.join(data_dir, name)
        if fileio.exists(path):
            return path
    raise UserError("--data_dir=%s: no %s (the multiple-choice task reads train.csv, val.csv "
                    "or dev.csv, and test.csv)" % (data_dir, " or ".join(FILES[split])))


def _columns(header, path):
    """(sent1, sent2, [ending columns], label or None): the header's column indexes."""
    index = {name.strip(): i for i, name in enumerate(header)}
    missing = [name for name in ("sent1", "sent2", _ENDING + "0", _ENDING + "1")
               if name not in index]
    if missing:
        raise UserError("%s line 1: the header has no %s column (it names %s; the file needs "
                        "sent1, sent2 and ending0, ending1, ...)"
                        % (path, missing[0], ",".join(header)))
    endings = []
    while _ENDING + str(len(endings)) in index:
        endings.append(index[_ENDING + str(len(endings))])
    extra = sorted(name for name in index if name.startswith(_ENDING)
                   and name[len(_ENDING):].isdigit() and index[name] not in endings)
    if extra:
        raise UserError("%s line 1: column %s, but no %s%d before it (the endings are "
                        "ending0, ending1, ... without a gap)"
                        % (path, extra[0], _ENDING, len(endings)))
    return index["sent1"], index["sent2"], endings, index.get("label")


def read_examples(path, split, needs_label=True):
    """The `MultipleChoiceExample`s of one SWAG-layout CSV file.

    Args:
      path: the file.
      split: "train", "dev" or "test" (the guids' prefix).
      needs_label: whether the file must have a `label` column (train, dev);
        a test file may lack it, or leave it empty.

    Raises:
      UserError: one line naming the file (and line): no header, missing
        columns, a row of another number of fields than the header, a label
        that is not a choice, no example.
    """
    examples = []
    try:
        with fileio.open_file(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                raise UserError("%s: empty file (it needs a header line naming sent1, sent2, "
                                "ending0, ending1, ... and label)" % path)
            sent1, sent2, endings, label = _columns(header, path)
            if label is None and needs_label:
                raise UserError("%s line 1: the header has no label column (the %s file "
                                "needs the right ending's index)" % (path, split))
            for row in reader:
                where = "%s line %d" % (path, reader.line_num)
                if len(row) != len(header):
                    raise UserError("%s: %d fields, but the header has %d" % (
                        where, len(row), len(header)))
                text = label is not None and row[label].strip()
                if text or needs_label:
                    if not text.isdigit() or int(text) >= len(endings):
                        raise UserError("%s: label %r is not a choice (0 to %d)"
                                        % (where, text, len(endings) - 1))
                examples.append(MultipleChoiceExample(
                    "%s-%d" % (split, len(examples)),
                    tokenization.convert_to_unicode(row[sent1]),
                    tokenization.convert_to_unicode(row[sent2]),
                    [tokenization.convert_to_unicode(row[i]) for i in endings],
                    int(text) if text else 0))
    except UnicodeDecodeError as e:
        raise UserError("%s: not valid UTF-8 (%s)" % (path, e))
    except csv.Error as e:
        raise UserError("%s line %d: %s" % (path, reader.line_num, e))
    if not examples:
        raise UserError("%s: no %s examples (an empty file, or its header alone)"
                        % (path, "training" if split == "train" else split))
    return examples


class MultipleChoiceProcessor(object):
    """The splits of a SWAG-layout data_dir, as `finetuning.classifier_examples` reads them."""

    def get_train_examples(self, data_dir):
        return read_examples(split_path(data_dir, "train"), "train")

    def get_dev_examples(self, data_dir):
        return read_examples(split_path(data_dir, "dev"), "dev")

    def get_test_examples(self, data_dir):
        return read_examples(split_path(data_dir, "test"), "test", needs_label=False)


def convert_single_example(ex_index, example, max_seq_length, tokenizer, num_choices=None):
    """An `InputFeatures` whose `input_ids`, `input_mask`, `segment_ids` hold every choice.

    Choice i is `build_pair_features(context, choice_texts(start, ending_i))`;
    the rows [max_seq_length] follow each other ([num_choices * max_seq_length]).
    The first 5 examples are logged at DEBUG, as run_classifier's.

    Args:
      num_choices: the run's number of choices; None: the example's.

    Raises:
      UserError: the example has another number of endings than `num_choices`.
    """
    if num_choices is not None and len(example.endings) != num_choices:
        raise UserError("example %s: %d endings, but the run has %d choices"
                        % (example.guid, len(example.endings), num_choices))
    tokens_a = tokenizer.tokenize(example.context)
    input_ids, input_mask, segment_ids = [], [], []
    for i, ending in enumerate(example.endings):
        features = build_pair_features(
            tokens_a, tokenizer.tokenize(choice_texts(example.start, ending)), max_seq_length,
            tokenizer)
        input_ids += features.input_ids
        input_mask += features.input_mask
        segment_ids += features.segment_ids
        if ex_index < _NUM_LOGGED_EXAMPLES:
            logging.debug("guid: %s choice %d: %s", example.guid, i,
                          " ".join(tokenization.printable_text(t) for t in features.tokens))
    if ex_index < _NUM_LOGGED_EXAMPLES:
        logging.debug("label: %d", example.label)
    return InputFeatures(input_ids, input_mask, segment_ids, example.label)


def file_based_convert_examples_to_features(examples, max_seq_length, tokenizer, output_file,
                                            num_choices):
    """Writes the examples' records to `output_file` (a temporary name, then renamed).

    The records are the classifier's (`features_to_example`, deterministic
    serialization); a full disk is a one-line `UserError` naming the file.
    Progress: `<file name>: done/total examples, rate, ETA`.

    Returns:
      int, the number of records written.
    """
    progress = ItemProgress(os.path.basename(str(output_file)), len(examples), "examples")
    with fileio.atomic_write(output_file, mode="wb", encoding=None) as f:
        pending = []
        for ex_index, example in enumerate(examples):
            feature = convert_single_example(ex_index, example, max_seq_length, tokenizer,
                                             num_choices)
            pending.append(features_to_example(feature).SerializeToString(deterministic=True))
            if len(pending) == _FLUSH_RECORDS:
                f.write(tfrecord.frame_records(pending))
                pending = []
            progress.add()
        f.write(tfrecord.frame_records(pending))
    progress.finish()
    return len(examples)
