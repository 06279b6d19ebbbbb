r"""The original side of bench/finetune_quality.py: Google's `run_classifier.py`, as its Estimator ran it.

Runs in its OWN process (TF1 graph mode and legacy Keras must never meet the
Keras 3 code), started by bench/finetune_quality.py:

  .venv/bin/python bench/finetune_quality_original.py RUN_JSON

RUN_JSON is a file with one run: {"data_dir", "vocab_file", "bert_config_file",
"init_checkpoint", "output_dir", "seed", "max_seq_length", "train_batch_size",
"eval_batch_size", "learning_rate", "num_train_epochs", "warmup_proportion",
"do_lower_case", "log_steps", "out" (the result .json)}.

What runs is the original pip package `bert` (bert-tensorflow 1.0.4) through
the test shim (tests/original/shim.py), doing what its `main()` did for
`--task_name=MRPC --do_train --do_eval` on CPU:

  * `MrpcProcessor` reads train.tsv / dev.tsv, the original `FullTokenizer`
    and `file_based_convert_examples_to_features` write train.tf_record /
    eval.tf_record to `output_dir`;
  * `num_train_steps = int(len(train_examples) / train_batch_size *
    num_train_epochs)`, `num_warmup_steps = int(num_train_steps *
    warmup_proportion)`;
  * TRAIN: the original `model_fn_builder(...)` model_fn (create_model with
    dropout on, `init_from_checkpoint`, `optimization.create_optimizer`) on the
    original `file_based_input_fn_builder` batches (repeat, shuffle buffer 100,
    drop_remainder), one `train_op` per step in a `tf.Session`; the graph seed
    is `tf.set_random_seed(seed)` (the Estimator's `RunConfig.tf_random_seed`):
    it fixes the head's initial weights, the shuffle order and the dropout
    masks of this seed;
  * EVAL: a new graph, the EVAL model_fn restored from the trained checkpoint,
    the original `metric_fn` (`eval_accuracy`, `eval_loss`) and the
    Estimator's `loss` over every dev example once in batches of
    `eval_batch_size` (the last one smaller, drop_remainder=False).

Two stand-ins, both outside the maths: `tf.estimator` is gone in TF 2.21, so
`tf.estimator.ModeKeys` and `tf.estimator.tpu.TPUEstimatorSpec` (which the
model_fn only builds and returns) are replaced by plain values; and the
`global_step += 1` of the train op runs after the update
(tests/original/shim.py `pin_global_step_increment`: the original's op had
no ordering, a race on the learning rate of each step).
Unlike tests/original/finetuning_oracle.py, the head's dropout stays ON.
"""

import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

from tests.original import shim  # noqa: E402  (must come first)

import json  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

from bert import modeling  # noqa: E402
from bert import run_classifier  # noqa: E402
from bert import tokenization  # noqa: E402

tf = shim.tf1


class _ModeKeys(object):
    """tf.estimator.ModeKeys's values."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


def _estimator_spec(**kwargs):
    """Stands in for tf.estimator.tpu.TPUEstimatorSpec: the model_fn's outputs as a dict."""
    return kwargs


def _install_estimator_stand_in():
    if not hasattr(tf, "estimator"):
        tf.estimator = types.SimpleNamespace(
            ModeKeys=_ModeKeys, tpu=types.SimpleNamespace(TPUEstimatorSpec=_estimator_spec))


def _log(message, *args):
    sys.stderr.write(("[original] " + message + "\n") % args)
    sys.stderr.flush()


def run(r):
    _install_estimator_stand_in()
    tf.logging.set_verbosity(tf.logging.WARN)
    out_dir = r["output_dir"]
    tf.gfile.MakeDirs(out_dir)
    bert_config = modeling.BertConfig.from_json_file(r["bert_config_file"])
    processor = run_classifier.MrpcProcessor()
    label_list = processor.get_labels()
    tokenizer = tokenization.FullTokenizer(vocab_file=r["vocab_file"],
                                           do_lower_case=r["do_lower_case"])
    max_seq_length = int(r["max_seq_length"])
    batch_size = int(r["train_batch_size"])

    # main(): the schedule and the training records.
    train_examples = processor.get_train_examples(r["data_dir"])
    num_train_steps = int(len(train_examples) / batch_size * float(r["num_train_epochs"]))
    num_warmup_steps = int(num_train_steps * float(r["warmup_proportion"]))
    train_file = os.path.join(out_dir, "train.tf_record")
    run_classifier.file_based_convert_examples_to_features(
        train_examples, label_list, max_seq_length, tokenizer, train_file)
    model_fn = run_classifier.model_fn_builder(
        bert_config=bert_config, num_labels=len(label_list),
        init_checkpoint=r["init_checkpoint"], learning_rate=float(r["learning_rate"]),
        num_train_steps=num_train_steps, num_warmup_steps=num_warmup_steps,
        use_tpu=False, use_one_hot_embeddings=False)
    ckpt = os.path.join(out_dir, "model.ckpt")

    # estimator.train(input_fn=train_input_fn, max_steps=num_train_steps)
    start = time.time()
    with tf.Graph().as_default():
        tf.set_random_seed(int(r["seed"]))
        global_step = tf.train.get_or_create_global_step()
        train_input_fn = run_classifier.file_based_input_fn_builder(
            input_file=train_file, seq_length=max_seq_length, is_training=True,
            drop_remainder=True)
        features = tf.data.make_one_shot_iterator(
            train_input_fn({"batch_size": batch_size})).get_next()
        spec = model_fn(features, None, _ModeKeys.TRAIN, {"batch_size": batch_size})
        shim.pin_global_step_increment(spec["train_op"])
        # What model_fn's init_from_checkpoint loaded (it logs it at INFO only;
        # a checkpoint sharing nothing would silently train from scratch).
        _, initialized = modeling.get_assignment_map_from_checkpoint(
            tf.trainable_variables(), r["init_checkpoint"])
        num_initialized = sum(1 for name in initialized if not name.endswith(":0"))
        if not num_initialized:
            raise SystemExit("%s shares no variable with the graph" % r["init_checkpoint"])
        _log("init_from_checkpoint: %d of %d trainable variables", num_initialized,
             len(tf.trainable_variables()))
        saver = tf.train.Saver(tf.global_variables())
        losses = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            build_seconds = time.time() - start
            train_start = time.time()
            logged = 0
            for step in range(num_train_steps):
                loss, _ = sess.run([spec["loss"], spec["train_op"]])
                losses.append(float(loss))
                if (step + 1) % int(r["log_steps"]) == 0 or step + 1 == num_train_steps:
                    # The mean since the last log, as bert_tf's progress log.
                    chunk = losses[logged:]
                    logged = len(losses)
                    _log("step %d/%d: loss = %.6g (mean of the last %d)", step + 1,
                         num_train_steps, sum(chunk) / len(chunk), len(chunk))
            train_seconds = time.time() - train_start
            final_step = int(sess.run(global_step))
            ckpt = saver.save(sess, ckpt, global_step=final_step, write_meta_graph=False)

    # estimator.evaluate(input_fn=eval_input_fn, steps=None)
    eval_examples = processor.get_dev_examples(r["data_dir"])
    eval_file = os.path.join(out_dir, "eval.tf_record")
    run_classifier.file_based_convert_examples_to_features(
        eval_examples, label_list, max_seq_length, tokenizer, eval_file)
    eval_batch_size = int(r["eval_batch_size"])
    with tf.Graph().as_default():
        eval_input_fn = run_classifier.file_based_input_fn_builder(
            input_file=eval_file, seq_length=max_seq_length, is_training=False,
            drop_remainder=False)
        features = tf.data.make_one_shot_iterator(
            eval_input_fn({"batch_size": eval_batch_size})).get_next()
        tf.train.get_or_create_global_step()
        spec = model_fn(features, None, _ModeKeys.EVAL, {"batch_size": eval_batch_size})
        metric_fn, tensors = spec["eval_metrics"]
        metrics = metric_fn(*tensors)
        metrics["loss"] = tf.metrics.mean(spec["loss"])
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            tf.train.Saver(tf.global_variables()).restore(sess, ckpt)
            num_batches = 0
            while True:
                try:
                    sess.run({k: v[1] for k, v in metrics.items()})
                except tf.errors.OutOfRangeError:
                    break
                num_batches += 1
            results = {k: float(v) for k, v in sess.run({k: v[0] for k, v in metrics.items()}).items()}
    results.update({
        "global_step": final_step, "num_train_steps": num_train_steps,
        "num_warmup_steps": num_warmup_steps, "num_initialized_variables": num_initialized,
        "num_eval_examples": len(eval_examples),
        "num_eval_batches": num_batches, "final_train_loss": sum(losses[-20:]) / len(losses[-20:]),
        "train_seconds": train_seconds, "build_seconds": build_seconds,
        "checkpoint": ckpt, "tensorflow": tf.__version__,
    })
    _log("eval_accuracy = %.4f, eval_loss = %.5f (%d examples)", results["eval_accuracy"],
         results["eval_loss"], len(eval_examples))
    with open(r["out"], "w") as f:
        json.dump(results, f)


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    with open(argv[1]) as f:
        run(json.load(f))


if __name__ == "__main__":
    main(sys.argv)
