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
any predictions file with bert-evaluate-squad), and the scale-out flags of
run_pretraining.py.

Also `python -m bert_tf.tools.run_squad`; in a clone, `python tools/run_squad.py`.
"""

import json

from absl import app
from absl import flags
from absl import logging

from bert_tf.runs import cli

## Required parameters
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string(
    "output_dir", None,
    "The output directory where the model checkpoints will be written.")

## Other parameters
flags.DEFINE_string("train_file", None,
                    "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string(
    "predict_file", None,
    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_string(
    "init_checkpoint", None,
    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
flags.DEFINE_integer(
    "max_seq_length", 384,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Sequences longer than this will be truncated, and sequences shorter "
    "than this will be padded.")
flags.DEFINE_integer(
    "doc_stride", 128,
    "When splitting up a long document into chunks, how much stride to "
    "take between chunks.")
flags.DEFINE_integer(
    "max_query_length", 64,
    "The maximum number of tokens for the question. Questions longer than "
    "this will be truncated to this length.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("predict_batch_size", 8,
                     "Total batch size for predictions.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0,
                   "Total number of training epochs to perform.")
flags.DEFINE_float(
    "warmup_proportion", 0.1,
    "Proportion of training to perform linear learning rate warmup for. "
    "E.g., 0.1 = 10% of training.")
flags.DEFINE_integer("save_checkpoints_steps", 1000,
                     "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "How many steps to make in each estimator call (here: in "
                     "each tf.function call, on every device).")
flags.DEFINE_integer(
    "n_best_size", 20,
    "The total number of n-best predictions to generate in the "
    "nbest_predictions.json output file.")
flags.DEFINE_integer(
    "max_answer_length", 30,
    "The maximum length of an answer that can be generated. This is needed "
    "because the start and end predictions are not conditioned on one another.")
cli.define_tpu_flags(flags)
flags.DEFINE_bool(
    "verbose_logging", False,
    "If true, all of the warnings related to data processing will be printed. "
    "A number of warnings are expected for a normal SQuAD evaluation.")
flags.DEFINE_bool(
    "version_2_with_negative", False,
    "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float(
    "null_score_diff_threshold", 0.0,
    "If null_score - best_non_null is greater than the threshold predict null.")

## New (beyond the original)
cli.define_scale_out_flags(flags)
# --help lists the TPU and scale-out flags with this tool's own (not only --helpfull).
flags.adopt_module_key_flags(cli)

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    from bert_tf.runs.run_squad import run_squad
    results = run_squad(
        FLAGS.bert_config_file, FLAGS.vocab_file, FLAGS.output_dir,
        train_file=FLAGS.train_file, predict_file=FLAGS.predict_file,
        init_checkpoint=FLAGS.init_checkpoint, do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length, do_train=FLAGS.do_train,
        do_predict=FLAGS.do_predict, train_batch_size=FLAGS.train_batch_size,
        predict_batch_size=FLAGS.predict_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs, warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop, n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length, verbose_logging=FLAGS.verbose_logging,
        version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        scale_out=cli.scale_out_from_flags(FLAGS))
    if "scores" in results:
        logging.info("***** Scores of predictions.json against %s *****", FLAGS.predict_file)
        print(json.dumps(results["scores"]))


def main():
    """The command line: `bert-run-squad`."""
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
