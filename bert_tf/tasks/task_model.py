"""Keras's `compile` / `fit` / `evaluate` / `predict` for the task models, on the task contract.

`TaskModel` is mixed into `BertClassifier`, `BertPretrainer` and `BertSquad`
(each in its task's module): `model.compile(optimizer=create_optimizer(...))`
then `model.fit(dataset)` makes exactly the trainer's update
(`bert_tf.training.steps.build_replica_train_step`), `evaluate` keeps the
task's eval sums in Keras metrics (`TaskSums`), and `predict` returns the
task's `predict_step`, as `Trainer.predict` does.
"""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import collections
import inspect

import keras
import numpy as np
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.tasks import keras_data
from bert_tf.tasks.base import passed_through
from bert_tf.tasks.base import safe_div
from bert_tf.training import steps


def _first_replica():
    """float32 1.0 on the first replica of the sync group, 0.0 on the others.

    A value that every replica already holds in full (an all-reduced sum, a
    step count) is added to a metric on one replica only; the metric's
    variables are summed over replicas when read.
    """
    replica_id = tf.distribute.get_replica_context().replica_id_in_sync_group
    return tf.cast(tf.equal(replica_id, 0), tf.float32)


class TaskSums(keras.metrics.Metric):
    """Running sums of a task's named values, and the metrics they give.

    The sums are Keras metric variables (summed over replicas when read, reset
    at each epoch and each `evaluate`), so a model's `fit` / `evaluate` report
    the task's own metrics (`Task.train_metrics`, `Task.eval_results`) of the
    whole run so far.

    Args:
      keys: names of the summed values (`update_state` takes a dict of them).
      results_fn: `fn({key: float32 scalar Tensor}) -> {metric name: Tensor}`.
      name: the metric's name.
    """

    def __init__(self, keys, results_fn, name="task_sums", **kwargs):
        super().__init__(name=name, **kwargs)
        self.keys = tuple(keys)
        self.results_fn = results_fn
        for key in self.keys:
            self.add_variable(shape=(), initializer="zeros", dtype="float32", name=key)

    def update_state(self, values):
        for key, variable in zip(self.keys, self.variables):
            variable.assign_add(tf.cast(values[key], tf.float32))

    def sums(self):
        """{key: float32 scalar Tensor}: the sums so far (over replicas, when read outside one)."""
        return {key: tf.convert_to_tensor(variable)
                for key, variable in zip(self.keys, self.variables)}

    def result(self):
        return self.results_fn(self.sums())


class PretrainedParts(collections.namedtuple("PretrainedParts", [
        "config", "checkpoint_path", "directory", "vocab_file", "do_lower_case", "tokenizer",
        "recorded", "options"])):
    """What `from_pretrained` found, for a task model's `from_parts` (`bert_tf.tasks.registry`).

    Attributes:
      config: the `BertConfig`.
      checkpoint_path: the checkpoint prefix, or the Hugging Face directory.
      directory: the directory that holds it (labels.txt, embedding_config.json).
      vocab_file, do_lower_case, tokenizer: the vocab, its casing, its `FullTokenizer`.
      recorded: the training run's bert_tf_run.json (a dict), or None.
      options: {name: value} of the `pretrained_options` the caller gave.
    """

    __slots__ = ()


def checkpoint_num_labels(parts, head):
    """The number of labels `parts.options` gives, else the checkpoint's classifier head's.

    Raises:
      UserError: neither says it.
    """
    if parts.options.get("num_labels") is not None:
        return parts.options["num_labels"]
    shapes = checkpoint.list_checkpoint_variables(parts.checkpoint_path, flag=None)
    num_labels = checkpoint.classifier_num_labels(shapes)
    if num_labels is None:
        raise UserError("head=%r needs num_labels=: %s holds no classifier head "
                        "(output_weights) to take it from" % (head, parts.checkpoint_path))
    return num_labels


class _TaskModelState(object):
    """What a `TaskModel` keeps outside Keras tracking (not weights, not saved)."""

    def __init__(self):
        self.task = None
        self.train_sums = None
        self.eval_sums = None
        self.evaluating = 0


class TaskModel(object):
    """Keras's `compile` / `fit` / `evaluate` / `predict` for a model trained by a `Task`.

    A mixin, listed before `keras.Model` (`class BertClassifier(TaskModel,
    keras.Model)`). The model holds its backbone as `self.bert` (`backbone`
    runs it) and says which task trains it (`make_task`); everything else is
    the task's contract (`bert_tf.tasks.base.Task`) and the trainer's:

      * `train_step` is `build_replica_train_step`, the trainer's replica
        step: the task's `loss_normalizers` all-reduced over replicas, its
        `compute_loss`, the gradients, `optimizer.apply` (the clip and the
        schedule are the optimizer's). One `fit` step on the same batch from
        the same weights is one `Trainer` step.
      * `test_step` sums the task's `eval_step` (weighted by
        `is_real_example`, when the features hold it) over replicas and
        batches; `evaluate` returns `task.eval_results`, the original's
        `metric_fn` metrics and the Estimator's `loss`.
      * `predict_step` is `task.predict_step`, the one prediction contract
        (what `Trainer.predict` returns too).
      * No work on padding: each step runs on its batch cut after the
        longest row (`Task.trim_padding`), as the trainer's, unless the
        model is compiled with XLA (`jit_compile`) or runs on a TPU.
      * Training logs: `loss` (the mean over steps of each global batch's
        loss) and `task.train_metrics`.

    Data: a dataset (or arrays) of feature dicts as the project's pipelines
    make them (labels included), or Keras's `(x, y)` with `x` the features
    and `y` the labels (a dict of `task.label_keys`, or the labels of a task
    with one label key: the classifier's `label_ids`). With a `preprocessor`
    (see `bert_tf.tokenization.preprocessor.BertPreprocessor`), `x` may be
    raw text: a list, tuple, NumPy array (str, bytes or object), pandas
    Series or string Tensor of texts; a pair as a tuple `(texts_a, texts_b)`,
    a list of `(text_a, text_b)` rows or an [n, 2] array; a dict with
    `text_a` (and `text_b`); a DataFrame (its `text_a` / `text_b` columns,
    or its one or two columns); or a batched `tf.data.Dataset` of any of
    these (with labels: of `(x, y)`). Labels are numbers: a list, tuple,
    NumPy array, pandas Series or Tensor (for several label keys, a dict of
    them). `fit`'s `validation_data` takes `(x, y)` of the same forms, or a
    dataset. Anything else, and an `x` and `y` of different lengths, is a
    one-line `UserError` naming the argument. Sample weights are refused:
    the original's training loss has none, and evaluation weighs examples by
    the `is_real_example` feature.
    """

    # The task's registration (`bert_tf.tasks.registry`), set by each task model.
    task_name = None
    hf_architecture = "BertModel"
    fresh_head = False
    pretrained_options = ()

    @classmethod
    def from_parts(cls, parts):
        """The model `from_pretrained` builds from `parts` (a `PretrainedParts`), no weights read."""
        return cls(parts.config)

    def make_task(self):
        """The `bert_tf.tasks.base.Task` whose loss, metrics and predictions this model has."""
        raise NotImplementedError

    def save_pretrained(self, directory, format="google", vocab_file=None,  # pylint: disable=redefined-builtin
                        do_lower_case=None, overwrite=False):
        """Writes the model, its head included, as a directory `from_pretrained` reads back.

        `format="google"` (the default): `bert_config.json`, `vocab.txt`,
        `bert_model.ckpt.*` (the original's names: `cls/*`, `output_weights`).
        `format="huggingface"`: the model's own Hugging Face class
        (`hf_architecture`: `BertForPreTraining`, `BertForSequenceClassification`,
        `BertForQuestionAnswering`, `BertForMultipleChoice`,
        `BertForTokenClassification`, with `num_labels` and `id2label` in
        config.json where the head has labels). See
        `bert_tf.modeling.checkpoint.save_pretrained`.
        """
        return checkpoint.save_pretrained(self, directory, self.bert.config, format=format,
                                          vocab_file=vocab_file, do_lower_case=do_lower_case,
                                          overwrite=overwrite)

    def build(self, input_shape=None):
        # Every weight is made by the constructors (a checkpoint loads before any call).
        self.built = True

    def backbone(self, features, training=None, **bert_kwargs):
        """(`features` as a dict, `self.bert`'s outputs on them): what every head starts from.

        Raw text goes through the preprocessor first (`model_inputs`).
        `bert_kwargs` (`head_mask`, `output_attentions`) go to `self.bert`
        when given, and so do the features `inputs_embeds` (instead of
        `input_ids`) and `position_ids`.
        """
        features = self.model_inputs(features)
        bert_kwargs = {k: v for k, v in bert_kwargs.items()
                       if not (v is None or (k == "output_attentions" and not v))}
        # Embeddings in and positions in, as features: `inputs_embeds` instead of `input_ids`.
        for key in ("inputs_embeds", "position_ids"):
            if features.get(key) is not None:
                bert_kwargs[key] = features[key]
        outputs = self.bert(features.get("input_ids"), input_mask=features.get("input_mask"),
                            token_type_ids=features.get("segment_ids"), training=training,
                            **bert_kwargs)
        return features, outputs

    def prune_heads(self, heads_to_prune):
        """`self.bert.prune_heads`: removes attention heads for good (see `BertModel.prune_heads`).

        The model's `config` (the backbone's) records them in `pruned_heads`.
        """
        self.bert.prune_heads(heads_to_prune)
        self.config = self.bert.config
        for attr in ("train_function", "test_function", "predict_function"):
            if getattr(self, attr, None) is not None:
                setattr(self, attr, None)

    @staticmethod
    def _with_attentions(result, outputs):
        # The backbone's `attentions`, when it returned them.
        if "attentions" in outputs:
            result["attentions"] = outputs["attentions"]
        return result

    def _task_model_state(self):
        state = self.__dict__.get("_task_model_state_")
        if state is None:
            state = _TaskModelState()
            self.__dict__["_task_model_state_"] = state
        return state

    @property
    def task(self):
        """The model's `Task` (made once, on first use)."""
        state = self._task_model_state()
        if state.task is None:
            state.task = self.make_task()
        return state.task

    # --------------------------------------------------------------- inputs

    def model_inputs(self, x):
        """`x` as a dict of features: a dict is copied; raw text goes through the preprocessor."""
        if isinstance(x, dict) and ("input_ids" in x or "inputs_embeds" in x):
            return dict(x)
        preprocessor = getattr(self, "preprocessor", None)
        if preprocessor is None:
            raise UserError(
                "%s takes a dict of features (input_ids, input_mask, segment_ids, ...), got %s%s"
                % (type(self).__name__, keras_data.describe(x),
                   "; for raw text, build it with preprocessor=bert_tf.tokenization.preprocessor."
                   "BertPreprocessor(...)" if hasattr(self, "preprocessor") else ""))
        if isinstance(x, dict):
            text_keys = preprocessor.text_keys
            features = {k: v for k, v in x.items() if k not in text_keys}
            features.update(preprocessor({k: x[k] for k in text_keys if k in x}))
            return features
        return dict(preprocessor(x))

    def features_from_data(self, data):
        """One batch of Keras data (`features`, or `(x, y)`) as the task's features dict."""
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        name = type(self).__name__
        if sample_weight is not None:
            raise keras_data.no_weights_error(name, "sample_weight")
        if keras_data.is_text_pair(x, y):
            raise UserError(
                "%s: the data's elements are (text_a, text_b) without labels; make them "
                "((text_a, text_b), labels), or {\"text_a\": ..., \"text_b\": ...} with labels"
                % name)
        features = self.model_inputs(x)
        if y is None:
            return features
        label_keys = self.task.label_keys
        if isinstance(y, dict):
            features.update(y)
        elif len(label_keys) == 1:
            features[label_keys[0]] = y
        else:
            raise UserError("%s takes its labels as a dict y={%s: ...}, got %s"
                            % (name, ", ".join(label_keys), keras_data.describe(y)))
        return features

    # --------------------------------------------------------------- compile

    def compile(self, optimizer=None, loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, **kwargs):
        """Keras's `compile`, with the task's loss and metrics.

        Args:
          optimizer: required; `bert_tf.training.optimization.create_optimizer(init_lr,
            num_train_steps, num_warmup_steps)` is the original's
            (AdamWeightDecay without bias correction, warmup from 0 then
            linear decay, gradients clipped by global norm 1.0). Any Keras
            optimizer works; `bert_tf.training.callbacks.CheckpointCallback` needs one
            of bert_tf's (it saves `adam_m` / `adam_v`).
          loss, metrics, loss_weights, weighted_metrics: must be None (the
            task's loss and metrics are the model's).
          **kwargs: Keras's (`steps_per_execution`, `jit_compile`, `run_eagerly`).

        Raises:
          UserError: no optimizer, or a loss or metrics given.
        """
        name = type(self).__name__
        if optimizer is None:
            raise UserError(
                "%s.compile() needs optimizer=: e.g. bert_tf.training.optimization."
                "create_optimizer(init_lr, num_train_steps, num_warmup_steps), the original's "
                "AdamWeightDecay with warmup and linear decay" % name)
        given = [k for k, v in (("loss", loss), ("metrics", metrics),
                                ("loss_weights", loss_weights),
                                ("weighted_metrics", weighted_metrics)) if v is not None]
        if given:
            raise UserError("%s.compile() takes no %s=: the model trains with the original's "
                            "loss and reports its metrics" % (name, given[0]))
        super().compile(optimizer=optimizer, **kwargs)
        task = self.task
        state = self._task_model_state()
        state.train_sums = TaskSums(("loss_sum", "num_steps") + tuple(task.metric_sum_keys),
                                    _train_results(task), name="train_metrics")
        state.eval_sums = None
        if task.eval_sum_keys:
            state.eval_sums = TaskSums(
                tuple(task.eval_sum_keys) + ("batch_loss_sum", "num_batches"),
                lambda sums: task.eval_results(sums, sums["num_batches"]), name="eval_metrics")

    def compile_from_config(self, config):
        # What `keras.saving.load_model` calls for a compiled model's `.keras`
        # file (Keras skips a custom `compile` unless this is overridden).
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    @property
    def metrics(self):
        state = self._task_model_state()
        if state.train_sums is None:
            return super().metrics
        return [state.eval_sums if state.evaluating else state.train_sums]

    # --------------------------------------------------------------- steps

    def train_step(self, data):
        state = self._task_model_state()
        task = self.task
        features = self.features_from_data(data)
        replica_step = steps.build_replica_train_step(
            task, self, self.optimizer,
            loss_scaling=isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer),
            trim_padding=self._trims_padding())
        values = replica_step(features)  # [loss share, metric sums...]
        sums = {"loss_sum": values[0], "num_steps": _first_replica()}
        sums.update({k: values[i + 1] for i, k in enumerate(task.metric_sum_keys)})
        state.train_sums.update_state(sums)
        return state.train_sums.result()

    def test_step(self, data):
        state = self._task_model_state()
        # The global batch's sums, as the trainer's eval loop adds them up (every
        # replica holds them; the first one adds them to the metric).
        batch = steps.replica_eval_sums(self.task, self, self.features_from_data(data),
                                        self._trims_padding())
        first = _first_replica()
        sums = {k: value * first for k, value in batch.items()}
        sums["num_batches"] = first
        state.eval_sums.update_state(sums)
        return state.eval_sums.result()

    def predict_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        if keras_data.is_text_pair(x, y):  # a dataset of (text_a, text_b): both are x
            x = (x, y)
        return steps.predict_outputs(self.task, self, self.model_inputs(x), self._trims_padding())

    def _trims_padding(self):
        """Whether the steps cut each batch's padding (not for XLA's or a TPU's fixed shapes)."""
        return not steps.fixed_shapes(self.distribute_strategy, self.jit_compile)

    def fit(self, x=None, y=None, *args, **kwargs):
        """Keras's `fit`, on every form of data a Keras user writes (see `keras_data.UserData`)."""
        call = _bind(super().fit, x, y, *args, **kwargs)
        data = keras_data.UserData(self, "fit")
        arguments = call.arguments
        for weights in ("sample_weight", "class_weight"):
            if arguments.get(weights) is not None:
                raise keras_data.no_weights_error(type(self).__name__, weights)
        arguments["x"], arguments["y"] = data.x_and_y(x, y, "x", "y")
        if arguments.get("validation_data") is not None:
            arguments["validation_data"] = data.validation_data(arguments["validation_data"])
        if isinstance(arguments["x"], tf.data.Dataset) and "shuffle" not in arguments:
            # Keras ignores `shuffle` for a dataset (it is shuffled, or not, by
            # its maker) but warns on every fit about its own default, True.
            arguments["shuffle"] = False
        return super().fit(*call.args, **call.kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """Keras's `evaluate`: the task's eval metrics (`return_dict=True` names them).

        The same metrics as `Trainer.evaluate` on the same examples: the sums
        of each batch reduced by `steps.replica_eval_sums`, and for a task
        that needs every prediction (regression: `pearson`, `spearman`) its
        `eval_results_from_predictions` over the same data (padding examples,
        `is_real_example` 0, left out).
        """
        task = self.task
        if not task.eval_sum_keys:
            raise UserError("%s has no evaluate(): the original's task has no eval mode (use "
                            "predict())" % type(self).__name__)
        call = _bind(super().evaluate, x, y, *args, **kwargs)
        if call.arguments.get("sample_weight") is not None:
            raise keras_data.no_weights_error(type(self).__name__, "sample_weight")
        x, y = keras_data.UserData(self, "evaluate").x_and_y(x, y, "x", "y")
        call.arguments["x"], call.arguments["y"] = x, y
        return_dict = call.arguments.get("return_dict", False)
        if task.needs_eval_predictions:
            call.arguments["return_dict"] = True
        state = self._task_model_state()
        state.evaluating += 1
        try:
            results = super().evaluate(*call.args, **call.kwargs)
        finally:
            state.evaluating -= 1
        if not task.needs_eval_predictions:
            return results
        predictions = self._eval_predictions(x, y, call.arguments.get("batch_size"),
                                             call.arguments.get("steps"))
        results.update({k: float(v) for k, v in
                        task.eval_results_from_predictions(predictions).items()})
        if return_dict:
            return results
        return [results[name] for name in sorted(results)]

    def _eval_predictions(self, x, y, batch_size=None, steps_limit=None):
        """Every example's `predict_step` outputs with its labels (padding left out), in order."""
        if isinstance(x, tf.data.Dataset):
            dataset = x
        else:
            dataset = tf.data.Dataset.from_tensor_slices(x if y is None else (x, y)).batch(
                batch_size or 32)
        if steps_limit is not None:
            dataset = dataset.take(steps_limit)
        task = self.task

        @tf.function
        def predict(data):
            features = self.features_from_data(data)
            outputs = steps.predict_outputs(task, self, features, self._trims_padding())
            # The labels as given, unless predict_step hands them back already (in their shape).
            for key, value in passed_through(
                    features, task.label_keys + ("is_real_example",)).items():
                outputs.setdefault(key, value)
            return outputs

        rows = [{k: v.numpy() for k, v in predict(batch).items()} for batch in dataset]
        outputs = {k: np.concatenate([row[k] for row in rows]) for k in rows[0]} if rows else {}
        real = outputs.pop("is_real_example", None)
        if real is not None:
            outputs = {k: v[real.astype(bool)] for k, v in outputs.items()}
        return outputs

    def predict(self, x, *args, **kwargs):
        """Keras's `predict`: a dict of numpy arrays, the task's `predict_step` outputs."""
        call = _bind(super().predict, x, *args, **kwargs)
        call.arguments["x"], _ = keras_data.UserData(self, "predict").x_and_y(x, None, "x", "y")
        return super().predict(*call.args, **call.kwargs)


def _bind(method, *args, **kwargs):
    """Keras's arguments by name (`validation_data` may come positionally too)."""
    return inspect.signature(method).bind(*args, **kwargs)


def _train_results(task):
    def results(sums):
        values = {"loss": safe_div(sums["loss_sum"], sums["num_steps"])}
        values.update(task.train_metrics(sums))
        return values
    return results
