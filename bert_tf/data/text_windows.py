"""Long texts to classify, cut into run_squad's doc-stride windows (new: the original truncated).

With a `doc_stride`, a text longer than a window's room (`max_seq_length - 2`
tokens: `[CLS] window [SEP]`) is cut as run_squad cuts its document
(`squad_windows.doc_spans`: a window starts every `doc_stride` tokens and
holds up to the room), so every token is in some window. Each window is a
classifier example of its own; a text's logits are the mean of its windows'
logits. Single texts only: a pair has no one text to cut.

  Every task's stride (run_squad's, run_ner's and the classifier's windows,
  their models' and their exports'): DOC_STRIDES, default_doc_stride,
    check_doc_stride
  Python (run_classifier's records, `bert_tf.tasks.classifier.data`): spans
  Graph ops (`BertClassifier(doc_stride=...)` on raw text, the classifier export):
    window_features (TensorFlow is imported when it is called)

Every window record carries `document_index` (int64: its example's index in
the split), by which evaluation and prediction put the windows back
together; a batch of raw text's windows carry `text_index` (int32: the text
of the batch each window is from), by which `BertClassifier` averages them.
"""

import numbers

from bert_tf.data import squad_windows
from bert_tf.errors import UserError

# Records: the example (document) of the split a window record is from.
DOCUMENT_INDEX = "document_index"
# A batch of raw text cut into windows: the text of the batch each window is from.
TEXT_INDEX = "text_index"


# Each task's window stride when --doc_stride is not given, read by its training
# tool, its Keras model and its export alike (None: no windows, texts truncated).
# An export of a training run's output_dir takes the run's own (bert_tf_run.json).
DOC_STRIDES = {
    "squad": 128,  # run_squad's (the original's)
    "ner": 64,  # run_ner's
    "classifier": None,  # run_classifier truncates, as the original
}


def default_doc_stride(task):
    """The stride a task windows with when none is given (`DOC_STRIDES`; None: no windows)."""
    return DOC_STRIDES[task]


def check_doc_stride(doc_stride, name="--doc_stride", optional=False):
    """`doc_stride` as an int, or a one-line UserError naming `name`: the one rule.

    A stride is a positive integer: a window starts every `doc_stride`
    tokens. One over a window's room is read as the room (run_squad's
    `min(length, doc_stride)`): the windows then follow each other without
    overlap, every token still in one. `optional`: None passes (no windows).
    """
    if doc_stride is None and optional:
        return None
    if (isinstance(doc_stride, bool) or not isinstance(doc_stride, numbers.Integral)
            or doc_stride < 1):
        raise UserError("%s=%r: must be a positive integer, the tokens from the start of one "
                        "window to the next" % (name, doc_stride))
    return int(doc_stride)


def spans(num_tokens, max_seq_length, doc_stride):
    """The `squad_windows.DocSpan`s (start, length) of a text of `num_tokens` tokens.

    run_squad's `doc_spans` with a window's room of max_seq_length - 2; an
    empty text is one empty window (`[CLS] [SEP]`, as the text truncated).
    """
    return [squad_windows.DocSpan(span.start, min(span.length, num_tokens - span.start))
            for span in squad_windows.doc_spans(max(num_tokens, 1), max_seq_length - 2,
                                                doc_stride)]


def window_features(ids, max_seq_length, doc_stride, cls_id, sep_id):
    """Every window of every text as `[CLS] window [SEP]` features: `spans` in the graph.

    Args:
      ids: int32 RaggedTensor [batch_size, (tokens)] (`GraphTokenizer.tokenize`).
      max_seq_length: Python int, the length of every window's row.
      doc_stride: Python int (`check_doc_stride`).
      cls_id, sep_id: Python ints.

    Returns:
      dict: `input_ids`, `input_mask`, `segment_ids` int32 [num_windows,
      max_seq_length] (`graph_tokenizer.pack_segments`, the texts' windows in
      order) and `text_index` int32 [num_windows].
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_tf.tokenization.graph_tokenizer import pack_segments  # pylint: disable=g-import-not-at-top
    num_tokens = tf.cast(ids.row_lengths(), tf.int32)  # [B]
    room = tf.fill(tf.shape(num_tokens), max_seq_length - 2)
    # An empty text counts as one token, then its window is cut back to none.
    _, text_index, _, start, length = squad_windows.graph_doc_spans(
        tf.maximum(num_tokens, 1), room, doc_stride)  # [W] each
    length = tf.minimum(length, tf.gather(num_tokens, text_index) - start)
    first = tf.gather(ids.row_starts(), text_index) + tf.cast(start, ids.row_splits.dtype)
    window_ids = tf.gather(ids.flat_values,
                           tf.ragged.range(first, first + tf.cast(length, first.dtype)))
    features = pack_segments([window_ids], max_seq_length, cls_id, sep_id)
    features[TEXT_INDEX] = text_index
    return features
