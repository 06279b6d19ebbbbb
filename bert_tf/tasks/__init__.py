"""Tasks: what is trained, evaluated and predicted; one module per task.

  base         the `Task` contract (what `bert_tf.training.Trainer` and the
               models' Keras methods read from a task).
  task_model   `TaskModel`: Keras `compile` / `fit` / `evaluate` / `predict`
               on that contract, mixed into each task's model class.
  keras_data   `UserData`: the `x`, `y` and `validation_data` forms Keras
               users write, as `TaskModel` hands them to Keras.
  pretraining  `BertPretrainer`, the masked-LM and next-sentence losses,
               `PretrainingTask` (run_pretraining).
  classifier   `BertClassifier`, the classification / regression losses,
               `ClassifierTask` (run_classifier).
  squad        `BertSquad`, the span loss, `SquadTask` (run_squad).
  embeddings   `SentenceEmbedder` (pooled sentence vectors, cosine), the
               in-batch-negatives loss, `EmbeddingsTask` (new).
  multiple_choice
               `BertMultipleChoice` (a score per choice, SWAG),
               `MultipleChoiceTask` (new; run_multiple_choice).
  token_classification
               `BertTokenClassifier` (named entities), the masked token
               loss, `TokenClassificationTask` (run_ner, new).
"""

from bert_tf.tasks.base import Task  # noqa: F401
from bert_tf.tasks.classifier import ClassifierTask  # noqa: F401
from bert_tf.tasks.embeddings import EmbeddingsTask  # noqa: F401
from bert_tf.tasks.multiple_choice import MultipleChoiceTask  # noqa: F401
from bert_tf.tasks.pretraining import PretrainingTask  # noqa: F401
from bert_tf.tasks.squad import SquadTask  # noqa: F401
from bert_tf.tasks.token_classification import TokenClassificationTask  # noqa: F401
