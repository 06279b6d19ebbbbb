"""The peer side of bench/finetuning_bench.py: TF Model Garden's BERT classifier fine-tuning step.

Runs in its OWN virtual environment (tf-models-official is not a dependency of
this project), started by bench/finetuning_bench.py, e.g.

  TF_USE_LEGACY_KERAS=1 /tmp/mg-venv/bin/python bench/finetuning_bench_model_garden.py \
      --bert_config_file=configs/uncased_L-12_H-768_A-12.json --batch_size=8 \
      --seq_length=128 --num_labels=2 --warmup_steps=2 --steps=5

What it times is Model Garden's own legacy classifier recipe
(`official/legacy/bert/run_classifier.py`): `bert_models.classifier_model`
(a `models.BertClassifier` on a `networks.BertEncoder` with `output_range=1`:
its last layer computes the [CLS] position only; `--full_last_layer` drops
that, as the original computes every position; dropout 0.1 on the pooled
output), `official.nlp.optimization.create_optimizer`
(its AdamWeightDecay, weight decay 0.01 except LayerNorm/bias,
clip_by_global_norm(1.0) inside `apply_gradients`, warmup + linear decay), the
classification loss of `run_classifier.get_loss_fn` (mean cross-entropy) and
the `model_training_utils` host loop (`for _ in tf.range(steps):
strategy.run(step)` in one tf.function; run_classifier itself uses Keras
`fit`, which runs the same kind of loop). Prints one JSON line:
{"seconds_per_step", "examples_per_sec", ...}.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from official.legacy.bert import bert_models  # noqa: E402
from official.legacy.bert import configs  # noqa: E402
from official.legacy.bert import run_classifier  # noqa: E402
from official.nlp import optimization  # noqa: E402


def random_features(batch_size, seq_length, num_labels, vocab_size, seed=0):
    """A full-length sentence-pair batch (Model Garden's feature names) and its labels."""
    rng = np.random.RandomState(seed)
    features = {
        "input_word_ids": rng.randint(1, vocab_size, (batch_size, seq_length)),
        "input_mask": np.ones((batch_size, seq_length)),
        "input_type_ids": (np.arange(seq_length) >= seq_length // 2)[None].repeat(batch_size, 0),
    }
    features = {k: tf.constant(v.astype(np.int32)) for k, v in features.items()}
    labels = tf.constant(rng.randint(0, num_labels, (batch_size,)).astype(np.int32))
    return features, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bert_config_file", required=True)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--num_labels", type=int, default=2)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--full_last_layer", action="store_true",
                        help="no output_range=1: the last layer computes every position")
    args = parser.parse_args()

    bert_config = configs.BertConfig.from_json_file(args.bert_config_file)
    strategy = tf.distribute.get_strategy()
    start = time.time()
    if args.full_last_layer:
        # bert_models.classifier_model with the encoder's default output_range
        # (None): the last layer computes every position, as the original does.
        from official.nlp.modeling import models  # pylint: disable=g-import-not-at-top
        encoder = bert_models.get_transformer_encoder(bert_config, args.seq_length)
        classifier_model = models.BertClassifier(
            encoder, num_classes=args.num_labels, dropout_rate=bert_config.hidden_dropout_prob,
            initializer=tf_keras.initializers.TruncatedNormal(
                stddev=bert_config.initializer_range))
    else:
        classifier_model, _ = bert_models.classifier_model(bert_config, args.num_labels,
                                                           args.seq_length)
    # A run of exactly the steps done, warmup 10% (run_classifier's default).
    total = args.warmup_steps + args.steps
    optimizer = optimization.create_optimizer(args.learning_rate, total, max(1, total // 10))
    build_seconds = time.time() - start
    features, labels = random_features(args.batch_size, args.seq_length, args.num_labels,
                                       bert_config.vocab_size)
    dataset = tf.data.Dataset.from_tensors((features, labels)).repeat()
    iterator = iter(dataset)
    loss_fn = run_classifier.get_loss_fn(args.num_labels)
    train_loss = tf_keras.metrics.Mean("training_loss", dtype=tf.float32)
    training_vars = classifier_model.trainable_variables

    def replicated_step(inputs):
        # official/legacy/bert/model_training_utils.py _replicated_step
        inputs, labels = inputs
        with tf.GradientTape() as tape:
            logits = classifier_model(inputs, training=True)
            loss = loss_fn(labels, logits)
        grads = tape.gradient(loss, training_vars)
        optimizer.apply_gradients(zip(grads, training_vars))
        train_loss.update_state(loss)

    @tf.function
    def train_steps(iterator, steps):
        for _ in tf.range(steps):
            strategy.run(replicated_step, args=(next(iterator),))

    start = time.time()
    train_steps(iterator, tf.constant(args.warmup_steps))
    _ = train_loss.result().numpy()
    first_seconds = time.time() - start
    start = time.time()
    train_steps(iterator, tf.constant(args.steps))
    loss = float(train_loss.result().numpy())
    seconds = time.time() - start
    import importlib.metadata  # pylint: disable=g-import-not-at-top
    print(json.dumps({
        "implementation": "TF Model Garden %s legacy BertClassifier + AdamWeightDecay%s"
                          % (importlib.metadata.version("tf-models-official"),
                             " (full last layer)" if args.full_last_layer else ""),
        "seconds_per_step": seconds / args.steps,
        "examples_per_sec": args.steps * args.batch_size / seconds,
        "warmup_seconds": first_seconds, "build_seconds": build_seconds,
        "num_parameters": int(sum(np.prod(v.shape) for v in training_vars)),
        "loss": loss, "tensorflow": tf.__version__,
    }))


if __name__ == "__main__":
    main()
