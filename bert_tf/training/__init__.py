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
  callbacks     CheckpointCallback: the same output_dir from Keras `fit`.
  progress      progress logs (steps/s, examples/s, ETA) and TensorBoard scalars.
"""

from bert_tf.training.callbacks import CheckpointCallback  # noqa: F401
from bert_tf.training.optimization import create_optimizer  # noqa: F401
from bert_tf.training.output_dir import CHECKPOINT_BASENAME  # noqa: F401
from bert_tf.training.output_dir import KEEP_CHECKPOINT_MAX  # noqa: F401
from bert_tf.training.output_dir import checkpoint_prefix  # noqa: F401
from bert_tf.training.output_dir import latest_checkpoint  # noqa: F401
from bert_tf.training.output_dir import prune_checkpoints  # noqa: F401
from bert_tf.training.output_dir import write_eval_results  # noqa: F401
from bert_tf.training.trainer import NonFiniteLossError  # noqa: F401
from bert_tf.training.trainer import Trainer  # noqa: F401
