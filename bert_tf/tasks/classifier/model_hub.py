"""Classification on a TF Hub BERT encoder: its model, its task and the encoder's checks.

The task of the original's `run_classifier_with_tfhub.py`. The original loaded
a TF1 `hub.Module` and read the vocab and casing from its
`tokenization_info` signature; today's TF Hub BERT encoders are TF2
SavedModels (TF Hub's `bert_en_uncased_L-12_H-768_A-12/4` and the like, TF
Model Garden's `export_tfhub`, bert_tf's own `export_saved_model
--format=tfhub` encoder):

  * `__call__(inputs, training=...)`: `inputs` a dict of int32 Tensors
    [batch, seq_length] `input_word_ids`, `input_mask`, `input_type_ids`;
    returns a dict with `pooled_output` float32 [batch, hidden_size] (and
    `sequence_output`, `encoder_outputs`);
  * `trainable_variables`, the weights fine-tuning trains;
  * `vocab_file` (an asset) and `do_lower_case` (a bool variable): the
    tokenizer (`FullTokenizer`) the run builds.

The model is `HubClassifier`: the encoder (every trainable variable
fine-tuned, its dropout on in training) and the original's head on
`pooled_output` (`output_weights` [num_labels, hidden_size], `output_bias`
[num_labels], dropout 0.1 in training), built by `hub_classifier(module,
num_labels)`; its task, `HubClassifierTask`, is `ClassifierTask` (the same
loss, metrics and predictions).

Checkpoints: each encoder variable under its own name in the SavedModel
(without ":0"). A bert_tf-exported encoder's variables carry Google's names
(`bert/...`), so its checkpoints are run_classifier's.

Everything about the module is read from its files (`saved_model.pb`, the
variables' index) before any TensorFlow op (`inspect_hub_module`): a handle
that is not a BERT encoder (the missing input, output or attribute named), a
vocab with more tokens than the encoder's word embedding table has rows (or
`PADDING_ROWS` fewer: `bert_tf.tokenization.vocab.vocab_size_mismatch`), or
a --max_seq_length beyond its position embeddings is one line.

Handles: a local directory, a `gs://` path (read through `tf.io.gfile`), or
an `https://` URL (tfhub.dev, Kaggle), downloaded by `tensorflow_hub.resolve`
when tensorflow-hub is installed (it is not a dependency of bert_tf). TF1
Hub modules (`hub.Module`, `tfhub_module.pb`) are not supported.
"""

import os
import re

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf
from absl import logging
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.core.protobuf import trackable_object_graph_pb2

from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint as checkpoint_lib
from bert_tf.modeling.heads import ClassifierHead
from bert_tf.tasks.classifier.model import ClassifierTask
from bert_tf.tokenization import vocab as vocab_lib

FLAG = "bert_hub_module_handle"
ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
POOLED_OUTPUT = "pooled_output"
# The embedding tables, by the names TF Hub's exporters give them: Google's
# (bert/embeddings/word_embeddings) and Model Garden's (word_embeddings/embeddings).
_WORD_EMBEDDINGS = re.compile(r"(^|/)word_embeddings(/|$)")
_POSITION_EMBEDDINGS = re.compile(r"(^|/)position_embeddings?(/|$)")


class HubModule(object):
    """What a TF Hub BERT encoder's files say, read before any TensorFlow op.

    Attributes:
      handle: the --bert_hub_module_handle as given.
      path: its SavedModel directory (local or gs://).
      vocab_file: path of its `vocab_file` asset.
      do_lower_case: bool, its `do_lower_case` variable.
      hidden_size: int, the last dimension of `pooled_output` (None if its
        signature leaves it open).
      vocab_size: rows of its word embedding table, or None if no variable
        has such a name.
      max_position_embeddings: rows of its position embedding table, or None.
      variables: [(name, shape, trainable)] of its variables.
      training_values: the values its `__call__` was saved for as `training`
        (a reusable SavedModel's: False and True); empty if it takes none.
      any_length: whether its `__call__` takes rows of any length (each
        input's second dimension open), so batches can be cut after their
        longest row.
    """

    def __init__(self, handle, path, vocab_file, do_lower_case, hidden_size, vocab_size,
                 max_position_embeddings, variables, training_values=frozenset(),
                 any_length=False):
        self.handle = handle
        self.path = path
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.variables = variables
        self.training_values = frozenset(training_values)
        self.any_length = bool(any_length)

    def __repr__(self):
        return "HubModule(%r)" % self.handle


def _where(handle):
    return "--%s=%s" % (FLAG, handle)


def resolve_handle(handle):
    """The SavedModel directory of a handle: itself, or tensorflow_hub's download of a URL.

    Raises:
      UserError: no handle; a URL without tensorflow-hub installed, or one it
        cannot fetch.
    """
    if not handle:
        raise UserError("--%s is required: the TF Hub BERT encoder to fine-tune (a SavedModel "
                        "directory, gs:// path or https:// handle)" % FLAG)
    if not re.match(r"^https?://", handle):
        return handle
    try:
        import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
    except ImportError:
        raise UserError("%s: an https:// handle needs tensorflow-hub (pip install tensorflow-hub); "
                        "or pass the module's downloaded directory" % _where(handle)) from None
    try:
        return hub.resolve(handle)
    except Exception as e:  # pylint: disable=broad-except
        raise UserError("%s: tensorflow_hub cannot fetch it: %s"
                        % (_where(handle), str(e).splitlines()[0] if str(e) else
                           type(e).__name__)) from None


def _read_saved_model(handle, path):
    """The `SavedModel` proto of `path`, or a one-line UserError saying what it is instead."""
    where = _where(handle)
    if not tf.io.gfile.exists(path):
        raise UserError("%s: no such directory" % where)
    if not tf.io.gfile.isdir(path):
        raise UserError("%s is a file, not a SavedModel directory" % where)
    if tf.io.gfile.exists(os.path.join(path, "tfhub_module.pb")):
        raise UserError(
            "%s is a TF1 Hub module (hub.Module format); this tool fine-tunes TF2 SavedModel "
            "BERT encoders (e.g. https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4)"
            % where)
    pb_path = os.path.join(path, "saved_model.pb")
    if not tf.io.gfile.exists(pb_path):
        raise UserError("%s has no saved_model.pb: not a SavedModel" % where)
    saved_model = saved_model_pb2.SavedModel()
    try:
        with tf.io.gfile.GFile(pb_path, "rb") as f:
            saved_model.ParseFromString(f.read())
    except Exception as e:  # pylint: disable=broad-except
        raise UserError("%s: %s cannot be read: %s" % (where, pb_path, e)) from None
    return saved_model


def _dict_values(value):
    """Every dict of a `StructuredValue` proto (a function's inputs or outputs), outermost first."""
    kind = value.WhichOneof("kind")
    if kind == "dict_value":
        yield value.dict_value.fields
        for item in value.dict_value.fields.values():
            yield from _dict_values(item)
    elif kind in ("tuple_value", "list_value"):
        for item in getattr(value, kind).values:
            yield from _dict_values(item)
    elif kind == "named_tuple_value":
        for pair in value.named_tuple_value.values:
            yield from _dict_values(pair.value)


def _open_length(spec):
    """Whether a `StructuredValue` tensor spec's second dimension (the length) is open."""
    if spec.WhichOneof("kind") != "tensor_spec_value":
        return False
    dims = spec.tensor_spec_value.shape.dim
    return len(dims) == 2 and dims[1].size < 0


def _training_values(signature):
    """The `training` values of a `(args, kwargs)` input signature: a bool after the inputs."""
    kind = signature.WhichOneof("kind")
    if kind != "tuple_value" or len(signature.tuple_value.values) != 2:
        return set()
    args, kwargs = signature.tuple_value.values
    values = [item for item in args.tuple_value.values[1:2]]
    if kwargs.WhichOneof("kind") == "dict_value" and "training" in kwargs.dict_value.fields:
        values.append(kwargs.dict_value.fields["training"])
    return set(v.bool_value for v in values if v.WhichOneof("kind") == "bool_value")


def _read_do_lower_case(handle, path, child_name):
    """The value of the root's bool variable `child_name`, from the SavedModel's variables."""
    variables = os.path.join(path, "variables", "variables")
    try:
        reader = tf.train.load_checkpoint(variables)
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    except Exception as e:  # pylint: disable=broad-except
        raise UserError("%s: its variables (%s) cannot be read: %s"
                        % (_where(handle), variables, str(e).splitlines()[0])) from None
    for child in graph.nodes[0].children:
        if child.local_name == child_name:
            for attribute in graph.nodes[child.node_id].attributes:
                if attribute.name == "VARIABLE_VALUE":
                    return bool(reader.get_tensor(attribute.checkpoint_key))
    raise UserError("%s: its %s variable has no value in %s" % (_where(handle), child_name,
                                                                  variables))


def inspect_hub_module(handle, max_seq_length=None):
    """Reads and checks a TF Hub BERT encoder's files (no TensorFlow op runs).

    Args:
      handle: --bert_hub_module_handle (a directory, gs:// path or https:// URL).
      max_seq_length: when given, it must fit the position embeddings.

    Returns:
      A `HubModule`.

    Raises:
      UserError: one line: not a SavedModel; not a BERT encoder (the missing
        input, output or attribute named); its vocab does not fit its word
        embeddings; max_seq_length beyond its position embeddings.
    """
    path = resolve_handle(handle)
    where = _where(handle)
    saved_model = _read_saved_model(handle, path)
    meta_graphs = [m for m in saved_model.meta_graphs if m.HasField("object_graph_def")]
    if not meta_graphs:
        raise UserError("%s is a TF1 SavedModel (no object graph); this tool fine-tunes TF2 "
                        "SavedModel BERT encoders" % where)
    meta_graph = meta_graphs[0]
    graph = meta_graph.object_graph_def
    root = {child.local_name: graph.nodes[child.node_id] for child in graph.nodes[0].children}

    def not_an_encoder(what):
        return UserError("%s is not a BERT encoder: %s" % (where, what))

    call = root.get("__call__")
    if call is None or call.WhichOneof("kind") != "function":
        raise not_an_encoder("it has no __call__ taking %s" % ", ".join(ENCODER_INPUTS))
    functions = [graph.concrete_functions[name] for name in call.function.concrete_functions]
    taken = set()
    outputs = []
    training_values = set()
    any_length = bool(functions)
    for function in functions:
        signature = function.canonicalized_input_signature
        keys = set(k for fields in _dict_values(signature) for k in fields)
        taken |= keys
        if all(k in keys for k in ENCODER_INPUTS):
            outputs.extend(_dict_values(function.output_signature))
            training_values.update(_training_values(signature))
            any_length = any_length and all(
                _open_length(fields[k]) for fields in _dict_values(signature)
                for k in ENCODER_INPUTS if k in fields)
    missing = [k for k in ENCODER_INPUTS if k not in taken]
    if missing:
        raise not_an_encoder("its __call__ takes no %s: a BERT encoder's takes a dict of int32 "
                             "Tensors %s" % (", ".join(missing), ", ".join(ENCODER_INPUTS)))
    pooled = [fields[POOLED_OUTPUT] for fields in outputs if POOLED_OUTPUT in fields]
    if not pooled:
        raise not_an_encoder("its __call__ returns no %s" % POOLED_OUTPUT)
    hidden_size = None
    spec = pooled[0]
    if spec.WhichOneof("kind") == "tensor_spec_value" and spec.tensor_spec_value.shape.dim:
        size = spec.tensor_spec_value.shape.dim[-1].size
        hidden_size = size if size > 0 else None

    if "trainable_variables" not in root:
        raise not_an_encoder("it has no trainable_variables to fine-tune")
    vocab_asset = root.get("vocab_file")
    if vocab_asset is None or vocab_asset.WhichOneof("kind") != "asset":
        raise not_an_encoder(
            "it has no vocab_file asset%s" % (
                " (it has an sp_model_file: a SentencePiece model, which this tool does not "
                "read)" if "sp_model_file" in root else ""))
    filename = meta_graph.asset_file_def[vocab_asset.asset.asset_file_def_index].filename
    vocab_file = os.path.join(path, "assets", filename)
    lower = root.get("do_lower_case")
    if lower is None or lower.WhichOneof("kind") != "variable":
        raise not_an_encoder("it has no do_lower_case variable")
    do_lower_case = _read_do_lower_case(handle, path, "do_lower_case")

    variables = [(node.variable.name, tuple(d.size for d in node.variable.shape.dim),
                  node.variable.trainable)
                 for node in graph.nodes if node.WhichOneof("kind") == "variable"]

    def table_rows(pattern):
        for name, shape, _ in variables:
            if pattern.search(name) and len(shape) == 2 and shape[0] > 0:
                return name, shape[0]
        return None, None

    word_name, vocab_size = table_rows(_WORD_EMBEDDINGS)
    position_name, max_positions = table_rows(_POSITION_EMBEDDINGS)
    vocab = tokenization.load_vocab(vocab_file)
    for token in ("[UNK]", "[CLS]", "[SEP]"):
        if token not in vocab:
            raise UserError("%s: its vocab_file %s has no %s token" % (where, vocab_file, token))
    if vocab_size is not None and vocab_lib.vocab_size_mismatch(len(vocab), vocab_size):
        raise UserError("%s: its vocab_file %s has %d tokens, %s than the %d rows of its word "
                        "embedding table %s (the vocab is not the encoder's)"
                        % (where, vocab_file, len(vocab),
                           "more" if len(vocab) > vocab_size else "fewer", vocab_size, word_name))
    if max_seq_length is not None and max_positions is not None and max_seq_length > max_positions:
        raise UserError("--max_seq_length=%d: Cannot use sequence length %d because the BERT "
                        "model was only trained up to sequence length %d (the rows of %s in %s)"
                        % (max_seq_length, max_seq_length, max_positions, position_name, where))
    return HubModule(handle, path, vocab_file, do_lower_case, hidden_size, vocab_size,
                     max_positions, variables, training_values, any_length)


def load_encoder(module):
    """`tf.saved_model.load` of the module (under the caller's strategy scope, if any)."""
    return tf.saved_model.load(module.path)


class HubClassifier(keras.Model):
    """A TF Hub BERT encoder with the original classifier head on its `pooled_output`.

    Variables: the encoder's `trainable_variables` (all fine-tuned), then the
    head's `output_weights` [num_labels, hidden_size] and `output_bias`
    [num_labels] (`bert_tf.modeling.heads.ClassifierHead`, saved unscoped as
    the original's). In checkpoints an encoder variable is named by its
    `name` in the SavedModel, without ":0".

    Args:
      encoder: the loaded SavedModel (`tf.saved_model.load`).
      num_labels: int (1 for regression).
      hidden_size: the width of `pooled_output`.
      is_regression: bool.
      vocab_size: when the module's word embedding table was not found: the
        vocab's size, checked once against the encoder (an id it cannot
        embed fails on the CPU).
      handle: the handle, for error messages.
      training_values: `HubModule.training_values`: the encoder is called
        with `training=` only when it takes it, and with True only when it
        was saved for it (else its own dropout stays off, with a warning).
      any_length: `HubModule.any_length`: whether the encoder takes rows of
        any length (its task then cuts each batch after its longest row).

    Call args:
      features: dict with int32 `input_ids`, `input_mask`, `segment_ids`
        [batch_size, seq_length] (the encoder's `input_word_ids`,
        `input_mask`, `input_type_ids`).
      training: Python bool; the encoder's dropout and the head's 0.1 only when True.

    Returns:
      dict: `logits` float32 [batch_size, num_labels], `pooled_output`.
    """

    def __init__(self, encoder, num_labels, hidden_size=None, is_regression=False,
                 vocab_size=None, handle=None, training_values=(False, True),
                 any_length=False, name="hub_classifier", **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_labels = int(num_labels)
        self.is_regression = bool(is_regression)
        self.any_length = bool(any_length)
        self.handle = handle
        self._training_values = frozenset(training_values)
        if True not in self._training_values:
            logging.warning("%s: its __call__ was not saved for training=True: its own dropout "
                            "(if any) stays off in fine-tuning", _where(handle))
        self.encoder = encoder
        self._encoder_variables = list(getattr(encoder, "trainable_variables", None) or [])
        if not self._encoder_variables:
            raise UserError("%s is not a BERT encoder: it has no trainable variables to fine-tune"
                            % _where(handle))
        if hidden_size is None or vocab_size is not None:
            pooled = self._probe(vocab_size)
            hidden_size = int(pooled.shape[-1])
        self.classifier = ClassifierHead(self.num_labels, hidden_size, name="classifier")
        self._check_names()
        self.built = True

    def _probe(self, vocab_size):
        """The encoder on one short row (its largest vocab id, if given): the pooled output."""
        ids = [[0, 0] if not vocab_size else [0, int(vocab_size) - 1]]
        try:
            outputs = self._encode({"input_word_ids": tf.constant(ids, tf.int32),
                                    "input_mask": tf.ones([1, 2], tf.int32),
                                    "input_type_ids": tf.zeros([1, 2], tf.int32)}, False)
        except tf.errors.InvalidArgumentError as e:
            raise UserError("%s: the encoder cannot embed id %d, the last of its vocab_file "
                            "(the vocab is not the encoder's): %s"
                            % (_where(self.handle), int(vocab_size or 1) - 1,
                               str(e.message).splitlines()[0])) from None
        return outputs[POOLED_OUTPUT]

    def _encode(self, inputs, training):
        """The encoder's outputs; `training` as far as it was saved for it."""
        if not self._training_values:
            return self.encoder(inputs)
        return self.encoder(inputs, training=bool(training) and True in self._training_values)

    def _check_names(self):
        """Each variable needs a checkpoint name of its own (the resume reads them by name)."""
        seen = {}
        for variable in self.weights:
            name = checkpoint_lib.tf1_name(variable)
            if name in seen:
                raise UserError("%s: two of its variables are named %s; this tool's checkpoints "
                                "name each variable by its name" % (_where(self.handle), name))
            seen[name] = variable

    @property
    def variables(self):
        return self._encoder_variables + super().variables

    @property
    def weights(self):
        return self._encoder_variables + super().weights

    @property
    def task(self):
        """The model's task: `HubClassifierTask` (the classifier's loss, metrics and predictions)."""
        task = self.__dict__.get("_task")
        if task is None:
            task = HubClassifierTask(self.num_labels, is_regression=self.is_regression,
                                     any_length=self.any_length)
            self.__dict__["_task"] = task
        return task

    def call(self, features, training=None):
        inputs = {"input_word_ids": tf.cast(features["input_ids"], tf.int32),
                  "input_mask": tf.cast(features["input_mask"], tf.int32),
                  "input_type_ids": tf.cast(features["segment_ids"], tf.int32)}
        outputs = self._encode(inputs, training)
        pooled = tf.cast(outputs[POOLED_OUTPUT], tf.float32)
        logits = self.classifier(pooled, training=training)
        return {"logits": logits, "pooled_output": pooled}


class HubClassifierTask(ClassifierTask):
    """`ClassifierTask` (the original's loss, metrics and predictions) of a `HubClassifier`.

    Args:
      num_labels, is_regression: as `ClassifierTask`'s.
      any_length: whether the encoder takes rows of any length
        (`HubModule.any_length`): each batch is then cut after its longest
        row, else every row runs whole.
    """

    name = "classifier_with_tfhub"

    def __init__(self, num_labels, is_regression=False, any_length=False):
        # No BertConfig: the records are checked for labels only (the vocab
        # was checked against the word embeddings in `inspect_hub_module`).
        super().__init__(None, num_labels, is_regression=is_regression)
        self.any_length = bool(any_length)

    def trim_padding(self, features):
        """Cut after the batch's longest row where the encoder takes any length, else whole."""
        if not self.any_length:
            return features
        return super().trim_padding(features)


def hub_classifier(module, num_labels, is_regression=False):
    """A new `HubClassifier` on `module`'s encoder (a `HubModule`), loaded here.

    Call it under the strategy's scope: the trainer does
    (`Trainer(strategy, lambda: hub_classifier(module, 2), output_dir)`).
    """
    vocab_size = None
    if module.vocab_size is None:
        vocab_size = len(tokenization.load_vocab(module.vocab_file))
    return HubClassifier(load_encoder(module), num_labels, hidden_size=module.hidden_size,
                         is_regression=is_regression, vocab_size=vocab_size,
                         handle=module.handle, training_values=module.training_values,
                         any_length=module.any_length)
