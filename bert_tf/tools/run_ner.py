r"""BERT fine-tuning on named entities, CoNLL-2003 (new; the BERT paper's §5.3, in run_classifier's manner).

  bert-run-ner \
    --do_train=true --do_eval=true --do_predict=true --data_dir=$CONLL_DIR \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_lower_case=false \
    --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \
    --num_train_epochs=3.0 --output_dir=/tmp/ner_output/

--data_dir holds train.txt, dev.txt and test.txt in CoNLL-2003's layout: one
word a line, the word in the first column and its label in the last
(whitespace-separated), a blank line between sentences, -DOCSTART- lines
skipped. The first sub-token of each word is labelled; the others are not.
A sentence longer than --max_seq_length goes in --doc_stride windows, each
word labelled in the window where it has the most context.

It writes `output_dir/labels.txt` (the training labels, "O" first; read back
by --do_eval / --do_predict and the export), `train.tf_record`,
`eval.tf_record`, `predict.tf_record`, `model.ckpt-<step>` (Google's format:
bert/..., output_weights, output_bias), `eval_results.txt` (--do_eval:
eval_loss, eval_accuracy, and conlleval's entity-level precision, recall and
f1), `eval_predictions.txt` and `test_predictions.txt` (`word gold predicted`
a line, a blank line between sentences: conlleval's input), and first, with
--do_train, bert_config.json, vocab.txt and bert_tf_run.json (the labels,
casing, windows and training flags): `bert_tf.from_pretrained(output_dir)`
and bert-export-saved-model --init_checkpoint=output_dir take the directory
alone; a rerun with other training flags is refused (--overwrite_output_dir
starts anew). Scale out with
run_classifier's flags; --eval_every_steps keeps the best checkpoint by f1.

Also `python -m bert_tf.tools.run_ner`; in a clone, `python tools/run_ner.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = groups.MODEL + (
    groups.with_help(groups.DATA_DIR,
                     "The input data dir: train.txt, dev.txt and test.txt in CoNLL-2003's "
                     "layout (the word first, its label last, a blank line between "
                     "sentences)."),
    groups.OUTPUT_DIR, groups.MAX_SEQ_LENGTH,
    groups.with_help(
        groups.NER_DOC_STRIDE,
        "A sentence longer than max_seq_length - 2 WordPiece tokens is cut into windows "
        "that start every this many tokens; each word takes its label from the window "
        "where it has the most context."),
) + groups.FINETUNING


def read_files_first(values, positional):
    """The CoNLL files the run reads, read before TensorFlow loads: a bad one is one line
    at once, not after TensorFlow's start (run_ner reads them again)."""
    from bert_tf.tasks.token_classification import data as ner_data
    ner_data.read_splits(values["data_dir"], values["do_train"], values["do_eval"],
                         values["do_predict"], dev_while_training=bool(values["eval_every_steps"]))
    return positional


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.token_classification.run import run_ner
    return run_ner


TOOL = cli.Tool(__name__, function, FLAGS, required=groups.FINETUNING_REQUIRED,
                prepare=read_files_first)


def main(argv=None):
    """The command line: `bert-run-ner`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
