"""The training, evaluation and prediction loop shared by the tools (original: TPUEstimator).

Modules:
  trainer      `Trainer`: train / evaluate / predict one `bert_tf.tasks.Task`.
  steps        the compiled train, eval and predict steps and host loops.
  output_dir   checkpoints (`model.ckpt-N`, pruning), `eval_results.txt`.
  progress     progress logs and TensorBoard scalars.
  precision    the mixed-precision dtype policy.
"""

from bert_tf.training.output_dir import CHECKPOINT_BASENAME  # noqa: F401
from bert_tf.training.output_dir import KEEP_CHECKPOINT_MAX  # noqa: F401
from bert_tf.training.output_dir import checkpoint_prefix  # noqa: F401
from bert_tf.training.output_dir import latest_checkpoint  # noqa: F401
from bert_tf.training.output_dir import prune_checkpoints  # noqa: F401
from bert_tf.training.output_dir import write_eval_results  # noqa: F401
from bert_tf.training.precision import MIXED_PRECISION  # noqa: F401
from bert_tf.training.precision import dtype_policy  # noqa: F401
from bert_tf.training.progress import scalar_summary  # noqa: F401
from bert_tf.training.trainer import NonFiniteLossError  # noqa: F401
from bert_tf.training.trainer import Trainer  # noqa: F401
