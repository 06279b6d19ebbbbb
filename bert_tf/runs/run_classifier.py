"""BERT fine-tuning on a sentence(-pair) classification task, as the original `run_classifier.py` ran it.

`run_classifier(...)` is what `tools/run_classifier.py` calls with its flags:
it checks every input before any TensorFlow op (the casing against the
checkpoint's name, the config against the vocab and the checkpoint's
variables, the task's files), makes the strategy, then trains, evaluates and
predicts a `ClassifierTask` with a `Trainer`, writing the original's files in
`output_dir`: `train.tf_record`, `eval.tf_record`, `predict.tf_record`,
`model.ckpt-<step>`, `eval_results.txt` and `test_results.tsv`. A run that
fails before training, evaluation or prediction produce anything leaves
`output_dir` as it found it (`fileio.InputFiles`).
"""

import os

from absl import logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import tokenization
from bert_tf.data import classifier_data
from bert_tf.data import input_pipeline
from bert_tf.errors import UserError
from bert_tf.modeling.config import BertConfig
from bert_tf.runs import finetuning
from bert_tf.tasks.classifier import ClassifierTask
from bert_tf.training import distribute
from bert_tf.training.output_dir import write_eval_results
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.trainer import Trainer


def run_classifier(task_name, data_dir, bert_config_file, vocab_file, output_dir,
                   init_checkpoint=None, do_lower_case=True, max_seq_length=128,
                   do_train=False, do_eval=False, do_predict=False, train_batch_size=32,
                   eval_batch_size=8, predict_batch_size=8, learning_rate=5e-5,
                   num_train_epochs=3.0, warmup_proportion=0.1, save_checkpoints_steps=1000,
                   iterations_per_loop=1000, scale_out=ScaleOut()):
    """Trains, evaluates and predicts as the original `run_classifier.main` did.

    Args:
      task_name, data_dir, bert_config_file, vocab_file, output_dir and the
        rest: the original's flags (a task of `classifier_data.PROCESSORS`).
      scale_out: a `ScaleOut`, the new flags (strategy, XLA, precision,
        accumulation, optimizer, logging).

    Returns:
      dict with the eval results (key "eval") and the predictions ("predict")
      for what ran.

    Raises:
      UserError: one line naming the flag, file or variable at fault.
    """
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    if not do_train and not do_eval and not do_predict:
        raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    fileio.check_writable(output_dir, "output_dir")
    bert_config = BertConfig.from_json_file(bert_config_file)
    bert_config.check_max_seq_length(max_seq_length, bert_config_file)
    tokenization.check_vocab(vocab_file, bert_config, bert_config_file)
    processor = classifier_data.get_processor(task_name)
    label_list = processor.get_labels()
    is_regression = processor.is_regression
    num_labels = 1 if is_regression else len(label_list)
    # The config against the checkpoint (its index alone), before anything is written.
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="classifier", num_labels=num_labels)
    # Read every input before any TensorFlow op, so a bad file fails fast.
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    examples = {}
    if do_train:
        examples["train"] = processor.get_train_examples(data_dir)
    if do_eval:
        examples["eval"] = processor.get_dev_examples(data_dir)
    if do_predict:
        examples["predict"] = processor.get_test_examples(data_dir)

    # A failure before training, evaluation or prediction produce anything
    # removes the records this run wrote (and output_dir, if it made it). The
    # lock (the chief's) keeps a second run off output_dir while this one lives.
    with fileio.InputFiles(output_dir) as inputs, locks.OutputLock(
            output_dir, "run_classifier",
            enabled=distribute.will_be_chief(scale_out.strategy_name())):
        # The strategy comes before any TensorFlow op (MultiWorkerMirroredStrategy).
        strategy = scale_out.create_strategy()
        task = ClassifierTask(bert_config, num_labels, is_regression=is_regression)
        trainer = Trainer(strategy, task, output_dir, **scale_out.trainer_options())
        inputs.enabled = trainer.is_chief

        spec = classifier_data.name_to_features(max_seq_length, is_regression)
        limits = finetuning.record_limits(task, max_seq_length,
                                          num_labels=None if is_regression else len(label_list))
        results = {}

        def write_records(name, split_examples):
            path = inputs.add(os.path.join(output_dir, name))
            classifier_data.file_based_convert_examples_to_features(
                split_examples, label_list, max_seq_length, tokenizer, path,
                is_regression=is_regression)
            return path

        if "train" in examples:
            train_examples = examples["train"]
            num_train_steps, num_warmup_steps = finetuning.train_schedule(
                len(train_examples), train_batch_size, num_train_epochs, warmup_proportion)
            train_file = write_records("train.tf_record", train_examples)
            finetuning.log_run("Running training", num_examples=len(train_examples),
                               batch_size=train_batch_size, num_steps=num_train_steps)
            trainer.train(finetuning.train_dataset_fn(train_file, spec, train_batch_size, limits),
                          train_batch_size, num_train_steps, learning_rate, num_warmup_steps,
                          init_checkpoint=init_checkpoint,
                          save_checkpoints_steps=save_checkpoints_steps,
                          iterations_per_loop=iterations_per_loop,
                          **scale_out.train_options())

        def finite_input(name, split_examples, batch_size, title):
            """Writes `name` and returns a FiniteInput over it, logged as the original logs."""
            path = write_records(name, split_examples)
            data = input_pipeline.finite_records_input(path, spec, len(split_examples), batch_size,
                                                       limits=limits)
            finetuning.log_run(title, num_examples="%d (%d actual, %d padding)" % (
                len(split_examples) + data.num_padding_examples, len(split_examples),
                data.num_padding_examples), batch_size=batch_size)
            return data

        if "eval" in examples:
            data = finite_input("eval.tf_record", examples["eval"], eval_batch_size,
                                "Running evaluation")
            eval_results = trainer.evaluate(data, eval_batch_size, init_checkpoint=init_checkpoint)
            if trainer.is_chief:
                write_eval_results(eval_results, os.path.join(output_dir, "eval_results.txt"))
            results["eval"] = eval_results

        if "predict" in examples:
            data = finite_input("predict.tf_record", examples["predict"], predict_batch_size,
                                "Running prediction")
            predictions = trainer.predict(data, init_checkpoint=init_checkpoint)
            if trainer.is_chief:
                path = os.path.join(output_dir, "test_results.tsv")
                count = finetuning.write_test_results(path, predictions, is_regression)
                logging.info("Wrote %d predictions to %s", count, path)
            results["predict"] = predictions
        return results
