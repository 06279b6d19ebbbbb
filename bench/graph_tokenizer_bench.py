"""Texts/s of the graph tokenizer (GraphTokenizer) vs the Python FullTokenizer.

  .venv/bin/python bench/graph_tokenizer_bench.py [--batch_size 256] [--repeats 3]

Corpus: every paragraph of `pydoc_data.topics` (2.6K paragraphs, 460K
characters), in batches of --batch_size; vocab: the corpus-built WordPiece
vocab of tests/test_tokenization.py. The graph side is
`GraphTokenizer.tokenize` (a tf.function) on one string Tensor per batch, and
`__call__` (tokenize + pack to 128, in a tf.function) too; the Python side is
`FullTokenizer.tokenize` + `convert_tokens_to_ids` per text, with a fresh
tokenizer (cold WordPiece memo) and again with the same one (warm). Both must
give the same ids. Best of --repeats; CPU only.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import tensorflow as tf  # noqa: E402

from bert_tf import graph_tokenizer  # noqa: E402
from bert_tf import tokenization  # noqa: E402
from tests.test_tokenization import build_corpus_vocab  # noqa: E402
from tests.test_tokenization import corpus_paragraphs  # noqa: E402


def best_seconds(fn, repeats):
    seconds = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - start)
    return min(seconds), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    texts = corpus_paragraphs()
    batches = [tf.constant(texts[i:i + args.batch_size])
               for i in range(0, len(texts), args.batch_size)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = os.path.join(tmp, "vocab.txt")
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in build_corpus_vocab(texts)))
        for lower in (True, False):
            start = time.perf_counter()
            graph = graph_tokenizer.GraphTokenizer(vocab_file, do_lower_case=lower)
            build = time.perf_counter() - start
            start = time.perf_counter()
            graph.tokenize(batches[0])
            trace = time.perf_counter() - start

            def run_graph():
                return [row for b in batches for row in graph.tokenize(b).to_list()]

            @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
            def features(texts):
                return graph(texts, max_seq_length=128)

            def run_call():
                for b in batches:
                    features(b)["input_ids"].numpy()

            def run_full(full=None):
                full = full or tokenization.FullTokenizer(vocab_file, do_lower_case=lower)
                return [full.convert_tokens_to_ids(full.tokenize(t)) for t in texts]

            warm = tokenization.FullTokenizer(vocab_file, do_lower_case=lower)
            run_full(warm)
            graph_s, graph_ids = best_seconds(run_graph, args.repeats)
            run_call()
            call_s, _ = best_seconds(run_call, args.repeats)
            cold_s, full_ids = best_seconds(run_full, args.repeats)
            warm_s, _ = best_seconds(lambda: run_full(warm), args.repeats)
            if graph_ids != full_ids:
                raise SystemExit("graph and FullTokenizer ids differ (lower=%s)" % lower)
            case = "uncased" if lower else "cased"
            rows.append((case, "GraphTokenizer.tokenize", graph_s,
                         "tables+vocab %.2f s, first trace %.2f s" % (build, trace)))
            rows.append((case, "GraphTokenizer() + pack 128", call_s, ""))
            rows.append((case, "FullTokenizer, cold memo", cold_s, ""))
            rows.append((case, "FullTokenizer, warm memo", warm_s, ""))
    print("%d paragraphs, %d chars, batches of %d; best of %d; %d CPU threads"
          % (len(texts), sum(map(len, texts)), args.batch_size, args.repeats,
             os.cpu_count()))
    print("%-8s %-28s %10s %9s  %s" % ("casing", "tokenizer", "texts/s", "seconds", "note"))
    for case, name, seconds, note in rows:
        print("%-8s %-28s %10.0f %9.3f  %s" % (case, name, len(texts) / seconds, seconds, note))


if __name__ == "__main__":
    main()
