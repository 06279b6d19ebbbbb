r"""The in-graph tokenizer (what the SavedModel export runs) by batch size: texts/s vs keras-hub.

  .venv/bin/python bench/graph_tokenizer_bench.py [--quick] [--batch_sizes 8,64,512]
      [--rounds 2] [--repeats 3] [--casings uncased,cased]
      [--peer_python bench/.peers/bin/python]

bert_tf's `GraphTokenizer` (core TensorFlow ops in a tf.function: what the
exported classifier / encoder / TF Hub preprocessor SavedModels run) and
keras-hub 0.32.0's `BertTokenizer` (+ `MultiSegmentPacker` for pairs, in the
peers' venv), both called on batches of each `--batch_sizes`, on the texts of
bench/tokenizer_bench.py (pydoc lines: tokenize + ids; sentence pairs: packed
to 128), each casing with the same vocab file. bert_tf's Python
`FullTokenizer` (one text at a time, fresh per pass) is the per-text reference,
and the ids it gives: the graph tokenizer's must equal them (exit 1
otherwise); keras-hub's mismatches are counted. One process per
(implementation, batch size), alternating over `--rounds`; each reports its
best of `--repeats` passes; the table gives the median over rounds, the spread
and the ratio graph / keras-hub. Set-up is the table build plus the first
trace (untimed in the rates). Without the peers' venv, keras-hub is left out
and the table says so.
"""

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tokenizer_bench  # noqa: E402  (bench/tokenizer_bench.py: workers, texts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="uncased, batches of 64 and 512, 1 round of 2 passes")
    parser.add_argument("--batch_sizes", default="8,64,512")
    parser.add_argument("--casings", default="uncased,cased")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer_python", default=tokenizer_bench.DEFAULT_PEER_PYTHON,
                        help="python of the peers' venv with keras-hub (empty: skip it)")
    args = parser.parse_args()
    if args.quick:
        args.batch_sizes, args.casings, args.rounds, args.repeats = "64,512", "uncased", 1, 2
    try:
        sizes = [int(b) for b in args.batch_sizes.split(",") if b]
    except ValueError:
        raise SystemExit("graph_tokenizer_bench: --batch_sizes: comma-separated integers, "
                         "got %r" % args.batch_sizes)
    casings = [c for c in args.casings.split(",") if c]
    if not sizes or min(sizes) < 1 or args.rounds < 1 or args.repeats < 1:
        raise SystemExit("graph_tokenizer_bench: --batch_sizes, --rounds and --repeats "
                         "must be >= 1")
    if not casings or set(casings) - {"uncased", "cased"}:
        raise SystemExit("graph_tokenizer_bench: --casings: uncased and/or cased, got %r"
                         % args.casings)
    impls = ["graph"]
    note = ""
    if tokenizer_bench.peers_available(args.peer_python):
        impls.append("keras_hub")
    else:
        note = ("keras-hub not measured: no peers' venv at --peer_python=%s "
                "(see bench/setup_peers.sh)" % (args.peer_python or "''"))
        print(note, file=sys.stderr)

    rows, bad = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for casing in casings:
            directory = os.path.join(tmp, casing)
            os.makedirs(directory)
            vocab_file, texts_file, _ = tokenizer_bench.write_inputs(
                directory, casing == "uncased")
            args.batch_size = 1
            reference = tokenizer_bench.run_rounds(["python"], args, vocab_file, texts_file,
                                                   directory)["python"]
            rows[casing, 0] = {"python": reference}
            for size in sizes:
                args.batch_size = size
                rows[casing, size] = tokenizer_bench.run_rounds(
                    impls, args, vocab_file, texts_file, directory, tag="-b%d" % size)

    print("In-graph tokenizer vs keras-hub by batch size: pydoc lines (tokenize + ids) and "
          "sentence pairs (packed to %d); best of %d passes per process, %d rounds "
          "alternating; %d CPU cores"
          % (tokenizer_bench.MAX_SEQ_LENGTH, args.repeats, args.rounds, os.cpu_count()))
    if note:
        print(note)
    for casing in casings:
        reference = rows[casing, 0]["python"][0]["units"]
        for unit in ("lines", "pairs"):
            ref = reference[unit]
            num = ref["num_texts"]

            def rates(runs):
                return [num / min(r["units"][unit]["seconds"]) for r in runs]

            print()
            print("%s, %s (%d texts)" % (casing, unit, num))
            print()
            header = "| batch | bert_tf graph texts/s (spread) | set-up s |"
            rule = "|---:|---:|---:|"
            if "keras_hub" in impls:
                header += " keras-hub texts/s (spread) | set-up s | graph / keras-hub |"
                rule += "---:|---:|---:|"
                header += " keras-hub ids differing |"
                rule += "---:|"
            print(header)
            print(rule)
            python = rates(rows[casing, 0]["python"])
            print("| Python `FullTokenizer`, per text | %s (%s) | |%s"
                  % (format(statistics.median(python), ",.0f"),
                     tokenizer_bench.fmt_spread(python),
                     " | | | |" if "keras_hub" in impls else ""))
            for size in sizes:
                result = rows[casing, size]
                cells = []
                medians = {}
                for impl in impls:
                    r = rates(result[impl])
                    medians[impl] = statistics.median(r)
                    differing = max(tokenizer_bench.mismatches(x["units"][unit]["ids"],
                                                               ref["ids"])
                                    for x in result[impl])
                    if impl == "graph" and differing:
                        bad.append("%s %s batch %d" % (casing, unit, size))
                    cells.append("%s (%s) | %.2f" % (
                        format(medians[impl], ",.0f"), tokenizer_bench.fmt_spread(r),
                        statistics.median(x["units"][unit]["setup_seconds"]
                                          for x in result[impl])))
                    if impl == "keras_hub":
                        cells.append("%.2fx | %d of %d" % (
                            medians["graph"] / medians["keras_hub"], differing, num))
                print("| %d | %s |" % (size, " | ".join(cells)))
    if bad:
        print("graph_tokenizer_bench: GraphTokenizer ids differ from FullTokenizer's: %s"
              % ", ".join(bad), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
