r"""Texts/s of four BERT tokenizers on the same texts, with the same ids, in one run.

  .venv/bin/python bench/tokenizer_bench.py [--quick] [--rounds 3] [--repeats 3]
      [--batch_size 256] [--peer_python bench/.peers/bin/python]

Implementations (each in its own process; the processes alternate over
`--rounds`, in a rotated order each round):

  bert_tf graph    `GraphTokenizer` (bert_tf/tokenization/graph_tokenizer.py): what the
                   exported SavedModels run; batches of `--batch_size` texts
                   through one tf.function.
  bert_tf Python   `tokenization.FullTokenizer`, one text at a time.
  original         bert-tensorflow 1.0.4's `FullTokenizer` (through the
                   tests/original shim), one text at a time.
  keras-hub        keras-hub 0.32.0's `BertTokenizer` on the same vocab file,
                   batches of `--batch_size` texts through one tf.function, in
                   the peers' venv (`--peer_python`; without it, or if it is
                   missing, the others are measured and the table says so).

Texts, both from `pydoc_data.topics` (CPython's help text, real English with
code):
  lines  every non-blank line (8.7K texts): `tokenize` + `convert_tokens_to_ids`;
  pairs  the 3,200 sentence pairs of `demo_corpus.write_sentence_pair_task`
         (MRPC's layout) as a classifier sees them: `[CLS] a [SEP] b [SEP]`
         with the original's pair truncation, padded to 128
         (`convert_single_example`; `GraphTokenizer.__call__`; keras-hub's
         `MultiSegmentPacker`, truncate="round_robin").
Vocab: the corpus-built WordPiece vocab of tests/test_tokenization.py (no
released BERT vocab is available offline), uncased unless `--cased`.

In each process a pass is one tokenization of all the texts of a unit; the
graph tokenizers' table build and first trace come before, untimed (reported
as set-up), and the Python tokenizers are built afresh for every pass (an
empty WordPiece memo). A process reports its best of `--repeats` passes; the
table gives the median over rounds, the spread (min-max) and the ratios of
medians. Ids are compared with bert_tf's FullTokenizer, text by text: bert_tf's
and the original's must agree exactly (exit 1 otherwise); keras-hub's
mismatches are counted and shown.
"""

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PEER_PYTHON = os.path.join(REPO_ROOT, "bench", ".peers", "bin", "python")
MAX_SEQ_LENGTH = 128
IMPLEMENTATIONS = ("graph", "python", "original", "keras_hub")
LABELS = {
    "graph": "bert_tf `GraphTokenizer` (in-graph, batched)",
    "python": "bert_tf `FullTokenizer` (Python)",
    "original": "original bert-tensorflow 1.0.4 `FullTokenizer`",
    "keras_hub": "keras-hub 0.32.0 `BertTokenizer` (batched)",
}


# ------------------------------------------------------------------ texts


def corpus_lines():
    """Every non-blank line of pydoc_data.topics' paragraphs."""
    sys.path.insert(0, REPO_ROOT)
    from tests.test_tokenization import corpus_paragraphs
    return [line for p in corpus_paragraphs() for line in p.split("\n") if line.strip()]


def corpus_pairs(directory):
    """The sentence pairs of the demo paraphrase task (train, dev, test)."""
    from bert_tf.data import demo_corpus
    demo_corpus.write_sentence_pair_task(directory)
    pairs = []
    for name, _ in demo_corpus.PAIR_TASK_SIZES:
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        pairs += [[row[3], row[4]] for row in rows]
    return pairs


def write_inputs(directory, do_lower_case, units=("lines", "pairs")):
    """vocab.txt and texts.json in `directory`; returns (vocab_file, texts_file, texts)."""
    sys.path.insert(0, REPO_ROOT)
    from tests.test_tokenization import build_corpus_vocab
    from tests.test_tokenization import corpus_paragraphs
    vocab_file = os.path.join(directory, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in build_corpus_vocab(corpus_paragraphs())))
    texts = {}
    if "lines" in units:
        texts["lines"] = corpus_lines()
    if "pairs" in units:
        texts["pairs"] = corpus_pairs(directory)
    texts_file = os.path.join(directory, "texts.json")
    with open(texts_file, "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "do_lower_case": do_lower_case}, f)
    return vocab_file, texts_file, texts


# ------------------------------------------------------------------ workers


def _python_runner(impl, vocab_file, do_lower_case, unit):
    """A pass over the texts with a fresh Python FullTokenizer."""
    if impl == "original":
        importlib.import_module("tests.original.shim")  # must come first
        from absl import flags
        from bert import run_classifier as classifier
        from bert import tokenization
        flags.FLAGS.preserve_unused_tokens = False
    else:
        from bert_tf import tokenization
        from bert_tf.tasks.classifier import data as classifier
    labels = ["0", "1"]

    def run(texts):
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
        if unit == "lines":
            return [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in texts]
        out = []
        for i, (a, b) in enumerate(texts):
            # ex_index >= 5: the first examples are not logged.
            f = classifier.convert_single_example(
                5 + i, classifier.InputExample("p-%d" % i, a, b, "0"), labels,
                MAX_SEQ_LENGTH, tokenizer)
            out.append(f.input_ids + f.segment_ids)
        return out
    return run


def _graph_runner(impl, vocab_file, do_lower_case, unit, batch_size):
    """(set-up seconds, a pass over the texts in batches through one tf.function)."""
    import tensorflow as tf
    start = time.perf_counter()
    if impl == "graph":
        from bert_tf.tokenization import graph_tokenizer
        tokenizer = graph_tokenizer.GraphTokenizer(vocab_file, do_lower_case=do_lower_case)

        def tokenize(texts):
            return tokenizer.tokenize(texts)

        def pack(a, b):
            f = tokenizer(a, b, max_seq_length=MAX_SEQ_LENGTH)
            return tf.concat([f["input_ids"], f["segment_ids"]], 1)
    else:
        import keras_hub
        tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab_file,
                                                       lowercase=do_lower_case)
        packer = keras_hub.layers.MultiSegmentPacker(
            sequence_length=MAX_SEQ_LENGTH, start_value=tokenizer.cls_token_id,
            end_value=tokenizer.sep_token_id, pad_value=tokenizer.pad_token_id,
            truncate="round_robin")

        def tokenize(texts):
            return tokenizer(texts)

        def pack(a, b):
            ids, segments = packer((tokenizer(a), tokenizer(b)))
            return tf.concat([tf.cast(ids, tf.int32), tf.cast(segments, tf.int32)], 1)

    spec = tf.TensorSpec([None], tf.string)
    tokenize_fn = tf.function(tokenize, input_signature=[spec])
    pack_fn = tf.function(pack, input_signature=[spec, spec])

    def run(batches):
        out = []
        for batch in batches:
            if unit == "lines":
                ids = tokenize_fn(batch)
                values, lengths = ids.flat_values.numpy(), ids.row_lengths().numpy()
                out.append((values, lengths))
            else:
                out.append(pack_fn(*batch).numpy())
        return out

    def to_lists(out):
        if unit == "pairs":
            return [row.tolist() for rows in out for row in rows]
        lists = []
        for values, lengths in out:
            start = 0
            for n in lengths:
                lists.append(values[start:start + n].tolist())
                start += n
        return lists

    def batched(texts):
        chunks = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
        if unit == "lines":
            return [tf.constant(c) for c in chunks]
        return [(tf.constant([a for a, _ in c]), tf.constant([b for _, b in c]))
                for c in chunks]

    setup = time.perf_counter() - start
    return setup, run, to_lists, batched


def worker(args):
    """Child: times one implementation on both units; writes JSON to --out."""
    sys.path.insert(0, REPO_ROOT)
    with open(args.texts_file, encoding="utf-8") as f:
        inputs = json.load(f)
    do_lower_case = inputs["do_lower_case"]
    result = {"implementation": args.impl, "units": {}}
    for unit, texts in inputs["texts"].items():
        if args.impl in ("python", "original"):
            run = _python_runner(args.impl, args.vocab_file, do_lower_case, unit)
            setup, data, to_lists = 0.0, texts, lambda out: out
        else:
            start = time.perf_counter()
            _, run, to_lists, batched = _graph_runner(
                args.impl, args.vocab_file, do_lower_case, unit, args.batch_size)
            data = batched(texts)
            run(data[:1])  # the first trace
            setup = time.perf_counter() - start
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            out = run(data)
            seconds.append(time.perf_counter() - start)
        ids = to_lists(out)
        result["units"][unit] = {"seconds": seconds, "setup_seconds": setup,
                                 "num_texts": len(texts),
                                 "num_tokens": sum(len(i) for i in ids) if unit == "lines"
                                 else sum(sum(1 for x in i[:MAX_SEQ_LENGTH] if x) for i in ids),
                                 "ids": ids}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f)


# ------------------------------------------------------------------ driver


def _child_command(impl, python, vocab_file, texts_file, out, args):
    return [python, os.path.abspath(__file__), "--role=worker", "--impl=%s" % impl,
            "--vocab_file=%s" % vocab_file, "--texts_file=%s" % texts_file,
            "--out=%s" % out, "--repeats=%d" % args.repeats,
            "--batch_size=%d" % args.batch_size]


def _run_child(command, impl):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="", KERAS_BACKEND="tensorflow")
    env.pop("TF_USE_LEGACY_KERAS", None)
    if impl == "original":
        env.pop("KERAS_BACKEND")  # the shim uses legacy Keras
    proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or ["no output"]
        raise SystemExit("tokenizer_bench: %s failed: %s" % (LABELS[impl], lines[-1]))


def run_rounds(impls, args, vocab_file, texts_file, directory, tag=""):
    """{implementation: [worker result per round]}: the processes alternate, rotated each round."""
    results = {i: [] for i in impls}
    for round_index in range(args.rounds):
        order = impls[round_index % len(impls):] + impls[:round_index % len(impls)]
        for impl in order:
            out = os.path.join(directory, "%s%s-%d.json" % (impl, tag, round_index))
            python = args.peer_python if impl == "keras_hub" else sys.executable
            _run_child(_child_command(impl, python, vocab_file, texts_file, out, args), impl)
            with open(out, encoding="utf-8") as f:
                results[impl].append(json.load(f))
            print("round %d %s%s done" % (round_index, impl, tag), file=sys.stderr)
    return results


def peers_available(peer_python):
    return bool(peer_python) and os.path.exists(peer_python)


def mismatches(ids, reference):
    return sum(1 for a, b in zip(ids, reference) if a != b) + abs(len(ids) - len(reference))


def fmt_spread(values, scale=1.0):
    return "%s-%s" % (format(min(values) * scale, ",.0f"), format(max(values) * scale, ",.0f"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 rounds of 2 passes (about 2 minutes on 2 cores)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="passes per process")
    parser.add_argument("--batch_size", type=int, default=256,
                        help="texts per call of the batched (in-graph) tokenizers")
    parser.add_argument("--cased", action="store_true", help="do_lower_case=False")
    parser.add_argument("--peer_python", default=DEFAULT_PEER_PYTHON,
                        help="python of the peers' venv with keras-hub (empty: skip it)")
    parser.add_argument("--implementations", default=",".join(IMPLEMENTATIONS),
                        help="comma-separated subset of %s" % ",".join(IMPLEMENTATIONS))
    parser.add_argument("--role", default="driver", choices=("driver", "worker"))
    parser.add_argument("--impl", choices=IMPLEMENTATIONS)
    parser.add_argument("--vocab_file")
    parser.add_argument("--texts_file")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.role == "worker":
        worker(args)
        return
    if args.quick:
        args.rounds, args.repeats = 2, 2
    if args.rounds < 1 or args.repeats < 1 or args.batch_size < 1:
        raise SystemExit("tokenizer_bench: --rounds, --repeats and --batch_size must be >= 1")
    impls = [i for i in args.implementations.split(",") if i]
    unknown = [i for i in impls if i not in IMPLEMENTATIONS]
    if unknown or not impls:
        raise SystemExit("tokenizer_bench: --implementations: unknown %s (choose from %s)"
                         % (",".join(unknown) or "(none)", ",".join(IMPLEMENTATIONS)))
    if "python" not in impls:
        impls.insert(0, "python")  # the reference for the ids
    note = ""
    if "keras_hub" in impls and not peers_available(args.peer_python):
        impls.remove("keras_hub")
        note = ("keras-hub not measured: no peers' venv at --peer_python=%s "
                "(see bench/setup_peers.sh)" % (args.peer_python or "''"))
        print(note, file=sys.stderr)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, REPO_ROOT)
        vocab_file, texts_file, texts = write_inputs(tmp, not args.cased)
        results = run_rounds(impls, args, vocab_file, texts_file, tmp)

    reference = results["python"][0]["units"]
    bad = []
    print("Tokenizers on pydoc_data.topics, %s; batches of %d for the batched ones; best of %d "
          "passes per process, %d rounds alternating; %d CPU cores"
          % ("cased" if args.cased else "uncased", args.batch_size, args.repeats,
             args.rounds, os.cpu_count()))
    if note:
        print(note)
    for unit in ("lines", "pairs"):
        ref = reference[unit]
        what = ("%d lines, %d tokens: tokenize + ids" % (ref["num_texts"], ref["num_tokens"])
                if unit == "lines" else
                "%d sentence pairs, %d tokens: packed to %d as a classifier sees them"
                % (ref["num_texts"], ref["num_tokens"], MAX_SEQ_LENGTH))
        print()
        print("%s (%s)" % (unit, what))
        print()
        header = "| implementation | texts / s (median) | spread (min-max) | set-up s |"
        rule = "|---|---:|---:|---:|"
        if "graph" in impls:
            header += " graph / this |"
            rule += "---:|"
        header += " ids differing from bert_tf's |"
        rule += "---:|"
        print(header)
        print(rule)
        medians = {}
        for impl in impls:
            rates = [ref["num_texts"] / min(r["units"][unit]["seconds"]) for r in results[impl]]
            medians[impl] = statistics.median(rates)
        for impl in impls:
            runs = [r["units"][unit] for r in results[impl]]
            rates = [ref["num_texts"] / min(u["seconds"]) for u in runs]
            differing = max(mismatches(u["ids"], ref["ids"]) for u in runs)
            if differing and impl in ("graph", "python", "original"):
                bad.append("%s (%s)" % (LABELS[impl], unit))
            row = "| %s | %s | %s | %.2f |" % (
                LABELS[impl], format(medians[impl], ",.0f"), fmt_spread(rates),
                statistics.median(u["setup_seconds"] for u in runs))
            if "graph" in impls:
                row += " %s |" % ("" if impl == "graph"
                                  else "%.2fx" % (medians["graph"] / medians[impl]))
            row += " %d of %d |" % (differing, ref["num_texts"])
            print(row)
        print()
        print("rounds (texts/s): " + "; ".join(
            "%s %s" % (impl, ", ".join(
                format(ref["num_texts"] / min(r["units"][unit]["seconds"]), ",.0f")
                for r in results[impl])) for impl in impls))
    if bad:
        print("tokenizer_bench: ids differ from bert_tf's FullTokenizer: %s" % ", ".join(bad),
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
