"""A fine-tuning run's schedule: its batch sizes, learning rate, epochs, warm-up, checkpoints.

`Schedule` holds what the original run_classifier.py's flags of the same
names say (`--train_batch_size`, `--eval_batch_size`, `--predict_batch_size`,
`--learning_rate`, `--num_train_epochs`, `--warmup_proportion`,
`--save_checkpoints_steps`, `--iterations_per_loop`), with their defaults and
help, and the steps they make of a training set (`train_steps`: the
original's `num_train_steps` and `num_warmup_steps`). The fine-tuning runs
(`bert_tf.runs`) take one; each field is a flag of the fine-tuning tools
(`bert_tf.options`: declared here once, with its help).

  schedule = Schedule(learning_rate=2e-5, num_train_epochs=2.0)
  run_classifier("MRPC", data_dir, bert_config_file, vocab_file, output_dir,
                 do_train=True, schedule=schedule)
  num_train_steps, num_warmup_steps = schedule.train_steps(3668)  # (229, 22)
"""

import dataclasses
import math

from bert_tf.errors import UserError
from bert_tf.options import option


@dataclasses.dataclass(frozen=True)
class Schedule(object):
    """How a fine-tuning run trains, evaluates and predicts (the defaults: the original's).

    Attributes (the flags of the same names):
      train_batch_size: examples per update, over every replica.
      eval_batch_size, predict_batch_size: examples per evaluation and
        prediction batch, over every replica.
      learning_rate: the peak learning rate of AdamWeightDecay (or LAMB),
        reached after the warm-up, then decayed linearly to 0.
      num_train_epochs: passes over the training records (a float: the
        steps are `train_steps`').
      warmup_proportion: the share of the training steps that warm up.
      save_checkpoints_steps: a checkpoint every this many steps (and at the end).
      iterations_per_loop: at most this many steps per `tf.function` call.
    """

    train_batch_size: int = option(32, "Total batch size for training.")
    eval_batch_size: int = option(8, "Total batch size for eval.")
    predict_batch_size: int = option(8, "Total batch size for predict.")
    learning_rate: float = option(5e-5, "The initial learning rate for Adam.")
    num_train_epochs: float = option(3.0, "Total number of training epochs to perform.")
    warmup_proportion: float = option(
        0.1,
        "Proportion of training to perform linear learning rate warmup for. "
        "E.g., 0.1 = 10% of training.")
    save_checkpoints_steps: int = option(1000, "How often to save the model checkpoint.")
    iterations_per_loop: int = option(
        1000,
        "How many steps to make in each estimator call (here: in each tf.function call, on "
        "every device).")

    def train_steps(self, num_train_examples):
        """The original's `num_train_steps` and `num_warmup_steps` for `num_train_examples`.

        num_train_steps = int(num_train_examples / train_batch_size * num_train_epochs)
        num_warmup_steps = int(num_train_steps * warmup_proportion)

        Raises:
          UserError: the flags give no training step at all (the original's
            Estimator failed on max_steps=0 instead).
        """
        if self.train_batch_size < 1:
            raise UserError("--train_batch_size must be positive, got %d" % self.train_batch_size)
        if self.num_train_epochs <= 0 or not math.isfinite(self.num_train_epochs):
            raise UserError("--num_train_epochs must be positive, got %r" % self.num_train_epochs)
        if not 0.0 <= self.warmup_proportion <= 1.0:
            raise UserError("--warmup_proportion must be in [0, 1], got %r"
                            % self.warmup_proportion)
        num_train_steps = int(num_train_examples / self.train_batch_size * self.num_train_epochs)
        if num_train_steps < 1:
            raise UserError(
                "%d training examples / --train_batch_size=%d * --num_train_epochs=%g gives no "
                "training step" % (num_train_examples, self.train_batch_size,
                                   self.num_train_epochs))
        return num_train_steps, int(num_train_steps * self.warmup_proportion)

    def train_options(self):
        """The keyword arguments of `Trainer.train` these options set beside the steps."""
        return {"save_checkpoints_steps": self.save_checkpoints_steps,
                "iterations_per_loop": self.iterations_per_loop}
