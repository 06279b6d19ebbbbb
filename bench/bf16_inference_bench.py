r"""Inference in bfloat16 against float32: speed and the difference in the outputs.

  .venv/bin/python bench/bf16_inference_bench.py \
      --bert_config_file=configs/uncased_L-12_H-768_A-12.json \
      --seq_length=128 --batch_size=8 --iters=10

Builds the classifier (`BertClassifier`, 2 labels, random weights) twice with
the same weights: in float32 and under `--mixed_precision=bf16`'s policy
(`precision.dtype_policy("bf16")`, as `tools/extract_features.py`,
`tools/export_saved_model.py` and the Trainer build it). Both run the
`extract_features`-style forward pass (`extract_features.predict_layers`'s:
the last four layers, cast to float32, under `tf.function`) on the same
random batch (real-looking ids, a mask with padding), alternating float32 and
bf16 calls after `--warmup` untimed ones. Prints the median seq/s of each and
the max abs difference of the pooled output, the last layer and the
classifier's probabilities (softmax of the logits) between the two.
"""

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bert_config_file",
                        default=os.path.join(REPO, "configs", "uncased_L-12_H-768_A-12.json"))
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf
    from bert_tf.classifier import BertClassifier
    from bert_tf.config import BertConfig
    from bert_tf.training import precision

    config = BertConfig.from_json_file(args.bert_config_file)
    fp32 = BertClassifier(config, 2)
    with precision.dtype_policy("bf16"):
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
        target.assign(source.numpy())

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
    for _ in range(args.iters):
        for name, run in runs.items():  # alternating: both see the same machine load
            start = time.perf_counter()
            tf.nest.map_structure(lambda t: t.numpy(), run())
            times[name].append(time.perf_counter() - start)
    print("BERT config %s, seq %d, batch %d, %d timed calls each (median)"
          % (os.path.basename(args.bert_config_file), args.seq_length, args.batch_size,
             args.iters))
    for name in runs:
        median = sorted(times[name])[len(times[name]) // 2]
        print("  %s: %.2f seq/s (%.3f s a batch)" % (name, args.batch_size / median, median))
    a, b = outputs["fp32"], outputs["bf16"]
    print("  max abs difference bf16 vs fp32: pooled_output %.4f, last layer %.4f, "
          "probabilities %.4f; predicted label equal on %d/%d"
          % (np.abs(a["pooled_output"] - b["pooled_output"]).max(),
             np.abs(a["layers"][0] - b["layers"][0]).max(),
             np.abs(a["probabilities"] - b["probabilities"]).max(),
             int((a["probabilities"].argmax(1) == b["probabilities"].argmax(1)).sum()),
             args.batch_size))


if __name__ == "__main__":
    main()
