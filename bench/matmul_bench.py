r"""The encoder's dense layers alone: TensorFlow's CPU matmul against ONNX Runtime's, 1 and 2 threads.

  .venv/bin/python bench/matmul_bench.py [--quick] [--rows=16,128,1024]
      [--hidden_size=384 --intermediate_size=1536 --num_hidden_layers=6]

Why a model is slower in TensorFlow than in ONNX Runtime at batch 1 comes down
to its matmuls (bench/serving_bench.py times whole models): this times just
them. One chain per row count M (1 x 128 tokens is M = 128): for each of
`--num_hidden_layers` layers (its own weights, random, as a model streams its
weights through the caches) the four dense layers of a BERT layer, each a
matmul plus bias: [M, D] x [D, 3D] (query, key and value fused, as
`bert_tf.export.fused_encoder` runs them), [M, D] x [D, D] (the attention
output; its input the first D columns of the last product), [M, D] x [D, I]
and [M, I] x [I, D]; nothing else. The sides, each in its own process:

  * TensorFlow  `tf.function` of MatMul + BiasAdd with variable weights
                (Grappler fuses them: oneDNN's `_MklNativeFusedMatMul` on x86),
                intra- and inter-op threads = the side's threads. --tf_form
                tries other forms of the same product: `constant` (the weights
                as graph constants, which oneDNN may keep packed), `transposed`
                ([N, K] weights, `transpose_b`), `batch_matmul` (a batch of one,
                BatchMatMulV2), `split_rows` (each layer's rows in two halves,
                two independent branches that meet where attention would, run
                with 1 intra-op thread and the side's threads as inter-op
                threads: a kernel per core); TF_ENABLE_ONEDNN_OPTS=0 in the
                environment runs Eigen's kernels instead of oneDNN's;
  * ONNX Runtime  the same chain as an ONNX graph (MatMul + Add, weights as
                initializers), CPUExecutionProvider, intra_op_num_threads = the
                side's threads.

Every side runs with 1 and with 2 threads; rounds alternate between the
processes (the order reversed every other round). The table gives, per M, the
median ms per chain, its GFLOP/s (2 * M * K * N summed over the chain), the
gain of the second thread, and TensorFlow's ratio to ONNX Runtime at the same
threads (above 1: TensorFlow faster).
"""

import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import benchlib  # noqa: E402

MODES = {"quick": dict(rounds=4, calls=10), "full": dict(rounds=10, calls=20)}
SIDES = ("tensorflow", "onnxruntime")
THREADS = (1, 2)
TF_FORMS = ("matmul", "constant", "transposed", "batch_matmul", "split_rows")


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(prog="matmul_bench.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="%(rounds)d rounds x %(calls)d "
                        "calls (make bench)" % MODES["quick"])
    parser.add_argument("--rows", default="16,128,1024",
                        help="comma-separated M (batch x tokens)")
    parser.add_argument("--hidden_size", type=int, default=384)
    parser.add_argument("--intermediate_size", type=int, default=1536)
    parser.add_argument("--num_hidden_layers", type=int, default=6)
    parser.add_argument("--tf_form", default="matmul", choices=TF_FORMS,
                        help="how the TensorFlow side writes each dense layer (see above)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None, help="timed chains per M and round")
    parser.add_argument("--role", default="driver", choices=("driver", "worker"))
    parser.add_argument("--side", default=None, choices=SIDES)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    benchlib.apply_mode(args, MODES, ("rounds", "calls", "hidden_size", "intermediate_size",
                                      "num_hidden_layers"), parser)
    args.rows = benchlib.parse_positive_ints(args.rows, "rows", parser)
    return args


def shapes(args):
    """The chain's (K, N) per matmul, layer after layer."""
    d, i = args.hidden_size, args.intermediate_size
    return [(d, 3 * d), (d, d), (d, i), (i, d)] * args.num_hidden_layers


def flops(args, rows):
    return sum(2 * rows * k * n for k, n in shapes(args))


def _weights(args):
    import numpy as np
    rng = np.random.RandomState(0)
    # Scaled so that the chain's values stay near 1 (no overflow, no denormals).
    return [((rng.rand(k, n).astype(np.float32) - 0.5) * (2.0 / k ** 0.5),
             rng.rand(n).astype(np.float32) - 0.5) for k, n in shapes(args)]


def _tensorflow_chain(args):
    import tensorflow as tf
    split = args.tf_form == "split_rows"
    tf.config.threading.set_intra_op_parallelism_threads(1 if split else args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    d = args.hidden_size
    form = args.tf_form
    if form == "constant":
        weights = [(tf.constant(w), tf.constant(b)) for w, b in _weights(args)]
    else:
        weights = [(tf.Variable(w.T.copy() if form == "transposed" else w), tf.Variable(b))
                   for w, b in _weights(args)]

    def product(x, w):
        if form == "transposed":
            return tf.matmul(x, w, transpose_b=True)
        if form == "batch_matmul":
            return tf.reshape(tf.matmul(x[None], w[None]), [-1, w.shape[1]])
        return tf.matmul(x, w)

    def layer_rest(x, layer):  # the three dense layers after query, key and value
        _, (wo, bo), (wi, bi), (wout, bout) = weights[4 * layer:4 * layer + 4]
        attended = tf.nn.bias_add(product(x, wo), bo)
        return tf.nn.bias_add(product(tf.nn.bias_add(product(attended, wi), bi), wout), bout)

    @tf.function(input_signature=[tf.TensorSpec([None, d], tf.float32)])
    def chain(x):
        for layer in range(args.num_hidden_layers):
            wqkv, bqkv = weights[4 * layer]
            if not split:
                x = layer_rest(tf.nn.bias_add(product(x, wqkv), bqkv)[:, :d], layer)
                continue
            # Two halves of the rows; they meet after query, key and value (where
            # attention needs every row) and at the layer's end.
            half = tf.shape(x)[0] // 2
            qkv = tf.concat([tf.nn.bias_add(product(part, wqkv), bqkv)
                             for part in (x[:half], x[half:])], 0)[:, :d]
            x = tf.concat([layer_rest(part, layer) for part in (qkv[:half], qkv[half:])], 0)
        return x
    kernels = "Eigen" if os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0" else "oneDNN"
    return (lambda x: chain(x).numpy(),
            "TensorFlow %s (%s, --tf_form=%s)" % (tf.__version__, kernels, form))


def _onnxruntime_chain(args):
    import numpy as np
    import onnx
    import onnxruntime
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper
    d = args.hidden_size
    nodes, initializers = [], []
    x = "x"
    for layer in range(args.num_hidden_layers):
        names = ["l%d_%s" % (layer, part) for part in ("qkv", "out", "inter", "output")]
        for index, (name, (w, b)) in enumerate(zip(names, _weights(args)[4 * layer:4 * layer
                                                                         + 4])):
            initializers += [numpy_helper.from_array(w, name + "_w"),
                             numpy_helper.from_array(b, name + "_b")]
            if index == 1:  # the attention output's input: the first D columns
                initializers += [numpy_helper.from_array(np.array(v, np.int64), name + "_" + k)
                                 for k, v in (("s", [0]), ("e", [d]), ("a", [1]))]
                nodes.append(helper.make_node("Slice", [x, name + "_s", name + "_e",
                                                        name + "_a"], [name + "_in"]))
                x = name + "_in"
            nodes.append(helper.make_node("MatMul", [x, name + "_w"], [name + "_mm"]))
            nodes.append(helper.make_node("Add", [name + "_mm", name + "_b"], [name + "_y"]))
            x = name + "_y"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", d])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["m", d])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    return (lambda a: session.run(None, {"x": a})[0],
            "ONNX Runtime %s" % onnxruntime.__version__)


def worker(args):
    import numpy as np
    run, label = (_tensorflow_chain if args.side == "tensorflow" else _onnxruntime_chain)(args)
    rng = np.random.RandomState(1)
    inputs = {m: rng.rand(m, args.hidden_size).astype(np.float32) - 0.5 for m in args.rows}
    for x in inputs.values():  # warm-up: every shape twice
        run(x)
        run(x)

    def handle(request):
        x = inputs[request["rows"]]
        return {"times": benchlib.time_calls(lambda: run(x), request["calls"])}

    benchlib.serve({"label": label}, handle)


def drive(args):
    import statistics
    common = ["--rows=" + ",".join(map(str, args.rows)), "--hidden_size=%d" % args.hidden_size,
              "--intermediate_size=%d" % args.intermediate_size,
              "--num_hidden_layers=%d" % args.num_hidden_layers, "--tf_form=" + args.tf_form]
    workers = [((side, t), benchlib.Worker(
        "%s (%d threads)" % (side, t),
        [sys.executable, os.path.abspath(__file__), "--role=worker", "--side=" + side,
         "--threads=%d" % t] + common, benchlib.child_env(CUDA_VISIBLE_DEVICES=""), REPO))
        for side in SIDES for t in THREADS]
    failures = []
    infos, live = benchlib.start_workers(workers, failures)
    if failures:  # every side is needed for the table
        for _, w in live:
            w.close()
        benchlib.fail(failures[0])
    times = {}
    try:
        for r in range(args.rounds):
            for rows in args.rows:
                for key, w in benchlib.alternating_order(live, r):
                    reply = w.request(rows=rows, calls=args.calls)
                    times.setdefault((key, rows), []).extend(reply["times"])
            print("round %d done" % r, file=sys.stderr)
    finally:
        for _, w in live:
            w.close()
    labels = {side: infos[(side, 1)]["label"] for side in SIDES}
    print("\n%d layers of dense layers (hidden %d, intermediate %d): %s against %s, "
          "%d rounds x %d calls\n" % (args.num_hidden_layers, args.hidden_size,
                                      args.intermediate_size, labels["tensorflow"],
                                      labels["onnxruntime"], args.rounds, args.calls))
    rows_out = []
    for rows in args.rows:
        ms = {key: 1000 * statistics.median(times[(key, rows)]) for key, _ in live}
        gflops = {key: flops(args, rows) / (value / 1000) / 1e9 for key, value in ms.items()}
        for t in THREADS:
            rows_out.append(["%d" % rows, "%d" % t] + [
                "%.2f ms (%.0f GFLOP/s)" % (ms[(side, t)], gflops[(side, t)])
                for side in SIDES] + [
                benchlib.format_ratio(ms[("onnxruntime", t)] / ms[("tensorflow", t)])])
        rows_out.append(["%d" % rows, "2 vs 1"] + [
            "%.2fx" % (ms[(side, 1)] / ms[(side, 2)]) for side in SIDES] + ["-"])
    print(benchlib.markdown_table(["M", "threads", "TensorFlow", "ONNX Runtime",
                                   "TensorFlow vs ONNX Runtime"], rows_out, align="rrrrr"))


def main():
    args = parse_args()
    if args.role == "worker":
        worker(args)
    else:
        drive(args)


if __name__ == "__main__":
    main()
