r"""`bert-export-saved-model --quantize=int8` against the float32 (and bf16) export: speed on CPU.

  .venv/bin/python bench/int8_bench.py [--quick] [--batch_sizes=1,8] [--seq_length=128]

Builds a classifier (`BertClassifier`, 2 labels, random weights) of
all-MiniLM-L6-v2's size (vocab 30,522, hidden 384, 6 layers, 12 heads,
intermediate 1,536; or --bert_config_file), saves it as a Google checkpoint
beside a vocab of as many tokens, and exports it with `export_saved_model`
four times: float32 (the SavedModel), `mixed_precision="bf16"` (the
SavedModel computing in bfloat16), `quantize="int8"` (the LiteRT model) and
`format="onnx", quantize="int8"` (model.onnx in int8 by ONNX Runtime's
`quantize_dynamic`; left out, with a note, without tf2onnx or onnxruntime).
Each answers the same random features (real-looking ids, padding) at every
--batch_sizes x --seq_length: the SavedModels' `serve_features` after
`tf.saved_model.load` (TensorFlow's intra-op threads = --threads), the int8
model through `bert_tf.export.quantize.Int8Model` (the LiteRT interpreter,
XNNPACK, --threads threads), the ONNX int8 model through
`onnxruntime.InferenceSession` (--threads intra-op threads; the rows as
given, padding included). `--warmup` untimed calls each, then `--rounds`
rounds alternating the exports (the order reversed every other round),
`--iters` timed calls each per round. Prints per batch size a table of the
median ms per batch and sequences/s, the spread (min-max of the round
medians) and the ratio to float32; then the largest difference of each
export's probabilities from float32's (random weights: probabilities near
0.5, so this shows the numbers match, not accuracy; the accuracy gate is
tests/test_export_int8.py) and the files' sizes.
"""

import os
import shutil
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, REPO)
sys.path.insert(0, BENCH)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import benchlib  # noqa: E402

MODES = {"quick": dict(rounds=4, iters=2, warmup=2), "full": dict(rounds=10, iters=3, warmup=3)}
# all-MiniLM-L6-v2's shape (bench/pypi_bert_checkpoint.py writes the real one).
MINILM = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
              intermediate_size=1536, hidden_act="gelu", hidden_dropout_prob=0.1,
              attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
              initializer_range=0.02)
EXPORTS = ("fp32", "bf16", "int8", "onnx_int8")


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(prog="int8_bench.py", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="%(rounds)d rounds x %(iters)d calls, "
                      "%(warmup)d warm-up" % MODES["quick"])
    mode.add_argument("--full", action="store_true", help="%(rounds)d rounds x %(iters)d calls, "
                      "%(warmup)d warm-up (the default)" % MODES["full"])
    parser.add_argument("--bert_config_file", default=None,
                        help="default: all-MiniLM-L6-v2's shape")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_sizes", default="1,8")
    parser.add_argument("--threads", type=int, default=2,
                        help="TensorFlow's intra-op threads and the interpreter's")
    parser.add_argument("--rounds", type=int, help="overrides the mode's")
    parser.add_argument("--iters", type=int, help="timed calls per export and round; "
                        "overrides the mode's")
    parser.add_argument("--warmup", type=int, help="untimed calls each; overrides the mode's")
    args = parser.parse_args(argv)
    benchlib.apply_mode(args, MODES, ("seq_length", "threads", "rounds", "iters", "warmup"),
                        parser)
    args.batch_sizes = benchlib.parse_positive_ints(args.batch_sizes, "batch_sizes", parser)
    if args.bert_config_file and not os.path.isfile(args.bert_config_file):
        parser.error("--bert_config_file: no such file: %s" % args.bert_config_file)
    return args


def _features(rng, batch_size, seq_length, vocab_size):
    import numpy as np
    mask = np.ones((batch_size, seq_length), np.int32)
    for row, length in enumerate(rng.randint(seq_length // 2, seq_length + 1, batch_size)):
        mask[row, length:] = 0
    return {"input_ids": (rng.randint(1000, vocab_size, mask.shape) * mask).astype(np.int32),
            "input_mask": mask,
            "segment_ids": ((np.arange(seq_length)[None, :] >= seq_length // 2)
                            .astype(np.int32).repeat(batch_size, 0) * mask)}


def _size_mb(path):
    total = 0
    for root, _, names in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, n)) for n in names
                     if n != "vocab.txt")
    return total / 1e6


def main():
    args = parse_args()

    import numpy as np
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras
    from bert_tf.export import quantize
    from bert_tf.export.saved_model import export_saved_model
    from bert_tf.modeling import checkpoint
    from bert_tf.modeling.config import BertConfig
    from bert_tf.tasks.classifier.model import BertClassifier

    config = (BertConfig.from_json_file(args.bert_config_file) if args.bert_config_file
              else BertConfig.from_dict(MINILM))
    if args.seq_length > config.max_position_embeddings:
        benchlib.fail("--seq_length %d is over the config's max_position_embeddings %d"
                      % (args.seq_length, config.max_position_embeddings))
    work = tempfile.mkdtemp(prefix="int8_bench_")
    try:
        keras.utils.set_random_seed(0)
        prefix = checkpoint.save_checkpoint(BertClassifier(config, 2),
                                            os.path.join(work, "model.ckpt-1"), global_step=1)
        vocab_file = os.path.join(work, "vocab.txt")
        with open(vocab_file, "w") as f:
            specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            f.write("\n".join(specials + ["tok%d" % i
                                          for i in range(config.vocab_size - 5)]) + "\n")
        paths, export_seconds = {}, {}
        kinds = [("fp32", {}), ("bf16", {"mixed_precision": "bf16"}),
                 ("int8", {"quantize": "int8"})]
        try:
            import onnxruntime  # noqa: F401  pylint: disable=unused-import
            import tf2onnx  # noqa: F401  pylint: disable=unused-import
            kinds.append(("onnx_int8", {"format": "onnx", "quantize": "int8"}))
        except ImportError as e:
            print("onnx_int8 left out: %s (pip install bert_tf[onnx])" % e)
        for name, kwargs in kinds:
            start = time.perf_counter()
            paths[name] = export_saved_model(
                "SST-2", config, vocab_file, True, prefix, os.path.join(work, name),
                args.seq_length, version=1, **kwargs)
            export_seconds[name] = time.perf_counter() - start
        sizes = {name: _size_mb(path) for name, path in paths.items()}

        loaded = {name: tf.saved_model.load(paths[name]).signatures["serve_features"]
                  for name in ("fp32", "bf16")}
        int8 = quantize.Int8Model(paths["int8"], num_threads=args.threads)
        if "onnx_int8" in paths:
            import onnxruntime
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = args.threads
            onnx_int8 = onnxruntime.InferenceSession(
                os.path.join(paths["onnx_int8"], "model.onnx"), options,
                providers=["CPUExecutionProvider"])
        exports = [name for name in EXPORTS if name in paths]

        def caller(name, features):
            if name == "int8":
                return lambda: int8.predict_features(**features)["probabilities"]
            if name == "onnx_int8":
                return lambda: onnx_int8.run(["probabilities"], features)[0]
            tensors = {k: tf.constant(v) for k, v in features.items()}
            return lambda: loaded[name](**tensors)["probabilities"].numpy()

        rng = np.random.RandomState(0)
        print()
        print("Inference of the exported classifier (2 labels, random weights), config %s, "
              "seq %d; float32 and bf16: the SavedModel's serve_features (TensorFlow, %d "
              "intra-op threads), int8: model.tflite (LiteRT interpreter, XNNPACK, %d threads), "
              "onnx_int8: model.onnx in int8 (ONNX Runtime, %d threads); "
              "%d rounds alternating the exports, %d timed calls each per round (after %d "
              "warm-up calls); median of all calls, spread = min-max of the round medians."
              % (os.path.basename(args.bert_config_file) if args.bert_config_file
                 else "all-MiniLM-L6-v2-sized (L6 H384 A12 I1536)", args.seq_length,
                 args.threads, args.threads, args.threads, args.rounds, args.iters,
                 args.warmup))
        diffs = {}
        for batch in args.batch_sizes:
            features = _features(rng, batch, args.seq_length, config.vocab_size)
            calls = {name: caller(name, features) for name in exports}
            outputs = {}
            for name, call in calls.items():
                for _ in range(args.warmup):
                    outputs[name] = call()
            for name in exports[1:]:
                diffs[(name, batch)] = (
                    float(np.abs(outputs[name] - outputs["fp32"]).max()),
                    int((outputs[name].argmax(-1) == outputs["fp32"].argmax(-1)).sum()))
            times = {name: [] for name in calls}
            for r in range(args.rounds):
                for name in benchlib.alternating_order(calls, r):  # the same machine load
                    times[name].append(benchlib.time_calls(calls[name], args.iters))
            summary = {name: benchlib.summarize(rounds) for name, rounds in times.items()}
            print()
            print("Batch %d x seq %d:" % (batch, args.seq_length))
            print()
            print(benchlib.markdown_table(
                ["export", "ms / batch", "sequences / s", "spread (seq/s)", "vs fp32"],
                [[name, benchlib.format_number(s["median"] * 1000),
                  benchlib.format_number(batch / s["median"]),
                  benchlib.format_spread(batch / s["high"], batch / s["low"]),
                  benchlib.format_ratio(summary["fp32"]["median"] / s["median"])]
                 for name, s in summary.items()]))
            sys.stdout.flush()
        print()
        print(benchlib.markdown_table(
            ["export vs fp32 (same weights)", "batch", "probabilities: max abs difference",
             "predicted label equal"],
            [[name, str(batch), "%.4f" % diffs[(name, batch)][0],
              "%d / %d" % (diffs[(name, batch)][1], batch)]
             for name in exports[1:] for batch in args.batch_sizes]))
        print()
        print(benchlib.markdown_table(
            ["export", "files (MB, without vocab.txt)", "export time (s)"],
            [[name, "%.1f" % sizes[name], "%.1f" % export_seconds[name]] for name in exports]))
        sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
