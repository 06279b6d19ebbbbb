r"""BERT fine-tuning on a sentence(-pair) classification task (the original's `run_classifier.py`).

The original command lines work unchanged, e.g. MRPC:

  python tools/run_classifier.py \
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

Tasks: cola, mnli, mrpc, xnli (the original's) and sst-2, qnli, qqp, rte,
wnli, sts-b (GLUE; sts-b is a regression: eval_results.txt has eval_loss,
pearson and spearman, test_results.tsv one score per line). Scale out with the
flags of run_pretraining.py (--distribution_strategy, --num_gpus, --use_xla,
--mixed_precision, --num_accumulation_steps, --optimizer_type).
"""

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isfile(os.path.join(_REPO, "bert_tf", "__init__.py")):  # a clone: its own bert_tf
    sys.path.insert(0, _REPO)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf import cli  # noqa: E402
from bert_tf.errors import UserError  # noqa: E402

## Required parameters
flags.DEFINE_string(
    "data_dir", None,
    "The input data dir. Should contain the .tsv files (or other data files) "
    "for the task.")
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
flags.DEFINE_string("task_name", None, "The name of the task to train.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string(
    "output_dir", None,
    "The output directory where the model checkpoints will be written.")

## Other parameters
flags.DEFINE_string(
    "init_checkpoint", None,
    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
flags.DEFINE_integer(
    "max_seq_length", 128,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Sequences longer than this will be truncated, and sequences shorter "
    "than this will be padded.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool(
    "do_predict", False,
    "Whether to run the model in inference mode on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
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
cli.define_tpu_flags(flags)
flags.DEFINE_string(
    "tpu_job_name", None,
    "Name of TPU worker, if anything other than 'tpu_worker'")

## New (beyond the original)
cli.define_scale_out_flags(flags)

FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    from bert_tf import fileio
    from bert_tf import tokenization
    from bert_tf.config import BertConfig
    from bert_tf.data import classifier_data

    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    if not FLAGS.do_train and not FLAGS.do_eval and not FLAGS.do_predict:
        raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    fileio.check_writable(FLAGS.output_dir, "output_dir")
    bert_config = BertConfig.from_json_file(FLAGS.bert_config_file)
    bert_config.check_max_seq_length(FLAGS.max_seq_length, FLAGS.bert_config_file)
    tokenization.check_vocab(FLAGS.vocab_file, bert_config, FLAGS.bert_config_file)
    processor = classifier_data.get_processor(FLAGS.task_name)
    if FLAGS.tpu_job_name:
        logging.warning("--tpu_job_name is ignored: TPUStrategy finds the TPU workers itself")
    # Read every input before any TensorFlow op, so a bad file fails fast.
    tokenizer = tokenization.FullTokenizer(vocab_file=FLAGS.vocab_file,
                                           do_lower_case=FLAGS.do_lower_case)
    examples = {}
    if FLAGS.do_train:
        examples["train"] = processor.get_train_examples(FLAGS.data_dir)
    if FLAGS.do_eval:
        examples["eval"] = processor.get_dev_examples(FLAGS.data_dir)
    if FLAGS.do_predict:
        examples["predict"] = processor.get_test_examples(FLAGS.data_dir)

    # The strategy comes before any TensorFlow op (MultiWorkerMirroredStrategy).
    strategy = cli.strategy_from_flags(FLAGS)
    from bert_tf import finetuning
    from bert_tf.tasks import ClassifierTask
    task = ClassifierTask(bert_config, len(processor.get_labels()),
                          is_regression=processor.is_regression)
    finetuning.run_classifier(
        cli.trainer_from_flags(strategy, task, FLAGS), processor, tokenizer, examples,
        FLAGS.output_dir, FLAGS.max_seq_length, init_checkpoint=FLAGS.init_checkpoint,
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs, warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop,
        num_accumulation_steps=FLAGS.num_accumulation_steps,
        optimizer_type=FLAGS.optimizer_type)


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
