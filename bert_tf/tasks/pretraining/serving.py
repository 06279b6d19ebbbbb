"""FillMaskServingModule: the masked-LM head's best tokens per [MASK] of raw text, in core TF (new).

`BertFillMask.fill_mask` as a SavedModel signature (`export_saved_model`
with task_name "fill_mask"): each text is cut at its literal "[MASK]"s, every
piece tokenized by `GraphTokenizer` (the FullTokenizer's ids) and the pieces
joined with the [MASK] id between them (as
`bert_tf.tasks.pretraining.model.tokenize_with_masks`), packed as `[CLS] tokens
[SEP]` into max_seq_length, and the masked-LM head
(`cls/predictions/*`) run at every [MASK]:

  serving_default  text_a: string [batch] (also serve_text_a; serve_text takes it as `text`,
                   the name before)
                   -> token_ids int32 [batch, masks, top_k]: the best tokens per [MASK], best first
                      token_strings string [batch, masks, top_k]: their vocab entries
                      scores float32 [batch, masks, top_k]: the softmax of the logits
                      mask_positions int32 [batch, masks]: each [MASK]'s position in the
                        packed sequence ([CLS] is 0)
                      num_masks int32 [batch]: the text's [MASK]s that were answered

`masks` is the batch's largest number of [MASK]s (at least 1); a text's
columns past its `num_masks` hold -1, "" and 0. A server does not refuse a
request: a text without [MASK] gets `num_masks` 0, and a text longer than
max_seq_length tokens is cut as the classifier's text is, with the [MASK]s
past the cut not answered (`BertFillMask.fill_mask` refuses both).
"""

import tensorflow as tf

from bert_tf.export import serving_module

MASK = "[MASK]"


class FillMaskServingModule(serving_module.ModelServingModule):
    """A `BertPretrainer`'s masked-LM head served from raw text.

    Args:
      model: `BertPretrainer` (float32 or an inference policy, loaded).
      tokenizer: `GraphTokenizer` of the model's vocab (with [CLS], [SEP], [MASK]).
      vocab_tokens: list of str, the vocab in id order (the `token_strings`).
      max_seq_length: int, the packed length.
      top_k: int, the answers per [MASK] (at most the vocab's size).

    The module also keeps `do_lower_case`, `max_seq_length` and `top_k` as
    variables (and `export_saved_model` the vocab as the asset `vocab_file`),
    as the other exports do.
    """

    def __init__(self, model, tokenizer, vocab_tokens, max_seq_length, top_k,
                 name="fill_mask_serving"):
        super().__init__(model, tokenizer, max_seq_length, name=name)
        self._vocab_tokens = list(vocab_tokens)
        self._mask_id = self._vocab_tokens.index(MASK)
        self._top_k = min(int(top_k), len(self._vocab_tokens))
        self.top_k = tf.Variable(self._top_k, trainable=False, name="top_k")
        self.serving_default = tf.function(
            self._serving_default, input_signature=[serving_module.text_spec()], autograph=False)
        self.serve_text = tf.function(
            self._serve_text, input_signature=[serving_module.text_spec(serving_module.OLD_TEXT)],
            autograph=False)

    def features(self, text):
        """`[CLS] tokens [SEP]` of each text, each "[MASK]" the [MASK] id: int32 [B, S] each."""
        text = self.tokenizer.cut_texts(text)  # the first max_text_bytes bytes
        pieces = tf.strings.split(text, sep=MASK)  # [B, (pieces)]
        ids = self.tokenizer.tokenize(pieces.flat_values)  # [P, (tokens)]
        piece = tf.range(tf.size(pieces.flat_values, out_type=tf.int64))  # [P]
        last = tf.gather(pieces.row_limits(), pieces.value_rowids()) - 1  # [P]
        # A [MASK] after every piece but a text's last.
        mask_after = tf.cast(tf.not_equal(piece, last), tf.int64)  # [P]
        masks = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(mask_after)], tf.constant(self._mask_id, tf.int32)),
            mask_after, validate=False)  # [P, (0 or 1)]
        joined = tf.concat([tf.cast(ids, tf.int32), masks], axis=1)  # [P, (tokens)]
        per_text = tf.RaggedTensor.from_row_splits(
            joined, pieces.row_splits, validate=False).merge_dims(1, 2)  # [B, (tokens)]
        return self.tokenizer.pack_pair(per_text, None, max_seq_length=self._seq_length)

    def _serve_text(self, text):
        return self.serving_default(text)

    def _serving_default(self, text_a):
        features = self.features(text_a)
        input_ids = features["input_ids"]  # [B, S]
        is_mask = tf.equal(input_ids, self._mask_id) & tf.equal(features["input_mask"], 1)
        where = tf.broadcast_to(tf.range(self._seq_length)[None, :], tf.shape(input_ids))
        ragged = tf.ragged.boolean_mask(where, is_mask)  # [B, (masks)]
        num_masks = tf.cast(ragged.row_lengths(), tf.int32)  # [B]
        width = tf.reduce_max(tf.concat([num_masks, [1]], 0))  # M: at least 1
        positions = ragged.to_tensor(default_value=0)  # [B, max(num_masks)]
        positions = tf.pad(positions, [[0, 0], [0, width - tf.shape(positions)[1]]])  # [B, M]
        logits = self.model({"input_ids": input_ids, "input_mask": features["input_mask"],
                             "segment_ids": features["segment_ids"],
                             "masked_lm_positions": positions},
                            training=False)["masked_lm_logits"]  # [B, M, vocab_size]
        probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        # Only tokens of the vocab are answers (a larger vocab_size has ids without one).
        probs = probs[:, :, :len(self._vocab_tokens)]  # [B, M, V]
        scores, token_ids = tf.math.top_k(probs, k=self._top_k)  # [B, M, K]
        valid = tf.range(width)[None, :] < num_masks[:, None]  # [B, M]
        valid_k = tf.broadcast_to(valid[:, :, None], tf.shape(token_ids))  # [B, M, K]
        token_strings = tf.gather(tf.constant(self._vocab_tokens), token_ids)
        return {
            "token_ids": tf.where(valid_k, token_ids, -1),
            "token_strings": tf.where(valid_k, token_strings, ""),
            "scores": tf.where(valid_k, scores, 0.0),
            "mask_positions": tf.where(valid, positions, -1),
            "num_masks": num_masks,
        }

    def signatures(self):
        return serving_module.single_text_signatures(self.serving_default, self.serve_text)
