r"""Run masked LM / next sentence pre-training for BERT (the original's `run_pretraining.py`).

The original command line works unchanged:

  bert-run-pretraining \
    --input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining_output \
    --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 \
    --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 \
    --num_warmup_steps=10 --learning_rate=2e-5

It writes `output_dir/model.ckpt-<step>` (Google's format: the original code
restores it) and, with --do_eval, `output_dir/eval_results.txt`. Run again, it
resumes from the latest checkpoint in output_dir.

Scale-out (new flags):
  8 GPUs:        --distribution_strategy=mirrored --num_gpus=8
  several hosts: TF_CONFIG='{"cluster": {"worker": ["host1:port", "host2:port"]},
                 "task": {"type": "worker", "index": 0}}' on each host (its own
                 index), --distribution_strategy=multi_worker_mirrored, and an
                 output_dir every host can read (the chief writes it)
  Cloud TPU:     --use_tpu=True --tpu_name=$TPU_NAME (as the original), or
                 --distribution_strategy=tpu --tpu_name=...
Speed / memory: --iterations_per_loop, --use_xla, --mixed_precision=bf16|fp16,
--num_accumulation_steps, --optimizer_type=lamb.

Also `python -m bert_tf.tools.run_pretraining`; in a clone, `python tools/run_pretraining.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = (
    groups.BERT_CONFIG_FILE,
    groups.string("input_file", None,
                  "Input TF example files (can be a glob or comma separated)."),
    groups.OUTPUT_DIR,
    groups.INIT_CHECKPOINT,
    groups.with_help(groups.MAX_SEQ_LENGTH, groups.MAX_SEQ_LENGTH.help
                     + " Must match data generation."),
    groups.integer("max_predictions_per_seq", 20,
                   "Maximum number of masked LM predictions per sequence. "
                   "Must match data generation."),
    groups.DO_TRAIN,
    groups.DO_EVAL,
    groups.TRAIN_BATCH_SIZE,
    groups.EVAL_BATCH_SIZE,
    groups.LEARNING_RATE,
    groups.integer("num_train_steps", 100000, "Number of training steps."),
    groups.integer("num_warmup_steps", 10000, "Number of warmup steps."),
    groups.SAVE_CHECKPOINTS_STEPS,
    groups.ITERATIONS_PER_LOOP,
    groups.integer("max_eval_steps", 100, "Maximum number of eval steps."),
) + groups.SCALE_OUT + (
    groups.OVERWRITE_OUTPUT_DIR,
    groups.with_help(groups.VOCAB_FILE,
                     "(new, optional) The vocab the records were made with: copied beside the "
                     "checkpoints, so --output_dir alone is a model a tokenizer can feed "
                     "(bert-fill-mask --init_checkpoint=output_dir)."),
    groups.boolean("do_lower_case", None,
                   "(new, optional) The casing of --vocab_file (default True), recorded "
                   "beside the checkpoints."),
)

def check_files_first(values, positional):
    """--input_file's local patterns match files, checked before TensorFlow loads: a
    mistake is one line at once (the run reads the records and checks them)."""
    from bert_tf import fileio
    fileio.check_local_patterns(values["input_file"] or "", "input_file")
    return positional


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.pretraining.run import run_pretraining
    return run_pretraining


TOOL = cli.Tool(__name__, function, FLAGS,
                required=("input_file", "bert_config_file", "output_dir"),
                prepare=check_files_first)


def main(argv=None):
    """The command line: `bert-run-pretraining`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
