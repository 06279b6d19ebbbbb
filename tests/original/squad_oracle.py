"""Oracle: the original `run_squad.py` data side and `write_predictions`, in its own process.

Usage:
  python -m tests.original.squad_oracle RUNS_JSON

RUNS_JSON is a file with a list of runs, done one after the other in this
process (TensorFlow and run_squad are imported once). Every run names the
SQuAD file and the tokenizer:
  {"mode": ..., "input_file": str, "vocab_file": str, "do_lower_case": bool,
   "version_2_with_negative": bool, "max_seq_length": int, "doc_stride": int,
   "max_query_length": int, ...}

MODE:
  features  the original `read_squad_examples(input_file, is_training)` and
            `convert_examples_to_features(...)` with the original `FeatureWriter`
            writing "tf_record" (as main() does for train.tf_record /
            eval.tf_record). "json_file" receives {"examples": [...],
            "features": [...]} with every field (token_to_orig_map and
            token_is_max_context as [key, value] pairs in dict order);
            "log_file" every message the original logs through tf.logging.
            Extra keys: "is_training" (bool).
  predict   the original's eval features (is_training=False) of input_file,
            then, for each entry of "predictions" ({"n_best_size",
            "max_answer_length", "null_score_diff_threshold",
            "verbose_logging", "out_dir"}), the original `write_predictions`
            on the logits in "logits_npz" (arrays "unique_ids", "start_logits",
            "end_logits" [num_features, max_seq_length]; each result is built as
            the original main() builds RawResult: int id, lists of float(x)),
            writing predictions.json, nbest_predictions.json and (v2)
            null_odds.json into out_dir.

pip's run_squad.py defines its absl flags at import and reads
FLAGS.version_2_with_negative, FLAGS.null_score_diff_threshold and
FLAGS.verbose_logging inside its functions; they are set per run.
"""

from tests.original import shim  # noqa: F401  (must come first)

import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from absl import flags  # noqa: E402
from bert import run_squad  # noqa: E402
from bert import tokenization  # noqa: E402

FLAGS = flags.FLAGS


def _set_flags(run, prediction=None):
    FLAGS.version_2_with_negative = bool(run["version_2_with_negative"])
    FLAGS.do_lower_case = bool(run["do_lower_case"])
    FLAGS.max_seq_length = run["max_seq_length"]
    FLAGS.doc_stride = run["doc_stride"]
    FLAGS.max_query_length = run["max_query_length"]
    if prediction is not None:
        FLAGS.null_score_diff_threshold = float(prediction.get("null_score_diff_threshold", 0.0))
        FLAGS.verbose_logging = bool(prediction.get("verbose_logging", False))


def _example_json(example):
    return {"qas_id": example.qas_id, "question_text": example.question_text,
            "doc_tokens": example.doc_tokens, "orig_answer_text": example.orig_answer_text,
            "start_position": example.start_position, "end_position": example.end_position,
            "is_impossible": example.is_impossible}


def _feature_json(feature):
    return {"unique_id": feature.unique_id, "example_index": feature.example_index,
            "doc_span_index": feature.doc_span_index, "tokens": feature.tokens,
            "token_to_orig_map": [[k, v] for k, v in feature.token_to_orig_map.items()],
            "token_is_max_context": [[k, v] for k, v in feature.token_is_max_context.items()],
            "input_ids": feature.input_ids, "input_mask": feature.input_mask,
            "segment_ids": feature.segment_ids, "start_position": feature.start_position,
            "end_position": feature.end_position, "is_impossible": feature.is_impossible}


def _make_features(run, is_training, tf_record=None):
    tokenizer = tokenization.FullTokenizer(vocab_file=run["vocab_file"],
                                           do_lower_case=run["do_lower_case"])
    examples = run_squad.read_squad_examples(input_file=run["input_file"], is_training=is_training)
    features = []
    writer = None
    if tf_record:
        writer = run_squad.FeatureWriter(filename=tf_record, is_training=is_training)

    def output_fn(feature):
        features.append(feature)
        if writer is not None:
            writer.process_feature(feature)

    run_squad.convert_examples_to_features(
        examples=examples, tokenizer=tokenizer, max_seq_length=run["max_seq_length"],
        doc_stride=run["doc_stride"], max_query_length=run["max_query_length"],
        is_training=is_training, output_fn=output_fn)
    if writer is not None:
        writer.close()
    return examples, features


def _run_features(run):
    _set_flags(run)
    tf_logger = logging.getLogger("tensorflow")
    handler = logging.FileHandler(run["log_file"], mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    tf_logger.addHandler(handler)
    old_level = tf_logger.level
    tf_logger.setLevel(logging.INFO)
    try:
        examples, features = _make_features(run, bool(run["is_training"]), run["tf_record"])
    finally:
        handler.flush()
        tf_logger.removeHandler(handler)
        tf_logger.setLevel(old_level)
        handler.close()
    with open(run["json_file"], "w", encoding="utf-8") as f:
        json.dump({"examples": [_example_json(e) for e in examples],
                   "features": [_feature_json(x) for x in features]}, f)


def _run_predict(run):
    _set_flags(run)
    examples, features = _make_features(run, is_training=False)
    arrays = np.load(run["logits_npz"])
    all_results = []
    for unique_id, start, end in zip(arrays["unique_ids"], arrays["start_logits"],
                                     arrays["end_logits"]):
        # As main() builds them from estimator.predict's numpy outputs.
        all_results.append(run_squad.RawResult(
            unique_id=int(unique_id),
            start_logits=[float(x) for x in start.flat],
            end_logits=[float(x) for x in end.flat]))
    for prediction in run["predictions"]:
        _set_flags(run, prediction)
        out_dir = prediction["out_dir"]
        os.makedirs(out_dir, exist_ok=True)
        run_squad.write_predictions(
            examples, features, all_results, prediction["n_best_size"],
            prediction["max_answer_length"], run["do_lower_case"],
            os.path.join(out_dir, "predictions.json"),
            os.path.join(out_dir, "nbest_predictions.json"),
            os.path.join(out_dir, "null_odds.json"))


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    with open(argv[1]) as f:
        runs = json.load(f)
    for run in runs:
        if run["mode"] == "features":
            _run_features(run)
        elif run["mode"] == "predict":
            _run_predict(run)
        else:
            raise SystemExit("unknown mode %r" % run["mode"])


if __name__ == "__main__":
    main(sys.argv)
