"""Tasks: what is trained, evaluated, predicted and served; a task is one folder.

Each task's folder holds all of it, its files named by the floor they stand on
(`tests/test_layout.py`): `data*` the examples, records and metrics (no
TensorFlow at import, so a tool checks its files before TensorFlow loads),
`model*` the Keras model, its losses and its `Task`, `serving*` the module a
SavedModel serves, `run*` the library function its tool calls.

  classifier/      BertClassifier, ClassifierTask, run_classifier's processors and
                   records; the TF Hub encoder's classifier (model_hub, run_hub)
  token_classification/
                   BertTokenClassifier (named entities), conlleval, run_ner, the
                   named-entity serving module
  squad/           BertSquad, SquadTask, run_squad's examples, predictions and
                   scores, its serving module
  multiple_choice/ BertMultipleChoice (SWAG), MultipleChoiceTask, its records
  embeddings/      SentenceEmbedder, EmbeddingsTask, its pairs
  pretraining/     BertPretrainer, BertFillMask, PretrainingTask, run_pretraining,
                   create_pretraining_data's and fill-mask's runs, the fill-mask
                   serving module, create_pretraining_data's modules (its data/ package)

The floor every task shares:

  base         the `Task` contract (what `bert_tf.training.Trainer` and the
               models' Keras methods read from a task).
  task_model   `TaskModel`: Keras `compile` / `fit` / `evaluate` / `predict`
               on that contract, mixed into each task's model class.
  keras_data   `UserData`: the `x`, `y` and `validation_data` forms Keras
               users write, as `TaskModel` hands them to Keras.
  registry     `TASKS`: the one list of the task models (`head=` name -> class).

The `Task` classes are here by name, loaded when first used.
"""

from bert_tf import _lazy

_LAZY = {
    "Task": "bert_tf.tasks.base",
    "ClassifierTask": "bert_tf.tasks.classifier.model",
    "EmbeddingsTask": "bert_tf.tasks.embeddings.model",
    "MultipleChoiceTask": "bert_tf.tasks.multiple_choice.model",
    "PretrainingTask": "bert_tf.tasks.pretraining.model",
    "SquadTask": "bert_tf.tasks.squad.model",
    "TokenClassificationTask": "bert_tf.tasks.token_classification.model",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = _lazy.names(__name__, _LAZY)
