"""Named-entity data (CoNLL-2003): sentences in, windowed token-labelling features out (new).

The BERT paper's recipe (§5.3): each word is WordPiece-tokenized on its own,
its first sub-token carries the word's label, the other sub-tokens, [CLS],
[SEP] and the padding carry none. Here "carries none" is `label_mask` 0
(`label_ids` 0 there): the loss and the metrics read only positions whose
`label_mask` is 1.

Files: `train.txt`, `dev.txt`, `test.txt` in CoNLL-2003's layout: one word a
line, its columns separated by whitespace, the word first and its label
last; a blank line between sentences; `-DOCSTART-` lines skipped. Every line
of a file has the column count of its first one. A word whose WordPiece
tokens are none (only characters the tokenizer deletes) is one [UNK].

Long sentences: the sub-tokens of a sentence longer than `max_seq_length - 2`
are cut into run_squad's doc-stride windows (`bert_tf.data.squad_windows`),
so no word is dropped, and each word is labelled (`label_mask` 1) only in its
"max context" window, the one where its first sub-token has the most context
on both sides: the loss counts each word once, and a prediction takes each
word's label from that window.

Records: one `tf.train.Example` per window with int64 `input_ids`,
`input_mask`, `segment_ids`, `label_ids`, `label_mask` [max_seq_length],
`sentence_ids` (the sentence's index in its file) and `is_real_example`, as
run_classifier's `file_based_convert_examples_to_features` writes its own.

TensorFlow is imported only by the functions that write or parse records.
"""

import collections
import os

from absl import logging

from bert_tf import fileio
from bert_tf.data import squad_windows
from bert_tf.data import tfrecord
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress
from bert_tf.tokenization import full_tokenizer

# The three files of --data_dir, by split.
FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
# The label set of a trained model, one label a line, beside its checkpoint.
LABELS_FILE = "labels.txt"
# The label of words outside every entity: first in the label list (label id 0).
OUTSIDE = "O"
DOCSTART = "-DOCSTART-"
# The features of a record, in the order they are written.
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "label_ids", "label_mask",
                 "sentence_ids", "is_real_example")
_NUM_LOGGED_EXAMPLES = 5


class Sentence(collections.namedtuple("Sentence", ["words", "labels", "lines"])):
    """One sentence of a CoNLL file.

    Attributes:
      words: list of str.
      labels: list of str (the last column), one per word.
      lines: list of int, each word's line number in its file (for errors).
    """

    __slots__ = ()


# --------------------------------------------------------------------------
# Reading CoNLL files and the label list.
# --------------------------------------------------------------------------


def read_conll(path):
    """The sentences of a CoNLL-2003 file, in order.

    Raises:
      UserError: a missing file, a line of fewer than 2 columns or of
        another column count than the file's first line, a line that is not
        UTF-8, or no sentence at all; each naming the file (and line).
    """
    if not fileio.exists(path):
        raise UserError("%s: no such file (--data_dir holds %s)"
                        % (path, ", ".join(sorted(FILES.values()))))
    sentences = []
    words, labels, lines = [], [], []
    num_columns = None

    def end_sentence():
        if words:
            sentences.append(Sentence(list(words), list(labels), list(lines)))
        del words[:], labels[:], lines[:]

    with fileio.open_file(path, "rb") as f:
        for line_number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise UserError("%s line %d: not valid UTF-8 (%s)" % (path, line_number, e))
            columns = line.split()
            if not columns:
                end_sentence()
                continue
            if num_columns is None:
                num_columns = len(columns)
            if len(columns) < 2 or len(columns) != num_columns:
                raise UserError(
                    "%s line %d: %d column%s, but %s" % (
                        path, line_number, len(columns), "" if len(columns) == 1 else "s",
                        "a line holds a word and its label (the word first, the label last)"
                        if len(columns) < 2 else "the file's first line has %d" % num_columns))
            if columns[0] == DOCSTART:
                end_sentence()
                continue
            words.append(columns[0])
            labels.append(columns[-1])
            lines.append(line_number)
    end_sentence()
    if not sentences:
        raise UserError("%s: no sentence (an empty file, or -DOCSTART- lines alone)" % path)
    return sentences


def read_splits(data_dir, do_train, do_eval, do_predict, dev_while_training=False):
    """{split: sentences} of the files a run reads: train.txt (do_train), dev.txt
    (do_eval, or evaluation on it while training), test.txt (do_predict).

    Light (no TensorFlow): `bert-run-ner` reads them before TensorFlow loads, so a
    bad file is one line at once; `run_ner` reads them again for its run.

    Raises:
      UserError: as `read_conll`, for the first bad file (train, dev, test).
    """
    wanted = {"train": do_train, "dev": do_eval or (dev_while_training and do_train),
              "test": do_predict}
    return {split: read_conll(os.path.join(data_dir or "", FILES[split]))
            for split in ("train", "dev", "test") if wanted[split]}


def get_labels(sentences):
    """The label list of training sentences: "O" first (id 0), then the others sorted."""
    labels = {label for sentence in sentences for label in sentence.labels}
    return ([OUTSIDE] if OUTSIDE in labels else []) + sorted(labels - {OUTSIDE})


def check_labels(sentences, label_list, path):
    """UserError naming the file and line of the first label that `label_list` lacks."""
    known = set(label_list)
    for sentence in sentences:
        for label, line in zip(sentence.labels, sentence.lines):
            if label not in known:
                raise UserError("%s line %d: label %s was not seen in training (the labels: %s)"
                                % (path, line, label, " ".join(label_list)))


def write_labels(path, label_list):
    """`labels.txt`: one label a line, in id order (atomically)."""
    return fileio.write_text(path, "".join(label + "\n" for label in label_list))


def read_labels(path):
    """The label list of a `labels.txt` (`write_labels`)."""
    with fileio.open_file(path) as f:
        labels = [line.strip() for line in f if line.strip()]
    if not labels:
        raise UserError("%s: no label in it" % path)
    return labels


def labels_beside(directory):
    """The labels of the `labels.txt` in `directory` (a run's, beside its checkpoints), or None."""
    path = os.path.join(directory, LABELS_FILE)
    return read_labels(path) if fileio.exists(path) else None


# --------------------------------------------------------------------------
# Words of raw text.
# --------------------------------------------------------------------------


def _char_class(char):
    """0: a separator (whitespace, a character the tokenizer deletes), 1: a letter of a
    word, 2: a word of its own (punctuation, a CJK character)."""
    cp = ord(char)
    if (cp == 0 or cp == 0xFFFD or full_tokenizer._is_whitespace(char)  # pylint: disable=protected-access
            or full_tokenizer._is_control(char)):  # pylint: disable=protected-access
        return 0
    if full_tokenizer._is_punctuation(char) or full_tokenizer._is_chinese_char(cp):  # pylint: disable=protected-access
        return 2
    return 1


def char_class_ranges():
    """(bounds, classes): `_char_class` of every code point as ranges, for a graph lookup.

    The code points from bounds[i] up to bounds[i + 1] - 1 have classes[i]
    (bounds[0] is 0); `split_words`' rule, as `bert_tf.tasks.token_classification.serving` looks it up.
    """
    bounds, classes = [], []
    for cp in range(0x110000):
        kind = _char_class(chr(cp))
        if not classes or kind != classes[-1]:
            bounds.append(cp)
            classes.append(kind)
    return bounds, classes


def split_words(text):
    """The words of raw text with their character offsets: [(word, start, end)].

    The BasicTokenizer's word boundaries on the text as written (not
    lower-cased): whitespace and the characters it deletes separate words,
    each punctuation and CJK character is a word of its own. `text[start:end]`
    is the word.
    """
    words = []
    start = None
    for i, char in enumerate(text):
        kind = _char_class(char)
        if kind != 1 and start is not None:
            words.append((text[start:i], start, i))
            start = None
        if kind == 2:
            words.append((char, i, i + 1))
        elif kind == 1 and start is None:
            start = i
    if start is not None:
        words.append((text[start:], start, len(text)))
    return words


# --------------------------------------------------------------------------
# Features: windows of sub-tokens, one label per word.
# --------------------------------------------------------------------------


class NerFeature(collections.namedtuple("NerFeature", [
        "sentence_index", "window_index", "input_ids", "input_mask", "segment_ids", "label_ids",
        "label_mask", "word_indexes"])):
    """One window of a sentence, padded to max_seq_length.

    Attributes:
      sentence_index, window_index: which sentence, which of its windows.
      input_ids, input_mask, segment_ids, label_ids, label_mask: lists of int.
      word_indexes: {position: word index} of the positions whose
        `label_mask` is 1 (the words this window labels).
    """

    __slots__ = ()


def word_pieces(tokenizer, words):
    """Each word's WordPiece tokens (`tokenizer.tokenize(word)`; none -> ["[UNK]"])."""
    return [tokenizer.tokenize(word) or ["[UNK]"] for word in words]


def convert_sentence(sentence_index, words, label_ids, tokenizer, max_seq_length, doc_stride):
    """The windows of one sentence as `NerFeature`s.

    Args:
      sentence_index: int, recorded in the features.
      words: list of str.
      label_ids: one int per word, or None (prediction: every label_ids 0).
      tokenizer: a `FullTokenizer`.
      max_seq_length: int >= 3; doc_stride: int >= 1.
    """
    pieces = word_pieces(tokenizer, words)
    tokens, token_word, first_tokens = [], [], []
    for word_index, word_tokens in enumerate(pieces):
        first_tokens.append(len(tokens))
        tokens.extend(word_tokens)
        token_word.extend([word_index] * len(word_tokens))
    max_tokens = max_seq_length - 2  # [CLS] window [SEP]
    spans = squad_windows.doc_spans(len(tokens), max_tokens, doc_stride)
    best_span = squad_windows.max_context_span_indexes(spans, len(tokens))
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    features = []
    for window_index, span in enumerate(spans):
        window_tokens = tokens[span.start:span.start + span.length]
        input_ids = [cls_id] + tokenizer.convert_tokens_to_ids(window_tokens) + [sep_id]
        input_mask = [1] * len(input_ids)
        window_labels = [0] * max_seq_length
        label_mask = [0] * max_seq_length
        word_indexes = {}
        for offset in range(span.length):
            token = span.start + offset
            word = token_word[token]
            if first_tokens[word] == token and best_span[token] == window_index:
                position = offset + 1  # after [CLS]
                label_mask[position] = 1
                window_labels[position] = 0 if label_ids is None else label_ids[word]
                word_indexes[position] = word
        padding = [0] * (max_seq_length - len(input_ids))
        features.append(NerFeature(sentence_index, window_index, input_ids + padding,
                                   input_mask + padding, [0] * max_seq_length, window_labels,
                                   label_mask, word_indexes))
    return features


def convert_sentences(sentences, label_list, tokenizer, max_seq_length, doc_stride):
    """Every sentence's `NerFeature`s, in order (`label_list` None: no labels, for prediction)."""
    label_map = None if label_list is None else {label: i for i, label in enumerate(label_list)}
    features = []
    for index, sentence in enumerate(sentences):
        label_ids = (None if label_map is None
                     else [label_map[label] for label in sentence.labels])
        features.extend(convert_sentence(index, sentence.words, label_ids, tokenizer,
                                         max_seq_length, doc_stride))
        if index < _NUM_LOGGED_EXAMPLES:
            logging.debug("*** Example ***\nwords: %s\nfeatures: %s", " ".join(sentence.words),
                          features[-1])
    return features


def write_features(features, output_file):
    """The features as a TFRecord file (`FEATURE_NAMES`, all int64), written atomically.

    As run_classifier's `file_based_convert_examples_to_features`: the bytes
    of `tf.io.TFRecordWriter`, to `<output_file>.tmp-<pid>`, renamed at the
    end; a full disk is a one-line `UserError` naming `output_file`; progress
    lines every 10 s.

    Returns:
      int, the number of records written.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    records = []
    progress = ItemProgress(os.path.basename(str(output_file)), len(features), "windows")
    for feature in features:
        values = {"input_ids": feature.input_ids, "input_mask": feature.input_mask,
                  "segment_ids": feature.segment_ids, "label_ids": feature.label_ids,
                  "label_mask": feature.label_mask, "sentence_ids": [feature.sentence_index],
                  "is_real_example": [1]}
        example = tf.train.Example(features=tf.train.Features(feature={
            name: int_feature(values[name]) for name in FEATURE_NAMES}))
        # Deterministic (sorted-key) serialization, as classifier_data's records.
        records.append(example.SerializeToString(deterministic=True))
        progress.add()
    with fileio.atomic_write(output_file, "wb") as f:
        f.write(tfrecord.frame_records(records))
    progress.finish()
    return len(records)


def name_to_features(seq_length):
    """The record spec: int64 [seq_length] per-token features, int64 scalars per window."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids", "label_ids", "label_mask")}
    spec["sentence_ids"] = tf.io.FixedLenFeature([], tf.int64)
    spec["is_real_example"] = tf.io.FixedLenFeature([], tf.int64)
    return spec


# --------------------------------------------------------------------------
# Predictions: one label per word.
# --------------------------------------------------------------------------


def word_predictions(features, predictions, num_sentences):
    """Each sentence's predicted label ids, one per word, from its max-context windows.

    Args:
      features: the `NerFeature`s, in order.
      predictions: int [num_features, max_seq_length], a label id per position.
      num_sentences: int.

    Returns:
      list (per sentence) of lists of int (per word).
    """
    words = [{} for _ in range(num_sentences)]
    for feature, row in zip(features, predictions):
        for position, word in feature.word_indexes.items():
            words[feature.sentence_index][word] = int(row[position])
    return [[sentence[i] for i in range(len(sentence))] for sentence in words]


def format_predictions(sentences, predicted_labels):
    """conlleval's input: `word gold predicted` a line, a blank line after each sentence."""
    lines = []
    for sentence, predicted in zip(sentences, predicted_labels):
        for word, gold, label in zip(sentence.words, sentence.labels, predicted):
            lines.append("%s %s %s\n" % (word, gold, label))
        lines.append("\n")
    return "".join(lines)
