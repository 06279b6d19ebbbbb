"""The tasks, each registered once: the one list that `from_pretrained`, the converter and the formats read.

A task's facts live on its model class, as Hugging Face writes
`config.architectures` from the class itself; this module is the list of
those classes and the lookups over it:

  task_name         `from_pretrained(head=...)`'s name, bert_tf_run.json's "task"
  hf_architecture   Hugging Face's class of the same weights, written to
                    config.json's "architectures" (`BertForTokenClassification`
                    for `BertTokenClassifier`, ...) and read back by it
  fresh_head        a release has no such head: from a release it starts from
                    its initializer, to be fine-tuned
  pretrained_options
                    the keyword arguments of `from_pretrained` the model reads
                    (num_labels, pooling, ...); another is refused in one line
  from_parts        (classmethod) builds the model from what `from_pretrained`
                    found: the config, the vocab and casing, the checkpoint,
                    the run's record (`PretrainedParts`)

A new task is its model class with these attributes and one line in `TASKS`.
"""

import collections

from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.embeddings.model import SentenceEmbedder
from bert_tf.tasks.multiple_choice.model import BertMultipleChoice
from bert_tf.tasks.pretraining.model import BertFillMask
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.tasks.squad.model import BertSquad
from bert_tf.tasks.token_classification.model import BertTokenClassifier

# head= -> the model class (None: the backbone alone).
TASKS = collections.OrderedDict((cls.task_name, cls) for cls in (
    BertModel, BertPretrainer, BertFillMask, BertClassifier, BertSquad, SentenceEmbedder,
    BertMultipleChoice, BertTokenClassifier))


def model_class(name):
    """The model class of a `head=` name.

    Raises:
      UserError: one line listing the names, for an unknown one.
    """
    if name not in TASKS:
        raise UserError("head=%r: not a head (one of %s)"
                        % (name, ", ".join(repr(h) for h in TASKS)))
    return TASKS[name]


def is_task(name):
    return name in TASKS


def fresh_head(name):
    """Whether the task's head is absent from the releases (it starts from its initializer)."""
    return bool(getattr(TASKS[name], "fresh_head", False))


def hf_architecture(name):
    """Hugging Face's architecture name of a task's weights."""
    return TASKS[name].hf_architecture

