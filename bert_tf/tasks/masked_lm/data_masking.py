"""The original's masking rule, drawn on the fly: a row's masks keyed on (seed, epoch, row).

The rule is `create_pretraining_data`'s `create_masked_lm_predictions`
(GitHub HEAD, with `--do_whole_word_mask`):

  * the candidates are the row's tokens but [CLS] and [SEP] (and padding);
  * num_to_predict = min(max_predictions_per_seq,
                         max(1, round(len(row) * masked_lm_prob))),
    len(row) counting [CLS] and [SEP], round half to even (Python 3's);
  * the candidates (whole-word masking: the words, a word being a token and
    the "##" pieces after it) are shuffled and taken in that order; with
    whole-word masking a word that would take the predictions past
    num_to_predict is skipped, and the next ones tried;
  * each chosen token is, by its own draw: [MASK] 80% of the time, kept
    10%, a random id of the vocab (any token, special ones too) 10%.

What differs from the original is when, not what: the original draws the
masks once, into the records, with Python's `random`; here they are drawn
by TensorFlow's stateless random ops inside tf.data, keyed on (seed, epoch,
row index) (`row_key`), so every epoch sees other masks, and the same seed,
epoch and row always give the same masks: a resumed run sees exactly the
masks of the run that was never stopped.
"""

import tensorflow as tf

# The streams of one seed: the rows' order in an epoch, the masks of a row.
ORDER_STREAM = 0
MASK_STREAM = 1


def base_key(seed):
    """int64 [2]: the stateless key of a run's `seed` (a Python int)."""
    seed = int(seed)
    return tf.constant([seed & 0x7FFFFFFF, (seed >> 31) & 0x7FFFFFFF], tf.int64)


def epoch_key(key, stream, epoch):
    """The key of `stream` in `epoch` (int scalar Tensors welcome)."""
    key = tf.random.experimental.stateless_fold_in(key, stream)
    return tf.random.experimental.stateless_fold_in(key, tf.cast(epoch, tf.int64))


def row_key(key, epoch, index):
    """The key of row `index`'s masks in `epoch`."""
    return tf.random.experimental.stateless_fold_in(epoch_key(key, MASK_STREAM, epoch),
                                                    tf.cast(index, tf.int64))


def epoch_order(key, epoch, num_rows):
    """int32 [num_rows]: the rows' order in `epoch` (a permutation keyed on seed and epoch)."""
    scores = tf.random.stateless_uniform([num_rows], epoch_key(key, ORDER_STREAM, epoch))
    return tf.argsort(scores, stable=True)


def num_to_predict(length, masked_lm_prob, max_predictions_per_seq):
    """The original's count: min(max_predictions_per_seq, max(1, round(length * prob)))."""
    # tf.round rounds half to even, as Python 3's round.
    count = tf.cast(tf.round(tf.cast(length, tf.float64) * masked_lm_prob), tf.int32)
    return tf.minimum(max_predictions_per_seq, tf.maximum(1, count))


def mask_row(input_ids, length, is_piece, key, masked_lm_prob, max_predictions_per_seq,
             vocab_words, mask_id, special_ids, do_whole_word_mask=False):
    """One row's masked-LM features (the original's `create_masked_lm_predictions`).

    Args:
      input_ids: int32 [seq_length], `[CLS] tokens [SEP]` then padding.
      length: int32 scalar, the row's tokens with [CLS] and [SEP].
      is_piece: bool [seq_length], a "##" continuation of the word before.
      key: the row's stateless key (`row_key`).
      masked_lm_prob, max_predictions_per_seq, do_whole_word_mask: the rule's flags.
      vocab_words: int, the vocab's tokens (a random replacement is any of them).
      mask_id: the id of [MASK].
      special_ids: ids never chosen ([CLS], [SEP]).

    Returns:
      dict: `input_ids` (masked) [seq_length], `masked_lm_positions`,
      `masked_lm_ids` int32 and `masked_lm_weights` float32
      [max_predictions_per_seq] (ascending positions, then 0-padding).
    """
    input_ids = tf.cast(input_ids, tf.int32)
    seq_length = tf.shape(input_ids)[0]
    positions = tf.range(seq_length)
    candidate = positions < length
    for special in special_ids:
        candidate &= tf.not_equal(input_ids, special)
    order_key, action_key, keep_key, word_key = tf.unstack(
        tf.random.experimental.stateless_split(key, 4))
    target = num_to_predict(length, masked_lm_prob, max_predictions_per_seq)

    # Groups: each candidate its own; with whole-word masking a "##" piece joins the
    # group before it (if any: [CLS] and [SEP] are skipped without closing a group).
    if do_whole_word_mask:
        earlier = tf.cumsum(tf.cast(candidate, tf.int32), exclusive=True) > 0
        starts = candidate & ~(tf.cast(is_piece, tf.bool) & earlier)
    else:
        starts = candidate
    group = tf.where(candidate, tf.cumsum(tf.cast(starts, tf.int32)) - 1, seq_length)
    sizes = tf.math.unsorted_segment_sum(tf.cast(candidate, tf.int32), group, seq_length + 1)
    sizes = sizes[:seq_length]  # per group id; 0 for ids that no group has
    # The groups in a random order (the ones that do not exist last).
    scores = tf.random.stateless_uniform([seq_length], order_key)
    scores = tf.where(sizes > 0, scores, 2.0)
    order = tf.argsort(scores, stable=True)
    ordered_sizes = tf.gather(sizes, order)
    if do_whole_word_mask:
        # Greedy in that order: a group that does not fit is skipped.
        def take(total, size):
            return tf.where((size > 0) & (total + size <= target), total + size, total)
        totals = tf.scan(take, ordered_sizes, initializer=tf.constant(0, tf.int32))
        before = tf.concat([[0], totals[:-1]], axis=0)
        taken_in_order = totals > before
    else:
        taken_in_order = (tf.cumsum(ordered_sizes) <= target) & (ordered_sizes > 0)
    taken_group = tf.scatter_nd(order[:, None], tf.cast(taken_in_order, tf.int32), [seq_length])
    chosen = candidate & (tf.gather(tf.concat([taken_group, [0]], axis=0), group) > 0)

    # 80% [MASK], 10% kept, 10% a random token, drawn per token.
    action = tf.random.stateless_uniform([seq_length], action_key)
    keep = tf.random.stateless_uniform([seq_length], keep_key)
    random_ids = tf.random.stateless_uniform([seq_length], word_key, minval=0,
                                             maxval=vocab_words, dtype=tf.int32)
    replacement = tf.where(action < 0.8, mask_id, tf.where(keep < 0.5, input_ids, random_ids))
    masked_ids = tf.where(chosen, replacement, input_ids)

    chosen_positions = tf.cast(tf.reshape(tf.where(chosen), [-1]), tf.int32)
    count = tf.shape(chosen_positions)[0]
    pad = [[0, max_predictions_per_seq - count]]

    def padded(values):
        return tf.ensure_shape(tf.pad(values, pad), [max_predictions_per_seq])
    return {
        "input_ids": masked_ids,
        "masked_lm_positions": padded(chosen_positions),
        "masked_lm_ids": padded(tf.gather(input_ids, chosen_positions)),
        "masked_lm_weights": padded(tf.ones([count], tf.float32)),
    }
