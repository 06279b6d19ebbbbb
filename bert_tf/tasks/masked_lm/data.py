"""Masked-LM input with masks drawn on the fly: the Trainer's and Keras `fit`'s tf.data.

`MaskedLMData` holds a corpus's packed rows (`text_rows`) and the masking
rule's flags; its datasets give the pre-training records' features
(`input_ids` masked, `input_mask`, `segment_ids`, `masked_lm_positions`,
`masked_lm_ids`, `masked_lm_weights`; no `next_sentence_labels`), each row's
masks drawn in tf.data by `masking.mask_row`, keyed on (seed, epoch, row):

  training   endless: epoch after epoch, the rows in an order keyed on (seed,
             epoch), each with the masks of (seed, epoch, row), batched with
             the remainder carried into the next epoch. The same seed gives
             the same batches on every call: a resumed run skips the batches
             it trained (`Trainer`) and sees what the uninterrupted run saw.
  evaluation every row once, in order, with the masks of epoch 0
             (`finite_input`, a `FiniteInput`).

Keras: the dataset feeds a masked-LM model's `fit` as it is (the labels
are among the features):

  data = MaskedLMData.from_text("domain.txt", "vocab.txt", max_seq_length=128, seed=1)
  model = BertMaskedLM(config)          # bert_tf.tasks.masked_lm.model
  model.compile(optimizer=create_optimizer(5e-5, steps, warmup))
  model.fit(data.dataset(32), epochs=3, steps_per_epoch=data.steps_per_epoch(32))

Each Keras epoch reads the next `steps_per_epoch` batches of the endless
dataset, so each sees new masks.
"""

import random

import tensorflow as tf

from bert_tf import tokenization
from bert_tf.data.finite_input import FiniteInput
from bert_tf.errors import UserError
from bert_tf.tasks.masked_lm import data_masking as masking
from bert_tf.tasks.masked_lm import data_text_rows as text_rows


def check_rule(masked_lm_prob, max_predictions_per_seq, max_seq_length):
    """The rule's flags, one line for a bad one."""
    if not 0.0 < masked_lm_prob <= 1.0:
        raise UserError("--masked_lm_prob=%r must be in (0, 1]" % (masked_lm_prob,))
    if max_predictions_per_seq < 1:
        raise UserError("--max_predictions_per_seq=%r must be positive"
                        % (max_predictions_per_seq,))
    if max_predictions_per_seq > max_seq_length - 2:
        raise UserError("--max_predictions_per_seq=%d: more than the %d tokens a row of "
                        "--max_seq_length=%d holds" % (max_predictions_per_seq,
                                                       max_seq_length - 2, max_seq_length))


class MaskedLMData(object):
    """A corpus's rows, masked on the fly by the original's rule (see the module docstring).

    Args:
      rows: `text_rows.Rows`.
      vocab_words: the vocab's number of tokens (a random replacement is one of them).
      mask_id, cls_id, sep_id: the special tokens' ids.
      masked_lm_prob, max_predictions_per_seq, do_whole_word_mask: the rule.
      seed: int, the masks' and the order's seed; None: one drawn at random.
    """

    def __init__(self, rows, vocab_words, mask_id, cls_id, sep_id, masked_lm_prob=0.15,
                 max_predictions_per_seq=20, do_whole_word_mask=False, seed=None):
        check_rule(masked_lm_prob, max_predictions_per_seq, rows.input_ids.shape[1])
        self.rows = rows
        self.vocab_words = int(vocab_words)
        self.mask_id, self.cls_id, self.sep_id = int(mask_id), int(cls_id), int(sep_id)
        self.masked_lm_prob = float(masked_lm_prob)
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.do_whole_word_mask = bool(do_whole_word_mask)
        self.seed = random.SystemRandom().randrange(2 ** 62) if seed is None else int(seed)

    @classmethod
    def from_text(cls, input_file, vocab_file, do_lower_case=True, max_seq_length=128,
                  flag="input_file", tokenizer=None, **rule):
        """The rows of `input_file`'s text (a file, glob, or comma-separated list of them).

        `rule`: `masked_lm_prob`, `max_predictions_per_seq`, `do_whole_word_mask`, `seed`.
        """
        if tokenizer is None:
            tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
        rows = text_rows.text_rows(input_file, tokenizer, max_seq_length, flag,
                                   vocab_file=vocab_file)
        return cls(rows, len(tokenizer.vocab), tokenizer.vocab[text_rows.MASK],
                   tokenizer.vocab[text_rows.CLS], tokenizer.vocab[text_rows.SEP], **rule)

    @property
    def num_rows(self):
        return len(self.rows)

    @property
    def max_seq_length(self):
        return int(self.rows.input_ids.shape[1])

    def steps_per_epoch(self, batch_size):
        """Batches of `batch_size` in one pass over the rows (at least 1)."""
        return max(1, self.num_rows // int(batch_size))

    def with_masks(self, pairs):
        """`pairs`, a dataset of (epoch int64, row index int32), as those rows' features."""
        key = masking.base_key(self.seed)
        rows = (tf.constant(self.rows.input_ids), tf.constant(self.rows.lengths),
                tf.constant(self.rows.is_piece))

        def features(epoch, index):
            input_ids, length, is_piece = (tf.gather(r, index) for r in rows)
            masked = masking.mask_row(
                input_ids, length, is_piece, masking.row_key(key, epoch, index),
                self.masked_lm_prob, self.max_predictions_per_seq, self.vocab_words,
                self.mask_id, (self.cls_id, self.sep_id), self.do_whole_word_mask)
            input_mask = tf.cast(tf.range(self.max_seq_length) < length, tf.int32)
            return dict(masked, input_mask=input_mask, segment_ids=tf.zeros_like(input_mask))
        return pairs.map(features, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    def examples(self, training=True, input_context=None):
        """Unbatched features: endless epochs (training) or every row once (evaluation)."""
        num_rows = self.num_rows
        if training:
            key = masking.base_key(self.seed)

            def epoch_rows(epoch):
                order = masking.epoch_order(key, epoch, num_rows)
                return tf.data.Dataset.from_tensor_slices(order).map(
                    lambda index: (epoch, index))
            dataset = tf.data.Dataset.counter().flat_map(epoch_rows)
        else:
            dataset = tf.data.Dataset.range(num_rows).map(
                lambda index: (tf.constant(0, tf.int64), tf.cast(index, tf.int32)))
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        return self.with_masks(dataset)

    def dataset(self, batch_size, input_context=None):
        """The endless training batches of `batch_size` rows (per replica with a context)."""
        return (self.examples(True, input_context)
                .batch(int(batch_size), drop_remainder=True)
                .prefetch(tf.data.AUTOTUNE))

    def train_dataset_fn(self, train_batch_size):
        """`fn(input_context)` for the `Trainer`: per-replica batches of the global batch."""
        def dataset_fn(input_context):
            return self.dataset(input_context.get_per_replica_batch_size(train_batch_size),
                                input_context)
        return dataset_fn

    def finite_input(self, eval_batch_size):
        """Every row once, with epoch 0's masks: `Trainer.evaluate`'s `FiniteInput`."""
        return FiniteInput(lambda: self.examples(training=False), self.num_rows,
                           eval_batch_size)
