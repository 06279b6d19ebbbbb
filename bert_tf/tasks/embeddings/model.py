"""Sentence embeddings: a sentence's pooled BERT vector, cosine similarity, in-batch negatives (new).

The original has no sentence embedding; its issues ask for one again and
again (google-research/bert #164, #216, #276, #670, #837, #904), and
`extract_features.py` only dumps per-token layers. `SentenceEmbedder` is
`bert` (the backbone, `bert/...`: its checkpoints are the original's) with a
pooling over the real tokens of `sequence_output`:

  cls:  sequence_output[:, 0]                               (the [CLS] token)
  mean: sum_t(mask_t * sequence_output_t) / sum_t(mask_t)   (padding excluded)
  max:  max over t with mask_t = 1 of sequence_output_t     (padding excluded)

optionally L2-normalized (`normalize=True`: the dot product is then the
cosine). `encode(texts)` gives a NumPy [n, hidden_size] matrix in batches,
`similarity(a, b)` the cosines.

Fine-tuning on pairs `(anchor, positive)` uses in-batch negatives (Henderson
et al. 2017; sentence-transformers' `MultipleNegativesRankingLoss`, with which
all-MiniLM-L6-v2 was trained): in a batch of B pairs, each anchor's positive
is the right answer among the B positives,

  scores = scale * cos(anchor_i, positive_j)                [B, B], scale 20
  per_example_loss_i = -log softmax(scores_i)[i]
  loss = mean(per_example_loss)

`EmbeddingsTask` packages it as a `Task` for Keras `fit` on the embedder
(`bert_tf.tasks.task_model.TaskModel`) and for `bert_tf.training.Trainer`.
With several replicas, each replica's negatives are its own share of the
batch.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import json
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress
from bert_tf.item_progress import log_tracing
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.tasks.base import WeightedAccuracyTask
from bert_tf.tasks.base import num_examples
from bert_tf.tasks.base import real_example_weights
from bert_tf.tasks.base import safe_div
from bert_tf.tasks.task_model import TaskModel
from bert_tf.tokenization.preprocessor import BertPreprocessor
from bert_tf.tokenization.preprocessor import check_preprocessor
from bert_tf.tokenization.preprocessor import serialize_preprocessor
from bert_tf.tokenization.preprocessor import with_preprocessor

POOLINGS = ("cls", "mean", "max")
DEFAULT_POOLING = "mean"
# sentence-transformers' MultipleNegativesRankingLoss default (a temperature of 0.05).
DEFAULT_SCALE = 20.0
# Beside a saved embedder's weights: its pooling, normalization and max_seq_length.
EMBEDDING_CONFIG_NAME = "embedding_config.json"
# The feature keys of the second text of a pair: "positive_" + input_ids, ...
POSITIVE = "positive_"
# `encode` logs progress lines when it has more batches than this.
_PROGRESS_BATCHES = 4


def _read_json(path, what):
    try:
        with tf.io.gfile.GFile(path) as f:
            value = json.load(f)
        if not isinstance(value, (dict, list)):
            raise ValueError("not a JSON object")
    except ValueError as e:
        raise UserError("%s: not %s (%s)" % (path, what, str(e).splitlines()[0])) from None
    return value


def _sentence_transformers_settings(directory):
    """{"pooling", "normalize", "max_seq_length"} of a sentence-transformers directory, or {}.

    Its `modules.json` lists a Pooling module (`<path>/config.json`:
    `pooling_mode_cls_token`, `_mean_tokens` or `_max_tokens`) and maybe a
    Normalize one; `sentence_bert_config.json` holds max_seq_length.
    """
    modules_path = os.path.join(directory, "modules.json")
    if not tf.io.gfile.exists(modules_path):
        return {}
    modules = _read_json(modules_path, "a sentence-transformers modules.json")
    settings = {"normalize": any(str(m.get("type", "")).endswith(".Normalize")
                                 for m in modules if isinstance(m, dict))}
    for module in modules:
        if isinstance(module, dict) and str(module.get("type", "")).endswith(".Pooling"):
            path = os.path.join(directory, module.get("path", ""), "config.json")
            pooling = _read_json(path, "a sentence-transformers pooling config")
            modes = [name for name in POOLINGS
                     if pooling.get("pooling_mode_%s" % {"cls": "cls_token"}.get(
                         name, name + "_tokens"))]
            others = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode_") and v
                            and k not in ("pooling_mode_cls_token", "pooling_mode_mean_tokens",
                                          "pooling_mode_max_tokens"))
            if len(modes) != 1 or others:
                raise UserError("%s: pooling %s; SentenceEmbedder pools one of %s"
                                % (path, ", ".join(modes + others) or "none",
                                   ", ".join(POOLINGS)))
            settings["pooling"] = modes[0]
    bert_config_path = os.path.join(directory, "sentence_bert_config.json")
    if tf.io.gfile.exists(bert_config_path):
        settings["max_seq_length"] = _read_json(
            bert_config_path, "a sentence-transformers config").get("max_seq_length")
    return settings


def embedding_settings(directory, pooling=None, normalize=None, max_seq_length=None):
    """(pooling, normalize, max_seq_length): the arguments, else what `directory` says.

    What a directory says: its `embedding_config.json` (a saved
    `SentenceEmbedder`: `save_pretrained`, bert-run-embeddings), or a
    sentence-transformers directory's `modules.json`, Pooling config and
    `sentence_bert_config.json` (all-MiniLM-L6-v2: mean, normalized, 256);
    without either (a release, a plain Hugging Face directory): "mean",
    False, 128. `from_pretrained(head="embeddings")` and the export read it
    here.

    Raises:
      UserError: a file that is not JSON, a pooling SentenceEmbedder has not.
    """
    path = os.path.join(directory, EMBEDDING_CONFIG_NAME)
    if tf.io.gfile.exists(path):
        saved = _read_json(path, "an embedding config")
        if not isinstance(saved, dict):
            raise UserError("%s: not an embedding config (not a JSON object)" % path)
    else:
        saved = _sentence_transformers_settings(directory)
    if saved:
        logging.info("Embedding settings of %s: %s", directory, saved)
    if pooling is None:
        pooling = saved.get("pooling", DEFAULT_POOLING)
    if normalize is None:
        normalize = saved.get("normalize", False)
    if max_seq_length is None:
        max_seq_length = saved.get("max_seq_length") or 128
    return check_pooling(pooling), bool(normalize), int(max_seq_length)


def check_pooling(pooling):
    """`pooling`, or a one-line `UserError` naming the ones there are."""
    if pooling not in POOLINGS:
        raise UserError("pooling=%r: one of %s" % (pooling, ", ".join(repr(p) for p in POOLINGS)))
    return pooling


def pool(sequence_output, input_mask, pooling, normalize=False):
    """The sentence vectors of `sequence_output`, over its real tokens only.

    Args:
      sequence_output: float Tensor of shape [batch_size, seq_length, hidden_size].
      input_mask: int32 Tensor of shape [batch_size, seq_length] (1 real
        token, 0 padding), or None (every token real).
      pooling: "cls", "mean" or "max" (see the module docstring).
      normalize: bool, L2-normalize each vector.

    Returns:
      float32 Tensor of shape [batch_size, hidden_size].
    """
    check_pooling(pooling)
    sequence_output = tf.cast(sequence_output, tf.float32)  # [B, S, H]
    if input_mask is None:
        input_mask = tf.ones(tf.shape(sequence_output)[:2], tf.int32)
    mask = tf.expand_dims(tf.cast(input_mask, tf.float32), -1)  # [B, S, 1]
    if pooling == "cls":
        vectors = sequence_output[:, 0]  # [B, H]
    elif pooling == "mean":
        vectors = (tf.reduce_sum(sequence_output * mask, axis=1)
                   / tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9))  # [B, H]
    else:
        # Padding never wins: its positions hold the lowest float32.
        vectors = tf.reduce_max(tf.where(mask > 0, sequence_output, tf.float32.min),
                                axis=1)  # [B, H]
    if normalize:
        vectors = tf.math.l2_normalize(vectors, axis=-1)
    return vectors


def in_batch_negatives_loss(anchors, positives, scale=DEFAULT_SCALE):
    """(per_example_loss [B], correct [B]): each anchor against every positive of the batch.

    Args:
      anchors, positives: float Tensors of shape [batch_size, hidden_size]
        (normalized or not: the cosine is taken).
      scale: the cosines' multiplier before the softmax.

    Returns:
      per_example_loss: float32 [batch_size], -log softmax(scale * cos)[i, i].
      correct: float32 [batch_size], 1.0 where an anchor's own positive scores highest.
    """
    anchors = tf.math.l2_normalize(tf.cast(anchors, tf.float32), axis=-1)
    positives = tf.math.l2_normalize(tf.cast(positives, tf.float32), axis=-1)
    scores = scale * tf.matmul(anchors, positives, transpose_b=True)  # [B, B]
    labels = tf.range(tf.shape(scores)[0])  # [B]
    per_example_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                      logits=scores)
    correct = tf.cast(tf.equal(tf.argmax(scores, axis=-1, output_type=tf.int32), labels),
                      tf.float32)
    return per_example_loss, correct


def cosine_similarity(a, b):
    """Cosines of NumPy vectors: a float for two vectors, [len(a), len(b)] for matrices.

    Args:
      a, b: array-likes of shape [hidden_size] or [n, hidden_size].
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    a_rows = a.reshape(-1, a.shape[-1])
    b_rows = b.reshape(-1, b.shape[-1])
    a_rows = a_rows / np.maximum(np.linalg.norm(a_rows, axis=-1, keepdims=True), 1e-12)
    b_rows = b_rows / np.maximum(np.linalg.norm(b_rows, axis=-1, keepdims=True), 1e-12)
    matrix = a_rows @ b_rows.T
    if a.ndim == 1 and b.ndim == 1:
        return float(matrix[0, 0])
    if a.ndim == 1:
        return matrix[0]
    if b.ndim == 1:
        return matrix[:, 0]
    return matrix


@keras.saving.register_keras_serializable(package="bert_tf")
class SentenceEmbedder(TaskModel, keras.Model):
    """BERT with a pooling over its real tokens: one vector per sentence (new).

    Checkpoint variables: every `bert/...` variable of `BertModel` (no head;
    a release loads as it is).

    Args:
      config: `BertConfig` (or its dict).
      pooling: "cls", "mean" (the default) or "max", over the tokens whose
        input_mask is 1.
      normalize: bool, L2-normalize the vectors (a dot product is then the cosine).
      preprocessor: (optional) a `bert_tf.tokenization.preprocessor.BertPreprocessor`;
        the model then takes raw text, `encode` and `similarity` work, and
        each text is truncated to its first max_seq_length - 2 WordPiece
        tokens (the rest of a longer text is not seen).
      scale: the in-batch-negatives loss's multiplier of the cosines (20).
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.modeling.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length], and for pairs the same three
        with the prefix `positive_`; with a preprocessor, also a string
        Tensor [batch_size] of texts, `(texts_a, texts_b)` or a dict with
        `text_a` (and `text_b`): each text is embedded on its own, never
        packed as a pair.
      training: Python bool; dropout only when True.

    Returns:
      dict: `embeddings` float32 [batch_size, hidden_size]; for pairs also
      `positive_embeddings`.

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on pairs: `x=(anchors, positives)`, a dict with `text_a` and
    `text_b`, or a batched `tf.data.Dataset` of `(anchor, positive)` string
    pairs; no `y`. The loss is `in_batch_negatives_loss`; training logs
    `loss` and `accuracy` (anchors whose own positive scores highest in
    their batch); `evaluate` returns `eval_loss`, `eval_accuracy` and `loss`
    on pairs the same way. `predict` returns `embeddings` (and
    `positive_embeddings` for pairs).

    Example:
      ```python
      _, embedder, _ = bert_tf.from_pretrained("all-MiniLM-L6-v2/", head="embeddings",
                                               pooling="mean", normalize=True)
      vectors = embedder.encode(["A man is eating food.", "A man is riding a horse."])
      embedder.similarity("A man is eating food.", "A man is eating a piece of bread.")
      ```
    """

    task_name = "embeddings"
    pretrained_options = ("pooling", "normalize", "max_seq_length")

    @classmethod
    def from_parts(cls, parts):
        """The pooling of the directory's embedding config (`embedding_settings`), unless given."""
        pooling, normalize, max_seq_length = embedding_settings(
            parts.directory, *(parts.options.get(k) for k in cls.pretrained_options))
        preprocessor = BertPreprocessor(parts.vocab_file, do_lower_case=bool(parts.do_lower_case),
                                        max_seq_length=max_seq_length)
        return cls(parts.config, pooling=pooling, normalize=normalize, preprocessor=preprocessor)

    def __init__(self, config, pooling=DEFAULT_POOLING, normalize=False, preprocessor=None,
                 scale=DEFAULT_SCALE, name="sentence_embedder", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.pooling = check_pooling(pooling)
        self.normalize = bool(normalize)
        self.scale = float(scale)
        if preprocessor is not None:
            check_preprocessor(preprocessor, config, "SentenceEmbedder")
        self.preprocessor = preprocessor
        self.bert = BertModel(config)
        self.build()

    def call(self, features, training=None):
        features = self.model_inputs(features)
        outputs = {"embeddings": self._embed(features, "", training)}
        if POSITIVE + "input_ids" in features:
            outputs["positive_embeddings"] = self._embed(features, POSITIVE, training)
        return outputs

    def _embed(self, features, prefix, training):
        input_mask = features.get(prefix + "input_mask")
        outputs = self.bert(features[prefix + "input_ids"], input_mask=input_mask,
                            token_type_ids=features.get(prefix + "segment_ids"),
                            training=training)
        return pool(outputs["sequence_output"], input_mask, self.pooling, self.normalize)

    def model_inputs(self, x):
        """`x` as features; raw text through the preprocessor, each text on its own.

        A pair of texts (`(texts_a, texts_b)`, or `text_a` and `text_b` in a
        dict) gives the features of `texts_a` and, with the prefix
        `positive_`, those of `texts_b`; the classifier's preprocessing would
        pack them as one `[CLS] a [SEP] b [SEP]` example.
        """
        if isinstance(x, dict) and ("input_ids" in x or "inputs_embeds" in x):
            return dict(x)
        if self.preprocessor is not None:
            if isinstance(x, (tuple, list)) and len(x) == 2 and all(
                    tf.is_tensor(t) and t.dtype == tf.string for t in x):
                x = {"text_a": x[0], "text_b": x[1]}
            if isinstance(x, dict) and "text_b" in x:
                features = {k: v for k, v in x.items() if k not in ("text_a", "text_b")}
                features.update(self.preprocessor(x["text_a"]))
                features.update({POSITIVE + k: v
                                 for k, v in self.preprocessor(x["text_b"]).items()})
                return features
        return super().model_inputs(x)

    def make_task(self):
        return EmbeddingsTask(self.config, self.pooling, self.normalize, self.scale)

    # ------------------------------------------------------------ inference

    def encode(self, texts, batch_size=32):
        """The embeddings of `texts`, in their order: NumPy float32 [n, hidden_size].

        Texts are embedded `batch_size` at a time, each truncated to its
        first max_seq_length - 2 WordPiece tokens (the preprocessor's
        max_seq_length); a list longer than a few batches logs progress
        lines (`bert_tf.item_progress.ItemProgress`).

        Args:
          texts: a str, or a list / tuple / NumPy array of str (or bytes).
          batch_size: int, texts per forward pass.

        Returns:
          float32 NumPy array [len(texts), hidden_size] ([hidden_size] for one str).
        """
        if self.preprocessor is None:
            raise UserError("SentenceEmbedder.encode needs raw-text input: build it with "
                            "preprocessor=BertPreprocessor(...), or load it with "
                            "bert_tf.from_pretrained(..., head='embeddings')")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise UserError("SentenceEmbedder.encode: batch_size=%r must be a positive integer"
                            % (batch_size,))
        single = isinstance(texts, (str, bytes))
        texts = _as_texts([texts] if single else texts)
        hidden = self.config.hidden_size
        if not texts:
            return np.zeros([0, hidden], np.float32)
        traced = "_encode_function_" in self.__dict__
        encode_batch = self._encode_function()
        rows = []
        num_batches = -(-len(texts) // batch_size)
        progress = (ItemProgress("encode", total=len(texts), unit="texts")
                    if num_batches > _PROGRESS_BATCHES else None)
        if progress is not None and not traced:
            log_tracing(progress.what)
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            rows.append(encode_batch(tf.constant(batch, tf.string)).numpy())
            if progress is not None:
                progress.add(len(batch))
        if progress is not None:
            progress.finish()
        vectors = np.concatenate(rows).astype(np.float32)
        return vectors[0] if single else vectors

    def _encode_function(self):
        function = self.__dict__.get("_encode_function_")
        if function is None:
            @tf.function(input_signature=[tf.TensorSpec([None], tf.string)],
                         reduce_retracing=True)
            def function(texts):
                # Keras's predict step: the batch cut after its longest text.
                return self.predict_step(texts)["embeddings"]
            self.__dict__["_encode_function_"] = function
        return function

    def similarity(self, a, b, batch_size=32):
        """Cosine similarity of texts (or of vectors `encode` gave).

        Args:
          a, b: a str, a list of str, or NumPy embeddings ([hidden_size] or
            [n, hidden_size]).
          batch_size: as `encode`'s.

        Returns:
          a float for two texts (or two vectors); a NumPy [len(a), len(b)]
          matrix for two lists (a row or column for one text and one list).
        """
        def vectors(value):
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                return value
            return self.encode(value, batch_size=batch_size)
        return cosine_similarity(vectors(a), vectors(b))

    # ------------------------------------------------------------ saving

    def get_config(self):
        config = super().get_config()
        config.update({
            "config": self.config.to_dict(),
            "pooling": self.pooling,
            "normalize": self.normalize,
            "scale": self.scale,
            "preprocessor": serialize_preprocessor(self.preprocessor),
        })
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**with_preprocessor(config))

    def save_pretrained(self, directory, format="google", vocab_file=None,  # pylint: disable=redefined-builtin
                        do_lower_case=None, overwrite=False):
        """`TaskModel.save_pretrained`, and the pooling in `embedding_config.json` beside it.

        `bert_tf.from_pretrained(directory, head="embeddings")` then gives
        back this embedder: the weights, the vocab, the pooling, the
        normalization and the preprocessor's max_seq_length.
        """
        directory = super().save_pretrained(directory, format=format, vocab_file=vocab_file,
                                            do_lower_case=do_lower_case, overwrite=overwrite)
        with fileio.atomic_write(os.path.join(directory, EMBEDDING_CONFIG_NAME)) as f:
            f.write(json.dumps(self.embedding_config(), indent=2, sort_keys=True) + "\n")
        return directory

    def embedding_config(self):
        """{"pooling", "normalize", "max_seq_length"}: what `save_pretrained` writes beside the weights."""
        return {"pooling": self.pooling, "normalize": self.normalize,
                "max_seq_length": (None if self.preprocessor is None
                                   else self.preprocessor.max_seq_length)}


def _as_texts(texts):
    """A list of bytes, or a one-line UserError."""
    if isinstance(texts, np.ndarray):
        texts = texts.ravel().tolist()
    if not isinstance(texts, (list, tuple)):
        raise UserError("SentenceEmbedder.encode takes a str or a list of str, got %s"
                        % type(texts).__name__)
    out = []
    for i, text in enumerate(texts):
        if isinstance(text, str):
            text = text.encode("utf-8")
        elif not isinstance(text, bytes):
            raise UserError("SentenceEmbedder.encode: texts[%d] is %s, not a str"
                            % (i, type(text).__name__))
        out.append(text)
    return out


class EmbeddingsTask(WeightedAccuracyTask):
    """In-batch negatives on `(anchor, positive)` pairs (new; see the module docstring).

    Training: `loss = sum(per_example_loss) / examples` over the global
    batch, each replica's anchors against its own positives. Evaluation:
    `eval_loss`, `eval_accuracy` (anchors whose positive wins in their
    batch) and the Estimator-style `loss` (the mean of each batch's mean).
    Predictions: `embeddings` (and `positive_embeddings` for pairs).

    Args:
      config: `BertConfig`.
      pooling, normalize, scale: as `SentenceEmbedder`'s.
    """

    name = "embeddings"
    label_keys = ()
    metric_sum_keys = ("correct", "examples")
    eval_sum_keys = ("weight", "loss_sum", "correct")
    default_best_metric = "eval_accuracy"

    def __init__(self, config, pooling=DEFAULT_POOLING, normalize=False, scale=DEFAULT_SCALE):
        super().__init__(config)
        self.pooling = check_pooling(pooling)
        self.normalize = bool(normalize)
        self.scale = float(scale)

    def trim_padding(self, features):
        """The anchors cut after their longest row, the positives after theirs."""
        trimmed = dict(super().trim_padding(features))
        positives = {key: features[POSITIVE + key] for key in self.sequence_features
                     if features.get(POSITIVE + key) is not None}
        if positives:
            trimmed.update({POSITIVE + key: value
                            for key, value in super().trim_padding(positives).items()})
        return trimmed

    def _pair_losses(self, model, features, training):
        if POSITIVE + "input_ids" not in features:
            raise UserError(
                "SentenceEmbedder trains on pairs: (anchors, positives), a dict with text_a and "
                "text_b, or features with positive_input_ids; got the keys %s"
                % sorted(features))
        outputs = model(features, training=training)
        return in_batch_negatives_loss(outputs["embeddings"], outputs["positive_embeddings"],
                                       self.scale)

    def loss_normalizers(self, features):
        return {"examples": num_examples(features)}

    def compute_loss(self, model, features, normalizers, training=True):
        per_example_loss, correct = self._pair_losses(model, features, training)
        loss = tf.reduce_sum(per_example_loss) / normalizers["examples"]
        return loss, {"correct": tf.reduce_sum(correct), "examples": num_examples(features)}

    def train_metrics(self, sums):
        return {"accuracy": safe_div(sums["correct"], sums["examples"])}

    def eval_step(self, model, features):
        per_example_loss, correct = self._pair_losses(model, features, False)
        weights = real_example_weights(features)
        return {"weight": tf.reduce_sum(weights),
                "loss_sum": tf.reduce_sum(weights * per_example_loss),
                "correct": tf.reduce_sum(weights * correct)}

    def predict_step(self, model, features):
        return dict(model(features, training=False))
