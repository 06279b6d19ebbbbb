"""Token classification (named entities): the model, its loss and its task (new; BERT paper §5.3).

`BertTokenClassifier` is `bert` plus run_classifier's unscoped
`output_weights` [num_labels, hidden_size] / `output_bias` [num_labels],
applied to every position of the sequence output, so its checkpoints look
like the original's fine-tuned heads. The paper's recipe: the first
sub-token of each word is labelled, the rest ([CLS], [SEP], the other
sub-tokens, padding) are not (`label_mask` 0; see `bert_tf.tasks.token_classification.data`):

  logits[b, t] = dropout(sequence_output[b, t], 0.1) @ output_weights^T + output_bias
  loss = sum_{b,t} label_mask[b, t] * -log softmax(logits[b, t])[label_ids[b, t]]
         / sum_{b,t} label_mask[b, t]

`TokenClassificationTask` packages it for `bert_tf.training.Trainer`
(bert-run-ner) and for Keras's `compile` / `fit` / `evaluate` / `predict` on
`BertTokenClassifier` itself. Evaluation: `eval_loss` and `eval_accuracy`
over the labelled words, and conlleval's entity-level `precision`, `recall`
and `f1` (`bert_tf.tasks.token_classification.data_conlleval`).
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import numpy as np
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.tasks.token_classification import data_conlleval as conlleval
from bert_tf.tasks.token_classification import data as ner_data
from bert_tf.data import text_windows
from bert_tf.errors import UserError
from bert_tf.modeling import huggingface
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.heads import ClassifierHead
from bert_tf.tasks.base import WeightedAccuracyTask
from bert_tf.tasks.base import real_example_weights
from bert_tf.tasks.base import safe_div
from bert_tf.tasks.task_model import TaskModel
from bert_tf.tasks.task_model import checkpoint_num_labels

# The per-token and per-row features `predict_step` hands back beside its outputs.
_PASSED_THROUGH = ("label_ids", "label_mask", "sentence_ids")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(TaskModel, keras.Model):
    """BERT with a token classification head on the sequence output (named entities).

    Checkpoint variables: every `bert/...` variable of `BertModel`, plus
    output_weights [num_labels, hidden_size] and output_bias [num_labels]
    (unscoped, as run_classifier's head).

    Args:
      config: `BertConfig` (or its dict).
      num_labels: int, the number of labels (label id 0 is "O" in bert-run-ner's lists).
      labels: (optional) list of str, the label of each id; needed for the
        entity metrics of `evaluate` and for `predict_words` / `predict_entities`.
      vocab_file, do_lower_case: the tokenizer of `predict_words` /
        `predict_entities` (built on first use; `from_pretrained` passes them).
      max_seq_length, doc_stride: the windows of a long sentence in
        `predict_words` / `predict_entities` (`bert_tf.tasks.token_classification.data`);
        max_seq_length defaults to the config's max_position_embeddings.
      batch_size: windows per model call in `predict_words` / `predict_entities`.
      name: the wrapper's name (stripped from the TF1 names by `bert_tf.modeling.checkpoint`).

    Call args:
      features: dict with int32 Tensors `input_ids`, `input_mask`,
        `segment_ids` [batch_size, seq_length].
      training: Python bool; dropout only when True.

    Returns:
      dict: `logits` float32 [batch_size, seq_length, num_labels].

    Keras training (`TaskModel`): `compile(optimizer=create_optimizer(...))`,
    then `fit` on feature dicts with `label_ids` int [batch_size, seq_length]
    (and `label_mask`, 1 where a position is labelled; without it, a negative
    label id marks a position without a label, as -100 in Hugging Face's
    data), or on `(x, y)` with `y` the label ids. `evaluate` returns
    `eval_loss`, `eval_accuracy` (over the labelled positions), `loss` and,
    with `labels`, conlleval's `precision`, `recall`, `f1` (each row one
    sentence, or the rows of one `sentence_ids` value one sentence, as
    bert-run-ner's windows). `predict` returns `logits`, `predictions` int32
    [batch_size, seq_length] (the argmax) and the label features given.

    Example:
      ```python
      model = BertTokenClassifier(config, num_labels=len(labels), labels=labels,
                                  vocab_file="vocab.txt")
      model.predict_words([["EU", "rejects", "German", "call"]])
      # [["B-ORG", "O", "B-MISC", "O"]]
      model.predict_entities("EU rejects German call")
      # [{"entity": "ORG", "text": "EU", "start": 0, "end": 2}, ...]
      ```
    """

    task_name = "token_classification"
    hf_architecture = "BertForTokenClassification"
    fresh_head = True
    pretrained_options = ("num_labels",)

    @classmethod
    def from_parts(cls, parts):
        """labels.txt beside the checkpoint, the run's labels and windows (bert_tf_run.json)."""
        recorded = parts.recorded or {}
        labels = ner_data.labels_beside(parts.directory)
        if recorded.get("labels"):
            labels = list(recorded["labels"])
        if labels is None:  # a Hugging Face directory's id2label
            labels = huggingface.labels_of(parts.directory)
        options = dict(parts.options)
        if options.get("num_labels") is None and labels is not None:
            options["num_labels"] = len(labels)
        num_labels = checkpoint_num_labels(parts._replace(options=options), cls.task_name)
        windows = {k: recorded[k] for k in ("max_seq_length", "doc_stride") if recorded.get(k)}
        model = cls(parts.config, num_labels,
                    labels=labels if labels and len(labels) == num_labels else None,
                    vocab_file=parts.vocab_file, do_lower_case=bool(parts.do_lower_case),
                    **windows)
        model.tokenizer = parts.tokenizer
        return model

    def __init__(self, config, num_labels, labels=None, vocab_file=None, do_lower_case=True,
                 max_seq_length=None, doc_stride=text_windows.DOC_STRIDES["ner"], batch_size=32,
                 name="bert_token_classifier", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.num_labels = int(num_labels)
        self.labels = None if labels is None else [str(label) for label in labels]
        if self.labels is not None and len(self.labels) != self.num_labels:
            raise UserError("BertTokenClassifier: %d labels for num_labels=%d"
                            % (len(self.labels), self.num_labels))
        self.vocab_file = None if vocab_file is None else str(vocab_file)
        self.do_lower_case = bool(do_lower_case)
        if max_seq_length is None:
            max_seq_length = config.max_position_embeddings
        self.max_seq_length = int(max_seq_length)
        self.doc_stride = text_windows.check_doc_stride(doc_stride,
                                                        "BertTokenClassifier: doc_stride")
        self.batch_size = int(batch_size)
        if self.max_seq_length < 3 or self.batch_size < 1:
            raise UserError("BertTokenClassifier: max_seq_length=%d (>= 3) and batch_size=%d "
                            "(>= 1)" % (self.max_seq_length, self.batch_size))
        config.check_max_seq_length(self.max_seq_length, "max_seq_length")
        self._tokenizer = None
        self.bert = BertModel(config)
        self.classifier = ClassifierHead(self.num_labels, config.hidden_size, name="classifier")
        self.build()

    def call(self, features, training=None):
        _, outputs = self.backbone(features, training)
        sequence_output = outputs["sequence_output"]  # [B, S, H]
        shape = tf.shape(sequence_output)
        logits = self.classifier(tf.reshape(sequence_output, [-1, shape[2]]),
                                 training=training)  # [B * S, num_labels]
        return {"logits": tf.reshape(logits, [shape[0], shape[1], self.num_labels])}  # [B, S, L]

    def make_task(self):
        return TokenClassificationTask(self.config, self.num_labels, labels=self.labels)

    def get_config(self):
        config = super().get_config()
        config.update({"config": self.config.to_dict(), "num_labels": self.num_labels,
                       "labels": self.labels, "vocab_file": self.vocab_file,
                       "do_lower_case": self.do_lower_case,
                       "max_seq_length": self.max_seq_length, "doc_stride": self.doc_stride,
                       "batch_size": self.batch_size})
        return config

    def save_pretrained(self, directory, format="google", vocab_file=None,  # pylint: disable=redefined-builtin
                        do_lower_case=None, overwrite=False):
        """`TaskModel.save_pretrained`, plus `labels.txt` (the labels, in id order) when known."""
        path = super().save_pretrained(directory, format=format, vocab_file=vocab_file,
                                       do_lower_case=do_lower_case, overwrite=overwrite)
        if self.labels is not None:
            ner_data.write_labels(tf.io.gfile.join(str(directory), ner_data.LABELS_FILE),
                                  self.labels)
        return path

    # -- per-word predictions ------------------------------------------------

    @property
    def tokenizer(self):
        """The `FullTokenizer` of `vocab_file` (built on first use; can be set)."""
        if self._tokenizer is None:
            if self.vocab_file is None:
                raise UserError("BertTokenClassifier has no vocab_file: pass vocab_file= (or "
                                "load it with bert_tf.from_pretrained(path, "
                                "head='token_classification'))")
            self._tokenizer = tokenization.FullTokenizer(self.vocab_file, self.do_lower_case)
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer):
        self._tokenizer = tokenizer

    def _label_names(self):
        if self.labels is None:
            raise UserError("BertTokenClassifier has no labels: pass labels= (bert-run-ner "
                            "writes them to labels.txt)")
        return self.labels

    def predict_word_ids(self, sentences):
        """Each word's label id: a list (per sentence) of lists of int (per word).

        Sentences longer than `max_seq_length` go in `doc_stride` windows; each
        word takes its label from the window where it has the most context.
        """
        features = []
        for index, words in enumerate(sentences):
            features.extend(ner_data.convert_sentence(index, list(words), None, self.tokenizer,
                                                      self.max_seq_length, self.doc_stride))
        predictions = []
        for start in range(0, len(features), self.batch_size):
            batch = features[start:start + self.batch_size]
            inputs = {key: np.array([getattr(f, key) for f in batch], np.int32)
                      for key in ("input_ids", "input_mask", "segment_ids")}
            logits = self(inputs, training=False)["logits"]
            predictions.append(tf.argmax(logits, axis=-1, output_type=tf.int32).numpy())
        rows = np.concatenate(predictions) if predictions else np.zeros([0, 0], np.int32)
        return ner_data.word_predictions(features, rows, len(sentences))

    def predict_words(self, sentences):
        """The label of each word of pre-split sentences.

        Args:
          sentences: a list of words (one sentence), or a list of such lists.

        Returns:
          a list of labels per word (one sentence), or a list of such lists.
        """
        labels = self._label_names()
        single = bool(sentences) and all(isinstance(w, str) for w in sentences)
        batch = [sentences] if single else list(sentences)
        for words in batch:
            if isinstance(words, str) or not all(isinstance(w, str) for w in words):
                raise UserError("predict_words takes a list of words (str), or a list of such "
                                "lists; got %r" % (words,))
        result = [[labels[i] for i in ids] for ids in self.predict_word_ids(batch)]
        return result[0] if single else result

    def predict_entities(self, text):
        """The entities of raw text, with their character offsets.

        The text is split into words as the BasicTokenizer splits it
        (`bert_tf.tasks.token_classification.data.split_words`: whitespace, and each punctuation
        mark a word), each word labelled (`predict_words`), and the labels
        grouped into entities by conlleval's chunk rules.

        Args:
          text: a str, or a list of str.

        Returns:
          for each text, a list of dicts: `entity` (the type, "PER"), `text`
          (`text[start:end]`), `start`, `end` (character offsets into the
          text), `words` (how many words); a str gives one such list.
        """
        labels = self._label_names()
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if not all(isinstance(t, str) for t in texts):
            raise UserError("predict_entities takes a str or a list of str")
        split = [ner_data.split_words(t) for t in texts]
        ids = self.predict_word_ids([[w for w, _, _ in words] for words in split])
        result = []
        for t, words, word_ids in zip(texts, split, ids):
            entities = []
            for chunk_type, first, last in conlleval.get_chunks([labels[i] for i in word_ids]):
                start, end = words[first][1], words[last][2]
                entities.append({"entity": chunk_type, "text": t[start:end], "start": start,
                                 "end": end, "words": last - first + 1})
            result.append(entities)
        return result[0] if single else result


def token_example_loss(logits, label_ids):
    """(per-position loss [batch_size, seq_length], predictions int32 [batch_size, seq_length]).

    Args:
      logits: float [batch_size, seq_length, num_labels].
      label_ids: int [batch_size, seq_length] (>= 0).
    """
    logits = tf.cast(logits, tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot_labels = tf.one_hot(label_ids, depth=logits.shape[-1], dtype=tf.float32)
    per_token_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)  # [B, S]
    return per_token_loss, tf.argmax(log_probs, axis=-1, output_type=tf.int32)


def labels_and_mask(features):
    """(label_ids int32 [B, S] >= 0, label_mask float32 [B, S]) of a batch.

    `label_mask` is the feature when the batch holds it, else 1 where
    `label_ids` is not negative (negative ids: no label); 0 wherever
    `input_mask` is 0: a padding position is no token, and its label (a
    Keras user's labels padded with 0, say) is not read.
    """
    label_ids = tf.cast(features["label_ids"], tf.int32)
    if features.get("label_mask") is not None:
        mask = tf.cast(features["label_mask"], tf.float32)
    else:
        mask = tf.cast(label_ids >= 0, tf.float32)
    if features.get("input_mask") is not None:
        mask = mask * tf.cast(tf.not_equal(features["input_mask"], 0), tf.float32)
    return tf.maximum(label_ids, 0), mask


def sentence_rows(outputs):
    """[[row, ...], ...]: the rows of each sentence (one `sentence_ids` value in a run of rows;
    without `sentence_ids`, each row is a sentence)."""
    ids = outputs.get("sentence_ids")
    num_rows = len(outputs["predictions"])
    if ids is None:
        return [[row] for row in range(num_rows)]
    sentences = []
    for row in range(num_rows):
        if row and ids[row] == ids[row - 1]:
            sentences[-1].append(row)
        else:
            sentences.append([row])
    return sentences


class TokenClassificationTask(WeightedAccuracyTask):
    """Token classification with a label mask (new; the BERT paper's CoNLL-2003 NER).

    Training: the mean over the global batch's labelled positions of the
    softmax cross-entropy; logs `accuracy` over them. Evaluation, weighted by
    `is_real_example`: `eval_loss` and `eval_accuracy` over the labelled
    positions, the Estimator's `loss`, and with `labels`, conlleval's
    entity-level `precision`, `recall`, `f1` from every prediction.
    Predictions: `logits` [seq_length, num_labels], `predictions`
    [seq_length], and `label_ids`, `label_mask`, `sentence_ids` when the
    features hold them.

    Args:
      config: `BertConfig`.
      num_labels: int.
      labels: (optional) list of str, each id's label (for the entity metrics).
    """

    name = "token_classification"
    label_keys = ("label_ids",)
    metric_sum_keys = ("correct", "words")
    eval_sum_keys = ("weight", "loss_sum", "correct")
    sequence_features = WeightedAccuracyTask.sequence_features + ("label_ids", "label_mask")
    # Positions cut off are padding: no label, predicted as id 0 (never read).
    sequence_outputs = {"logits": 0.0, "predictions": 0}

    def __init__(self, config, num_labels, labels=None):
        super().__init__(config)
        self.num_labels = int(num_labels)
        self.labels = None if labels is None else list(labels)

    @property
    def needs_eval_predictions(self):
        return self.labels is not None

    @property
    def default_best_metric(self):
        return "f1" if self.labels is not None else "eval_accuracy"

    def loss_normalizers(self, features):
        _, mask = labels_and_mask(features)
        return {"words": tf.reduce_sum(mask)}

    def compute_loss(self, model, features, normalizers, training=True):
        logits = model(features, training=training)["logits"]
        label_ids, mask = labels_and_mask(features)
        per_token_loss, predictions = token_example_loss(logits, label_ids)
        loss = tf.reduce_sum(mask * per_token_loss) / tf.maximum(normalizers["words"], 1.0)
        correct = tf.reduce_sum(mask * tf.cast(tf.equal(predictions, label_ids), tf.float32))
        return loss, {"correct": correct, "words": tf.reduce_sum(mask)}

    def train_metrics(self, sums):
        return {"accuracy": safe_div(sums["correct"], sums["words"])}

    def eval_step(self, model, features):
        logits = model(features, training=False)["logits"]
        label_ids, mask = labels_and_mask(features)
        per_token_loss, predictions = token_example_loss(logits, label_ids)
        weights = real_example_weights(features)[:, None] * mask  # [B, S]
        return {"weight": tf.reduce_sum(weights),
                "loss_sum": tf.reduce_sum(weights * per_token_loss),
                "correct": tf.reduce_sum(
                    weights * tf.cast(tf.equal(predictions, label_ids), tf.float32))}

    def eval_results_from_predictions(self, outputs):
        """conlleval's `precision`, `recall`, `f1` over the sentences of the rows."""
        mask = outputs.get("label_mask")
        if mask is None:
            mask = outputs["label_ids"] >= 0
        gold, predicted = [], []
        for rows in sentence_rows(outputs):
            keep = [mask[row] > 0 for row in rows]
            gold.append([self.labels[i] for row, k in zip(rows, keep)
                         for i in outputs["label_ids"][row][k]])
            predicted.append([self.labels[i] for row, k in zip(rows, keep)
                              for i in outputs["predictions"][row][k]])
        scores = conlleval.evaluate(gold, predicted)
        return {key: scores[key] for key in ("precision", "recall", "f1")}

    def predict_step(self, model, features):
        logits = model(features, training=False)["logits"]  # [B, S, L]
        outputs = {"logits": logits,
                   "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}  # [B, S]
        for key in _PASSED_THROUGH:
            if features.get(key) is not None:
                outputs[key] = features[key]
        return outputs
