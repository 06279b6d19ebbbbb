r"""Domain-adaptive masked-LM training on raw text (new): BERT trained further on your own text.

  bert-run-mlm \
    --do_train=true --do_eval=true \
    --input_file=$DATA_DIR/domain.txt --eval_file=$DATA_DIR/held_out.txt \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
    --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 \
    --train_batch_size=32 --learning_rate=5e-5 --num_train_epochs=3.0 \
    --seed=1 --output_dir=/tmp/mlm_output/

--input_file (and --eval_file) are the original's pre-training text: UTF-8,
one sentence a line, a blank line between documents (a file, a glob, or a
comma-separated list). The text is tokenized once and packed into rows of
--max_seq_length ([CLS] tokens [SEP], consecutive text together, as Hugging
Face's run_mlm). The masks are drawn anew each epoch by the original
create_pretraining_data's rule (--masked_lm_prob of a row's tokens, at most
--max_predictions_per_seq, never [CLS] or [SEP]; 80% [MASK], 10% a random
token, 10% kept; --do_whole_word_mask masks a word's "##" pieces together),
keyed on --seed, the epoch and the row: a rerun resumes from the latest
checkpoint and, with --seed, ends at the weights of a run never stopped.
The loss is the masked-LM loss alone (no next-sentence task).

It writes `output_dir/model.ckpt-<step>` (Google's format: bert/*, cls/*; the
next-sentence head passes through unchanged), `eval_results.txt`
(--do_eval: masked_lm_accuracy, masked_lm_loss on --eval_file), and first
bert_config.json, vocab.txt and bert_tf_run.json: bert-fill-mask
--init_checkpoint=output_dir, bert_tf.from_pretrained(output_dir,
head="fill_mask") and the fine-tuning tools' --init_checkpoint take the
directory alone. --init_checkpoint takes a release, its name, a Hugging Face
directory or a run's output_dir. Scale out with run_classifier's flags.

Also `python -m bert_tf.tools.run_mlm`; in a clone, `python tools/run_mlm.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = groups.MODEL + (
    groups.string("input_file", None,
                  "The training text: UTF-8, one sentence a line, a blank line between "
                  "documents (a file, a glob, or comma-separated)."),
    groups.string("eval_file", None,
                  "With --do_eval: the held-out text, in --input_file's format."),
    groups.OUTPUT_DIR, groups.MAX_SEQ_LENGTH,
    groups.integer("max_predictions_per_seq", 20,
                   "Maximum number of masked LM predictions per sequence."),
    groups.float_("masked_lm_prob", 0.15, "Masked LM probability."),
    groups.boolean("do_whole_word_mask", False,
                   "Whether to use whole word masking rather than per-WordPiece masking."),
    groups.DO_TRAIN, groups.DO_EVAL, groups.TRAIN_BATCH_SIZE, groups.EVAL_BATCH_SIZE,
) + groups.FINETUNING_SCHEDULE + groups.SCALE_OUT + (groups.OVERWRITE_OUTPUT_DIR,)


def check_files_first(values, positional):
    """--input_file's and --eval_file's local patterns match files, checked before
    TensorFlow loads: a mistake is one line at once (the run reads the text)."""
    from bert_tf import fileio
    for flag in ("input_file", "eval_file"):
        if values[flag]:
            fileio.check_local_patterns(values[flag], flag)
    return positional


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.masked_lm.run import run_mlm
    return run_mlm


TOOL = cli.Tool(__name__, function, FLAGS,
                required=("vocab_file", "bert_config_file", "output_dir"),
                prepare=check_files_first)


def main(argv=None):
    """The command line: `bert-run-mlm`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
