r"""Classifier fine-tuning on a TF Hub BERT encoder (the original's `run_classifier_with_tfhub.py`).

The original's command line, with a TF2 SavedModel BERT encoder as the module:

  bert-run-classifier-with-tfhub \
    --task_name=MRPC --do_train=true --do_eval=true --data_dir=$GLUE_DIR/MRPC \
    --bert_hub_module_handle=https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4 \
    --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
    --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

The handle is a SavedModel directory (e.g. the `encoder/` of
`bert-export-saved-model --format=tfhub`, or TF Model Garden's `export_tfhub`),
a gs:// path, or an https:// handle (downloaded with tensorflow-hub, when it
is installed). The vocab and the casing are the module's (its `vocab_file`
and `do_lower_case`); every trainable variable of the encoder is fine-tuned
with the original's head and optimizer.

It writes what run_classifier writes: `output_dir/train.tf_record`,
`eval.tf_record`, `predict.tf_record`, `model.ckpt-<step>` (the encoder's
variables under their own names, the head as the original's
`output_weights` / `output_bias`), `eval_results.txt` (--do_eval) and
`test_results.tsv` (--do_predict). A second run in the same --output_dir
resumes from its latest checkpoint.

Tasks and scale-out flags: those of run_classifier.

Also `python -m bert_tf.tools.run_classifier_with_tfhub`; in a clone,
`python tools/run_classifier_with_tfhub.py`.
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf.runs import cli

flags.DEFINE_string(
    "bert_hub_module_handle", None,
    "Handle for the BERT TF-Hub module.")
cli.define_classifier_flags(flags)
cli.define_tpu_flags(flags)
flags.DEFINE_string(
    "tpu_job_name", None,
    "Name of TPU worker, if anything other than 'tpu_worker'")

## New (beyond the original)
cli.define_scale_out_flags(flags)
# --help lists the shared, TPU and scale-out flags with this tool's own (not only --helpfull).
flags.adopt_module_key_flags(cli)

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    if FLAGS.tpu_job_name:
        logging.warning("--tpu_job_name is ignored: TPUStrategy finds the TPU workers itself")
    from bert_tf.runs.run_classifier_with_tfhub import run_classifier_with_tfhub
    run_classifier_with_tfhub(FLAGS.task_name, FLAGS.data_dir, FLAGS.bert_hub_module_handle,
                              FLAGS.output_dir, **cli.classifier_run_options(FLAGS))


def main():
    """The command line: `bert-run-classifier-with-tfhub`."""
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("bert_hub_module_handle")
    flags.mark_flag_as_required("output_dir")
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
