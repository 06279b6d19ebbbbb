"""The multiple-choice SavedModel: a context, a start and endings in, the chosen ending out.

`MultipleChoiceServingModule` (bert-export-saved-model's multiple_choice
kind, `bert_tf.export.kinds.EXPORTS`).
"""

import tensorflow as tf

from bert_tf.export import serving_module
from bert_tf.tasks.multiple_choice.model import choice_pairs
from bert_tf.tasks.multiple_choice.model import unflatten_choices


class MultipleChoiceServingModule(serving_module.ModelServingModule):
    """A `BertMultipleChoice` served from raw text or features (`bert_tf.tasks.multiple_choice.model`).

    The text signature packs choice i as the pair (context, start + " " +
    ending i) with the GraphTokenizer (`choice_pairs`), as
    bert-run-multiple-choice's records and the model's preprocessor do.

    Args:
      model: `BertMultipleChoice` (float32, loaded).
      tokenizer, max_seq_length, vocab_file: see `serving_module.TextServingModule`.

    Returns (both signatures): `probabilities` float32 [batch_size,
    num_choices] (the softmax over the choices, as test_results.tsv) and
    `predictions` int32 [batch_size] (the chosen index).
    """

    def __init__(self, model, tokenizer, max_seq_length, vocab_file,
                 name="multiple_choice_serving"):
        super().__init__(model, tokenizer, max_seq_length, name=name)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.serve_features = tf.function(
            self._serve_features, autograph=False, input_signature=serving_module.feature_specs(rank=3))
        self.serving_default = tf.function(
            self._serving_default, autograph=False, input_signature=[
                tf.TensorSpec([None], tf.string, name="context"),
                tf.TensorSpec([None], tf.string, name="start"),
                tf.TensorSpec([None, None], tf.string, name="endings")])

    def _serve_features(self, input_ids, input_mask, segment_ids):
        features = self.without_padding(
            self.checked_features(input_ids, input_mask, segment_ids))
        logits = self.model(features, training=False)["logits"]
        logits = tf.cast(logits, tf.float32)  # [B, C]
        return {"probabilities": tf.nn.softmax(logits, axis=-1),  # [B, C]
                "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}  # [B]

    def _serving_default(self, context, start, endings):
        check = tf.debugging.assert_equal(
            [tf.size(context), tf.size(start)], [tf.shape(endings)[0]] * 2,
            message="context, start and endings must have the same batch size")
        with tf.control_dependencies([check]):
            # Only what the tokenizer reads, before choice_pairs repeats and joins it.
            text_a, text_b = choice_pairs(
                *(self.tokenizer.bytes_read(x) for x in (context, start, endings)))
        features = self.tokenizer(text_a, text_b, max_seq_length=self._seq_length)  # [B*C, S]
        return self.serve_features(**unflatten_choices(
            features, tf.shape(endings)[1]))

    def signatures(self):
        return {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: self.serving_default,
                "serve_features": self.serve_features}
