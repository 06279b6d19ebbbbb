r"""Benchmark: create_pretraining_data, ours vs the original, side by side.

  .venv/bin/python bench/pretraining_data_bench.py --out_dir=/tmp/cpd_bench \
    --sizes=1,4,16 --modes=original,exact,sharded --num_workers=2

For each corpus size (the pydoc corpus, `bert_tf.data.demo_corpus`, written
`size` times; copy r > 0 prefixes each sentence with "r ") and each mode, one
fresh process runs the generation with the original's default flags
(max_seq_length 128, max_predictions_per_seq 20, dupe_factor 10, ...) and
reports instances/s (generation only, without interpreter/TF start-up) and
peak RSS. Modes:

  original  pip bert-tensorflow's create_pretraining_data.main (via
            tests/original/pretraining_data_oracle.py, TF 2.21 compat)
  exact     bert_tf, default mode (the original's output)
  sharded   bert_tf, --num_workers/--documents_per_shard (bounded memory)

With --verify (default on) the exact mode's records are compared with the
original's (after deterministic re-serialization) for every size where both
ran. The vocab is learned once from the 1x corpus with bert_tf.data.vocab.

Note: copies of the corpus repeat its words, so the tokenization cache helps
more on the larger sizes than on real text of the same size; the 1x row has
no such repetition.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import proctree  # noqa: E402  (bench/, beside this script)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

flags.DEFINE_string("out_dir", "/tmp/pretraining_data_bench", "Scratch directory.")
flags.DEFINE_string("sizes", "1,4,16", "Corpus sizes (copies of the pydoc corpus).")
flags.DEFINE_string("modes", "original,exact,sharded", "Which runs.")
flags.DEFINE_integer("original_max_size", 16, "Skip the original above this size.")
flags.DEFINE_integer("num_workers", 2, "Workers of the sharded mode.")
flags.DEFINE_integer("documents_per_shard", 64, "Shard size of the sharded mode.")
flags.DEFINE_integer("dupe_factor", 10, "As the original's flag.")
flags.DEFINE_integer("max_seq_length", 128, "As the original's flag.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "As the original's flag.")
flags.DEFINE_integer("vocab_size", 4000, "Vocab learned from the 1x corpus.")
flags.DEFINE_integer("repeats", 1, "Runs per (size, mode); the fastest is reported "
                     "(the machine may be shared), with the largest memory peak.")
flags.DEFINE_bool("verify", True, "Compare exact-mode records with the original's.")
flags.DEFINE_string("json_output", None, "Also write the results here.")
flags.DEFINE_string("internal_run_ours", None, "Internal: run bert_tf with this JSON spec.")

FLAGS = flags.FLAGS


def _status_kb(field):
    """A "VmRSS"/"VmHWM" line of /proc/self/status, in kB (VmHWM = peak RSS)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _run_ours(spec):
    """In a fresh process: bert_tf's create_pretraining_data, timed."""
    from absl import logging  # pylint: disable=g-import-not-at-top
    from bert_tf import tokenization  # pylint: disable=g-import-not-at-top
    from bert_tf.data import pretraining_data  # pylint: disable=g-import-not-at-top
    import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    logging.set_verbosity(logging.WARNING)
    rss_before = _status_kb("VmRSS")
    start = time.perf_counter()
    tokenizer = tokenization.FullTokenizer(spec["vocab_file"], do_lower_case=True)
    stats = pretraining_data.create_pretraining_data(
        [spec["input_file"]], [spec["output_file"]], tokenizer,
        max_seq_length=spec["max_seq_length"],
        max_predictions_per_seq=spec["max_predictions_per_seq"],
        dupe_factor=spec["dupe_factor"], num_workers=spec["num_workers"],
        documents_per_shard=spec["documents_per_shard"])
    seconds = time.perf_counter() - start
    print(json.dumps({"instances": stats["instances"], "seconds": seconds,
                      "rss_before_kb": rss_before, "peak_rss_kb": _status_kb("VmHWM")}))


def _subprocess(args):
    """Runs `python args`; returns (stdout, wall seconds, {"tree_pss_kb": peak}).

    The main process reports its exact peak RSS itself.
    """
    out, wall, _, tree_pss_kb, _ = proctree.run_python(args)
    return out, wall, {"tree_pss_kb": tree_pss_kb}


def _run_original(directory, corpus, vocab_file, output_file):
    runs_file = os.path.join(directory, "oracle_runs.json")
    stats_file = os.path.join(directory, "oracle_stats.json")
    flags_list = ["--input_file=" + corpus, "--output_file=" + output_file,
                  "--vocab_file=" + vocab_file, "--dupe_factor=%d" % FLAGS.dupe_factor,
                  "--max_seq_length=%d" % FLAGS.max_seq_length,
                  "--max_predictions_per_seq=%d" % FLAGS.max_predictions_per_seq]
    with open(runs_file, "w") as f:
        json.dump([{"mode": "pip", "flags": flags_list,
                    "log_file": os.path.join(directory, "oracle.log"),
                    "stats_file": stats_file}], f)
    _, wall, peaks = _subprocess(["-m", "tests.original.pretraining_data_oracle", runs_file])
    with open(stats_file) as f:
        stats = json.load(f)
    stats["wall"] = wall
    stats.update(peaks)
    return stats


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


def _parallelism_probe(num_workers, n=3 * 10 ** 6):
    """How many times faster num_workers processes run pure-Python work than one.

    (A 2-vCPU machine whose vCPUs share one core shows about 1.0.)
    """
    import multiprocessing  # pylint: disable=g-import-not-at-top
    start = time.perf_counter()
    for _ in range(2 * num_workers):
        _spin(n)
    serial = time.perf_counter() - start
    with multiprocessing.get_context("fork").Pool(num_workers) as pool:
        start = time.perf_counter()
        pool.map(_spin, [n] * (2 * num_workers))
        parallel = time.perf_counter() - start
    return serial / parallel


def main(argv):
    del argv
    if FLAGS.internal_run_ours:
        _run_ours(json.loads(FLAGS.internal_run_ours))
        return
    from bert_tf.data import demo_corpus  # pylint: disable=g-import-not-at-top
    from bert_tf.data import vocab  # pylint: disable=g-import-not-at-top
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    sizes = [int(s) for s in FLAGS.sizes.split(",")]
    modes = FLAGS.modes.split(",")
    vocab_file = os.path.join(FLAGS.out_dir, "vocab.txt")
    corpus1 = os.path.join(FLAGS.out_dir, "corpus_1x.txt")
    if not os.path.exists(corpus1):
        demo_corpus.write_pydoc_corpus(corpus1)
    if not os.path.exists(vocab_file):
        vocab.build_vocab([corpus1], vocab_file, vocab_size=FLAGS.vocab_size, lower_thresh=2)
    probe = _parallelism_probe(FLAGS.num_workers)
    print(json.dumps({"cpu_count": os.cpu_count(), "num_workers": FLAGS.num_workers,
                      "parallel_speedup_of_pure_python": round(probe, 2)}), flush=True)
    results = []
    for size in sizes:
        corpus = os.path.join(FLAGS.out_dir, "corpus_%dx.txt" % size)
        if not os.path.exists(corpus):
            demo_corpus.write_pydoc_corpus(corpus, repeat=size)
        corpus_mb = os.path.getsize(corpus) / 2 ** 20
        outputs = {}
        for mode in modes:
            if mode == "original" and size > FLAGS.original_max_size:
                continue
            directory = os.path.join(FLAGS.out_dir, "%s_%dx" % (mode, size))
            os.makedirs(directory, exist_ok=True)
            output_file = os.path.join(directory, "out.tfrecord")
            runs = []
            for _ in range(FLAGS.repeats):
                if mode == "original":
                    stats = _run_original(directory, corpus, vocab_file, output_file)
                else:
                    spec = {"input_file": corpus, "output_file": output_file,
                            "vocab_file": vocab_file, "max_seq_length": FLAGS.max_seq_length,
                            "max_predictions_per_seq": FLAGS.max_predictions_per_seq,
                            "dupe_factor": FLAGS.dupe_factor,
                            "num_workers": FLAGS.num_workers if mode == "sharded" else 1,
                            "documents_per_shard":
                                FLAGS.documents_per_shard if mode == "sharded" else 0}
                    out, wall, peaks = _subprocess(
                        [os.path.abspath(__file__), "--internal_run_ours=" + json.dumps(spec)])
                    stats = json.loads(out.strip().splitlines()[-1])
                    stats["wall"] = wall
                    stats.update(peaks)
                runs.append(stats)
            stats = dict(min(runs, key=lambda r: r["seconds"]))
            stats["peak_rss_kb"] = max(r["peak_rss_kb"] for r in runs)
            stats["tree_pss_kb"] = max(r["tree_pss_kb"] for r in runs)
            stats["all_seconds"] = [round(r["seconds"], 2) for r in runs]
            outputs[mode] = output_file
            row = {"size": size, "corpus_mb": round(corpus_mb, 2), "mode": mode,
                   "instances": stats["instances"], "seconds": round(stats["seconds"], 2),
                   "instances_per_s": round(stats["instances"] / stats["seconds"]),
                   "main_peak_rss_mb": round(stats["peak_rss_kb"] / 1024),
                   "all_processes_peak_pss_mb": round(stats["tree_pss_kb"] / 1024),
                   "process_wall_s": round(stats["wall"], 1),
                   "all_seconds": stats["all_seconds"]}
            results.append(row)
            print(json.dumps(row), flush=True)
        if FLAGS.verify and "original" in outputs and "exact" in outputs:
            same = _raw(outputs["exact"]) == _canonical(outputs["original"])
            print(json.dumps({"size": size, "exact_equals_original": same}), flush=True)
            results.append({"size": size, "exact_equals_original": same})
            if not same:
                raise SystemExit("exact mode differs from the original at size %d" % size)

    print()
    print("| corpus | mode | instances | s | instances/s | vs original | peak RSS MB (main) "
          "| peak PSS MB (all processes) |")
    print("|---|---|---|---|---|---|---|---|")
    base = {r["size"]: r["instances_per_s"] for r in results if r.get("mode") == "original"}
    for r in results:
        if "mode" not in r:
            continue
        ratio = ("%.1fx" % (r["instances_per_s"] / base[r["size"]])) if r["size"] in base else "-"
        print("| %dx (%.1f MB) | %s | %d | %.1f | %d | %s | %d | %d |" % (
            r["size"], r["corpus_mb"], r["mode"], r["instances"], r["seconds"],
            r["instances_per_s"], ratio, r["main_peak_rss_mb"], r["all_processes_peak_pss_mb"]))
    if FLAGS.json_output:
        with open(FLAGS.json_output, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    app.run(main)
