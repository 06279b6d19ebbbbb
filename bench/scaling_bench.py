r"""How BERT-base's cost grows with sequence length and batch: time, throughput, peak memory.

  .venv/bin/python bench/scaling_bench.py [--quick] [--precisions fp32,bf16]
      [--warmup 1] [--steps 3] [--points forward:fp32:128:8,train:fp32:512:8]

BERT-base (configs/uncased_L-12_H-768_A-12.json), random weights, on random
full-length batches (ids 1,000-30,521, every position real, a 50/50 segment
split), no XLA:

  forward  `BertModel` under one tf.function, `training=False`, returning
           the pooled output (inference);
  train    one training step of `BertPretrainer` (backbone + MLM and NSP
           heads) compiled with the original's optimizer
           (`optimization.create_optimizer`: AdamWeightDecay, clip by global
           norm 1.0, warmup + linear decay), `train_on_batch`: the trainer's
           replica step; masked positions 0.15 x seq rounded up to a
           multiple of 4 (20 at 128, 40 at 256, 80 at 512).

Points (each in a fresh process, one after the other): seq 128/256/512 at
batch 8 and batch 1/8/32/64 at seq 128, forward and train, and forward at seq
512 batch 64, in each of `--precisions` (bf16: Keras's mixed_bfloat16 policy,
as `--mixed_precision=bf16`; its points are batch 8 at each length and batch
64 at seq 128). `--quick`: forward fp32 at seq 128/512 batch 8 and batch 1/64
seq 128, train fp32 at seq 128 batch 8 and 32, 1 warm-up + 2 timed steps
(about 3 minutes on 2 cores). `--points` picks any list of
MODE:PRECISION:SEQ:BATCH.

Per point: `--warmup` untimed steps (tracing included), then `--steps` timed
steps, each timed alone (the result fetched to the host); reported: the median
and spread (min-max) of the step time, sequences/s and tokens/s at the median,
the process's peak resident memory (VmHWM: TensorFlow, the weights, the
optimizer's slots, the activations; the whole process) and its resident
memory after the model was built (before the first step), and time and peak
memory relative to the point at seq 128 batch 8 of the same mode and precision
when it was run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402
BERT_BASE = os.path.join(REPO_ROOT, "configs", "uncased_L-12_H-768_A-12.json")
MODES = ("forward", "train")
PRECISIONS = ("fp32", "bf16")


def default_points(precisions):
    points = []
    for precision in precisions:
        if precision == "fp32":
            shapes = [(128, 8), (256, 8), (512, 8), (128, 1), (128, 32), (128, 64)]
            extra = [("forward", 512, 64)]
        else:
            shapes = [(128, 8), (256, 8), (512, 8), (128, 64)]
            extra = []
        for mode in MODES:
            points += [(mode, precision, seq, batch) for seq, batch in shapes]
        points += [(mode, precision, seq, batch) for mode, seq, batch in extra]
    return points


QUICK_POINTS = [("forward", "fp32", 128, 8), ("forward", "fp32", 512, 8),
                ("forward", "fp32", 128, 1), ("forward", "fp32", 128, 64),
                ("train", "fp32", 128, 8), ("train", "fp32", 128, 32)]


def point(args):
    """Child: one (mode, precision, seq, batch); prints one JSON line."""
    sys.path.insert(0, REPO_ROOT)
    import numpy as np
    import tensorflow as tf
    from bert_tf.modeling.config import BertConfig
    from bert_tf.modeling import precision

    config = BertConfig.from_json_file(args.bert_config_file)
    b, s = args.batch_size, args.seq_length
    rng = np.random.RandomState(0)
    features = {
        "input_ids": rng.randint(1000, config.vocab_size, (b, s)).astype(np.int32),
        "input_mask": np.ones((b, s), np.int32),
        "segment_ids": (np.arange(s) >= s // 2)[None].repeat(b, 0).astype(np.int32),
    }
    mixed = None if args.precision == "fp32" else args.precision
    if args.mode == "forward":
        from bert_tf.modeling.bert_model import BertModel
        with precision.dtype_policy(mixed):
            model = BertModel(config)

        @tf.function
        def step(input_ids, input_mask, segment_ids):
            return model(input_ids, input_mask=input_mask, token_type_ids=segment_ids,
                         training=False)["pooled_output"]

        inputs = [tf.constant(features[k]) for k in ("input_ids", "input_mask", "segment_ids")]

        def run():
            return step(*inputs).numpy()
    else:
        from bert_tf.training import optimization
        from bert_tf.tasks.pretraining.model import BertPretrainer
        p = benchlib.num_predictions(s)
        features["masked_lm_positions"] = np.stack(
            [np.sort(rng.choice(np.arange(1, s), p, replace=False)) for _ in range(b)]
        ).astype(np.int32)
        features["masked_lm_ids"] = rng.randint(1000, config.vocab_size, (b, p)).astype(np.int32)
        features["masked_lm_weights"] = np.ones((b, p), np.float32)
        features["next_sentence_labels"] = rng.randint(0, 2, (b, 1)).astype(np.int32)
        with precision.dtype_policy(mixed):
            model = BertPretrainer(config)
        model.compile(optimizer=optimization.create_optimizer(1e-4, 10000, 100),
                      jit_compile=False)
        inputs = {k: tf.constant(v) for k, v in features.items()}

        def run():
            return model.train_on_batch(inputs, return_dict=True)

    rss_built = benchlib.status_kb("VmRSS")
    seconds = []
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        run()
        if i >= args.warmup:
            seconds.append(time.perf_counter() - start)
    print(json.dumps({"seconds": seconds, "rss_built_kb": rss_built,
                      "vmhwm_kb": benchlib.status_kb("VmHWM"),
                      "num_predictions": benchlib.num_predictions(s) if args.mode == "train" else 0}))


def parse_points(text):
    points = []
    for item in text.split(","):
        parts = item.split(":")
        try:
            mode, precision, seq, batch = parts
            seq, batch = int(seq), int(batch)
        except ValueError:
            raise SystemExit("scaling_bench: --points: MODE:PRECISION:SEQ:BATCH, got %r" % item)
        if mode not in MODES or precision not in PRECISIONS or seq < 2 or batch < 1:
            raise SystemExit("scaling_bench: --points: %r: MODE in %s, PRECISION in %s, "
                             "SEQ >= 2, BATCH >= 1" % (item, MODES, PRECISIONS))
        points.append((mode, precision, seq, batch))
    return points


def run_point(args, mode, precision, seq, batch):
    command = [sys.executable, os.path.abspath(__file__), "--role=point",
               "--mode=%s" % mode, "--precision=%s" % precision,
               "--seq_length=%d" % seq, "--batch_size=%d" % batch,
               "--warmup=%d" % args.warmup, "--steps=%d" % args.steps,
               "--bert_config_file=%s" % args.bert_config_file]
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, KERAS_BACKEND="tensorflow",
               TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or ["no output"]
        raise SystemExit("scaling_bench: %s %s seq %d batch %d failed: %s"
                         % (mode, precision, seq, batch, lines[-1]))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_seconds"] = time.perf_counter() - start
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="6 fp32 points, 1 warm-up + 2 timed steps (about 3 minutes)")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--points", default="", help="MODE:PRECISION:SEQ:BATCH,... "
                        "(instead of the default points)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--bert_config_file", default=BERT_BASE)
    parser.add_argument("--role", default="driver", choices=("driver", "point"))
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--precision", choices=PRECISIONS)
    parser.add_argument("--seq_length", type=int)
    parser.add_argument("--batch_size", type=int)
    args = parser.parse_args()
    if args.role == "point":
        point(args)
        return
    if args.warmup < 0 or args.steps < 1:
        raise SystemExit("scaling_bench: --warmup must be >= 0 and --steps >= 1")
    if not os.path.isfile(args.bert_config_file):
        raise SystemExit("scaling_bench: --bert_config_file: no such file: %s"
                         % args.bert_config_file)
    if args.points:
        points = parse_points(args.points)
    elif args.quick:
        points, args.warmup, args.steps = QUICK_POINTS, 1, 2
    else:
        precisions = [p for p in args.precisions.split(",") if p]
        if not precisions or set(precisions) - set(PRECISIONS):
            raise SystemExit("scaling_bench: --precisions: fp32 and/or bf16, got %r"
                             % args.precisions)
        points = default_points(precisions)

    results = {}
    for key in points:
        results[key] = run_point(args, *key)
        r = results[key]
        print("%s %s seq %d batch %d: %s s/step, VmHWM %.0f MB (%.0f s in all)"
              % (key + (", ".join("%.3f" % x for x in r["seconds"]),
                        r["vmhwm_kb"] / 1024.0, r["process_seconds"])), file=sys.stderr)

    print("BERT-base (%s), random full-length batches, no XLA; %d warm-up + %d timed steps "
          "per point, each point a fresh process; %d CPU cores"
          % (os.path.basename(args.bert_config_file), args.warmup, args.steps, os.cpu_count()))
    for mode in MODES:
        rows = [k for k in points if k[0] == mode]
        if not rows:
            continue
        print()
        print("%s (%s)" % (mode, "BertModel, pooled output, inference" if mode == "forward"
                           else "BertPretrainer train_on_batch, the original's optimizer"))
        print()
        print("| precision | seq | batch | ms / step (median) | spread (min-max) | sequences / s "
              "| tokens / s | peak RSS MB (VmHWM) | RSS after build MB | time / (128, 8) "
              "| peak / (128, 8) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key in rows:
            _, precision, seq, batch = key
            r = results[key]
            median = statistics.median(r["seconds"])
            base = results.get((mode, precision, 128, 8))
            relative = ("%.2fx | %.2fx" % (median / statistics.median(base["seconds"]),
                                           r["vmhwm_kb"] / float(base["vmhwm_kb"]))
                        if base else " | ")
            print("| %s | %d | %d | %s | %s-%s | %.2f | %s | %s | %s | %s |"
                  % (precision, seq, batch, format(1000 * median, ",.0f"),
                     format(1000 * min(r["seconds"]), ",.0f"),
                     format(1000 * max(r["seconds"]), ",.0f"), batch / median,
                     format(batch * seq / median, ",.0f"),
                     format(r["vmhwm_kb"] / 1024.0, ",.0f"),
                     format(r["rss_built_kb"] / 1024.0, ",.0f"), relative))
    print()
    print(json.dumps({"%s:%s:%d:%d" % k: v for k, v in results.items()}))


if __name__ == "__main__":
    main()
