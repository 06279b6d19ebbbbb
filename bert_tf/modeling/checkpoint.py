"""Google-format (TF1 `tf.train.Saver`) checkpoints: the one place that maps names, heads included.

A model variable's TF1 name is its Keras `variable.path` (the layers are named
after the original's scopes), minus any wrapper-model prefix before the root
scopes `bert/` and `cls/`. Loading is therefore a rename-free, reshape-free
copy; saving writes exactly the names and shapes the original code restores.

What a Google checkpoint may hold besides the backbone, and what we do with it:

  * heads (`cls/predictions/*`, `cls/seq_relationship/*`, `cls/squad/*`, the
    classifier's unscoped `output_weights`/`output_bias`): loaded when the
    target has them, otherwise listed in the report as unused heads;
  * optimizer state (`<var>/adam_m`, `<var>/adam_v`, `global_step`): restored
    only when an optimizer is given, otherwise listed as skipped;
  * anything else: an error in strict mode (it means another architecture).

A checkpoint whose files cannot be read (a corrupt or truncated index or data
file, a missing index or data shard) is a one-line `UnreadableCheckpointError`
(a `UserError`) naming the path, and every value is read before any is
assigned, so a failed load leaves the model as it was. A checkpoint that reads
but does not fit the model is a plain `UserError`: a resuming run skips the
first kind for an older checkpoint, never the second.

A Hugging Face BERT directory (`config.json`, `model.safetensors` or its
shards) is a checkpoint too: every function here that takes a checkpoint path
takes one, read through `bert_tf.modeling.huggingface.SafetensorsReader` under
the Google names, with the same strict checks. Its architecture's absent parts
(`BertForMaskedLM` saves no pooler) start from their initializer, with a
warning naming them.
"""

import collections
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.modeling import huggingface

# Root scopes of the original graphs. A variable path is cut to start at one of them.
_ROOTS = ("bert", "cls")
# Variables that the original creates outside any scope (run_classifier's head).
UNSCOPED_HEAD_VARIABLES = ("output_weights", "output_bias")
# The heads' scopes: run_pretraining's (in every release) and run_squad's.
PRETRAINING_HEAD_SCOPES = ("cls/predictions/", "cls/seq_relationship/")
SQUAD_HEAD_SCOPE = "cls/squad/"
# The heads a model can have, by the name `from_pretrained` and the export give them.
HEADS = ("pretraining", "classifier", "squad")
OPTIMIZER_SLOT_SUFFIXES = ("/adam_m", "/adam_v")
GLOBAL_STEP = "global_step"
# A Google release directory (uncased_L-12_H-768_A-12/) has no `checkpoint` state file.
RELEASE_CHECKPOINT = "bert_model.ckpt"
# What TensorFlow raises for unreadable checkpoint files: an OpError (DataLoss
# for a corrupt index, NotFound for a missing data shard, a checksum mismatch),
# and IndexError for a data file cut short (its C++ OutOfRange "Read less
# bytes than requested" surfaces as IndexError).
_READ_ERRORS = (tf.errors.OpError, IndexError, RuntimeError)


class UnreadableCheckpointError(UserError):
    """A checkpoint whose files cannot be read: a missing, truncated or corrupt index or data file.

    Not raised for a checkpoint that reads but does not fit the model (a
    missing, unexpected or wrong-shaped variable): that is a plain `UserError`.

    Attributes:
      checkpoint_path: the checkpoint prefix.
      reason: what is wrong with its files, without the path (one line).
    """

    def __init__(self, where, checkpoint_path, reason):
        super().__init__("%s: %s" % (where, reason))
        self.checkpoint_path = checkpoint_path
        self.reason = reason


def _where(flag, path):
    """How an error names the checkpoint: `--flag=path`, or the bare path when no flag."""
    return "--%s=%s" % (flag, path) if flag else str(path)


def _first_line(error):
    text = error.message if isinstance(error, tf.errors.OpError) else str(error)
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else type(error).__name__


# The errors of a checkpoint that does not fit the model, one line each; shared by
# `load_checkpoint` and `check_checkpoint_fits`, so both say the same.
_CONFIG_HINT = "is bert_config_file the checkpoint's config?"


def _wrong_shape(flag, checkpoint_path, name, got, want):
    return UserError(
        "%s: variable %s has shape %s in the checkpoint but %s in the model (%s)"
        % (_where(flag, checkpoint_path), name, list(got), list(want),
           "is num_labels the checkpoint's number of labels?"
           if name in UNSCOPED_HEAD_VARIABLES else _CONFIG_HINT))


def _and_more(names):
    return "" if len(names) == 1 else " (and %d more)" % (len(names) - 1)


def _missing(flag, checkpoint_path, names, shape, hint=None):
    return UserError(
        "%s: variable %s (shape %s) is missing from the checkpoint%s%s"
        % (_where(flag, checkpoint_path), names[0], list(shape), _and_more(names),
           " (%s)" % hint if hint else ""))


# The pre-training heads, and the checkpoints that hold them.
_PRETRAINING_HEADS = collections.OrderedDict([
    ("cls/predictions/", ("masked-LM head", "Google's released checkpoints, a run_pretraining "
                          "output_dir, a Hugging Face BertForPreTraining or BertForMaskedLM "
                          "directory")),
    ("cls/seq_relationship/", ("next-sentence head", "Google's released checkpoints, a "
                               "run_pretraining output_dir, a Hugging Face BertForPreTraining "
                               "directory")),
])


def _missing_heads(flag, checkpoint_path, missing, model_vars):
    """The error for a checkpoint without whole pre-training heads of the model; else None.

    An encoder-only checkpoint (a fine-tuned run's, a Hugging Face BertModel)
    has no `cls/*`: the message names the head and the checkpoints that have
    it, not its first variable.
    """
    scopes = [s for s in _PRETRAINING_HEADS if any(n.startswith(s) for n in missing)]
    if not scopes or not all(n.startswith(tuple(scopes)) for n in missing):
        return None
    if any(n.startswith(tuple(scopes)) and n not in missing for n in model_vars):
        return None  # part of a head is there: the variable is named as usual
    heads = ["no %s (%s*)" % (_PRETRAINING_HEADS[s][0], s) for s in scopes]
    return UserError("%s: the checkpoint has %s, which the model needs; %s in %s"
                     % (_where(flag, checkpoint_path), " and ".join(heads),
                        "they are" if len(heads) > 1 else "it is",
                        _PRETRAINING_HEADS[scopes[0]][1]))


def _unexpected(flag, checkpoint_path, names, shape, hint=None):
    return UserError(
        "%s: checkpoint variable %s (shape %s) has no place in the model%s%s"
        % (_where(flag, checkpoint_path), names[0], list(shape), _and_more(names),
           " (%s)" % hint if hint else ""))


def tf1_name(variable):
    """The TF1 checkpoint name of a Keras variable (or of a path string).

    `bert/encoder/layer_0/attention/self/query/kernel` stays as is;
    `pretrainer/cls/predictions/output_bias` becomes `cls/predictions/output_bias`;
    `classifier/output_weights` becomes `output_weights` (the original's
    classifier head is unscoped). A `tf.Variable` (e.g. of a loaded TF Hub
    SavedModel) has no `path`: its `name` without the ":0" is used.
    """
    path = variable if isinstance(variable, str) else getattr(variable, "path", None)
    if path is None:
        path = variable.name
    path = re.sub(r":\d+$", "", path)
    parts = path.split("/")
    for i, part in enumerate(parts):
        if part in _ROOTS:
            return "/".join(parts[i:])
    if parts[-1] in UNSCOPED_HEAD_VARIABLES and len(parts) >= 2 and parts[-2] == "classifier":
        return parts[-1]
    return path


def _collect_variables(target):
    """Flattens models, layers and variables into an ordered {tf1_name: variable}."""
    if target is None:
        return collections.OrderedDict()
    items = target if isinstance(target, (list, tuple)) else [target]
    result = collections.OrderedDict()
    for item in items:
        variables = item.weights if hasattr(item, "weights") else [item]
        for v in variables:
            name = tf1_name(v)
            if name in result and result[name] is not v:
                raise ValueError("two variables map to the checkpoint name %s" % name)
            result[name] = v
    return result


def resolve_checkpoint(path, flag="init_checkpoint"):
    """Turns a checkpoint prefix or a directory into a readable prefix.

    A directory gives its latest checkpoint: the one its `checkpoint` state
    file names, else its highest `model.ckpt-N`, else (a Google release
    directory) `<dir>/bert_model.ckpt`. It is never an older one in place of
    the newest (resuming from an older readable checkpoint is
    `bert_tf.training.output_dir.Checkpoints.restore`'s, not a user's
    `--init_checkpoint`'s).

    Raises `UserError` naming `flag` (or, with `flag=None`, the path alone)
    if nothing is there; `UnreadableCheckpointError` if the state file names a
    checkpoint whose index is gone while older checkpoints are there.
    """
    if not path:
        raise UserError("--%s is empty" % flag if flag else "the checkpoint path is empty")
    path = os.fspath(path)
    if path.endswith(".safetensors") and os.path.isfile(path):
        path = os.path.dirname(path) or "."  # a Hugging Face directory's weights file
    if huggingface.is_hf_directory(path):
        try:
            huggingface.weights_files(path)
        except UserError as e:
            raise UserError("%s: %s" % (_where(flag, path), e)) if flag else e
        return path
    if tf.io.gfile.isdir(path):
        named = _state_file_newest(path)
        if named and tf.io.gfile.exists(named + ".index"):
            return named
        steps = []
        for index in tf.io.gfile.glob(os.path.join(path, "model.ckpt-*.index")):
            match = re.match(r"^model\.ckpt-(\d+)\.index$", os.path.basename(index))
            if match:
                steps.append(int(match.group(1)))
        if named and steps:
            # The newest's index is gone: the highest model.ckpt-N left would
            # be an older checkpoint, taken silently.
            raise UnreadableCheckpointError(
                _where(flag, path), named,
                "its `checkpoint` file names %s, whose .index file is missing (a copy cut "
                "short?); name an older model.ckpt-N to use it" % named)
        if steps:
            return os.path.join(path, "model.ckpt-%d" % max(steps))
        release = os.path.join(path, RELEASE_CHECKPOINT)
        if tf.io.gfile.exists(release + ".index"):
            return release
        raise UserError("%s: the directory holds no checkpoint (no `checkpoint` file, "
                        "model.ckpt-N or %s.index)" % (_where(flag, path), RELEASE_CHECKPOINT))
    if not tf.io.gfile.exists(path + ".index"):
        raise UnreadableCheckpointError(_where(flag, path), path,
                                        "no checkpoint there (expected %s.index)" % path)
    return path


def _state_file_newest(directory):
    """The newest checkpoint prefix `directory/checkpoint` names; None without a readable one."""
    if not tf.io.gfile.exists(os.path.join(directory, "checkpoint")):
        return None
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (ValueError, tf.errors.OpError):  # an empty or garbled state file
        return None
    return state.model_checkpoint_path if state and state.model_checkpoint_path else None


def open_checkpoint(checkpoint_path, flag="init_checkpoint"):
    """Opens a checkpoint prefix: its reader and `{name: shape}` (from the index alone).

    Raises:
      UnreadableCheckpointError: the index is unreadable (corrupt, truncated,
        not a checkpoint), naming `flag` and the path.
    """
    if huggingface.is_hf_directory(checkpoint_path):
        try:
            reader = huggingface.SafetensorsReader(checkpoint_path)
        except huggingface.UnreadableWeightsError as e:
            raise UnreadableCheckpointError(_where(flag, checkpoint_path), checkpoint_path,
                                            e.reason)
        return reader, reader.get_variable_to_shape_map()
    try:
        reader = tf.train.load_checkpoint(checkpoint_path)
        shapes = reader.get_variable_to_shape_map()
    except _READ_ERRORS as e:
        raise UnreadableCheckpointError(
            _where(flag, checkpoint_path), checkpoint_path,
            "%s.index is not a readable checkpoint index (corrupt, truncated or not a "
            "checkpoint: %s)" % (checkpoint_path, _first_line(e)))
    return reader, shapes


def _missing_data_files(checkpoint_path):
    """The data shards (`<prefix>.data-0000i-of-0000n`) that are not there."""
    present = tf.io.gfile.glob(checkpoint_path + ".data-*-of-*")
    counts = set()
    for name in present:
        match = re.search(r"\.data-\d+-of-(\d+)$", name)
        if match:
            counts.add(int(match.group(1)))
    if not counts:
        return [checkpoint_path + ".data-*"]
    present = set(present)
    return sorted(name for n in counts for name in
                  ("%s.data-%05d-of-%05d" % (checkpoint_path, i, n) for i in range(n))
                  if name not in present)


def check_checkpoint_files(checkpoint_path, flag="init_checkpoint"):
    """Raises if a checkpoint's files are plainly unreadable: what shows without reading values.

    Its index must be there and open, and its data shards must be there. A data
    file cut short or corrupt shows only when its values are read (`read_tensors`).

    Raises:
      UnreadableCheckpointError: naming `flag`, the path and what is wrong.
    """
    resolve_checkpoint(checkpoint_path, flag)
    open_checkpoint(checkpoint_path, flag)
    if huggingface.is_hf_directory(checkpoint_path):
        return  # every shard is checked by open_checkpoint
    missing = _missing_data_files(checkpoint_path)
    if missing:
        raise UnreadableCheckpointError(
            _where(flag, checkpoint_path), checkpoint_path,
            "the checkpoint's data file %s is missing%s"
            % (missing[0], "" if len(missing) == 1 else " (and %d more)" % (len(missing) - 1)))


def read_tensors(reader, names, checkpoint_path, flag="init_checkpoint"):
    """{name: numpy value} of `names`, every one read before the caller assigns any.

    TensorFlow opens a checkpoint from its index alone; a data file that is
    missing, cut short or corrupt shows only when a value is read.

    Raises:
      UnreadableCheckpointError: naming `flag`, the path, and the missing data
        file or the variable whose bytes are unreadable.
    """
    values = collections.OrderedDict()
    for name in names:
        try:
            values[name] = np.asarray(reader.get_tensor(name))
        except huggingface.UnreadableWeightsError as e:
            raise UnreadableCheckpointError(_where(flag, checkpoint_path), checkpoint_path,
                                            "%s (nothing was loaded)" % e.reason)
        except _READ_ERRORS as e:
            missing = _missing_data_files(checkpoint_path)
            if missing:
                raise UnreadableCheckpointError(
                    _where(flag, checkpoint_path), checkpoint_path,
                    "the checkpoint's data file %s is missing%s (nothing was loaded)"
                    % (missing[0], "" if len(missing) == 1 else
                       " (and %d more)" % (len(missing) - 1)))
            raise UnreadableCheckpointError(
                _where(flag, checkpoint_path), checkpoint_path,
                "variable %s cannot be read: the checkpoint's data file is truncated or "
                "corrupt (%s; nothing was loaded)" % (name, _first_line(e)))
    return values


def list_checkpoint_variables(checkpoint_path, flag="init_checkpoint"):
    """{name: shape} of every variable in a checkpoint, sorted by name.

    Raises:
      UserError: the checkpoint's index is unreadable (see `open_checkpoint`).
    """
    _, shapes = open_checkpoint(checkpoint_path, flag)
    return collections.OrderedDict((name, tuple(shapes[name])) for name in sorted(shapes))


def is_optimizer_variable(name):
    return name == GLOBAL_STEP or name.endswith(OPTIMIZER_SLOT_SUFFIXES)


def is_head_variable(name):
    return name.startswith("cls/") or name in UNSCOPED_HEAD_VARIABLES


def head_of(name):
    """The head (one of `HEADS`) a TF1 variable name belongs to, or None (the backbone)."""
    if name in UNSCOPED_HEAD_VARIABLES:
        return "classifier"
    if name.startswith(SQUAD_HEAD_SCOPE):
        return "squad"
    if name.startswith(PRETRAINING_HEAD_SCOPES):
        return "pretraining"
    return None


def classifier_num_labels(shapes):
    """The number of labels of the classifier head in `{name: shape}`, or None without one."""
    shape = shapes.get(UNSCOPED_HEAD_VARIABLES[0])
    return None if shape is None else int(shape[0])


class LoadReport(
        collections.namedtuple("LoadReport", ["loaded", "unused_heads", "skipped_optimizer",
                                              "uninitialized", "global_step"])):
    """What `load_checkpoint` did.

    Attributes:
      loaded: checkpoint names assigned to a model variable.
      unused_heads: head variables in the checkpoint the target does not have.
      skipped_optimizer: optimizer state not restored (no optimizer given).
      uninitialized: target variables the checkpoint lacks (non-strict loads, and
        heads that `allow_missing_heads` let start from their initializer).
      global_step: the checkpoint's `global_step`, or None.
    """


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
    """The original's helper: which of `tvars` the checkpoint can initialize.

    Returns:
      (assignment_map, initialized_variable_names): `{name: name}` for every
      variable present in both, and `{name: 1, name + ":0": 1}`.
    """
    name_to_variable = _collect_variables(list(tvars))
    assignment_map = collections.OrderedDict()
    initialized_variable_names = {}
    for name in list_checkpoint_variables(init_checkpoint):
        if name not in name_to_variable:
            continue
        assignment_map[name] = name
        initialized_variable_names[name] = 1
        initialized_variable_names[name + ":0"] = 1
    return assignment_map, initialized_variable_names


def load_checkpoint(target, checkpoint_path, strict=True, optimizer=None,
                    flag="init_checkpoint", allow_missing_heads=False):
    """Loads a Google-format checkpoint into Keras variables by TF1 name.

    Args:
      target: a `BertModel`, a layer (e.g. `BertPretrainingHeads`), a list of
        them, or a list of variables.
      checkpoint_path: checkpoint prefix (`.../bert_model.ckpt`) or a directory
        (its latest checkpoint, or a release directory's `bert_model.ckpt`).
      strict: if True (for loading a released model), every target variable
        must be in the checkpoint, and the checkpoint may hold nothing but the
        target's variables, known heads and optimizer state. If False (the
        original's `init_checkpoint` semantics), variables present in both are
        loaded and the rest keep their initial values.
      optimizer: an optimizer with `get_slot_variables(variable)` returning
        `{"adam_m": ..., "adam_v": ...}`; when given, the slots are restored
        too (each must be present).
      flag: the flag name used in error messages (None: name the path alone).
      allow_missing_heads: with `strict`, the target's head variables (`cls/*`,
        `output_weights`/`output_bias`) may be absent from the checkpoint, all
        of them together: they keep their initial values and are listed in the
        report's `uninitialized` (a task head fine-tuned from a released
        model). A head that is in the checkpoint is loaded; one that is partly
        there is still an error.

    Returns:
      A `LoadReport`.

    Raises:
      UserError: a missing, unexpected or wrong-shaped variable, named with
        both shapes (the checkpoint does not fit); `UnreadableCheckpointError`
        for unreadable checkpoint files. Nothing is assigned then.
    """
    checkpoint_path = resolve_checkpoint(checkpoint_path, flag)
    reader, ckpt_shapes = open_checkpoint(checkpoint_path, flag)
    model_vars = _collect_variables(target)

    # Shapes first, so nothing is assigned when anything is wrong.
    missing = []
    for name, variable in model_vars.items():
        if name not in ckpt_shapes:
            missing.append(name)
            continue
        want = tuple(variable.shape)
        got = tuple(ckpt_shapes[name])
        if want != got:
            raise _wrong_shape(flag, checkpoint_path, name, got, want)
    absent_by_design = _absent_by_design(reader, missing, checkpoint_path)
    missing = [n for n in missing if n not in absent_by_design]
    absent_heads = []
    heads = [n for n in model_vars if is_head_variable(n)]
    if strict and allow_missing_heads and heads and all(n in missing for n in heads):
        # A task head fine-tuned from a model without it starts from its initializer.
        absent_heads = heads
        missing = [n for n in missing if n not in absent_heads]
    if missing and strict:
        raise (_missing_heads(flag, checkpoint_path, missing, model_vars)
               or _missing(flag, checkpoint_path, missing, model_vars[missing[0]].shape))
    missing = missing + absent_heads + absent_by_design

    unused_heads, skipped_optimizer, unexpected = [], [], []
    for name in sorted(ckpt_shapes):
        if name in model_vars:
            continue
        if is_optimizer_variable(name):
            skipped_optimizer.append(name)
        elif is_head_variable(name):
            unused_heads.append(name)
        else:
            unexpected.append(name)
    if unexpected and strict:
        raise _unexpected(flag, checkpoint_path, unexpected, ckpt_shapes[unexpected[0]])

    slot_assignments = []
    if optimizer is not None:
        # The original's AdamWeightDecayOptimizer makes slots only for the
        # variables that get a gradient (run_squad's loss never reaches the
        # pooler): in a checkpoint that holds slots, a missing one stays at
        # its initial zeros, as the original's would. A checkpoint without any
        # slot cannot resume a run.
        has_slots = any(n.endswith(OPTIMIZER_SLOT_SUFFIXES) for n in ckpt_shapes)
        zero_slots = []
        for name, variable in model_vars.items():
            slots = optimizer.get_slot_variables(variable) if variable.trainable else None
            if not slots or name in absent_heads:
                continue
            for slot_name, slot in slots.items():
                key = "%s/%s" % (name, slot_name)
                if key not in ckpt_shapes:
                    if not has_slots:
                        raise UserError("%s: optimizer slot %s is missing from the "
                                        "checkpoint (it holds no optimizer state)"
                                        % (_where(flag, checkpoint_path), key))
                    zero_slots.append(key)
                    continue
                slot_assignments.append((key, slot))
        if zero_slots:
            logging.info("%d optimizer slot(s) not in %s start at zero (variables the original "
                         "updated without a gradient): %s", len(zero_slots), checkpoint_path,
                         _summarize(zero_slots))
        restored = set(k for k, _ in slot_assignments)
        skipped_optimizer = [n for n in skipped_optimizer if n not in restored and n != GLOBAL_STEP]

    # Every value is read before any is assigned: a data file that is cut
    # short or corrupt fails here, with the model still as it was.
    loaded = [name for name in model_vars if name in ckpt_shapes]
    values = read_tensors(
        reader, loaded + [key for key, _ in slot_assignments]
        + ([GLOBAL_STEP] if GLOBAL_STEP in ckpt_shapes else []), checkpoint_path, flag)
    for name in loaded:
        variable = model_vars[name]
        if variable.dtype in ("bfloat16", "float16"):  # an inference model's kernels
            variable.assign(tf.cast(values[name], variable.dtype))
        else:
            # np.dtype of a Keras dtype string, or of a tf.Variable's tf.DType.
            variable.assign(values[name].astype(
                getattr(variable.dtype, "as_numpy_dtype", variable.dtype)))
    for key, slot in slot_assignments:
        slot.assign(values[key].astype(slot.dtype))

    global_step = None
    if GLOBAL_STEP in ckpt_shapes:
        global_step = int(values[GLOBAL_STEP])
    report = LoadReport(loaded, unused_heads, skipped_optimizer, missing, global_step)
    logging.info("Loaded %d variables from %s", len(loaded), checkpoint_path)
    if unused_heads:
        logging.info("Checkpoint heads not in the model (not loaded): %s",
                     _summarize(unused_heads))
    if skipped_optimizer:
        logging.info("Optimizer state not restored: %d variables (%s)", len(skipped_optimizer),
                     _summarize(skipped_optimizer))
    if missing:
        logging.info("Model variables not in the checkpoint (kept their initial values): %s",
                     ", ".join(missing))
    return report


def _absent_by_design(reader, missing, checkpoint_path, log=True):
    """The names of `missing` that the reader's architecture does not save (HF's MaskedLM pooler)."""
    scopes = getattr(reader, "absent_by_design", ())
    absent = [n for n in missing if n.startswith(tuple(scopes))] if scopes else []
    if absent and log:
        logging.warning("%s (%s) has no %s: %s start(s) from the initializer", checkpoint_path,
                        reader.architecture, " or ".join(s.rstrip("/") for s in scopes),
                        _summarize(absent))
    return absent


def _summarize(names, limit=4):
    if len(names) <= limit:
        return ", ".join(names)
    return "%s, ... (%d in all)" % (", ".join(names[:limit]), len(names))


def write_checkpoint(checkpoint_prefix, name_to_value, update_state=True):
    """Writes `{tf1_name: tensor or variable}` as a TF1 checkpoint, atomically.

    The files (`<prefix>.index`, `<prefix>.data-00000-of-00001`) are written
    under a temporary prefix and renamed, index last, so a crash never leaves a
    half-written checkpoint under the real name. With `update_state`, the
    directory's `checkpoint` file then points at the new checkpoint (written
    atomically, `write_checkpoint_state`), keeping older entries listed.

    Raises:
      UserError: a write found no room (a full disk): one line naming
        `checkpoint_prefix` and the OS's words. The temporary files are removed;
        the previous checkpoints and the `checkpoint` file are as they were.
    """
    directory = os.path.dirname(checkpoint_prefix) or "."
    tf.io.gfile.makedirs(directory)
    names = list(name_to_value)
    tensors = [tf.convert_to_tensor(name_to_value[n]) for n in names]
    tmp_prefix = fileio.temporary_name(checkpoint_prefix)
    data_suffix = ".data-00000-of-00001"
    try:
        tf.raw_ops.SaveV2(prefix=tmp_prefix, tensor_names=names,
                          shape_and_slices=[""] * len(names), tensors=tensors)
        tf.io.gfile.rename(tmp_prefix + data_suffix, checkpoint_prefix + data_suffix,
                           overwrite=True)
        tf.io.gfile.rename(tmp_prefix + ".index", checkpoint_prefix + ".index", overwrite=True)
    except Exception as e:  # pylint: disable=broad-except
        # SaveV2 removes its own `.tempstate` file, but a failure after the data
        # file is finished (writing the index, renaming) leaves the temporary
        # prefix's files: remove them. The previous checkpoint and the
        # `checkpoint` state file are untouched.
        for name in (tmp_prefix + data_suffix, tmp_prefix + ".index"):
            fileio.remove_quietly(name)
        failure = fileio.no_room_error(checkpoint_prefix, e)
        if failure is None:
            raise
        raise failure from e
    if update_state:
        state = tf.train.get_checkpoint_state(directory)
        previous = list(state.all_model_checkpoint_paths) if state else []
        previous = [p for p in previous if p != checkpoint_prefix
                    and os.path.basename(p) != os.path.basename(checkpoint_prefix)]
        write_checkpoint_state(directory, [os.path.basename(p) for p in previous]
                               + [os.path.basename(checkpoint_prefix)])
    return checkpoint_prefix


def write_checkpoint_state(directory, checkpoint_names):
    """Writes the directory's `checkpoint` file (the last name is the latest), atomically.

    The same text proto `tf.train.Saver` writes, so `tf.train.latest_checkpoint`
    and the original code find the checkpoints.
    """
    from google.protobuf import text_format
    # TF makes the paths relative to a relative `directory` (from the working
    # directory): pass them joined to it, so the file holds bare names.
    if not os.path.isabs(directory):
        checkpoint_names = [os.path.join(directory, n) for n in checkpoint_names]
    state = tf.compat.v1.train.generate_checkpoint_state_proto(
        directory, checkpoint_names[-1], all_model_checkpoint_paths=list(checkpoint_names))
    fileio.write_text(os.path.join(directory, "checkpoint"), text_format.MessageToString(state))


def save_checkpoint(target, checkpoint_prefix, optimizer=None, global_step=None,
                    update_state=True):
    """Saves Keras variables in Google's checkpoint format and names.

    Args:
      target: as in `load_checkpoint`.
      checkpoint_prefix: e.g. `output_dir/model.ckpt-1000` or `.../bert_model.ckpt`.
      optimizer: when given, its slots are saved as `<var>/adam_m`, `<var>/adam_v`.
      global_step: when not None, saved as int64 `global_step`.

    Returns:
      `checkpoint_prefix`. The original code's `tf.train.Saver` restores it.
    """
    model_vars = _collect_variables(target)
    values = collections.OrderedDict()
    for name, variable in model_vars.items():
        values[name] = variable
    if optimizer is not None:
        for name, variable in model_vars.items():
            slots = optimizer.get_slot_variables(variable) if variable.trainable else None
            for slot_name, slot in (slots or {}).items():
                values["%s/%s" % (name, slot_name)] = slot
    if global_step is not None:
        values[GLOBAL_STEP] = tf.constant(int(global_step), dtype=tf.int64)
    return write_checkpoint(checkpoint_prefix, values, update_state=update_state)


def read_checkpoint(checkpoint_path, flag="init_checkpoint"):
    """{name: numpy array} of every variable in a checkpoint, sorted by name.

    Raises:
      UserError: unreadable checkpoint files (see `open_checkpoint`, `read_tensors`).
    """
    reader, shapes = open_checkpoint(checkpoint_path, flag)
    return read_tensors(reader, sorted(shapes), checkpoint_path, flag)


def expected_tf1_variables(config, heads=False, head=None, num_labels=None):
    """{name: shape} of the variables the original graph creates for `config`.

    Written from the original's scopes (not from our layers), so it can check
    them. With `heads`, the pre-training heads `cls/*` are included; `head`
    adds one head of `HEADS` ("classifier" needs `num_labels`). A layer with
    pruned heads (`config.pruned_heads`) has their query, key and value
    columns and their `attention/output/dense/kernel` rows removed: [D, n*H],
    [n*H] and [n*H, D] for its n kept heads of size H.
    """
    d, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    size_per_head = d // config.num_attention_heads
    pruned_heads = getattr(config, "pruned_heads", None) or {}
    names = collections.OrderedDict()
    names["bert/embeddings/word_embeddings"] = (v, d)
    names["bert/embeddings/token_type_embeddings"] = (config.type_vocab_size, d)
    names["bert/embeddings/position_embeddings"] = (config.max_position_embeddings, d)
    names["bert/embeddings/LayerNorm/beta"] = (d,)
    names["bert/embeddings/LayerNorm/gamma"] = (d,)
    for layer in range(config.num_hidden_layers):
        prefix = "bert/encoder/layer_%d/" % layer
        a = d - size_per_head * len(pruned_heads.get(layer, ()))  # the kept heads' width
        for proj in ("query", "key", "value"):
            names[prefix + "attention/self/%s/kernel" % proj] = (d, a)
            names[prefix + "attention/self/%s/bias" % proj] = (a,)
        names[prefix + "attention/output/dense/kernel"] = (a, d)
        names[prefix + "attention/output/dense/bias"] = (d,)
        names[prefix + "attention/output/LayerNorm/beta"] = (d,)
        names[prefix + "attention/output/LayerNorm/gamma"] = (d,)
        names[prefix + "intermediate/dense/kernel"] = (d, i)
        names[prefix + "intermediate/dense/bias"] = (i,)
        names[prefix + "output/dense/kernel"] = (i, d)
        names[prefix + "output/dense/bias"] = (d,)
        names[prefix + "output/LayerNorm/beta"] = (d,)
        names[prefix + "output/LayerNorm/gamma"] = (d,)
    names["bert/pooler/dense/kernel"] = (d, d)
    names["bert/pooler/dense/bias"] = (d,)
    if head == "classifier":
        names["output_weights"] = (num_labels, d)
        names["output_bias"] = (num_labels,)
    elif head == "squad":
        names["cls/squad/output_weights"] = (2, d)
        names["cls/squad/output_bias"] = (2,)
    elif head not in (None, "pretraining"):
        raise ValueError("head=%r: not one of %s" % (head, HEADS))
    if heads or head == "pretraining":
        names["cls/predictions/transform/dense/kernel"] = (d, d)
        names["cls/predictions/transform/dense/bias"] = (d,)
        names["cls/predictions/transform/LayerNorm/beta"] = (d,)
        names["cls/predictions/transform/LayerNorm/gamma"] = (d,)
        names["cls/predictions/output_bias"] = (v,)
        names["cls/seq_relationship/output_weights"] = (2, d)
        names["cls/seq_relationship/output_bias"] = (2,)
    return names


def check_checkpoint_fits(config, checkpoint_path, flag="init_checkpoint", head=None,
                          num_labels=None, strict=True):
    """Raises `load_checkpoint`'s one-line `UserError` if the checkpoint cannot start the model.

    Reads the checkpoint's index alone (names and shapes, no values: cheap
    even for BERT-Large), so a run can refuse a `bert_config_file` that is
    not the checkpoint's before it writes anything. The rule is the one the
    run's own load applies later:

      * every variable both have (backbone and `head`) has the same shape,
        and they share at least one backbone variable (both loads);
      * `strict` (a resume, or a strict `load_checkpoint`): the backbone
        (`bert/*`) is the config's, no variable more or less (another
        num_hidden_layers shows here). Without it (`--init_checkpoint`, the
        original's `init_from_checkpoint`) a backbone variable the checkpoint
        lacks starts from its initializer, and one the model lacks is not read;
      * a head of the model that the checkpoint lacks is fine (it starts from
        its initializer), and so are the checkpoint's other heads and its
        optimizer state.

    Args:
      config: `BertConfig`.
      checkpoint_path: a prefix or a directory (as `load_checkpoint` takes).
      flag: the flag named in errors (None: the path alone).
      head: the model's head, one of `HEADS`, or None (the backbone alone).
      num_labels: the classifier head's number of labels (`head="classifier"`).
      strict: whether the backbone must be the checkpoint's, variable for variable.

    Returns:
      The checkpoint prefix (a directory resolved to its checkpoint).

    Raises:
      UserError: naming `flag`, the checkpoint and the first variable at fault
        with both shapes; an unreadable or absent checkpoint.
    """
    checkpoint_path = resolve_checkpoint(checkpoint_path, flag)
    reader, ckpt_shapes = open_checkpoint(checkpoint_path, flag)
    expected = expected_tf1_variables(config, head=head, num_labels=num_labels)
    absent = _absent_by_design(reader, [n for n in expected if n not in ckpt_shapes],
                               checkpoint_path, log=False)
    ckpt_shapes = dict(ckpt_shapes, **{n: expected[n] for n in absent})
    for name, want in expected.items():
        if name in ckpt_shapes and tuple(ckpt_shapes[name]) != tuple(want):
            raise _wrong_shape(flag, checkpoint_path, name, ckpt_shapes[name], want)
    missing = [name for name in expected if head_of(name) is None and name not in ckpt_shapes]
    if missing and all(name in missing for name in expected if head_of(name) is None):
        # The trainer's words for a checkpoint that initializes nothing.
        raise UserError("%s shares no variable with the model (another architecture, or not a "
                        "BERT checkpoint?)" % _where(flag, checkpoint_path))
    if not strict:
        return checkpoint_path
    if missing:
        raise _missing(flag, checkpoint_path, missing, expected[missing[0]], _CONFIG_HINT)
    unexpected = [name for name in sorted(ckpt_shapes)
                  if name.startswith(_ROOTS[0] + "/") and not is_optimizer_variable(name)
                  and name not in expected]
    if unexpected:
        raise _unexpected(flag, checkpoint_path, unexpected, ckpt_shapes[unexpected[0]],
                          _CONFIG_HINT)
    return checkpoint_path


# The formats `save_pretrained` writes.
SAVE_FORMATS = ("google", "huggingface")


def save_pretrained(target, directory, config, format="google", vocab_file=None,  # pylint: disable=redefined-builtin
                    do_lower_case=None, overwrite=False):
    """Writes a model as a directory that `from_pretrained` (and the original or HF) reads back.

    Args:
      target: a `BertModel` or a task model (its variables, heads included).
      directory: the directory to write; it must not exist or be empty unless
        `overwrite`. Everything is written under `<directory>.tmp-<pid>` and
        renamed: nothing half-written is left under the name on a failure.
      config: the model's `BertConfig`.
      format: "google" (the default): `bert_config.json`, `vocab.txt` and
        `bert_model.ckpt.{index,data-00000-of-00001}`, as Google's releases
        (the original code restores it; casing is in no file of that format);
        "huggingface": `config.json`, `model.safetensors` (torch layout, the
        `"format": "pt"` metadata), `vocab.txt`, `tokenizer_config.json`,
        `special_tokens_map.json`, config.json naming the model's own
        Hugging Face class (its `hf_architecture`: `BertModel`,
        `BertForPreTraining`, `BertForSequenceClassification`,
        `BertForQuestionAnswering`, `BertForMultipleChoice`,
        `BertForTokenClassification`) and its labels.
      vocab_file: the vocabulary to write (a vocab.txt, or a Hugging Face
        directory); None: the one the model was loaded with by
        `from_pretrained`.
      do_lower_case: the casing for tokenizer_config.json; None: the one
        `from_pretrained` used, else True.
      overwrite: replace a non-empty `directory`.

    Returns:
      `directory`.

    Raises:
      UserError: one line: an unknown format, no vocab, a vocab that does
        not fit the config, a non-empty directory, an activation Hugging Face
        has no name for, a full disk.
    """
    from bert_tf.tokenization import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
    if format not in SAVE_FORMATS:
        raise UserError("format=%r: one of %s" % (format, ", ".join(SAVE_FORMATS)))
    vocab_file = vocab_file or getattr(target, "vocab_file", None)
    if not vocab_file:
        raise UserError("save_pretrained(%s): pass vocab_file= (the model's vocab.txt): this "
                        "model was not loaded by from_pretrained" % directory)
    if do_lower_case is None:
        do_lower_case = getattr(target, "do_lower_case", True)
    vocab_lib.check_vocab(vocab_file, config)
    tokens = list(vocab_lib.load_vocab(vocab_file))
    model_vars = _collect_variables(target)
    values = collections.OrderedDict(
        (name, np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable))
        for name, variable in model_vars.items())
    return write_pretrained_directory(directory, values, config, tokens, do_lower_case,
                                      format=format, overwrite=overwrite,
                                      architecture=getattr(target, "hf_architecture", None),
                                      labels=getattr(target, "labels", None))


def write_pretrained_directory(directory, values, config, tokens, do_lower_case,
                               format="google", overwrite=False, architecture=None,  # pylint: disable=redefined-builtin
                               labels=None):
    """Writes {TF1 name: np.ndarray} with its config and vocab as a directory (see `save_pretrained`).

    Args:
      values: {TF1 name: np.ndarray}: the backbone and at most one head.
      config: `BertConfig`.
      tokens: the vocab, in id order.
      do_lower_case: the casing (written by the "huggingface" format only).
      format, overwrite: as `save_pretrained`.
      architecture, labels: the "huggingface" format's config.json: the
        model's class (`hf_architecture`; None: by the head's names) and its
        labels (`id2label`).
    """
    if format not in SAVE_FORMATS:
        raise UserError("format=%r: one of %s" % (format, ", ".join(SAVE_FORMATS)))
    if format == "huggingface":
        return huggingface.write_directory(directory, values, config.to_dict(), tokens,
                                           do_lower_case, overwrite=overwrite,
                                           architecture=architecture, labels=labels)

    def write(staging):
        config.to_json_file(os.path.join(staging, "bert_config.json"))
        fileio.write_text(os.path.join(staging, "vocab.txt"),
                          "".join(token + "\n" for token in tokens))
        write_checkpoint(os.path.join(staging, RELEASE_CHECKPOINT), values, update_state=False)

    huggingface.write_new_directory(directory, write, overwrite)
    logging.info("Wrote %s (Google's format, %d variables)", directory, len(values))
    return directory
