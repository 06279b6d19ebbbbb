r"""GPU check: BERT pre-training, fine-tuning and inference throughput, and MFU.

  bash bench/gpu_check.sh                  # sets up .venv, then runs this module
  .venv/bin/python bench/gpu_check.py [--peak_tflops=989] [--tiny] ...

On a machine with one NVIDIA GPU, three measurements run one after the other
in this process, each on one random full-length batch used at every step
(input ids in [1, vocab_size), every position real, segment 1 in the second
half; bench/finetuning_bench.py's `random_batch`), through the library as the
tools use it:

  pretraining  BERT-large (configs/uncased_L-24_H-1024_A-16.json), MLM + NSP,
               seq 128, 20 masked positions: `bert_tf.training.Trainer` +
               `PretrainingTask` (what tools/run_pretraining.py runs), the
               original's AdamWeightDecay, lr 1e-4;
  finetuning   BERT-base (configs/uncased_L-12_H-768_A-12.json), a 2-label
               classifier on the pooled output, seq 128: `Trainer` +
               `ClassifierTask` (what tools/run_classifier.py runs), lr 2e-5;
  inference    BERT-base with the classifier head, forward only
               (`ClassifierTask.predict_step`: logits and softmax), on the
               model a `Trainer` builds (same dtype policy), the steps inside
               one `tf.function` (XLA-compiled with --use_xla), each step's
               input ids shifted by the step number so no step can be hoisted.

Then the fine-tuning of `finetuning` again, on 8 batches of short rows taken
in turn (each row 8 to seq / 2 tokens long, the rest padding: a tweet or a
sentence pair at seq 128), XLA off, twice: `short rows whole` with every row
at full length (`trim_padding=False`, as the original), `short rows cut` as
the tools run it (each batch cut after its longest row, the encoder on the
real tokens alone). Their FLOPs (and MFU) count the real tokens only.

Training steps run in the Trainer's host loops: the first `--warmup_steps`
(tracing, XLA compilation) are not timed; the timed steps then run in loops
of at most `--warmup_steps` steps each (the Trainer ends a host loop every
`log_steps`, and within 10 s), and seq/s is their examples over their summed
wall time (each loop ends by fetching its losses, so the device is done).
The checkpoint the Trainer writes at the end is not timed.

Defaults on a GPU: `--mixed_precision=bf16`, `--use_xla`, one device
(`distribution_strategy=one_device` on /gpu:0; the tools' default would
mirror over every visible GPU). On the CPU (no GPU visible): float32, no
XLA, `distribution_strategy=off`, batch 8, 1 warm-up and 2 timed steps.
`--tiny` replaces both models by a 2-layer, hidden-32 BERT (the tests' tiny
sizes): on the CPU the whole check then runs in seconds (tests/test_gpu_check.py
runs it through bench/gpu_check.sh). Every default can be set by its flag.

Model FLOPs per sequence (`model_flops`), counted from the config, not
measured: with L layers, hidden H, intermediate I, vocab V, sequence S, P
masked positions per sequence, C classifier labels, a multiply-add counted as
2 FLOPs, the forward pass of one sequence is

  encoder     L * [2 * S * (4 * H^2 + 2 * H * I)     query, key, value, output
                                                     projections; FFN in and out
                   + 4 * S^2 * H]                    scores Q K^T and probs V
                                                     (2 * S^2 * H each, all heads)
  pooler      2 * H^2                                the [CLS] position only
  MLM head    P * (2 * H^2 + 2 * H * V)              transform dense, then the
                                                     logits against the word
                                                     embeddings: masked positions only
  NSP head    2 * H * 2
  classifier  2 * H * C

so the encoder's matmuls are the familiar 2 * N * S with
N = L * (4 * H^2 + 2 * H * I) the encoder's matmul parameters (85M for
BERT-base, 302M for BERT-large). Training counts 3 x forward (the backward
pass computes the input and the weight gradients, 2 x forward each matmul):
the "6 * N * tokens" rule plus the attention term 3 * L * 4 * S^2 * H and
the heads. Not counted: embedding lookups and their gradient (gathers and
scatters, no matmul), LayerNorm, softmax, GELU, dropout, bias and residual
adds, the losses, and the optimizer update (per step, not per sequence). Every
sequence is full length, so no FLOP is padding.

MFU (model FLOPs utilization) = model FLOPs per sequence * seq/s / the GPU's
peak dense FLOP/s in the compute dtype (bf16; V100 and T4 have no bf16 tensor
cores, so their fp16 peak is listed: run them with --mixed_precision=fp16).
The peak comes from `PEAK_TFLOPS` by the GPU's name (nvidia-smi, else
TensorFlow's device details); `--peak_tflops` overrides it, and without
either MFU is not printed.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from bench.finetuning_bench import random_batch  # noqa: E402

BERT_LARGE = os.path.join(REPO_ROOT, "configs", "uncased_L-24_H-1024_A-16.json")
BERT_BASE = os.path.join(REPO_ROOT, "configs", "uncased_L-12_H-768_A-12.json")

# 2 layers, hidden 32 (the original BertModelTester's sizes, as tests/conftest.py),
# positions for seq 128.
TINY_CONFIG = {
    "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 37, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 128, "type_vocab_size": 2,
    "initializer_range": 0.02,
}

# Peak dense tensor-core TFLOP/s per GPU in bf16 (V100, T4: fp16), from the
# vendor's data sheets (dense, not the 2:4 sparse figure). Matched against
# the device name as whole words, in this order (the first match wins).
PEAK_TFLOPS = (
    ("GB200", 2500.0),
    ("B200", 2250.0),
    ("GH200", 989.0),
    ("H200", 989.0),
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),    # SXM ("NVIDIA H100 80GB HBM3")
    ("H800", 989.0),
    ("A100", 312.0),
    ("A800", 312.0),
    ("L40S", 362.0),
    ("L4", 121.0),
    ("A30", 165.0),
    ("A10", 125.0),
    ("V100", 125.0),    # fp16
    ("T4", 65.0),       # fp16
)

CHECKS = ("pretraining", "finetuning", "inference", "short rows whole", "short rows cut")


class CheckError(Exception):
    """A bad flag or file: printed as one line, exit status 2."""


# ------------------------------------------------------------------ FLOPs


def encoder_matmul_parameters(config):
    """N: the weights every token multiplies through in the encoder (no embeddings, biases, norms)."""
    h, i = config.hidden_size, config.intermediate_size
    return config.num_hidden_layers * (4 * h * h + 2 * h * i)


def model_flops(config, seq_length, head, max_predictions_per_seq=0, num_labels=2,
                training=True):
    """Model FLOPs of one sequence (see the module docstring for what is counted).

    Args:
      config: `BertConfig`.
      seq_length: S (every position real); a float for the mean length of rows
        of several lengths (their real tokens).
      head: "pretraining" (MLM on `max_predictions_per_seq` positions + NSP)
        or "classifier" (`num_labels` outputs on the pooled output).
      training: 3 x forward (forward + backward) if True, else the forward pass.

    Returns:
      FLOPs (a multiply-add is 2): an int for an int seq_length.
    """
    h, s = config.hidden_size, seq_length
    encoder = 2 * s * encoder_matmul_parameters(config) + config.num_hidden_layers * 4 * s * s * h
    pooler = 2 * h * h
    if head == "pretraining":
        heads = max_predictions_per_seq * (2 * h * h + 2 * h * config.vocab_size) + 2 * h * 2
    elif head == "classifier":
        heads = 2 * h * num_labels
    else:
        raise ValueError("head must be pretraining or classifier, got %r" % (head,))
    forward = encoder + pooler + heads
    return 3 * forward if training else forward


def num_parameters(config, head, num_labels=2):
    """Trainable parameters of `BertPretrainer` ("pretraining"), `BertClassifier`
    ("classifier") or `BertModel` (None), from the config."""
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    embeddings = (v + config.max_position_embeddings + config.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    total = embeddings + config.num_hidden_layers * layer + (h * h + h)
    if head == "pretraining":
        total += (h * h + h) + 2 * h + v + (2 * h + 2)  # cls/predictions, cls/seq_relationship
    elif head == "classifier":
        total += num_labels * h + num_labels
    return total


# ------------------------------------------------------------------ the GPU


def gpu_name():
    """The first GPU's name (nvidia-smi, else TensorFlow's device details), or None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        names = [line.strip() for line in out.stdout.splitlines() if line.strip()]
        if out.returncode == 0 and names:
            return names[0]
    except (OSError, subprocess.SubprocessError):
        pass
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return tf.config.experimental.get_device_details(gpus[0]).get("device_name") or "GPU"
    return None


def peak_tflops_for(name):
    """The table's peak TFLOP/s for a device name, or None if it is not listed."""
    if not name:
        return None
    for key, tflops in PEAK_TFLOPS:
        if re.search(r"(?<![A-Za-z0-9])%s(?![A-Za-z0-9])" % re.escape(key), name, re.IGNORECASE):
            return tflops
    return None


# ------------------------------------------------------------------ the checks


def _pretraining_features(batch_size, seq_length, max_predictions_per_seq, vocab_size):
    """A random full-length pre-training batch (numpy), as bench/pretraining_bench.py's."""
    import numpy as np  # pylint: disable=g-import-not-at-top
    batch = random_batch(batch_size, seq_length, 2, vocab_size)
    rng = np.random.RandomState(1)
    batch["next_sentence_labels"] = batch.pop("label_ids")[:, None]
    batch["masked_lm_positions"] = np.stack([
        np.sort(rng.choice(np.arange(1, seq_length), max_predictions_per_seq, replace=False))
        for _ in range(batch_size)]).astype(np.int32)
    batch["masked_lm_ids"] = rng.randint(
        1, vocab_size, (batch_size, max_predictions_per_seq)).astype(np.int32)
    batch["masked_lm_weights"] = np.ones((batch_size, max_predictions_per_seq), np.float32)
    return batch


def _short_row_batches(batch_size, seq_length, vocab_size, num_batches=8):
    """`num_batches` classifier batches (numpy, a leading batch axis) of short rows.

    Each row's length is drawn uniformly from 8 to seq_length / 2 (a tweet or a
    sentence pair at seq 128: padding is most of every row), the rest padding.
    """
    import numpy as np  # pylint: disable=g-import-not-at-top
    rng = np.random.RandomState(2)
    shape = (num_batches, batch_size)
    lengths = rng.randint(min(8, seq_length), max(9, seq_length // 2) + 1, size=shape)
    mask = (np.arange(seq_length) < np.minimum(lengths, seq_length)[..., None]).astype(np.int32)
    return {"input_ids": rng.randint(1, vocab_size, shape + (seq_length,)).astype(np.int32) * mask,
            "input_mask": mask,
            "segment_ids": (np.arange(seq_length) >= lengths[..., None] // 2).astype(np.int32)
            * mask,
            "label_ids": rng.randint(2, size=shape).astype(np.int32)}


def _train(strategy, build_model, features, args, batch_size, learning_rate, num_accumulation_steps=1,
           batches=False, use_xla=None, trim_padding=True):
    """Times `Trainer.train` on one repeated batch (or, with `batches`, `features`' leading
    axis of batches in turn); returns (seq/s, timed steps, seconds)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_tf import training  # pylint: disable=g-import-not-at-top

    def dataset_fn(input_context):
        values = {k: tf.constant(v) for k, v in features.items()}
        return (tf.data.Dataset.from_tensor_slices(values) if batches
                else tf.data.Dataset.from_tensors(values)).repeat()

    total = args.warmup_steps + args.steps
    with tempfile.TemporaryDirectory() as output_dir:
        # A host loop ends every log_steps (and within 10 s): the loops up to
        # warmup_steps (the tracing and compilation in the first) are left out of the timing.
        trainer = training.Trainer(strategy, build_model, output_dir,
                                   mixed_precision=args.mixed_precision,
                                   use_xla=args.use_xla if use_xla is None else use_xla,
                                   log_steps=args.warmup_steps, trim_padding=trim_padding)
        history = trainer.train(dataset_fn, batch_size, total, learning_rate,
                                max(1, total // 10), save_checkpoints_steps=total,
                                iterations_per_loop=total,
                                num_accumulation_steps=num_accumulation_steps)
    timed = [h for h in history if h["step"] > args.warmup_steps]
    steps = sum(len(h["losses"]) for h in timed)
    seconds = sum(len(h["losses"]) / h["steps_per_sec"] for h in timed)
    return steps * batch_size / seconds, steps, seconds


def _inference(strategy, build_model, features, args, batch_size):
    """Times the classifier's forward pass in one tf.function; returns (seq/s, steps, seconds)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_tf import training  # pylint: disable=g-import-not-at-top

    with tempfile.TemporaryDirectory() as output_dir:
        trainer = training.Trainer(strategy, build_model, output_dir,
                                   mixed_precision=args.mixed_precision, use_xla=args.use_xla)
    model = trainer.model
    vocab_size = model.config.vocab_size
    with strategy.scope():
        constants = {k: tf.constant(v) for k, v in features.items() if k != "label_ids"}

    def forward_steps(num_steps):
        def body(i, checksum):
            batch = dict(constants)
            # Different ids at each step (still in [1, vocab_size)): nothing is loop-invariant.
            batch["input_ids"] = (constants["input_ids"] + i) % (vocab_size - 1) + 1
            outputs = model.task.predict_step(model, batch)
            return i + 1, checksum + tf.reduce_sum(tf.cast(outputs["probabilities"], tf.float32))
        return tf.while_loop(lambda i, _: i < num_steps, body,
                             (tf.constant(0), tf.constant(0.0)))[1]

    step_fn = tf.function(forward_steps, jit_compile=bool(args.use_xla))

    def run(num_steps):
        return float(strategy.run(step_fn, args=(tf.constant(num_steps),)))

    run(args.warmup_steps)
    start = time.perf_counter()
    checksum = run(args.steps)
    seconds = time.perf_counter() - start
    if checksum != checksum:  # NaN
        raise RuntimeError("inference produced NaN probabilities")
    return args.steps * batch_size / seconds, args.steps, seconds


def _load_config(path, tiny, flag):
    from bert_tf.modeling.config import BertConfig  # pylint: disable=g-import-not-at-top
    from bert_tf.errors import UserError  # pylint: disable=g-import-not-at-top
    if tiny:
        return BertConfig.from_dict(dict(TINY_CONFIG), source="the tiny config")
    try:
        return BertConfig.from_json_file(path)
    except UserError as e:
        raise CheckError("%s: %s" % (flag, str(e).splitlines()[0]))


def run_checks(args, log=print):
    """Runs the three checks within `args.time_budget_s`; returns the result rows."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_tf.training import distribute  # pylint: disable=g-import-not-at-top
    from bert_tf.models import BertClassifier  # pylint: disable=g-import-not-at-top
    from bert_tf.models import BertPretrainer  # pylint: disable=g-import-not-at-top

    start = time.time()
    on_gpu = bool(tf.config.list_physical_devices("GPU"))
    # One device: the tools' default strategy would mirror over every visible GPU.
    strategy = distribute.get_strategy(args.distribution_strategy, num_gpus=1 if on_gpu else 0)
    large = _load_config(args.large_config_file, args.tiny, "--large_config_file")
    base = _load_config(args.base_config_file, args.tiny, "--base_config_file")
    for name, config in (("--large_config_file", large), ("--base_config_file", base)):
        if args.seq_length > config.max_position_embeddings:
            raise CheckError("--seq_length=%d exceeds max_position_embeddings (%d) of %s"
                             % (args.seq_length, config.max_position_embeddings, name))
    s = args.seq_length
    rows = []
    specs = [
        ("pretraining", large, "pretraining", args.pretrain_batch_size),
        ("finetuning", base, "classifier", args.finetune_batch_size),
        ("inference", base, "classifier", args.inference_batch_size),
        ("short rows whole", base, "classifier", args.finetune_batch_size),
        ("short rows cut", base, "classifier", args.finetune_batch_size),
    ]
    short = None
    for check, config, head, batch_size in specs:
        short_rows = check.startswith("short rows")
        if short_rows and short is None:
            short = _short_row_batches(batch_size, s, config.vocab_size)
        # Short rows: XLA off (it compiles whole rows); the FLOPs of the rows' real tokens,
        # so MFU counts no padding.
        length = float(short["input_mask"].sum(-1).mean()) if short_rows else s
        row = {"check": check, "model": "L-%d H-%d" % (config.num_hidden_layers,
                                                       config.hidden_size),
               "precision": args.mixed_precision or "fp32",
               "xla": bool(args.use_xla) and not short_rows,
               "batch_size": batch_size, "seq_length": s,
               "flops_per_seq": model_flops(config, length, head, args.max_predictions_per_seq,
                                            num_labels=2, training=check != "inference")}
        elapsed = time.time() - start
        if elapsed > args.time_budget_s:
            row["skipped"] = "time budget (%ds) spent after %.0fs" % (args.time_budget_s, elapsed)
            rows.append(row)
            log("%s: skipped, %s" % (check, row["skipped"]))
            continue
        log("%s: %s, batch %d, seq %d ..." % (check, row["model"], batch_size, s))
        phase_start = time.time()
        if check == "pretraining":
            features = _pretraining_features(batch_size, s, args.max_predictions_per_seq,
                                              config.vocab_size)
            result = _train(strategy, lambda: BertPretrainer(config), features, args, batch_size, 1e-4,
                            args.num_accumulation_steps)
        elif short_rows:
            result = _train(strategy, lambda: BertClassifier(config, 2), short, args, batch_size, 2e-5,
                            batches=True, use_xla=False, trim_padding=check.endswith("cut"))
        else:
            features = random_batch(batch_size, s, 2, config.vocab_size)
            build_model = lambda: BertClassifier(config, 2)  # noqa: E731
            if check == "finetuning":
                result = _train(strategy, build_model, features, args, batch_size, 2e-5)
            else:
                result = _inference(strategy, build_model, features, args, batch_size)
        row["seq_per_sec"], row["timed_steps"], row["timed_seconds"] = result
        row["wall_seconds"] = time.time() - phase_start
        rows.append(row)
    return rows


def _percent(value):
    """A percentage to one decimal, or to two significant digits under 1% (a tiny model's
    MFU on a CPU: 0.031%, not 0.0%)."""
    return ("%.1f%%" % value) if value >= 1 else ("%.2g%%" % value)


def format_table(rows, peak_tflops, device):
    """The results as a Markdown table (one row per check) and notes."""
    lines = ["| check | model | precision | XLA | batch | seq | seq/s | model GFLOP/seq "
             "| TFLOP/s | MFU |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if "skipped" in row:
            lines.append("| %s | %s | %s | %s | %d | %d | skipped | %.4g | - | - |"
                         % (row["check"], row["model"], row["precision"],
                            "yes" if row["xla"] else "no", row["batch_size"],
                            row["seq_length"], row["flops_per_seq"] / 1e9))
            continue
        tflops = row["flops_per_seq"] * row["seq_per_sec"] / 1e12
        mfu = _percent(100.0 * tflops / peak_tflops) if peak_tflops else "n/a"
        lines.append("| %s | %s | %s | %s | %d | %d | %.1f | %.4g | %.3g | %s |"
                     % (row["check"], row["model"], row["precision"],
                        "yes" if row["xla"] else "no", row["batch_size"], row["seq_length"],
                        row["seq_per_sec"], row["flops_per_seq"] / 1e9, tflops, mfu))
    if peak_tflops:
        lines.append("MFU against a peak of %g TFLOP/s (%s)." % (peak_tflops, device))
    else:
        lines.append("MFU needs --peak_tflops: no peak is known for %s." % device)
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true",
                        help="2-layer, hidden-32 models instead of BERT-large and BERT-base")
    parser.add_argument("--large_config_file", default=BERT_LARGE,
                        help="bert_config.json of the pre-training check")
    parser.add_argument("--base_config_file", default=BERT_BASE,
                        help="bert_config.json of the fine-tuning and inference checks")
    parser.add_argument("--mixed_precision", choices=("bf16", "fp16", "fp32"), default=None,
                        help="default: bf16 on a GPU, fp32 on the CPU")
    parser.add_argument("--use_xla", action=argparse.BooleanOptionalAction, default=None,
                        help="default: on with a GPU, off on the CPU")
    parser.add_argument("--distribution_strategy", choices=("one_device", "off"), default=None,
                        help="default: one_device (/gpu:0) with a GPU, off on the CPU")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--pretrain_batch_size", type=int, default=None,
                        help="default: 128 on a GPU, 8 on the CPU")
    parser.add_argument("--num_accumulation_steps", type=int, default=1,
                        help="pre-training micro-batches per step")
    parser.add_argument("--finetune_batch_size", type=int, default=None,
                        help="default: 32 on a GPU, 8 on the CPU")
    parser.add_argument("--inference_batch_size", type=int, default=None,
                        help="default: 128 on a GPU, 8 on the CPU")
    parser.add_argument("--warmup_steps", type=int, default=None,
                        help="untimed steps first (and the steps per timed host loop); "
                             "default: 5 on a GPU, 1 on the CPU")
    parser.add_argument("--steps", type=int, default=None,
                        help="timed steps per check; default: 50 on a GPU, 2 on the CPU")
    parser.add_argument("--peak_tflops", type=float, default=None,
                        help="the device's peak dense TFLOP/s (default: from the GPU's name)")
    parser.add_argument("--time_budget_s", type=int, default=420,
                        help="a check that would start after this many seconds is skipped")
    parser.add_argument("--output_json", default=None, help="also write the results here")
    return parser.parse_args(argv)


def _resolve_defaults(args, on_gpu):
    """Fills the device-dependent defaults; raises CheckError on a bad value."""
    gpu_defaults = {"pretrain_batch_size": 128, "finetune_batch_size": 32,
                    "inference_batch_size": 128, "warmup_steps": 5, "steps": 50}
    cpu_defaults = {"pretrain_batch_size": 8, "finetune_batch_size": 8,
                    "inference_batch_size": 8, "warmup_steps": 1, "steps": 2}
    for key, value in (gpu_defaults if on_gpu else cpu_defaults).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.mixed_precision is None:
        args.mixed_precision = "bf16" if on_gpu else "fp32"
    if args.mixed_precision == "fp32":
        args.mixed_precision = None
    if args.use_xla is None:
        args.use_xla = on_gpu
    if args.distribution_strategy is None:
        args.distribution_strategy = "one_device" if on_gpu else "off"
    for key in ("seq_length", "max_predictions_per_seq", "pretrain_batch_size",
                "num_accumulation_steps", "finetune_batch_size", "inference_batch_size",
                "warmup_steps", "steps", "time_budget_s"):
        if getattr(args, key) <= 0:
            raise CheckError("--%s must be a positive integer, got %d" % (key, getattr(args, key)))
    if args.max_predictions_per_seq >= args.seq_length:
        raise CheckError("--max_predictions_per_seq=%d must be less than --seq_length=%d"
                         % (args.max_predictions_per_seq, args.seq_length))
    if args.pretrain_batch_size % args.num_accumulation_steps:
        raise CheckError("--pretrain_batch_size=%d must be divisible by --num_accumulation_steps=%d"
                         % (args.pretrain_batch_size, args.num_accumulation_steps))
    if args.peak_tflops is not None and not args.peak_tflops > 0:
        raise CheckError("--peak_tflops must be positive, got %g" % args.peak_tflops)
    if args.steps % args.warmup_steps:
        # The Trainer's timed host loops are warmup_steps long; keep them whole.
        args.steps += args.warmup_steps - args.steps % args.warmup_steps


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from absl import logging  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_tf.errors import UserError  # pylint: disable=g-import-not-at-top
    from bert_tf.fileio import atomic_write  # pylint: disable=g-import-not-at-top

    logging.set_verbosity(logging.WARNING)
    on_gpu = bool(tf.config.list_physical_devices("GPU"))
    try:
        _resolve_defaults(args, on_gpu)
        device = gpu_name() if on_gpu else None
        peak = args.peak_tflops or peak_tflops_for(device)
        device = device or "the CPU (%d cores)" % os.cpu_count()
        print("device: %s; TensorFlow %s; precision %s, XLA %s, strategy %s%s"
              % (device, tf.__version__, args.mixed_precision or "fp32",
                 "on" if args.use_xla else "off", args.distribution_strategy,
                 "; tiny models" if args.tiny else ""),
              flush=True)
        start = time.time()
        rows = run_checks(args, log=lambda line: print(line, flush=True))
    except (UserError, CheckError) as e:
        print("error: %s" % str(e).splitlines()[0], file=sys.stderr)
        return 2
    print(format_table(rows, peak, device))
    print("total %.0fs (budget %ds)" % (time.time() - start, args.time_budget_s))
    result = {"device": device, "peak_tflops": peak, "tensorflow": tf.__version__,
              "rows": rows}
    if args.output_json:
        with atomic_write(args.output_json) as f:
            f.write(json.dumps(result, indent=1) + "\n")
    skipped = [row["check"] for row in rows if "skipped" in row]
    if skipped:
        print("not run (time budget): %s" % ", ".join(skipped), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
