r"""The optimizer update alone, BERT-base-sized: bert_tf's AdamWeightDecay vs Model Garden's.

  .venv/bin/python bench/optimizer_bench.py [--quick] \
      [--peer_python=bench/.peers/bin/python] [--bert_config_file=...]

One training step's optimizer work on the variables of BERT-base with the
pre-training heads (their shapes from the config; 110,106,428 parameters),
with fixed random gradients whose global norm is far above 1, so the clip
scales every one:

  bert_tf       `optimization.create_optimizer(1e-4, 1000, 10)` and
                `optimizer.apply(grads, variables)`: clip_by_global_norm(1.0),
                the original's AdamWeightDecay (one compiled update per
                variable, in place), global_step += 1;
  Model Garden  `official.nlp.optimization.create_optimizer(1e-4, 1000, 10)`
                and `optimizer.apply_gradients`, as its legacy pre-training
                loop runs them: its AdamWeightDecay, a tf-keras Adam (fused
                `ResourceApplyAdam`, with bias correction) plus weight decay,
                which clips by global norm 1.0 itself; in the peers' venv
                (`bench/setup_peers.sh`).

Steps run inside one `tf.range` host loop; each side runs in its own process,
alive for the whole run, and the rounds alternate between them. This is the
part of a training step that the forward and backward passes do not explain
(bench/pretraining_bench.py times the whole step).
"""

import contextlib
import os
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402

BERT_BASE = os.path.join(REPO, "configs", "uncased_L-12_H-768_A-12.json")
PEERS_PYTHON = os.path.join(REPO, "bench", ".peers", "bin", "python")
MODES = {"quick": dict(rounds=3, steps=5, warmup=2), "full": dict(rounds=7, steps=10, warmup=3)}
IMPLS = ("bert_tf", "model_garden")
LABELS = {"bert_tf": "bert_tf create_optimizer (AdamWeightDecay, clip inside)",
          "model_garden": "TF Model Garden 2.20.0 create_optimizer (AdamWeightDecay, "
                          "clip inside)"}


def variable_shapes(config):
    """(name, shape) of every trainable variable of BERT with the pre-training heads.

    `config`: a dict of bert_config.json. The names are the original's, so the
    weight-decay exclusions ("LayerNorm", "bias") match as in training.
    """
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    shapes = [("bert/embeddings/word_embeddings", (v, h)),
              ("bert/embeddings/token_type_embeddings", (config["type_vocab_size"], h)),
              ("bert/embeddings/position_embeddings", (config["max_position_embeddings"], h)),
              ("bert/embeddings/LayerNorm/gamma", (h,)),
              ("bert/embeddings/LayerNorm/beta", (h,))]
    for layer in range(config["num_hidden_layers"]):
        prefix = "bert/encoder/layer_%d/" % layer
        for dense, n_in, n_out in (("attention/self/query", h, h), ("attention/self/key", h, h),
                                   ("attention/self/value", h, h),
                                   ("attention/output/dense", h, h),
                                   ("intermediate/dense", h, i), ("output/dense", i, h)):
            shapes += [(prefix + dense + "/kernel", (n_in, n_out)),
                       (prefix + dense + "/bias", (n_out,))]
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes += [(prefix + norm + "/gamma", (h,)), (prefix + norm + "/beta", (h,))]
    shapes += [("bert/pooler/dense/kernel", (h, h)), ("bert/pooler/dense/bias", (h,)),
               ("cls/predictions/transform/dense/kernel", (h, h)),
               ("cls/predictions/transform/dense/bias", (h,)),
               ("cls/predictions/transform/LayerNorm/gamma", (h,)),
               ("cls/predictions/transform/LayerNorm/beta", (h,)),
               ("cls/predictions/output_bias", (v,)),
               ("cls/seq_relationship/output_weights", (2, h)),
               ("cls/seq_relationship/output_bias", (2,))]
    return shapes


def _values(shapes):
    import numpy as np
    rng = np.random.RandomState(0)
    weights = [rng.normal(0, 0.02, shape).astype(np.float32) for _, shape in shapes]
    grads = [rng.normal(0, 1e-2, shape).astype(np.float32) for _, shape in shapes]
    return weights, grads


def _bert_tf(shapes):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    sys.path.insert(0, REPO)
    import keras
    import tensorflow as tf
    from bert_tf.training import optimization

    weights, grads = _values(shapes)
    variables = []
    for (name, _), value in zip(shapes, weights):
        # The variable's path is its TF1 name, which the decay exclusions read.
        *scopes, leaf = name.split("/")
        with contextlib.ExitStack() as stack:
            for scope in scopes:
                stack.enter_context(keras.name_scope(scope))
            variables.append(keras.Variable(value, name=leaf))
    assert [v.path for v in variables] == [name for name, _ in shapes]
    optimizer = optimization.create_optimizer(1e-4, 1000, 10)
    optimizer.build(variables)
    grads = [tf.constant(g) for g in grads]

    @tf.function
    def loop(num_steps):
        for _ in tf.range(num_steps):
            optimizer.apply(grads, variables)
        return optimizer.iterations.value

    return loop, tf


def _model_garden(shapes):
    import tensorflow as tf
    from official.nlp import optimization

    weights, grads = _values(shapes)
    variables = [tf.Variable(value, name=name) for (name, _), value in zip(shapes, weights)]
    optimizer = optimization.create_optimizer(1e-4, 1000, 10)
    grads = [tf.constant(g) for g in grads]

    @tf.function
    def loop(num_steps):
        for _ in tf.range(num_steps):
            # Its AdamWeightDecay clips by global norm (gradient_clip_norm=1.0).
            optimizer.apply_gradients(zip(grads, variables))
        return optimizer.iterations

    return loop, tf


def worker(args):
    import json
    import numpy as np
    with open(args.bert_config_file) as f:
        shapes = variable_shapes(json.load(f))
    build = _model_garden if args.impl == "model_garden" else _bert_tf
    loop, tf = build(shapes)
    start = time.perf_counter()
    loop(tf.constant(args.warmup))
    info = {"label": LABELS[args.impl], "warmup_seconds": time.perf_counter() - start,
            "num_parameters": sum(int(np.prod(s)) for _, s in shapes)}

    def handle(request):
        start = time.perf_counter()
        loop(tf.constant(request["steps"]))
        return {"seconds_per_step": (time.perf_counter() - start) / request["steps"]}

    benchlib.serve(info, handle)


def drive(args):
    notes, failures, workers = [], [], []
    for impl in IMPLS:
        python = sys.executable
        env = benchlib.child_env(CUDA_VISIBLE_DEVICES="")
        if impl == "model_garden":
            python = benchlib.peer_interpreter(args.peer_python, "Model Garden", notes)
            if python is None:
                continue
            env = benchlib.child_env(TF_USE_LEGACY_KERAS="1", KERAS_BACKEND=None,
                                     CUDA_VISIBLE_DEVICES="")
        argv = [python, os.path.abspath(__file__), "--role=worker", "--impl=" + impl,
                "--bert_config_file=" + args.bert_config_file, "--warmup=%d" % args.warmup]
        workers.append((impl, benchlib.Worker(impl, argv, env, REPO)))
    infos, times = benchlib.time_worker_rounds(workers, args.rounds, args.steps, failures)
    rows = [dict(impl=impl, info=infos[impl], **benchlib.summarize(rounds))
            for impl, rounds in times.items()]
    report(args, rows, notes, failures)
    return 1 if failures else 0


def report(args, rows, notes, failures):
    """Prints the table (BENCHMARKS.md's form) and its notes."""
    peer = {row["impl"]: row["median"] for row in rows}.get("model_garden")
    table = []
    for row in rows:
        table.append([row["info"]["label"], benchlib.format_number(row["median"], 3),
                      benchlib.format_spread(row["low"], row["high"], 3),
                      benchlib.format_ratio(benchlib.ratio(peer, row["median"]))
                      if peer else "",
                      "{:,}".format(row["info"]["num_parameters"])])
    print()
    print("The optimizer update of one step alone (clip_by_global_norm 1.0, AdamWeightDecay "
          "0.01, step += 1) on the trainable variables of %s with the pre-training heads, "
          "float32: %d rounds alternating the processes, one host loop of %d steps per row and "
          "round (after %d warm-up steps); median over rounds, spread = min-max over rounds, "
          "ratio = Model Garden's s / step over the row's."
          % (os.path.basename(args.bert_config_file), args.rounds, args.steps, args.warmup))
    print()
    print(benchlib.markdown_table(["implementation", "s / step", "spread s", "vs Model Garden",
                                   "parameters"], table, align="lrrrr"))
    print()
    for note in notes:
        print("- " + note)
    for failure in failures:
        print("- FAILED: " + failure)
    sys.stdout.flush()


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(prog="optimizer_bench.py",
                                     description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="3 rounds x 5 steps (make bench)")
    mode.add_argument("--full", action="store_true", help="7 rounds x 10 steps (default)")
    parser.add_argument("--bert_config_file", default=BERT_BASE)
    parser.add_argument("--rounds", type=int, help="overrides the mode's")
    parser.add_argument("--steps", type=int, help="timed steps per round; overrides the mode's")
    parser.add_argument("--warmup", type=int, help="untimed steps; overrides the mode's")
    parser.add_argument("--peer_python", default=PEERS_PYTHON if os.path.exists(PEERS_PYTHON)
                        else None, help="the peers' interpreter (bench/setup_peers.sh)")
    parser.add_argument("--role", default="driver", choices=["driver", "worker"], help="internal")
    parser.add_argument("--impl", choices=IMPLS, help="internal (worker)")
    args = parser.parse_args(argv)
    benchlib.apply_mode(args, MODES, ("rounds", "steps", "warmup"), parser)
    if not os.path.exists(args.bert_config_file):
        parser.error("--bert_config_file %s does not exist" % args.bert_config_file)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.role == "worker":
        worker(args)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
