r"""BERT fine-tuning on a sentence(-pair) classification task (the original's `run_classifier.py`).

The original command lines work unchanged, e.g. MRPC:

  bert-run-classifier \
    --task_name=MRPC --do_train=true --do_eval=true --data_dir=$GLUE_DIR/MRPC \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
    --output_dir=/tmp/mrpc_output/

It writes `output_dir/train.tf_record`, `eval.tf_record`, `predict.tf_record`
(the original's records), `model.ckpt-<step>` (Google's format),
`eval_results.txt` (--do_eval) and `test_results.tsv` (--do_predict: one line
of tab-separated class probabilities per test example, in input order).
New: with --do_train, first bert_config.json, vocab.txt and bert_tf_run.json
(the task, labels, casing, max_seq_length and training flags), so the
directory is the model (`bert_tf.from_pretrained(output_dir)`,
bert-export-saved-model --init_checkpoint=output_dir). A rerun resumes; into
a finished run it says so and evaluates and predicts; with other training
flags it is refused (--overwrite_output_dir starts anew).

Tasks: cola, mnli, mrpc, xnli (the original's) and sst-2, qnli, qqp, rte,
wnli, sts-b (GLUE; sts-b is a regression: eval_results.txt has eval_loss,
pearson and spearman, test_results.tsv one score per line). Scale out with the
flags of run_pretraining.py (--distribution_strategy, --num_gpus, --use_xla,
--mixed_precision, --num_accumulation_steps, --optimizer_type). New:
--eval_every_steps evaluates on dev.tsv while training, keeps the best
checkpoint in output_dir/best/ (used by --do_eval and --do_predict) and, with
--early_stopping_patience, stops when the dev score no longer improves.
--multi_label: the label column a comma-separated list of labels, a sigmoid
per label (threshold --multi_label_threshold); eval_results.txt has eval_loss,
micro_f1, macro_f1, micro_precision, micro_recall, exact_match;
test_results.tsv one probability column per label. --task_name=multilabel
reads train/dev/test.tsv of rows `text_a[<TAB>text_b]<TAB>labels` (no header),
its labels from labels.txt in --data_dir, else from train.tsv.
--doc_stride: long documents: a text_a longer than --max_seq_length - 2
tokens is cut into run_squad's windows (a start every --doc_stride tokens),
each a record (train.tf_record trains every window); eval_results.txt and
test_results.tsv are per example, from the mean of its windows' logits.

Also `python -m bert_tf.tools.run_classifier`; in a clone, `python tools/run_classifier.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups


def check_files_first(values, positional):
    """The task's data files exist, checked before TensorFlow loads: a missing one is one
    line at once, not after TensorFlow's start."""
    from bert_tf.tasks.classifier import data_processors as classifier_processors
    classifier_processors.check_split_files(
        values["task_name"], values["data_dir"], values["do_train"], values["do_eval"],
        values["do_predict"], dev_while_training=bool(values["eval_every_steps"]))
    return positional


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.classifier.run import run_classifier
    return run_classifier


TOOL = cli.Tool(__name__, function, groups.MODEL + groups.CLASSIFIER + groups.MULTI_LABEL
                + (groups.CLASSIFIER_DOC_STRIDE,),
                required=("vocab_file", "bert_config_file") + groups.CLASSIFIER_REQUIRED,
                prepare=check_files_first)


def main(argv=None):
    """The command line: `bert-run-classifier`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
