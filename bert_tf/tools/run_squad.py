r"""BERT fine-tuning and prediction on SQuAD 1.1 and 2.0 (the original's `run_squad.py`).

The original command lines work unchanged, e.g. SQuAD 1.1 on a GPU:

  bert-run-squad \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
    --do_train=True --train_file=$SQUAD_DIR/train-v1.1.json \
    --do_predict=True --predict_file=$SQUAD_DIR/dev-v1.1.json \
    --train_batch_size=12 --learning_rate=3e-5 --num_train_epochs=2.0 \
    --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

It writes `output_dir/train.tf_record`, `eval.tf_record`, `model.ckpt-<step>`,
`predictions.json`, `nbest_predictions.json` and, with
--version_2_with_negative, `null_odds.json`, as the original. New: when the
predict file has answers (a dev set), the official EM/F1 are printed (score
any predictions file with bert-evaluate-squad), the scale-out flags of
run_pretraining.py, and --eval_every_steps: F1 on --predict_file while
training, the best checkpoint kept for --do_predict, early stopping.

Also `python -m bert_tf.tools.run_squad`; in a clone, `python tools/run_squad.py`.
"""

import json
import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = (groups.MODEL + (
    groups.OUTPUT_DIR,
    groups.string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json"),
    groups.string("predict_file", None,
                  "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json"),
    groups.with_default(groups.MAX_SEQ_LENGTH, 384),
) + groups.SQUAD_WINDOWS + (
    groups.DO_TRAIN,
    groups.with_help(groups.DO_PREDICT, "Whether to run eval on the dev set."),
    groups.TRAIN_BATCH_SIZE,
    groups.with_help(groups.PREDICT_BATCH_SIZE, "Total batch size for predictions."),
) + groups.FINETUNING_SCHEDULE + groups.SQUAD_ANSWERS + (
    groups.boolean("verbose_logging", False,
                   "If true, all of the warnings related to data processing will be printed. "
                   "A number of warnings are expected for a normal SQuAD evaluation."),
    groups.boolean("version_2_with_negative", False,
                   "If true, the SQuAD examples contain some that do not have an answer."),
    groups.float_("null_score_diff_threshold", 0.0,
                  "If null_score - best_non_null is greater than the threshold predict null."),
) + groups.SCALE_OUT + groups.DEV_EVAL + (groups.OVERWRITE_OUTPUT_DIR,))


def report(results, values):
    """The official EM/F1 on stdout, when the predict file has answers."""
    if "scores" in results:
        from bert_tf import logs
        logs.result("***** Scores of predictions.json against %s *****", values["predict_file"])
        print(json.dumps(results["scores"]))


def check_files_first(values, positional):
    """The SQuAD files the run reads exist, checked before TensorFlow loads: a missing one
    is one line at once (the run parses them)."""
    from bert_tf import fileio
    from bert_tf.errors import UserError
    for flag, wanted in (("train_file", values["do_train"]),
                         ("predict_file", values["do_predict"])):
        path = values[flag]
        if wanted and path and not fileio.exists(path):
            raise UserError("--%s=%s: no such file" % (flag, path))
    return positional


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.squad.run import run_squad
    return run_squad


TOOL = cli.Tool(__name__, function, FLAGS,
                required=("vocab_file", "bert_config_file", "output_dir"), report=report,
                prepare=check_files_first)


def main(argv=None):
    """The command line: `bert-run-squad`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
