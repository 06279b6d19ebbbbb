"""Tasks: what `bert_tf.training.Trainer` trains, evaluates and predicts.

  base         the `Task` contract.
  pretraining  `PretrainingTask`: masked LM + next sentence (run_pretraining).
  classifier   `ClassifierTask`: GLUE-style classification / regression (run_classifier).
  squad        `SquadTask`: SQuAD 1.1 / 2.0 spans (run_squad).
"""

from bert_tf.tasks.base import Task  # noqa: F401
from bert_tf.tasks.classifier import ClassifierTask  # noqa: F401
from bert_tf.tasks.pretraining import PretrainingTask  # noqa: F401
from bert_tf.tasks.squad import SquadTask  # noqa: F401
