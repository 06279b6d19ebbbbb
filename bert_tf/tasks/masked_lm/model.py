"""Domain-adaptive masked-LM training: the model and its task (the masked-LM loss alone).

The model is the original's pre-training model: `BertMaskedLM` is
`BertPretrainer` (the same variables, `bert/*`, `cls/predictions/*` and
`cls/seq_relationship/*`, so its checkpoints are Google's, readable by
`bert-fill-mask`, `from_pretrained` and the original code) whose Keras task is
`MaskedLMTask`. There is no next-sentence task: the loss is the original's
masked-LM loss alone,

  loss = sum(w * l) / (sum(w) + 1e-5),  l = -log p(masked_lm_ids)

(`masked_lm_example_loss`), and nothing else reaches a gradient: the
next-sentence head (`cls/seq_relationship/*`) and the pooler
(`bert/pooler/*`) pass through unchanged, as the start checkpoint holds them
(a start without them, e.g. a Hugging Face BertForMaskedLM directory, keeps
their initial values; the checkpoints always hold them, as Google's do).
Evaluation gives the original's `masked_lm_accuracy` and `masked_lm_loss`,
and `loss` (the mean batch loss).
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.tasks.base import Task
from bert_tf.tasks.base import safe_div
from bert_tf.tasks.pretraining.model import MASKED_LM_DENOMINATOR_EPSILON
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.tasks.pretraining.model import masked_lm_eval_sums


@keras.saving.register_keras_serializable(package="bert_tf")
class BertMaskedLM(BertPretrainer):
    """`BertPretrainer` trained on the masked-LM loss alone (`MaskedLMTask`).

    Args, call args, returns, checkpoint variables: `BertPretrainer`'s.

    Keras: `compile(optimizer=...)`, then `fit` on `MaskedLMData.dataset(...)`
    (`bert_tf.tasks.masked_lm.data`), whose features hold the labels
    (`masked_lm_ids`, `masked_lm_weights`). Training logs `loss` and
    `masked_lm_accuracy`; `evaluate` returns `masked_lm_accuracy`,
    `masked_lm_loss` and `loss`; `predict` returns `masked_lm_logits`.
    """

    def __init__(self, config, name="bert_masked_lm", **kwargs):
        super().__init__(config, name=name, **kwargs)

    def make_task(self):
        return MaskedLMTask(self.config)


class MaskedLMTask(Task):
    """The masked-LM objective alone (no next sentence), on `BertMaskedLM`.

    On one device `compute_loss` is the original's masked_lm_loss; over
    replicas and micro-batches each divides by the whole global batch's
    sum(masked_lm_weights) (as `PretrainingTask`).

    Args:
      config: `BertConfig`.
    """

    name = "masked_lm"
    label_keys = ("masked_lm_ids", "masked_lm_weights")
    metric_sum_keys = ("masked_lm_correct", "masked_lm_weight")
    eval_sum_keys = ("masked_lm_weight", "masked_lm_loss_sum", "masked_lm_correct")
    default_best_metric = "masked_lm_accuracy"

    def loss_normalizers(self, features):
        return {"masked_lm_weight": tf.reduce_sum(
            tf.cast(features["masked_lm_weights"], tf.float32))}

    def compute_loss(self, model, features, normalizers, training=True):
        sums = masked_lm_eval_sums(model(features, training=training), features)
        loss = sums["masked_lm_loss_sum"] / (normalizers["masked_lm_weight"]
                                             + MASKED_LM_DENOMINATOR_EPSILON)
        return loss, {k: sums[k] for k in self.metric_sum_keys}

    def train_metrics(self, sums):
        return {"masked_lm_accuracy": safe_div(sums["masked_lm_correct"],
                                               sums["masked_lm_weight"])}

    def eval_step(self, model, features):
        return masked_lm_eval_sums(model(features, training=False), features)

    def eval_batch_loss(self, batch_sums):
        return batch_sums["masked_lm_loss_sum"] / (batch_sums["masked_lm_weight"]
                                                   + MASKED_LM_DENOMINATOR_EPSILON)

    def eval_results(self, sums, num_batches):
        return {
            "masked_lm_accuracy": safe_div(sums["masked_lm_correct"], sums["masked_lm_weight"]),
            "masked_lm_loss": safe_div(sums["masked_lm_loss_sum"], sums["masked_lm_weight"]),
            "loss": safe_div(sums["batch_loss_sum"], num_batches),
        }

    def predict_step(self, model, features):
        return {"masked_lm_logits": model(features, training=False)["masked_lm_logits"]}
