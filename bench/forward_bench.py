r"""Forward-pass throughput of BERT-base, float32 and bfloat16: bert_tf against its peers.

  .venv/bin/python bench/forward_bench.py [--quick] --seq_length=128 --batch_size=8 \
      [--peer_python=bench/.peers/bin/python]

Measures, on the same machine and inputs (random ids, full mask), the pooled
output of:
  * bert_tf   `BertModel` under `tf.function`, with and without XLA
              (`jit_compile=True`); float32, and bfloat16 as built under
              `precision.dtype_policy("bf16", inference=True)` (what
              `--mixed_precision=bf16` builds for inference: bfloat16 dense
              weights, float32 LayerNorm and embeddings);
  * keras-hub `BertBackbone` (same architecture), the same four ways; bfloat16
              is its `dtype="mixed_bfloat16"`. It runs in the peers' venv
              (`bench/setup_peers.sh`; keras-hub is no project dependency);
              without one, bert_tf and the original only;
  * original  Google's `modeling.BertModel` (bert-tensorflow 1.0.4) in a TF1
              `tf.Session`, via the test shim; float32 only.
Each implementation and precision runs in its own process, which builds its
model and makes `--warmup` untimed calls (XLA compiles in the first) once.
Then `--rounds` rounds alternate between the processes (one process at a time,
the order reversed every other round), `--iters` timed calls per row and
round. A row's figure is the median of all its calls, its spread the min-max
of its round medians, its ratio against the fastest peer of the same
precision. The bf16 process also reports how far bf16's pooled output is from
float32's with the same weights (max abs difference).
"""

import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402

BASE = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
PEERS_PYTHON = os.path.join(REPO, "bench", ".peers", "bin", "python")
MODES = {"quick": dict(rounds=6, iters=1, warmup=1), "full": dict(rounds=15, iters=1, warmup=2)}
# (implementation, precision) -> the variants its process times.
PROCESSES = [("bert_tf", "fp32"), ("bert_tf", "bf16"), ("keras_hub", "fp32"),
             ("keras_hub", "bf16"), ("original", "fp32")]
VARIANTS = {"bert_tf": ("tf.function", "tf.function, XLA"),
            "keras_hub": ("tf.function", "tf.function, XLA"),
            "original": ("TF1 Session",)}
# The goals, checked against the table.
BF16_MIN_SEQ_PER_S = 15.0
BF16_MIN_VS_KERAS_HUB = 1.1
FP32_MIN_VS_BEST_PEER = 1.0


def _inputs(args):
    import numpy as np
    shape = (args.batch_size, args.seq_length)
    ids = np.random.RandomState(0).randint(0, BASE["vocab_size"], shape).astype("int32")
    return ids, np.ones(shape, "int32"), np.zeros(shape, "int32")


def _functions(call):
    """{variant: fn} of a tf.function'd call, without and with XLA."""
    import tensorflow as tf
    return {"tf.function": tf.function(call),
            "tf.function, XLA": tf.function(call, jit_compile=True)}


def _bert_tf(args):
    import numpy as np
    import tensorflow as tf
    import bert_tf
    from bert_tf import BertConfig, BertModel
    from bert_tf.modeling import precision

    ids, mask, types = (tf.constant(a) for a in _inputs(args))
    config = BertConfig(**BASE)
    # As the inference tools build it (extract_features, the SavedModel export):
    # under bf16, the encoder's dense weights are stored in bfloat16.
    with precision.dtype_policy(args.precision, inference=True):
        model = BertModel(config)

    def call(a, b, c):
        return tf.cast(model(a, b, c, training=False)["pooled_output"], tf.float32)

    fns = {name: (lambda f=f: f(ids, mask, types).numpy()) for name, f in _functions(call).items()}
    info = {"label": "bert_tf %s BertModel" % bert_tf.__version__}
    if args.precision == "bf16":
        # The same weights in float32: how far bf16 moves the pooled output.
        reference = BertModel(config)
        for source, target in zip(reference.weights, model.weights):
            target.assign(tf.cast(source.value, target.dtype))
        fp32_out = reference(ids, mask, types, training=False)["pooled_output"].numpy()
        del reference
        info["max_abs_diff_vs_fp32"] = {
            name: float(np.abs(fn() - fp32_out).max()) for name, fn in fns.items()}
    return info, fns


def _keras_hub(args):
    import tensorflow as tf
    import keras_hub

    ids, mask, types = (tf.constant(a) for a in _inputs(args))
    model = keras_hub.models.BertBackbone(
        vocabulary_size=BASE["vocab_size"], num_layers=BASE["num_hidden_layers"],
        num_heads=BASE["num_attention_heads"], hidden_dim=BASE["hidden_size"],
        intermediate_dim=BASE["intermediate_size"],
        max_sequence_length=BASE["max_position_embeddings"], num_segments=BASE["type_vocab_size"],
        dtype="mixed_bfloat16" if args.precision == "bf16" else "float32")
    data = {"token_ids": ids, "padding_mask": mask, "segment_ids": types}

    def call(d):
        return tf.cast(model(d, training=False)["pooled_output"], tf.float32)

    fns = {name: (lambda f=f: f(data).numpy()) for name, f in _functions(call).items()}
    return {"label": "keras-hub %s BertBackbone" % keras_hub.__version__}, fns


def _original(args):
    sys.path.insert(0, REPO)
    from tests.original import shim
    from bert import modeling
    tf = shim.tf1
    ids, _, _ = _inputs(args)
    placeholder = tf.placeholder(tf.int32, ids.shape)
    model = modeling.BertModel(modeling.BertConfig(**BASE), False, placeholder,
                               tf.ones_like(placeholder), tf.zeros_like(placeholder))
    out = model.get_pooled_output()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return ({"label": "original bert-tensorflow 1.0.4"},
            {"TF1 Session": lambda: sess.run(out, {placeholder: ids})})


def worker(args):
    """The child process: builds one implementation, warms it up, then serves timings."""
    build = {"bert_tf": _bert_tf, "keras_hub": _keras_hub, "original": _original}[args.impl]
    info, fns = build(args)
    for fn in fns.values():
        for _ in range(args.warmup):
            fn()

    def handle(request):
        return {"times": benchlib.time_calls(fns[request["variant"]], request["iters"])}

    benchlib.serve(info, handle)


def _start_workers(args, notes):
    """Starts every process (their set-up overlaps); returns [(impl, precision, Worker)]."""
    workers = []
    for impl, prec in PROCESSES:
        if prec not in args.precisions or impl not in args.implementations:
            continue
        python = sys.executable
        if impl == "keras_hub":
            python = benchlib.peer_interpreter(args.peer_python, "keras-hub", notes)
            if python is None:
                continue
        argv = [python, os.path.abspath(__file__), "--role=worker", "--impl=" + impl,
                "--precision=" + prec, "--seq_length=%d" % args.seq_length,
                "--batch_size=%d" % args.batch_size, "--warmup=%d" % args.warmup]
        env = benchlib.child_env(CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES", ""))
        workers.append((impl, prec, benchlib.Worker("%s %s" % (impl, prec), argv, env, REPO)))
    return workers


def drive(args):
    notes, failures, rows, infos = [], [], [], {}
    workers = _start_workers(args, notes)
    live = []
    for impl, prec, w in workers:
        try:
            infos[(impl, prec)] = w.ready()
            live.append((impl, prec, w))
        except benchlib.WorkerError as e:
            failures.append(str(e))
            w.close()
    order = [(impl, prec, variant, w) for impl, prec, w in live for variant in VARIANTS[impl]]
    times = {key[:3]: [] for key in order}
    for r in range(args.rounds):
        for impl, prec, variant, w in benchlib.alternating_order(order, r):
            key = (impl, prec, variant)
            if key not in times:
                continue
            try:
                times[key].append(w.request(cmd="time", variant=variant, iters=args.iters)["times"])
            except benchlib.WorkerError as e:
                failures.append(str(e))
                del times[key]
    for _, _, w in live:
        w.close()
    for (impl, prec, variant), rounds in times.items():
        if rounds:
            summary = benchlib.summarize(rounds)
            rows.append(dict(impl=impl, prec=prec, variant=variant,
                             label=infos[(impl, prec)]["label"], **summary))
    report(args, rows, infos, notes, failures)
    return 1 if failures else 0


def _seq_per_s(args, seconds):
    return args.batch_size / seconds


def report(args, rows, infos, notes, failures):
    """Prints the table (BENCHMARKS.md's form), the goals, the bf16 difference and any failure."""
    batch = args.batch_size
    best_peer = {}
    for row in rows:
        if row["impl"] != "bert_tf":
            rate = batch / row["median"]
            if rate > best_peer.get(row["prec"], (0, None))[0]:
                best_peer[row["prec"]] = (rate, row)
    table = []
    for prec in ("fp32", "bf16"):
        for row in rows:
            if row["prec"] != prec:
                continue
            rate = batch / row["median"]
            peer = best_peer.get(prec)
            table.append(["%s (%s)" % (row["label"], row["variant"]), prec,
                          benchlib.format_number(row["median"] * 1000),
                          benchlib.format_number(rate),
                          benchlib.format_spread(batch / row["high"], batch / row["low"]),
                          benchlib.format_ratio(benchlib.ratio(rate, peer[0]) if peer else None)])
    print()
    print("BERT-base forward (pooled output), batch %d x seq %d, random weights and ids: %d "
          "rounds alternating the processes, timed calls per row and round: %d (after %d warm-up "
          "calls); median of all calls, spread = min-max of the round medians, ratio = seq/s "
          "over the fastest peer of the same precision."
          % (batch, args.seq_length, args.rounds, args.iters, args.warmup))
    print()
    print(benchlib.markdown_table(
        ["implementation", "precision", "ms / batch", "sequences / s", "spread (seq/s)",
         "vs fastest peer"], table, align="llrrrr"))
    print()
    for prec, (rate, row) in sorted(best_peer.items()):
        print("- fastest %s peer: %s (%s), %.1f seq/s" % (prec, row["label"], row["variant"], rate))
    for line in goals(args, rows):
        print("- " + line)
    diff = infos.get(("bert_tf", "bf16"), {}).get("max_abs_diff_vs_fp32")
    if diff:
        print("- bert_tf bf16 vs fp32, same weights, max abs difference of the pooled output: "
              + ", ".join("%.4f (%s)" % (value, name) for name, value in sorted(diff.items())))
    for note in notes:
        print("- " + note)
    for failure in failures:
        print("- FAILED: " + failure)
    sys.stdout.flush()


def goals(args, rows):
    """The issue's goals, each as a line: the figure measured and whether it is met."""
    def best(impl, prec):
        rates = [args.batch_size / r["median"] for r in rows
                 if r["impl"] == impl and r["prec"] == prec]
        return max(rates) if rates else None

    def verdict(ok):
        return "met" if ok else "NOT met"

    lines = []
    ours_bf16, ours_fp32 = best("bert_tf", "bf16"), best("bert_tf", "fp32")
    hub_bf16 = best("keras_hub", "bf16")
    peers_fp32 = [rate for rate in (best("keras_hub", "fp32"), best("original", "fp32")) if rate]
    if ours_bf16 is not None:
        lines.append("goal bf16 >= %.0f seq/s: %.1f seq/s, %s"
                     % (BF16_MIN_SEQ_PER_S, ours_bf16, verdict(ours_bf16 >= BF16_MIN_SEQ_PER_S)))
        if hub_bf16:
            r = ours_bf16 / hub_bf16
            lines.append("goal bf16 >= %.1fx keras-hub bf16: %.2fx, %s"
                         % (BF16_MIN_VS_KERAS_HUB, r, verdict(r >= BF16_MIN_VS_KERAS_HUB)))
    if ours_fp32 is not None and peers_fp32:
        r = ours_fp32 / max(peers_fp32)
        lines.append("goal fp32 >= %.1fx the fastest fp32 peer: %.2fx, %s"
                     % (FP32_MIN_VS_BEST_PEER, r, verdict(r >= FP32_MIN_VS_BEST_PEER)))
    return lines


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(prog="forward_bench.py", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="%(rounds)d rounds x %(iters)d calls, "
                      "%(warmup)d warm-up" % MODES["quick"])
    mode.add_argument("--full", action="store_true", help="%(rounds)d rounds x %(iters)d calls, "
                      "%(warmup)d warm-up (the default)" % MODES["full"])
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--rounds", type=int, help="overrides the mode's")
    parser.add_argument("--iters", type=int,
                        help="timed calls per row and round; overrides the mode's")
    parser.add_argument("--warmup", type=int, help="untimed calls per row; overrides the mode's")
    parser.add_argument("--precisions", default="fp32,bf16", help="fp32, bf16 or both")
    parser.add_argument("--implementations", default="bert_tf,keras_hub,original",
                        help="any of bert_tf, keras_hub, original")
    parser.add_argument("--peer_python", "--keras_hub_python", dest="peer_python",
                        default=PEERS_PYTHON if os.path.exists(PEERS_PYTHON) else None,
                        help="the interpreter that has keras-hub "
                        "(default: bench/.peers/bin/python)")
    parser.add_argument("--skip_original", action="store_true")
    parser.add_argument("--role", default="driver", choices=["driver", "worker"], help="internal")
    parser.add_argument("--impl", choices=sorted(VARIANTS), help="internal (worker)")
    parser.add_argument("--precision", choices=["fp32", "bf16"], help="internal (worker)")
    args = parser.parse_args(argv)
    if not 1 <= args.seq_length <= BASE["max_position_embeddings"]:
        parser.error("--seq_length must be in [1, %d], got %d"
                     % (BASE["max_position_embeddings"], args.seq_length))
    benchlib.apply_mode(args, MODES, ("batch_size", "rounds", "iters"), parser)
    if args.warmup < 1:
        parser.error("--warmup must be at least 1 (the first call traces), got %d" % args.warmup)
    if args.peer_python and not os.path.exists(args.peer_python):
        parser.error("--peer_python: no such interpreter: %s" % args.peer_python)
    args.precisions = benchlib.parse_precisions(args.precisions, parser)
    args.implementations = [i for i in args.implementations.split(",") if i]
    if args.skip_original:
        args.implementations = [i for i in args.implementations if i != "original"]
    for i in args.implementations:
        if i not in VARIANTS:
            parser.error("--implementations: unknown implementation %r (%s)"
                         % (i, ", ".join(sorted(VARIANTS))))
    return args


def main():
    args = parse_args()
    if args.role == "worker":
        worker(args)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
