r"""Throughput of one BERT pre-training step: bert_tf vs TF Model Garden, same machine, same run.

  .venv/bin/python bench/pretraining_bench.py --peer_python=/tmp/mg-venv/bin/python

Both sides train BERT-base (configs/uncased_L-12_H-768_A-12.json: 110,106,428
parameters with the heads) on the same random full-length batches (seq 128,
20 masked positions, batch 8 by default) with the original's optimizer set-up
(AdamWeightDecay, clip_by_global_norm 1.0, warmup + linear decay), steps run
inside a `tf.range` host loop in one tf.function, no XLA, float32:

  ours:  `bert_tf.training.Trainer` + `PretrainingTask` (what
         tools/run_pretraining.py runs), in a child process of this venv;
  peer:  Model Garden's legacy BERT recipe (bench/pretraining_bench_model_garden.py),
         in a child process of the peer's own venv (`--peer_python`).

The two children run one after the other, `--rounds` times alternating, and
the best round of each is reported (the least disturbed by other load).
A first host loop of `--warmup_steps` (tracing, graph optimization) is not timed.

Setting up the peer's venv (kept out of this project's requirements; Model
Garden pins another TF, so it is installed without dependencies and shares
this project's TF 2.21 through a .pth file):

  python3.11 -m venv /tmp/mg-venv
  echo $PWD/.venv/lib/python3.11/site-packages \
      > /tmp/mg-venv/lib/python3.11/site-packages/zz_project_venv.pth
  /tmp/mg-venv/bin/pip install --no-deps tf-models-official==2.20.0 gin-config \
      pyyaml scipy tensorflow-hub
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


def _ours(args):
    """Child: times bert_tf's training loop; prints one JSON line."""
    sys.path.insert(0, REPO_ROOT)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import numpy as np
    import tensorflow as tf
    from bert_tf import distribute
    from bert_tf import training
    from bert_tf.config import BertConfig
    from bert_tf.tasks import PretrainingTask

    config = BertConfig.from_json_file(args.bert_config_file)
    rng = np.random.RandomState(0)
    b, s, p = args.batch_size, args.seq_length, args.max_predictions_per_seq
    positions = np.stack([np.sort(rng.choice(np.arange(1, s), p, replace=False))
                          for _ in range(b)])
    features = {
        "input_ids": rng.randint(1, config.vocab_size, (b, s)),
        "input_mask": np.ones((b, s)),
        "segment_ids": (np.arange(s) >= s // 2)[None].repeat(b, 0),
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.randint(1, config.vocab_size, (b, p)),
        "next_sentence_labels": rng.randint(0, 2, (b, 1)),
    }
    features = {k: tf.constant(v.astype(np.int32)) for k, v in features.items()}
    features["masked_lm_weights"] = tf.ones((b, p), tf.float32)

    def dataset_fn(input_context):
        return tf.data.Dataset.from_tensors(features).repeat()

    start = time.time()
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = training.Trainer(
            distribute.get_strategy("off"),
            PretrainingTask(config, s, p), output_dir,
            mixed_precision=args.mixed_precision, use_xla=args.use_xla)
        build_seconds = time.time() - start
        total = args.warmup_steps + args.steps
        # The first host loop (warmup_steps, with the tracing) ends at the
        # checkpoint step; the second one (steps) is timed.
        history = trainer.train(dataset_fn, b, total, 1e-4, 10,
                                save_checkpoints_steps=args.warmup_steps,
                                iterations_per_loop=total)
    timed = history[-1]
    print(json.dumps({
        "implementation": "bert_tf Trainer + PretrainingTask",
        "seconds_per_step": 1.0 / timed["steps_per_sec"],
        "examples_per_sec": timed["examples_per_sec"],
        "warmup_seconds": len(history[0]["losses"]) / history[0]["steps_per_sec"],
        "build_seconds": build_seconds,
        "num_parameters": int(sum(np.prod(v.shape) for v in trainer.model.trainable_variables)),
        "loss": timed["loss"], "tensorflow": tf.__version__,
    }))


def _run_child(command, env):
    proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(command), proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer_python", default="/tmp/mg-venv/bin/python",
                        help="python of a venv with tf-models-official (empty: ours only)")
    parser.add_argument("--bert_config_file", default=BERT_BASE)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--use_xla", action="store_true", help="ours only")
    parser.add_argument("--mixed_precision", default=None, help="ours only: bf16 | fp16")
    parser.add_argument("--role", default="driver", choices=["driver", "ours"])
    args = parser.parse_args()
    if args.role == "ours":
        _ours(args)
        return

    common = ["--bert_config_file=%s" % args.bert_config_file,
              "--batch_size=%d" % args.batch_size, "--seq_length=%d" % args.seq_length,
              "--max_predictions_per_seq=%d" % args.max_predictions_per_seq,
              "--warmup_steps=%d" % args.warmup_steps, "--steps=%d" % args.steps]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    ours_command = [sys.executable, os.path.abspath(__file__), "--role=ours"] + common
    if args.use_xla:
        ours_command.append("--use_xla")
    if args.mixed_precision:
        ours_command.append("--mixed_precision=%s" % args.mixed_precision)
    peer_command = None
    if args.peer_python:
        peer_command = [args.peer_python, os.path.join(REPO_ROOT, "bench",
                                                       "pretraining_bench_model_garden.py")]
        peer_command += common
    results = {"ours": [], "peer": []}
    for round_index in range(args.rounds):
        results["ours"].append(_run_child(ours_command, dict(env, KERAS_BACKEND="tensorflow")))
        print("round %d ours: %.3f s/step" % (round_index, results["ours"][-1]["seconds_per_step"]),
              file=sys.stderr)
        if peer_command:
            peer_env = dict(env, TF_USE_LEGACY_KERAS="1")
            peer_env.pop("KERAS_BACKEND", None)
            results["peer"].append(_run_child(peer_command, peer_env))
            print("round %d peer: %.3f s/step"
                  % (round_index, results["peer"][-1]["seconds_per_step"]), file=sys.stderr)

    print("BERT pre-training step, %s, batch %d, seq %d, %d predictions, %d timed steps, "
          "best of %d rounds, %d CPU cores"
          % (os.path.basename(args.bert_config_file), args.batch_size, args.seq_length,
             args.max_predictions_per_seq, args.steps, args.rounds, os.cpu_count()))
    print("| implementation | params | s/step | examples/s | first loop (trace) s |")
    print("|---|---|---|---|---|")
    best = {}
    for side in ("ours", "peer"):
        if not results[side]:
            continue
        best[side] = min(results[side], key=lambda r: r["seconds_per_step"])
        r = best[side]
        print("| %s%s | %d | %.3f | %.2f | %.1f |"
              % (r["implementation"], " (XLA)" if side == "ours" and args.use_xla else "",
                 r["num_parameters"], r["seconds_per_step"], r["examples_per_sec"],
                 r["warmup_seconds"]))
    if "peer" in best:
        print("ours / peer throughput: %.2fx"
              % (best["ours"]["examples_per_sec"] / best["peer"]["examples_per_sec"]))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
