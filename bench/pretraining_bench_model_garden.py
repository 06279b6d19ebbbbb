"""The peer side of bench/pretraining_bench.py: TF Model Garden's BERT pre-training step.

Runs in its OWN virtual environment (tf-models-official is not a dependency of
this project), started by bench/pretraining_bench.py, e.g.

  /tmp/mg-venv/bin/python bench/pretraining_bench_model_garden.py \
      --bert_config_file=configs/uncased_L-12_H-768_A-12.json --batch_size=8 \
      --seq_length=128 --max_predictions_per_seq=20 --warmup_steps=2 --steps=5

What it times is Model Garden's own legacy pre-training recipe
(`official/legacy/bert/run_pretraining.py`): `bert_models.pretrain_model`
(a `models.BertPretrainer` on a `networks.BertEncoder`, with the MLM + NSP
loss layer), `official.nlp.optimization.create_optimizer` (its AdamWeightDecay
with clip_by_global_norm(1.0), warmup + linear decay) and the
`model_training_utils` host loop (`for _ in tf.range(steps): strategy.run(step)`).
Prints one JSON line: {"seconds_per_step", "examples_per_sec", ...}.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from official.legacy.bert import bert_models  # noqa: E402
from official.legacy.bert import configs  # noqa: E402
from official.nlp import optimization  # noqa: E402


def random_features(batch_size, seq_length, max_predictions, vocab_size, seed=0):
    """A full-length pre-training batch (Model Garden's feature names)."""
    rng = np.random.RandomState(seed)
    positions = np.stack([np.sort(rng.choice(np.arange(1, seq_length), max_predictions,
                                             replace=False)) for _ in range(batch_size)])
    features = {
        "input_word_ids": rng.randint(1, vocab_size, (batch_size, seq_length)),
        "input_mask": np.ones((batch_size, seq_length)),
        "input_type_ids": (np.arange(seq_length) >= seq_length // 2)[None].repeat(batch_size, 0),
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.randint(1, vocab_size, (batch_size, max_predictions)),
        "masked_lm_weights": np.ones((batch_size, max_predictions)),
        "next_sentence_labels": rng.randint(0, 2, (batch_size, 1)),
    }
    return {k: tf.constant(v.astype(np.int32)) for k, v in features.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bert_config_file", required=True)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    bert_config = configs.BertConfig.from_json_file(args.bert_config_file)
    strategy = tf.distribute.get_strategy()
    start = time.time()
    pretrain_model, _ = bert_models.pretrain_model(bert_config, args.seq_length,
                                                   args.max_predictions_per_seq)
    optimizer = optimization.create_optimizer(1e-4, 1000, 10)
    build_seconds = time.time() - start
    features = random_features(args.batch_size, args.seq_length, args.max_predictions_per_seq,
                               bert_config.vocab_size)
    dataset = tf.data.Dataset.from_tensors((features, features["masked_lm_ids"])).repeat()
    iterator = iter(dataset)
    train_loss = tf_keras.metrics.Mean("training_loss", dtype=tf.float32)
    training_vars = pretrain_model.trainable_variables

    def loss_fn(unused_labels, losses):
        # official/legacy/bert/run_pretraining.py get_loss_fn()
        return tf.reduce_mean(losses)

    def replicated_step(inputs):
        # official/legacy/bert/model_training_utils.py _replicated_step
        inputs, labels = inputs
        with tf.GradientTape() as tape:
            model_outputs = pretrain_model(inputs, training=True)
            loss = loss_fn(labels, model_outputs)
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
    print(json.dumps({
        "implementation": "Model Garden (tf-models-official) legacy BertPretrainer",
        "seconds_per_step": seconds / args.steps,
        "examples_per_sec": args.steps * args.batch_size / seconds,
        "warmup_seconds": first_seconds, "build_seconds": build_seconds,
        "num_parameters": int(sum(np.prod(v.shape) for v in training_vars)),
        "loss": loss, "tensorflow": tf.__version__,
    }))


if __name__ == "__main__":
    main()
