"""Oracle: the original `run_pretraining.model_fn` maths in TF1 graph mode (for tests/test_pretraining.py).

`tf.compat.v1.estimator` is gone in TF 2.21, so this builds what `model_fn`
builds (`BertModel`, `get_masked_lm_output`, `get_next_sentence_output`,
`optimization.create_optimizer`, the `metric_fn` metrics) and drives it with a
`tf.Session`, as the Estimator would. One change to the original graph: the
`global_step += 1` of `create_optimizer`'s train op is made to run after the
update (see `shim.pin_global_step_increment`), removing a race in the original
so that update t uses lr(t) deterministically.

Usage:
  python -m tests.original.pretraining_oracle train CONFIG CKPT BATCHES_NPZ OUT_NPZ \
      LR NUM_TRAIN_STEPS NUM_WARMUP_STEPS [init|resume] [SAVE_AT SAVE_PREFIX]
    `init`: the variables the checkpoint shares with the graph are loaded as
    `model_fn` does (`get_assignment_map_from_checkpoint` +
    `tf.train.init_from_checkpoint`), the rest (adam slots, global_step) start
    at their initializers. `resume`: everything, optimizer state and
    global_step included, is restored with `tf.train.Saver` (the Estimator
    resuming from `model_dir`). Then one `train_op` per batch of BATCHES_NPZ
    (arrays with a leading [num_steps] axis, the original's feature keys).
    With SAVE_AT, after that many steps the graph is saved with
    `tf.train.Saver` to SAVE_PREFIX (as the Estimator's `model.ckpt-N`).
    OUT_NPZ: `total_loss`, `masked_lm_loss`, `next_sentence_loss` [num_steps]
    (each computed before its step's update), `global_step` [num_steps]
    (after it), and
    `final:<name>` for every global variable after the last step.

  python -m tests.original.pretraining_oracle eval CONFIG CKPT BATCHES_NPZ OUT_JSON
    The EVAL graph (`is_training=False`) restored from CKPT with
    `tf.train.Saver`, the `metric_fn` metrics (`tf.metrics.accuracy` /
    `tf.metrics.mean`) plus the Estimator's `loss` (mean of total_loss) updated
    on each batch, and `global_step` read from CKPT, written as JSON.
"""

from tests.original import shim  # noqa: F401  (must come first)

import json
import sys

import numpy as np
from bert import modeling
from bert import optimization
from bert import run_pretraining

tf = shim.tf1

FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
            "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def _placeholders(batches):
    return {k: tf.placeholder(tf.float32 if k == "masked_lm_weights" else tf.int32,
                              shape=batches[k].shape[1:], name=k) for k in FEATURES}


def _model_fn_graph(config, features, is_training):
    """The tensors `model_fn` builds (run_pretraining.py:109-237)."""
    model = modeling.BertModel(
        config=config, is_training=is_training, input_ids=features["input_ids"],
        input_mask=features["input_mask"], token_type_ids=features["segment_ids"],
        use_one_hot_embeddings=False)
    (masked_lm_loss, masked_lm_example_loss,
     masked_lm_log_probs) = run_pretraining.get_masked_lm_output(
         config, model.get_sequence_output(), model.get_embedding_table(),
         features["masked_lm_positions"], features["masked_lm_ids"],
         features["masked_lm_weights"])
    (next_sentence_loss, next_sentence_example_loss,
     next_sentence_log_probs) = run_pretraining.get_next_sentence_output(
         config, model.get_pooled_output(), features["next_sentence_labels"])
    total_loss = masked_lm_loss + next_sentence_loss
    return {
        "total_loss": total_loss, "masked_lm_loss": masked_lm_loss,
        "next_sentence_loss": next_sentence_loss,
        "masked_lm_example_loss": masked_lm_example_loss,
        "masked_lm_log_probs": masked_lm_log_probs,
        "next_sentence_example_loss": next_sentence_example_loss,
        "next_sentence_log_probs": next_sentence_log_probs,
    }


def train(argv):
    (config_file, ckpt, batches_npz, out_npz, lr, num_train_steps,
     num_warmup_steps, how) = argv[:8]
    save_at = int(argv[8]) if len(argv) > 8 else None
    save_prefix = argv[9] if len(argv) > 9 else None
    config = modeling.BertConfig.from_json_file(config_file)
    batches = dict(np.load(batches_npz))
    features = _placeholders(batches)
    tensors = _model_fn_graph(config, features, is_training=True)

    if how == "init":
        tvars = tf.trainable_variables()
        assignment_map, _ = modeling.get_assignment_map_from_checkpoint(tvars, ckpt)
        tf.train.init_from_checkpoint(ckpt, assignment_map)
    train_op = optimization.create_optimizer(
        tensors["total_loss"], float(lr), int(num_train_steps), int(num_warmup_steps), False)
    shim.pin_global_step_increment(train_op)
    global_step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver(tf.global_variables())

    out = {"total_loss": [], "masked_lm_loss": [], "next_sentence_loss": [], "global_step": []}
    num_steps = batches["input_ids"].shape[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        if how == "resume":
            saver.restore(sess, ckpt)
        for step in range(num_steps):
            feed = {features[k]: batches[k][step] for k in FEATURES}
            values, _ = sess.run([{k: tensors[k] for k in (
                "total_loss", "masked_lm_loss", "next_sentence_loss")}, train_op], feed)
            for k, v in values.items():
                out[k].append(v)
            out["global_step"].append(sess.run(global_step))
            if save_at is not None and step + 1 == save_at:
                saver.save(sess, save_prefix, write_meta_graph=False)
        final = sess.run({v.op.name: v for v in tf.global_variables()})
    result = {k: np.array(v) for k, v in out.items()}
    for name, value in final.items():
        result["final:" + name] = value
    np.savez(out_npz, **result)


def evaluate(argv):
    config_file, ckpt, batches_npz, out_json = argv[:4]
    config = modeling.BertConfig.from_json_file(config_file)
    batches = dict(np.load(batches_npz))
    features = _placeholders(batches)
    t = _model_fn_graph(config, features, is_training=False)

    # metric_fn (run_pretraining.py:187-220), verbatim maths.
    masked_lm_log_probs = tf.reshape(t["masked_lm_log_probs"],
                                     [-1, t["masked_lm_log_probs"].shape[-1]])
    masked_lm_predictions = tf.argmax(masked_lm_log_probs, axis=-1, output_type=tf.int32)
    masked_lm_example_loss = tf.reshape(t["masked_lm_example_loss"], [-1])
    masked_lm_ids = tf.reshape(features["masked_lm_ids"], [-1])
    masked_lm_weights = tf.reshape(features["masked_lm_weights"], [-1])
    metrics = {
        "masked_lm_accuracy": tf.metrics.accuracy(
            labels=masked_lm_ids, predictions=masked_lm_predictions, weights=masked_lm_weights),
        "masked_lm_loss": tf.metrics.mean(values=masked_lm_example_loss,
                                          weights=masked_lm_weights),
    }
    next_sentence_log_probs = tf.reshape(t["next_sentence_log_probs"],
                                         [-1, t["next_sentence_log_probs"].shape[-1]])
    next_sentence_predictions = tf.argmax(next_sentence_log_probs, axis=-1,
                                          output_type=tf.int32)
    next_sentence_labels = tf.reshape(features["next_sentence_labels"], [-1])
    metrics["next_sentence_accuracy"] = tf.metrics.accuracy(
        labels=next_sentence_labels, predictions=next_sentence_predictions)
    metrics["next_sentence_loss"] = tf.metrics.mean(values=t["next_sentence_example_loss"])
    # The Estimator adds the mean of the EstimatorSpec's loss.
    metrics["loss"] = tf.metrics.mean(t["total_loss"])

    model_vars = tf.global_variables()
    saver = tf.train.Saver(model_vars)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        saver.restore(sess, ckpt)
        for step in range(batches["input_ids"].shape[0]):
            feed = {features[k]: batches[k][step] for k in FEATURES}
            sess.run({k: v[1] for k, v in metrics.items()}, feed)
        results = sess.run({k: v[0] for k, v in metrics.items()})
    reader = tf.train.load_checkpoint(ckpt)
    results = {k: float(v) for k, v in results.items()}
    results["global_step"] = int(reader.get_tensor("global_step"))
    with open(out_json, "w") as f:
        json.dump(results, f)


def main(argv):
    mode = argv[1]
    if mode == "train":
        train(argv[2:])
    elif mode == "eval":
        evaluate(argv[2:])
    else:
        raise SystemExit("unknown mode %s" % mode)


if __name__ == "__main__":
    main(sys.argv)
