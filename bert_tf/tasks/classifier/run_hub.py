"""Classifier fine-tuning on a TF Hub BERT encoder (the original's `run_classifier_with_tfhub.py`).

`run_classifier_with_tfhub(...)` is what `bert-run-classifier-with-tfhub`
calls with its flags: the encoder checked from its files
(`bert_tf.tasks.classifier.model_hub.inspect_hub_module`), its vocab and casing
read, then run_classifier's course
(`finetuning.train_evaluate_predict_classifier`): the same processors,
records, schedule, optimizer (`bert_tf.training.optimization.create_optimizer`;
the weight decay exclusions are matched in the encoder's variable names) and
output files (`eval_results.txt`, `test_results.tsv`), with the model and
task of `bert_tf.tasks.classifier.model_hub`.

Checkpoints: `output_dir/model.ckpt-<step>` in the TF1 format of
run_classifier's (`Trainer`'s cadence, `adam_m` / `adam_v`, `global_step`);
a bert_tf-exported encoder's checkpoints are run_classifier's
(`--init_checkpoint` of run_classifier, extract_features or
export_saved_model reads them). A second run in the same output_dir resumes
from the latest, as run_classifier does.
"""

from absl import logging

from bert_tf import fileio
from bert_tf import tokenization
from bert_tf.tasks.classifier import data_processors as classifier_processors
from bert_tf.errors import UserError
from bert_tf.runs import finetuning
from bert_tf.tasks.classifier.model_hub import hub_classifier
from bert_tf.tasks.classifier.model_hub import inspect_hub_module
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.schedule import Schedule


def run_classifier_with_tfhub(task_name, data_dir, bert_hub_module_handle, output_dir,
                              max_seq_length=128, do_train=False, do_eval=False,
                              do_predict=False, schedule=Schedule(), scale_out=ScaleOut(),
                              dev_eval=DevEval(), overwrite_output_dir=False):
    """Trains, evaluates and predicts as the original `run_classifier_with_tfhub.main` did.

    Args:
      task_name, data_dir, output_dir and the rest: run_classifier's flags
        (a task of `classifier_processors.PROCESSORS`).
      bert_hub_module_handle: the TF Hub BERT encoder (see the module docstring).
      schedule: a `Schedule` (batch sizes, learning rate, epochs, warm-up,
        checkpoint cadence): run_classifier's.
      scale_out: a `ScaleOut`, the new flags.
      dev_eval: a `DevEval` (evaluation on dev.tsv while training).
      overwrite_output_dir: run_classifier's (new).

    Returns:
      dict with the eval results (key "eval") and the predictions ("predict")
      for what ran.

    Raises:
      UserError: one line naming the flag, file or variable at fault.
    """
    if not do_train and not do_eval and not do_predict:
        raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    dev_eval.check()
    fileio.check_writable(output_dir, "output_dir")
    module = inspect_hub_module(bert_hub_module_handle, max_seq_length)
    processor = classifier_processors.get_processor(task_name)
    label_list = processor.get_labels()
    is_regression = processor.is_regression
    num_labels = 1 if is_regression else len(label_list)
    logging.info("TF Hub encoder %s: vocab_file %s, do_lower_case=%s", module.path,
                 module.vocab_file, module.do_lower_case)
    # Read every input before any TensorFlow op, so a bad file fails fast.
    tokenizer = tokenization.FullTokenizer(vocab_file=module.vocab_file,
                                           do_lower_case=module.do_lower_case)
    examples = finetuning.classifier_examples(processor, data_dir, do_train, do_eval, do_predict,
                                              dev_eval=dev_eval.enabled)
    # A rerun against the run output_dir holds, before anything is written. (Its
    # model is the TF Hub encoder's: the record names the task, no config is copied.)
    record = finetuning.run_record(
        output_dir, "run_classifier_with_tfhub", "hub_classifier", do_train,
        overwrite_output_dir, scale_out, dev_eval, schedule,
        dict(task_name=task_name, bert_hub_module_handle=bert_hub_module_handle,
             max_seq_length=max_seq_length),
        labels=None if is_regression else label_list, num_labels=num_labels,
        do_lower_case=module.do_lower_case, max_seq_length=max_seq_length,
        data={"data_dir": data_dir})
    return finetuning.train_evaluate_predict_classifier(
        lambda: hub_classifier(module, num_labels, is_regression=is_regression), examples, tokenizer, label_list, output_dir, "run_classifier_with_tfhub",
        max_seq_length, scale_out, schedule=schedule, dev_eval=dev_eval, do_eval=do_eval,
        run_record=record)
