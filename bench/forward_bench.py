r"""Forward-pass throughput of BERT-base: bert_tf against its peers, in one run.

  .venv/bin/python bench/forward_bench.py --seq_length=128 --batch_size=8 \
      [--keras_hub_python=/path/to/venv-with-keras-hub/bin/python]

Measures, on the same machine and inputs (random ids, full mask):
  * bert_tf   `BertModel` under `tf.function` (and with XLA, `jit_compile=True`);
  * original  Google's `modeling.BertModel` (bert-tensorflow 1.0.4) in a TF1
              `tf.Session`, via the test shim, in its own process;
  * keras-hub `BertBackbone` (same architecture), when an interpreter that has
              keras-hub is given (it is not a project dependency).
Each runs `--warmup` untimed calls, then `--iters` timed calls; the figure is
the median of per-call times, reported as sequences/s.
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

BASE = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)


def _time(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def bench_ours(args, jit):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import numpy as np
    import tensorflow as tf
    from bert_tf import BertConfig, BertModel
    model = BertModel(BertConfig(**BASE))
    ids = np.random.RandomState(0).randint(0, 30522, (args.batch_size, args.seq_length)).astype("int32")
    mask = np.ones_like(ids)
    types = np.zeros_like(ids)
    fn = tf.function(lambda a, b, c: model(a, b, c, training=False)["pooled_output"],
                     jit_compile=jit)
    return _time(lambda: fn(ids, mask, types).numpy(), args.warmup, args.iters)


ORIGINAL = r'''
import sys, json, time
sys.path.insert(0, %(repo)r)
from tests.original import shim
import numpy as np
from bert import modeling
tf = shim.tf1
config = modeling.BertConfig(**%(base)r)
ids = tf.placeholder(tf.int32, [%(b)d, %(s)d])
model = modeling.BertModel(config, False, ids, tf.ones_like(ids), tf.zeros_like(ids))
out = model.get_pooled_output()
data = np.random.RandomState(0).randint(0, 30522, (%(b)d, %(s)d)).astype("int32")
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(%(warmup)d):
        sess.run(out, {ids: data})
    times = []
    for _ in range(%(iters)d):
        t = time.perf_counter(); sess.run(out, {ids: data}); times.append(time.perf_counter() - t)
times.sort()
print("RESULT", json.dumps(times[len(times) // 2]))
'''

KERAS_HUB = r'''
import os, sys, json, time
os.environ["KERAS_BACKEND"] = "tensorflow"
import numpy as np, tensorflow as tf, keras_hub
model = keras_hub.models.BertBackbone(vocabulary_size=30522, num_layers=12, num_heads=12,
    hidden_dim=768, intermediate_dim=3072, max_sequence_length=512, num_segments=2)
data = {"token_ids": np.random.RandomState(0).randint(0, 30522, (%(b)d, %(s)d)).astype("int32"),
        "padding_mask": np.ones((%(b)d, %(s)d), "int32"),
        "segment_ids": np.zeros((%(b)d, %(s)d), "int32")}
fn = tf.function(lambda d: model(d, training=False)["pooled_output"])
for _ in range(%(warmup)d):
    fn(data).numpy()
times = []
for _ in range(%(iters)d):
    t = time.perf_counter(); fn(data).numpy(); times.append(time.perf_counter() - t)
times.sort()
print("RESULT", json.dumps(times[len(times) // 2]))
'''


def _run_script(python, script, args):
    code = script % {"repo": REPO, "base": BASE, "b": args.batch_size, "s": args.seq_length,
                     "warmup": args.warmup, "iters": args.iters}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=os.environ.get(
        "CUDA_VISIBLE_DEVICES", ""))
    env.pop("KERAS_BACKEND", None)
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("peer failed:\n" + proc.stderr[-3000:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--keras_hub_python", default=None)
    parser.add_argument("--skip_original", action="store_true")
    args = parser.parse_args()
    results = []
    if not args.skip_original:
        results.append(("original bert-tensorflow 1.0.4 (TF1 Session)",
                        _run_script(sys.executable, ORIGINAL, args)))
    if args.keras_hub_python:
        results.append(("keras-hub BertBackbone (tf.function)",
                        _run_script(args.keras_hub_python, KERAS_HUB, args)))
    results.append(("bert_tf BertModel (tf.function)", bench_ours(args, jit=False)))
    results.append(("bert_tf BertModel (tf.function, XLA)", bench_ours(args, jit=True)))
    print("BERT-base forward, batch %d x seq %d, median of %d calls after %d warm-up"
          % (args.batch_size, args.seq_length, args.iters, args.warmup))
    print("| implementation | ms / batch | sequences / s |")
    print("|---|---:|---:|")
    for name, seconds in results:
        print("| %s | %.1f | %.1f |" % (name, seconds * 1000, args.batch_size / seconds))


if __name__ == "__main__":
    main()
