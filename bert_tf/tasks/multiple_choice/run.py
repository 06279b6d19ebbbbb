"""BERT fine-tuning on multiple choice (SWAG), in run_classifier's course (new; the paper's §4.4).

`run_multiple_choice(...)` is what `tools/run_multiple_choice.py` calls with
its flags: it checks every input before any TensorFlow op (the casing
against the checkpoint's name, the config against the vocab and the
checkpoint's variables, the CSV files), makes the strategy, then trains,
evaluates and predicts a `MultipleChoiceTask` with a `Trainer`, writing
run_classifier's files in `output_dir`: `train.tf_record`, `eval.tf_record`,
`predict.tf_record` (every choice's features flattened,
`bert_tf.tasks.multiple_choice.data`), `model.ckpt-<step>` (run_classifier's
names: `output_weights` [1, hidden_size], `output_bias` [1]),
`eval_results.txt` (`eval_accuracy`, `eval_loss`, `global_step`, `loss`) and
`test_results.tsv` (one probability per choice, tab-separated, a line per
example). A run that fails before training, evaluation or prediction
produce anything leaves `output_dir` as it found it (`fileio.InputFiles`).
"""

import os

from bert_tf import tokenization
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.tasks.multiple_choice import data as multiple_choice_data
from bert_tf.errors import UserError
from bert_tf.runs import finetuning
from bert_tf.tasks.multiple_choice.model import BertMultipleChoice
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.schedule import Schedule

# The files each split's examples come from, for the errors that name them.
_SPLITS = {"train": "train", "eval": "dev", "predict": "test"}


def run_multiple_choice(data_dir, bert_config_file, vocab_file, output_dir, init_checkpoint=None,
                        do_lower_case=True, max_seq_length=128, do_train=False, do_eval=False,
                        do_predict=False, schedule=Schedule(), scale_out=ScaleOut(),
                        dev_eval=DevEval(), overwrite_output_dir=False):
    """Trains, evaluates and predicts multiple choice as run_classifier does a classifier.

    Args:
      data_dir: SWAG's layout: train.csv, val.csv (or dev.csv), test.csv
        (`multiple_choice_data`); every file the run reads has the same
        number of endings.
      bert_config_file, vocab_file, output_dir and the rest: run_classifier's flags.
      schedule: a `Schedule` (batch sizes, learning rate, epochs, warm-up,
        checkpoint cadence): run_classifier's.
      scale_out: a `ScaleOut` (strategy, XLA, precision, accumulation, ...).
      dev_eval: a `DevEval` (evaluation on the dev file while training, the
        best checkpoint, early stopping).
      overwrite_output_dir: run_classifier's (new).

    Returns:
      dict with the eval results (key "eval") and the predictions ("predict")
      for what ran.

    Raises:
      UserError: one line naming the flag, file (and line) or variable at fault.
    """
    bert_config_file, vocab_file, init_checkpoint = finetuning.check_run_flags(
        bert_config_file, vocab_file, init_checkpoint, do_lower_case, do_train, do_eval,
        do_predict)
    bert_config = finetuning.read_bert_config(bert_config_file, vocab_file, output_dir,
                                              max_seq_length, scale_out, dev_eval)
    # A rerun against the run output_dir holds, before anything is written.
    record = finetuning.run_record(
        output_dir, "run_multiple_choice", "multiple_choice", do_train, overwrite_output_dir,
        scale_out, dev_eval, schedule, dict(init_checkpoint=init_checkpoint,
                                            do_lower_case=do_lower_case,
                                            max_seq_length=max_seq_length),
        bert_config_file=bert_config_file, vocab_file=vocab_file, num_labels=1,
        do_lower_case=do_lower_case, max_seq_length=max_seq_length, data={"data_dir": data_dir})
    # The head is the classifier's with one label: output_weights [1, hidden_size].
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="classifier", num_labels=1,
                                      overwrite_output_dir=overwrite_output_dir)
    # Read every input before any TensorFlow op, so a bad file fails fast.
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    examples = finetuning.classifier_examples(
        multiple_choice_data.MultipleChoiceProcessor(), data_dir, do_train, do_eval, do_predict,
        dev_eval=dev_eval.enabled)
    num_choices = _num_choices(examples, data_dir)
    return finetuning.train_evaluate_predict(
        lambda: BertMultipleChoice(bert_config, num_choices=num_choices),
        _MultipleChoiceRecords(examples, tokenizer, max_seq_length, num_choices),
        output_dir, "run_multiple_choice", scale_out, schedule=schedule,
        init_checkpoint=init_checkpoint, dev_eval=dev_eval, do_eval=do_eval, run_record=record)


class _MultipleChoiceRecords(finetuning.ClassifierRecords):
    """Every choice's classifier features, one after the other (`multiple_choice_data`)."""

    def __init__(self, examples, tokenizer, max_seq_length, num_choices):
        super().__init__(examples, tokenizer, None, max_seq_length)
        self.num_choices = num_choices

    def spec(self):
        return classifier_data.name_to_features(self.num_choices * self.max_seq_length)

    def limits(self, task):
        return finetuning.record_limits(task, self.max_seq_length, num_labels=self.num_choices)

    def write(self, split, path):
        return multiple_choice_data.file_based_convert_examples_to_features(
            self.examples[split], self.max_seq_length, self.tokenizer, path, self.num_choices)

    def log_fields(self, split, num_records, num_padding=None):
        fields = super().log_fields(split, num_records, num_padding)
        if split == "train":
            fields["num_choices"] = self.num_choices
        return fields


def _num_choices(examples, data_dir):
    """The one number of choices of every split read; UserError naming the files that differ."""
    counts = {os.path.basename(multiple_choice_data.split_path(data_dir, _SPLITS[split])):
              len(split_examples[0].endings) for split, split_examples in examples.items()}
    if len(set(counts.values())) > 1:
        raise UserError("--data_dir=%s: the files have different numbers of endings (%s); a run "
                        "takes one" % (data_dir, ", ".join(
                            "%s: %d" % item for item in sorted(counts.items()))))
    return next(iter(counts.values()))
