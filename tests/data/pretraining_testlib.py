"""Shared helpers for the pre-training data tests: corpus, vocab, oracle, records.

The corpus is real English from `pydoc_data.topics` (paragraphs as short
documents, whole help topics as long ones), split over several files, plus a
hand-written file with the input format's edge cases.
"""

import contextlib
import json
import os

import tensorflow as tf

from bert_tf.data import demo_corpus
from tests.tools.toolrun import captured_logs

# A hand-written document file: CRLF line ends, a lone "\r" inside a line
# (TF's reader drops it: "hel\rlo" reads "hello"), accents, CJK, NBSP,
# U+2028, a line of control characters only (tokenizes to nothing), a
# whitespace-only line (a document break), a word with "ω" (dropped from the
# test vocab, so it becomes [UNK]) and no final newline.
EDGE_CASE_TEXT = (
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9s are accented words.\r\n"
    "The hel\rlo line has a lone carriage return.\r\n"
    "Chinese \u535a\u63a8 characters are split one by one.\n"
    "\x01\x02\x7f\n"
    "A no\u00a0break space and a line\u2028separator.\n"
    "   \t \n"
    "The \u03c9mega word is unknown to the vocab.\n"
    "Second document, second sentence follows here.\n"
    "Ends without a newline")

UNKNOWN_CHAR = "\u03c9"


def write_corpus(directory):
    """Writes the test corpus; returns a dict of its paths and patterns.

    Keys: "a" (short documents), "b_glob" (two files matched by b_*.txt; b_1
    ends without a blank line, so its last document continues in b_2),
    "topics" (six long documents), "edge" (EDGE_CASE_TEXT), "all" (the
    comma-separated --input_file of everything).
    """
    paragraphs = list(demo_corpus.pydoc_documents("paragraph"))
    topics = list(demo_corpus.pydoc_documents("topic"))

    def write(name, documents, final_blank=True):
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(d) for d in documents))
            f.write("\n\n" if final_blank else "\n")
        return path

    paths = {
        "a": write("a.txt", paragraphs[0:120]),
        "b_1": write("b_1.txt", paragraphs[120:180], final_blank=False),
        "b_2": write("b_2.txt", paragraphs[180:230]),
        "topics": write("topics.txt", [t for t in topics if 8 <= len(t) <= 40][:6]),
    }
    edge = os.path.join(directory, "edge.txt")
    with open(edge, "wb") as f:
        f.write(EDGE_CASE_TEXT.encode("utf-8"))
    paths["edge"] = edge
    paths["b_glob"] = os.path.join(directory, "b_*.txt")
    paths["all"] = ",".join([paths["a"], paths["b_glob"], paths["topics"], paths["edge"]])
    return paths


def write_vocab(corpus_files, path, vocab_size=1000, do_lower_case=True):
    """Learns a vocab on the corpus with bert_tf.data.vocab, minus UNKNOWN_CHAR."""
    from bert_tf.data import vocab  # pylint: disable=g-import-not-at-top
    counts = vocab.count_words(corpus_files, do_lower_case=do_lower_case)
    tokens = vocab.learn_vocab(counts, vocab_size, num_unused_tokens=3, lower_thresh=2)
    tokens = [t for t in tokens if UNKNOWN_CHAR not in t]
    vocab.write_vocab(tokens, path)
    return path


def read_records(path):
    """The raw records of a TFRecord file, in order."""
    return [r for r in tf.data.TFRecordDataset(path).as_numpy_iterator()]


def canonical_records(path):
    """Records re-serialized deterministically (sorted map keys).

    The original serializes with `SerializeToString()`, whose map order under
    protobuf 7 (upb) differs from process to process; the deterministic form
    is the same for equal Examples.
    """
    return [tf.train.Example.FromString(r).SerializeToString(deterministic=True)
            for r in read_records(path)]


def run_original(directory, runs):
    """Runs the original in one oracle process.

    Args:
      directory: a scratch directory for the runs file, logs and stats.
      runs: list of (mode, flags list).

    Returns:
      A list of (log lines, stats dict), one per run.
    """
    from tests.original import run_oracle  # pylint: disable=g-import-not-at-top
    spec = []
    for i, (mode, flag_args) in enumerate(runs):
        spec.append({"mode": mode, "flags": list(flag_args),
                     "log_file": os.path.join(directory, "oracle_%d.log" % i),
                     "stats_file": os.path.join(directory, "oracle_%d.json" % i)})
    runs_file = os.path.join(directory, "oracle_runs.json")
    with open(runs_file, "w") as f:
        json.dump(spec, f)
    run_oracle("pretraining_data_oracle", runs_file)
    results = []
    for s in spec:
        with open(s["log_file"], encoding="utf-8") as f:
            lines = f.read().splitlines()
        with open(s["stats_file"]) as f:
            results.append((lines, json.load(f)))
    return results


def example_log_lines(lines):
    """The "*** Example ***" blocks and the "Wrote" line of a log."""
    out = []
    started = False
    for line in lines:
        if line == "*** Example ***":
            started = True
        if started:
            out.append(line)
        if line.startswith("Wrote ") and line.endswith(" total instances"):
            break
    return out


def decode(record):
    """A record's features as a dict of Python lists."""
    feature = tf.train.Example.FromString(record).features.feature
    return {name: list(f.int64_list.value or f.float_list.value)
            for name, f in feature.items()}


@contextlib.contextmanager
def absl_log_lines(verbosity=None):
    """Yields a list that collects every message absl logs inside the block.

    `verbosity` (e.g. `logging.INFO`) is set for the block and restored after.
    """
    with captured_logs("absl", verbosity) as handler:
        yield handler.lines
