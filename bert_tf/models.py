"""The model classes, in one place (original: `modeling.BertModel` and each script's `create_model`).

  BertModel        the backbone (`bert/...`)                          bert_tf.modeling.bert_model
  BertPretrainer   + the masked-LM and next-sentence heads (`cls/...`) bert_tf.tasks.pretraining.model
  BertFillMask     BertPretrainer + its tokenizer: fill_mask          bert_tf.tasks.pretraining.model
  BertClassifier   + the classifier head (`output_weights`/`_bias`)   bert_tf.tasks.classifier.model
  BertSquad        + the SQuAD span head (`cls/squad/...`)            bert_tf.tasks.squad.model
  SentenceEmbedder + a pooling over the real tokens: sentence vectors  bert_tf.tasks.embeddings.model
  BertMultipleChoice + a score per choice (SWAG; `output_weights`)    bert_tf.tasks.multiple_choice.model
  BertTokenClassifier + the classifier head on every token (NER)   bert_tf.tasks.token_classification.model
  BertPreprocessor raw text -> input_ids / input_mask / segment_ids   bert_tf.tokenization.preprocessor

Every class is a Keras 3 object registered for `.keras` files
(`model.save("x.keras")`, `keras.saving.load_model("x.keras")`), and its
variables carry the original's checkpoint names (`bert_tf.modeling.checkpoint`).
`BertPretrainer`, `BertClassifier`, `BertSquad` and `SentenceEmbedder` train with Keras's
`compile` / `fit` (and `evaluate` / `predict`) on the original's maths
(`bert_tf.tasks.task_model.TaskModel`); `bert_tf.training.callbacks.CheckpointCallback`
writes and resumes Google-format `model.ckpt-N` checkpoints during `fit`.

Example:
  ```python
  from bert_tf.models import BertClassifier, BertPreprocessor
  from bert_tf.training.optimization import create_optimizer

  preprocessor = BertPreprocessor("vocab.txt", do_lower_case=True, max_seq_length=128)
  model = BertClassifier(config, num_labels=2, preprocessor=preprocessor)
  model.compile(optimizer=create_optimizer(2e-5, num_train_steps=1000, num_warmup_steps=100))
  model.fit(dataset_of_text_and_labels, epochs=1, steps_per_epoch=1000)
  probabilities = model.predict(["a great movie", "a dull movie"])["probabilities"]
  ```
"""

from bert_tf.tasks.classifier.model import BertClassifier  # noqa: F401
from bert_tf.tasks.pretraining.model import BertFillMask  # noqa: F401
from bert_tf.modeling.bert_model import BertModel  # noqa: F401
from bert_tf.tokenization.preprocessor import BertPreprocessor  # noqa: F401
from bert_tf.tasks.pretraining.model import BertPretrainer  # noqa: F401
from bert_tf.tasks.squad.model import BertSquad  # noqa: F401
from bert_tf.tasks.embeddings.model import SentenceEmbedder  # noqa: F401
from bert_tf.tasks.multiple_choice.model import BertMultipleChoice  # noqa: F401
from bert_tf.tasks.token_classification.model import BertTokenClassifier  # noqa: F401

__all__ = ["BertClassifier", "BertFillMask", "BertModel", "BertMultipleChoice", "BertPreprocessor",
           "BertPretrainer", "BertSquad", "BertTokenClassifier", "SentenceEmbedder"]
