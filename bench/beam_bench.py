r"""Benchmark: create_pretraining_data on Apache Beam (DirectRunner) vs sharded mode vs the original.

  python bench/beam_bench.py --out_dir=/tmp/beam_bench --sizes=10,100 \
    --modes=original,sharded,beam --num_workers=2

(with a Python that has apache-beam, e.g. `make setup`'s .venv once
requirements-dev.txt lists it.) For each corpus size (the pydoc corpus,
`bert_tf.data.demo_corpus`, written `size` times; 1x = 0.4 MB) and each mode,
one fresh process generates the data with the original's default flags
(max_seq_length 128, max_predictions_per_seq 20, dupe_factor 10, ...) and
reports instances/s (generation only, without interpreter/TF start-up; for
Beam, worker start-up is included) and memory. Modes:

  original  pip bert-tensorflow's create_pretraining_data.main (via
            tests/original/pretraining_data_oracle.py), one process
  sharded   bert_tf, --num_workers=N --documents_per_shard=D
  beam      bert_tf on Beam's DirectRunner, --direct_running_mode=multi_processing
            --direct_num_workers=N, the same D
  beam_in_process  DirectRunner in the main process (--direct_running_mode=in_memory)

Memory: the peak of the summed RSS and of the summed PSS (shared pages split
between the processes sharing them) of the process and all its descendants,
sampled every 0.25 s (descendants looked up every second). RSS counts
TensorFlow's shared pages once per process; PSS does not.

With --verify (default on) every Beam output file must equal the sharded
mode's byte for byte.
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

flags.DEFINE_string("out_dir", "/tmp/beam_bench", "Scratch directory.")
flags.DEFINE_string("sizes", "10,100", "Corpus sizes (copies of the 0.4 MB pydoc corpus).")
flags.DEFINE_string("modes", "original,sharded,beam", "Which runs.")
flags.DEFINE_integer("original_max_size", 10, "Skip the original above this size.")
flags.DEFINE_integer("num_workers", 2, "Worker processes of sharded mode and of Beam.")
flags.DEFINE_integer("documents_per_shard", 64, "Shard size (sharded mode and Beam).")
flags.DEFINE_integer("num_output_files", 4, "Output files of every run.")
flags.DEFINE_integer("dupe_factor", 10, "As the original's flag.")
flags.DEFINE_integer("max_seq_length", 128, "As the original's flag.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "As the original's flag.")
flags.DEFINE_integer("vocab_size", 4000, "Vocab learned from the 1x corpus.")
flags.DEFINE_integer("repeats", 1, "Runs per (size, mode); the fastest is reported (the "
                     "machine may be shared), with the largest memory peaks.")
flags.DEFINE_bool("verify", True, "Compare Beam's files with sharded mode's.")
flags.DEFINE_bool("keep_outputs", False, "Keep each size's outputs (they can be large).")
flags.DEFINE_string("json_output", None, "Also write the results here.")
flags.DEFINE_string("internal_run", None, "Internal: run one mode with this JSON spec.")

FLAGS = flags.FLAGS


def _run_one(spec):
    """In a fresh process: one bert_tf mode, timed from after the imports."""
    from absl import logging  # pylint: disable=g-import-not-at-top
    from bert_tf.tasks.pretraining import data as pretraining  # pylint: disable=g-import-not-at-top
    __import__("tensorflow")  # its import is not generation time
    logging.set_verbosity(logging.WARNING)
    options = dict(max_seq_length=spec["max_seq_length"],
                   max_predictions_per_seq=spec["max_predictions_per_seq"],
                   dupe_factor=spec["dupe_factor"],
                   documents_per_shard=spec["documents_per_shard"])
    if spec["mode"].startswith("beam"):
        from bert_tf.tasks.pretraining.data import beam  # pylint: disable=g-import-not-at-top
        import logging as std_logging  # pylint: disable=g-import-not-at-top
        std_logging.getLogger("apache_beam").setLevel(std_logging.WARNING)
        running_mode = "multi_processing" if spec["mode"] == "beam" else "in_memory"
        workers = spec["num_workers"] if spec["mode"] == "beam" else 1
        start = time.perf_counter()
        stats = beam.create_pretraining_data_beam(
            [spec["input_file"]], spec["output_files"], spec["vocab_file"],
            runner="DirectRunner", beam_args=["--direct_running_mode=" + running_mode,
                                              "--direct_num_workers=%d" % workers], **options)
    else:
        from bert_tf import tokenization  # pylint: disable=g-import-not-at-top
        start = time.perf_counter()
        tokenizer = tokenization.FullTokenizer(spec["vocab_file"], do_lower_case=True)
        stats = pretraining.create_pretraining_data(
            [spec["input_file"]], spec["output_files"], tokenizer,
            num_workers=spec["num_workers"], **options)
    print(json.dumps({"instances": stats["instances"], "shards": stats["shards"],
                      "seconds": time.perf_counter() - start}))


def _run_original(directory, corpus, vocab_file, output_files):
    runs_file = os.path.join(directory, "oracle_runs.json")
    stats_file = os.path.join(directory, "oracle_stats.json")
    flags_list = ["--input_file=" + corpus, "--output_file=" + ",".join(output_files),
                  "--vocab_file=" + vocab_file, "--dupe_factor=%d" % FLAGS.dupe_factor,
                  "--max_seq_length=%d" % FLAGS.max_seq_length,
                  "--max_predictions_per_seq=%d" % FLAGS.max_predictions_per_seq]
    with open(runs_file, "w") as f:
        json.dump([{"mode": "pip", "flags": flags_list,
                    "log_file": os.path.join(directory, "oracle.log"),
                    "stats_file": stats_file}], f)
    out = proctree.run_python(["-m", "tests.original.pretraining_data_oracle", runs_file])
    with open(stats_file) as f:
        stats = json.load(f)
    return stats, out[1:]


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def main(argv):
    del argv
    if FLAGS.internal_run:
        _run_one(json.loads(FLAGS.internal_run))
        return
    import shutil  # pylint: disable=g-import-not-at-top
    from bert_tf.data import demo_corpus  # pylint: disable=g-import-not-at-top
    from bert_tf.data import vocab  # pylint: disable=g-import-not-at-top
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    vocab_file = os.path.join(FLAGS.out_dir, "vocab.txt")
    corpus1 = os.path.join(FLAGS.out_dir, "corpus_1x.txt")
    if not os.path.exists(corpus1):
        demo_corpus.write_pydoc_corpus(corpus1)
    if not os.path.exists(vocab_file):
        vocab.build_vocab([corpus1], vocab_file, vocab_size=FLAGS.vocab_size, lower_thresh=2)
    print(json.dumps({"cpu_count": os.cpu_count(), "num_workers": FLAGS.num_workers,
                      "documents_per_shard": FLAGS.documents_per_shard,
                      "dupe_factor": FLAGS.dupe_factor}), flush=True)
    results = []
    for size in [int(s) for s in FLAGS.sizes.split(",")]:
        corpus = os.path.join(FLAGS.out_dir, "corpus_%dx.txt" % size)
        if not os.path.exists(corpus):
            demo_corpus.write_pydoc_corpus(corpus, repeat=size)
        corpus_mb = os.path.getsize(corpus) / 2 ** 20
        outputs = {}
        for mode in FLAGS.modes.split(","):
            if mode == "original" and size > FLAGS.original_max_size:
                continue
            directory = os.path.join(FLAGS.out_dir, "%s_%dx" % (mode, size))
            shutil.rmtree(directory, ignore_errors=True)
            os.makedirs(directory)
            output_files = [os.path.join(directory, "out-%d.tfrecord" % i)
                            for i in range(FLAGS.num_output_files)]
            runs = []
            for _ in range(FLAGS.repeats):
                if mode == "original":
                    stats, (wall, rss, pss, processes) = _run_original(
                        directory, corpus, vocab_file, output_files)
                    stats["shards"] = 1
                else:
                    spec = {"mode": mode, "input_file": corpus, "output_files": output_files,
                            "vocab_file": vocab_file, "max_seq_length": FLAGS.max_seq_length,
                            "max_predictions_per_seq": FLAGS.max_predictions_per_seq,
                            "dupe_factor": FLAGS.dupe_factor, "num_workers": FLAGS.num_workers,
                            "documents_per_shard": FLAGS.documents_per_shard}
                    out, wall, rss, pss, processes = proctree.run_python(
                        [os.path.abspath(__file__), "--internal_run=" + json.dumps(spec)])
                    stats = json.loads(out.strip().splitlines()[-1])
                runs.append((stats, wall, rss, pss, processes))
            stats, wall, _, _, processes = min(runs, key=lambda r: r[0]["seconds"])
            rss = max(r[2] for r in runs)
            pss = max(r[3] for r in runs)
            outputs[mode] = output_files
            row = {"size": size, "corpus_mb": round(corpus_mb, 1), "mode": mode,
                   "instances": stats["instances"], "shards": stats["shards"],
                   "seconds": round(stats["seconds"], 1),
                   "instances_per_s": round(stats["instances"] / stats["seconds"]),
                   "process_wall_s": round(wall, 1), "peak_tree_rss_mb": round(rss / 1024),
                   "peak_tree_pss_mb": round(pss / 1024), "processes": processes,
                   "all_seconds": [round(r[0]["seconds"], 1) for r in runs]}
            results.append(row)
            print(json.dumps(row), flush=True)
        if FLAGS.verify and "sharded" in outputs:
            for mode in ("beam", "beam_in_process"):
                if mode in outputs:
                    same = all(_read(a) == _read(b)
                               for a, b in zip(outputs[mode], outputs["sharded"]))
                    print(json.dumps({"size": size, "%s_equals_sharded" % mode: same}),
                          flush=True)
                    if not same:
                        raise SystemExit("%s differs from sharded mode at size %d"
                                         % (mode, size))
        if not FLAGS.keep_outputs:
            for files in outputs.values():
                shutil.rmtree(os.path.dirname(files[0]), ignore_errors=True)

    print()
    print("| corpus | mode | instances | shards | s | instances/s | vs original "
          "| peak RSS MB, all processes | peak PSS MB, all processes |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    base = {r["size"]: r["instances_per_s"] for r in results if r["mode"] == "original"}
    for r in results:
        ratio = ("%.1fx" % (r["instances_per_s"] / base[r["size"]])) if r["size"] in base else ""
        print("| %dx (%.1f MB) | %s | %d | %d | %.1f | %d | %s | %d | %d |" % (
            r["size"], r["corpus_mb"], r["mode"], r["instances"], r["shards"], r["seconds"],
            r["instances_per_s"], ratio, r["peak_tree_rss_mb"], r["peak_tree_pss_mb"]))
    if FLAGS.json_output:
        with open(FLAGS.json_output, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    app.run(main)
