"""How a task is trained: the loop, the optimizer, the strategy, the output_dir (original: TPUEstimator).

  trainer       `Trainer`: train / evaluate / predict one `bert_tf.tasks` task
                under a tf.distribute strategy.
  steps         the compiled replica step (also Keras `fit`'s), the host loops,
                the eval loop and the predict step.
  optimization  AdamWeightDecay without bias correction, LAMB, the warmup +
                linear-decay schedule, create_optimizer.
  distribute    get_strategy (one device, mirrored, multi-worker, TPU), which
                worker writes.
  scale_out     ScaleOut: the new flags every training run shares (strategy,
                XLA, precision, accumulation) and what they make.
  output_dir    model.ckpt-N, the checkpoint cadence (`Checkpoints`, one home
                for `Trainer` and the Keras callback), eval_results.txt.
  schedule      Schedule: the fine-tuning runs' batch sizes, learning rate,
                epochs, warm-up and checkpoint cadence (their flags), and the
                steps they make of a training set.
  dev_eval      DevEval, BestCheckpoint: evaluation on the dev set while
                training, the best checkpoint, early stopping (Trainer's and
                Keras `fit`'s).
  callbacks     CheckpointCallback, BestCheckpointCallback: the same output_dir
                from Keras `fit`.
  progress      progress logs (steps/s, examples/s, ETA) and TensorBoard scalars.

The names below load on first use (PEP 562): importing an option group
(`bert_tf.training.scale_out`, `bert_tf.training.dev_eval`,
`bert_tf.training.schedule`) or
`bert_tf.training.preemption` loads neither TensorFlow nor Keras.
"""

from bert_tf import _lazy

# Public name -> its module.
_LAZY = {
    "BestCheckpointCallback": "bert_tf.training.callbacks",
    "CheckpointCallback": "bert_tf.training.callbacks",
    "create_optimizer": "bert_tf.training.optimization",
    "CHECKPOINT_BASENAME": "bert_tf.training.output_dir",
    "KEEP_CHECKPOINT_MAX": "bert_tf.training.output_dir",
    "checkpoint_prefix": "bert_tf.training.output_dir",
    "latest_checkpoint": "bert_tf.training.output_dir",
    "prune_checkpoints": "bert_tf.training.output_dir",
    "write_eval_results": "bert_tf.training.output_dir",
    "NonFiniteLossError": "bert_tf.training.trainer",
    "Trainer": "bert_tf.training.trainer",
    "DevEval": "bert_tf.training.dev_eval",
    "ScaleOut": "bert_tf.training.scale_out",
    "Schedule": "bert_tf.training.schedule",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = _lazy.names(__name__, _LAZY)
