"""The tools' plumbing: their runner and the flags the training tools share.

The tools in `tools/` parse flags, check them, and make one call into
`bert_tf.runs` (or another library entry point); `run(main)` turns a
`UserError` into one line and exit status 2. The flags are defined by the
tools that call `define_*` (never at import: the library reads no flags), and
`scale_out_from_flags` hands their values to the library as a
`bert_tf.training.scale_out.ScaleOut`.
"""

import os
import sys

from absl import app
from absl import logging

from bert_tf.errors import UserError
from bert_tf.runs import tf_logs


def run(main):
    """Runs `main` under `absl.app.run`; a `UserError` becomes one line and exit 2.

    Anything else (a bug) keeps its traceback. Before `main` (and so before
    TensorFlow loads), `bert_tf.runs.tf_logs.configure` sets up the logs:
    bert_tf's INFO progress without TensorFlow's internals; absl's
    `--verbosity=1` shows everything, `--verbosity=-1` warnings and errors only.
    """

    def _wrapped(argv):
        # absl's own --verbosity (-v), which app.run has just parsed: present or not, since
        # its default (-1) is also a value a user may pass.
        verbosity = logging.FLAGS["verbosity"]
        stderr_filter = tf_logs.configure(verbosity.value if verbosity.present else None)
        try:
            return main(argv)
        except UserError as e:
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            if stderr_filter is not None:
                stderr_filter.close()  # what TensorFlow wrote first, then the error line
            sys.stderr.write("error: %s\n" % message)
            sys.stderr.flush()
            os._exit(2)  # no traceback, no atexit noise from TensorFlow

    app.run(_wrapped)


def split_comma_list(value):
    """`"a, b,,c"` -> `["a", "b", "c"]` (the original's comma-separated flags)."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


# ------------------------------------------------------------ shared flags
#
# Defined by the tools that call these functions (run_pretraining,
# run_classifier, run_squad), never at import: the library reads no flags.


def define_tpu_flags(flags):
    """The original's TPU flags, same names, types, defaults and help."""
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
    flags.DEFINE_string(
        "tpu_name", None,
        "The Cloud TPU to use for training. This should be either the name "
        "used when creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 "
        "url.")
    flags.DEFINE_string(
        "tpu_zone", None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not "
        "specified, we will attempt to automatically detect the GCE project from "
        "metadata.")
    flags.DEFINE_string(
        "gcp_project", None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not "
        "specified, we will attempt to automatically detect the GCE project from "
        "metadata.")
    flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
    flags.DEFINE_integer(
        "num_tpu_cores", 8,
        "Only used if `use_tpu` is True. Accepted for the original's command lines and "
        "ignored with a warning: the TPU strategy uses every core of the TPU.")


def define_scale_out_flags(flags):
    """The new flags every training tool shares: strategy, XLA, precision, accumulation."""
    flags.DEFINE_enum(
        "distribution_strategy", None,
        ["off", "one_device", "mirrored", "multi_worker_mirrored", "tpu"],
        "tf.distribute strategy. Default: tpu with --use_tpu, mirrored with "
        "--num_gpus > 1, one_device with --num_gpus=1, else off.")
    flags.DEFINE_integer(
        "num_gpus", None,
        "GPUs per worker (mirrored / one_device). Default (or -1): every visible GPU; "
        "0: the CPU. The devices used are logged.")
    flags.DEFINE_bool("use_xla", False, "Compile each replica's training step with XLA.")
    flags.DEFINE_enum("mixed_precision", None, ["bf16", "fp16"],
                      "Mixed precision: bf16 (TPU, Ampere+ GPUs) or fp16 (with dynamic "
                      "loss scaling). Variables stay float32; LayerNorm, softmax and the "
                      "losses run in float32. Default: float32.")
    flags.DEFINE_integer(
        "num_accumulation_steps", 1,
        "Split each replica's share of --train_batch_size into this many "
        "micro-batches and accumulate their gradients: the same update as the "
        "whole batch with less memory. --train_batch_size stays the batch of "
        "one update.")
    flags.DEFINE_enum("optimizer_type", "adamw", ["adamw", "lamb"],
                      "adamw: the original AdamWeightDecayOptimizer; lamb: LAMB.")
    flags.DEFINE_integer("log_steps", 100,
                         "Log progress (steps/s, examples/s, ETA) and write summaries at "
                         "least every this many steps.")


def scale_out_from_flags(flag_values):
    """The `bert_tf.training.scale_out.ScaleOut` of the TPU and scale-out flags."""
    from bert_tf.training.scale_out import ScaleOut  # pylint: disable=g-import-not-at-top
    return ScaleOut(**{field: getattr(flag_values, field)
                       for field in ScaleOut.__dataclass_fields__})


def strategy_name(flag_values):
    """The strategy the TPU and scale-out flags ask for (see `ScaleOut.strategy_name`)."""
    return scale_out_from_flags(flag_values).strategy_name()


def strategy_from_flags(flag_values):
    """Creates the `tf.distribute.Strategy` the flags name (call it before any TF op)."""
    return scale_out_from_flags(flag_values).create_strategy()
