r"""Records/s the training input pipelines deliver, against what a training step consumes.

  .venv/bin/python bench/input_pipeline_bench.py [--quick] [--seq_lengths 128,512]
      [--batch_sizes 8,64] [--rounds 3] [--seconds 4] [--dupe_factor 5]
      [--consumer_rates 1000,3000] [--cpu_step 128:8:3.4]

Real records, written by the project's own functions into a temporary
directory from the pydoc corpus (`demo_corpus`: CPython's help text, one
sentence per line) with a vocab learned from it:

  pre-training  `pretraining.create_pretraining_data` (exact mode, 20
                predictions at seq 128 and 80 at seq 512, `--dupe_factor`),
                4 output files, read by `input_pipeline.create_pretraining_dataset`
                as `run_pretraining` reads them (training: file shuffle,
                interleave, record shuffle, batch, one vectorized parse) with
                the per-record checks on (`check_every_record=True`, against
                a BERT-base config);
  fine-tuning   `classifier_data.file_based_convert_examples_to_features` on
                the sentence-pair task of `demo_corpus.write_sentence_pair_task`
                (MRPC's layout), read by `input_pipeline.create_finetuning_dataset`
                as `run_classifier` reads train.tf_record (with its checks).

Each (pipeline, seq, batch) is iterated on the host without a model for
`--seconds` after 20 warm-up batches, `--rounds` times (the configurations
alternate within a round). Reported: records/s (median over rounds, min-max),
the CPU time per record over all of tf.data's threads (least of the rounds;
steadier than wall time when other work shares the cores), and the ratio of
records/s to what a training step consumes:

  this CPU    `--cpu_step SEQ:BATCH:SECONDS` (default: BERT-base pre-training,
              seq 128 batch 8, 3.4 s a step, BENCHMARKS.md), scaled to other
              batches and lengths as the same records/s;
  accelerator  `--consumer_rates` sequences/s (default 1,000 and 3,000: a
              current GPU on BERT-base at seq 128), applied to seq 512 too,
              which overstates what any accelerator consumes there.

The goal: the pipeline delivers at least 10x what a step consumes.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

BERT_BASE = os.path.join(REPO_ROOT, "configs", "uncased_L-12_H-768_A-12.json")
MAX_PREDICTIONS = {128: 20, 512: 80}
NUM_FILES = 4


def fail(message):
    print("input_pipeline_bench: %s" % message, file=sys.stderr)
    sys.exit(2)


def parse_ints(flag, value):
    try:
        values = [int(v) for v in value.split(",") if v]
    except ValueError:
        fail("--%s: comma-separated integers, got %r" % (flag, value))
    if not values or min(values) < 1:
        fail("--%s: positive integers, got %r" % (flag, value))
    return values


def write_vocab(directory):
    from tests.test_tokenization import build_corpus_vocab
    from tests.test_tokenization import corpus_paragraphs
    vocab_file = os.path.join(directory, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in build_corpus_vocab(corpus_paragraphs())))
    return vocab_file


def write_pretraining_records(directory, vocab_file, seq_length, dupe_factor):
    """create_pretraining_data on the pydoc corpus; returns (files, number of records)."""
    from bert_tf import tokenization
    from bert_tf.data import demo_corpus
    from bert_tf.tasks.pretraining import data as pretraining
    corpus = os.path.join(directory, "corpus.txt")
    if not os.path.exists(corpus):
        demo_corpus.write_pydoc_corpus(corpus)
    files = [os.path.join(directory, "pretrain-%d-%d.tfrecord" % (seq_length, k))
             for k in range(NUM_FILES)]
    stats = pretraining.create_pretraining_data(
        [corpus], files, tokenization.FullTokenizer(vocab_file, do_lower_case=True),
        vocab_file, max_seq_length=seq_length,
        max_predictions_per_seq=MAX_PREDICTIONS[seq_length], dupe_factor=dupe_factor)
    return files, stats["instances"]


def write_classifier_records(directory, vocab_file, seq_length):
    """The sentence-pair task's train.tf_record at seq_length; returns (file, records)."""
    from bert_tf import tokenization
    from bert_tf.tasks.classifier import data as classifier_data
    from bert_tf.tasks.classifier import data_processors as classifier_processors
    from bert_tf.data import demo_corpus
    task_dir = os.path.join(directory, "pairs")
    if not os.path.exists(task_dir):
        demo_corpus.write_sentence_pair_task(task_dir)
    processor = classifier_processors.get_processor("mrpc")
    examples = processor.get_train_examples(task_dir)
    output = os.path.join(directory, "train-%d.tf_record" % seq_length)
    n = classifier_data.file_based_convert_examples_to_features(
        examples, processor.get_labels(), seq_length,
        tokenization.FullTokenizer(vocab_file, do_lower_case=True), output)
    return output, n


def make_dataset(kind, files, seq_length, batch_size, config):
    from bert_tf.tasks.classifier import data as classifier_data
    from bert_tf.data import input_pipeline
    if kind == "pre-training":
        return input_pipeline.create_pretraining_dataset(
            files, seq_length, MAX_PREDICTIONS[seq_length], batch_size, is_training=True,
            config=config, check_every_record=True)
    return input_pipeline.create_finetuning_dataset(
        files, classifier_data.name_to_features(seq_length), batch_size,
        limits=input_pipeline.record_limits(config, seq_length, num_labels=2),
        check_every_record=True)


def measure(dataset, batch_size, seconds):
    """(records/s of wall time, CPU microseconds per record over all threads)."""
    iterator = iter(dataset)
    for _ in range(20):  # tracing, first reads, buffers filled
        next(iterator)
    batches = 0
    start, start_cpu = time.perf_counter(), time.process_time()
    while True:
        for _ in range(10):
            next(iterator)
        batches += 10
        wall = time.perf_counter() - start
        if wall >= seconds:
            break
    cpu = time.process_time() - start_cpu
    records = batches * batch_size
    return records / wall, 1e6 * cpu / records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 rounds of 1.5 s, dupe_factor 2 (about 1-2 minutes on 2 cores)")
    parser.add_argument("--seq_lengths", default="128,512")
    parser.add_argument("--batch_sizes", default="8,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="timed seconds per configuration and round")
    parser.add_argument("--dupe_factor", type=int, default=5,
                        help="create_pretraining_data's dupe_factor (more records)")
    parser.add_argument("--consumer_rates", default="1000,3000",
                        help="accelerator sequences/s to compare with")
    parser.add_argument("--cpu_step", default="128:8:3.4",
                        help="SEQ:BATCH:SECONDS of a BERT-base training step on this CPU")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.dupe_factor = 2, 1.5, 2
    seq_lengths = parse_ints("seq_lengths", args.seq_lengths)
    batch_sizes = parse_ints("batch_sizes", args.batch_sizes)
    consumers = parse_ints("consumer_rates", args.consumer_rates)
    unknown = [s for s in seq_lengths if s not in MAX_PREDICTIONS]
    if unknown:
        fail("--seq_lengths: %s not in %s" % (unknown, sorted(MAX_PREDICTIONS)))
    try:
        step_seq, step_batch, step_seconds = args.cpu_step.split(":")
        cpu_rate = int(step_batch) / float(step_seconds)
        step_seq = int(step_seq)
    except ValueError:
        fail("--cpu_step: SEQ:BATCH:SECONDS, got %r" % args.cpu_step)
    if args.rounds < 1 or args.seconds <= 0 or args.dupe_factor < 1:
        fail("--rounds, --seconds and --dupe_factor must be positive")

    import tensorflow as tf
    from bert_tf.modeling.config import BertConfig
    config = BertConfig.from_json_file(BERT_BASE)
    results, sizes = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = write_vocab(tmp)
        sources = {}
        for seq in seq_lengths:
            start = time.perf_counter()
            files, n = write_pretraining_records(tmp, vocab_file, seq, args.dupe_factor)
            sources["pre-training", seq] = files
            sizes["pre-training", seq] = (n, time.perf_counter() - start)
            start = time.perf_counter()
            output, n = write_classifier_records(tmp, vocab_file, seq)
            sources["fine-tuning", seq] = output
            sizes["fine-tuning", seq] = (n, time.perf_counter() - start)
        configs = [(kind, seq, batch) for kind in ("pre-training", "fine-tuning")
                   for seq in seq_lengths for batch in batch_sizes]
        for round_index in range(args.rounds):
            for key in configs:
                kind, seq, batch = key
                dataset = make_dataset(kind, sources[kind, seq], seq, batch, config)
                results.setdefault(key, []).append(measure(dataset, batch, args.seconds))
            print("round %d done" % round_index, file=sys.stderr)

    print("Input pipelines on the host, no model: real records from the pydoc corpus "
          "(%s), per-record checks on; %d rounds of %.1f s after 20 warm-up batches; "
          "tf %s, %d CPU cores"
          % ("; ".join("%s seq %d: %d records, written in %.1f s" % (k, s, n, t)
                       for (k, s), (n, t) in sorted(sizes.items())),
             args.rounds, args.seconds, tf.__version__, os.cpu_count()))
    print()
    header = ("| pipeline | seq | batch | records/s (median) | spread (min-max) | CPU us/record "
              "| x this CPU's step (%.2f seq/s) |" % cpu_rate)
    rule = "|---|---:|---:|---:|---:|---:|---:|"
    for rate in consumers:
        header += " x %s seq/s |" % format(rate, ",")
        rule += "---:|"
    print(header)
    print(rule)
    short = []
    for key in configs:
        kind, seq, batch = key
        rates = [r for r, _ in results[key]]
        median = statistics.median(rates)
        # A step at seq 512 costs more than at 128: this CPU consumes fewer
        # records; scaling by tokens keeps the comparison conservative.
        cpu_consumes = cpu_rate * step_seq / float(seq)
        row = "| %s | %d | %d | %s | %s-%s | %.1f | %s |" % (
            kind, seq, batch, format(median, ",.0f"), format(min(rates), ",.0f"),
            format(max(rates), ",.0f"), min(us for _, us in results[key]),
            format(median / cpu_consumes, ",.0f"))
        for rate in consumers:
            row += " %.1f |" % (median / rate)
            if median < 10 * rate:
                short.append("%s seq %d batch %d vs %d seq/s" % (kind, seq, batch, rate))
        print(row)
    print()
    print("CPU step consumption: %d records in %s s at seq %d, taken as tokens/s for "
          "other lengths" % (int(step_batch), step_seconds, step_seq))
    print("below 10x: %s" % ("; ".join(short) if short else "none"))


if __name__ == "__main__":
    main()
