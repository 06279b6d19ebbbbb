"""BERT fine-tuning on a sentence(-pair) classification task, as the original `run_classifier.py` ran it.

`run_classifier(...)` is what `tools/run_classifier.py` calls with its flags:
it checks every input before any TensorFlow op (the casing against the
checkpoint's name, the config against the vocab and the checkpoint's
variables, the task's files), makes the strategy, then trains, evaluates and
predicts a `ClassifierTask` with a `Trainer`, writing the original's files in
`output_dir`: `train.tf_record`, `eval.tf_record`, `predict.tf_record`,
`model.ckpt-<step>`, `eval_results.txt` and `test_results.tsv`. A run that
fails before training, evaluation or prediction produce anything leaves
`output_dir` as it found it (`fileio.InputFiles`). The course after the
checks is `finetuning.train_evaluate_predict_classifier`, which
`run_classifier_with_tfhub` shares.
"""

from bert_tf import tokenization
from bert_tf.tasks.classifier import data_processors as classifier_processors
from bert_tf.errors import UserError
from bert_tf.runs import finetuning
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.classifier.model import check_threshold
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.schedule import Schedule


def run_classifier(task_name, data_dir, bert_config_file, vocab_file, output_dir,
                   init_checkpoint=None, do_lower_case=True, max_seq_length=128,
                   do_train=False, do_eval=False, do_predict=False, schedule=Schedule(),
                   multi_label=False, multi_label_threshold=0.5, doc_stride=None,
                   scale_out=ScaleOut(), dev_eval=DevEval(), overwrite_output_dir=False):
    """Trains, evaluates and predicts as the original `run_classifier.main` did.

    Args:
      task_name, data_dir, bert_config_file, vocab_file, output_dir and the
        rest: the original's flags (a task of `classifier_processors.PROCESSORS`).
      schedule: a `Schedule`, the original's flags of the batch sizes, the
        learning rate, the epochs, the warm-up and the checkpoint cadence.
      scale_out: a `ScaleOut`, the new flags (strategy, XLA, precision,
        accumulation, optimizer, logging).
      dev_eval: a `DevEval`, the new flags of evaluation on dev.tsv while
        training (the best checkpoint, early stopping).
      multi_label: bool (new): each example holds a list of labels (the
        processor's `check_labels`); the task's `get_labels()` is the label
        set (the `multilabel` task reads it from data_dir).
      multi_label_threshold: float in (0, 1), the per-label decision threshold.
      doc_stride: None (text_a truncated, as the original), or int (new): a
        text_a longer than a record's room (max_seq_length - 2) is cut into
        run_squad's doc-stride windows (`bert_tf.data.text_windows`), one
        record each; training trains every window, evaluation and
        prediction average each document's windows' logits
        (eval_results.txt and test_results.tsv per example). Single-text
        tasks only: a pair task is refused.
      overwrite_output_dir: bool (new): with do_train, start anew in an
        output_dir that holds a run (`bert_tf.training.run_record`); without
        it, a rerun with other training flags is refused.

    Returns:
      dict with the eval results (key "eval") and the predictions ("predict")
      for what ran.

    Raises:
      UserError: one line naming the flag, file or variable at fault.
    """
    bert_config_file, vocab_file, init_checkpoint = finetuning.check_run_flags(
        bert_config_file, vocab_file, init_checkpoint, do_lower_case, do_train, do_eval,
        do_predict)
    bert_config = finetuning.read_bert_config(bert_config_file, vocab_file, output_dir,
                                              max_seq_length, scale_out, dev_eval,
                                              doc_stride=doc_stride)
    processor = classifier_processors.get_processor(task_name)
    is_regression = processor.is_regression
    if getattr(processor, "multi_label", False) and not multi_label:
        raise UserError("--task_name=%s is a multi-label task: pass --multi_label" % task_name)
    if multi_label:
        if is_regression:
            raise UserError("--multi_label: --task_name=%s is a regression task" % task_name)
        check_threshold(multi_label_threshold, "--multi_label_threshold")
    if hasattr(processor, "read_labels"):
        processor.read_labels(data_dir)
    label_list = processor.get_labels()
    num_labels = 1 if is_regression else len(label_list)
    # A rerun against the run output_dir holds, before anything is written.
    record = finetuning.run_record(
        output_dir, "run_classifier", "classifier", do_train, overwrite_output_dir, scale_out,
        dev_eval, schedule, dict(task_name=task_name, init_checkpoint=init_checkpoint,
                                 do_lower_case=do_lower_case, max_seq_length=max_seq_length,
                                 doc_stride=doc_stride, multi_label=multi_label),
        bert_config_file=bert_config_file, vocab_file=vocab_file,
        labels=None if is_regression else label_list, num_labels=num_labels,
        do_lower_case=do_lower_case, max_seq_length=max_seq_length, doc_stride=doc_stride,
        data={"data_dir": data_dir})
    # The config against the checkpoint (its index alone), before anything is written.
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="classifier", num_labels=num_labels,
                                      overwrite_output_dir=overwrite_output_dir)
    # Read every input before any TensorFlow op, so a bad file fails fast.
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    examples = finetuning.classifier_examples(processor, data_dir, do_train, do_eval, do_predict,
                                              dev_eval=dev_eval.enabled)
    if doc_stride is not None:
        pair = next((ex for split in examples.values() for ex in split if ex.text_b), None)
        if pair is not None:
            raise UserError("--doc_stride cuts single texts into windows, but --task_name=%s has "
                            "text pairs (example %s has a text_b)" % (task_name, pair.guid))
    return finetuning.train_evaluate_predict_classifier(
        lambda: BertClassifier(bert_config, num_labels, is_regression=is_regression,
                               multi_label=multi_label, threshold=multi_label_threshold,
                               doc_stride=doc_stride), examples, tokenizer, label_list, output_dir, "run_classifier", max_seq_length,
        scale_out, schedule=schedule, init_checkpoint=init_checkpoint, dev_eval=dev_eval,
        do_eval=do_eval, doc_stride=doc_stride, run_record=record)
