r"""Benchmark: tools/create_pretraining_data.py, whole process, ours vs the original.

  .venv/bin/python bench/pretraining_data_bench.py --quick
  .venv/bin/python bench/pretraining_data_bench.py --out_dir=/tmp/cpd_bench \
    --sizes=1,10,40 --runs=original,w1,w2,w1_d64,w2_d64 --rounds=3

The corpus is the pydoc corpus (`bert_tf.data.demo_corpus`) written `size`
times (copy r > 0 prefixes each sentence with "r "; 10x = 4.2 MB), with the
original's default flags (max_seq_length 128, max_predictions_per_seq 20,
dupe_factor 10, masked_lm_prob 0.15) and a vocab learned from the 1x corpus.
Each run is one fresh process, timed from start to exit (interpreter and
imports included), with the peak RSS and PSS summed over it and its workers.
Runs:

  original   pip bert-tensorflow's create_pretraining_data.main (through
             tests/original/pretraining_data_oracle.py, TF 2.21 compat); run
             once per size (it takes about 25 s at 10x)
  wN         tools/create_pretraining_data.py --num_workers=N (w1: exact
             mode, the original's output; N > 1: sharded mode with the
             default --documents_per_shard, from the corpus: 13 shards of
             64 documents at 10x, 16 shards of 198 at 40x)
  wN_dD      ... --num_workers=N --documents_per_shard=D

Ours alternate between the runs, round after round (the order reversed every
other round); each table gives the median over rounds, the spread (min-max)
and the ratio of the medians to the original and to w1. With --verify, w1's
records are compared with the original's (after deterministic
re-serialization). `--quick` (what `make bench` runs, about 90 s on 2 cores):
10x only, original once, w1, w2 and w2_d10000 (one shard, which the two
workers share), 3 rounds, no --verify.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import benchlib  # noqa: E402  (bench/, beside this script)
import proctree  # noqa: E402  (bench/, beside this script)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(REPO, "tools", "create_pretraining_data.py")

flags.DEFINE_bool("quick", False, "The quick run of `make bench` (see the module docstring).")
flags.DEFINE_string("out_dir", "/tmp/pretraining_data_bench", "Scratch directory.")
flags.DEFINE_string("sizes", "1,10,40", "Corpus sizes (copies of the pydoc corpus).")
flags.DEFINE_string("runs", "original,w1,w2,w1_d64,w2_d64",
                    "Which runs: original, wN, wN_dD (see the module docstring).")
flags.DEFINE_integer("original_max_size", 10, "Skip the original above this size.")
flags.DEFINE_integer("rounds", 3, "Alternating rounds of our runs (the original runs once).")
flags.DEFINE_integer("vocab_size", 4000, "Vocab learned from the 1x corpus.")
flags.DEFINE_bool("verify", True, "Compare w1's records with the original's.")
flags.DEFINE_string("json_output", None, "Also write the results here.")

FLAGS = flags.FLAGS


class BenchError(Exception):
    """Why the benchmark cannot run (one line)."""


def _parse_run(name):
    """'w2_d64' -> (2, 64); 'w1' -> (1, 0); 'original' -> None."""
    if name == "original":
        return None
    try:
        workers, _, shard = name[1:].partition("_d")
        if not name.startswith("w"):
            raise ValueError(name)
        return int(workers), int(shard or 0)
    except ValueError:
        raise BenchError("--runs: unknown run %r (original, wN or wN_dD)" % name) from None


def _describe(name):
    parsed = _parse_run(name)
    if parsed is None:
        return "the original (bert-tensorflow 1.0.4)"
    workers, shard = parsed
    text = "`--num_workers=%d`" % workers
    if shard:
        text += " `--documents_per_shard=%d`" % shard
    return text


def _run_process(args):
    try:
        out, wall, tree_rss_kb, tree_pss_kb, _ = proctree.run_python(args)
    except RuntimeError as e:
        lines = [line for line in str(e).splitlines() if line.strip()]
        raise BenchError("%s failed: %s" % (os.path.basename(args[0]) if args else "python",
                                            lines[-1] if lines else "no output")) from None
    return {"wall": wall, "tree_rss_kb": tree_rss_kb, "tree_pss_kb": tree_pss_kb, "out": out}


def _run_ours(name, corpus, vocab_file, output_file):
    workers, shard = _parse_run(name)
    args = [TOOL, "--input_file=" + corpus, "--output_file=" + output_file,
            "--vocab_file=" + vocab_file, "--num_workers=%d" % workers]
    if shard:
        args.append("--documents_per_shard=%d" % shard)
    stats = _run_process(args)
    return stats


def _run_original(directory, corpus, vocab_file, output_file):
    runs_file = os.path.join(directory, "oracle_runs.json")
    stats_file = os.path.join(directory, "oracle_stats.json")
    flags_list = ["--input_file=" + corpus, "--output_file=" + output_file,
                  "--vocab_file=" + vocab_file]
    with open(runs_file, "w") as f:
        json.dump([{"mode": "pip", "flags": flags_list,
                    "log_file": os.path.join(directory, "oracle.log"),
                    "stats_file": stats_file}], f)
    stats = _run_process(["-m", "tests.original.pretraining_data_oracle", runs_file])
    with open(stats_file) as f:
        stats.update(json.load(f))
    return stats


def _count_records(path):
    """The number of records in a TFRecord file, from its framing (no TensorFlow)."""
    count = 0
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if not header:
                return count
            if len(header) < 12:
                raise BenchError("%s: truncated TFRecord file" % path)
            f.seek(int.from_bytes(header[:8], "little") + 4, os.SEEK_CUR)
            count += 1


def _canonical(path):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return [tf.train.Example.FromString(r).SerializeToString(deterministic=True)
            for r in tf.data.TFRecordDataset(path).as_numpy_iterator()]


def _raw(path):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return list(tf.data.TFRecordDataset(path).as_numpy_iterator())


def _spin(n):
    total = 0
    for i in range(n):
        total += i
    return total


def _parallelism_probe(num_workers, n=2 * 10 ** 6):
    """How many times faster num_workers processes run pure-Python work than one."""
    import multiprocessing  # pylint: disable=g-import-not-at-top
    import time  # pylint: disable=g-import-not-at-top
    start = time.perf_counter()
    for _ in range(2 * num_workers):
        _spin(n)
    serial = time.perf_counter() - start
    with multiprocessing.get_context("fork").Pool(num_workers) as pool:
        start = time.perf_counter()
        pool.map(_spin, [n] * (2 * num_workers))
        parallel = time.perf_counter() - start
    return serial / parallel


def _size_table(size, corpus_mb, names, results, rounds):
    rows = []
    base_original = results.get("original", {}).get("median")
    base_w1 = results.get("w1", {}).get("median")
    for name in names:
        r = results.get(name)
        if r is None:
            continue
        median = r["median"]
        rows.append([
            _describe(name), benchlib.format_number(r["instances"], 0),
            "%.2f" % median, benchlib.format_spread(r["low"], r["high"], 2),
            benchlib.format_number(r["instances"] / median, 0),
            benchlib.format_ratio(benchlib.ratio(base_original, median)),
            benchlib.format_ratio(benchlib.ratio(base_w1, median)) if name != "w1" else "1.00x",
            benchlib.format_number(r["tree_rss_kb"] / 1024.0, 0),
            benchlib.format_number(r["tree_pss_kb"] / 1024.0, 0)])
    ours = [n for n in names if n != "original" and n in results]
    lines = ["%dx corpus (%.1f MB): whole process (start-up included), median of %d "
             "alternating rounds of %s%s; peak memory summed over the process and its "
             "workers." % (size, corpus_mb, rounds, ", ".join(ours),
                           "; the original once" if "original" in results else ""),
             "",
             benchlib.markdown_table(
                 ["run", "instances", "s (median)", "spread s", "instances/s",
                  "vs original", "vs --num_workers=1", "peak RSS MB", "peak PSS MB"],
                 rows, align="lrrrrrrrr")]
    return "\n".join(lines)


def _bench(sizes, names, rounds, verify):
    from bert_tf.data import demo_corpus  # pylint: disable=g-import-not-at-top
    from bert_tf.data import vocab  # pylint: disable=g-import-not-at-top
    for name in names:
        _parse_run(name)
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    vocab_file = os.path.join(FLAGS.out_dir, "vocab.txt")
    corpus1 = os.path.join(FLAGS.out_dir, "corpus_1x.txt")
    if not os.path.exists(corpus1):
        demo_corpus.write_pydoc_corpus(corpus1)
    if not os.path.exists(vocab_file):
        vocab.build_vocab([corpus1], vocab_file, vocab_size=FLAGS.vocab_size, lower_thresh=2)
    probe = _parallelism_probe(2)
    print("cpu_count %d; a plain 2-process Python pool ran %.2fx one process"
          % (os.cpu_count(), probe), flush=True)
    all_results = []
    tables = []
    for size in sizes:
        corpus = os.path.join(FLAGS.out_dir, "corpus_%dx.txt" % size)
        if not os.path.exists(corpus):
            demo_corpus.write_pydoc_corpus(corpus, repeat=size)
        corpus_mb = os.path.getsize(corpus) / 2 ** 20
        outputs = {name: os.path.join(FLAGS.out_dir, "%s_%dx.tfrecord" % (name, size))
                   for name in names}
        results = {}
        if "original" in names and size <= FLAGS.original_max_size:
            directory = os.path.join(FLAGS.out_dir, "original_%dx" % size)
            os.makedirs(directory, exist_ok=True)
            stats = _run_original(directory, corpus, vocab_file, outputs["original"])
            results["original"] = {"median": stats["wall"], "low": stats["wall"],
                                   "high": stats["wall"], "instances": stats["instances"],
                                   "generation_s": stats["seconds"],
                                   "tree_rss_kb": stats["tree_rss_kb"],
                                   "tree_pss_kb": stats["tree_pss_kb"]}
            print(json.dumps({"size": size, "run": "original",
                              "wall_s": round(stats["wall"], 2),
                              "generation_s": round(stats["seconds"], 2)}), flush=True)
        ours = [n for n in names if n != "original"]
        walls = {n: [] for n in ours}
        peaks = {n: [0, 0] for n in ours}
        for round_index in range(rounds):
            for name in benchlib.alternating_order(ours, round_index):
                stats = _run_ours(name, corpus, vocab_file, outputs[name])
                walls[name].append([stats["wall"]])
                peaks[name][0] = max(peaks[name][0], stats["tree_rss_kb"])
                peaks[name][1] = max(peaks[name][1], stats["tree_pss_kb"])
                print(json.dumps({"size": size, "run": name, "round": round_index,
                                  "wall_s": round(stats["wall"], 2)}), flush=True)
        for name in ours:
            summary = benchlib.summarize(walls[name])
            summary.update(instances=_count_records(outputs[name]), tree_rss_kb=peaks[name][0],
                           tree_pss_kb=peaks[name][1])
            results[name] = summary
        if verify and "original" in results and "w1" in results:
            same = _raw(outputs["w1"]) == _canonical(outputs["original"])
            print("%dx: --num_workers=1's records %s the original's" % (
                size, "equal" if same else "DIFFER FROM"), flush=True)
            if not same:
                raise BenchError("--num_workers=1 differs from the original at size %d" % size)
        for name, r in results.items():
            all_results.append(dict(r, size=size, run=name, corpus_mb=round(corpus_mb, 2)))
        tables.append(_size_table(size, corpus_mb, names, results, rounds))
    print()
    print("## create_pretraining_data")
    print()
    print("\n\n".join(tables))
    if FLAGS.json_output:
        with open(FLAGS.json_output, "w") as f:
            json.dump(all_results, f, indent=1)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    if FLAGS.quick:
        sizes, names, rounds, verify = [10], ["original", "w1", "w2", "w2_d10000"], 3, False
    else:
        try:
            sizes = [int(s) for s in FLAGS.sizes.split(",")]
        except ValueError:
            sys.exit("pretraining_data_bench: --sizes=%s: comma-separated integers"
                     % FLAGS.sizes)
        names, rounds, verify = FLAGS.runs.split(","), FLAGS.rounds, FLAGS.verify
    if rounds < 1:
        sys.exit("pretraining_data_bench: --rounds=%d must be >= 1" % rounds)
    try:
        _bench(sizes, names, rounds, verify)
    except (BenchError, OSError) as e:
        sys.exit("pretraining_data_bench: %s" % e)


if __name__ == "__main__":
    app.run(main)
