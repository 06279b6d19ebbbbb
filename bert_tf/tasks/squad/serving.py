# coding=utf-8
"""SQuAD prediction as one graph of core TensorFlow ops (original: run_squad's predict path).

`SquadServingModule` turns (question, context) strings into the answer that
`squad_predictions.write_predictions` puts in predictions.json for SQuAD 1.1, with
core TensorFlow ops only (no tensorflow_text, no py_function), so a
SavedModel of it runs in stock TF Serving:

  module = SquadServingModule(model, tokenizer, max_seq_length=384, doc_stride=128,
                              max_query_length=64, n_best_size=20, max_answer_length=30)
  tf.saved_model.save(module, path, signatures={"serving_default": module.serving_default})
  out = module.serving_default(question=tf.constant([...]), context=tf.constant([...]))

Signature `serving_default(question, context)`:
  question: string [batch] (UTF-8).
  context: string [batch] (UTF-8), one context per question.
Outputs:
  answer: string [batch], the best answer text (predictions.json of SQuAD
    1.1); "empty" when no span is valid (the original's nonce prediction,
    e.g. for a context without words).
  score: float32 [batch], start_logit + end_logit of that answer (summed in
    float64 as the original does in Python, then cast); 0 for "empty".
  start_logits, end_logits: float32 [batch, max_windows, max_seq_length]:
    the logits of every doc-stride window of each example, in window order;
    max_windows is the largest number of windows of an example in this
    batch; the windows past an example's num_windows are zeros.
  num_windows: int32 [batch], the windows (features) of each example.
  window, start_index, end_index: int32 [batch]: the window that holds the
    answer and its start/end token positions in that window's sequence
    ([CLS] query [SEP] doc-span [SEP]); -1 when the answer is "empty".

The graph is the original's pipeline, step by step:
  1. `read_squad_examples`: the context is split into whitespace words
     (doc_tokens) on " ", "\\t", "\\r", "\\n" and U+202F.
  2. `convert_examples_to_features`: each word is tokenized alone by
     `GraphTokenizer.tokenize` (== FullTokenizer.tokenize, one text per word,
     so the sub-tokens and tok_to_orig_index are the original's by
     construction, also where BasicTokenizer splits a word on punctuation or
     drops it as control characters); the question is tokenized and cut to
     max_query_length tokens; the doc-stride windows (starts k * min(
     max_tokens_for_doc, doc_stride), max_tokens_for_doc = max_seq_length -
     len(query) - 3) and each token's max-context window (the same float64
     score, the first window wins a tie, over the windows that can overlap)
     are computed for all windows at once (`bert_tf.data.squad_windows.doc_windows`).
  3. The model runs on all windows of the batch at once.
  4. `write_predictions`: per window the n_best_size best start and end
     indexes (`tf.math.top_k`: value order, ties in index order, as the
     original's stable sort); the pairs the original keeps (start and end in
     the doc span, start at its max-context window, end >= start, length <=
     max_answer_length); the best start_logit + end_logit in float64, ties
     broken by the original's candidate order (window, start rank, end rank),
     which is what its stable sort does. For SQuAD 1.1 the prediction is the
     top n-best entry, i.e. the top candidate (de-duplication by text only
     drops later entries), so the rest of the n-best is not needed.
  5. `get_final_text`, exactly: pred_text is the WordPiece tokens joined by
     " " with " ##" then "##" removed and spaces collapsed; orig_text is the
     words doc_tokens[orig_start..orig_end] joined by " "; tok_text is
     BasicTokenizer(do_lower_case).tokenize(orig_text) joined by " " (the word
     stream of GraphTokenizer's per-code-point map); the first occurrence of
     pred_text in tok_text (code points) is projected back through the
     space-stripped character alignment, falling back to orig_text in each
     case the original falls back.

Differences from write_predictions (see tests/test_export_squad.py):
  * Input is UTF-8 bytes; invalid bytes are dropped (as GraphTokenizer does,
    like `tokenization.convert_to_unicode`), also from the answer text.
  * With the tokenizer's `max_text_bytes` (an export's cap), the question and
    the context are each read up to that many bytes (`GraphTokenizer.cut_texts`):
    a context has at most that many tokens, so at most
    1 + ceil((max_text_bytes - max_tokens_for_doc) / doc_stride) windows.
  * The logits are this graph's: a model run on a different batch of windows
    can differ in the last float32 bits, which can only change the answer
    where two candidates tie to within that.
  * SQuAD 2.0 (null answers) is not served.
"""

import numpy as np
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.data import squad_windows
from bert_tf.data import text_windows
from bert_tf.errors import UserError
from bert_tf.export import serving_module
from bert_tf.tokenization.graph_tokenizer import GraphTokenizer

# read_squad_examples' `_is_whitespace`.
_DOC_WHITESPACE = (0x20, 0x09, 0x0D, 0x0A, 0x202F)
_SPACE = 0x20


def _exclusive_cumsum(x):
    return tf.cumsum(x, exclusive=True)


def _gather_or(params, index, default):
    """params[index] for a rank-1 params, `default` where index is out of range (also if empty)."""
    size = tf.size(params)
    inside = (index >= 0) & (index < size)
    return tf.gather(tf.concat([params, tf.cast([default], params.dtype)], 0),
                     tf.where(inside, index, size))


def _is_doc_whitespace(cps):
    result = tf.zeros_like(cps, dtype=tf.bool)
    for c in _DOC_WHITESPACE:
        result |= tf.equal(cps, c)
    return result


class SquadServingModule(tf.Module):
    """BertSquad + GraphTokenizer + run_squad's features and predictions, in core TF ops.

    Args:
      model: a `BertSquad` (features dict -> {"start_logits", "end_logits"}).
      tokenizer: a `GraphTokenizer`, or a `tokenization.FullTokenizer` (its
        vocab and do_lower_case make one).
      max_seq_length, doc_stride, max_query_length: as run_squad's flags.
      n_best_size, max_answer_length: as run_squad's flags.
      name: tf.Module name.

    See the module docstring for `serving_default`.
    """

    def __init__(self, model, tokenizer, max_seq_length=384,
                 doc_stride=text_windows.DOC_STRIDES["squad"],
                 max_query_length=64, n_best_size=20, max_answer_length=30, name=None):
        super().__init__(name=name)
        if isinstance(tokenizer, tokenization.FullTokenizer):
            tokenizer = GraphTokenizer(tokenizer.vocab,
                                       do_lower_case=tokenizer.basic_tokenizer.do_lower_case)
        if not isinstance(tokenizer, GraphTokenizer):
            raise UserError("SquadServingModule needs a GraphTokenizer or a FullTokenizer, not %r"
                            % type(tokenizer).__name__)
        self.max_seq_length = int(max_seq_length)
        self.doc_stride = text_windows.check_doc_stride(doc_stride, "doc_stride")
        self.max_query_length = int(max_query_length)
        self.n_best_size = int(n_best_size)
        self.max_answer_length = int(max_answer_length)
        if self.max_seq_length <= self.max_query_length + 3:
            raise UserError(
                "The max_seq_length (%d) must be greater than max_query_length (%d) + 3"
                % (self.max_seq_length, self.max_query_length))
        if self.n_best_size < 1:
            raise UserError("n_best_size must be positive, not %d" % self.n_best_size)
        if tokenizer._cls_id is None or tokenizer._sep_id is None:
            raise UserError("the vocab needs [CLS] and [SEP] for SQuAD features")
        # The model is held untracked: tf.saved_model.save would otherwise
        # trace the Keras model's own `_default_save_signature` (with float
        # inputs, which fails). Its variables are tracked instead, as Keras's
        # ExportArchive does.
        self._model_holder = serving_module.Untracked(model)
        serving_module.track_model_variables(self, model)
        self.tokenizer = tokenizer
        self.do_lower_case = tokenizer.do_lower_case
        # id -> token text (pred_text is built from the token strings).
        keys, values = tokenizer._vocab_table.export()
        keys, values = keys.numpy(), values.numpy()
        id_to_token = np.full([int(values.max()) + 1], b"[UNK]", dtype=object)
        id_to_token[values] = keys
        self._id_to_token = tf.constant(id_to_token.astype(bytes), tf.string)

    @property
    def model(self):
        """The span model (not a tracked child; its variables are `model_variables`)."""
        return self._model_holder.value

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                  tf.TensorSpec([None], tf.string, name="context")],
                 autograph=False)
    def serving_default(self, question, context):
        """See the module docstring."""
        return self._predict(question, context)

    # -- features -----------------------------------------------------------

    def _predict(self, question, context):
        S = self.max_seq_length
        batch = tf.size(question)
        tokenizer = self.tokenizer

        # 1. Whitespace words of each context (read_squad_examples' doc_tokens),
        # of its first max_text_bytes bytes (the question's are cut by `tokenize`).
        context = tokenizer.cut_texts(context)
        cps = tf.strings.unicode_decode(context, "UTF-8", errors="ignore")
        flat = cps.flat_values
        char_row = tf.cast(cps.value_rowids(), tf.int32)
        row_start = tf.cast(cps.row_starts(), tf.int32)
        is_ws = _is_doc_whitespace(flat)
        first_of_row = tf.equal(tf.range(tf.size(flat)), tf.gather(row_start, char_row))
        prev_ws = tf.concat([[True], is_ws[:-1]], 0) | first_of_row
        word_start = ~is_ws & prev_ws
        word_of_char = tf.cumsum(tf.cast(word_start, tf.int32)) - 1
        num_words = tf.reduce_sum(tf.cast(word_start, tf.int32))
        words = tf.strings.unicode_encode(tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(flat, ~is_ws), tf.boolean_mask(word_of_char, ~is_ws),
            nrows=num_words), "UTF-8")  # [W]
        words_per_example = tf.math.unsorted_segment_sum(
            tf.cast(word_start, tf.int32), char_row, batch)  # [B]

        # 2. Sub-tokens of each word alone; all_doc_tokens and tok_to_orig_index.
        word_pieces = tokenizer.tokenize(words)  # [W, (pieces)]
        pieces_per_word = tf.cast(word_pieces.row_lengths(), tf.int32)
        doc_ids = word_pieces.flat_values  # [P], all examples
        tok_to_word = tf.repeat(tf.range(num_words), pieces_per_word)  # global word index
        word_example = tf.repeat(tf.range(batch), words_per_example)
        num_doc_tokens = tf.math.unsorted_segment_sum(pieces_per_word, word_example, batch)
        doc_row_start = _exclusive_cumsum(num_doc_tokens)  # [B]

        query = tokenizer.tokenize(question)[:, :self.max_query_length]
        query_len = tf.cast(query.row_lengths(), tf.int32)  # [B]

        # Doc-stride windows: starts k * step; lengths min(T - start, max_tokens).
        max_tokens = S - query_len - 3  # >= 1
        windows = squad_windows.doc_windows(num_doc_tokens, max_tokens, self.doc_stride)
        num_windows, f_example, f_window, f_start, f_length, is_max_context = windows
        num_features = tf.size(f_example)
        f_query_len = tf.gather(query_len, f_example)
        f_first = f_query_len + 2  # sequence position of the span's first token
        f_doc_at = tf.gather(doc_row_start, f_example) + f_start  # flat index of that token

        ones = tf.ones([num_features], tf.int64)

        def const(value, counts):
            return tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(counts)], value), tf.cast(counts, tf.int64))

        span_ids = tf.gather(doc_ids, tf.ragged.range(f_doc_at, f_doc_at + f_length))
        tokens = tf.concat([
            const(tokenizer._cls_id, ones), tf.gather(query.with_row_splits_dtype(tf.int64),
                                                      f_example),
            const(tokenizer._sep_id, ones), span_ids.with_row_splits_dtype(tf.int64),
            const(tokenizer._sep_id, ones)], axis=1)
        segments = tf.concat([const(0, f_query_len + 2), const(1, f_length + 1)], axis=1)
        features = {
            "input_ids": tokens.to_tensor(0, shape=[None, S]),
            "input_mask": tf.ones_like(tokens).to_tensor(0, shape=[None, S]),
            "segment_ids": segments.to_tensor(0, shape=[None, S]),
        }

        # 3. The model, on every window of the batch.
        outputs = self.model(features, training=False)
        start_logits = tf.cast(outputs["start_logits"], tf.float32)  # [F, S]
        end_logits = tf.cast(outputs["end_logits"], tf.float32)

        # 4. The best candidate span (write_predictions' top n-best entry).
        best = self._best_span(start_logits, end_logits, f_example, f_first, f_length,
                               is_max_context, batch)
        has_answer, best_score, best_feature, best_start, best_end = best

        # 5. The text: doc tokens, orig words, get_final_text.
        offset = _gather_or(f_doc_at, best_feature, 0) - _gather_or(f_first, best_feature, 0)
        tok_first = tf.where(has_answer, offset + best_start, 0)
        tok_last = tf.where(has_answer, offset + best_end, -1)
        piece_texts = tf.gather(self._id_to_token,
                                tf.gather(doc_ids, tf.ragged.range(tok_first, tok_last + 1)))
        pred_text = tf.strings.reduce_join(piece_texts, axis=1, separator=" ")
        pred_text = tf.strings.regex_replace(pred_text, " ##", "", replace_global=True)
        pred_text = tf.strings.regex_replace(pred_text, "##", "", replace_global=True)
        pred_text = tf.strings.regex_replace(pred_text, "  +", " ", replace_global=True)
        pred_text = tf.strings.regex_replace(pred_text, "^ | $", "", replace_global=True)
        word_first = tf.where(has_answer, _gather_or(tok_to_word, tok_first, 0), 0)
        word_last = tf.where(has_answer, _gather_or(tok_to_word, tok_last, 0), -1)
        orig_text = tf.strings.reduce_join(
            tf.gather(words, tf.ragged.range(word_first, word_last + 1)), axis=1, separator=" ")
        final_text = self._final_text(pred_text, orig_text)

        def per_example(values):
            return tf.RaggedTensor.from_row_lengths(values, num_windows).to_tensor(
                0.0, shape=[None, None, S])

        window = tf.where(has_answer, _gather_or(f_window, best_feature, -1), -1)
        return {
            "answer": tf.where(has_answer, final_text, "empty"),
            "score": tf.cast(tf.where(has_answer, best_score, 0.0), tf.float32),
            "start_logits": per_example(start_logits),
            "end_logits": per_example(end_logits),
            "num_windows": num_windows,
            "window": window,
            "start_index": tf.where(has_answer, best_start, -1),
            "end_index": tf.where(has_answer, best_end, -1),
        }

    def _best_span(self, start_logits, end_logits, f_example, f_first, f_length,
                   is_max_context, batch):
        """The top prelim prediction of each example: (has, score f64, feature, start, end)."""
        S = self.max_seq_length
        k = min(self.n_best_size, S)
        start_values, start_indexes = tf.math.top_k(start_logits, k=k)  # [F, K]
        end_values, end_indexes = tf.math.top_k(end_logits, k=k)
        num_features = tf.shape(start_logits)[0]
        s = start_indexes[:, :, None]  # [F, K, 1]
        e = end_indexes[:, None, :]  # [F, 1, K]
        first = f_first[:, None, None]
        last = (f_first + f_length - 1)[:, None, None]
        s_offset = tf.clip_by_value(start_indexes - f_first[:, None], 0,
                                    tf.maximum(tf.shape(is_max_context)[1] - 1, 0))
        s_max = tf.gather(is_max_context, s_offset, batch_dims=1)[:, :, None]  # [F, K, 1]
        valid = ((s >= first) & (s <= last) & s_max & (e >= first) & (e <= last)
                 & (e >= s) & (e - s + 1 <= self.max_answer_length))  # [F, K, K]
        score = (tf.cast(start_values, tf.float64)[:, :, None]
                 + tf.cast(end_values, tf.float64)[:, None, :])
        # Flattened in the original's candidate order (window, start rank, end
        # rank); the features of an example are contiguous and in window order.
        valid = tf.reshape(valid, [-1])
        score = tf.reshape(score, [-1])
        cand_example = tf.repeat(f_example, k * k)
        order = tf.range(num_features * k * k)
        masked = tf.where(valid, score, -np.inf)
        top = tf.math.unsorted_segment_max(masked, cand_example, batch)  # [B]
        has = tf.math.unsorted_segment_max(tf.cast(valid, tf.int32), cand_example, batch) > 0
        winner = valid & tf.equal(masked, tf.gather(top, cand_example))
        big = num_features * k * k
        pick = tf.math.unsorted_segment_min(tf.where(winner, order, big), cand_example, batch)
        pick = tf.where(has, pick, 0)
        feature = tf.where(has, pick // (k * k), -1)
        flat_start = tf.reshape(tf.broadcast_to(s, [num_features, k, k]), [-1])
        flat_end = tf.reshape(tf.broadcast_to(e, [num_features, k, k]), [-1])
        start = tf.where(has, _gather_or(flat_start, pick, -1), -1)
        end = tf.where(has, _gather_or(flat_end, pick, -1), -1)
        return has, tf.where(has, top, 0.0), feature, start, end

    # -- get_final_text -----------------------------------------------------

    def _basic_text(self, orig):
        """" ".join(BasicTokenizer(do_lower_case).tokenize(text)) as code points [B, (chars)]."""
        tokenizer = self.tokenizer
        flat = orig.flat_values
        text_of_cp = tf.cast(orig.value_rowids(), tf.int32)
        if self.do_lower_case:
            flat = tokenizer._final_sigma(flat, text_of_cp)
        values, out_len = tokenizer._map(flat, text_of_cp)
        num_texts = tf.cast(orig.nrows(), tf.int32)
        slot_splits = tf.gather(tf.concat([[0], tf.cumsum(out_len)], 0),
                                tf.cast(orig.row_splits, tf.int32))
        m = tf.size(values)
        slot_text = tf.repeat(tf.range(num_texts), slot_splits[1:] - slot_splits[:-1])
        is_char = tf.not_equal(values, _SPACE)
        text_start = tf.equal(tf.range(m), tf.gather(slot_splits, slot_text))
        prev_space = tf.concat([[True], ~is_char], 0)[:-1] | text_start
        word_start = is_char & prev_space
        # Words before each slot in its text: a space goes before every word but the first.
        words_before = tf.cumsum(tf.cast(word_start, tf.int32)) - tf.gather(
            tf.concat([[0], tf.cumsum(tf.cast(word_start, tf.int32))], 0),
            tf.gather(slot_splits, slot_text))
        space_before = word_start & (words_before > 1)
        chars = tf.boolean_mask(values, is_char)
        char_space = tf.cast(tf.boolean_mask(space_before, is_char), tf.int32)
        char_text = tf.boolean_mask(slot_text, is_char)
        count = 1 + char_space
        source = tf.repeat(tf.range(tf.size(chars)), count)
        slot = tf.range(tf.size(source)) - tf.gather(_exclusive_cumsum(count), source)
        out = tf.where(tf.equal(slot, 0) & tf.gather(char_space > 0, source), _SPACE,
                       tf.gather(chars, source))
        return tf.RaggedTensor.from_value_rowids(
            out, tf.cast(tf.gather(char_text, source), tf.int64), nrows=tf.cast(num_texts, tf.int64))

    def _final_text(self, pred_text, orig_text):
        """`get_final_text(pred_text, orig_text, do_lower_case)` for string Tensors [B]."""
        orig = tf.strings.unicode_decode(orig_text, "UTF-8")
        pred = tf.strings.unicode_decode(pred_text, "UTF-8")
        tok = self._basic_text(orig)
        tok_len = tf.cast(tok.row_lengths(), tf.int32)
        pred_len = tf.cast(pred.row_lengths(), tf.int32)
        tok_dense = tok.to_tensor(-1)  # [B, Lt]
        pred_dense = pred.to_tensor(-2)  # [B, Lp]
        lt = tf.shape(tok_dense)[1]
        lp = tf.shape(pred_dense)[1]
        # start_position = tok_text.find(pred_text), by brute force over pred's chars.
        positions = tf.range(lt + 1)[None, :]  # a match may start at len(tok_text) iff pred is ""
        match = positions <= (tok_len - pred_len)[:, None]  # [B, Lt + 1]
        tok_padded = tf.pad(tok_dense, [[0, 0], [0, 1]], constant_values=-1)

        def step(j, match):
            at = tf.minimum(positions + j, lt)
            same = tf.equal(tf.gather(tok_padded, tf.broadcast_to(at, tf.shape(match)),
                                      batch_dims=1), pred_dense[:, j][:, None])
            return j + 1, match & (same | (j >= pred_len)[:, None])

        _, match = tf.while_loop(lambda j, _: j < lp, step, (tf.constant(0), match))
        start = tf.reduce_min(tf.where(match, positions, lt + 1), axis=1)
        found = start <= lt
        end = start + pred_len - 1

        # The space-stripped (U+0020 only) character alignment.
        tok_is_char = tf.not_equal(tok_padded, _SPACE) & (tok_padded >= 0)  # [B, Lt + 1]
        orig_dense = orig.to_tensor(-1)
        orig_is_char = tf.not_equal(orig_dense, _SPACE) & (orig_dense >= 0)
        tok_ns_len = tf.reduce_sum(tf.cast(tok_is_char, tf.int32), axis=1)
        orig_ns_len = tf.reduce_sum(tf.cast(orig_is_char, tf.int32), axis=1)
        tok_ns_index = tf.cumsum(tf.cast(tok_is_char, tf.int32), axis=1) - 1  # [B, Lt]

        def tok_char_at(i):
            ok = (i >= 0) & (i < tok_len)
            safe = tf.clip_by_value(i, 0, lt)[:, None]
            is_char = tf.gather(tok_is_char, safe, batch_dims=1)[:, 0]
            ns = tf.gather(tok_ns_index, safe, batch_dims=1)[:, 0]
            return ok & is_char, ns

        start_ok, ns_start = tok_char_at(start)
        end_ok, ns_end = tok_char_at(end)
        ok = found & tf.equal(tok_ns_len, orig_ns_len) & start_ok & end_ok
        # orig_ns_to_s_map: the position of each non-space char of orig_text.
        orig_ns_index = tf.cumsum(tf.cast(orig_is_char, tf.int32), axis=1) - 1
        lo = tf.shape(orig_dense)[1]

        def orig_position(ns):
            hit = orig_is_char & tf.equal(orig_ns_index, ns[:, None])
            return tf.reduce_min(tf.where(hit, tf.range(lo)[None, :], lo), axis=1)

        orig_start = orig_position(ns_start)
        orig_end = orig_position(ns_end)
        ok &= orig_end < lo
        row_start = tf.cast(orig.row_starts(), tf.int32)
        keep = tf.ragged.range(
            row_start + tf.where(ok, orig_start, 0),
            row_start + tf.where(ok, orig_end + 1, tf.cast(orig.row_lengths(), tf.int32)))
        return tf.strings.unicode_encode(tf.gather(orig.flat_values, keep), "UTF-8")


class SquadRoot(tf.Module):
    """The saved root of a SQuAD export: `bert_tf.tasks.squad.serving.SquadServingModule` as `squad`,
    plus `do_lower_case`, `max_seq_length` and the vocab asset, as the other exports have.
    """

    def __init__(self, squad, do_lower_case, max_seq_length, vocab_file, name="squad_serving"):
        super().__init__(name=name)
        self.squad = squad
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False,
                                         name="do_lower_case")
        self.max_seq_length = tf.Variable(int(max_seq_length), trainable=False,
                                          name="max_seq_length")
        self.vocab_file = tf.saved_model.Asset(vocab_file)
