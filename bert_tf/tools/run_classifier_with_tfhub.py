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

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

BERT_HUB_MODULE_HANDLE = groups.string("bert_hub_module_handle", None,
                                       "Handle for the BERT TF-Hub module.")

def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.classifier.run_hub import run_classifier_with_tfhub
    return run_classifier_with_tfhub


TOOL = cli.Tool(__name__, function, (BERT_HUB_MODULE_HANDLE,) + groups.CLASSIFIER,
                required=("bert_hub_module_handle",) + groups.CLASSIFIER_REQUIRED)


def main(argv=None):
    """The command line: `bert-run-classifier-with-tfhub`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
