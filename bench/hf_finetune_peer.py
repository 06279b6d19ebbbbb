r"""The Hugging Face peer of a fine-tuning: transformers' TensorFlow BERT, trained as its users do.

  TF_USE_LEGACY_KERAS=1 bench/.hf-peer/bin/python bench/hf_finetune_peer.py \
      --task=pairs --model_dir=DIR --data_dir=DIR --output_json=/tmp/hf_pairs.json

It fine-tunes a Hugging Face BERT directory (config.json, model.safetensors,
vocab.txt, tokenizer files) on the same data and with the same flags as
bert_tf's tools/run_classifier.py (--task=pairs) and tools/run_ner.py
(--task=ner), the way transformers 4.44's TensorFlow examples
(examples/tensorflow/text-classification/run_glue.py,
token-classification/run_ner.py) do it, and writes what the run cost and how
well the model did.

transformers is a benchmark peer here, never a dependency of bert_tf: it runs
in its own virtual environment, bench/.hf-peer (`bash bench/setup_hf_peer.sh
.venv/bin/python`: transformers 4.44.2, the last release with TFBertModel on
tf-keras, and tokenizers 0.19.1, on the project venv's TensorFlow 2.21 through
a .pth file). transformers 4.44 needs tf-keras, so TF_USE_LEGACY_KERAS=1 is
set here before TensorFlow loads.

The data (--data_dir):
  pairs: MRPC's layout, as the original run_classifier's MrpcProcessor reads
         it: train.tsv and dev.tsv, tab-separated (no quoting), a header line,
         the label ("0" or "1") in column 0, sentence A in column 3, sentence
         B in column 4.
  ner:   CoNLL files train.txt and dev.txt: one word a line, the word first and
         its label last (whitespace-separated), a blank line between sentences,
         `-DOCSTART-` lines skipped. The labels are the training file's, "O"
         first and the others sorted (bert_tf.tasks.token_classification.data.get_labels, as
         run_ner lists them).

The run:
  * the model: `TFBertForSequenceClassification` / `TFBertForTokenClassification`
    `.from_pretrained(model_dir, num_labels=...)` from model.safetensors; the
    run stops unless every weight but the new classifier head was loaded
    (transformers' loading info, and the word embeddings compared with the
    file's tensor);
  * the tokenizer: the directory's fast tokenizer (`AutoTokenizer`), lower
    casing from its tokenizer config unless --do_lower_case says otherwise;
    every example truncated to --max_seq_length (pairs: `longest_first`);
    NER words given with `is_split_into_words=True`, the first sub-token of
    each word labelled, the other sub-tokens and the special tokens -100;
  * the batches: what `model.prepare_tf_dataset` builds (datasets'
    `to_tf_dataset`, here without the datasets library): the example indices
    shuffled with --seed (again each epoch), batched by --train_batch_size
    with the remainder dropped, each batch padded to its own longest row
    (PER-BATCH padding) by `DataCollatorWithPadding` /
    `DataCollatorForTokenClassification` inside a `tf.numpy_function`;
  * the optimizer: `num_train_steps = int(num_examples / train_batch_size *
    num_train_epochs)` (the original BERT's formula), warmup
    `int(num_train_steps * warmup_proportion)`, `transformers.create_optimizer`
    with weight decay 0.01 (AdamWeightDecay, LayerNorm and bias excluded),
    gradients clipped to global norm --max_grad_norm (1.0: the original's
    clip_by_global_norm, and the `adam_global_clipnorm=max_grad_norm` of
    transformers' examples); its other defaults are transformers', not the
    original's: Adam epsilon 1e-8 (the original 1e-6), and the linear decay
    runs over the steps after the warmup (the original's over all steps);
  * the training: `model.compile(optimizer=...)` (the model's own loss),
    `model.fit(dataset, epochs=1, steps_per_epoch=num_train_steps)`; a Keras
    callback times every step and prints a progress line on stderr at least
    every --progress_seconds;
  * the evaluation on dev.txt / dev.tsv: every example once, in order, in
    batches of --eval_batch_size padded per batch, `model.predict_on_batch`.
    pairs: accuracy. ner: entity-level precision, recall and F1 by
    conlleval's rules over every word of the file, each word's label the
    prediction at its first sub-token ("O" for a word cut off by the
    truncation or without any sub-token; both counted in the output), scored
    by seqeval 1.2.2 (default mode, what `evaluate.load("seqeval")` reports)
    and checked against bert_tf.tasks.token_classification.data_conlleval to 1e-9.

Seeds: `transformers.set_seed` and `tf.keras.utils.set_random_seed` (Python,
NumPy, TensorFlow: the classifier head's initialisation, dropout, the shuffle).

The output: one JSON object, printed on stdout and written to --output_json:
  train_seconds            wall time of model.fit (tracing included)
  first_step_seconds       the first step (its tracing included)
  steady_examples_per_sec  examples of steps 2..N over their wall time
  train_examples_per_sec   num_train_steps * train_batch_size / train_seconds
  num_train_steps, num_train_examples, mean_batch_length (the padded length
  of the training batches, averaged), dev_metric ("accuracy" or "f1") and
  dev_value (ner: also dev_precision, dev_recall), eval_seconds,
  whole_seconds (from the start of this script to the end of the
  evaluation), peak_rss_mb (ru_maxrss), transformers_version,
  tensorflow_version, and the settings and the loading check.
"""

import time

_START = time.perf_counter()  # whole_seconds counts from here, before TensorFlow loads

# pylint: disable=g-import-not-at-top,wrong-import-position
import argparse
import csv
import json
import os
import resource
import sys
import warnings

# transformers 4.44 runs on tf-keras (Keras 2), not on Keras 3: TensorFlow reads this when it loads.
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The original MrpcProcessor's labels, and its columns (label, sentence A, sentence B).
PAIR_LABELS = ["0", "1"]
PAIR_COLUMNS = (0, 3, 4)
OUTSIDE = "O"
DOCSTART = "-DOCSTART-"
IGNORED_LABEL = -100  # transformers' label of positions left out of the loss
METRIC_TOLERANCE = 1e-9


def _log(message, *args):
    print(message % args if args else message, file=sys.stderr, flush=True)


def _bool(value):
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError("not a boolean: %s" % value)


# --------------------------------------------------------------------------
# Reading the data.
# --------------------------------------------------------------------------


def read_pairs(path):
    """(text_a, text_b, label) per row of an MRPC-layout TSV (its header skipped).

    As the original's `_read_tsv` (csv, tab-separated, no quote character) and
    MrpcProcessor (label column 0, sentences in columns 3 and 4).
    """
    examples = []
    with open(path, encoding="utf-8", newline="") as f:
        for index, row in enumerate(csv.reader(f, delimiter="\t", quotechar=None)):
            if index == 0:
                continue
            if len(row) <= max(PAIR_COLUMNS):
                raise SystemExit("%s line %d: %d columns, MRPC's layout has 5 (label, #1 ID, "
                                 "#2 ID, #1 String, #2 String)" % (path, index + 1, len(row)))
            label, text_a, text_b = (row[i] for i in PAIR_COLUMNS)
            if label not in PAIR_LABELS:
                raise SystemExit("%s line %d: label %r is not one of %s"
                                 % (path, index + 1, label, ", ".join(PAIR_LABELS)))
            examples.append((text_a, text_b, label))
    if not examples:
        raise SystemExit("%s: no example after its header" % path)
    return examples


def read_conll(path):
    """(words, labels) per sentence of a CoNLL file, as bert_tf.tasks.token_classification.data.read_conll reads it.

    Whitespace-separated columns, the word first and the label last; a blank
    line or a `-DOCSTART-` line ends a sentence.
    """
    sentences, words, labels = [], [], []
    num_columns = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            columns = line.split()
            if columns and num_columns is None:
                num_columns = len(columns)
            if columns and (len(columns) < 2 or len(columns) != num_columns):
                raise SystemExit("%s line %d: %d columns (the word first, its label last; the "
                                 "first line has %d)" % (path, number, len(columns), num_columns))
            if not columns or columns[0] == DOCSTART:
                if words:
                    sentences.append((words, labels))
                words, labels = [], []
                continue
            words.append(columns[0])
            labels.append(columns[-1])
    if words:
        sentences.append((words, labels))
    if not sentences:
        raise SystemExit("%s: no sentence" % path)
    return sentences


def ner_labels(sentences):
    """The label list of training sentences: "O" first, then the others sorted (run_ner's order)."""
    labels = {label for _, sentence_labels in sentences for label in sentence_labels}
    return ([OUTSIDE] if OUTSIDE in labels else []) + sorted(labels - {OUTSIDE})


# --------------------------------------------------------------------------
# Tokenizing, batching.
# --------------------------------------------------------------------------


def pair_features(tokenizer, examples, max_seq_length):
    """One unpadded feature dict per (text_a, text_b, label) example."""
    encoded = tokenizer([a for a, _, _ in examples], [b for _, b, _ in examples],
                        truncation=True, max_length=max_seq_length)
    features = []
    for i, (_, _, label) in enumerate(examples):
        feature = {key: encoded[key][i] for key in encoded.keys()}
        feature["labels"] = PAIR_LABELS.index(label)
        features.append(feature)
    return features


def ner_features(tokenizer, sentences, label_list, max_seq_length, path):
    """(feature dicts, word_ids lists) of sentences: the first sub-token of each word labelled."""
    label_ids = {label: i for i, label in enumerate(label_list)}
    encoded = tokenizer([words for words, _ in sentences], is_split_into_words=True,
                        truncation=True, max_length=max_seq_length)
    features, all_word_ids = [], []
    for i, (_, labels) in enumerate(sentences):
        unknown = [label for label in labels if label not in label_ids]
        if unknown:
            raise SystemExit("%s: sentence %d has label %s, not seen in training (the labels: %s)"
                             % (path, i + 1, unknown[0], " ".join(label_list)))
        word_ids = encoded.word_ids(i)
        token_labels, previous = [], None
        for word_id in word_ids:
            if word_id is None or word_id == previous:
                token_labels.append(IGNORED_LABEL)
            else:
                token_labels.append(label_ids[labels[word_id]])
            previous = word_id
        feature = {key: encoded[key][i] for key in encoded.keys()}
        feature["labels"] = token_labels
        features.append(feature)
        all_word_ids.append(word_ids)
    return features, all_word_ids


def train_dataset(tf, features, collator, batch_size, seed, padded_lengths):
    """The training batches as `prepare_tf_dataset(shuffle=True, drop_remainder=True)` builds them.

    Example indices shuffled with `seed` (a new order each pass), batched,
    repeated (for --num_train_epochs above 1), each batch padded to its
    longest row by `collator` in a `tf.numpy_function`; the padded length of
    each batch is appended to `padded_lengths`, in order.
    """
    keys = sorted(features[0])

    def collate(indices):
        batch = collator([features[i] for i in indices])
        padded_lengths.append(int(batch["input_ids"].shape[1]))
        return [np.asarray(batch[key], np.int64) for key in keys]

    def fetch(indices):
        arrays = tf.numpy_function(collate, [indices], [tf.int64] * len(keys), stateful=True)
        batch = {}
        for key, array in zip(keys, arrays):
            rank = 1 if key == "labels" and np.ndim(features[0]["labels"]) == 0 else 2
            batch[key] = tf.ensure_shape(array, [None] * rank)
        return batch

    dataset = tf.data.Dataset.range(len(features))
    dataset = dataset.shuffle(len(features), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=True).repeat()
    return dataset.map(fetch).prefetch(tf.data.AUTOTUNE)


def eval_batches(features, collator, batch_size):
    """The dev batches in order, every example once, padded per batch, without their labels."""
    for start in range(0, len(features), batch_size):
        batch = collator([{k: v for k, v in feature.items() if k != "labels"}
                          for feature in features[start:start + batch_size]])
        yield {key: np.asarray(value, np.int64) for key, value in batch.items()}


# --------------------------------------------------------------------------
# The model, the timing callback.
# --------------------------------------------------------------------------


def load_model(model_class, model_dir, num_labels):
    """`model_class.from_pretrained(model_dir, num_labels=...)`, checked to have loaded the encoder.

    Only the new classifier head may be newly initialised (transformers'
    loading info), no tensor may have a mismatched shape, and the word
    embeddings must equal model.safetensors' tensor.
    """
    model, info = model_class.from_pretrained(model_dir, num_labels=num_labels,
                                              output_loading_info=True)
    new = sorted(info["missing_keys"])
    not_head = [name for name in new if not name.startswith("classifier.")]
    if not_head or info["mismatched_keys"]:
        raise SystemExit("%s did not load every encoder weight from %s: newly initialised %s, "
                         "mismatched %s" % (model_class.__name__, model_dir, not_head,
                                            info["mismatched_keys"]))
    from safetensors import safe_open
    with safe_open(os.path.join(model_dir, "model.safetensors"), framework="np") as f:
        name = next(k for k in f.keys() if k.endswith("embeddings.word_embeddings.weight"))
        expected = f.get_tensor(name)
    (variable,) = [w for w in model.weights if "word_embeddings/weight" in w.name]
    if not np.array_equal(variable.numpy(), expected):
        raise SystemExit("%s: the word embeddings are not model.safetensors' %s"
                         % (model_class.__name__, name))
    loaded = sum(1 for w in model.weights) - len(new)
    return model, {"newly_initialized": new, "unexpected": sorted(info["unexpected_keys"]),
                   "loaded_weights": loaded, "word_embeddings_equal_file": True}


def step_timer(tf, num_steps, batch_size, progress_seconds):
    """A Keras callback: every training step's end time, and a progress line on stderr."""

    class StepTimer(tf.keras.callbacks.Callback):
        """Times the steps of model.fit; prints step, steps/s, examples/s and the ETA."""

        def __init__(self):
            super().__init__()
            self.first_begin = None
            self.ends = []
            self._last_print = (0, None)  # (steps, time) at the last progress line

        def on_train_batch_begin(self, batch, logs=None):
            if self.first_begin is None:
                self.first_begin = time.perf_counter()
                self._last_print = (0, self.first_begin)

        def on_train_batch_end(self, batch, logs=None):
            now = time.perf_counter()
            self.ends.append(now)
            steps = len(self.ends)
            last_steps, last_time = self._last_print
            if steps in (1, num_steps) or now - last_time >= progress_seconds:
                rate = (steps - last_steps) / (now - last_time)  # since the last line
                # The ETA from the steps after the first (which traces the step).
                later = (steps - 1) / (now - self.ends[0]) if steps > 1 else None
                loss = (logs or {}).get("loss")
                _log("step %d/%d: loss %s, %.2f steps/s, %.1f examples/s, ETA %s",
                     steps, num_steps, "%.4f" % float(loss) if loss is not None else "?", rate,
                     rate * batch_size,
                     "%.0f s" % ((num_steps - steps) / later) if later else "?")
                self._last_print = (steps, now)

        def first_step_seconds(self):
            return self.ends[0] - self.first_begin

        def steady_examples_per_sec(self):
            """Examples of steps 2..N over their wall time (None with one step)."""
            if len(self.ends) < 2:
                return None
            return (len(self.ends) - 1) * batch_size / (self.ends[-1] - self.ends[0])

    return StepTimer()


# --------------------------------------------------------------------------
# Evaluation.
# --------------------------------------------------------------------------


def seqeval_metrics():
    """seqeval's metrics module (tests/seqeval_reference.py: seqeval without scikit-learn)."""
    sys.path.insert(1, REPO_ROOT)
    from tests.seqeval_reference import import_seqeval
    return import_seqeval()[0]


def score_entities(gold, predicted):
    """seqeval's entity precision / recall / F1 (default mode), checked with bert_tf's conlleval."""
    metrics = seqeval_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on 0 / 0 (no predicted entity)
        scores = {"precision": float(metrics.precision_score(gold, predicted)),
                  "recall": float(metrics.recall_score(gold, predicted)),
                  "f1": float(metrics.f1_score(gold, predicted)),
                  "accuracy": float(metrics.accuracy_score(gold, predicted))}
    from bert_tf.tasks.token_classification import data_conlleval as conlleval  # pure Python
    ours = conlleval.evaluate(gold, predicted)
    for key, value in scores.items():
        if abs(value - ours[key]) > METRIC_TOLERANCE:
            raise SystemExit("seqeval's %s %r is not bert_tf.tasks.token_classification.data_conlleval's %r"
                             % (key, value, ours[key]))
    return scores


def word_predictions(token_predictions, word_ids, num_words, label_list):
    """Per word, the label predicted at its first sub-token, or None where it has none."""
    labels = [None] * num_words
    previous = None
    for position, word_id in enumerate(word_ids):
        if word_id is not None and word_id != previous:
            labels[word_id] = label_list[token_predictions[position]]
        previous = word_id
    return labels


def evaluate(model, task, features, collator, batch_size, label_list, dev, word_ids):
    """The dev scores: {"dev_metric": name, "dev_value": value, ...}."""
    predictions = []
    for batch in eval_batches(features, collator, batch_size):
        logits = model.predict_on_batch(batch)["logits"]
        predictions.extend(np.argmax(logits, axis=-1))
    if task == "pairs":
        gold = np.array([PAIR_LABELS.index(label) for _, _, label in dev])
        accuracy = float(np.mean(np.array(predictions) == gold))
        return {"dev_metric": "accuracy", "dev_value": accuracy, "dev_examples": len(dev)}
    gold, predicted = [], []
    cut_off = 0
    for (words, labels), tokens, ids in zip(dev, predictions, word_ids):
        labels_predicted = word_predictions(tokens, ids, len(words), label_list)
        cut_off += sum(label is None for label in labels_predicted)
        gold.append(labels)
        predicted.append([label or OUTSIDE for label in labels_predicted])
    scores = score_entities(gold, predicted)
    return {"dev_metric": "f1", "dev_value": scores["f1"], "dev_precision": scores["precision"],
            "dev_recall": scores["recall"], "dev_word_accuracy": scores["accuracy"],
            "dev_examples": len(dev), "dev_words": sum(len(words) for words, _ in dev),
            "dev_words_without_prediction": cut_off,
            "scorer": "seqeval default mode (== bert_tf.tasks.token_classification.data_conlleval)"}


# --------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True, choices=["pairs", "ner"])
    parser.add_argument("--model_dir", required=True, help="a Hugging Face BERT directory")
    parser.add_argument("--data_dir", required=True,
                        help="pairs: train.tsv, dev.tsv (MRPC's layout); ner: train.txt, dev.txt")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--num_train_epochs", type=float, default=1.0)
    parser.add_argument("--warmup_proportion", type=float, default=0.1)
    parser.add_argument("--max_grad_norm", type=float, default=1.0,
                        help="clip the gradients to this global norm (0: no clipping)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--do_lower_case", type=_bool, nargs="?", const=True, default=None,
                        help="true / false (default: the directory's tokenizer config)")
    parser.add_argument("--progress_seconds", type=float, default=10.0,
                        help="a progress line on stderr at least this often")
    parser.add_argument("--output_json", help="also write the JSON object here")
    args = parser.parse_args()

    import tensorflow as tf
    import transformers
    from transformers import AutoTokenizer

    transformers.set_seed(args.seed)
    tf.keras.utils.set_random_seed(args.seed)

    tokenizer_kwargs = {} if args.do_lower_case is None else {"do_lower_case": args.do_lower_case}
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir, **tokenizer_kwargs)
    if not tokenizer.is_fast:
        raise SystemExit("%s: no fast tokenizer (tokenizer.json / vocab.txt)" % args.model_dir)

    word_ids = None
    if args.task == "pairs":
        train = read_pairs(os.path.join(args.data_dir, "train.tsv"))
        dev = read_pairs(os.path.join(args.data_dir, "dev.tsv"))
        label_list = PAIR_LABELS
        train_features = pair_features(tokenizer, train, args.max_seq_length)
        dev_features = pair_features(tokenizer, dev, args.max_seq_length)
        collator = transformers.DataCollatorWithPadding(tokenizer, return_tensors="np")
        model_class = transformers.TFBertForSequenceClassification
    else:
        train = read_conll(os.path.join(args.data_dir, "train.txt"))
        dev_path = os.path.join(args.data_dir, "dev.txt")
        dev = read_conll(dev_path)
        label_list = ner_labels(train)
        train_features, _ = ner_features(tokenizer, train, label_list, args.max_seq_length,
                                         "train.txt")
        dev_features, word_ids = ner_features(tokenizer, dev, label_list, args.max_seq_length,
                                              dev_path)
        collator = transformers.DataCollatorForTokenClassification(
            tokenizer, label_pad_token_id=IGNORED_LABEL, return_tensors="np")
        model_class = transformers.TFBertForTokenClassification

    num_train_steps = int(len(train) / args.train_batch_size * args.num_train_epochs)
    num_warmup_steps = int(num_train_steps * args.warmup_proportion)
    if num_train_steps < 1:
        raise SystemExit("%d training examples, batch %d, %g epochs: no training step"
                         % (len(train), args.train_batch_size, args.num_train_epochs))
    _log("%s: %d training examples, %d dev, labels %s; %d steps (%d warmup) of batch %d",
         args.task, len(train), len(dev), " ".join(label_list), num_train_steps,
         num_warmup_steps, args.train_batch_size)

    model, loading = load_model(model_class, args.model_dir, len(label_list))
    _log("loaded %d weights from %s; newly initialised: %s", loading["loaded_weights"],
         args.model_dir, ", ".join(loading["newly_initialized"]) or "none")

    optimizer, _ = transformers.create_optimizer(
        init_lr=args.learning_rate, num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps, weight_decay_rate=0.01,
        adam_global_clipnorm=args.max_grad_norm or None)
    model.compile(optimizer=optimizer)  # no loss: the model's own (labels in the inputs)

    padded_lengths = []
    dataset = train_dataset(tf, train_features, collator, args.train_batch_size, args.seed,
                            padded_lengths)
    timer = step_timer(tf, num_train_steps, args.train_batch_size, args.progress_seconds)
    start = time.perf_counter()
    model.fit(dataset, epochs=1, steps_per_epoch=num_train_steps, callbacks=[timer], verbose=0)
    train_seconds = time.perf_counter() - start
    if len(timer.ends) != num_train_steps:
        raise SystemExit("model.fit ran %d steps, not %d" % (len(timer.ends), num_train_steps))
    # The line bench/finetune_speed_bench.py times the end of training by.
    _log("training done: %d steps in %.1f s", num_train_steps, train_seconds)

    start = time.perf_counter()
    scores = evaluate(model, args.task, dev_features, collator, args.eval_batch_size, label_list,
                      dev, word_ids)
    eval_seconds = time.perf_counter() - start
    whole_seconds = time.perf_counter() - _START

    steady = timer.steady_examples_per_sec()
    result = {
        "task": args.task, "model_dir": args.model_dir, "data_dir": args.data_dir,
        "train_seconds": train_seconds,
        "first_step_seconds": timer.first_step_seconds(),
        "steady_examples_per_sec": steady,
        "train_examples_per_sec": num_train_steps * args.train_batch_size / train_seconds,
        "num_train_steps": num_train_steps, "num_warmup_steps": num_warmup_steps,
        "num_train_examples": len(train),
        "mean_batch_length": float(np.mean(padded_lengths[:num_train_steps])),
        **scores,
        "eval_seconds": eval_seconds, "whole_seconds": whole_seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "transformers_version": transformers.__version__,
        "tensorflow_version": tf.__version__,
        "labels": label_list, "do_lower_case": tokenizer.do_lower_case,
        "loading": loading,
        "flags": {k: getattr(args, k) for k in (
            "max_seq_length", "train_batch_size", "eval_batch_size", "learning_rate",
            "num_train_epochs", "warmup_proportion", "max_grad_norm", "seed")},
    }
    text = json.dumps(result)
    if args.output_json:
        with open(args.output_json, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
