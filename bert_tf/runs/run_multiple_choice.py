"""BERT fine-tuning on multiple choice (SWAG), in run_classifier's course (new; the paper's §4.4).

`run_multiple_choice(...)` is what `tools/run_multiple_choice.py` calls with
its flags: it checks every input before any TensorFlow op (the casing
against the checkpoint's name, the config against the vocab and the
checkpoint's variables, the CSV files), makes the strategy, then trains,
evaluates and predicts a `MultipleChoiceTask` with a `Trainer`, writing
run_classifier's files in `output_dir`: `train.tf_record`, `eval.tf_record`,
`predict.tf_record` (every choice's features flattened,
`bert_tf.data.multiple_choice_data`), `model.ckpt-<step>` (run_classifier's
names: `output_weights` [1, hidden_size], `output_bias` [1]),
`eval_results.txt` (`eval_accuracy`, `eval_loss`, `global_step`, `loss`) and
`test_results.tsv` (one probability per choice, tab-separated, a line per
example). A run that fails before training, evaluation or prediction
produce anything leaves `output_dir` as it found it (`fileio.InputFiles`).
"""

import os

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.data import classifier_data
from bert_tf.data import input_pipeline
from bert_tf.data import multiple_choice_data
from bert_tf.errors import UserError
from bert_tf.modeling.config import BertConfig
from bert_tf.runs import finetuning
from bert_tf.tasks.multiple_choice import MultipleChoiceTask
from bert_tf.training import distribute
from bert_tf.training import output_dir as output_dir_lib
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.trainer import Trainer

# The files each split's examples come from, for the errors that name them.
_SPLITS = {"train": "train", "eval": "dev", "predict": "test"}


def run_multiple_choice(data_dir, bert_config_file, vocab_file, output_dir, init_checkpoint=None,
                        do_lower_case=True, max_seq_length=128, do_train=False, do_eval=False,
                        do_predict=False, train_batch_size=32, eval_batch_size=8,
                        predict_batch_size=8, learning_rate=5e-5, num_train_epochs=3.0,
                        warmup_proportion=0.1, save_checkpoints_steps=1000,
                        iterations_per_loop=1000, scale_out=ScaleOut(), dev_eval=DevEval()):
    """Trains, evaluates and predicts multiple choice as run_classifier does a classifier.

    Args:
      data_dir: SWAG's layout: train.csv, val.csv (or dev.csv), test.csv
        (`multiple_choice_data`); every file the run reads has the same
        number of endings.
      bert_config_file, vocab_file, output_dir and the rest: run_classifier's flags.
      scale_out: a `ScaleOut` (strategy, XLA, precision, accumulation, ...).
      dev_eval: a `DevEval` (evaluation on the dev file while training, the
        best checkpoint, early stopping).

    Returns:
      dict with the eval results (key "eval") and the predictions ("predict")
      for what ran.

    Raises:
      UserError: one line naming the flag, file (and line) or variable at fault.
    """
    bert_config_file = releases.resolve_file(bert_config_file, "bert_config_file")
    vocab_file = releases.resolve_file(vocab_file, "vocab_file")
    init_checkpoint = releases.resolve_file(init_checkpoint, "init_checkpoint")
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    if not do_train and not do_eval and not do_predict:
        raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    dev_eval.check()
    fileio.check_writable(output_dir, "output_dir")
    bert_config = BertConfig.from_json_file(bert_config_file)
    scale_out.configure_model(bert_config)  # --gradient_checkpointing
    bert_config.check_max_seq_length(max_seq_length, bert_config_file)
    tokenization.check_vocab(vocab_file, bert_config, bert_config_file)
    # The head is the classifier's with one label: output_weights [1, hidden_size].
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="classifier", num_labels=1)
    # Read every input before any TensorFlow op, so a bad file fails fast.
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    examples = finetuning.classifier_examples(
        multiple_choice_data.MultipleChoiceProcessor(), data_dir, do_train, do_eval, do_predict,
        dev_eval=dev_eval.enabled)
    num_choices = _num_choices(examples, data_dir)
    task = MultipleChoiceTask(bert_config, num_choices)

    with fileio.InputFiles(output_dir) as inputs, locks.OutputLock(
            output_dir, "run_multiple_choice",
            enabled=distribute.will_be_chief(scale_out.strategy_name())):
        # The strategy comes before any TensorFlow op (MultiWorkerMirroredStrategy).
        strategy = scale_out.create_strategy()
        trainer = Trainer(strategy, task, output_dir, **scale_out.trainer_options())
        inputs.enabled = trainer.is_chief
        spec = classifier_data.name_to_features(num_choices * max_seq_length)
        limits = finetuning.record_limits(task, max_seq_length, num_labels=num_choices)

        def write_records(name, split):
            path = inputs.add(os.path.join(output_dir, name))
            multiple_choice_data.file_based_convert_examples_to_features(
                examples[split], max_seq_length, tokenizer, path, num_choices)
            return path

        def finite_input(name, split, batch_size, title):
            """Writes `name` and returns a FiniteInput over it, logged as run_classifier logs."""
            data = input_pipeline.finite_records_input(
                write_records(name, split), spec, len(examples[split]), batch_size,
                limits=limits)
            finetuning.log_run(title, num_examples="%d (%d actual, %d padding)" % (
                len(examples[split]) + data.num_padding_examples, len(examples[split]),
                data.num_padding_examples), batch_size=batch_size)
            return data

        results = {}
        eval_data = None
        keeper = None
        if do_train:
            if dev_eval.enabled:
                eval_data = finite_input("eval.tf_record", "eval", eval_batch_size,
                                         "Running evaluation")
                keeper = finetuning.best_checkpoint(
                    trainer, dev_eval, lambda step: trainer.evaluate(eval_data, eval_batch_size))
            num_train_steps, num_warmup_steps = finetuning.train_schedule(
                len(examples["train"]), train_batch_size, num_train_epochs, warmup_proportion)
            train_file = write_records("train.tf_record", "train")
            finetuning.log_run("Running training", num_examples=len(examples["train"]),
                               num_choices=num_choices, batch_size=train_batch_size,
                               num_steps=num_train_steps)
            finetuning.train_on_records(trainer, train_file, spec, limits, train_batch_size,
                                        num_train_steps, learning_rate, num_warmup_steps,
                                        save_checkpoints_steps, iterations_per_loop, scale_out,
                                        init_checkpoint=init_checkpoint, keeper=keeper)
        finetuning.use_best_checkpoint(trainer, dev_eval, keeper)

        if do_eval:
            if eval_data is None:
                eval_data = finite_input("eval.tf_record", "eval", eval_batch_size,
                                         "Running evaluation")
            results["eval"] = trainer.evaluate(eval_data, eval_batch_size,
                                               init_checkpoint=init_checkpoint)
            if trainer.is_chief:
                output_dir_lib.write_eval_results(results["eval"],
                                                  os.path.join(output_dir, "eval_results.txt"))

        if do_predict:
            data = finite_input("predict.tf_record", "predict", predict_batch_size,
                                "Running prediction")
            results["predict"] = trainer.predict(data, init_checkpoint=init_checkpoint)
            if trainer.is_chief:
                path = os.path.join(output_dir, "test_results.tsv")
                count = finetuning.write_test_results(path, results["predict"])
                logs.result("Wrote %d predictions to %s", count, path)
        return results


def _num_choices(examples, data_dir):
    """The one number of choices of every split read; UserError naming the files that differ."""
    counts = {os.path.basename(multiple_choice_data.split_path(data_dir, _SPLITS[split])):
              len(split_examples[0].endings) for split, split_examples in examples.items()}
    if len(set(counts.values())) > 1:
        raise UserError("--data_dir=%s: the files have different numbers of endings (%s); a run "
                        "takes one" % (data_dir, ", ".join(
                            "%s: %d" % item for item in sorted(counts.items()))))
    return next(iter(counts.values()))
