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

from absl import app
from absl import flags

from bert_tf.runs import cli

## Required parameters
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
flags.DEFINE_string(
    "input_file", None,
    "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string(
    "output_dir", None,
    "The output directory where the model checkpoints will be written.")

## Other parameters
flags.DEFINE_string(
    "init_checkpoint", None,
    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_integer(
    "max_seq_length", 128,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Sequences longer than this will be truncated, and sequences shorter "
    "than this will be padded. Must match data generation.")
flags.DEFINE_integer(
    "max_predictions_per_seq", 20,
    "Maximum number of masked LM predictions per sequence. "
    "Must match data generation.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000,
                     "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "How many steps to make in each estimator call (here: in "
                     "each tf.function call, on every device).")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
cli.define_tpu_flags(flags)

## New (beyond the original)
cli.define_scale_out_flags(flags)
# --help lists the TPU and scale-out flags with this tool's own (not only --helpfull).
flags.adopt_module_key_flags(cli)

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    from bert_tf.runs.run_pretraining import run_pretraining
    run_pretraining(
        FLAGS.bert_config_file, FLAGS.input_file, FLAGS.output_dir,
        init_checkpoint=FLAGS.init_checkpoint, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval, train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_steps=FLAGS.num_train_steps, num_warmup_steps=FLAGS.num_warmup_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop, max_eval_steps=FLAGS.max_eval_steps,
        scale_out=cli.scale_out_from_flags(FLAGS))


def main():
    """The command line: `bert-run-pretraining`."""
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
