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

try:  # tools/_bootstrap.py: in a clone, the clone's own bert_tf; quiet TensorFlow
    import _bootstrap  # noqa: F401
except ImportError:  # a tool copied out of tools/, or run by runpy: the bert_tf installed
    pass

from absl import app
from absl import flags
from absl import logging

from bert_tf.runs import cli

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
# --help lists the TPU and scale-out flags with this tool's own (not only --helpfull).
flags.adopt_module_key_flags(cli)

FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    if FLAGS.tpu_job_name:
        logging.warning("--tpu_job_name is ignored: TPUStrategy finds the TPU workers itself")
    from bert_tf.runs.run_classifier import run_classifier
    run_classifier(
        FLAGS.task_name, FLAGS.data_dir, FLAGS.bert_config_file, FLAGS.vocab_file,
        FLAGS.output_dir, init_checkpoint=FLAGS.init_checkpoint,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        do_train=FLAGS.do_train, do_eval=FLAGS.do_eval, do_predict=FLAGS.do_predict,
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs, warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop,
        scale_out=cli.scale_out_from_flags(FLAGS))


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
