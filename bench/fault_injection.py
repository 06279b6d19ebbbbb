"""Fault injection: training runs killed with kill -9 at random points resume exactly.

  .venv/bin/python bench/fault_injection.py [--trials 5] [--tool pretraining|classifier]
      [--replicas 1|2] [--num_train_steps 40] [--save_checkpoints_steps 7]
      [--random_seed 0] [--workdir DIR]

Writes a tiny model (2 layers, hidden 32, dropout 0.1) and tiny data
(pre-training: 3 TFRecord files of random records; classifier: an
MRPC-layout task of real text and its vocab), runs the tool once to the end
with `--seed` (the uninterrupted run), then for each trial runs the same
command again in a fresh output_dir and kills it with SIGKILL at a random
point of its training (seeded by `--random_seed`: a step drawn at random,
then a random fraction of a step's time after that step's progress line
reaches this script, so the kill lands between checkpoints, during a save,
or right after one; the line arrives somewhat late, so each trial says which
checkpoint the run restarted from),
reruns the same command until it exits 0, and compares every variable of the
final checkpoint with the uninterrupted run's, bit for bit. `--replicas 2`
runs the tool under MirroredStrategy over 2 logical CPU devices.

Prints one line per trial and a last line:
  fault injection: trials=N equal=E different=D
The exit status is 1 if any trial differs.
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

SEQ_LENGTH = 16
MAX_PREDICTIONS = 4
BATCH_SIZE = 8
SEED = 1234  # the runs' --seed

# Runs a tool's module as `python -m` does, after splitting the host CPU into
# logical devices (before TensorFlow starts).
_DEVICES_WRAPPER = """\
import runpy
import sys
sys.path.insert(0, %r)
from bert_tf.training import distribute
distribute.set_logical_cpu_devices(%d)
runpy.run_module(%r, run_name="__main__", alter_sys=True)
"""

_STEP_LINE = re.compile(r"step (\d+)/(\d+): loss")


def tiny_config(vocab_size=99):
    return {"vocab_size": vocab_size, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 37, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}


def write_json(path, values):
    import json
    with open(path, "w") as f:
        json.dump(values, f)
    return path


def write_pretraining_data(directory, num_files=3, records_per_file=24, seed=0):
    """Random pre-training records (the features create_pretraining_data writes)."""
    import tensorflow as tf
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    files = []
    for index in range(num_files):
        path = os.path.join(directory, "data-%d.tfrecord" % index)
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(records_per_file):
                length = rng.randint(8, SEQ_LENGTH + 1)
                mask = (np.arange(SEQ_LENGTH) < length).astype(np.int64)
                num_real = rng.randint(1, MAX_PREDICTIONS + 1)
                weights = (np.arange(MAX_PREDICTIONS) < num_real).astype(np.float32)
                positions = np.zeros(MAX_PREDICTIONS, np.int64)
                positions[:num_real] = np.sort(rng.choice(length, num_real, replace=False))
                ints = {"input_ids": rng.randint(1, 99, SEQ_LENGTH) * mask,
                        "input_mask": mask,
                        "segment_ids": (np.arange(SEQ_LENGTH) >= length // 2) * mask,
                        "masked_lm_positions": positions,
                        "masked_lm_ids": rng.randint(1, 99, MAX_PREDICTIONS) * (weights > 0),
                        "next_sentence_labels": [rng.randint(2)]}
                feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(
                    value=np.asarray(v, np.int64).ravel())) for k, v in ints.items()}
                feature["masked_lm_weights"] = tf.train.Feature(
                    float_list=tf.train.FloatList(value=weights))
                writer.write(tf.train.Example(features=tf.train.Features(
                    feature=feature)).SerializeToString())
        files.append(path)
    return files


def tool_command(tool, workdir, num_train_steps, save_checkpoints_steps, replicas):
    """`fn(output_dir) -> argv` of one training run, and the module it runs."""
    common = ["--do_train=true", "--seed=%d" % SEED, "--log_steps=1", "--iterations_per_loop=1",
              "--save_checkpoints_steps=%d" % save_checkpoints_steps,
              "--train_batch_size=%d" % BATCH_SIZE, "--max_seq_length=%d" % SEQ_LENGTH]
    if replicas > 1:
        common.append("--distribution_strategy=mirrored")
    if tool == "pretraining":
        files = write_pretraining_data(os.path.join(workdir, "data"))
        config = write_json(os.path.join(workdir, "bert_config.json"), tiny_config())
        module = "bert_tf.tools.run_pretraining"
        args = common + ["--input_file=%s" % ",".join(files), "--bert_config_file=%s" % config,
                         "--max_predictions_per_seq=%d" % MAX_PREDICTIONS,
                         "--num_train_steps=%d" % num_train_steps, "--num_warmup_steps=2",
                         "--learning_rate=1e-3"]
    else:
        from bert_tf.data import demo_corpus
        from bert_tf.data import vocab
        data_dir = os.path.join(workdir, "MRPC")
        num_train = num_train_steps * BATCH_SIZE
        demo_corpus.write_sentence_pair_task(data_dir, sizes=(
            ("train.tsv", num_train), ("dev.tsv", 8), ("test.tsv", 8)))
        vocab_file = os.path.join(workdir, "vocab.txt")
        tokens = vocab.build_vocab([os.path.join(data_dir, "train.tsv")], vocab_file,
                                   vocab_size=300, lower_thresh=2)
        config = write_json(os.path.join(workdir, "bert_config.json"),
                            tiny_config(vocab_size=len(tokens)))
        module = "bert_tf.tools.run_classifier"
        args = common + ["--task_name=MRPC", "--data_dir=%s" % data_dir,
                         "--vocab_file=%s" % vocab_file, "--bert_config_file=%s" % config,
                         "--num_train_epochs=1.0", "--learning_rate=1e-3"]
    if replicas > 1:
        prefix = [sys.executable, "-c", _DEVICES_WRAPPER % (REPO, replicas, module)]
    else:
        prefix = [sys.executable, "-m", module]
    return lambda output_dir: prefix + args + ["--output_dir=%s" % output_dir]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("CUDA_VISIBLE_DEVICES", "")
    env.pop("TF_CONFIG", None)
    return env


def run_to_end(argv, log):
    """Runs `argv` to its end; returns (exit status, seconds)."""
    start = time.time()
    with open(log, "a") as f:
        proc = subprocess.run(argv, cwd=REPO, env=_env(), stdout=f, stderr=subprocess.STDOUT)
    return proc.returncode, time.time() - start


def run_and_kill(argv, log, kill_step, fraction, step_seconds):
    """Runs `argv`, kills it with SIGKILL `fraction` of a step after `step kill_step/...`.

    Returns the last step line seen before the kill (None if none), or "finished" if
    the run ended first.
    """
    last = None
    with open(log, "a") as f:
        proc = subprocess.Popen(argv, cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            for line in proc.stdout:
                f.write(line)
                match = _STEP_LINE.search(line)
                if match:
                    last = int(match.group(1))
                    if last >= kill_step:
                        time.sleep(fraction * step_seconds)
                        proc.kill()  # SIGKILL
                        break
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
    return "finished" if proc.returncode == 0 else last


def median_step_seconds(log):
    """The median time between two progress lines of the log (absl's time stamps)."""
    times = []
    with open(log) as f:
        for line in f:
            if _STEP_LINE.search(line):
                stamp = re.match(r"I\d{4} (\d+):(\d+):([\d.]+)", line)
                if stamp:
                    h, m, sec = stamp.groups()
                    times.append(int(h) * 3600 + int(m) * 60 + float(sec))
    gaps = sorted(b - a for a, b in zip(times, times[1:]) if b >= a)
    return gaps[len(gaps) // 2] if gaps else 0.1


def differing_variables(a_prefix, b_prefix):
    from bert_tf.modeling import checkpoint
    a, b = checkpoint.read_checkpoint(a_prefix), checkpoint.read_checkpoint(b_prefix)
    return sorted(name for name in set(a) | set(b)
                  if name not in a or name not in b or a[name].tobytes() != b[name].tobytes())


def final_checkpoint(output_dir):
    import tensorflow as tf
    return tf.train.latest_checkpoint(output_dir)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--tool", choices=["pretraining", "classifier"], default="pretraining")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--num_train_steps", type=int, default=40,
                        help="pretraining's steps (classifier: its training examples / batch)")
    parser.add_argument("--save_checkpoints_steps", type=int, default=7)
    parser.add_argument("--random_seed", type=int, default=0, help="seeds the kill points")
    parser.add_argument("--max_reruns", type=int, default=5)
    parser.add_argument("--workdir", default=None, help="kept when given; else a temporary one")
    args = parser.parse_args()

    workdir = args.workdir or tempfile.mkdtemp(prefix="fault_injection-")
    os.makedirs(workdir, exist_ok=True)
    rng = random.Random(args.random_seed)
    command = tool_command(args.tool, workdir, args.num_train_steps,
                           args.save_checkpoints_steps, args.replicas)
    print("fault injection: %s, %d replica(s), %d steps, a checkpoint every %d, --seed=%d; "
          "work in %s" % (args.tool, args.replicas, args.num_train_steps,
                          args.save_checkpoints_steps, SEED, workdir), flush=True)
    reference_dir = os.path.join(workdir, "uninterrupted")
    status, seconds = run_to_end(command(reference_dir), os.path.join(workdir, "uninterrupted.log"))
    if status:
        print("the uninterrupted run failed (exit %d); see %s" % (
            status, os.path.join(workdir, "uninterrupted.log")))
        return 2
    reference = final_checkpoint(reference_dir)
    num_steps = int(reference.rsplit("-", 1)[1])
    step_seconds = median_step_seconds(os.path.join(workdir, "uninterrupted.log"))
    print("uninterrupted: %s in %.1f s (%.3f s a step)"
          % (os.path.basename(reference), seconds, step_seconds), flush=True)

    equal = different = 0
    for trial in range(1, args.trials + 1):
        output_dir = os.path.join(workdir, "trial-%d" % trial)
        log = os.path.join(workdir, "trial-%d.log" % trial)
        kill_step = rng.randrange(1, num_steps)
        fraction = rng.random()
        killed_after = run_and_kill(command(output_dir), log, kill_step, fraction, step_seconds)
        resumed_from = final_checkpoint(output_dir)
        runs = 0
        status = None
        while status != 0 and runs < args.max_reruns:
            status, _ = run_to_end(command(output_dir), log)
            runs += 1
        final = final_checkpoint(output_dir)
        if status != 0 or final is None or not final.endswith("-%d" % num_steps):
            verdict, ok = "did not finish (exit %s; see %s)" % (status, log), False
        else:
            diff = differing_variables(final, reference)
            ok = not diff
            verdict = "equal" if ok else "DIFFERENT (%d variables, e.g. %s)" % (len(diff), diff[0])
        equal += ok
        different += not ok
        print("trial %d: kill -9 %.2f of a step after step %d (last step line: %s), restarted "
              "from %s, %d rerun(s): %s" % (
                  trial, fraction, kill_step, killed_after,
                  os.path.basename(resumed_from) if resumed_from else "no checkpoint",
                  runs, verdict), flush=True)
    print("fault injection: trials=%d equal=%d different=%d" % (args.trials, equal, different))
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
