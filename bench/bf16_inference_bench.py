r"""Inference in bfloat16 against float32: speed and the difference in the outputs.

  .venv/bin/python bench/bf16_inference_bench.py \
      --bert_config_file=configs/uncased_L-12_H-768_A-12.json \
      --seq_length=128 --batch_size=8 [--quick]

Builds the classifier (`BertClassifier`, 2 labels, random weights) twice with
the same weights: in float32 and under `--mixed_precision=bf16`'s policy
(`precision.dtype_policy("bf16", inference=True)`: bfloat16 dense weights, as `tools/extract_features.py`,
`tools/export_saved_model.py` and the Trainer build it). Both run the
`extract_features`-style forward pass (`extract_features.predict_layers`'s:
the last four layers, cast to float32, under `tf.function`) on the same
random batch (real-looking ids, a mask with padding): `--warmup` untimed
calls each, then `--rounds` rounds alternating float32 and bf16 (the order
reversed every other round), `--iters` timed calls each per round. Prints a
table of the median seq/s of each, the spread (min-max of the round medians)
and bf16's ratio to float32, and one of the max abs difference of the pooled
output, the last layer and the classifier's probabilities (softmax of the
logits) between the two.
"""

import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, REPO)
sys.path.insert(0, BENCH)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import benchlib  # noqa: E402

MODES = {"quick": dict(rounds=4, iters=1, warmup=1), "full": dict(rounds=10, iters=1, warmup=2)}


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(prog="bf16_inference_bench.py",
                                     description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="%(rounds)d rounds x %(iters)d calls, "
                      "%(warmup)d warm-up" % MODES["quick"])
    mode.add_argument("--full", action="store_true", help="%(rounds)d rounds x %(iters)d calls, "
                      "%(warmup)d warm-up (the default)" % MODES["full"])
    parser.add_argument("--bert_config_file",
                        default=os.path.join(REPO, "configs", "uncased_L-12_H-768_A-12.json"))
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--rounds", type=int, help="overrides the mode's")
    parser.add_argument("--iters", type=int, help="timed calls per precision and round; "
                        "overrides the mode's")
    parser.add_argument("--warmup", type=int, help="untimed calls each; overrides the mode's")
    args = parser.parse_args(argv)
    benchlib.apply_mode(args, MODES, ("seq_length", "batch_size", "rounds", "iters", "warmup"),
                        parser)
    if not os.path.isfile(args.bert_config_file):
        parser.error("--bert_config_file: no such file: %s" % args.bert_config_file)
    return args


def main():
    args = parse_args()

    import numpy as np
    import tensorflow as tf
    from bert_tf.tasks.classifier.model import BertClassifier
    from bert_tf.modeling.config import BertConfig
    from bert_tf.modeling import precision

    config = BertConfig.from_json_file(args.bert_config_file)
    if args.seq_length > config.max_position_embeddings:
        benchlib.fail("--seq_length %d is over the config's max_position_embeddings %d"
                      % (args.seq_length, config.max_position_embeddings))
    fp32 = BertClassifier(config, 2)
    with precision.dtype_policy("bf16", inference=True):
        bf16 = BertClassifier(config, 2)
    rng = np.random.RandomState(0)
    shape = (args.batch_size, args.seq_length)
    mask = np.ones(shape, np.int32)
    for row, length in enumerate(rng.randint(args.seq_length // 2, args.seq_length + 1,
                                             args.batch_size)):
        mask[row, length:] = 0
    features = {"input_ids": (rng.randint(1000, config.vocab_size, shape) * mask).astype(np.int32),
                "input_mask": mask,
                "segment_ids": (np.arange(args.seq_length)[None, :] >= args.seq_length // 2)
                .astype(np.int32).repeat(args.batch_size, 0) * mask}
    fp32(features, training=False)
    bf16(features, training=False)
    for source, target in zip(fp32.weights, bf16.weights):
        target.assign(tf.cast(source.value, target.dtype))

    def forward(model):
        @tf.function(reduce_retracing=True)
        def call(input_ids, input_mask, segment_ids):
            bert = model.bert(input_ids, input_mask=input_mask, token_type_ids=segment_ids,
                              training=False)
            logits = model.classifier(bert["pooled_output"], training=False)
            return {"layers": [tf.cast(bert["all_encoder_layers"][i], tf.float32)
                               for i in (-1, -2, -3, -4)],
                    "pooled_output": tf.cast(bert["pooled_output"], tf.float32),
                    "probabilities": tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)}
        return lambda: call(features["input_ids"], features["input_mask"],
                            features["segment_ids"])

    runs = {"fp32": forward(fp32), "bf16": forward(bf16)}
    outputs = {}
    for name, run in runs.items():
        for _ in range(args.warmup):
            outputs[name] = tf.nest.map_structure(lambda t: t.numpy(), run())
    times = {name: [] for name in runs}
    for r in range(args.rounds):
        for name in benchlib.alternating_order(runs, r):  # both see the same machine load
            times[name].append(benchlib.time_calls(
                lambda: tf.nest.map_structure(lambda t: t.numpy(), runs[name]()), args.iters))
    batch = args.batch_size
    summary = {name: benchlib.summarize(rounds) for name, rounds in times.items()}
    print()
    print("Inference (extract_features' forward pass: BertClassifier, last four layers, pooled "
          "output, probabilities), config %s, batch %d x seq %d, random weights; %d rounds "
          "alternating fp32 and bf16, timed calls each per round: %d (after %d warm-up calls); "
          "median of all calls, spread = min-max of the round medians."
          % (os.path.basename(args.bert_config_file), batch, args.seq_length, args.rounds,
             args.iters, args.warmup))
    print()
    print(benchlib.markdown_table(
        ["precision", "ms / batch", "sequences / s", "spread (seq/s)", "vs fp32"],
        [[name, benchlib.format_number(s["median"] * 1000),
          benchlib.format_number(batch / s["median"]),
          benchlib.format_spread(batch / s["high"], batch / s["low"]),
          benchlib.format_ratio(summary["fp32"]["median"] / s["median"])]
         for name, s in summary.items()]))
    print()
    a, b = outputs["fp32"], outputs["bf16"]
    print(benchlib.markdown_table(
        ["output, bf16 vs fp32 (same weights)", "max abs difference"],
        [["pooled_output", "%.4f" % np.abs(a["pooled_output"] - b["pooled_output"]).max()],
         ["last layer", "%.4f" % np.abs(a["layers"][0] - b["layers"][0]).max()],
         ["probabilities", "%.4f" % np.abs(a["probabilities"] - b["probabilities"]).max()],
         ["predicted label equal", "%d / %d" % (
             int((a["probabilities"].argmax(1) == b["probabilities"].argmax(1)).sum()), batch)]]))
    sys.stdout.flush()

if __name__ == "__main__":
    main()
