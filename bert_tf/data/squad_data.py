"""SQuAD 1.1 / 2.0 data and predictions (original: `run_squad.py`).

Ports, from google-research/bert `run_squad.py` (same line numbers in pip
bert-tensorflow 1.0.4 and GitHub HEAD):

  SquadExample, InputFeatures (157-224)    read_squad_examples (227-306)
  convert_examples_to_features (309-473)   _improve_answer_span (476-510)
  input_fn_builder's name_to_features and  _decode_record (687-713)
  (the doc-stride windows and _check_is_max_context, 350-364 and 513-547,
  are in `bert_tf.data.squad_windows`, with their graph form)
  RawResult (737)                          write_predictions (741-924)
  get_final_text (927-1020)                _get_best_indexes (1023-1032)
  _compute_softmax (1035-1055)             FeatureWriter (1058-1094)

The library reads no flags: what the original took from `FLAGS`
(`version_2_with_negative`, `null_score_diff_threshold`, `verbose_logging`)
is an argument here. TensorFlow is imported only by the functions that write
or parse TFRecords.

Same output as the original (tests/data/test_squad_data.py runs both): the
same examples, the same features in the same order with the same unique ids,
the same first-20-examples log, and byte-identical predictions.json,
nbest_predictions.json and null_odds.json for the same logits. Where the
original is slow, the speed comes from (results unchanged):

* a paragraph's WordPiece tokens are computed once for all its questions (the
  original re-tokenizes the context for every question);
* the "max context" span of every document token is found in one pass over
  the doc spans (the original scans all spans for every token of every span);
* `_improve_answer_span` compares token lists of the answer's length instead
  of joining every sub-span (quadratic in the answer's word-span length).

Port notes (each also marked `Port note:` where it happens):

* v2.0, an example whose n-best holds no non-null answer (the original
  crashes: `best_non_null_entry` is None, issues #211/#417/#476): predict ""
  and write +Infinity to null_odds.json (the null answer wins at every
  threshold; Python's json and the official evaluate-v2.0.py read it back).
* v2.0, an example without any feature (its context tokenizes to nothing; the
  original raises IndexError): the same as above.
* A file that is not SQuAD JSON, a missing key, an answer_start outside its
  context, or a training question without exactly 1 answer stops with a
  one-line `UserError` that names the file and the key or question id (the
  original raised a bare KeyError / IndexError / ValueError).
* max_seq_length too small for a question (no room for any document token):
  UserError; the original loops forever (its main() checks the flags first).
* TFRecords are serialized deterministically (see `FeatureWriter`), and every
  output file is written atomically.
* `write_predictions` also accepts float arrays as logits (it takes them as
  Python floats, exactly what the original's main() passed) and returns the
  predictions.
"""

import collections
import json
import math
import os

from absl import logging

from bert_tf import fileio
from bert_tf import tokenization
from bert_tf.data import squad_windows
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


# The model's output for one feature: unique_id (int) and the start/end logits
# (sequences of max_seq_length floats).
RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])


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
    """Logs one feature exactly as the original (430-454)."""
    logging.info("*** Example ***")
    logging.info("unique_id: %s" % (unique_id))
    logging.info("example_index: %s" % (example_index))
    logging.info("doc_span_index: %s" % (doc_span_index))
    logging.info("tokens: %s" % " ".join([tokenization.printable_text(x) for x in tokens]))
    logging.info("token_to_orig_map: %s" % " ".join(
        ["%d:%d" % (x, y) for (x, y) in token_to_orig_map.items()]))
    logging.info("token_is_max_context: %s" % " ".join(
        ["%d:%s" % (x, y) for (x, y) in token_is_max_context.items()]))
    logging.info("input_ids: %s" % " ".join([str(x) for x in input_ids]))
    logging.info("input_mask: %s" % " ".join([str(x) for x in input_mask]))
    logging.info("segment_ids: %s" % " ".join([str(x) for x in segment_ids]))
    if is_training and is_impossible:
        logging.info("impossible example")
    if is_training and not is_impossible:
        answer_text = " ".join(tokens[start_position:(end_position + 1)])
        logging.info("start_position: %d" % (start_position))
        logging.info("end_position: %d" % (end_position))
        logging.info("answer: %s" % (tokenization.printable_text(answer_text)))


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


def decode_record(record, name_to_features):
    """Decodes a record to a TensorFlow example (dict name -> int32 Tensor).

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


# --------------------------------------------------------------------------
# Predictions.
# --------------------------------------------------------------------------

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"])

_NbestPrediction = collections.namedtuple("NbestPrediction", ["text", "start_logit", "end_logit"])


def write_predictions(all_examples, all_features, all_results, n_best_size,
                      max_answer_length, do_lower_case, output_prediction_file,
                      output_nbest_file, output_null_log_odds_file,
                      version_2_with_negative=False, null_score_diff_threshold=0.0,
                      verbose_logging=False):
    """Writes final predictions to the json file and log-odds of null if needed.

    Args:
      all_examples: list of SquadExample (prediction mode).
      all_features: list of InputFeatures made from `all_examples`.
      all_results: iterable of RawResult, one per feature (any order); the
        logits may be lists of floats or float arrays (they are taken as
        Python floats, as the original's main() did).
      n_best_size: int, the number of n-best predictions per question.
      max_answer_length: int, the longest answer in WordPiece tokens.
      do_lower_case: bool, as the tokenizer's (for `get_final_text`).
      output_prediction_file: path of predictions.json ({qas_id: text}).
      output_nbest_file: path of nbest_predictions.json ({qas_id: [{text,
        probability, start_logit, end_logit}, ...]}).
      output_null_log_odds_file: path of null_odds.json ({qas_id: null score
        minus the best non-null score}), written only for v2.0.
      version_2_with_negative: bool, SQuAD 2.0 (null answers).
      null_score_diff_threshold: float; with v2.0, predict "" when the null score
        minus the best non-null score is greater than this.
      verbose_logging: bool; log why `get_final_text` fell back to the whole words.

    Returns:
      The predictions, an OrderedDict {qas_id: answer text} in example order
      (what predictions.json holds).

    Each file is `json.dumps(..., indent=4) + "\\n"`, written atomically; the
    bytes equal the original's for the same logits.
    """
    logging.info("Writing predictions to: %s" % (output_prediction_file))
    logging.info("Writing nbest to: %s" % (output_nbest_file))

    example_index_to_features = collections.defaultdict(list)
    for feature in all_features:
        example_index_to_features[feature.example_index].append(feature)

    unique_id_to_result = {}
    for result in all_results:
        unique_id_to_result[result.unique_id] = result

    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()

    for (example_index, example) in enumerate(all_examples):
        features = example_index_to_features[example_index]

        prelim_predictions = []
        # keep track of the minimum score of null start+end of position 0
        score_null = 1000000  # large and positive
        min_null_feature_index = 0  # the paragraph slice with min mull score
        null_start_logit = 0  # the start logit at the slice with min null score
        null_end_logit = 0  # the end logit at the slice with min null score
        for (feature_index, feature) in enumerate(features):
            if feature.unique_id not in unique_id_to_result:
                raise ValueError("write_predictions: no RawResult for feature unique_id %d "
                                 "(question %r)" % (feature.unique_id, example.qas_id))
            result = unique_id_to_result[feature.unique_id]
            start_logits = _as_floats(result.start_logits)
            end_logits = _as_floats(result.end_logits)
            start_indexes = _get_best_indexes(start_logits, n_best_size)
            end_indexes = _get_best_indexes(end_logits, n_best_size)
            # if we could have irrelevant answers, get the min score of irrelevant
            if version_2_with_negative:
                feature_null_score = start_logits[0] + end_logits[0]
                if feature_null_score < score_null:
                    score_null = feature_null_score
                    min_null_feature_index = feature_index
                    null_start_logit = start_logits[0]
                    null_end_logit = end_logits[0]
            num_tokens = len(feature.tokens)
            token_to_orig_map = feature.token_to_orig_map
            token_is_max_context = feature.token_is_max_context
            for start_index in start_indexes:
                # We could hypothetically create invalid predictions, e.g., predict
                # that the start of the span is in the question. We throw out all
                # invalid predictions. (The tests on start_index alone are hoisted
                # out of the inner loop; the candidates and their order are the
                # original's.)
                if start_index >= num_tokens:
                    continue
                if start_index not in token_to_orig_map:
                    continue
                if not token_is_max_context.get(start_index, False):
                    continue
                for end_index in end_indexes:
                    if end_index >= num_tokens:
                        continue
                    if end_index not in token_to_orig_map:
                        continue
                    if end_index < start_index:
                        continue
                    length = end_index - start_index + 1
                    if length > max_answer_length:
                        continue
                    prelim_predictions.append(
                        _PrelimPrediction(
                            feature_index=feature_index,
                            start_index=start_index,
                            end_index=end_index,
                            start_logit=start_logits[start_index],
                            end_logit=end_logits[end_index]))

        if version_2_with_negative:
            prelim_predictions.append(
                _PrelimPrediction(
                    feature_index=min_null_feature_index,
                    start_index=0,
                    end_index=0,
                    start_logit=null_start_logit,
                    end_logit=null_end_logit))
        prelim_predictions = sorted(
            prelim_predictions,
            key=lambda x: (x.start_logit + x.end_logit),
            reverse=True)

        seen_predictions = {}
        nbest = []
        for pred in prelim_predictions:
            if len(nbest) >= n_best_size:
                break
            if pred.start_index > 0:  # this is a non-null prediction
                # Port note: the original looks the feature up before this
                # test, which raises IndexError for the v2.0 null prediction of
                # an example without features; only non-null predictions need it.
                feature = features[pred.feature_index]
                tok_tokens = feature.tokens[pred.start_index:(pred.end_index + 1)]
                orig_doc_start = feature.token_to_orig_map[pred.start_index]
                orig_doc_end = feature.token_to_orig_map[pred.end_index]
                orig_tokens = example.doc_tokens[orig_doc_start:(orig_doc_end + 1)]
                tok_text = " ".join(tok_tokens)

                # De-tokenize WordPieces that have been split off.
                tok_text = tok_text.replace(" ##", "")
                tok_text = tok_text.replace("##", "")

                # Clean whitespace
                tok_text = tok_text.strip()
                tok_text = " ".join(tok_text.split())
                orig_text = " ".join(orig_tokens)

                final_text = get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)
                if final_text in seen_predictions:
                    continue

                seen_predictions[final_text] = True
            else:
                final_text = ""
                seen_predictions[final_text] = True

            nbest.append(
                _NbestPrediction(
                    text=final_text,
                    start_logit=pred.start_logit,
                    end_logit=pred.end_logit))

        # if we didn't inlude the empty option in the n-best, inlcude it
        if version_2_with_negative:
            if "" not in seen_predictions:
                nbest.append(
                    _NbestPrediction(
                        text="", start_logit=null_start_logit, end_logit=null_end_logit))
        # In very rare edge cases we could have no valid predictions. So we
        # just create a nonce prediction in this case to avoid failure.
        if not nbest:
            nbest.append(_NbestPrediction(text="empty", start_logit=0.0, end_logit=0.0))

        assert len(nbest) >= 1

        total_scores = []
        best_non_null_entry = None
        for entry in nbest:
            total_scores.append(entry.start_logit + entry.end_logit)
            if not best_non_null_entry:
                if entry.text:
                    best_non_null_entry = entry

        probs = _compute_softmax(total_scores)

        nbest_json = []
        for (i, entry) in enumerate(nbest):
            output = collections.OrderedDict()
            output["text"] = entry.text
            output["probability"] = probs[i]
            output["start_logit"] = entry.start_logit
            output["end_logit"] = entry.end_logit
            nbest_json.append(output)

        assert len(nbest_json) >= 1

        if not version_2_with_negative:
            all_predictions[example.qas_id] = nbest_json[0]["text"]
        elif best_non_null_entry is None:
            # Port note: the original crashes here (AttributeError on None,
            # google-research/bert issues #211, #417, #476): the n-best holds
            # no non-empty answer (every candidate span was invalid, or the
            # n-best was filled up before one came). The null answer is then
            # the only answer there is, so predict "" and record the score
            # difference as +inf: the null wins at every threshold (a finite
            # stand-in would claim a margin the model never gave). json writes
            # it as `Infinity`, which Python's json (and the official
            # evaluate-v2.0.py) read back as float("inf").
            logging.info("Question %r: no non-null answer in the n-best; predicting \"\"",
                         example.qas_id)
            scores_diff_json[example.qas_id] = float("inf")
            all_predictions[example.qas_id] = ""
        else:
            # predict "" iff the null score - the score of best non-null > threshold
            score_diff = score_null - best_non_null_entry.start_logit - (
                best_non_null_entry.end_logit)
            scores_diff_json[example.qas_id] = score_diff
            if score_diff > null_score_diff_threshold:
                all_predictions[example.qas_id] = ""
            else:
                all_predictions[example.qas_id] = best_non_null_entry.text

        all_nbest_json[example.qas_id] = nbest_json

    fileio.write_text(output_prediction_file, json.dumps(all_predictions, indent=4) + "\n")
    fileio.write_text(output_nbest_file, json.dumps(all_nbest_json, indent=4) + "\n")
    if version_2_with_negative:
        fileio.write_text(output_null_log_odds_file, json.dumps(scores_diff_json, indent=4) + "\n")

    return all_predictions


def _as_floats(logits):
    """A list of Python floats (the original's main() made them with float(x)).

    Port note: the original's write_predictions needs lists of Python floats
    (float32 sums differ, and json cannot write numpy floats); arrays are
    converted here, exactly as its main() converted them.
    """
    if isinstance(logits, list) and all(type(x) is float for x in logits):
        return logits
    if hasattr(logits, "tolist") and getattr(logits, "dtype", None) is not None:
        # float32 -> float64 is exact, as float(np.float32(x)) is.
        return [float(x) for x in logits.tolist()]
    return [float(x) for x in logits]


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
    """Project the tokenized prediction back to the original text.

    When we created the data, we kept track of the alignment between original
    (whitespace tokenized) tokens and our WordPiece tokenized tokens. So
    now `orig_text` contains the span of our original text corresponding to the
    span that we predicted.

    However, `orig_text` may contain extra characters that we don't want in
    our prediction.

    For example, let's say:
      pred_text = steve smith
      orig_text = Steve Smith's

    We don't want to return `orig_text` because it contains the extra "'s".

    We don't want to return `pred_text` because it's already been normalized
    (the SQuAD eval script also does punctuation stripping/lower casing but
    our tokenizer does additional normalization like stripping accent
    characters).

    What we really want to return is "Steve Smith".

    Therefore, we have to apply a semi-complicated alignment heruistic between
    `pred_text` and `orig_text` to get a character-to-charcter alignment. This
    can fail in certain cases in which case we just return `orig_text`.
    """

    def _strip_spaces(text):
        ns_chars = []
        ns_to_s_map = collections.OrderedDict()
        for (i, c) in enumerate(text):
            if c == " ":
                continue
            ns_to_s_map[len(ns_chars)] = i
            ns_chars.append(c)
        ns_text = "".join(ns_chars)
        return (ns_text, ns_to_s_map)

    # We first tokenize `orig_text`, strip whitespace from the result
    # and `pred_text`, and check if they are the same length. If they are
    # NOT the same length, the heuristic has failed. If they are the same
    # length, we assume the characters are one-to-one aligned.
    tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)

    tok_text = " ".join(tokenizer.tokenize(orig_text))

    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'" % (pred_text, orig_text))
        return orig_text
    end_position = start_position + len(pred_text) - 1

    (orig_ns_text, orig_ns_to_s_map) = _strip_spaces(orig_text)
    (tok_ns_text, tok_ns_to_s_map) = _strip_spaces(tok_text)

    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info("Length not equal after stripping spaces: '%s' vs '%s'",
                         orig_ns_text, tok_ns_text)
        return orig_text

    # We then project the characters in `pred_text` back to `orig_text` using
    # the character-to-character alignment.
    tok_s_to_ns_map = {}
    for (i, tok_index) in tok_ns_to_s_map.items():
        tok_s_to_ns_map[tok_index] = i

    orig_start_position = None
    if start_position in tok_s_to_ns_map:
        ns_start_position = tok_s_to_ns_map[start_position]
        if ns_start_position in orig_ns_to_s_map:
            orig_start_position = orig_ns_to_s_map[ns_start_position]

    if orig_start_position is None:
        if verbose_logging:
            logging.info("Couldn't map start position")
        return orig_text

    orig_end_position = None
    if end_position in tok_s_to_ns_map:
        ns_end_position = tok_s_to_ns_map[end_position]
        if ns_end_position in orig_ns_to_s_map:
            orig_end_position = orig_ns_to_s_map[ns_end_position]

    if orig_end_position is None:
        if verbose_logging:
            logging.info("Couldn't map end position")
        return orig_text

    output_text = orig_text[orig_start_position:(orig_end_position + 1)]
    return output_text


def _get_best_indexes(logits, n_best_size):
    """Get the n-best logits from a list (indexes, highest logit first; ties in index order)."""
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def _compute_softmax(scores):
    """Compute softmax probability over raw logits (Python floats, max subtracted)."""
    if not scores:
        return []

    max_score = None
    for score in scores:
        if max_score is None or score > max_score:
            max_score = score

    exp_scores = []
    total_sum = 0.0
    for score in scores:
        x = math.exp(score - max_score)
        exp_scores.append(x)
        total_sum += x

    probs = []
    for score in exp_scores:
        probs.append(score / total_sum)
    return probs
