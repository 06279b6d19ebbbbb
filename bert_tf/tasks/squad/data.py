"""SQuAD 1.1 / 2.0 examples, features and records (original: `run_squad.py`'s data side).

Ports, from google-research/bert `run_squad.py` (same line numbers in pip
bert-tensorflow 1.0.4 and GitHub HEAD):

  SquadExample, InputFeatures (157-224)    read_squad_examples (227-306)
  convert_examples_to_features (309-473)   _improve_answer_span (476-510)
  input_fn_builder's name_to_features and  _decode_record (687-713)
  FeatureWriter (1058-1094)
  (the doc-stride windows and _check_is_max_context, 350-364 and 513-547,
  are in `bert_tf.data.squad_windows`, with their graph form; RawResult,
  write_predictions, get_final_text, the n-best and its softmax, 737-1055,
  are in `bert_tf.tasks.squad.data_predictions`, and stay importable from here)

The library reads no flags: what the original took from `FLAGS`
(`version_2_with_negative`) is an argument here. TensorFlow is imported only
by the functions that write or parse TFRecords.

Same output as the original (tests/data/test_squad_data.py runs both): the
same examples, the same features in the same order with the same unique ids,
and the same first-20-examples log. Where the original is slow, the speed
comes from (results unchanged):

* a paragraph's WordPiece tokens are computed once for all its questions (the
  original re-tokenizes the context for every question);
* the "max context" span of every document token is found in one pass over
  the doc spans (the original scans all spans for every token of every span);
* `_improve_answer_span` compares token lists of the answer's length instead
  of joining every sub-span (quadratic in the answer's word-span length).

Port notes (each also marked `Port note:` where it happens):

* A file that is not SQuAD JSON, a missing key, an answer_start outside its
  context, or a training question without exactly 1 answer stops with a
  one-line `UserError` that names the file and the key or question id (the
  original raised a bare KeyError / IndexError / ValueError).
* max_seq_length too small for a question (no room for any document token):
  UserError; the original loops forever (its main() checks the flags first).
* TFRecords are serialized deterministically (see `FeatureWriter`), and every
  output file is written atomically.
"""

import collections
import json
import os

from absl import logging

from bert_tf import fileio
from bert_tf import tokenization
from bert_tf.data import squad_windows
# The prediction side's public names, where run_squad's users import them from.
from bert_tf.tasks.squad.data_predictions import RawResult  # noqa: F401
from bert_tf.tasks.squad.data_predictions import get_final_text  # noqa: F401
from bert_tf.tasks.squad.data_predictions import write_predictions  # noqa: F401
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress


class SquadExample(object):
    """A single training/test example for simple sequence classification.

    For examples without an answer, the start and end position are -1.

    Attributes:
      qas_id: the question's "id".
      question_text: str.
      doc_tokens: list of str, the context split on whitespace (shared by all
        questions of a paragraph).
      orig_answer_text: str or None (prediction), "" for an impossible question.
      start_position, end_position: int indexes into `doc_tokens` (inclusive),
        -1 for an impossible question, None for prediction.
      is_impossible: bool (only read for v2.0 training).
    """

    def __init__(self,
                 qas_id,
                 question_text,
                 doc_tokens,
                 orig_answer_text=None,
                 start_position=None,
                 end_position=None,
                 is_impossible=False):
        # The original's class, field for field: its constructor is the API (alike, not shared).
        self.qas_id = qas_id
        self.question_text = question_text
        self.doc_tokens = doc_tokens
        self.orig_answer_text = orig_answer_text
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible

    def __str__(self):
        return self.__repr__()

    def __repr__(self):
        s = "qas_id: %s" % (tokenization.printable_text(self.qas_id))
        s += ", question_text: %s" % (tokenization.printable_text(self.question_text))
        s += ", doc_tokens: [%s]" % (" ".join(self.doc_tokens))
        # As the original: a start position of 0 hides all three fields.
        if self.start_position:
            s += ", start_position: %d" % (self.start_position)
            s += ", end_position: %d" % (self.end_position)
            s += ", is_impossible: %r" % (self.is_impossible)
        return s


class InputFeatures(object):
    """A single set of features of data (one doc span of one example).

    Attributes:
      unique_id: int, from 1000000000 up, one per feature.
      example_index: int, the index of its example in the list given.
      doc_span_index: int, the index of this span among its example's spans.
      tokens: list of str, `[CLS] query [SEP] doc span [SEP]` (unpadded).
      token_to_orig_map: dict {index in `tokens`: index in `doc_tokens`} for the
        document tokens.
      token_is_max_context: dict {index in `tokens`: bool}, whether this span is
        the one that gives the token the most context.
      input_ids, input_mask, segment_ids: lists of int of length max_seq_length.
      start_position, end_position: int positions in `tokens` (training; 0 =
        [CLS] when the answer is not in this span or there is none), else None.
      is_impossible: the example's `is_impossible`.
    """

    def __init__(self,
                 unique_id,
                 example_index,
                 doc_span_index,
                 tokens,
                 token_to_orig_map,
                 token_is_max_context,
                 input_ids,
                 input_mask,
                 segment_ids,
                 start_position=None,
                 end_position=None,
                 is_impossible=None):
        # The original's class, field for field: its constructor is the API (alike, not shared).
        self.unique_id = unique_id
        self.example_index = example_index
        self.doc_span_index = doc_span_index
        self.tokens = tokens
        self.token_to_orig_map = token_to_orig_map
        self.token_is_max_context = token_is_max_context
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible


# --------------------------------------------------------------------------
# Reading SQuAD JSON.
# --------------------------------------------------------------------------

def _is_whitespace(c):
    # U+202F (narrow no-break space) is whitespace here, although Python's
    # str.split() does not treat it so.
    return c == " " or c == "\t" or c == "\r" or c == "\n" or ord(c) == 0x202F


def _field(obj, key, input_file, where):
    """`obj[key]`, or a UserError naming the file, the key and where it is missing.

    Port note: the original indexes the JSON directly (a bare KeyError or
    TypeError on a file that is not SQuAD).
    """
    if not isinstance(obj, dict):
        raise UserError("%s is not a SQuAD file: %s is a JSON %s, not an object with %r"
                        % (input_file, where, type(obj).__name__, key))
    if key not in obj:
        raise UserError("%s is not a SQuAD file: %s has no key %r" % (input_file, where, key))
    return obj[key]


def _list_field(obj, key, input_file, where):
    value = _field(obj, key, input_file, where)
    if not isinstance(value, list):
        raise UserError("%s is not a SQuAD file: %r in %s is a JSON %s, not a list"
                        % (input_file, key, where, type(value).__name__))
    return value


def load_squad_json(input_file):
    """The parsed JSON of a SQuAD file; UserError if it is missing or not JSON."""
    if not fileio.exists(input_file):
        raise UserError("%s: no such file" % (input_file,))
    if fileio.isdir(input_file):
        raise UserError("%s is a directory, not a SQuAD JSON file" % (input_file,))
    try:
        with fileio.open_file(input_file, "r") as reader:
            return json.load(reader)
    except (ValueError, UnicodeDecodeError) as e:
        # json.JSONDecodeError is a ValueError.
        raise UserError("%s is not JSON (%s)" % (input_file, str(e).splitlines()[0])) from None


def _split_context(paragraph_text):
    """Whitespace-splits a context: (doc_tokens, char_to_word_offset).

    `char_to_word_offset[k]` is the index of the doc token that holds char k;
    for a whitespace char, the index of the previous token (-1 before the
    first token).
    """
    doc_tokens = []
    char_to_word_offset = []
    prev_is_whitespace = True
    for c in paragraph_text:
        if _is_whitespace(c):
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
    """Reads a SQuAD json file into a list of SquadExample.

    Args:
      input_file: path of a SQuAD 1.1 / 2.0 JSON file.
      is_training: bool. Training reads each question's single answer (or,
        for v2.0, `is_impossible`); prediction reads no answers.
      version_2_with_negative: bool, SQuAD 2.0 (original: the flag of that name);
        only read for training.

    Returns:
      A list of SquadExample, in file order. For training, an answer whose
      text cannot be found in the whitespace-joined context words it spans is
      logged ("Could not find answer") and its question skipped, as the
      original does.

    Raises:
      UserError: the file is missing or not JSON, a key the original reads is
        missing (the message names the file and the key), or, for training, a
        question does not have exactly 1 answer.
    """
    input_data = _list_field(load_squad_json(input_file), "data", input_file, "the top level")

    examples = []
    for entry_index, entry in enumerate(input_data):
        paragraphs = _list_field(entry, "paragraphs", input_file, "data[%d]" % entry_index)
        for paragraph_index, paragraph in enumerate(paragraphs):
            where = "data[%d].paragraphs[%d]" % (entry_index, paragraph_index)
            paragraph_text = _field(paragraph, "context", input_file, where)
            if not isinstance(paragraph_text, str):
                raise UserError("%s is not a SQuAD file: 'context' in %s is a JSON %s, not a "
                                "string" % (input_file, where, type(paragraph_text).__name__))
            doc_tokens, char_to_word_offset = _split_context(paragraph_text)

            for qa_index, qa in enumerate(_list_field(paragraph, "qas", input_file, where)):
                qa_where = "%s.qas[%d]" % (where, qa_index)
                qas_id = _field(qa, "id", input_file, qa_where)
                question_text = _field(qa, "question", input_file, "question %r" % (qas_id,))
                start_position = None
                end_position = None
                orig_answer_text = None
                is_impossible = False
                if is_training:
                    qa_where = "question %r" % (qas_id,)
                    if version_2_with_negative:
                        is_impossible = _field(qa, "is_impossible", input_file, qa_where)
                    answers = _list_field(qa, "answers", input_file, qa_where)
                    if (len(answers) != 1) and (not is_impossible):
                        # Port note: the original's ValueError, naming the file and question.
                        raise UserError(
                            "%s, question %r: For training, each question should have "
                            "exactly 1 answer." % (input_file, qas_id))
                    if not is_impossible:
                        answer = answers[0]
                        orig_answer_text = _field(answer, "text", input_file,
                                                  "the answer of " + qa_where)
                        answer_offset = _field(answer, "answer_start", input_file,
                                               "the answer of " + qa_where)
                        if not isinstance(orig_answer_text, str) or isinstance(
                                answer_offset, bool) or not isinstance(answer_offset, int):
                            raise UserError(
                                "%s, question %r: the answer needs a string 'text' and an "
                                "integer 'answer_start', not %r and %r" % (
                                    input_file, qas_id, orig_answer_text, answer_offset))
                        answer_length = len(orig_answer_text)
                        try:
                            # Port note: an offset past the context is a
                            # UserError here (the original: IndexError).
                            start_position = char_to_word_offset[answer_offset]
                            end_position = char_to_word_offset[answer_offset + answer_length - 1]
                        except IndexError:
                            raise UserError(
                                "%s, question %r: answer_start %r (answer length %d) is outside "
                                "its context of %d characters" % (
                                    input_file, qas_id, answer_offset, answer_length,
                                    len(char_to_word_offset))) from None
                        # Only add answers where the text can be exactly recovered from the
                        # document. If this CAN'T happen it's likely due to weird Unicode
                        # stuff so we will just skip the example.
                        #
                        # Note that this means for training mode, every example is NOT
                        # guaranteed to be preserved.
                        actual_text = " ".join(doc_tokens[start_position:(end_position + 1)])
                        cleaned_answer_text = " ".join(
                            tokenization.whitespace_tokenize(orig_answer_text))
                        if actual_text.find(cleaned_answer_text) == -1:
                            logging.warning("Could not find answer: '%s' vs. '%s'",
                                            actual_text, cleaned_answer_text)
                            continue
                    else:
                        start_position = -1
                        end_position = -1
                        orig_answer_text = ""

                examples.append(SquadExample(
                    qas_id=qas_id,
                    question_text=question_text,
                    doc_tokens=doc_tokens,
                    orig_answer_text=orig_answer_text,
                    start_position=start_position,
                    end_position=end_position,
                    is_impossible=is_impossible))

    return examples


# --------------------------------------------------------------------------
# Examples -> features.
# --------------------------------------------------------------------------

class _TokenizedDoc(object):
    """A context's WordPiece tokens and the maps to and from its whitespace words."""

    def __init__(self, doc_tokens, tokenizer):
        self.tok_to_orig_index = []
        self.orig_to_tok_index = []
        self.all_doc_tokens = []
        for (i, token) in enumerate(doc_tokens):
            self.orig_to_tok_index.append(len(self.all_doc_tokens))
            sub_tokens = tokenizer.tokenize(token)
            for sub_token in sub_tokens:
                self.tok_to_orig_index.append(i)
                self.all_doc_tokens.append(sub_token)
        # (max_tokens_for_doc, doc_stride) -> (doc_spans, max-context span per token)
        self.spans = {}

    def doc_spans(self, max_tokens_for_doc, doc_stride):
        key = (max_tokens_for_doc, doc_stride)
        if key not in self.spans:
            doc_spans = squad_windows.doc_spans(len(self.all_doc_tokens), max_tokens_for_doc,
                                                doc_stride)
            self.spans[key] = (doc_spans, squad_windows.max_context_span_indexes(
                doc_spans, len(self.all_doc_tokens)))
        return self.spans[key]


def convert_examples_to_features(examples, tokenizer, max_seq_length,
                                 doc_stride, max_query_length, is_training,
                                 output_fn, progress_every=None):
    """Turns examples into features, one per doc span, passed to `output_fn`.

    Args:
      examples: list of SquadExample (from `read_squad_examples`).
      tokenizer: a `FullTokenizer`.
      max_seq_length: int, the length of every feature.
      doc_stride: int, the stride between the starts of two doc spans.
      max_query_length: int; longer questions are cut to this many tokens.
      is_training: bool; training features carry start/end positions.
      output_fn: called with each InputFeatures, in order (unique ids count up
        from 1000000000).
      progress_every: also log progress every this many examples (it is
        logged every 10 s and at the end in any case).

    Every feature of the first 20 examples is logged as the original logs it.
    Progress: `SQuAD features: <done>/<total> examples (<n> features), <rate>,
    elapsed, ETA`.
    """
    unique_id = 1000000000
    doc = None
    doc_tokens_of_doc = None
    progress = ItemProgress("SQuAD features", len(examples), "examples", every=progress_every)

    for (example_index, example) in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)

        if len(query_tokens) > max_query_length:
            query_tokens = query_tokens[0:max_query_length]

        # The questions of one paragraph share its doc_tokens list: tokenize
        # the context once for all of them.
        if doc is None or example.doc_tokens is not doc_tokens_of_doc:
            doc = _TokenizedDoc(example.doc_tokens, tokenizer)
            doc_tokens_of_doc = example.doc_tokens
        tok_to_orig_index = doc.tok_to_orig_index
        orig_to_tok_index = doc.orig_to_tok_index
        all_doc_tokens = doc.all_doc_tokens

        tok_start_position = None
        tok_end_position = None
        if is_training and example.is_impossible:
            tok_start_position = -1
            tok_end_position = -1
        if is_training and not example.is_impossible:
            tok_start_position = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end_position = orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end_position = len(all_doc_tokens) - 1
            (tok_start_position, tok_end_position) = _improve_answer_span(
                all_doc_tokens, tok_start_position, tok_end_position, tokenizer,
                example.orig_answer_text)

        # The -3 accounts for [CLS], [SEP] and [SEP]
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        if max_tokens_for_doc < 1 and all_doc_tokens:
            # Port note: the original loops forever here (the window never
            # moves); its main() refuses such flags up front with this message.
            raise UserError(
                "The max_seq_length (%d) must be greater than max_query_length (%d) + 3"
                % (max_seq_length, max_query_length))
        doc_spans, max_context_span = doc.doc_spans(max_tokens_for_doc, doc_stride)

        for (doc_span_index, doc_span) in enumerate(doc_spans):
            tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
            segment_ids = [0] * len(tokens)
            # The doc span's tokens, and for each (keyed by its index in
            # `tokens`, in increasing order as the original inserts them) its
            # whitespace word and whether this span is its max-context span.
            first = len(tokens)
            doc_start = doc_span.start
            doc_stop = doc_span.start + doc_span.length
            positions = range(first, first + doc_span.length)
            token_to_orig_map = dict(zip(positions, tok_to_orig_index[doc_start:doc_stop]))
            token_is_max_context = dict(zip(positions, [
                span == doc_span_index for span in max_context_span[doc_start:doc_stop]]))
            tokens.extend(all_doc_tokens[doc_start:doc_stop])
            segment_ids.extend([1] * (doc_span.length + 1))
            tokens.append("[SEP]")

            input_ids = tokenizer.convert_tokens_to_ids(tokens)

            # The mask has 1 for real tokens and 0 for padding tokens. Only real
            # tokens are attended to.
            input_mask = [1] * len(input_ids)

            # Zero-pad up to the sequence length.
            padding = max_seq_length - len(input_ids)
            input_ids.extend([0] * padding)
            input_mask.extend([0] * padding)
            segment_ids.extend([0] * padding)

            assert len(input_ids) == max_seq_length
            assert len(input_mask) == max_seq_length
            assert len(segment_ids) == max_seq_length

            start_position = None
            end_position = None
            if is_training and not example.is_impossible:
                # The original's comment says a span without the answer is
                # thrown out; its code keeps it, pointing at [CLS] (0, 0), and
                # so does this port.
                doc_start = doc_span.start
                doc_end = doc_span.start + doc_span.length - 1
                if not (tok_start_position >= doc_start and tok_end_position <= doc_end):
                    start_position = 0
                    end_position = 0
                else:
                    doc_offset = len(query_tokens) + 2
                    start_position = tok_start_position - doc_start + doc_offset
                    end_position = tok_end_position - doc_start + doc_offset

            if is_training and example.is_impossible:
                start_position = 0
                end_position = 0

            if example_index < 20:
                _log_feature(unique_id, example_index, doc_span_index, tokens, token_to_orig_map,
                             token_is_max_context, input_ids, input_mask, segment_ids,
                             is_training, example.is_impossible, start_position, end_position)

            output_fn(InputFeatures(
                unique_id=unique_id,
                example_index=example_index,
                doc_span_index=doc_span_index,
                tokens=tokens,
                token_to_orig_map=token_to_orig_map,
                token_is_max_context=token_is_max_context,
                input_ids=input_ids,
                input_mask=input_mask,
                segment_ids=segment_ids,
                start_position=start_position,
                end_position=end_position,
                is_impossible=example.is_impossible))

            unique_id += 1

        progress.update(example_index + 1, "%d features" % (unique_id - 1000000000))
    progress.finish("%d features" % (unique_id - 1000000000))  # no examples: a line still


def _log_feature(unique_id, example_index, doc_span_index, tokens, token_to_orig_map,
                 token_is_max_context, input_ids, input_mask, segment_ids,
                 is_training, is_impossible, start_position, end_position):
    """Logs one feature exactly as the original (430-454), at DEBUG (the original: INFO)."""
    logging.debug("*** Example ***")
    logging.debug("unique_id: %s" % (unique_id))
    logging.debug("example_index: %s" % (example_index))
    logging.debug("doc_span_index: %s" % (doc_span_index))
    logging.debug("tokens: %s" % " ".join([tokenization.printable_text(x) for x in tokens]))
    logging.debug("token_to_orig_map: %s" % " ".join(
        ["%d:%d" % (x, y) for (x, y) in token_to_orig_map.items()]))
    logging.debug("token_is_max_context: %s" % " ".join(
        ["%d:%s" % (x, y) for (x, y) in token_is_max_context.items()]))
    logging.debug("input_ids: %s" % " ".join([str(x) for x in input_ids]))
    logging.debug("input_mask: %s" % " ".join([str(x) for x in input_mask]))
    logging.debug("segment_ids: %s" % " ".join([str(x) for x in segment_ids]))
    if is_training and is_impossible:
        logging.debug("impossible example")
    if is_training and not is_impossible:
        answer_text = " ".join(tokens[start_position:(end_position + 1)])
        logging.debug("start_position: %d" % (start_position))
        logging.debug("end_position: %d" % (end_position))
        logging.debug("answer: %s" % (tokenization.printable_text(answer_text)))


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer,
                         orig_answer_text):
    """Returns tokenized answer spans that better match the annotated answer.

    The SQuAD annotations are character based. We first project them to
    whitespace-tokenized words. But then after WordPiece tokenization, we can
    often find a "better match". For example:

      Question: What year was John Smith born?
      Context: The leader was John Smith (1895-1943).
      Answer: 1895

    The original whitespace-tokenized answer will be "(1895-1943).". However
    after tokenization, our tokens will be "( 1895 - 1943 ) .". So we can match
    the exact answer, 1895.

    However, this is not always possible. Consider the following:

      Question: What country is the top exporter of electornics?
      Context: The Japanese electronics industry is the lagest in the world.
      Answer: Japan

    In this case, the annotator chose "Japan" as a character sub-span of
    the word "Japanese". Since our WordPiece tokenizer does not split
    "Japanese", we just use "Japanese" as the annotation. This is fairly rare
    in SQuAD, but does happen.

    Returns the first (new_start, new_end) in the original's search order (new_start
    up from input_start, new_end down from input_end) whose tokens, joined by
    spaces, equal the answer's tokens joined by spaces; else (input_start, input_end).
    """
    answer_tokens = tokenizer.tokenize(orig_answer_text)
    tok_answer_text = " ".join(answer_tokens)

    window = doc_tokens[input_start:input_end + 1] if input_end >= input_start else []
    if answer_tokens and all(t and " " not in t for t in answer_tokens) and all(
            t and " " not in t for t in window):
        # Tokens without spaces join to equal strings exactly when the token
        # lists are equal, so for each new_start only the sub-span of the
        # answer's length can match: linear instead of quadratic in the span.
        n = len(answer_tokens)
        for new_start in range(input_start, input_end - n + 2):
            if doc_tokens[new_start:new_start + n] == answer_tokens:
                return (new_start, new_start + n - 1)
        return (input_start, input_end)

    # The original's search, for tokens that hold spaces (a custom tokenizer).
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            text_span = " ".join(doc_tokens[new_start:(new_end + 1)])
            if text_span == tok_answer_text:
                return (new_start, new_end)

    return (input_start, input_end)


# --------------------------------------------------------------------------
# TFRecords.
# --------------------------------------------------------------------------

class FeatureWriter(object):
    """Writes InputFeatures to a TFRecord file of tf.train.Example, atomically.

    The records go to `fileio.temporary_name(filename)`, renamed to `filename`
    by `close()`; a writer that is not closed (or is used as a context manager
    and left by an exception) leaves no file under `filename`.

    Features, the original's schema: unique_ids, input_ids, input_mask,
    segment_ids (int64) and, if `is_training`, start_positions, end_positions
    and is_impossible (1/0; written but never read, as in the original).

    Port note: each Example is serialized deterministically (map entries in
    sorted key order). The original's `SerializeToString()` under protobuf 7
    (upb) orders them differently from process to process; the parsed records
    are the same.
    """

    def __init__(self, filename, is_training):
        import tensorflow as tf  # pylint: disable=g-import-not-at-top
        self._tf = tf
        self.filename = filename
        self.is_training = is_training
        self.num_features = 0
        self._tmp_name = fileio.temporary_name(filename)
        fileio.makedirs(os.path.dirname(str(filename)))
        self._writer = tf.io.TFRecordWriter(self._tmp_name)
        self._closed = False

    def process_feature(self, feature):
        """Write a InputFeature to the TFRecordWriter as a tf.train.Example."""
        self.num_features += 1
        train = self._tf.train

        def create_int_feature(values):
            return train.Feature(int64_list=train.Int64List(value=list(values)))

        features = collections.OrderedDict()
        features["unique_ids"] = create_int_feature([feature.unique_id])
        features["input_ids"] = create_int_feature(feature.input_ids)
        features["input_mask"] = create_int_feature(feature.input_mask)
        features["segment_ids"] = create_int_feature(feature.segment_ids)

        if self.is_training:
            features["start_positions"] = create_int_feature([feature.start_position])
            features["end_positions"] = create_int_feature([feature.end_position])
            impossible = 0
            if feature.is_impossible:
                impossible = 1
            features["is_impossible"] = create_int_feature([impossible])

        tf_example = train.Example(features=train.Features(feature=features))
        try:
            self._writer.write(tf_example.SerializeToString(deterministic=True))
        except Exception as e:  # pylint: disable=broad-except
            self._fail(e)

    def close(self):
        """Finishes the file and renames it to `filename`."""
        if self._closed:
            return
        try:
            self._writer.close()
            fileio.rename(self._tmp_name, self.filename)
        except Exception as e:  # pylint: disable=broad-except
            self._fail(e)
        self._closed = True

    def _fail(self, error):
        """Removes the temporary file; raises `error`, or a full disk's one-line UserError."""
        try:
            self.abort()
        except Exception:  # pylint: disable=broad-except
            fileio.remove_quietly(self._tmp_name)  # the error to report is `error`
        failure = fileio.no_room_error(self.filename, error)
        if failure is None:
            raise error
        raise failure from error

    def abort(self):
        """Closes the writer and removes its temporary file; `filename` is untouched."""
        if self._closed:
            return
        self._closed = True
        self._writer.close()
        if self._tf.io.gfile.exists(self._tmp_name):
            self._tf.io.gfile.remove(self._tmp_name)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def name_to_features(seq_length, is_training):
    """The parsing spec of the records `FeatureWriter` writes (original: input_fn_builder).

    Args:
      seq_length: int, the max_seq_length the features were written with.
      is_training: bool; training also parses start_positions and end_positions
        (is_impossible is written but, as in the original, never read).

    Returns:
      dict name -> `tf.io.FixedLenFeature` (int64).
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    spec = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
    }
    if is_training:
        spec["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
        spec["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
    return spec
