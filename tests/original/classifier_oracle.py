"""Oracle: the original `run_classifier.py` data side, run in its own process.

Usage:
  python -m tests.original.classifier_oracle RUNS_JSON

RUNS_JSON is a file with a list of runs, done one after the other in this
process (TensorFlow is imported once):
  [{"task": "mrpc" | "cola" | "mnli" | "xnli", "data_dir": "...",
    "vocab_file": "...", "do_lower_case": true, "max_seq_length": 24,
    "output_dir": "..."}, ...]

For each run the original processor (the original's `processors` dict of
`main`: cola, mnli, mrpc, xnli) reads the train, dev and test examples; for
each split SPLIT, OUTPUT_DIR receives
  SPLIT.json       the examples as [[guid, text_a, text_b, label], ...], or
                   null if the processor has no such split (NotImplementedError);
  SPLIT.tf_record  the original `file_based_convert_examples_to_features`'s
                   file (`SerializeToString()`: under protobuf 7 the map order
                   changes from process to process, so compare parsed or
                   deterministically re-serialized records);
  SPLIT.log        every message the original logs through `tf.logging`.
"""

from tests.original import shim  # noqa: F401  (must come first)

import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from bert import run_classifier  # noqa: E402
from bert import tokenization  # noqa: E402

tf = shim.tf1

# The original's `main` (P:786-792).
PROCESSORS = {
    "cola": run_classifier.ColaProcessor,
    "mnli": run_classifier.MnliProcessor,
    "mrpc": run_classifier.MrpcProcessor,
    "xnli": run_classifier.XnliProcessor,
}

SPLITS = (("train", "get_train_examples"), ("dev", "get_dev_examples"),
          ("test", "get_test_examples"))


def _run(run):
    processor = PROCESSORS[run["task"].lower()]()
    tokenizer = tokenization.FullTokenizer(vocab_file=run["vocab_file"],
                                           do_lower_case=run["do_lower_case"])
    label_list = processor.get_labels()
    out = run["output_dir"]
    os.makedirs(out, exist_ok=True)
    tf_logger = logging.getLogger("tensorflow")
    for split, method in SPLITS:
        try:
            examples = getattr(processor, method)(run["data_dir"])
        except NotImplementedError:
            examples = None
        with open(os.path.join(out, split + ".json"), "w", encoding="utf-8") as f:
            json.dump(None if examples is None else
                      [[e.guid, e.text_a, e.text_b, e.label] for e in examples], f)
        if examples is None:
            continue
        handler = logging.FileHandler(os.path.join(out, split + ".log"), mode="w",
                                      encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        tf_logger.addHandler(handler)
        try:
            run_classifier.file_based_convert_examples_to_features(
                examples, label_list, run["max_seq_length"], tokenizer,
                os.path.join(out, split + ".tf_record"))
        finally:
            handler.flush()
            tf_logger.removeHandler(handler)
            handler.close()


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    tf.logging.set_verbosity(tf.logging.INFO)
    with open(argv[1]) as f:
        runs = json.load(f)
    for run in runs:
        _run(run)


if __name__ == "__main__":
    main(sys.argv)
