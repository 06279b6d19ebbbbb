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

Tasks: cola, mnli, mrpc, xnli (the original's) and sst-2, qnli, qqp, rte,
wnli, sts-b (GLUE; sts-b is a regression: eval_results.txt has eval_loss,
pearson and spearman, test_results.tsv one score per line). Scale out with the
flags of run_pretraining.py (--distribution_strategy, --num_gpus, --use_xla,
--mixed_precision, --num_accumulation_steps, --optimizer_type).

Also `python -m bert_tf.tools.run_classifier`; in a clone, `python tools/run_classifier.py`.
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf.runs import cli

## Required parameters (data_dir, task_name and output_dir: cli.define_classifier_flags)
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")

## Other parameters
flags.DEFINE_string(
    "init_checkpoint", None,
    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
# The task's, the data's and the schedule's, as run_classifier_with_tfhub's.
cli.define_classifier_flags(flags)
cli.define_tpu_flags(flags)
flags.DEFINE_string(
    "tpu_job_name", None,
    "Name of TPU worker, if anything other than 'tpu_worker'")

## New (beyond the original)
cli.define_scale_out_flags(flags)
# --help lists the TPU and scale-out flags with this tool's own (not only --helpfull).
flags.adopt_module_key_flags(cli)

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    if FLAGS.tpu_job_name:
        logging.warning("--tpu_job_name is ignored: TPUStrategy finds the TPU workers itself")
    from bert_tf.runs.run_classifier import run_classifier
    run_classifier(
        FLAGS.task_name, FLAGS.data_dir, FLAGS.bert_config_file, FLAGS.vocab_file,
        FLAGS.output_dir, init_checkpoint=FLAGS.init_checkpoint,
        do_lower_case=FLAGS.do_lower_case, **cli.classifier_run_options(FLAGS))


def main():
    """The command line: `bert-run-classifier`."""
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
