"""run_squad's doc-stride windows, in Python and as graph ops: one home for the rule.

A context longer than a feature's room (`max_tokens_for_doc = max_seq_length -
len(query) - 3`) is cut into windows ("doc spans") that start every
`min(max_tokens_for_doc, doc_stride)` tokens (original: `run_squad.py`
`convert_examples_to_features`, 350-364), and a token that several windows
hold counts only in its "max context" window: the one where min(left context,
right context) + 0.01 * window length is highest, the first one on a tie
(original: `_check_is_max_context`, 513-547).

  Python (convert_examples_to_features, `bert_tf.tasks.squad.data`):
    doc_spans, max_context_span_indexes
  Graph ops (the SQuAD SavedModel, `bert_tf.tasks.squad.serving`):
    doc_windows, graph_doc_spans (TensorFlow is imported when they are called)

`bert_tf.data.text_windows` cuts a long text to classify with the same spans.

tests/test_export_squad.py holds the two against each other on many
(tokens, max_tokens_for_doc, doc_stride).
"""

import collections

DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def doc_spans(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """The sliding windows over the document (the original's loop, 350-364).

    We can have documents that are longer than the maximum sequence length.
    To deal with this we do a sliding window approach, where we take chunks
    of the up to our max length with a stride of `doc_stride`.
    """
    doc_spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = num_doc_tokens - start_offset
        if length > max_tokens_for_doc:
            length = max_tokens_for_doc
        doc_spans.append(DocSpan(start=start_offset, length=length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return doc_spans


def max_context_span_indexes(doc_spans, num_doc_tokens):
    """For every doc token, the index of its max-context span (None if in none).

    The same answer as the original's `_check_is_max_context` for every (span,
    position; tests/squad_reference.py holds it), in
    one pass: the spans are visited in order and a later span wins only with a
    strictly higher score, computed with the very same float expression.
    """
    best_score = [None] * num_doc_tokens
    best_span = [None] * num_doc_tokens
    for span_index, doc_span in enumerate(doc_spans):
        start = doc_span.start
        end = doc_span.start + doc_span.length - 1
        bonus = 0.01 * doc_span.length
        for position in range(start, end + 1):
            left = position - start
            right = end - position
            score = (left if left < right else right) + bonus  # min(left, right) + bonus
            if best_score[position] is None or score > best_score[position]:
                best_score[position] = score
                best_span[position] = span_index
    return best_span


def doc_windows(num_doc_tokens, max_tokens, doc_stride):
    """convert_examples_to_features' doc spans and max-context flags, for a batch.

    Args:
      num_doc_tokens: int32 [B], len(all_doc_tokens) of each example.
      max_tokens: int32 [B] (>= 1), max_tokens_for_doc of each example.
      doc_stride: Python int.

    Returns:
      (num_windows [B], f_example [F], f_window [F], f_start [F], f_length [F],
      is_max_context bool [F, L]); F = sum(num_windows), one row per doc span
      (feature) in the original's order; is_max_context[f, d] is
      token_is_max_context of the span's d-th token (False for d >= length).
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  (the Python half needs none)
    num_windows, f_example, f_window, f_start, f_length = graph_doc_spans(
        num_doc_tokens, max_tokens, doc_stride)
    step = tf.minimum(max_tokens, doc_stride)
    is_max_context = _graph_max_context(f_example, f_window, f_start, f_length, num_windows, step,
                                  num_doc_tokens, max_tokens)
    return num_windows, f_example, f_window, f_start, f_length, is_max_context


def graph_doc_spans(num_doc_tokens, max_tokens, doc_stride):
    """`doc_spans` of a batch of documents, as graph ops.

    Args:
      num_doc_tokens: int32 [B], each document's number of tokens.
      max_tokens: int32 [B] (>= 1), each document's room in a window.
      doc_stride: Python int (or int32 scalar).

    Returns:
      (num_windows [B], f_example [F], f_window [F], f_start [F], f_length [F]):
      F = sum(num_windows), one row per span in `doc_spans`' order, each
      with its document, its index among the document's spans, its start
      and its length. A document of no tokens has no span, as in `doc_spans`.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    # start_offset += min(length, doc_stride), and length == max_tokens until
    # the last span: the starts are k * step.
    step = tf.minimum(max_tokens, doc_stride)
    num_windows = tf.where(
        num_doc_tokens == 0, 0,
        tf.where(num_doc_tokens <= max_tokens, 1,
                 1 + (num_doc_tokens - max_tokens + step - 1) // step))
    num_features = tf.reduce_sum(num_windows)
    f_example = tf.repeat(tf.range(tf.size(num_doc_tokens)), num_windows)  # [F]
    f_window = tf.range(num_features) - tf.gather(tf.cumsum(num_windows, exclusive=True), f_example)
    f_start = f_window * tf.gather(step, f_example)
    f_length = tf.minimum(tf.gather(num_doc_tokens, f_example) - f_start,
                          tf.gather(max_tokens, f_example))
    return num_windows, f_example, f_window, f_start, f_length


def _graph_max_context(f_example, f_window, f_start, f_length, num_windows, step,
                 num_doc_tokens, max_tokens):
    """bool [F, S']: whether each span offset's token has its max context in its window.

    The original's `_check_is_max_context` over the windows of the same example: score
    min(left, right) + 0.01 * length in float64, the first window wins a tie.
    Columns are offsets d in the span (token f_start + d); S' = max length.
    Only the windows that can overlap window k are scored: j in k +- R,
    R = (max_tokens - 1) // step (windows further apart share no token).
    """
    import numpy as np  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    max_len = tf.reduce_max(tf.concat([f_length, [0]], 0))
    reach = tf.reduce_max(tf.concat([(max_tokens - 1) // step, [0]], 0))
    d = tf.range(max_len)
    position = f_start[:, None] + d[None, :]  # [F, L]
    o = tf.range(-reach, reach + 1)  # [J], ascending: ties go to the first window
    j = f_window[:, None] + o[None, :]  # [F, J]
    e_step = tf.gather(step, f_example)
    j_start = j * e_step[:, None]  # [F, J]
    j_length = tf.minimum(tf.gather(num_doc_tokens, f_example)[:, None] - j_start,
                          tf.gather(max_tokens, f_example)[:, None])
    j_valid = (j >= 0) & (j < tf.gather(num_windows, f_example)[:, None])
    j_end = j_start + j_length - 1
    p = position[:, None, :]  # [F, 1, L]
    left = p - j_start[:, :, None]
    right = j_end[:, :, None] - p
    inside = (left >= 0) & (right >= 0) & j_valid[:, :, None]
    score = (tf.cast(tf.minimum(left, right), tf.float64)
             + 0.01 * tf.cast(j_length, tf.float64)[:, :, None])
    score = tf.where(inside, score, -np.inf)
    top = tf.reduce_max(score, axis=1, keepdims=True)
    first_best = tf.reduce_min(tf.where(inside & tf.equal(score, top), o[None, :, None],
                                        reach + 1), axis=1)  # [F, L]
    return tf.equal(first_best, 0) & (d[None, :] < f_length[:, None])
