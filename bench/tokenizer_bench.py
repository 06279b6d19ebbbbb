"""Tokens/s of bert_tf's FullTokenizer vs the original's, in one run.

  .venv/bin/python bench/tokenizer_bench.py [--repeats 3] [--unit lines]
      [--do_lower_case true]

Corpus: the whole of `pydoc_data.topics` (CPython's docs, about 460K
characters), tokenized one line at a time as create_pretraining_data does
(`--unit lines`, the default), or one paragraph at a time. Vocab: the
corpus-built WordPiece vocab of tests/test_tokenization.py (no real BERT vocab
is available offline), so rare words are split into pieces.

Each repeat builds a fresh tokenizer (cold WordPiece memo) and times
`tokenize` over the whole corpus; the best repeat is reported. The original
(pip bert-tensorflow 1.0.4) runs in its own process through
tests/original/tokenizer_oracle.py; both must produce the same token count.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from bert_tf import tokenization  # noqa: E402
from tests.original import run_oracle  # noqa: E402
from tests.test_tokenization import build_corpus_vocab  # noqa: E402
from tests.test_tokenization import corpus_paragraphs  # noqa: E402


def corpus_texts(unit):
    paragraphs = corpus_paragraphs()
    if unit == "paragraphs":
        return paragraphs
    return [line for p in paragraphs for line in p.split("\n") if line.strip()]


def time_ours(vocab_file, texts, do_lower_case, repeats):
    seconds = []
    num_tokens = 0
    for _ in range(repeats):
        tokenizer = tokenization.FullTokenizer(vocab_file,
                                               do_lower_case=do_lower_case)
        start = time.perf_counter()
        num_tokens = 0
        for text in texts:
            num_tokens += len(tokenizer.tokenize(text))
        seconds.append(time.perf_counter() - start)
    return {"seconds": seconds, "num_tokens": num_tokens}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--unit", choices=("lines", "paragraphs"), default="lines")
    parser.add_argument("--do_lower_case", default="true",
                        choices=("true", "false"))
    args = parser.parse_args()
    do_lower_case = args.do_lower_case == "true"

    texts = corpus_texts(args.unit)
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = os.path.join(tmp, "vocab.txt")
        vocab = build_corpus_vocab(corpus_paragraphs())
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in vocab))
        texts_file = os.path.join(tmp, "texts.jsonl")
        with open(texts_file, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(t) + "\n" for t in texts))
        jobs_file = os.path.join(tmp, "jobs.json")
        with open(jobs_file, "w", encoding="utf-8") as f:
            json.dump([{"kind": "bench", "vocab_file": vocab_file,
                        "texts_file": texts_file,
                        "do_lower_case": do_lower_case,
                        "repeats": args.repeats}], f)
        out_file = os.path.join(tmp, "out.json")
        run_oracle("tokenizer_oracle", "--jobs", jobs_file, out_file)
        with open(out_file, encoding="utf-8") as f:
            original = json.load(f)[0]
        ours = time_ours(vocab_file, texts, do_lower_case, args.repeats)

    if ours["num_tokens"] != original["num_tokens"]:
        raise SystemExit("token counts differ: ours %d, original %d"
                         % (ours["num_tokens"], original["num_tokens"]))
    print("corpus: pydoc_data.topics, %d %s, %d chars, %d tokens; vocab %d "
          "entries; do_lower_case=%s; best of %d"
          % (len(texts), args.unit, sum(len(t) for t in texts),
             ours["num_tokens"], len(vocab), do_lower_case, args.repeats))
    rates = {}
    for name, result in (("original (pip 1.0.4)", original), ("bert_tf", ours)):
        best = min(result["seconds"])
        rates[name] = result["num_tokens"] / best
        print("%-22s %10.0f tokens/s  (%.3f s)" % (name, rates[name], best))
    print("speed-up: %.1fx" % (rates["bert_tf"] / rates["original (pip 1.0.4)"]))


if __name__ == "__main__":
    main()
