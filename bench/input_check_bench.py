"""Cost of checking every record in the pre-training input pipeline.

  .venv/bin/python bench/input_check_bench.py [--batch_size 8] [--num_batches 3000]
      [--rounds 3] [--step_seconds 3.4]

Writes BERT-base-shaped pre-training records (max_seq_length 128,
max_predictions_per_seq 20, 4 files of 2,500 records, as
create_pretraining_data writes them) and reads `--num_batches` training
batches through `input_pipeline.create_pretraining_dataset`, with the
per-record check (`check_every_record=True`: each record parsed under its
name, its values checked against a BERT-base config) and without it. Reports
records/s of each (best of `--rounds`, alternating) and the CPU time per
record over all of tf.data's threads (least of the rounds; less sensitive to
other work on the machine than the wall-clock rate), the extra CPU time per
batch, and that time as a fraction of a training step of `--step_seconds`
(default: BERT-base, 8 records, on the CPU of the machine of BENCHMARKS.md;
on an accelerator the pipeline runs on the host, overlapped with the step by
`prefetch`, so the fraction is an upper bound of what the check can cost).
"""

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from bert_tf.modeling.config import BertConfig  # noqa: E402
from bert_tf.data import input_pipeline  # noqa: E402
from bert_tf.tasks.pretraining.data import records  # noqa: E402

SEQ_LENGTH = 128
MAX_PREDICTIONS = 20
VOCAB_SIZE = 30522  # BERT-base uncased


def write_files(directory, num_files, records_per_file, seed=0):
    """Records as create_pretraining_data writes them: random pairs, 15% masked."""
    serializer = records.ExampleSerializer(SEQ_LENGTH, MAX_PREDICTIONS, VOCAB_SIZE)
    rng = random.Random(seed)
    files = []
    for k in range(num_files):
        path = os.path.join(directory, "part-%d.tfrecord" % k)
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(records_per_file):
                len_a = rng.randint(8, SEQ_LENGTH - 20)
                len_b = rng.randint(1, SEQ_LENGTH - 3 - len_a)
                ids = [101] + [rng.randint(1000, VOCAB_SIZE - 1)
                               for _ in range(len_a + len_b + 2)]
                num_masked = min(MAX_PREDICTIONS, max(1, int(round(len(ids) * 0.15))))
                positions = sorted(rng.sample(range(1, len(ids)), num_masked))
                writer.write(serializer.serialize(ids, len_a, len_b, positions,
                                                  [ids[p] for p in positions],
                                                  rng.random() < 0.5))
        files.append(path)
    return files


def measure(files, config, batch_size, num_batches, check):
    """(records/s of wall time, CPU microseconds per record over all threads)."""
    dataset = input_pipeline.create_pretraining_dataset(
        files, SEQ_LENGTH, MAX_PREDICTIONS, batch_size, is_training=True, seed=None,
        check_files=False, config=config, check_every_record=check)
    iterator = iter(dataset)
    for _ in range(20):  # warm up: tracing, first reads
        next(iterator)
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(num_batches):
        next(iterator)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    num_records = num_batches * batch_size
    return num_records / wall, 1e6 * cpu / num_records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--num_batches", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--step_seconds", type=float, default=3.4,
                        help="seconds of one training step of --batch_size records")
    args = parser.parse_args()
    config = BertConfig(vocab_size=VOCAB_SIZE, hidden_size=768, num_hidden_layers=12,
                        num_attention_heads=12, intermediate_size=3072)
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(tmp, 4, 2500)
        results = {True: [], False: []}
        for _ in range(args.rounds):
            for check in (False, True):
                results[check].append(measure(files, config, args.batch_size,
                                              args.num_batches, check))
    print("batch_size %d, %d batches x %d rounds, tf %s, %d CPU(s)"
          % (args.batch_size, args.num_batches, args.rounds, tf.__version__, os.cpu_count()))
    best = {}
    for check, label in ((False, "without the check"), (True, "with the check   ")):
        rates = [rate for rate, _ in results[check]]
        cpu = min(us for _, us in results[check])
        best[check] = (max(rates), cpu)
        print("%s: %.0f records/s (rounds: %s), %.1f CPU us/record"
              % (label, max(rates), ", ".join("%.0f" % r for r in rates), cpu))
    extra_cpu = (best[True][1] - best[False][1]) * args.batch_size / 1e6
    print("extra host CPU time per batch of %d: %.3f ms = %.4f%% of a %.1f s step"
          % (args.batch_size, 1000 * extra_cpu, 100 * extra_cpu / args.step_seconds,
             args.step_seconds))


if __name__ == "__main__":
    main()
