"""The peer side of bench/pretraining_bench.py: TF Model Garden's BERT pre-training step.

Imported by bench/pretraining_bench.py's worker process in the peers' venv
(`bench/setup_peers.sh`: tf-models-official is not a dependency of this
project), with TF_USE_LEGACY_KERAS=1. `build(args, label, random_batch)` sets
up Model Garden's own legacy pre-training recipe
(`official/legacy/bert/run_pretraining.py`):
`bert_models.pretrain_model` (a `models.BertPretrainer` on a
`networks.BertEncoder`, with the MLM + NSP loss layer),
`official.nlp.optimization.create_optimizer` (its AdamWeightDecay with
clip_by_global_norm(1.0), warmup + linear decay) and the `model_training_utils`
host loop (`for _ in tf.range(steps): strategy.run(step)`). bf16 is tf-keras'
`mixed_bfloat16` policy, set before the model is built, as Model Garden's
`performance.set_mixed_precision_policy` does.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def build(args, label, random_batch):
    """Returns (info, run(num_steps) -> the mean training loss so far).

    `label` names this side in the table and `random_batch` makes the batch
    (pretraining_bench.py's, so both sides train on the same numbers).
    """
    import numpy as np
    import tensorflow as tf
    import tf_keras
    from official.legacy.bert import bert_models
    from official.legacy.bert import configs
    from official.nlp import optimization

    if args.use_xla:
        raise ValueError("Model Garden runs without XLA in this benchmark")
    if args.precision == "bf16":
        tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
    bert_config = configs.BertConfig.from_json_file(args.bert_config_file)
    strategy = tf.distribute.get_strategy()
    pretrain_model, _ = bert_models.pretrain_model(bert_config, args.seq_length,
                                                   args.max_predictions_per_seq)
    optimizer = optimization.create_optimizer(1e-4, 1000, 10)
    batch = random_batch(args.batch_size, args.seq_length, args.max_predictions_per_seq,
                         bert_config.vocab_size)
    # Model Garden's feature names.
    features = {"input_word_ids": batch["input_ids"], "input_type_ids": batch["segment_ids"]}
    for name in ("input_mask", "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                 "next_sentence_labels"):
        features[name] = batch[name]
    features = {k: tf.constant(v) for k, v in features.items()}
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

    def run(num_steps):
        train_steps(iterator, tf.constant(num_steps))
        return float(train_loss.result().numpy())

    params = int(sum(np.prod(v.shape) for v in training_vars))
    return {"label": label, "num_parameters": params,
            "tensorflow": tf.__version__}, run
