"""BERT pre-training: model, losses, task; the heads at inference (original: `run_pretraining.py`).

`BertPretrainer` is `bert` (the backbone) plus `cls` (the masked-LM and
next-sentence heads), so its variables carry exactly the names of the original
pre-training graph (`bert/...`, `cls/predictions/...`, `cls/seq_relationship/...`).

The losses re-state the original's maths:

  masked LM:      loss = sum(w * l) / (sum(w) + 1e-5), l = -log p(masked_lm_ids)
  next sentence:  loss = mean(-log p(next_sentence_labels))
  total_loss = masked LM loss + next sentence loss (no weighting)

`PretrainingTask` packages them for `bert_tf.training.Trainer` (original:
`model_fn`), and for Keras's `compile` / `fit` / `evaluate` / `predict` on
`BertPretrainer` itself (`bert_tf.tasks.task_model.TaskModel`, the trainer's
replica step).

At inference, Google's checkpoints hold the heads they were pre-trained with,
and `BertFillMask` (`BertPretrainer` with its tokenizer) asks them from raw
text:

  fill_mask(text, top_k=5)       the best tokens for each [MASK] of a text, as
                                 Hugging Face's fill-mask pipeline answers
  next_sentence_probability(a, b)
                                 the probability that b follows a (the
                                 next-sentence head's class 0, "is next")

`bert_tf.from_pretrained(path, head="fill_mask")` loads one from a release, a
run's output_dir, a checkpoint prefix, a release's name or a Hugging Face
directory.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import numpy as np
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.heads import BertPretrainingHeads
from bert_tf.modeling.layers.embeddings import replace_weight
from bert_tf.tasks.base import Task
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import safe_div
from bert_tf.tasks.task_model import TaskModel

# The original's `+ 1e-5` in the masked-LM loss denominator.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(TaskModel, keras.Model):
    """BERT with the pre-training heads (original: `BertModel` + `get_*_output` in `model_fn`).

    Checkpoint variables: every `bert/...` variable of `BertModel`, plus
    cls/predictions/transform/dense/{kernel [D, D], bias [D]},
    cls/predictions/transform/LayerNorm/{beta, gamma} [D],
    cls/predictions/output_bias [vocab_size],
    cls/seq_relationship/{output_weights [2, D], output_bias [2]}.
    The weights exist after the constructor, so a checkpoint loads before any call.

    Args:
      config: `BertConfig`.
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.modeling.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`, `segment_ids`
        [batch_size, seq_length] and `masked_lm_positions`
        [batch_size, max_predictions_per_seq].
      training: Python bool; dropout only when True (the original's `is_training`).
      head_mask, output_attentions: as `BertModel`'s; with
        `output_attentions=True` the dict also holds `attentions`.

    Returns:
      dict: `masked_lm_logits` float32 [batch_size, max_predictions_per_seq,
      vocab_size], `next_sentence_logits` float32 [batch_size, 2],
      `sequence_output`, `pooled_output` (the backbone's).

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on the pre-training records' features
    (`bert_tf.data.input_pipeline`), or on `(x, y)` with `y` a dict of
    `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`. The loss is
    the original's total_loss (masked LM with denominator sum(w) + 1e-5, plus
    the next-sentence mean), the normalizers summed over replicas; training
    logs `loss`, `masked_lm_accuracy`, `next_sentence_accuracy`. `evaluate`
    returns the original's `masked_lm_accuracy`, `masked_lm_loss`,
    `next_sentence_accuracy`, `next_sentence_loss` and the Estimator's
    `loss`. `predict` returns `masked_lm_logits` and `next_sentence_logits`.
    """

    task_name = "pretraining"
    hf_architecture = "BertForPreTraining"

    def __init__(self, config, name="bert_pretrainer", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPretrainingHeads(config)
        self.build()

    def call(self, features, training=None, head_mask=None, output_attentions=False):
        features, outputs = self.backbone(features, training, head_mask=head_mask,
                                          output_attentions=output_attentions)
        masked_lm_logits, next_sentence_logits = self.cls(
            outputs["sequence_output"], outputs["pooled_output"],
            features["masked_lm_positions"], self.bert.embedding_table)
        return self._with_attentions({
            "masked_lm_logits": masked_lm_logits,
            "next_sentence_logits": next_sentence_logits,
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
        }, outputs)

    def make_task(self):
        return PretrainingTask(self.config)

    def resize_token_embeddings(self, new_vocab_size):
        """`BertModel.resize_token_embeddings`, and the masked-LM head's output bias with it.

        `cls/predictions/output_bias` [vocab_size] keeps its first min(old, new)
        entries; new entries are zeros (as the original initializes it). Resize
        before `compile`. Returns the new `word_embeddings` variable.
        """
        table = self.bert.resize_token_embeddings(new_vocab_size)
        head = self.cls.masked_lm
        old = head.output_bias
        if new_vocab_size <= old.shape[0]:
            bias = old[:new_vocab_size]
        else:
            bias = tf.concat([tf.convert_to_tensor(old),
                              tf.zeros([new_vocab_size - old.shape[0]], old.dtype)], axis=0)
        replace_weight(head, "output_bias", bias)
        head.vocab_size = new_vocab_size
        for attr in ("train_function", "test_function", "predict_function"):
            if getattr(self, attr, None) is not None:
                setattr(self, attr, None)
        return table

    def get_config(self):
        config = super().get_config()
        config["config"] = self.config.to_dict()
        return config


MASK = "[MASK]"
# Texts per model call.
DEFAULT_BATCH_SIZE = 32
# How much of a text a one-line error quotes.
_QUOTE_CHARS = 60


def _quote(text):
    return repr(text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "...")


def _positive_int(value, argument):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise UserError("%s=%r: must be a positive integer" % (argument, value))
    return int(value)


def _texts(text, argument="text"):
    """(list of str, single): a str (or bytes) is a batch of one."""
    if isinstance(text, (str, bytes)):
        return [tokenization.convert_to_unicode(text)], True
    if isinstance(text, (list, tuple)):
        texts = []
        for i, t in enumerate(text):
            if not isinstance(t, (str, bytes)):
                raise UserError("%s[%d] is a %s, not a str" % (argument, i, type(t).__name__))
            texts.append(tokenization.convert_to_unicode(t))
        return texts, False
    raise UserError("%s must be a str or a list of str, not a %s"
                    % (argument, type(text).__name__))


def tokenize_with_masks(tokenizer, text):
    """The WordPiece tokens of `text`, each literal "[MASK]" kept as the one token [MASK].

    As Hugging Face's tokenizers treat special tokens: the text is cut at each
    "[MASK]" (case-sensitive), every piece is tokenized on its own (so a
    [MASK] always ends a word: "foo[MASK]." gives foo, [MASK], .) and the
    pieces are joined with the [MASK] token between them.
    """
    tokens = []
    for i, piece in enumerate(text.split(MASK)):
        if i:
            tokens.append(MASK)
        tokens.extend(tokenizer.tokenize(piece))
    return tokens


@keras.saving.register_keras_serializable(package="bert_tf")
class BertFillMask(BertPretrainer):
    """`BertPretrainer` that fills in [MASK]s and scores sentence pairs from raw text.

    Checkpoint variables: `BertPretrainer`'s (`bert/...`, `cls/predictions/...`,
    `cls/seq_relationship/...`); every Google release has them.

    Args:
      config: `BertConfig`.
      vocab_file: the model's vocab.txt (or a Hugging Face directory); the
        tokenizer is built from it on first use. `from_pretrained` passes it.
      do_lower_case: the tokenizer's casing.
      max_seq_length: the longest input in tokens, [CLS] and [SEP]s included
        (default: the config's max_position_embeddings). `fill_mask` refuses a
        longer text (truncating could cut a [MASK] off); `next_sentence_probability`
        truncates pairs to it as the original's `truncate_seq_pair`.
      batch_size: texts per model call.
      name: the wrapper's name (stripped from the TF1 names).

    Call args, Returns: `BertPretrainer`'s.

    Example:

      model = bert_tf.from_pretrained("uncased_L-12_H-768_A-12", head="fill_mask").model
      model.fill_mask("The capital of France is [MASK].")
      # [{"score": 0.41, "token": 3000, "token_str": "paris",
      #   "sequence": "the capital of france is paris."}, ...]   (5, best first)
      model.next_sentence_probability("He went to the store.", "He bought milk.")
    """

    task_name = "fill_mask"

    @classmethod
    def from_parts(cls, parts):
        model = cls(parts.config, vocab_file=parts.vocab_file,
                    do_lower_case=bool(parts.do_lower_case))
        model.tokenizer = parts.tokenizer
        return model

    def __init__(self, config, vocab_file=None, do_lower_case=True, max_seq_length=None,
                 batch_size=DEFAULT_BATCH_SIZE, name="bert_fill_mask", **kwargs):
        super().__init__(config, name=name, **kwargs)
        self.vocab_file = None if vocab_file is None else str(vocab_file)
        self.do_lower_case = bool(do_lower_case)
        if max_seq_length is None:
            max_seq_length = self.config.max_position_embeddings
        self.max_seq_length = _positive_int(max_seq_length, "max_seq_length")
        self.config.check_max_seq_length(self.max_seq_length, "max_seq_length")
        if self.max_seq_length < 3:
            raise UserError("max_seq_length=%d is too short for [CLS] a [SEP] b [SEP]"
                            % self.max_seq_length)
        self.batch_size = _positive_int(batch_size, "batch_size")
        self._tokenizer = None

    @property
    def tokenizer(self):
        """The `FullTokenizer` of `vocab_file` (built on first use; can be set)."""
        if self._tokenizer is None:
            if self.vocab_file is None:
                raise UserError("BertFillMask has no vocab_file: pass vocab_file= (or load it "
                                "with bert_tf.from_pretrained(path, head='fill_mask'))")
            self._tokenizer = tokenization.FullTokenizer(self.vocab_file, self.do_lower_case)
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer):
        self._tokenizer = tokenizer

    # -- fill-mask -----------------------------------------------------------

    def encode_masked(self, text, names=None):
        """The model inputs of texts with [MASK]s: (rows, single).

        Each row is a dict: `input_ids` (list of int, `[CLS] tokens [SEP]`,
        unpadded) and `masked_lm_positions` (the [MASK]s' positions in it).
        `names` (optional, one str per text: "line 3 of input.txt") name the
        texts in errors; by default "the text" or "text <index>".

        Raises:
          UserError: a text without [MASK], or longer than max_seq_length
            tokens (with [CLS] and [SEP]), named by its index and start.
        """
        texts, single = _texts(text)
        tokenizer = self.tokenizer
        if MASK not in tokenizer.vocab:
            raise UserError("the vocab %s has no %s token" % (self.vocab_file, MASK))
        mask_id = tokenizer.vocab[MASK]
        rows = []
        for i, t in enumerate(texts):
            where = names[i] if names is not None else "the text" if single else "text %d" % i
            tokens = ["[CLS]"] + tokenize_with_masks(tokenizer, t) + ["[SEP]"]
            ids = tokenizer.convert_tokens_to_ids(tokens)
            positions = [j for j, token_id in enumerate(ids) if token_id == mask_id]
            if not positions:
                raise UserError("%s has no %s to fill: %s" % (where, MASK, _quote(t)))
            if len(ids) > self.max_seq_length:
                raise UserError("%s is %d tokens with [CLS] and [SEP], more than "
                                "max_seq_length=%d (not truncated, which could drop a %s): %s"
                                % (where, len(ids), self.max_seq_length, MASK, _quote(t)))
            rows.append({"input_ids": ids, "masked_lm_positions": positions})
        return rows, single

    def masked_lm_probabilities(self, rows):
        """Softmax of the masked-LM logits at each row's [MASK]s: float32 [masks, vocab] each."""
        probabilities = []
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start:start + self.batch_size]
            length = max(len(row["input_ids"]) for row in batch)
            masks = max(len(row["masked_lm_positions"]) for row in batch)
            input_ids = np.zeros([len(batch), length], np.int32)
            input_mask = np.zeros([len(batch), length], np.int32)
            positions = np.zeros([len(batch), masks], np.int32)
            for b, row in enumerate(batch):
                input_ids[b, :len(row["input_ids"])] = row["input_ids"]
                input_mask[b, :len(row["input_ids"])] = 1
                positions[b, :len(row["masked_lm_positions"])] = row["masked_lm_positions"]
            logits = self({"input_ids": input_ids, "input_mask": input_mask,
                           "segment_ids": np.zeros_like(input_ids),
                           "masked_lm_positions": positions},
                          training=False)["masked_lm_logits"]  # [B, masks, vocab_size]
            probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1).numpy()
            for b, row in enumerate(batch):
                probabilities.append(probs[b, :len(row["masked_lm_positions"])])
        return probabilities

    def fill_mask(self, text, top_k=5):
        """The `top_k` best tokens for each [MASK], as Hugging Face's fill-mask pipeline gives them.

        Each [MASK] gets a list of `top_k` dicts, best first:
        `score` (float: the softmax of the masked-LM logits at that position,
        over the whole vocab), `token` (int id), `token_str` (str: the
        token, as `tokenizer.decode([token])`) and `sequence` (str: the text's
        tokens with this [MASK] filled in, as `tokenizer.decode`: with one
        [MASK], without the special tokens; with several, with them, so the
        other [MASK]s show, as Hugging Face's pipeline writes it).

        Args:
          text: a str with one or more "[MASK]" (kept as the [MASK] token,
            case-sensitive), or a list of them (run `batch_size` texts per
            model call).
          top_k: positive int (more than the vocab's size: every token of the vocab).

        Returns:
          text a str with one [MASK]: a list of `top_k` dicts; with several
          [MASK]s: a list of such lists, one per [MASK] in text order. A list
          of texts: a list of those, one per text.

        Raises:
          UserError: a text without [MASK], one longer than `max_seq_length`
            tokens with [CLS] and [SEP] (never truncated: that could drop a
            [MASK]), a bad `top_k`.
        """
        top_k = _positive_int(top_k, "top_k")
        rows, single = self.encode_masked(text)
        probabilities = self.masked_lm_probabilities(rows)
        tokenizer = self.tokenizer
        results = []
        for row, probs in zip(rows, probabilities):
            one_mask = len(row["masked_lm_positions"]) == 1
            per_mask = []
            for position, p in zip(row["masked_lm_positions"], probs):
                # Only tokens of the vocab are answers (a vocab_size larger than the
                # vocab has ids without a token).
                best = np.argsort(-p[:len(tokenizer.inv_vocab)], kind="stable")[:top_k]
                answers = []
                for token_id in best.tolist():
                    ids = list(row["input_ids"])
                    ids[position] = token_id
                    answers.append({
                        "score": float(p[token_id]),
                        "token": int(token_id),
                        "token_str": tokenizer.decode([token_id]),
                        "sequence": tokenizer.decode(ids, skip_special_tokens=one_mask),
                    })
                per_mask.append(answers)
            results.append(per_mask[0] if one_mask else per_mask)
        return results[0] if single else results

    # -- next sentence -------------------------------------------------------

    def next_sentence_probability(self, text_a, text_b):
        """The probability that `text_b` follows `text_a` (the next-sentence head's class 0).

        As in pre-training (`get_next_sentence_output`: 0 is "next sentence",
        1 "random sentence"): the softmax of `cls/seq_relationship`'s logits
        on `[CLS] a [SEP] b [SEP]`, index 0. A pair longer than
        `max_seq_length` is truncated as the original's `truncate_seq_pair`.

        Args:
          text_a, text_b: two str, or two lists of str of one length.

        Returns:
          float for a pair of str; a list of float for lists.

        Raises:
          UserError: a str with a list, lists of different lengths.
        """
        texts_a, single_a = _texts(text_a, "text_a")
        texts_b, single_b = _texts(text_b, "text_b")
        if single_a != single_b:
            raise UserError("text_a and text_b must both be a str or both lists of str")
        if len(texts_a) != len(texts_b):
            raise UserError("text_a has %d texts but text_b has %d"
                            % (len(texts_a), len(texts_b)))
        result = []
        for start in range(0, len(texts_a), self.batch_size):
            features = self.tokenizer(
                texts_a[start:start + self.batch_size], texts_b[start:start + self.batch_size],
                padding=True, truncation=True, max_length=self.max_seq_length,
                return_tensors="np")
            features["masked_lm_positions"] = np.zeros([len(features["input_ids"]), 1], np.int32)
            logits = self(features, training=False)["next_sentence_logits"]  # [B, 2]
            result.extend(tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)[:, 0].numpy()
                          .tolist())
        return result[0] if single_a else result

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_file": self.vocab_file, "do_lower_case": self.do_lower_case,
                       "max_seq_length": self.max_seq_length, "batch_size": self.batch_size})
        return config


def masked_lm_example_loss(masked_lm_logits, masked_lm_ids):
    """Per-prediction masked-LM loss and log-probs (original: inside `get_masked_lm_output`).

    Args:
      masked_lm_logits: float32 Tensor [batch_size, max_predictions_per_seq, vocab_size].
      masked_lm_ids: int32 Tensor [batch_size, max_predictions_per_seq].

    Returns:
      (per_example_loss float32 [batch_size * max_predictions_per_seq],
      log_probs float32 [batch_size * max_predictions_per_seq, vocab_size]),
      flattened as the original's.
    """
    vocab_size = masked_lm_logits.shape[-1]
    logits = tf.reshape(tf.cast(masked_lm_logits, tf.float32), [-1, vocab_size])
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    label_ids = tf.reshape(masked_lm_ids, [-1])
    one_hot_labels = tf.one_hot(label_ids, depth=vocab_size, dtype=tf.float32)
    # The `positions` tensor might be zero-padded (if the sequence is too
    # short to have the maximum number of predictions). The `label_weights`
    # tensor has a value of 1.0 for every real prediction and 0.0 for the
    # padding predictions.
    per_example_loss = -tf.reduce_sum(log_probs * one_hot_labels, axis=[-1])
    return per_example_loss, log_probs


def next_sentence_example_loss(next_sentence_logits, next_sentence_labels):
    """Per-example next-sentence loss and log-probs (original: in `get_next_sentence_output`).

    Simple binary classification. Note that 0 is "next sentence" and 1 is
    "random sentence".

    Args:
      next_sentence_logits: float32 Tensor [batch_size, 2].
      next_sentence_labels: int32 Tensor [batch_size, 1] (or [batch_size]).

    Returns:
      (per_example_loss float32 [batch_size], log_probs float32 [batch_size, 2]).
    """
    log_probs = tf.nn.log_softmax(tf.cast(next_sentence_logits, tf.float32), axis=-1)
    labels = tf.reshape(next_sentence_labels, [-1])
    one_hot_labels = tf.one_hot(labels, depth=2, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
    return per_example_loss, log_probs


def get_masked_lm_output(masked_lm_logits, masked_lm_ids, masked_lm_weights):
    """The original's masked-LM loss (original: `get_masked_lm_output`, after the head).

    The head itself (gather, transform, tied output embedding, bias) is
    `bert_tf.modeling.heads.MaskedLMHead`; this is the loss on its logits.

    Args:
      masked_lm_logits: float32 Tensor [batch_size, max_predictions_per_seq, vocab_size].
      masked_lm_ids: int32 Tensor [batch_size, max_predictions_per_seq].
      masked_lm_weights: float32 Tensor [batch_size, max_predictions_per_seq];
        1.0 for real predictions, 0.0 for padding.

    Returns:
      (loss float32 scalar, per_example_loss [batch_size * max_predictions_per_seq],
      log_probs [batch_size * max_predictions_per_seq, vocab_size]), with
      loss = sum(w * per_example_loss) / (sum(w) + 1e-5).
    """
    per_example_loss, log_probs = masked_lm_example_loss(masked_lm_logits, masked_lm_ids)
    label_weights = tf.reshape(tf.cast(masked_lm_weights, tf.float32), [-1])
    numerator = tf.reduce_sum(label_weights * per_example_loss)
    denominator = tf.reduce_sum(label_weights) + MASKED_LM_DENOMINATOR_EPSILON
    loss = numerator / denominator
    return loss, per_example_loss, log_probs


def get_next_sentence_output(next_sentence_logits, next_sentence_labels):
    """The original's next-sentence loss (original: `get_next_sentence_output`, after the head).

    Args:
      next_sentence_logits: float32 Tensor [batch_size, 2].
      next_sentence_labels: int32 Tensor [batch_size, 1].

    Returns:
      (loss float32 scalar = mean(per_example_loss), per_example_loss [batch_size],
      log_probs [batch_size, 2]).
    """
    per_example_loss, log_probs = next_sentence_example_loss(next_sentence_logits,
                                                             next_sentence_labels)
    loss = tf.reduce_mean(per_example_loss)
    return loss, per_example_loss, log_probs


def masked_lm_eval_sums(outputs, features):
    """Per-batch sums behind the masked-LM loss and accuracy of `metric_fn` (float32 scalars):
    `masked_lm_weight`, `masked_lm_loss_sum`, `masked_lm_correct`."""
    example_loss, log_probs = masked_lm_example_loss(outputs["masked_lm_logits"],
                                                     features["masked_lm_ids"])
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    ids = tf.reshape(tf.cast(features["masked_lm_ids"], tf.int32), [-1])
    predictions = tf.argmax(log_probs, axis=-1, output_type=tf.int32)
    return {
        "masked_lm_weight": tf.reduce_sum(weights),
        "masked_lm_loss_sum": tf.reduce_sum(weights * example_loss),
        "masked_lm_correct": tf.reduce_sum(
            weights * tf.cast(tf.equal(predictions, ids), tf.float32)),
    }


def _eval_sums(outputs, features):
    """Per-batch sums behind the losses and the original's `metric_fn` (float32 scalars)."""
    nsp_example_loss, nsp_log_probs = next_sentence_example_loss(
        outputs["next_sentence_logits"], features["next_sentence_labels"])
    nsp_labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    nsp_predictions = tf.argmax(nsp_log_probs, axis=-1, output_type=tf.int32)
    return dict(masked_lm_eval_sums(outputs, features), **{
        "next_sentence_count": tf.cast(tf.size(nsp_labels), tf.float32),
        "next_sentence_loss_sum": tf.reduce_sum(nsp_example_loss),
        "next_sentence_correct": tf.reduce_sum(
            tf.cast(tf.equal(nsp_predictions, nsp_labels), tf.float32)),
    })


class PretrainingTask(Task):
    """The masked-LM + next-sentence objective.

    On one device `compute_loss` is exactly the original's `total_loss`
    (masked_lm_loss + next_sentence_loss); split over replicas and
    micro-batches each part divides by the normalizers of the whole global
    batch.

    Args:
      config: `BertConfig`.
    """

    name = "pretraining"
    label_keys = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
    metric_sum_keys = ("masked_lm_correct", "masked_lm_weight", "next_sentence_correct",
                       "next_sentence_count")
    eval_sum_keys = ("masked_lm_weight", "masked_lm_loss_sum", "masked_lm_correct",
                     "next_sentence_count", "next_sentence_loss_sum", "next_sentence_correct")
    default_best_metric = "masked_lm_accuracy"

    # Port note: on one device this is exactly the original's loss. On several
    # replicas the original (TPU, CrossShardOptimizer) averaged per-core losses,
    # each with its own masked-LM denominator; here every replica divides by the
    # global batch's denominator, so N replicas (and N accumulation
    # micro-batches) give the single-device original's update on the whole batch.
    def loss_normalizers(self, features):
        """{"masked_lm_weight": sum(masked_lm_weights), "examples": batch_size}."""
        return {
            "masked_lm_weight": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            "examples": num_examples(features),
        }

    def compute_loss(self, model, features, normalizers, training=True):
        sums = _eval_sums(model(features, training=training), features)
        masked_lm_loss = sums["masked_lm_loss_sum"] / (
            normalizers["masked_lm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
        next_sentence_loss = sums["next_sentence_loss_sum"] / normalizers["examples"]
        return masked_lm_loss + next_sentence_loss, {k: sums[k] for k in self.metric_sum_keys}

    def train_metrics(self, sums):
        return {
            "masked_lm_accuracy": safe_div(sums["masked_lm_correct"], sums["masked_lm_weight"]),
            "next_sentence_accuracy": safe_div(sums["next_sentence_correct"],
                                               sums["next_sentence_count"]),
        }

    def eval_step(self, model, features):
        return _eval_sums(model(features, training=False), features)

    def eval_results(self, sums, num_batches):
        """The original's eval metrics from summed values.

        `tf.metrics.accuracy(weights=w)` = sum(w * correct) / sum(w);
        `tf.metrics.mean(values, weights=w)` = sum(w * values) / sum(w);
        the Estimator's `loss` = mean over batches of each batch's total_loss.
        """
        return {
            "masked_lm_accuracy": safe_div(sums["masked_lm_correct"], sums["masked_lm_weight"]),
            "masked_lm_loss": safe_div(sums["masked_lm_loss_sum"], sums["masked_lm_weight"]),
            "next_sentence_accuracy": safe_div(sums["next_sentence_correct"],
                                               sums["next_sentence_count"]),
            "next_sentence_loss": safe_div(sums["next_sentence_loss_sum"],
                                           sums["next_sentence_count"]),
            "loss": safe_div(sums["batch_loss_sum"], num_batches),
        }

    def eval_batch_loss(self, batch_sums):
        return (batch_sums["masked_lm_loss_sum"]
                / (batch_sums["masked_lm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
                + batch_sums["next_sentence_loss_sum"] / batch_sums["next_sentence_count"])

    def predict_step(self, model, features):
        outputs = model(features, training=False)
        return {"masked_lm_logits": outputs["masked_lm_logits"],
                "next_sentence_logits": outputs["next_sentence_logits"]}
