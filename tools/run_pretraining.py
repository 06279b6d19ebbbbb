r"""Run masked LM / next sentence pre-training for BERT (the original's `run_pretraining.py`).

The original command line works unchanged:

  python tools/run_pretraining.py \
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

FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    if not FLAGS.do_train and not FLAGS.do_eval:
        raise UserError("At least one of `do_train` or `do_eval` must be True.")
    from bert_tf import fileio
    fileio.check_writable(FLAGS.output_dir, "output_dir")

    # The strategy comes first: MultiWorkerMirroredStrategy must be created
    # before TensorFlow runs any op.
    strategy = cli.strategy_from_flags(FLAGS)

    import tensorflow as tf
    from bert_tf import training
    from bert_tf.tasks import PretrainingTask
    from bert_tf.config import BertConfig
    from bert_tf.data import input_pipeline

    bert_config = BertConfig.from_json_file(FLAGS.bert_config_file)
    input_files = input_pipeline.expand_files(cli.split_comma_list(FLAGS.input_file))
    logging.info("*** Input Files ***")
    for input_file in input_files:
        logging.info("  %s", input_file)
    # The first records of each file now; every record as the pipeline reads it.
    input_pipeline.check_pretraining_records(input_files, bert_config, FLAGS.max_seq_length,
                                             FLAGS.max_predictions_per_seq)
    tf.io.gfile.makedirs(FLAGS.output_dir)

    task = PretrainingTask(bert_config, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq)
    trainer = cli.trainer_from_flags(strategy, task, FLAGS)

    def dataset_fn(batch_size, is_training):
        def fn(input_context):
            return input_pipeline.create_pretraining_dataset(
                input_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
                input_context.get_per_replica_batch_size(batch_size), is_training,
                input_context=input_context, check_files=False, config=bert_config)
        return fn

    if FLAGS.do_train:
        trainer.train(
            dataset_fn(FLAGS.train_batch_size, True), FLAGS.train_batch_size,
            FLAGS.num_train_steps, FLAGS.learning_rate, FLAGS.num_warmup_steps,
            init_checkpoint=FLAGS.init_checkpoint,
            save_checkpoints_steps=FLAGS.save_checkpoints_steps,
            iterations_per_loop=FLAGS.iterations_per_loop,
            num_accumulation_steps=FLAGS.num_accumulation_steps,
            optimizer_type=FLAGS.optimizer_type)

    if FLAGS.do_eval:
        results = trainer.evaluate(dataset_fn(FLAGS.eval_batch_size, False),
                                   FLAGS.eval_batch_size, FLAGS.max_eval_steps,
                                   init_checkpoint=FLAGS.init_checkpoint)
        if trainer.is_chief:
            training.write_eval_results(
                results, os.path.join(FLAGS.output_dir, "eval_results.txt"))


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
