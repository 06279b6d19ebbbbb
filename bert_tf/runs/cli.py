"""The tools' plumbing: their runner and the flags the training tools share.

The tools (`bert_tf.tools.<name>`: the console scripts `bert-<name>`,
`python -m bert_tf.tools.<name>`, and `python tools/<name>.py` in a clone)
parse flags, check them, and make one call into `bert_tf.runs` (or another
library entry point); `run(main, tool)` turns a `UserError` into one line and
exit status 2, and a run preempted while training (SIGTERM or Ctrl-C: a
checkpoint at the current step, `bert_tf.training.preemption`) into exit
status 75 (130 after a second Ctrl-C). The flags are defined by the tools
that call `define_*` (never at import: the library reads no flags), and
`scale_out_from_flags` hands their values to the library as a
`bert_tf.training.scale_out.ScaleOut`.
"""

import os
import sys

from absl import app
from absl import logging

from bert_tf.errors import UserError
from bert_tf.runs import tf_logs


def run(main, tool=None):
    """Runs `main` under `absl.app.run`; a `UserError` becomes one line and exit 2.

    Anything else (a bug) keeps its traceback; help (`--help`, `--helpfull`)
    exits 0. Before `main` (and so before TensorFlow loads),
    `bert_tf.runs.tf_logs.configure` sets up the logs: bert_tf's INFO progress
    without TensorFlow's internals; absl's `--verbosity=1` shows everything,
    `--verbosity=-1` warnings and errors only.

    `tool` is the name of the tool's module (its `__name__`). absl's `--help`
    prints the `__main__` module's docstring and the flags that module
    defines; whatever the `__main__` module is (a console script, a clone's
    `tools/<name>.py`), the tool's docstring and flags stand in for its own.
    """
    if tool is not None:
        _present_as_main(sys.modules[tool])

    started = []

    def _wrapped(argv):
        started.append(True)
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
        except (SystemExit, KeyboardInterrupt) as e:
            # A preemption notice (SIGTERM, Ctrl-C) during training: the trainer has
            # written the checkpoint and logged its one line; exit 75. A second
            # Ctrl-C: one line, exit 130. Loaded only if training ran.
            preemption = sys.modules.get("bert_tf.training.preemption")
            if preemption is None:
                raise
            if isinstance(e, preemption.Preempted):
                status = preemption.PREEMPTED_EXIT_STATUS
            elif isinstance(e, KeyboardInterrupt):
                status = preemption.INTERRUPTED_EXIT_STATUS
            else:
                raise
            if stderr_filter is not None:
                stderr_filter.close()
            if status == preemption.INTERRUPTED_EXIT_STATUS:
                sys.stderr.write("interrupted (SIGINT): stopped without a checkpoint\n")
            sys.stderr.flush()
            os._exit(status)
        except Exception as e:  # pylint: disable=broad-except
            # A lost worker of a multi-worker job (TF_CONFIG): one line, exit 69; any
            # other error keeps its traceback.
            lost_worker = sys.modules.get("bert_tf.training.lost_worker")
            lost = lost_worker and lost_worker.as_lost_worker(
                e, *lost_worker.cluster_of(tf_config=os.environ.get("TF_CONFIG")))
            if not lost:
                raise
            if stderr_filter is not None:
                stderr_filter.close()
            sys.stderr.write("error: %s\n" % lost)
            sys.stderr.flush()
            os._exit(lost_worker.EXIT_STATUS)  # at once: TensorFlow's exit would wait for it

    try:
        app.run(_wrapped)
    except SystemExit as e:
        # absl exits 1 after --help (and --helpfull, --helpshort, --helpxml); help that was
        # asked for is a success.
        if e.code == 1 and not started and _asks_for_help(sys.argv[1:]):
            raise SystemExit(0) from None
        raise


_HELP_FLAGS = ("-?", "--help", "--helpshort", "--helpfull", "--helpxml")


def _asks_for_help(args):
    """Whether absl's flags in `args` (those before a `--`) ask for help."""
    for arg in args:
        if arg == "--":
            return False
        name, _, value = arg.partition("=")
        if name in _HELP_FLAGS and value.lower() not in ("false", "f", "0"):
            return True
    return False


def _present_as_main(module):
    """`module`'s docstring and key flags as those of `__main__` (`--help`'s usage and flags)."""
    main_module = sys.modules.get("__main__")
    if main_module is None or main_module is module:
        return  # `python -m bert_tf.tools.<name>`: the tool is `__main__` already
    main_module.__doc__ = module.__doc__
    flag_values = logging.FLAGS  # absl's FLAGS; the tool has defined its flags into it
    for flag in flag_values.get_key_flags_for_module(module.__name__):
        flag_values.register_key_flag_for_module(sys.argv[0], flag)


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


def define_classifier_flags(flags):
    """run_classifier's flags that run_classifier_with_tfhub shares: the task, data and schedule.

    Same names, types, defaults and help as the original's; each tool adds
    its model's own (run_classifier: bert_config_file, vocab_file,
    init_checkpoint, do_lower_case; run_classifier_with_tfhub:
    bert_hub_module_handle), the TPU flags and the scale-out flags.
    """
    flags.DEFINE_string(
        "data_dir", None,
        "The input data dir. Should contain the .tsv files (or other data files) "
        "for the task.")
    flags.DEFINE_string("task_name", None, "The name of the task to train.")
    flags.DEFINE_string(
        "output_dir", None,
        "The output directory where the model checkpoints will be written.")
    flags.DEFINE_integer(
        "max_seq_length", 128,
        "The maximum total input sequence length after WordPiece tokenization. "
        "Sequences longer than this will be truncated, and sequences shorter "
        "than this will be padded.")
    flags.DEFINE_bool("do_train", False, "Whether to run training.")
    flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    flags.DEFINE_bool(
        "do_predict", False,
        "Whether to run the model in inference mode on the test set.")
    flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
    flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
    flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
    flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
    flags.DEFINE_float("num_train_epochs", 3.0,
                       "Total number of training epochs to perform.")
    flags.DEFINE_float(
        "warmup_proportion", 0.1,
        "Proportion of training to perform linear learning rate warmup for. "
        "E.g., 0.1 = 10% of training.")
    flags.DEFINE_integer("save_checkpoints_steps", 1000,
                         "How often to save the model checkpoint.")
    flags.DEFINE_integer("iterations_per_loop", 1000,
                         "How many steps to make in each estimator call (here: in "
                         "each tf.function call, on every device).")


def classifier_run_options(flag_values):
    """The keyword arguments both classifier runs take, from their flags (`scale_out` too).

    Every flag of `define_classifier_flags` but data_dir, task_name and
    output_dir (the runs' positional arguments).
    """
    options = {name: getattr(flag_values, name) for name in (
        "max_seq_length", "do_train", "do_eval", "do_predict", "train_batch_size",
        "eval_batch_size", "predict_batch_size", "learning_rate", "num_train_epochs",
        "warmup_proportion", "save_checkpoints_steps", "iterations_per_loop")}
    options["scale_out"] = scale_out_from_flags(flag_values)
    return options


def define_scale_out_flags(flags):
    """The new flags every training tool shares: strategy, XLA, precision, accumulation,
    recomputation, seed."""
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
    flags.DEFINE_bool("gradient_checkpointing", False,
                      "Recompute each Transformer layer's activations in the backward pass "
                      "instead of keeping them: less memory (a larger batch or a longer "
                      "sequence), about a third more compute per step; the same gradients.")
    flags.DEFINE_integer(
        "seed", None,
        "A reproducible run that resumes exactly: the initial weights, the training "
        "input's order and the dropout masks follow from this seed, and TensorFlow's op "
        "determinism is on. Two runs with one seed write the same checkpoints, and a "
        "run killed at any point and started again with the same command ends with the "
        "same checkpoint as a run never stopped. Default: unseeded, as the original.",
        lower_bound=0)


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
