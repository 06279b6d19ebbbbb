r"""BERT fine-tuning on multiple choice, SWAG's way (new: the BERT paper's §4.4).

In run_classifier's command line, without --task_name:

  bert-run-multiple-choice \
    --do_train=true --do_eval=true --data_dir=$SWAG_DIR \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=16 --learning_rate=2e-5 --num_train_epochs=3.0 \
    --output_dir=/tmp/swag_output/

--data_dir holds SWAG's CSV files: train.csv, val.csv (or dev.csv) and
test.csv, whose header names the columns read: sent1 (the context), sent2
(the start of the second sentence), ending0, ending1, ... (any number of
choices) and label (the right ending's index; test.csv may lack it). Each
choice is the pair (sent1, sent2 + " " + ending), truncated as
run_classifier truncates a pair; a vector dotted with each choice's [CLS]
scores it, a softmax over the choices.

It writes `output_dir/train.tf_record`, `eval.tf_record`, `predict.tf_record`
(run_classifier's records, every choice's features one after the other:
[num_choices * max_seq_length]), `model.ckpt-<step>` (Google's format; the
head is output_weights [1, hidden_size] and output_bias [1]),
`eval_results.txt` (--do_eval: eval_accuracy, eval_loss) and
`test_results.tsv` (--do_predict: one line of tab-separated choice
probabilities per test example, in input order). Scale out, evaluate while
training (--eval_every_steps) and stop early as with run_classifier.

Also `python -m bert_tf.tools.run_multiple_choice`; in a clone,
`python tools/run_multiple_choice.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = groups.MODEL + tuple(flag for flag in groups.CLASSIFIER
                             if flag is not groups.TASK_NAME)


def check_files_first(values, positional):
    """The data files of the splits the run reads exist, checked before TensorFlow loads:
    a missing one is one line at once (the run reads them)."""
    from bert_tf.tasks.multiple_choice import data as multiple_choice_data
    wanted = {"train": values["do_train"],
              "dev": values["do_eval"] or (values["do_train"] and bool(values["eval_every_steps"])),
              "test": values["do_predict"]}
    for split in ("train", "dev", "test"):
        if wanted[split] and values["data_dir"]:
            multiple_choice_data.split_path(values["data_dir"], split)
    return positional


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.multiple_choice.run import run_multiple_choice
    return run_multiple_choice


TOOL = cli.Tool(__name__, function, FLAGS, required=groups.FINETUNING_REQUIRED,
                prepare=check_files_first)


def main(argv=None):
    """The command line: `bert-run-multiple-choice`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
