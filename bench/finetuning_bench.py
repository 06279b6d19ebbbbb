r"""Throughput of one BERT fine-tuning (classifier) step: bert_tf vs TF Model Garden, same machine, same run.

  .venv/bin/python bench/finetuning_bench.py --peer_python=/tmp/mg-venv/bin/python --original

Every side trains BERT-base (configs/uncased_L-12_H-768_A-12.json) with a
2-label classification head on the pooled output (dropout 0.1) on the same
random full-length sentence-pair batch (seq 128, batch 8 by default), with
the original's optimizer set-up (AdamWeightDecay with weight decay 0.01,
clip_by_global_norm 1.0, warmup + linear decay, lr 2e-5), float32, no XLA:

  ours:     `bert_tf.training.Trainer` + `ClassifierTask` (what
            tools/run_classifier.py runs), the steps inside a `tf.range` host
            loop in one tf.function, in a child process of this venv;
  peer:     Model Garden's legacy BERT classifier recipe
            (bench/finetuning_bench_model_garden.py), a tf.function host loop,
            in a child process of the peer's own venv (`--peer_python`); its
            encoder has `output_range=1` (the last layer computes the [CLS]
            position only); `--peer_full_last_layer` also times it without;
  original: (`--original`) the original TF1 code (pip bert-tensorflow 1.0.4,
            through tests/original/shim.py): `run_classifier.create_model` +
            `optimization.create_optimizer` in a `tf.compat.v1.Session`, one
            `session.run(train_op)` per step, as its Estimator ran them on CPU/GPU.

The children run one after the other, `--rounds` times alternating, and the
best round of each is reported (the least disturbed by other load). The first
`--warmup_steps` (tracing, graph optimization) are not timed.

Setting up the peer's venv (kept out of this project's requirements; Model
Garden pins another TF, so it is installed without dependencies and shares
this project's TF 2.21 through a .pth file): see bench/pretraining_bench.py.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BERT_BASE = os.path.join(REPO_ROOT, "configs", "uncased_L-12_H-768_A-12.json")


def random_batch(batch_size, seq_length, num_labels, vocab_size, seed=0):
    """numpy int32 input_ids, input_mask, segment_ids [batch, seq], label_ids [batch].

    The same values as bench/finetuning_bench_model_garden.py's `random_features`.
    """
    import numpy as np  # pylint: disable=g-import-not-at-top
    rng = np.random.RandomState(seed)
    batch = {
        "input_ids": rng.randint(1, vocab_size, (batch_size, seq_length)),
        "input_mask": np.ones((batch_size, seq_length)),
        "segment_ids": (np.arange(seq_length) >= seq_length // 2)[None].repeat(batch_size, 0),
    }
    batch = {k: v.astype(np.int32) for k, v in batch.items()}
    batch["label_ids"] = rng.randint(0, num_labels, (batch_size,)).astype(np.int32)
    return batch


def _ours(args):
    """Child: times bert_tf's training loop; prints one JSON line."""
    sys.path.insert(0, REPO_ROOT)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import numpy as np  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_tf.training import distribute  # pylint: disable=g-import-not-at-top
    from bert_tf import training  # pylint: disable=g-import-not-at-top
    from bert_tf.modeling.config import BertConfig  # pylint: disable=g-import-not-at-top
    from bert_tf.models import BertClassifier  # pylint: disable=g-import-not-at-top

    config = BertConfig.from_json_file(args.bert_config_file)
    b = args.batch_size
    batch = random_batch(b, args.seq_length, args.num_labels, config.vocab_size)
    features = {k: tf.constant(v) for k, v in batch.items()}
    features["is_real_example"] = tf.ones((b,), tf.int32)

    def dataset_fn(input_context):
        return tf.data.Dataset.from_tensors(features).repeat()

    total = args.warmup_steps + args.steps
    start = time.time()
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = training.Trainer(
            distribute.get_strategy("off"), lambda: BertClassifier(config, args.num_labels),
            output_dir,
            use_xla=args.use_xla)
        build_seconds = time.time() - start
        # A `total`-step run (warmup 10%, as run_classifier's default): the host
        # loops up to the checkpoint step (warmup_steps, the tracing in the first)
        # are the warm-up; the loops after it (steps) are timed.
        history = trainer.train(dataset_fn, b, total, args.learning_rate, max(1, total // 10),
                                save_checkpoints_steps=args.warmup_steps,
                                iterations_per_loop=total)
    def seconds(loops):
        return sum(len(h["losses"]) / h["steps_per_sec"] for h in loops)

    warmup = [h for h in history if h["step"] <= args.warmup_steps]
    timed = [h for h in history if h["step"] > args.warmup_steps]
    seconds_per_step = seconds(timed) / sum(len(h["losses"]) for h in timed)
    print(json.dumps({
        "implementation": "bert_tf Trainer + ClassifierTask",
        "seconds_per_step": seconds_per_step,
        "examples_per_sec": b / seconds_per_step,
        "warmup_seconds": seconds(warmup),
        "build_seconds": build_seconds,
        "num_parameters": int(sum(np.prod(v.shape) for v in trainer.model.trainable_variables)),
        "loss": timed[-1]["loss"], "tensorflow": tf.__version__,
    }))


def _original(args):
    """Child: times the original TF1 graph (create_model + create_optimizer) in a Session."""
    sys.path.insert(0, REPO_ROOT)
    from tests.original import shim  # pylint: disable=g-import-not-at-top  (first)
    import numpy as np  # pylint: disable=g-import-not-at-top
    from bert import modeling  # pylint: disable=g-import-not-at-top
    from bert import optimization  # pylint: disable=g-import-not-at-top
    from bert import run_classifier  # pylint: disable=g-import-not-at-top
    tf = shim.tf1

    config = modeling.BertConfig.from_json_file(args.bert_config_file)
    b = args.batch_size
    batch = random_batch(b, args.seq_length, args.num_labels, config.vocab_size)
    total = args.warmup_steps + args.steps
    start = time.time()
    features = {k: tf.constant(v) for k, v in batch.items()}
    total_loss, _, _, _ = run_classifier.create_model(
        config, True, features["input_ids"], features["input_mask"], features["segment_ids"],
        features["label_ids"], args.num_labels, False)
    train_op = optimization.create_optimizer(total_loss, args.learning_rate, total,
                                             max(1, total // 10), False)
    if hasattr(shim, "pin_global_step_increment"):  # update t uses lr(t) (no effect on cost)
        shim.pin_global_step_increment(train_op)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        build_seconds = time.time() - start
        start = time.time()
        for _ in range(args.warmup_steps):
            sess.run(train_op)
        first_seconds = time.time() - start
        start = time.time()
        losses = [sess.run([total_loss, train_op])[0] for _ in range(args.steps)]
        seconds = time.time() - start
    print(json.dumps({
        "implementation": "original bert-tensorflow 1.0.4 create_model + create_optimizer "
                          "(TF1 Session)",
        "seconds_per_step": seconds / args.steps,
        "examples_per_sec": args.steps * b / seconds,
        "warmup_seconds": first_seconds, "build_seconds": build_seconds,
        "num_parameters": int(sum(np.prod(v.shape.as_list())
                                  for v in tf.trainable_variables())),
        "loss": float(np.mean(losses)), "tensorflow": tf.__version__,
    }))


def _run_child(command, env):
    proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(command), proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="what `make bench` runs: 1 round of 3 steps, with the original")
    mode.add_argument("--full", action="store_true", help="the flags' defaults")
    peers = os.path.join(REPO_ROOT, "bench", ".peers", "bin", "python")
    parser.add_argument("--peer_python", default=peers if os.path.exists(peers) else "",
                        help="python of a venv with tf-models-official (default: "
                             "bench/.peers/bin/python, from bench/setup_peers.sh; empty: no peer)")
    parser.add_argument("--original", action="store_true",
                        help="also time the original TF1 code (via tests/original/shim.py)")
    parser.add_argument("--peer_full_last_layer", action="store_true",
                        help="also time the peer without output_range=1 (its last layer "
                             "then computes every position, as ours and the original do)")
    parser.add_argument("--bert_config_file", default=BERT_BASE)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--num_labels", type=int, default=2)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--use_xla", action="store_true", help="ours only")
    parser.add_argument("--role", default="driver", choices=["driver", "ours", "original"])
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps, args.original = 1, 3, True
    if args.peer_python and not os.path.exists(args.peer_python):
        parser.error("--peer_python: no such interpreter: %s" % args.peer_python)
    if args.role == "ours":
        _ours(args)
        return
    if args.role == "original":
        _original(args)
        return

    common = ["--bert_config_file=%s" % args.bert_config_file,
              "--batch_size=%d" % args.batch_size, "--seq_length=%d" % args.seq_length,
              "--num_labels=%d" % args.num_labels, "--learning_rate=%g" % args.learning_rate,
              "--warmup_steps=%d" % args.warmup_steps, "--steps=%d" % args.steps]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("KERAS_BACKEND", None)
    env.pop("TF_USE_LEGACY_KERAS", None)
    this = os.path.abspath(__file__)
    sides = [("ours", [sys.executable, this, "--role=ours"] + common
              + (["--use_xla"] if args.use_xla else []), dict(env, KERAS_BACKEND="tensorflow"))]
    if args.peer_python:
        sides.append(("peer", [args.peer_python, os.path.join(
            REPO_ROOT, "bench", "finetuning_bench_model_garden.py")] + common,
            dict(env, TF_USE_LEGACY_KERAS="1")))
    if args.peer_python and args.peer_full_last_layer:
        sides.append(("peer_full", [args.peer_python, os.path.join(
            REPO_ROOT, "bench", "finetuning_bench_model_garden.py"), "--full_last_layer"]
            + common, dict(env, TF_USE_LEGACY_KERAS="1")))
    if args.original:
        sides.append(("original", [sys.executable, this, "--role=original"] + common, env))
    results = {name: [] for name, _, _ in sides}
    for round_index in range(args.rounds):
        for name, command, side_env in sides:
            results[name].append(_run_child(command, side_env))
            print("round %d %s: %.3f s/step" % (round_index, name,
                                                 results[name][-1]["seconds_per_step"]),
                  file=sys.stderr, flush=True)

    print("BERT fine-tuning (classifier) step, %s, batch %d, seq %d, %d labels, %d timed steps, "
          "best of %d rounds, %d CPU cores"
          % (os.path.basename(args.bert_config_file), args.batch_size, args.seq_length,
             args.num_labels, args.steps, args.rounds, os.cpu_count()))
    print("| implementation | params | s/step | examples/s | first loop (trace) s |")
    print("|---|---|---|---|---|")
    best = {}
    for name, _, _ in sides:
        best[name] = min(results[name], key=lambda r: r["seconds_per_step"])
        r = best[name]
        print("| %s%s | %d | %.3f | %.2f | %.1f |"
              % (r["implementation"], " (XLA)" if name == "ours" and args.use_xla else "",
                 r["num_parameters"], r["seconds_per_step"], r["examples_per_sec"],
                 r["warmup_seconds"]))
    for name in ("peer", "peer_full", "original"):
        if name in best:
            print("ours / %s throughput: %.2fx"
                  % (name, best["ours"]["examples_per_sec"] / best[name]["examples_per_sec"]))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
