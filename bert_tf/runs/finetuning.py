"""What the two fine-tuning runs share (`run_classifier`, `run_squad`).

The original's `main()`s computed the schedule from the number of training
examples, wrote the features to TFRecords in `output_dir`, and handed an
`input_fn` to the Estimator. These helpers do the same for a `Trainer`.
`check_start_checkpoint` (run_pretraining's too) refuses a config that is not
the checkpoint's before the run writes anything.
"""

import math

import numpy as np
from absl import logging

from bert_tf import fileio
from bert_tf.data import input_pipeline
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.training import output_dir as output_dir_lib


def check_start_checkpoint(bert_config, output_dir, init_checkpoint, head=None,
                           num_labels=None):
    """Refuses, before anything is written, a config that is not the start checkpoint's.

    The checkpoint a run starts from is `output_dir`'s latest when it has one
    (the run resumes and ignores `init_checkpoint`, as the original's
    Estimator did), else `init_checkpoint`; with neither, the model starts
    from its initializers and there is nothing to check. Only the
    checkpoint's index is read (`checkpoint.check_checkpoint_fits`).

    Args:
      bert_config: `BertConfig` (from --bert_config_file).
      output_dir, init_checkpoint: the run's flags.
      head, num_labels: the task model's head (`checkpoint.HEADS`).

    Raises:
      UserError: one line naming the flag, the checkpoint, the variable and
        both shapes.
    """
    latest = output_dir_lib.latest_checkpoint(output_dir)
    if latest:
        checkpoint.check_checkpoint_fits(bert_config, latest, flag="output_dir", head=head,
                                         num_labels=num_labels)
    elif init_checkpoint:
        # Not strict: the original's init_from_checkpoint loads what the two share.
        checkpoint.check_checkpoint_fits(bert_config, init_checkpoint, flag="init_checkpoint",
                                         head=head, num_labels=num_labels, strict=False)


def train_schedule(num_train_examples, train_batch_size, num_train_epochs, warmup_proportion):
    """The original's `num_train_steps` and `num_warmup_steps`.

    num_train_steps = int(num_train_examples / train_batch_size * num_train_epochs)
    num_warmup_steps = int(num_train_steps * warmup_proportion)

    Raises:
      UserError: the flags give no training step at all (the original's
        Estimator failed on max_steps=0 instead).
    """
    if train_batch_size < 1:
        raise UserError("--train_batch_size must be positive, got %d" % train_batch_size)
    if num_train_epochs <= 0 or not math.isfinite(num_train_epochs):
        raise UserError("--num_train_epochs must be positive, got %r" % num_train_epochs)
    if not 0.0 <= warmup_proportion <= 1.0:
        raise UserError("--warmup_proportion must be in [0, 1], got %r" % warmup_proportion)
    num_train_steps = int(num_train_examples / train_batch_size * num_train_epochs)
    if num_train_steps < 1:
        raise UserError(
            "%d training examples / --train_batch_size=%d * --num_train_epochs=%g gives no "
            "training step" % (num_train_examples, train_batch_size, num_train_epochs))
    return num_train_steps, int(num_train_steps * warmup_proportion)


def train_dataset_fn(input_file, name_to_features, train_batch_size, limits=None):
    """`fn(input_context)`: the per-replica training batches of a fine-tuning TFRecord file.

    `limits` (`input_pipeline.record_limits`): the values every record is checked against.
    """
    def dataset_fn(input_context):
        return input_pipeline.create_finetuning_dataset(
            input_file, name_to_features,
            input_context.get_per_replica_batch_size(train_batch_size),
            input_context=input_context, limits=limits)
    return dataset_fn


def record_limits(task, max_seq_length, num_labels=None):
    """The values every record must hold for the task's model (`input_pipeline.record_limits`)."""
    return input_pipeline.record_limits(task.config, max_seq_length, num_labels=num_labels)


def log_run(title, **values):
    """The original's "***** Running training *****" block, one "  key = value" per line."""
    logging.info("***** %s *****", title)
    for key, value in values.items():
        logging.info("  %s = %s", key.replace("_", " ").capitalize(), value)


def write_test_results(output_predict_file, predictions, is_regression=False):
    """`test_results.tsv` as the original: per example, its class probabilities tab-separated.

    Args:
      predictions: dict with `probabilities` float32 [num_examples, num_labels]
        (regression: `predictions` float32 [num_examples], one score a line).

    The values are printed with `str()` of numpy float32, as the original
    printed the Estimator's float32 predictions.
    """
    rows = (predictions["predictions"][:, None] if is_regression
            else predictions["probabilities"])
    lines = ["\t".join(str(np.float32(p)) for p in row) + "\n" for row in rows]
    fileio.write_text(output_predict_file, "".join(lines))
    return len(lines)
