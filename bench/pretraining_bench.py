r"""A BERT pre-training step, float32 and bfloat16, with and without XLA: bert_tf vs TF Model Garden.

  .venv/bin/python bench/pretraining_bench.py [--quick] [--precisions fp32,bf16] \
      [--peer_python=bench/.peers/bin/python] [--batch_size 8] [--seq_length 128]

Every side trains BERT-base with the pre-training heads (110,106,428
parameters; configs/uncased_L-12_H-768_A-12.json) on the same random
full-length batch (seq 128, 20 masked positions, batch 8 by default) with the
original's optimizer set-up (AdamWeightDecay 0.01, clip_by_global_norm 1.0,
warmup + linear decay), dropout on, steps inside one `tf.range` host loop:

  bert_tf       `Trainer` + `PretrainingTask`, the train loop `tools/run_pretraining.py`
                runs; without and with `--use_xla` (the whole step compiled,
                the optimizer update included); bf16 is `--mixed_precision=bf16`;
  Model Garden  its legacy recipe (bench/pretraining_bench_model_garden.py:
                `bert_models.pretrain_model`, its AdamWeightDecay,
                `model_training_utils`' host loop), in the peers' venv
                (`bench/setup_peers.sh`); bf16 is tf-keras' `mixed_bfloat16`
                policy. Without a peers' venv, bert_tf only.

Each (implementation, precision, XLA) runs in its own process, which builds
the model and runs `--warmup` steps (tracing, XLA compilation) once; the
processes of one precision are alive together, and `--rounds` rounds alternate
between them (the order reversed every other round), one host loop of
`--steps` steps per row and round. A row's figure is the median over rounds of
the seconds per step, its spread the min-max over rounds, its ratio against
Model Garden in the same precision. `--quick` (what `make bench` runs) leaves
out the `--use_xla` rows (`--xla=both` puts them back).
"""

import os
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402

BERT_BASE = os.path.join(REPO, "configs", "uncased_L-12_H-768_A-12.json")
PEERS_PYTHON = os.path.join(REPO, "bench", ".peers", "bin", "python")
# Quick mode leaves out the --use_xla processes (slower on a CPU, and each
# compiles for about 45 s) and spends that time on a third round instead.
MODES = {"quick": dict(rounds=3, steps=2, warmup=2, xla="off"),
         "full": dict(rounds=4, steps=5, warmup=2, xla="both")}
# (implementation, use_xla): the processes of each precision, in this order.
PROCESSES = [("bert_tf", False), ("bert_tf", True), ("model_garden", False)]
LABELS = {"bert_tf": "bert_tf Trainer + PretrainingTask",
          "model_garden": "TF Model Garden 2.20.0 legacy BertPretrainer + its AdamWeightDecay"}
# The goal, checked against the table: the best bert_tf row over Model Garden.
MIN_VS_MODEL_GARDEN = 1.1


def random_batch(batch_size, seq_length, max_predictions, vocab_size, seed=0):
    """A full-length pre-training batch as NumPy int32 arrays (the original's feature names)."""
    import numpy as np
    rng = np.random.RandomState(seed)
    positions = np.stack([np.sort(rng.choice(np.arange(1, seq_length), max_predictions,
                                             replace=False)) for _ in range(batch_size)])
    features = {
        "input_ids": rng.randint(1, vocab_size, (batch_size, seq_length)),
        "input_mask": np.ones((batch_size, seq_length)),
        "segment_ids": (np.arange(seq_length) >= seq_length // 2)[None].repeat(batch_size, 0),
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.randint(1, vocab_size, (batch_size, max_predictions)),
        "masked_lm_weights": np.ones((batch_size, max_predictions)),
        "next_sentence_labels": rng.randint(0, 2, (batch_size, 1)),
    }
    return {k: v.astype(np.int32) for k, v in features.items()}


def _bert_tf(args, output_dir):
    """bert_tf's train loop: returns (info, run(num_steps) -> last loss)."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    sys.path.insert(0, REPO)
    import numpy as np
    import tensorflow as tf
    from bert_tf.training import distribute
    from bert_tf import training
    from bert_tf.modeling.config import BertConfig
    from bert_tf.models import BertPretrainer

    config = BertConfig.from_json_file(args.bert_config_file)
    features = random_batch(args.batch_size, args.seq_length, args.max_predictions_per_seq,
                            config.vocab_size)
    features = {k: tf.constant(v) for k, v in features.items()}
    features["masked_lm_weights"] = tf.cast(features["masked_lm_weights"], tf.float32)
    trainer = training.Trainer(
        distribute.get_strategy("off"),
        lambda: BertPretrainer(config), output_dir,
        mixed_precision="bf16" if args.precision == "bf16" else None, use_xla=args.use_xla)
    # What Trainer.train sets up before its first host loop (run_pretraining's flags).
    trainer._create_optimizer(1e-4, 1000, 10, "adamw")  # pylint: disable=protected-access
    train_loop = trainer._train_loop(1)  # pylint: disable=protected-access
    iterator = iter(trainer.strategy.distribute_datasets_from_function(
        lambda _: tf.data.Dataset.from_tensors(features).repeat()))

    def run(num_steps):
        losses, _ = train_loop(iterator, tf.constant(num_steps, tf.int32))
        return float(losses.numpy()[-1])

    params = int(sum(np.prod(v.shape) for v in trainer.model.trainable_variables))
    return {"label": LABELS["bert_tf"], "num_parameters": params,
            "tensorflow": tf.__version__}, run


def worker(args):
    """The child process: builds one side, runs the warm-up steps, then serves timings."""
    with tempfile.TemporaryDirectory() as output_dir:
        start = time.perf_counter()
        if args.impl == "model_garden":
            import pretraining_bench_model_garden  # its own venv: imported only there
            info, run = pretraining_bench_model_garden.build(args, LABELS["model_garden"],
                                                             random_batch)
        else:
            info, run = _bert_tf(args, output_dir)
        info["build_seconds"] = time.perf_counter() - start
        start = time.perf_counter()
        run(args.warmup)
        info["warmup_seconds"] = time.perf_counter() - start

        def handle(request):
            start = time.perf_counter()
            loss = run(request["steps"])
            return {"seconds_per_step": (time.perf_counter() - start) / request["steps"],
                    "loss": loss}

        benchlib.serve(info, handle)


def processes(args):
    """The (implementation, use_xla) processes of a precision: PROCESSES, without XLA's
    under `--xla=off`."""
    return [(impl, use_xla) for impl, use_xla in PROCESSES if args.xla == "both" or not use_xla]


def _start(args, precision, notes):
    workers = []
    for impl, use_xla in processes(args):
        python = sys.executable
        if impl == "model_garden":
            python = benchlib.peer_interpreter(args.peer_python, "Model Garden", notes)
            if python is None:
                continue
        argv = [python, os.path.abspath(__file__), "--role=worker", "--impl=" + impl,
                "--precision=" + precision, "--bert_config_file=" + args.bert_config_file,
                "--batch_size=%d" % args.batch_size, "--seq_length=%d" % args.seq_length,
                "--max_predictions_per_seq=%d" % args.max_predictions_per_seq,
                "--warmup=%d" % args.warmup] + (["--use_xla"] if use_xla else [])
        if impl == "model_garden":
            env = benchlib.child_env(TF_USE_LEGACY_KERAS="1", KERAS_BACKEND=None,
                                     CUDA_VISIBLE_DEVICES="")
        else:
            env = benchlib.child_env(CUDA_VISIBLE_DEVICES="")
        name = "%s %s%s" % (impl, precision, " XLA" if use_xla else "")
        workers.append(((impl, precision, use_xla), benchlib.Worker(name, argv, env, REPO)))
    return workers


def drive(args):
    notes, failures, rows = [], [], []
    for precision in args.precisions:
        # One precision at a time: three BERT-base training processes fit in memory.
        infos, times = benchlib.time_worker_rounds(_start(args, precision, notes), args.rounds,
                                                   args.steps, failures, log=True)
        for key, rounds in times.items():
            rows.append(dict(impl=key[0], prec=key[1], xla=key[2], info=infos[key],
                             **benchlib.summarize(rounds)))
    report(args, rows, notes, failures)
    return 1 if failures else 0


def report(args, rows, notes, failures):
    """Prints the table (BENCHMARKS.md's form), the goals and any failure."""
    batch = args.batch_size
    peer = {row["prec"]: batch / row["median"] for row in rows if row["impl"] == "model_garden"}
    table = []
    for row in rows:
        rate = batch / row["median"]
        table.append(["%s%s" % (row["info"]["label"], " (XLA)" if row["xla"] else ""),
                      row["prec"], benchlib.format_number(row["median"], 3),
                      benchlib.format_number(rate, 2),
                      benchlib.format_spread(batch / row["high"], batch / row["low"], 2),
                      benchlib.format_ratio(benchlib.ratio(rate, peer.get(row["prec"]))),
                      benchlib.format_number(row["info"]["warmup_seconds"], 0)])
    print()
    print("Pre-training step (MLM + NSP) of %s, batch %d x seq %d, %d predictions, random "
          "weights and batch: %d rounds alternating the processes of a precision, one host loop "
          "of %d steps per row and round (after %d warm-up steps); median over rounds, spread = "
          "min-max over rounds, ratio = examples/s over Model Garden in the same precision."
          % (os.path.basename(args.bert_config_file), batch, args.seq_length,
             args.max_predictions_per_seq, args.rounds, args.steps,
             args.warmup))
    print()
    print(benchlib.markdown_table(
        ["implementation", "precision", "s / step", "examples / s", "spread (examples/s)",
         "vs Model Garden", "warm-up s"], table, align="llrrrrr"))
    print()
    for line in goals(args, rows):
        print("- " + line)
    for note in notes:
        print("- " + note)
    for failure in failures:
        print("- FAILED: " + failure)
    sys.stdout.flush()


def goals(args, rows):
    """The issue's goals, each as a line: the figure measured and whether it is met."""
    lines = []
    rate = {(r["impl"], r["prec"], r["xla"]): args.batch_size / r["median"] for r in rows}
    for prec in args.precisions:
        peer = rate.get(("model_garden", prec, False))
        ours = [rate[k] for k in rate if k[0] == "bert_tf" and k[1] == prec]
        if peer and ours:
            value = max(ours) / peer
            lines.append("goal %s >= %.1fx Model Garden: %.2fx, %s"
                         % (prec, MIN_VS_MODEL_GARDEN, value,
                            "met" if value >= MIN_VS_MODEL_GARDEN else "NOT met"))
        plain, xla = rate.get(("bert_tf", prec, False)), rate.get(("bert_tf", prec, True))
        if plain and xla:
            lines.append("%s: --use_xla %s (%.2fx the examples/s without)"
                         % (prec, "helps" if xla > plain else "does not help", xla / plain))
    return lines


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(prog="pretraining_bench.py",
                                     description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="%(rounds)d rounds x %(steps)d steps, "
                      "%(warmup)d warm-up, no --use_xla rows" % MODES["quick"])
    mode.add_argument("--full", action="store_true", help="%(rounds)d rounds x %(steps)d steps, "
                      "%(warmup)d warm-up (the default)" % MODES["full"])
    parser.add_argument("--bert_config_file", default=BERT_BASE)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--rounds", type=int, help="overrides the mode's")
    parser.add_argument("--steps", type=int, help="timed steps per row and round; overrides the "
                        "mode's")
    parser.add_argument("--warmup", type=int, help="untimed steps per row; overrides the mode's")
    parser.add_argument("--precisions", default="fp32,bf16", help="fp32, bf16 or both")
    parser.add_argument("--xla", choices=["off", "both"], help="bert_tf without --use_xla "
                        "only (off) or with and without (both); overrides the mode's "
                        "(quick: off, full: both)")
    parser.add_argument("--peer_python", default=PEERS_PYTHON if os.path.exists(PEERS_PYTHON)
                        else None, help="the interpreter that has tf-models-official "
                        "(default: bench/.peers/bin/python)")
    parser.add_argument("--role", default="driver", choices=["driver", "worker"], help="internal")
    parser.add_argument("--impl", choices=sorted(LABELS), help="internal (worker)")
    parser.add_argument("--precision", choices=["fp32", "bf16"], help="internal (worker)")
    parser.add_argument("--use_xla", action="store_true", help="internal (worker)")
    args = parser.parse_args(argv)
    benchlib.apply_mode(args, MODES, ("batch_size", "rounds", "steps", "warmup",
                                      "max_predictions_per_seq"), parser)
    if not 2 <= args.seq_length <= 512:
        parser.error("--seq_length must be in [2, 512], got %d" % args.seq_length)
    if args.max_predictions_per_seq >= args.seq_length:
        parser.error("--max_predictions_per_seq must be below --seq_length")
    if not os.path.isfile(args.bert_config_file):
        parser.error("--bert_config_file: no such file: %s" % args.bert_config_file)
    if args.peer_python and not os.path.exists(args.peer_python):
        parser.error("--peer_python: no such interpreter: %s" % args.peer_python)
    args.precisions = benchlib.parse_precisions(args.precisions, parser)
    return args


def main():
    args = parse_args()
    if args.role == "worker":
        worker(args)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
