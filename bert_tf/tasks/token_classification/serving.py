"""NerServingModule: named entities of raw text, with character offsets, in core TF ops (new).

`BertTokenClassifier.predict_words` / `predict_entities` as a SavedModel
signature (`export_saved_model` with task_name "ner"): each text is split
into words as `bert_tf.tasks.token_classification.data.split_words` splits it (a range table of
its character classes), every word tokenized by `GraphTokenizer` (the
FullTokenizer's ids; a word of no token is [UNK]), the sub-tokens of a text
cut into run_squad's windows (`squad_windows.doc_windows`), the model run on
every window, and each word labelled at its first sub-token in its
max-context window; the labels are grouped into entities by conlleval's
chunk rules (`bert_tf.tasks.token_classification.data_conlleval`):

  serving_default  text_a: string [batch] (also serve_text_a; serve_text takes it as `text`,
                   the name before)
                   -> words string [batch, words], labels string [batch, words]
                      word_start, word_end int32 [batch, words]: character offsets
                        (code points) into the text, text[start:end] is the word
                      num_words int32 [batch]
                      entity_types, entity_texts string [batch, entities]
                      entity_start, entity_end int32 [batch, entities]
                      num_entities int32 [batch]

Columns past a text's `num_words` / `num_entities` hold "" and -1.

Words, entity texts and offsets are those of the text decoded with
errors="replace": an invalid byte sequence is one U+FFFD, which separates
words (as whitespace; the tokenizer deletes it), so the answer is
`predict_entities` of `text.decode("utf-8", "replace")`, and every string
out is valid UTF-8. Words and entity texts are encoded from their code
points (not cut from a copy of the text per word: memory in proportion to
the text, not to its length times its words). With the tokenizer's
`max_text_bytes` (an export's cap) only the first that many bytes of a text
are read (`GraphTokenizer.cut_texts`), which bounds its words, tokens and
windows; and at most `max_windows` windows of a text run through the model
(`DEFAULT_MAX_WINDOWS`): a text of more sub-tokens than fit in them is
answered as its first words that do (`max_window_tokens`; `num_words` says
how many), so a request costs at most batch x max_windows windows, whatever
its texts hold (64 KiB of punctuation is 65,536 sub-tokens: over 500 windows
of 128).
"""

import tensorflow as tf

from bert_tf.tasks.token_classification import data_conlleval as conlleval
from bert_tf.tasks.token_classification import data as ner_data
from bert_tf.data import squad_windows
from bert_tf.errors import UserError
from bert_tf.export import serving_module

# conlleval's tags, as codes: "O", "B", "I", "E", "S", ".", anything else.
_TAG_CODES = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4, ".": 5}
_OTHER_TAG = 6
_O, _B, _I, _E, _S, _DOT = 0, 1, 2, 3, 4, 5

# The windows of one text the model runs on, at most (--max_windows).
DEFAULT_MAX_WINDOWS = 64


def max_window_tokens(max_windows, max_seq_length, doc_stride):
    """The most sub-tokens of a text that `max_windows` windows hold (run_squad's spans:
    the first window max_seq_length - 2 tokens, each next one doc_stride more at most)."""
    max_tokens = max_seq_length - 2
    return max_tokens + (max_windows - 1) * min(max_tokens, doc_stride)


def check_max_windows(max_windows, flag="--max_windows"):
    """`max_windows` as an int, or a one-line UserError."""
    if isinstance(max_windows, bool) or not isinstance(max_windows, int) or max_windows < 1:
        raise UserError("%s=%r: must be a positive integer (the windows of a text the model "
                        "runs on)" % (flag, max_windows))
    return max_windows


def _isin(x, codes):
    return tf.reduce_any(tf.equal(x[..., None], tf.constant(codes, x.dtype)), axis=-1)


def chunk_flags(tag, chunk_type, prev_tag, prev_type):
    """(start, end) bool Tensors: conlleval's start of a chunk at a word, and the end of
    the chunk before it (`conlleval._start_of_chunk`, `_end_of_chunk`, elementwise)."""
    typed_prev = ~_isin(prev_tag, [_O, _DOT]) & tf.not_equal(prev_type, chunk_type)
    end = (_isin(prev_tag, [_E, _S]) | (_isin(prev_tag, [_B, _I]) & _isin(tag, [_B, _S, _O]))
           | typed_prev)
    start = (_isin(tag, [_B, _S]) | (_isin(prev_tag, [_E, _S, _O]) & _isin(tag, [_E, _I]))
             | (~_isin(tag, [_O, _DOT]) & tf.not_equal(prev_type, chunk_type)))
    return start, end


def _encode_spans(cps, rows, start, end):
    """UTF-8 of cps[rows[i]][start[i]:end[i]] for each i: string [len(rows)]."""
    offset = tf.gather(tf.cast(cps.row_starts(), tf.int32), rows)
    return tf.strings.unicode_encode(
        tf.gather(cps.flat_values, tf.ragged.range(offset + start, offset + end)), "UTF-8")


class NerServingModule(serving_module.ModelServingModule):
    """A `BertTokenClassifier` served from raw text: a label per word, the entities.

    Args:
      model: `BertTokenClassifier` (float32 or an inference policy, loaded).
      tokenizer: `GraphTokenizer` of the model's vocab.
      vocab_tokens: list of str, the vocab in id order ([CLS], [SEP], [UNK]).
      labels: list of str, each label id's label (labels.txt).
      max_seq_length, doc_stride: the windows, as bert-run-ner's.
      max_windows: the most windows of one text the model runs on; a longer
        text is answered as its first words that fit in them.
    """

    def __init__(self, model, tokenizer, vocab_tokens, labels, max_seq_length, doc_stride,
                 max_windows=DEFAULT_MAX_WINDOWS, name="ner_serving"):
        super().__init__(model, tokenizer, max_seq_length, name=name)
        self.doc_stride = tf.Variable(int(doc_stride), trainable=False, name="doc_stride")
        max_windows = check_max_windows(max_windows)
        self.max_windows = tf.Variable(max_windows, trainable=False, name="max_windows")
        self._max_window_tokens = max_window_tokens(max_windows, max_seq_length, doc_stride)
        self.labels = tf.Variable(list(labels), trainable=False, name="labels")
        self._doc_stride = int(doc_stride)
        vocab = {token: i for i, token in enumerate(vocab_tokens)}
        self._cls_id, self._sep_id, self._unk_id = (vocab["[CLS]"], vocab["[SEP]"],
                                                    vocab["[UNK]"])
        bounds, classes = ner_data.char_class_ranges()
        self._char_bounds = tf.constant(bounds, tf.int32)
        self._char_classes = tf.constant(classes, tf.int32)
        tags, types = zip(*(conlleval.split_label(label) for label in labels))
        type_names = sorted(set(types))
        self._label_names = tf.constant(list(labels))
        self._label_tags = tf.constant([_TAG_CODES.get(t, _OTHER_TAG) for t in tags], tf.int32)
        self._label_types = tf.constant([type_names.index(t) for t in types], tf.int32)
        self._type_names = tf.constant(type_names)
        self._outside_type = type_names.index("") if "" in type_names else -1
        self.serving_default = tf.function(
            self._serve, input_signature=[serving_module.text_spec()], autograph=False)
        self.serve_text = tf.function(
            self._serve_text, input_signature=[serving_module.text_spec(serving_module.OLD_TEXT)],
            autograph=False)

    def _words(self, text):
        """(code points [B, (chars)], and per word [W]: its text, char start, char end)."""
        cps = tf.strings.unicode_decode(text, "UTF-8", errors="replace")
        flat = cps.flat_values  # [N]
        n = tf.size(flat)
        text_of_cp = tf.cast(cps.value_rowids(), tf.int32)  # [N]
        row_starts = tf.cast(cps.row_splits, tf.int32)
        position = tf.range(n) - tf.gather(row_starts, text_of_cp)  # [N]: index in its text
        index = tf.searchsorted(self._char_bounds[None], flat[None], side="right",
                                out_type=tf.int32)[0]
        kind = tf.gather(self._char_classes, index - 1)  # [N]: 0 separator, 1 letter, 2 alone
        first = tf.equal(position, 0)
        last = tf.equal(position + 1, tf.gather(row_starts[1:] - row_starts[:-1], text_of_cp))
        prev_kind = tf.where(first, 0, tf.concat([[0], kind[:-1]], 0))
        next_kind = tf.where(last, 0, tf.concat([kind[1:], [0]], 0))
        is_start = tf.equal(kind, 2) | (tf.equal(kind, 1) & tf.not_equal(prev_kind, 1))
        is_end = tf.equal(kind, 2) | (tf.equal(kind, 1) & tf.not_equal(next_kind, 1))
        starts = tf.reshape(tf.where(is_start), [-1])  # [W]
        ends = tf.reshape(tf.where(is_end), [-1])  # [W]: each word's last character
        return (cps, tf.gather(text_of_cp, starts), tf.gather(position, starts),
                tf.gather(position, ends) + 1)

    def _serve_text(self, text):
        return self.serving_default(text)

    def _serve(self, text_a):
        text = self.tokenizer.cut_texts(text_a)  # the first max_text_bytes bytes
        batch_size = tf.size(text)
        cps, word_text, char_start, char_end = self._words(text)
        words = _encode_spans(cps, word_text, char_start, char_end)  # [W]
        pieces = self.tokenizer.tokenize(words)  # [W, (pieces)]
        # A text's words whose sub-tokens fit in max_windows windows, the rest dropped.
        word_tokens = tf.maximum(tf.cast(pieces.row_lengths(), tf.int32), 1)  # [W]
        text_start = tf.cumsum(tf.math.unsorted_segment_sum(word_tokens, word_text, batch_size),
                               exclusive=True)  # [B]
        keep = (tf.cumsum(word_tokens) - tf.gather(text_start, word_text)
                <= self._max_window_tokens)  # [W]: the word's last sub-token fits
        words, word_text, char_start, char_end = (
            tf.boolean_mask(x, keep) for x in (words, word_text, char_start, char_end))
        pieces = tf.ragged.boolean_mask(pieces, keep)
        lengths = tf.cast(pieces.row_lengths(), tf.int32)
        # A word of no token is one [UNK] (as ner_data.word_pieces).
        dense = tf.concat([pieces.to_tensor(default_value=self._unk_id),
                           tf.fill([tf.size(words), 1], self._unk_id)], 1)  # [W, P + 1]
        pieces = tf.RaggedTensor.from_tensor(dense, lengths=tf.maximum(lengths, 1))
        token_ids = pieces.flat_values  # [T]
        first_token = tf.cast(pieces.row_splits[:-1], tf.int32)  # [W]
        num_doc_tokens = tf.math.unsorted_segment_sum(tf.maximum(lengths, 1), word_text,
                                                      batch_size)  # [B]
        text_token_start = tf.cumsum(num_doc_tokens, exclusive=True)  # [B]

        # run_squad's windows of each text's sub-tokens, [CLS] window [SEP].
        max_tokens = tf.fill([batch_size], self._seq_length - 2)
        _, f_text, _, f_start, f_length, is_max_context = squad_windows.doc_windows(
            num_doc_tokens, max_tokens, self._doc_stride)
        offset = tf.range(self._seq_length)[None, :] - 1  # [1, S]: the token's index in its window
        in_window = (offset >= 0) & (offset < f_length[:, None])  # [F, S]
        token = tf.gather(text_token_start, f_text)[:, None] + f_start[:, None] + offset
        ids = tf.gather(tf.concat([token_ids, [0]], 0),
                        tf.where(in_window, token, tf.size(token_ids)))  # [F, S]
        input_ids = tf.where(tf.equal(offset, -1), self._cls_id,
                             tf.where(tf.equal(offset, f_length[:, None]), self._sep_id, ids))
        input_mask = tf.cast(offset <= f_length[:, None], tf.int32)
        logits = self.model({"input_ids": input_ids, "input_mask": input_mask,
                             "segment_ids": tf.zeros_like(input_ids)},
                            training=False)["logits"]  # [F, S, L]
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)  # [F, S]

        # Each sub-token's prediction from its max-context window, then each word's first one's.
        width = tf.shape(is_max_context)[1]
        chosen = tf.where(is_max_context)  # [T, 2]: (window, offset), one per token
        chosen_token = tf.gather_nd(token[:, 1:width + 1], chosen)
        chosen_label = tf.gather_nd(predictions[:, 1:width + 1], chosen)
        token_label = tf.scatter_nd(chosen_token[:, None], chosen_label,
                                    tf.shape(token_ids))  # [T]
        word_label = tf.gather(token_label, first_token)  # [W]

        def per_text(values, default):
            return tf.RaggedTensor.from_value_rowids(values, word_text, nrows=batch_size
                                                     ).to_tensor(default_value=default)

        labels = per_text(tf.gather(self._label_names, word_label), "")  # [B, M]
        num_words = tf.math.bincount(word_text, minlength=batch_size, maxlength=batch_size)
        outputs = {"words": per_text(words, ""), "labels": labels,
                   "word_start": per_text(char_start, -1), "word_end": per_text(char_end, -1),
                   "num_words": num_words}
        outputs.update(self._entities(cps, word_text, word_label, char_start, char_end,
                                      batch_size))
        return outputs

    def _entities(self, cps, word_text, word_label, char_start, char_end, batch_size):
        """conlleval's chunks of each text's word labels, as padded entity columns."""
        def per_text(values, default):  # [B, M + 1]: a final "O" column ends the last chunk
            padded = tf.RaggedTensor.from_value_rowids(values, word_text, nrows=batch_size)
            return tf.concat([padded.to_tensor(default_value=default),
                              tf.fill([batch_size, 1], default)], 1)

        tag = per_text(tf.gather(self._label_tags, word_label), _O)
        chunk_type = per_text(tf.gather(self._label_types, word_label), self._outside_type)
        prev_tag = tf.concat([tf.fill([batch_size, 1], _O), tag[:, :-1]], 1)
        prev_type = tf.concat([tf.fill([batch_size, 1], self._outside_type),
                               chunk_type[:, :-1]], 1)
        start, end = chunk_flags(tag, chunk_type, prev_tag, prev_type)
        first = tf.cast(tf.where(start), tf.int32)  # [K, 2]: (text, first word)
        last = tf.cast(tf.where(end), tf.int32) - [0, 1]  # [K, 2]: (text, last word)
        rows = first[:, 0]

        def column(values, default):
            return per_text(values, default)[:, :-1]

        def entity(values, at, default):
            return tf.RaggedTensor.from_value_rowids(
                tf.gather_nd(values, at), rows, nrows=batch_size).to_tensor(default_value=default)

        entity_start = tf.gather_nd(column(char_start, 0), first)
        entity_end = tf.gather_nd(column(char_end, 0), last)
        entity_texts = tf.RaggedTensor.from_value_rowids(
            _encode_spans(cps, rows, entity_start, entity_end), rows,
            nrows=batch_size).to_tensor(default_value="")
        return {
            "entity_types": tf.RaggedTensor.from_value_rowids(
                tf.gather(self._type_names, tf.gather_nd(chunk_type, last)), rows,
                nrows=batch_size).to_tensor(default_value=""),
            "entity_texts": entity_texts,
            "entity_start": entity(column(char_start, -1), first, -1),
            "entity_end": entity(column(char_end, -1), last, -1),
            "num_entities": tf.math.bincount(rows, minlength=batch_size, maxlength=batch_size),
        }

    def signatures(self):
        return serving_module.single_text_signatures(self.serving_default, self.serve_text)
