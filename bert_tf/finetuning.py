"""Fine-tuning runs shared by `tools/run_classifier.py` and `tools/run_squad.py`.

The original's `main()`s computed the schedule from the number of training
examples, wrote the features to TFRecords in `output_dir`, and handed an
`input_fn` to the Estimator. These helpers do the same with a `Trainer`.
"""

import math
import os
import random

import numpy as np
from absl import logging

from bert_tf import fileio
from bert_tf import squad_evaluate
from bert_tf.data import classifier_data
from bert_tf.data import input_pipeline
from bert_tf.data import squad_data
from bert_tf.errors import UserError
from bert_tf.training import write_eval_results


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


def _record_limits(trainer, max_seq_length, num_labels=None):
    """The values every record must hold for the trainer's model (its task's config)."""
    return input_pipeline.record_limits(getattr(trainer.task, "config", None), max_seq_length,
                                        num_labels=num_labels)


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


def run_classifier(trainer, processor, tokenizer, examples, output_dir, max_seq_length,
                   init_checkpoint=None, train_batch_size=32, eval_batch_size=8,
                   predict_batch_size=8, learning_rate=5e-5, num_train_epochs=3.0,
                   warmup_proportion=0.1, save_checkpoints_steps=1000,
                   iterations_per_loop=1000, num_accumulation_steps=1,
                   optimizer_type="adamw"):
    """Trains, evaluates and predicts as the original `run_classifier.main` did.

    Args:
      trainer: a `Trainer` of a `ClassifierTask` with the processor's labels.
      processor: a `classifier_data.DataProcessor`.
      tokenizer: a `FullTokenizer`.
      examples: dict with any of "train", "eval", "predict" -> list of
        `InputExample` (what the processor read).
      output_dir: where the records, checkpoints and results go.
      the rest: the original's flags.

    Returns:
      dict with the eval results (key "eval") and the predictions ("predict")
      for what ran.
    """

    label_list = processor.get_labels()
    is_regression = processor.is_regression
    spec = classifier_data.name_to_features(max_seq_length, is_regression)
    limits = _record_limits(trainer, max_seq_length,
                            num_labels=None if is_regression else len(label_list))
    results = {}

    def write_records(name, split_examples):
        path = os.path.join(output_dir, name)
        classifier_data.file_based_convert_examples_to_features(
            split_examples, label_list, max_seq_length, tokenizer, path,
            is_regression=is_regression)
        return path

    if "train" in examples:
        train_examples = examples["train"]
        num_train_steps, num_warmup_steps = train_schedule(
            len(train_examples), train_batch_size, num_train_epochs, warmup_proportion)
        train_file = write_records("train.tf_record", train_examples)
        log_run("Running training", num_examples=len(train_examples),
                batch_size=train_batch_size, num_steps=num_train_steps)
        trainer.train(train_dataset_fn(train_file, spec, train_batch_size, limits),
                      train_batch_size, num_train_steps, learning_rate, num_warmup_steps,
                      init_checkpoint=init_checkpoint,
                      save_checkpoints_steps=save_checkpoints_steps,
                      iterations_per_loop=iterations_per_loop,
                      num_accumulation_steps=num_accumulation_steps,
                      optimizer_type=optimizer_type)

    def finite_input(name, split_examples, batch_size, title):
        """Writes `name` and returns a FiniteInput over it, logged as the original logs."""
        path = write_records(name, split_examples)
        data = input_pipeline.finite_records_input(path, spec, len(split_examples), batch_size,
                                                   limits=limits)
        log_run(title, num_examples="%d (%d actual, %d padding)" % (
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
            count = write_test_results(path, predictions, is_regression)
            logging.info("Wrote %d predictions to %s", count, path)
        results["predict"] = predictions
    return results


def run_squad(trainer, tokenizer, output_dir, train_examples=None, predict_examples=None,
              predict_file=None, max_seq_length=384, doc_stride=128, max_query_length=64,
              do_lower_case=True, init_checkpoint=None, train_batch_size=32,
              predict_batch_size=8, learning_rate=5e-5, num_train_epochs=3.0,
              warmup_proportion=0.1, save_checkpoints_steps=1000, iterations_per_loop=1000,
              num_accumulation_steps=1, optimizer_type="adamw", n_best_size=20,
              max_answer_length=30, version_2_with_negative=False,
              null_score_diff_threshold=0.0, verbose_logging=False):
    """Trains and predicts as the original `run_squad.main` did.

    Args:
      trainer: a `Trainer` of a `SquadTask`.
      tokenizer: a `FullTokenizer`.
      output_dir: where train.tf_record, eval.tf_record, checkpoints,
        predictions.json, nbest_predictions.json (and null_odds.json) go.
      train_examples: `read_squad_examples(train_file, True)`, or None.
      predict_examples: `read_squad_examples(predict_file, False)`, or None.
      predict_file: the SQuAD file of `predict_examples`; when it has gold
        answers, the predictions are scored with the official EM/F1 (new).
      the rest: the original's flags.

    Returns:
      dict: "predictions" ({qas_id: text}) and "scores" (EM/F1, when scored).
    """

    results = {}
    limits = _record_limits(trainer, max_seq_length)
    if train_examples is not None:
        num_train_steps, num_warmup_steps = train_schedule(
            len(train_examples), train_batch_size, num_train_epochs, warmup_proportion)
        # Pre-shuffle the input to avoid having to make a very large shuffle
        # buffer in the `input_fn`.
        train_examples = list(train_examples)
        random.Random(12345).shuffle(train_examples)
        train_file = os.path.join(output_dir, "train.tf_record")
        with squad_data.FeatureWriter(train_file, is_training=True) as writer:
            squad_data.convert_examples_to_features(
                train_examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                is_training=True, output_fn=writer.process_feature)
        log_run("Running training", num_orig_examples=len(train_examples),
                num_split_examples=writer.num_features, batch_size=train_batch_size,
                num_steps=num_train_steps)
        spec = squad_data.name_to_features(max_seq_length, is_training=True)
        trainer.train(train_dataset_fn(train_file, spec, train_batch_size, limits),
                      train_batch_size, num_train_steps, learning_rate, num_warmup_steps,
                      init_checkpoint=init_checkpoint,
                      save_checkpoints_steps=save_checkpoints_steps,
                      iterations_per_loop=iterations_per_loop,
                      num_accumulation_steps=num_accumulation_steps,
                      optimizer_type=optimizer_type)

    if predict_examples is not None:
        eval_file = os.path.join(output_dir, "eval.tf_record")
        eval_features = []
        with squad_data.FeatureWriter(eval_file, is_training=False) as writer:
            def append_feature(feature):
                eval_features.append(feature)
                writer.process_feature(feature)
            squad_data.convert_examples_to_features(
                predict_examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                is_training=False, output_fn=append_feature)
        log_run("Running predictions", num_orig_examples=len(predict_examples),
                num_split_examples=len(eval_features), batch_size=predict_batch_size)
        spec = squad_data.name_to_features(max_seq_length, is_training=False)
        data = input_pipeline.finite_records_input(eval_file, spec, len(eval_features),
                                                   predict_batch_size, limits=limits)
        outputs = trainer.predict(data, init_checkpoint=init_checkpoint)
        all_results = [
            squad_data.RawResult(unique_id=int(unique_id), start_logits=start, end_logits=end)
            for unique_id, start, end in zip(outputs["unique_ids"], outputs["start_logits"],
                                             outputs["end_logits"])]
        if trainer.is_chief:
            predictions = squad_data.write_predictions(
                predict_examples, eval_features, all_results, n_best_size, max_answer_length,
                do_lower_case, os.path.join(output_dir, "predictions.json"),
                os.path.join(output_dir, "nbest_predictions.json"),
                os.path.join(output_dir, "null_odds.json"),
                version_2_with_negative=version_2_with_negative,
                null_score_diff_threshold=null_score_diff_threshold,
                verbose_logging=verbose_logging)
            results["predictions"] = predictions
            if predict_file and squad_evaluate.has_answers(predict_file):
                # New: the official EM/F1 when the predict file has answers.
                scores = squad_evaluate.evaluate_file(
                    predict_file, os.path.join(output_dir, "predictions.json"),
                    na_prob_file=(os.path.join(output_dir, "null_odds.json")
                                  if version_2_with_negative else None),
                    version_2_with_negative=version_2_with_negative)
                results["scores"] = scores
    return results
