"""Oracle: Google's original `create_pretraining_data.py`, run in its own process.

Usage:
  python -m tests.original.pretraining_data_oracle RUNS_JSON

RUNS_JSON is a file with a list of runs, done one after the other in this
process (TensorFlow is imported once):
  [{"mode": "pip" | "wwm_head", "flags": ["--input_file=...", ...],
    "log_file": "...", "stats_file": "..."}, ...]
  or, for the reader side,
  [{"mode": "input_fn", "input_files": [...], "max_seq_length": int,
    "max_predictions_per_seq": int, "batch_size": int, "num_batches": int,
    "is_training": false, "out_npz": "..."}]
Before each run every flag is reset to its default, then the run's flags are
parsed.

input_fn: the original `run_pretraining.input_fn_builder(...)(params)` in graph
mode (do not mix it with the other modes in one runs file: the two original
modules define clashing absl flags); the first `num_batches` batches go to `out_npz` as arrays named
"<batch index>/<feature>".

MODE:
  pip       the PyPI `bert-tensorflow==1.0.4` module, unchanged: its `main()` runs
            with the given absl flags (the module defines its flags at import, on
            the global absl FLAGS, so the flags are parsed again with this argv).
  wwm_head  the same, with `create_masked_lm_predictions` replaced by
            `_head_create_masked_lm_predictions` below, a RE-STATEMENT of GitHub
            HEAD eedf571 (google-research/bert create_pretraining_data.py lines
            342-415), because the pip package has no whole-word masking. It
            reads `--do_whole_word_mask`, which this module defines as HEAD does.

LOG_FILE receives every message the original logs through `tf.logging` (the
"*** Example ***" blocks etc.), one per line. STATS_FILE receives JSON:
{"instances": int, "seconds": float (main() only), "peak_rss_kb": int (VmHWM)}.

The original writes its TFRecords itself (`--output_file`). Note that under
protobuf 7 (upb) a `tf.train.Example`'s map entries are serialized in an order
that changes from process to process, so two runs of the original give
different bytes for the same examples; tests compare records after a
deterministic re-serialization.
"""

from tests.original import shim  # noqa: F401  (must come first)

import collections  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from absl import flags  # noqa: E402

FLAGS = flags.FLAGS

# The original modules define their absl flags at import, and
# create_pretraining_data and run_pretraining define some of the same names,
# so each is imported only when a run needs it (one kind per runs file).
cpd = None


def _import_create_pretraining_data():
    global cpd, _PIP_CREATE_MASKED_LM_PREDICTIONS, _PIP_WRITE
    if cpd is None:
        from bert import create_pretraining_data  # pylint: disable=g-import-not-at-top
        cpd = create_pretraining_data
        _PIP_CREATE_MASKED_LM_PREDICTIONS = cpd.create_masked_lm_predictions
        _PIP_WRITE = cpd.write_instance_to_example_files
        if "do_whole_word_mask" not in FLAGS:
            flags.DEFINE_bool(
                "do_whole_word_mask", False,
                "Whether to use whole word masking rather than per-WordPiece masking.")


_MaskedLm = collections.namedtuple("_MaskedLm", ["index", "label"])


def _head_create_masked_lm_predictions(tokens, masked_lm_prob,
                                       max_predictions_per_seq, vocab_words, rng):
    """Re-stated from GitHub HEAD eedf571 create_pretraining_data.py:342-415.

    Same statements and the same order of RNG calls as HEAD; only the layout
    differs (this file uses 4-space indentation).
    """
    cand_indexes = []
    for (i, token) in enumerate(tokens):
        if token == "[CLS]" or token == "[SEP]":
            continue
        if (FLAGS.do_whole_word_mask and len(cand_indexes) >= 1 and
                token.startswith("##")):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])

    rng.shuffle(cand_indexes)

    output_tokens = list(tokens)

    num_to_predict = min(max_predictions_per_seq,
                         max(1, int(round(len(tokens) * masked_lm_prob))))

    masked_lms = []
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        is_any_index_covered = False
        for index in index_set:
            if index in covered_indexes:
                is_any_index_covered = True
                break
        if is_any_index_covered:
            continue
        for index in index_set:
            covered_indexes.add(index)

            masked_token = None
            if rng.random() < 0.8:
                masked_token = "[MASK]"
            else:
                if rng.random() < 0.5:
                    masked_token = tokens[index]
                else:
                    masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]

            output_tokens[index] = masked_token

            masked_lms.append(_MaskedLm(index=index, label=tokens[index]))
    assert len(masked_lms) <= num_to_predict
    masked_lms = sorted(masked_lms, key=lambda x: x.index)

    masked_lm_positions = []
    masked_lm_labels = []
    for p in masked_lms:
        masked_lm_positions.append(p.index)
        masked_lm_labels.append(p.label)

    return (output_tokens, masked_lm_positions, masked_lm_labels)


def _run(mode, flag_args, log_file, stats_file):
    _import_create_pretraining_data()
    if mode == "wwm_head":
        cpd.create_masked_lm_predictions = _head_create_masked_lm_predictions
    elif mode == "pip":
        cpd.create_masked_lm_predictions = _PIP_CREATE_MASKED_LM_PREDICTIONS
    else:
        raise SystemExit("unknown MODE %r" % mode)
    FLAGS.unparse_flags()
    FLAGS(["create_pretraining_data"] + list(flag_args))
    for name in ("input_file", "output_file", "vocab_file"):
        if not getattr(FLAGS, name):
            raise SystemExit("--%s is required" % name)

    tf_logger = logging.getLogger("tensorflow")
    handler = logging.FileHandler(log_file, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    tf_logger.addHandler(handler)

    counts = {}

    def counting_write(instances, *args, **kwargs):
        counts["instances"] = len(instances)
        return _PIP_WRITE(instances, *args, **kwargs)

    cpd.write_instance_to_example_files = counting_write
    try:
        start = time.perf_counter()
        cpd.main(None)
        seconds = time.perf_counter() - start
    finally:
        handler.flush()
        tf_logger.removeHandler(handler)
        handler.close()
        cpd.write_instance_to_example_files = _PIP_WRITE
    with open(stats_file, "w") as f:
        json.dump({"instances": counts.get("instances", 0), "seconds": seconds,
                   "peak_rss_kb": _peak_rss_kb()}, f)


def _peak_rss_kb():
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited at fork)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


_PIP_CREATE_MASKED_LM_PREDICTIONS = None
_PIP_WRITE = None


def _run_input_fn(run):
    import numpy as np  # pylint: disable=g-import-not-at-top
    from bert import run_pretraining  # pylint: disable=g-import-not-at-top
    tf1 = shim.tf1
    with tf1.Graph().as_default():
        input_fn = run_pretraining.input_fn_builder(
            run["input_files"], run["max_seq_length"], run["max_predictions_per_seq"],
            is_training=run["is_training"])
        dataset = input_fn({"batch_size": run["batch_size"]})
        features = tf1.data.make_one_shot_iterator(dataset).get_next()
        arrays = {}
        with tf1.Session() as session:
            for b in range(run["num_batches"]):
                for name, value in session.run(features).items():
                    arrays["%d/%s" % (b, name)] = value
    np.savez(run["out_npz"], **arrays)


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    with open(argv[1]) as f:
        runs = json.load(f)
    for run in runs:
        if run["mode"] == "input_fn":
            _run_input_fn(run)
        else:
            _run(run["mode"], run["flags"], run["log_file"], run["stats_file"])


if __name__ == "__main__":
    main(sys.argv)
