"""Runs the original `optimization.create_optimizer` for a few steps (oracle for tests/test_optimization.py).

Usage:
  python -m tests.original.optimizer_oracle INPUT.npz OUTPUT.npz INIT_LR NUM_TRAIN_STEPS NUM_WARMUP_STEPS ORDER

ORDER is "as_is" or "pinned". The original's train op is
`tf.group(apply_op, global_step.assign(global_step + 1))` with no control
dependency between the two, so the learning rate (computed from global_step)
may read global_step before or after the increment: a race. Under TF 2.21's
compat.v1 graph mode most steps see the incremented value (lr(t+1)), some the
old one (lr(t)). "pinned" adds the control dependency every stock TF1 optimizer
has (`apply_gradients(global_step=...)` increments after the updates), so
update t uses lr(t), the pre-increment step, as the original's comments and
warmup formula intend; "as_is" runs the original graph untouched.

INPUT.npz holds the initial value of every variable, keyed by its TF1 name
(every key with a "/"), plus the per-step feeds `ids` int32 [num_steps, batch],
`targets` float32 [num_steps, batch, vocab] and `loss_scale` float32 [num_steps].

The graph is BERT-shaped but tiny: a gather from `word_embeddings` (its gradient
is an IndexedSlices, as in BERT), a dense layer, a LayerNorm-style scale and
shift, logits tied to `word_embeddings` plus `output_bias`, and a sum-of-squares
loss. `bert/pooler/dense/kernel` is not used by the loss, so its gradient is None
and the original skips it.

OUTPUT.npz, for each step s (0-based), after that step's train op:
  `s{s}:<name>`, `s{s}:<name>/adam_m`, `s{s}:<name>/adam_v` for every variable
  the original created, `s{s}:global_step`; and, computed before the train op
  from the same feeds, `loss` [num_steps] and `global_norm` [num_steps] (the norm
  `clip_by_global_norm` sees).
"""

from tests.original import shim  # noqa: F401  (must come first)

import sys

import numpy as np
import tensorflow.compat.v1 as tf

from bert import optimization


def build_loss(variables, ids, targets, loss_scale):
    """The test loss; tests/test_optimization.py states the same maths in TF2."""
    word_embeddings = variables["bert/embeddings/word_embeddings"]
    prefix = "bert/encoder/layer_0/attention/output/"
    h = tf.gather(word_embeddings, ids)                                   # [B, 4]
    h = tf.matmul(h, variables[prefix + "dense/kernel"]) + variables[prefix + "dense/bias"]
    h = h * variables[prefix + "LayerNorm/gamma"] + variables[prefix + "LayerNorm/beta"]
    logits = tf.matmul(h, word_embeddings, transpose_b=True)              # [B, 7]
    logits += variables["cls/predictions/output_bias"]
    return loss_scale * tf.reduce_sum(tf.square(logits - targets))


def main(argv):
    input_path, output_path = argv[1], argv[2]
    init_lr, num_train_steps, num_warmup_steps = float(argv[3]), int(argv[4]), int(argv[5])
    order = argv[6]
    assert order in ("as_is", "pinned"), order
    data = np.load(input_path)
    ids_all, targets_all, scale_all = data["ids"], data["targets"], data["loss_scale"]

    variables = {}
    for name in sorted(k for k in data.files if "/" in k):
        variables[name] = tf.get_variable(
            name, shape=data[name].shape, dtype=tf.float32,
            initializer=tf.constant_initializer(data[name]))
    ids = tf.placeholder(tf.int32, [None])
    targets = tf.placeholder(tf.float32, [None, targets_all.shape[-1]])
    loss_scale = tf.placeholder(tf.float32, [])
    loss = build_loss(variables, ids, targets, loss_scale)
    global_norm = tf.linalg.global_norm(tf.gradients(loss, tf.trainable_variables()))

    train_op = optimization.create_optimizer(
        loss, init_lr, num_train_steps, num_warmup_steps, use_tpu=False)
    if order == "pinned":
        # train_op = group(apply_op, increment): make the increment wait for
        # apply_op, as tf.train.Optimizer.apply_gradients(global_step=...) does.
        apply_op, increment = train_op.control_inputs
        assert increment.type in ("Assign", "AssignVariableOp"), increment.type
        assert increment.inputs[0].name.startswith("global_step"), increment.inputs[0].name
        increment._add_control_input(apply_op)  # pylint: disable=protected-access

    out = {"loss": [], "global_norm": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        state = {v.op.name: v for v in tf.global_variables()}
        for step in range(ids_all.shape[0]):
            feed = {ids: ids_all[step], targets: targets_all[step], loss_scale: scale_all[step]}
            loss_value, norm_value = sess.run([loss, global_norm], feed)
            out["loss"].append(loss_value)
            out["global_norm"].append(norm_value)
            sess.run(train_op, feed)
            values = sess.run(state)
            for name, value in values.items():
                out["s%d:%s" % (step, name)] = value
            assert values["global_step"] == step + 1
    out["loss"] = np.array(out["loss"], np.float32)
    out["global_norm"] = np.array(out["global_norm"], np.float32)
    np.savez(output_path, **out)
    print("wrote %d arrays to %s" % (len(out), output_path))


if __name__ == "__main__":
    main(sys.argv)
