r"""Peak memory of one training step with and without recomputation, and the largest batch
that fits a memory budget either way.

  .venv/bin/python bench/recompute_memory_bench.py [--quick] [--seq_length 512] \
      [--batch_size 8] [--budget_gib 16] [--max_batch 256] [--device auto|cpu|gpu] \
      [--bert_config_file configs/uncased_L-12_H-768_A-12.json]

One training step of `BertPretrainer` (backbone + MLM and NSP heads, random
weights) compiled with the original's optimizer (`create_optimizer`:
AdamWeightDecay, clip by global norm 1.0), `train_on_batch` on a random
full-length batch (masked positions 0.15 x seq rounded up to a multiple of 4),
float32, no XLA, each measurement in a fresh process; once as the original
(every activation kept for the backward pass) and once with
`gradient_checkpointing` (each encoder layer recomputed in the backward pass,
the `--gradient_checkpointing` of the training tools).

Memory: on a GPU (`--device=gpu`, or `auto` when TensorFlow sees one) the
peak of `tf.config.experimental.get_memory_info("GPU:0")` (TensorFlow's
allocator: weights, optimizer slots, activations); on the CPU the process's
peak resident memory (VmHWM: TensorFlow itself, the weights, the slots, the
activations).

The largest batch within `--budget_gib`: batch sizes 1, 2, 4, ... up to
`--max_batch` until one does not fit, then a bisection between the last that
fit and the first that did not; a batch fits when its step runs with its
peak within the budget (on the GPU the process gets only the budget:
`set_logical_device_configuration(memory_limit=...)`, so a batch that does not
fit runs out of memory; on the CPU a process that goes past the budget stops
itself). `--budget_gib=0` skips the search.

`--quick` (what `make bench` runs): seq 128, batch 4, no search.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402

BERT_BASE = os.path.join(REPO_ROOT, "configs", "uncased_L-12_H-768_A-12.json")
OVER_BUDGET_EXIT = 3
GIB = 1 << 30


def _stop_past(budget_bytes):
    """Exits the process (status OVER_BUDGET_EXIT) once its resident memory passes the budget."""
    def watch():
        while True:
            if benchlib.status_kb("VmRSS") * 1024 > budget_bytes:
                os._exit(OVER_BUDGET_EXIT)  # pylint: disable=protected-access
            time.sleep(0.02)
    threading.Thread(target=watch, daemon=True).start()


def step(args):
    """Child: one training step; prints one JSON line."""
    sys.path.insert(0, REPO_ROOT)
    import tensorflow as tf
    gpu = args.device == "gpu"
    if gpu and args.budget_bytes:
        tf.config.set_logical_device_configuration(
            tf.config.list_physical_devices("GPU")[0],
            [tf.config.LogicalDeviceConfiguration(memory_limit=args.budget_bytes // (1 << 20))])
    elif args.budget_bytes:
        _stop_past(args.budget_bytes)
    import keras
    import numpy as np
    from bert_tf.modeling.config import BertConfig
    from bert_tf.tasks.pretraining.model import BertPretrainer
    from bert_tf.training import optimization

    config = BertConfig.from_json_file(args.bert_config_file)
    config.gradient_checkpointing = args.gradient_checkpointing
    b, s, p = args.batch_size, args.seq_length, benchlib.num_predictions(args.seq_length)
    rng = np.random.RandomState(0)
    low = min(1000, config.vocab_size // 2)
    features = {
        "input_ids": rng.randint(low, config.vocab_size, (b, s)).astype(np.int32),
        "input_mask": np.ones((b, s), np.int32),
        "segment_ids": (np.arange(s) >= s // 2)[None].repeat(b, 0).astype(np.int32),
        "masked_lm_positions": np.stack([np.sort(rng.choice(np.arange(1, s), p, replace=False))
                                         for _ in range(b)]).astype(np.int32),
        "masked_lm_ids": rng.randint(low, config.vocab_size, (b, p)).astype(np.int32),
        "masked_lm_weights": np.ones((b, p), np.float32),
        "next_sentence_labels": rng.randint(0, 2, (b, 1)).astype(np.int32),
    }
    keras.utils.set_random_seed(0)  # the same weights and dropout masks either way
    model = BertPretrainer(config)
    model.compile(optimizer=optimization.create_optimizer(1e-4, 10000, 100), jit_compile=False)
    inputs = {k: tf.constant(v) for k, v in features.items()}
    if gpu:
        tf.config.experimental.reset_memory_stats("GPU:0")
    rss_built = benchlib.status_kb("VmRSS")
    start = time.perf_counter()
    loss = model.train_on_batch(inputs, return_dict=True)["loss"]
    seconds = time.perf_counter() - start
    peak = (tf.config.experimental.get_memory_info("GPU:0")["peak"] if gpu
            else benchlib.status_kb("VmHWM") * 1024)
    print(json.dumps({"peak_bytes": int(peak), "rss_built_bytes": rss_built * 1024,
                      "seconds": seconds, "loss": float(loss)}))


def run_step(args, gradient_checkpointing, batch_size, budget_bytes=0):
    """A child's result dict, or None when the step did not fit (over budget, out of memory)."""
    command = [sys.executable, os.path.abspath(__file__), "--role=step",
               "--device=%s" % args.device, "--seq_length=%d" % args.seq_length,
               "--batch_size=%d" % batch_size, "--budget_bytes=%d" % budget_bytes,
               "--bert_config_file=%s" % args.bert_config_file]
    if gradient_checkpointing:
        command.append("--gradient_checkpointing")
    env = benchlib.child_env(PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    if args.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    label = "recompute" if gradient_checkpointing else "original"
    if proc.returncode != 0:
        out_of_memory = (proc.returncode in (OVER_BUDGET_EXIT, -9)
                         or "ResourceExhausted" in proc.stderr or "OOM" in proc.stderr)
        if budget_bytes and out_of_memory:
            print("%s batch %d: does not fit" % (label, batch_size), file=sys.stderr)
            return None
        lines = proc.stderr.strip().splitlines() or ["no output"]
        benchlib.fail("%s batch %d failed (exit %d): %s"
                      % (label, batch_size, proc.returncode, lines[-1]))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    fits = not budget_bytes or result["peak_bytes"] <= budget_bytes
    print("%s batch %d: peak %.0f MiB, %.1f s%s" % (
        label, batch_size, result["peak_bytes"] / float(1 << 20), result["seconds"],
        "" if fits else ", over the budget"), file=sys.stderr)
    return result if fits else None


def largest_batch(args, gradient_checkpointing, budget_bytes):
    """The largest batch size <= --max_batch whose step fits the budget (0 if none)."""
    fit, fail = 0, None
    batch = 1
    while batch <= args.max_batch:
        if run_step(args, gradient_checkpointing, batch, budget_bytes) is None:
            fail = batch
            break
        fit = batch
        batch *= 2
    if fail is None:
        fail = args.max_batch + 1
        if fit < args.max_batch:  # the doubling stepped past --max_batch
            if run_step(args, gradient_checkpointing, args.max_batch, budget_bytes) is not None:
                return args.max_batch
            fail = args.max_batch
    while fail - fit > 1:
        middle = (fit + fail) // 2
        if run_step(args, gradient_checkpointing, middle, budget_bytes) is None:
            fail = middle
        else:
            fit = middle
    return fit


def _mib(value):
    return format(value / float(1 << 20), ",.0f")


def main():
    parser = benchlib.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="seq 128, batch 4, no search")
    parser.add_argument("--seq_length", type=int, default=512)
    parser.add_argument("--batch_size", type=int, default=8,
                        help="the batch of the with / without comparison")
    parser.add_argument("--budget_gib", type=float, default=16.0,
                        help="the memory budget of the largest-batch search (0: no search)")
    parser.add_argument("--max_batch", type=int, default=256)
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    parser.add_argument("--bert_config_file", default=BERT_BASE)
    parser.add_argument("--role", default="driver", choices=("driver", "step"))
    parser.add_argument("--gradient_checkpointing", action="store_true")
    parser.add_argument("--budget_bytes", type=int, default=0)
    args = parser.parse_args()
    if args.role == "step":
        step(args)
        return
    if args.quick:
        args.seq_length, args.batch_size, args.budget_gib = 128, 4, 0
    if args.seq_length < 2 or args.batch_size < 1 or args.max_batch < 1 or args.budget_gib < 0:
        parser.error("--seq_length must be >= 2, --batch_size and --max_batch >= 1, "
                     "--budget_gib >= 0")
    if not os.path.isfile(args.bert_config_file):
        parser.error("--bert_config_file: no such file: %s" % args.bert_config_file)
    if args.device == "auto":
        probe = subprocess.run(
            [sys.executable, "-c", "import tensorflow as tf; "
             "print(len(tf.config.list_physical_devices('GPU')))"],
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), capture_output=True, text=True)
        gpus = probe.stdout.strip().splitlines()[-1:] if probe.returncode == 0 else ["0"]
        args.device = "gpu" if gpus and gpus[0] != "0" else "cpu"

    results = {flag: run_step(args, flag, args.batch_size) for flag in (False, True)}
    budget_bytes = int(args.budget_gib * GIB)
    largest = {flag: (largest_batch(args, flag, budget_bytes) if budget_bytes else None)
               for flag in (False, True)}

    memory = ("peak GPU memory (TensorFlow's allocator)" if args.device == "gpu"
              else "peak resident memory of the process (VmHWM)")
    print("%s, one BertPretrainer training step (AdamWeightDecay), float32, no XLA, seq %d, "
          "on the %s; memory: %s" % (os.path.basename(args.bert_config_file), args.seq_length,
                                     args.device.upper(), memory))
    print()
    base = results[False]["peak_bytes"]
    rows = []
    for flag in (False, True):
        r = results[flag]
        rows.append([
            "recompute (`--gradient_checkpointing`)" if flag else "original (no recompute)",
            args.batch_size, _mib(r["peak_bytes"]), "%.2fx" % (r["peak_bytes"] / float(base)),
            _mib(r["rss_built_bytes"]), "%.1f" % r["seconds"],
            "-" if largest[flag] is None else "%d" % largest[flag]])
    budget = "largest batch within %g GiB" % args.budget_gib
    print(benchlib.markdown_table(
        ["", "batch", "peak MiB", "peak / original", "RSS after build MiB",
         "step s (tracing included)", budget], rows))
    print()
    print(json.dumps({"device": args.device, "seq_length": args.seq_length,
                      "batch_size": args.batch_size, "budget_gib": args.budget_gib,
                      "original": results[False], "recompute": results[True],
                      "largest_batch": {"original": largest[False], "recompute": largest[True]}}))


if __name__ == "__main__":
    main()
