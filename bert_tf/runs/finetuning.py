"""What the fine-tuning runs share (`run_classifier`, `run_classifier_with_tfhub`, `run_squad`,
`run_ner`, `run_multiple_choice`).

The original's `main()`s computed the schedule from the number of training
examples (here `bert_tf.training.schedule.Schedule.train_steps`), wrote the
features to TFRecords in `output_dir`, and handed an `input_fn` to the
Estimator. These helpers do the same for a `Trainer`, on the run's
`Schedule`.
`check_start_checkpoint` (run_pretraining's too) refuses a config that is not
the checkpoint's before the run writes anything; `check_run_flags` and
`read_bert_config` are the checks run_classifier, run_ner and
run_multiple_choice make before it. `train_evaluate_predict` is their
common course: the same schedule, optimizer and output files, whatever task model
the run builds, with the records (`Records`) and what prediction writes
their own; `classifier_examples` and `train_evaluate_predict_classifier`
(`ClassifierRecords`) are the two classifier runs'.
"""

import dataclasses
import os

import numpy as np
from absl import logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.data import input_pipeline
from bert_tf.data import text_windows
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.modeling.config import BertConfig
from bert_tf.training import distribute
from bert_tf.training import output_dir as output_dir_lib
from bert_tf.training import run_record as run_record_lib
from bert_tf.training.dev_eval import BestCheckpoint
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.schedule import Schedule
from bert_tf.training.trainer import Trainer


def check_run_flags(bert_config_file, vocab_file, init_checkpoint, do_lower_case, do_train,
                    do_eval, do_predict):
    """A fine-tuning run's first checks, the original run_classifier's; returns the three files.

    A release's name (uncased_L-12_H-768_A-12) in `bert_config_file`,
    `vocab_file` or `init_checkpoint` is its file in the cache.
    """
    bert_config_file = releases.resolve_file(bert_config_file, "bert_config_file")
    vocab_file = releases.resolve_file(vocab_file, "vocab_file")
    init_checkpoint = releases.resolve_file(init_checkpoint, "init_checkpoint")
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    if not do_train and not do_eval and not do_predict:
        raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    return bert_config_file, vocab_file, init_checkpoint


def read_bert_config(bert_config_file, vocab_file, output_dir, max_seq_length, scale_out,
                     dev_eval, doc_stride=None):
    """The run's `BertConfig`, checked with the flags and the vocab, after `check_run_flags`.

    `doc_stride`: run_classifier's (`text_windows.check_doc_stride`; None: no windows).
    """
    dev_eval.check()
    fileio.check_writable(output_dir, "output_dir")
    bert_config = BertConfig.from_json_file(bert_config_file)
    scale_out.configure_model(bert_config)  # --gradient_checkpointing
    bert_config.check_max_seq_length(max_seq_length, bert_config_file)
    text_windows.check_doc_stride(doc_stride, optional=True)
    tokenization.check_vocab(vocab_file, bert_config, bert_config_file)
    return bert_config


def check_start_checkpoint(bert_config, output_dir, init_checkpoint, head=None,
                           num_labels=None, overwrite_output_dir=False):
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
      overwrite_output_dir: the run starts anew (output_dir's checkpoints
        are removed before it trains): `init_checkpoint` is the start.

    Raises:
      UserError: one line naming the flag, the checkpoint, the variable and
        both shapes.
    """
    latest = None if overwrite_output_dir else output_dir_lib.latest_checkpoint(output_dir)
    if latest:
        checkpoint.check_checkpoint_fits(bert_config, latest, flag="output_dir", head=head,
                                         num_labels=num_labels)
    elif init_checkpoint:
        # Not strict: the original's init_from_checkpoint loads what the two share.
        checkpoint.check_checkpoint_fits(bert_config, init_checkpoint, flag="init_checkpoint",
                                         head=head, num_labels=num_labels, strict=False)


def run_record(output_dir, tool, task, do_train, overwrite_output_dir, scale_out, dev_eval,
               schedule, training_flags, **fields):
    """The `RunRecord` a training run writes in output_dir, checked against the one there.

    Called after the run's own checks and before anything is written: a
    rerun whose training flags are not the recorded run's is refused here
    (`run_record.RunRecord.check`).

    Args:
      output_dir, tool, task: the run's directory, name and `from_pretrained` head.
      do_train, overwrite_output_dir: the flags (without do_train, no record:
        None is returned).
      scale_out, dev_eval, schedule: the run's `ScaleOut`, `DevEval` (or
        None) and `Schedule` (or None), whose fields that change the trained
        weights are recorded (`run_record.TRAINING_FLAGS`).
      training_flags: {flag: value} of the run's own training flags.
      fields: `RunRecord`'s other arguments (bert_config_file, vocab_file,
        labels, num_labels, do_lower_case, max_seq_length, doc_stride, data).

    Raises:
      UserError: --overwrite_output_dir without --do_train; a rerun refused.
    """
    if not do_train:
        if overwrite_output_dir:
            raise UserError("--overwrite_output_dir starts a new training run in --output_dir: "
                            "it needs --do_train")
        return None
    flags = dataclasses.asdict(schedule) if schedule is not None else {}
    flags.update(training_flags, seed=scale_out.seed, optimizer_type=scale_out.optimizer_type,
                 mixed_precision=scale_out.mixed_precision,
                 bucket_by_length=scale_out.bucket_by_length)
    if dev_eval is not None:
        flags.update(eval_every_steps=dev_eval.eval_every_steps,
                     best_metric=dev_eval.best_metric,
                     early_stopping_patience=dev_eval.early_stopping_patience)
    record = run_record_lib.RunRecord(output_dir, tool, task, flags,
                                      overwrite_output_dir=overwrite_output_dir, **fields)
    record.check(output_dir_lib.latest_checkpoint(output_dir))
    return record


def begin_run_record(record, output_dir, inputs=None, is_chief=True):
    """In the run's lock, before it trains: an earlier run removed (--overwrite_output_dir),
    and the record with its config and vocab written (the chief's)."""
    if record is None or not is_chief:
        return
    if record.overwrite_output_dir:
        run_record_lib.clear_run(output_dir)
    record.write(inputs)


def train_dataset_fn(input_file, name_to_features, train_batch_size, limits=None, seed=None,
                     bucket_by_length=False):
    """`fn(input_context)`: the per-replica training batches of a fine-tuning TFRecord file.

    `limits` (`input_pipeline.record_limits`): the values every record is checked against.
    `seed` (`--seed`): a reproducible shuffle; None: unseeded, as the original.
    `bucket_by_length` (`--bucket_by_length`): batches of similar lengths.
    """
    def dataset_fn(input_context):
        return input_pipeline.create_finetuning_dataset(
            input_file, name_to_features,
            input_context.get_per_replica_batch_size(train_batch_size),
            input_context=input_context, limits=limits, seed=seed,
            bucket_by_length=bucket_by_length)
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

    Multi-label: the per-label probabilities (sigmoid), one column per label.

    Args:
      predictions: dict with `probabilities` float32 [num_examples, num_labels]
        (regression: `score` float32 [num_examples], one score a line).

    The values are printed with `str()` of numpy float32, as the original
    printed the Estimator's float32 predictions.
    """
    rows = (predictions["score"][:, None] if is_regression
            else predictions["probabilities"])
    lines = ["\t".join(str(np.float32(p)) for p in row) + "\n" for row in rows]
    fileio.write_text(output_predict_file, "".join(lines))
    return len(lines)


def classifier_examples(processor, data_dir, do_train=False, do_eval=False, do_predict=False,
                        dev_eval=False):
    """{"train" | "eval" | "predict": examples} of the splits a classifier run asks for.

    `dev_eval`: evaluation on the dev set while training (`DevEval`), which
    reads the dev examples as `do_eval` does. Read before any TensorFlow op,
    so a bad file fails fast.

    Raises:
      UserError: a split it reads holds no example (an empty file, or a
        header alone), naming the file.
    """
    examples = {}
    if do_train:
        examples["train"] = _split_examples(processor, data_dir, "train")
    if do_eval or (dev_eval and do_train):
        examples["eval"] = _split_examples(processor, data_dir, "dev")
    if do_predict:
        examples["predict"] = _split_examples(processor, data_dir, "test")
    return examples


def _split_examples(processor, data_dir, split):
    """The processor's examples of `split` ("train", "dev", "test"); UserError if there are none."""
    examples = getattr(processor, "get_%s_examples" % split)(data_dir)
    if not examples:
        name = (getattr(processor, "files", None) or {}).get(split)
        raise UserError("%s: no %s examples (an empty file, or its header alone)" % (
            os.path.join(data_dir, name) if name else "--data_dir=%s" % data_dir,
            "training" if split == "train" else split))
    return examples


def best_checkpoint(trainer, dev_eval, evaluate):
    """The `BestCheckpoint` of a run with `dev_eval` (a `DevEval`), or None when it is off.

    `evaluate`: `fn(step) -> results`, one evaluation on the run's dev set.
    """
    if not dev_eval.enabled:
        return None
    return BestCheckpoint(trainer.output_dir, dev_eval, trainer.task.default_best_metric,
                          evaluate, is_chief=trainer.is_chief)


def use_best_checkpoint(trainer, dev_eval, keeper=None):
    """With `DevEval`: evaluation and prediction use the best checkpoint.

    `keeper`: this run's `BestCheckpoint` (None: an earlier run's, read from
    output_dir).
    """
    if keeper is None and dev_eval.enabled:
        keeper = best_checkpoint(trainer, dev_eval, None)
    best = keeper.best_checkpoint() if keeper is not None else None
    if best is not None:
        trainer.use_checkpoint(best, flag="output_dir")


def train_on_records(trainer, train_file, spec, limits, num_train_steps, num_warmup_steps,
                     scale_out, schedule=Schedule(), init_checkpoint=None, keeper=None,
                     afterwards=None):
    """`trainer.train` on a fine-tuning TFRecord file, with the run's schedule and options.

    `spec`, `limits`: the records' features and the values they must hold;
    `num_train_steps`, `num_warmup_steps`: `schedule.train_steps`' of the
    training set; `keeper`: a `BestCheckpoint`, or None; `afterwards`: what
    the run does next, for the line of a finished run (`Trainer.train`).
    """
    return trainer.train(
        train_dataset_fn(train_file, spec, schedule.train_batch_size, limits,
                         seed=scale_out.seed, bucket_by_length=scale_out.bucket_by_length),
        schedule.train_batch_size, num_train_steps, schedule.learning_rate, num_warmup_steps,
        init_checkpoint=init_checkpoint, best_checkpoint=keeper, afterwards=afterwards,
        **schedule.train_options(), **scale_out.train_options())


class Records(object):
    """What a fine-tuning run's data is to its course (`train_evaluate_predict`).

    The course writes `<split>.tf_record` for each split it uses ("train",
    "eval", "predict"), trains, evaluates and predicts; a run's subclass says
    how its examples become records, how the course logs them and what
    prediction writes.

    Attributes:
      examples: {"train" | "eval" | "predict": the split's examples}: the
        splits the run reads.
      predicts_eval: whether evaluation also predicts the dev set, whose
        outputs go to `write_outputs("eval", ...)`.
    """

    predicts_eval = False

    def __init__(self, examples):
        self.examples = examples

    def begin(self, trainer, inputs, output_dir):
        """Called once the trainer is made, before any record is written (`inputs`: `InputFiles`).

        `trainer.task` is the run's task (its model's).
        """

    def spec(self):
        """The records' features (`name_to_features`)."""
        raise NotImplementedError

    def limits(self, task):
        """The values every record must hold for `task`'s model (`record_limits`)."""
        raise NotImplementedError

    def write(self, split, path):
        """Writes the records of `split` to `path`; returns how many."""
        raise NotImplementedError

    def log_fields(self, split, num_records, num_padding=None):
        """The counts `log_run` logs for `split` (`num_padding`: None for training)."""
        return {"num_examples": padded_count(num_records, num_padding)}

    def outputs(self, split, predictions):
        """What prediction gives for `split`'s examples, from `Trainer.predict`'s outputs."""
        return predictions

    def write_outputs(self, split, outputs, output_dir):
        """Writes (the chief alone) the outputs of `split` in `output_dir`."""
        raise NotImplementedError


def padded_count(num_records, num_padding=None):
    """The original's "N (A actual, P padding)" of an evaluation or prediction's records."""
    if num_padding is None:
        return num_records
    return "%d (%d actual, %d padding)" % (num_records + num_padding, num_records, num_padding)


class ClassifierRecords(Records):
    """run_classifier's records (`classifier_data`) and `test_results.tsv`.

    Args:
      examples: `classifier_examples`'s dict.
      tokenizer: a `FullTokenizer`; label_list: the processor's labels.
      max_seq_length: the flag.
      doc_stride: None (each example one record, truncated, as the
        original), or an int: each text_a cut into doc-stride windows, one
        record each (`classifier_data.convert_example_windows`); training
        counts its epochs in windows, and evaluation and prediction are per
        document (the model's `doc_stride`, its task's `per_document`;
        `ClassifierTask.document_outputs`).

    The labels' kind (regression, multi-label) is the run's `ClassifierTask`'s
    (`begin`).
    """

    def __init__(self, examples, tokenizer, label_list, max_seq_length, doc_stride=None):
        super().__init__(examples)
        self.tokenizer = tokenizer
        self.label_list = label_list
        self.max_seq_length = max_seq_length
        self.doc_stride = doc_stride
        self.task = None

    def begin(self, trainer, inputs, output_dir):
        self.task = trainer.task

    @property
    def is_regression(self):
        return self.task.is_regression

    @property
    def multi_label(self):
        # Multi-label: multi-hot label_ids [num_labels] of 0 and 1 (see classifier_data).
        return self.task.multi_label

    def spec(self):
        return classifier_data.name_to_features(
            self.max_seq_length, self.is_regression,
            num_labels=len(self.label_list) if self.multi_label else None,
            windows=self.doc_stride is not None)

    def limits(self, task):
        limits = record_limits(task, self.max_seq_length, num_labels=(
            None if self.is_regression or self.multi_label else len(self.label_list)))
        if self.multi_label:
            limits["label_ids"] = (2, None)  # multi-hot: 0 or 1
        return limits

    def write(self, split, path):
        return classifier_data.file_based_convert_examples_to_features(
            self.examples[split], self.label_list, self.max_seq_length, self.tokenizer, path,
            is_regression=self.is_regression, multi_label=self.multi_label,
            doc_stride=self.doc_stride)

    def log_fields(self, split, num_records, num_padding=None):
        if self.doc_stride is None:
            return super().log_fields(split, num_records, num_padding)
        return {"num_examples": len(self.examples[split]),
                "num_windows": padded_count(num_records, num_padding)}

    def outputs(self, split, predictions):
        if self.doc_stride is not None:
            return self.task.document_outputs(predictions)
        return predictions

    def write_outputs(self, split, outputs, output_dir):
        path = os.path.join(output_dir, "test_results.tsv")
        count = write_test_results(path, outputs, self.is_regression)
        logs.result("Wrote %d predictions to %s", count, path)


def train_evaluate_predict_classifier(build_model, examples, tokenizer, label_list, output_dir,
                                      tool, max_seq_length, scale_out, schedule=Schedule(),
                                      init_checkpoint=None, dev_eval=DevEval(), do_eval=True,
                                      doc_stride=None, run_record=None):
    """The original `run_classifier.main`'s course, for any classification task model.

    `train_evaluate_predict` with `ClassifierRecords(examples, tokenizer,
    label_list, max_seq_length, doc_stride)`: see both.
    """
    return train_evaluate_predict(
        build_model, ClassifierRecords(examples, tokenizer, label_list, max_seq_length,
                                       doc_stride=doc_stride),
        output_dir, tool, scale_out, schedule=schedule, init_checkpoint=init_checkpoint,
        dev_eval=dev_eval, do_eval=do_eval, run_record=run_record)


def train_evaluate_predict(build_model, records, output_dir, tool, scale_out, schedule=Schedule(),
                           init_checkpoint=None, dev_eval=DevEval(), do_eval=True,
                           run_record=None):
    """The original `run_classifier.main`'s course, for any fine-tuning task and its records.

    Writes `train.tf_record`, `eval.tf_record` and `predict.tf_record` in
    `output_dir` (`records.write`), trains (`model.ckpt-<step>`), evaluates
    (`eval_results.txt`) and predicts (`records.write_outputs`) what
    `records.examples` holds, with a `Trainer` under the strategy of
    `scale_out`.

    Args:
      build_model: a callable that returns the run's task model (`Trainer`'s:
        called under the strategy's scope); its `task` is the run's.
      records: a `Records`.
      output_dir: the run's directory; tool: the run's name, for its lock.
      scale_out: a `ScaleOut`.
      schedule: a `Schedule`: the batch sizes, the learning rate, the epochs
        (`Schedule.train_steps` of the training records), the warm-up and
        the checkpoint cadence.
      init_checkpoint: a Google-format checkpoint to start from, or None.
      dev_eval: a `DevEval`: with `eval_every_steps`, training evaluates on
        `records.examples["eval"]` every that many steps, keeps the best
        checkpoint (`output_dir/best/`), which evaluation and prediction then
        use, and may stop early.
      do_eval: whether to evaluate after training (`records.examples["eval"]`
        may be there for `dev_eval` alone).
      run_record: the training run's `RunRecord` (`run_record`), or None: it
        is written (an earlier run removed first with --overwrite_output_dir)
        before any record.

    Returns:
      dict with the eval results (key "eval") and the predictions ("predict",
      `records.outputs`) for what ran.
    """
    splits = records.examples
    # A failure before training, evaluation or prediction produce anything
    # removes the records this run wrote (and output_dir, if it made it). The
    # lock (the chief's) keeps a second run off output_dir while this one lives.
    with fileio.InputFiles(output_dir) as inputs, locks.OutputLock(
            output_dir, tool, enabled=distribute.will_be_chief(scale_out.strategy_name())):
        # The strategy comes before any TensorFlow op (MultiWorkerMirroredStrategy).
        strategy = scale_out.create_strategy()
        trainer = Trainer(strategy, build_model, output_dir, **scale_out.trainer_options())
        inputs.enabled = trainer.is_chief
        begin_run_record(run_record, output_dir, inputs, trainer.is_chief)
        records.begin(trainer, inputs, output_dir)
        spec = records.spec()
        limits = records.limits(trainer.task)
        finite = {}
        results = {}

        def finite_input(split, batch_size, title):
            """`<split>.tf_record` written once, and a FiniteInput over it, logged as the original logs."""
            if split not in finite:
                path = inputs.add(os.path.join(output_dir, "%s.tf_record" % split))
                num_records = records.write(split, path)
                data = input_pipeline.finite_records_input(path, spec, num_records, batch_size,
                                                           limits=limits)
                log_run(title, **dict(records.log_fields(split, num_records,
                                                         data.num_padding_examples),
                                      batch_size=batch_size))
                finite[split] = data
            return finite[split]

        def predict(split, data):
            return records.outputs(split, trainer.predict(data, init_checkpoint=init_checkpoint))

        keeper = None
        if "train" in splits:
            if dev_eval.enabled:
                # The dev set, evaluated while training (and after it, with do_eval).
                eval_data = finite_input("eval", schedule.eval_batch_size, "Running evaluation")
                keeper = best_checkpoint(trainer, dev_eval, lambda step: trainer.evaluate(
                    eval_data, schedule.eval_batch_size))
            train_file = inputs.add(os.path.join(output_dir, "train.tf_record"))
            num_train_records = records.write("train", train_file)
            num_train_steps, num_warmup_steps = schedule.train_steps(num_train_records)
            log_run("Running training", **dict(records.log_fields("train", num_train_records),
                                               batch_size=schedule.train_batch_size,
                                               num_steps=num_train_steps))
            train_on_records(trainer, train_file, spec, limits, num_train_steps,
                             num_warmup_steps, scale_out, schedule=schedule,
                             init_checkpoint=init_checkpoint, keeper=keeper,
                             afterwards=_afterwards(do_eval and "eval" in splits,
                                                    "predict" in splits))
        use_best_checkpoint(trainer, dev_eval, keeper)

        if do_eval and "eval" in splits:
            eval_data = finite_input("eval", schedule.eval_batch_size, "Running evaluation")
            eval_results = trainer.evaluate(eval_data, schedule.eval_batch_size,
                                            init_checkpoint=init_checkpoint)
            outputs = predict("eval", eval_data) if records.predicts_eval else None
            if trainer.is_chief:
                output_dir_lib.write_eval_results(eval_results,
                                                  os.path.join(output_dir, "eval_results.txt"))
                if outputs is not None:
                    records.write_outputs("eval", outputs, output_dir)
            results["eval"] = eval_results

        if "predict" in splits:
            outputs = predict("predict", finite_input("predict", schedule.predict_batch_size,
                                                      "Running prediction"))
            if trainer.is_chief:
                records.write_outputs("predict", outputs, output_dir)
            results["predict"] = outputs
        return results


def _afterwards(evaluates, predicts):
    """What a run does with a finished run's model (for `Trainer.train`'s line), or None."""
    if evaluates and predicts:
        return "evaluating and predicting with its model"
    if evaluates:
        return "evaluating its model"
    if predicts:
        return "predicting with its model"
    return None
