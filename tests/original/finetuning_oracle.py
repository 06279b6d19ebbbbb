"""Oracle: the original `run_classifier` / `run_squad` model_fn maths in TF1 graph mode.

For tests/test_classifier.py and tests/test_squad.py. `tf.estimator` is gone
in TF 2.21, so, as tests/original/pretraining_oracle.py does for
pre-training, this builds what each `model_fn` builds (the original
`create_model`, the loss, `optimization.create_optimizer`, the `metric_fn`
metrics) and drives it with a `tf.Session`, as the Estimator would. Two
changes to the original graphs, both for determinism:

  * `global_step += 1` runs after the update (`shim.pin_global_step_increment`,
    as for pre-training), so update t uses lr(t);
  * classifier `train` runs only: the head's hard-coded
    `tf.nn.dropout(output_layer, keep_prob=0.9)` (run_classifier.py:607) is
    the identity, because it is random and cannot be switched off from the
    config. The patch is asserted to hit exactly that one call, and is
    active only while `create_model` builds the graph.

Usage:
  python -m tests.original.finetuning_oracle RUNS_JSON

RUNS_JSON is a list of runs, done one after the other in this process (each
in a fresh `tf.Graph`; TensorFlow is imported once, which is most of the
cost). Every run has "task", "mode", "config" (a bert_config.json), "ckpt"
(a checkpoint prefix) and "out"; classifier runs also "num_labels". "task" is
"classifier" or "squad", one task per process: pip's run_classifier.py and
run_squad.py define the same absl flags at import, so importing both raises
DuplicateFlagError.

  train    features: "batches", an .npz with a leading [num_steps] axis
           (input_ids, input_mask, segment_ids [num_steps, batch, seq]; and
           label_ids [num_steps, batch] for the classifier, start_positions /
           end_positions [num_steps, batch] for SQuAD). The variables the
           checkpoint shares with the graph are loaded as `model_fn` does
           (`get_assignment_map_from_checkpoint` + `tf.train.init_from_checkpoint`);
           the rest (adam slots, global_step, any missing head) start at their
           initializers. Then one `train_op` per batch, with "learning_rate",
           "num_train_steps", "num_warmup_steps". With "save_at" and
           "save_prefix", after that many steps the graph is saved with
           `tf.train.Saver` (the Estimator's `model.ckpt-N`). "out" (.npz):
           `total_loss` [num_steps] (each before its step's update),
           `global_step` [num_steps] (after it), and `final:<name>` for every
           global variable after the last step.
  eval     classifier only. The EVAL graph (`is_training=False`) restored from
           "ckpt" with `tf.train.Saver`; "examples" is an .npz of single
           examples ([num_examples, ...], label_ids [num_examples], optional
           is_real_example), cut into consecutive batches of "batch_size" (the
           last one smaller, as the original's input_fn with
           drop_remainder=False on CPU/GPU). The `metric_fn` metrics
           (`eval_accuracy`, `eval_loss`, weighted by is_real_example) plus the
           Estimator's `loss` (mean over batches of total_loss) and
           `global_step` (from the checkpoint, if there) go to "out" (.json).
  predict  the PREDICT graph restored from "ckpt", run on "examples" in
           batches of "batch_size"; "out" (.npz): classifier `probabilities`
           and `logits` [num_examples, num_labels]; SQuAD `start_logits`,
           `end_logits` [num_examples, seq_length].
"""

from tests.original import shim  # (must come first)

import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from bert import modeling  # noqa: E402
from bert import optimization  # noqa: E402


tf = shim.tf1



MODULES = {"classifier": "bert.run_classifier", "squad": "bert.run_squad"}
INPUTS = ("input_ids", "input_mask", "segment_ids")
LABELS = {"classifier": ("label_ids",), "squad": ("start_positions", "end_positions")}
# run_classifier.create_model's hard-coded head dropout (run_classifier.py:607).
HEAD_KEEP_PROB = 0.9

_imported_task = []


def _module(task):
    """The original script of `task`, imported on first use (one task per process)."""
    if _imported_task and _imported_task[0] != task:
        raise SystemExit("one task per oracle process: %s already imported, %s asked for "
                         "(pip's run_classifier and run_squad define the same absl flags)"
                         % (_imported_task[0], task))
    if not _imported_task:
        _imported_task.append(task)
    return importlib.import_module(MODULES[task])


@contextlib.contextmanager
def _without_classifier_head_dropout(run_classifier):
    """Makes `tf.nn.dropout(x, keep_prob=0.9)` (the head's) the identity inside the block."""
    nn = run_classifier.tf.nn
    original = nn.dropout
    hits = []

    def dropout(x, *args, **kwargs):
        if not args and kwargs.get("keep_prob") == HEAD_KEEP_PROB:
            hits.append(x)
            return x
        return original(x, *args, **kwargs)

    nn.dropout = dropout
    try:
        yield
    finally:
        nn.dropout = original
    # Exactly the head's call (the config's dropouts are 0: modeling.dropout returns early).
    assert len(hits) == 1, "expected the head's dropout once, patched %d calls" % len(hits)


def _placeholders(task, arrays, leading_axis):
    """int32 placeholders for the model inputs and the task's labels.

    `leading_axis`: arrays are [num_steps, batch, ...] (train), so the shape
    is static; otherwise [num_examples, ...] and the batch dimension is None.
    """
    keys = INPUTS + tuple(k for k in LABELS[task] if k in arrays)
    if "is_real_example" in arrays:
        keys += ("is_real_example",)
    shapes = {k: (arrays[k].shape[1:] if leading_axis else (None,) + arrays[k].shape[1:])
              for k in keys}
    return {k: tf.placeholder(tf.int32, shape=shapes[k], name=k) for k in keys}


def _classifier_graph(run, features, is_training, config):
    """The tensors run_classifier's model_fn builds (run_classifier.py:627-675)."""
    run_classifier = _module("classifier")
    label_ids = features.get("label_ids")
    if label_ids is None:  # predict: the labels do not change the probabilities
        label_ids = tf.zeros(tf.shape(features["input_ids"])[:1], tf.int32)
    args = (config, is_training, features["input_ids"], features["input_mask"],
            features["segment_ids"], label_ids, int(run["num_labels"]), False)
    if is_training:
        with _without_classifier_head_dropout(run_classifier):
            total_loss, per_example_loss, logits, probabilities = (
                run_classifier.create_model(*args))
    else:
        total_loss, per_example_loss, logits, probabilities = run_classifier.create_model(*args)
    return {"total_loss": total_loss, "per_example_loss": per_example_loss,
            "logits": logits, "probabilities": probabilities, "label_ids": label_ids}


def _squad_graph(run, features, is_training, config):
    """The tensors run_squad's model_fn builds (run_squad.py:595-669)."""
    run_squad = _module("squad")
    start_logits, end_logits = run_squad.create_model(
        bert_config=config, is_training=is_training, input_ids=features["input_ids"],
        input_mask=features["input_mask"], segment_ids=features["segment_ids"],
        use_one_hot_embeddings=False)
    tensors = {"start_logits": start_logits, "end_logits": end_logits}
    if "start_positions" in features:
        # model_fn's TRAIN branch, verbatim.
        seq_length = modeling.get_shape_list(features["input_ids"])[1]

        def compute_loss(logits, positions):
            one_hot_positions = tf.one_hot(positions, depth=seq_length, dtype=tf.float32)
            log_probs = tf.nn.log_softmax(logits, axis=-1)
            loss = -tf.reduce_mean(tf.reduce_sum(one_hot_positions * log_probs, axis=-1))
            return loss

        start_loss = compute_loss(start_logits, features["start_positions"])
        end_loss = compute_loss(end_logits, features["end_positions"])
        tensors["total_loss"] = (start_loss + end_loss) / 2.0
    return tensors


GRAPHS = {"classifier": _classifier_graph, "squad": _squad_graph}


def _load(path):
    return dict(np.load(path))


def train(run):
    task = run["task"]
    config = modeling.BertConfig.from_json_file(run["config"])
    batches = _load(run["batches"])
    features = _placeholders(task, batches, leading_axis=True)
    tensors = GRAPHS[task](run, features, True, config)

    # model_fn: init_from_checkpoint with the shared variables.
    tvars = tf.trainable_variables()
    assignment_map, _ = modeling.get_assignment_map_from_checkpoint(tvars, run["ckpt"])
    tf.train.init_from_checkpoint(run["ckpt"], assignment_map)
    train_op = optimization.create_optimizer(
        tensors["total_loss"], float(run["learning_rate"]), int(run["num_train_steps"]),
        int(run["num_warmup_steps"]), False)
    shim.pin_global_step_increment(train_op)
    global_step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver(tf.global_variables())
    save_at = run.get("save_at")

    out = {"total_loss": [], "global_step": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(batches["input_ids"].shape[0]):
            feed = {ph: batches[k][step] for k, ph in features.items()}
            loss, _ = sess.run([tensors["total_loss"], train_op], feed)
            out["total_loss"].append(loss)
            out["global_step"].append(sess.run(global_step))
            if save_at is not None and step + 1 == int(save_at):
                saver.save(sess, run["save_prefix"], write_meta_graph=False)
        final = sess.run({v.op.name: v for v in tf.global_variables()})
    result = {k: np.array(v) for k, v in out.items()}
    for name, value in final.items():
        result["final:" + name] = value
    np.savez(run["out"], **result)


def _batches(examples, batch_size, features):
    """Feeds of consecutive batches of `batch_size` examples (the last may be smaller)."""
    num_examples = examples["input_ids"].shape[0]
    for start in range(0, num_examples, batch_size):
        yield {ph: examples[k][start:start + batch_size] for k, ph in features.items()}


def _restore(sess, ckpt):
    """`tf.train.Saver` restore of every graph variable (as the Estimator), naming any missing."""
    in_checkpoint = {name for name, _ in tf.train.list_variables(ckpt)}
    missing = [v.op.name for v in tf.global_variables() if v.op.name not in in_checkpoint]
    if missing:
        raise SystemExit("%s lacks the original graph's variables %s (it holds %s)"
                         % (ckpt, ", ".join(missing), ", ".join(sorted(
                             n for n in in_checkpoint if not n.startswith("bert/")))))
    tf.train.Saver(tf.global_variables()).restore(sess, ckpt)


def evaluate(run):
    if run["task"] != "classifier":
        raise SystemExit("eval: only the classifier has an EVAL mode in the original")
    config = modeling.BertConfig.from_json_file(run["config"])
    examples = _load(run["examples"])
    features = _placeholders("classifier", examples, leading_axis=False)
    t = _classifier_graph(run, features, False, config)
    label_ids = features["label_ids"]
    # model_fn (run_classifier.py:638-642).
    if "is_real_example" in features:
        is_real_example = tf.cast(features["is_real_example"], dtype=tf.float32)
    else:
        is_real_example = tf.ones(tf.shape(label_ids), dtype=tf.float32)

    # metric_fn (run_classifier.py:687-695), verbatim.
    def metric_fn(per_example_loss, label_ids, logits, is_real_example):
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        accuracy = tf.metrics.accuracy(
            labels=label_ids, predictions=predictions, weights=is_real_example)
        loss = tf.metrics.mean(values=per_example_loss, weights=is_real_example)
        return {
            "eval_accuracy": accuracy,
            "eval_loss": loss,
        }

    metrics = metric_fn(t["per_example_loss"], label_ids, t["logits"], is_real_example)
    # The Estimator adds the mean of the EstimatorSpec's loss.
    metrics["loss"] = tf.metrics.mean(t["total_loss"])

    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        _restore(sess, run["ckpt"])
        num_batches = 0
        for feed in _batches(examples, int(run["batch_size"]), features):
            sess.run({k: v[1] for k, v in metrics.items()}, feed)
            num_batches += 1
        results = sess.run({k: v[0] for k, v in metrics.items()})
    results = {k: float(v) for k, v in results.items()}
    results["num_batches"] = num_batches
    reader = tf.train.load_checkpoint(run["ckpt"])
    if reader.has_tensor("global_step"):
        results["global_step"] = int(reader.get_tensor("global_step"))
    with open(run["out"], "w") as f:
        json.dump(results, f)


def predict(run):
    task = run["task"]
    config = modeling.BertConfig.from_json_file(run["config"])
    examples = _load(run["examples"])
    examples = {k: v for k, v in examples.items() if k in INPUTS}  # the model inputs only
    features = _placeholders(task, examples, leading_axis=False)
    t = GRAPHS[task](run, features, False, config)
    keys = ("probabilities", "logits") if task == "classifier" else ("start_logits", "end_logits")
    rows = {k: [] for k in keys}
    with tf.Session() as sess:
        _restore(sess, run["ckpt"])
        for feed in _batches(examples, int(run["batch_size"]), features):
            values = sess.run({k: t[k] for k in keys}, feed)
            for k in keys:
                rows[k].append(values[k])
    np.savez(run["out"], **{k: np.concatenate(v) for k, v in rows.items()})


MODES = {"train": train, "eval": evaluate, "predict": predict}


def main(argv):
    with open(argv[1]) as f:
        runs = json.load(f)
    for run in runs:
        if run["mode"] not in MODES:
            raise SystemExit("unknown mode %s" % run["mode"])
        with tf.Graph().as_default():
            MODES[run["mode"]](run)


if __name__ == "__main__":
    main(sys.argv)
