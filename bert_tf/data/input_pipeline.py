"""tf.data pipeline for the pre-training TFRecords (original: `run_pretraining.input_fn_builder`).

Reads the files `create_pretraining_data` writes, with the original's
semantics (P/G run_pretraining.py:324-403):

* training: the file list is repeated and shuffled (buffer = number of
  files), up to `num_cpu_threads` files are read in parallel and interleaved
  non-deterministically ("sloppy"), then records are shuffled in a buffer of
  100;
* evaluation: the files are read in order, no shuffling, repeated (the
  original evaluates a fixed number of steps);
* both: batches of `batch_size` with `drop_remainder=True`, every int64
  feature cast to int32 (`masked_lm_weights` stays float32,
  `next_sentence_labels` keeps shape [batch_size, 1]).

Beyond the original, for tf.distribute:

* `input_context` (from `Strategy.distribute_datasets_from_function`) shards
  the data by `input_context.input_pipeline_id`: whole files when there are at
  least as many files as input pipelines, otherwise every pipeline reads the
  files in order and keeps every `num_input_pipelines`-th record;
* the batch is parsed with one vectorized `tf.io.parse_example` (same values
  as the original's per-record parse, fewer ops), and `prefetch(AUTOTUNE)`
  overlaps input with the model step;
* the first records of every file are checked eagerly (`check_records`), so
  a file written with another `max_seq_length`/`max_predictions_per_seq`,
  without a feature, or with ids the model cannot embed, stops at once with
  an error that names the file, the feature and both lengths (instead of a
  parse error deep inside the training loop);
* every record read is checked too, inside the tf.data pipeline (on the
  host, so the same on CPU, GPU and TPU): each record is parsed with its
  name, `<<file record N>>` (N counts from 0 within the file), and its
  integer features must lie in the ranges `record_limits` gives (token ids
  below `vocab_size`, segment ids below `type_vocab_size`, masked positions
  below `max_seq_length`, masks and labels 0 or 1). A bad record fails the
  iterator with an `InvalidArgumentError` carrying that name;
  `bad_record_error` turns it into a one-line `UserError` naming the file and
  the record (`Trainer` does, around its loops). The check costs a few
  microseconds of host CPU per record (`bench/input_check_bench.py`).

Fine-tuning data (run_classifier, run_squad) goes through the same functions:
`create_finetuning_dataset` for training and `finite_records_input` for
evaluation and prediction (every example once, see `FiniteInput`).
"""

import contextlib
import re

import tensorflow as tf

from bert_tf import fileio
from bert_tf.errors import UserError

# Name -> (dtype, "seq" | "pred" | 1): the original's `name_to_features`.
_FEATURES = (
    ("input_ids", tf.int64, "seq"),
    ("input_mask", tf.int64, "seq"),
    ("segment_ids", tf.int64, "seq"),
    ("masked_lm_positions", tf.int64, "pred"),
    ("masked_lm_ids", tf.int64, "pred"),
    ("masked_lm_weights", tf.float32, "pred"),
    ("next_sentence_labels", tf.int64, 1),
)


def name_to_features(max_seq_length, max_predictions_per_seq):
    """The original's parsing spec: dict name -> `tf.io.FixedLenFeature`."""
    lengths = {"seq": max_seq_length, "pred": max_predictions_per_seq, 1: 1}
    return {name: tf.io.FixedLenFeature([lengths[kind]], dtype)
            for name, dtype, kind in _FEATURES}


def _flag_of(kind):
    return {"seq": "max_seq_length", "pred": "max_predictions_per_seq", 1: None}[kind]


# The features whose values are ids, positions or flags: each must lie in
# [0, limit), the limit coming from the config, a flag or the feature's meaning.
_VOCAB_IDS = ("input_ids", "masked_lm_ids")
_POSITIONS = ("masked_lm_positions", "start_positions", "end_positions")
_ZERO_OR_ONE = ("input_mask", "next_sentence_labels", "is_real_example")


def record_limits(config=None, max_seq_length=None, num_labels=None):
    """{feature: (limit, limit_name)}: the integer features that must lie in [0, limit).

    Args:
      config: optional `BertConfig`: `input_ids` and `masked_lm_ids` below
        `vocab_size`, `segment_ids` below `type_vocab_size`.
      max_seq_length: optional int: `masked_lm_positions`, `start_positions`
        and `end_positions` below it.
      num_labels: optional int: classifier `label_ids` below it.

    `input_mask`, `next_sentence_labels` and `is_real_example` are always 0 or
    1 (limit_name None). A record spec without a feature simply does not check
    it (see `limits_for`).
    """
    limits = {name: (2, None) for name in _ZERO_OR_ONE}
    if config is not None:
        for name in _VOCAB_IDS:
            limits[name] = (config.vocab_size, "vocab_size")
        limits["segment_ids"] = (config.type_vocab_size, "type_vocab_size")
    if max_seq_length:
        for name in _POSITIONS:
            limits[name] = (max_seq_length, "--max_seq_length")
    if num_labels:
        limits["label_ids"] = (num_labels, "num_labels")
    return limits


def limits_for(name_to_features, limits):
    """The entries of `limits` for the integer features of a parsing spec."""
    return {name: limit for name, limit in limits.items()
            if name in name_to_features and name_to_features[name].dtype == tf.int64}


def _outside(limit, limit_name):
    """How a value breaks its limit: "outside [0, vocab_size=99) of bert_config_file (...)"."""
    if not limit_name:
        return "outside [0, %d)" % limit
    suffix = ""
    if limit_name == "vocab_size":
        suffix = " of bert_config_file (data made with another vocab?)"
    elif limit_name == "type_vocab_size":
        suffix = " of bert_config_file"
    elif limit_name == "num_labels":
        suffix = " (the task's number of labels)"
    return "outside [0, %s=%d)%s" % (limit_name, limit, suffix)


def expand_files(input_files):
    """Expands a list (or comma-separated str) of files and glob patterns (`--input_file`)."""
    return fileio.expand_files(input_files, flag="input_file")


def _first_records(input_file, num_records):
    try:
        records = list(tf.data.TFRecordDataset(input_file).take(num_records)
                       .as_numpy_iterator())
    except (tf.errors.NotFoundError, tf.errors.PermissionDeniedError) as e:
        raise UserError("%s cannot be read: %s" % (input_file, e.message)) from None
    except tf.errors.DataLossError:
        raise UserError("%s is not a TFRecord file (or is corrupt)" % input_file) from None
    if not records:
        raise UserError("%s has no records" % input_file)
    examples = []
    for record in records:
        try:
            examples.append(tf.train.Example.FromString(record).features.feature)
        except Exception:  # pylint: disable=broad-except  (protobuf DecodeError)
            raise UserError("%s: a record is not a tf.train.Example" % input_file) from None
    return examples


def check_records(input_files, features_spec, config=None, id_limits=None, num_records=8,
                  what="pre-training data from create_pretraining_data"):
    """Checks the first records of each file against the model before training starts.

    Port note: new. The original did not check: a file written with another
    `max_seq_length` failed deep inside the training loop, and ids out of
    range failed on CPU and gave silent garbage or NaNs on GPU/TPU (the
    original's README: "NaNs when training on GPU or TPU due to unchecked
    out-of-bounds access").

    Args:
      input_files: list of TFRecord paths (already globbed).
      features_spec: {name: (tf dtype, length, flag or None)}: each feature's
        kind and length, and the flag that sets the length.
      config: optional `BertConfig`: `input_ids`/`masked_lm_ids` must be below
        `vocab_size`, `segment_ids` below `type_vocab_size`.
      id_limits: optional {name: (limit, flag or None)} for other bounded
        features, e.g. {"masked_lm_positions": (128, "--max_seq_length")}
        (see `record_limits`).
      num_records: records checked at the start of each file.
      what: what the files should be, for the error on a missing feature.

    Raises:
      UserError: one line naming the file, the feature and what is wrong.
    """
    limits = dict(id_limits or {})
    if config is not None:
        limits.setdefault("input_ids", (config.vocab_size, "vocab_size"))
        limits.setdefault("masked_lm_ids", (config.vocab_size, "vocab_size"))
        limits.setdefault("segment_ids", (config.type_vocab_size, "type_vocab_size"))
    for input_file in input_files:
        for feature in _first_records(input_file, num_records):
            for name, (dtype, want, flag) in features_spec.items():
                if name not in feature:
                    raise UserError("%s has no feature %r (is it %s?)" % (input_file, name, what))
                kind = feature[name].WhichOneof("kind")
                expected_kind = "float_list" if dtype == tf.float32 else "int64_list"
                if kind != expected_kind:
                    raise UserError("%s: feature %r is a %s, expected a %s"
                                    % (input_file, name, kind, expected_kind))
                values = getattr(feature[name], expected_kind).value
                if len(values) != want:
                    raise UserError(
                        "%s: feature %r has length %d, but %s expects %d%s"
                        % (input_file, name, len(values),
                           "--%s" % flag if flag else "the model", want,
                           " (the file was written with --%s=%d?)" % (flag, len(values))
                           if flag else ""))
                if name in limits and values:
                    limit, limit_name = limits[name]
                    low, high = min(values), max(values)
                    if high >= limit or low < 0:
                        raise UserError("%s: feature %s holds %d, %s"
                                        % (input_file, name, high if high >= limit else low,
                                           _outside(limit, limit_name)))


def check_pretraining_records(input_files, config, max_seq_length, max_predictions_per_seq,
                              num_records=8):
    """`check_records` for pre-training data, and `max_seq_length` against the model.

    Checks each file's first records: every feature of the original's
    `name_to_features` with its length, token ids below `vocab_size`, segment
    ids below `type_vocab_size`, masked positions inside the sequence, masks
    and labels 0 or 1 (`record_limits`). The pipeline checks every record
    again as it reads it (`create_pretraining_dataset`).
    """
    if config is not None and max_seq_length > config.max_position_embeddings:
        raise UserError(
            "--max_seq_length=%d is longer than max_position_embeddings=%d of bert_config_file"
            % (max_seq_length, config.max_position_embeddings))
    lengths = {"seq": max_seq_length, "pred": max_predictions_per_seq, 1: 1}
    spec = {name: (dtype, lengths[kind], _flag_of(kind)) for name, dtype, kind in _FEATURES}
    check_records(input_files, spec, config=config, num_records=num_records,
                  id_limits=record_limits(config, max_seq_length))


# ------------------------------------------------------- every record, checked
#
# Each record travels with the index of its file and its number in the file
# (two int64 scalars: cheaper through shuffle and batch than the file name);
# after batching, `parse_records` parses it under the name `<<file record N>>`
# (a parse error, such as a feature of the wrong length, then names it) and
# `check_values` asserts every bounded feature, on the host, inside tf.data.

_RECORD_NAME_RE = re.compile(r"<<(.+?) record (\d+)>>")
_LENGTH_ERROR_RE = re.compile(
    r"Key: (\S+), Index: \d+\.\s+Number of \w+ values != expected\.\s+"
    r"Values size: (\d+) but output shape: \[(\d+)\]")
_MISSING_ERROR_RE = re.compile(r"Feature: (\S+) \(data type: \w+\) is required but could "
                               r"not be found")
_NOT_AN_EXAMPLE = "Could not parse example input"
_NOT_AN_EXAMPLE_MESSAGE = ("an input record is not a tf.train.Example (a TFRecord file of "
                           "other data?)")
_DATA_LOSS_RE = re.compile(r"(?:corrupted|truncated) record at \d+")
_CHECK_ERROR_RE = re.compile(r": (feature \S+ holds -?\d+, outside .*)\]\s*$")
_LENGTH_FLAGS = {"input_ids": "--max_seq_length", "input_mask": "--max_seq_length",
                 "segment_ids": "--max_seq_length",
                 "masked_lm_positions": "--max_predictions_per_seq",
                 "masked_lm_ids": "--max_predictions_per_seq",
                 "masked_lm_weights": "--max_predictions_per_seq"}


class _Records(object):
    """The records of a list of TFRecord files, as serialized strings."""

    def __init__(self, files):
        self.files = list(files)

    def file_list(self, indexes):
        """A dataset of the files at `indexes`, each as `of_file` takes it."""
        return tf.data.Dataset.from_tensor_slices(tf.constant([self.files[i] for i in indexes]))

    def of_file(self, filename):
        return tf.data.TFRecordDataset(filename)

    def of_files(self, indexes):
        """The records of the files at `indexes`, file after file."""
        return tf.data.TFRecordDataset([self.files[i] for i in indexes])


class _NumberedRecords(_Records):
    """The records as (serialized, file index, number in the file from 0)."""

    def __init__(self, files):
        super(_NumberedRecords, self).__init__(files)
        self._names = tf.constant(self.files)

    def file_list(self, indexes):
        return tf.data.Dataset.from_tensor_slices(tf.constant(list(indexes), tf.int64))

    def of_file(self, index):
        """The records of file `index` (a scalar int64 Tensor), numbered."""
        return (tf.data.TFRecordDataset(tf.gather(self._names, index)).enumerate()
                .map(lambda number, serialized: (serialized, index, number)))

    def of_files(self, indexes):
        return self.file_list(indexes).flat_map(self.of_file)

    def names(self, indexes, numbers):
        """`<<file record N>>` of each record: the name it is parsed and checked under."""
        return record_names(tf.gather(self._names, indexes), numbers)


def record_names(filenames, numbers):
    """`<<file record N>>`: the name a record is parsed and checked under."""
    return tf.strings.join(["<<", filenames, " record ", tf.strings.as_string(numbers), ">>"])


def check_values(features, names, limits):
    """Asserts that every feature of `limits` lies in [0, limit), record by record.

    Args:
      features: dict name -> int64 Tensor [batch, ...] (before any cast, so a
        value that int32 cannot hold is caught too).
      names: string Tensor [batch], the records' `record_names`.
      limits: {name: (limit, limit_name)} (`record_limits`).

    Returns:
      `features`, which now depend on the check: reading them fails with
      `InvalidArgumentError` "<<file record N>>: feature input_ids holds 120,
      outside [0, vocab_size=99) ..." for the first bad record of the batch.
    """
    if not limits:
        return features
    checked = []
    for name in sorted(limits):
        limit, limit_name = limits[name]
        values = features[name]
        values = tf.reshape(values, [tf.shape(values)[0], -1])
        outside = tf.logical_or(values < 0, values >= limit)
        checked.append((name, values, outside, _outside(limit, limit_name)))
    bad = tf.stack([tf.reduce_any(outside, axis=1) for _, _, outside, _ in checked], axis=1)
    ok = tf.logical_not(tf.reduce_any(bad))

    def describe_first_bad_record():
        record = tf.argmax(tf.cast(tf.reduce_any(bad, axis=1), tf.int32))
        messages = []
        for name, values, outside, text in checked:
            value = values[record][tf.argmax(tf.cast(outside[record], tf.int32))]
            messages.append(tf.strings.join([
                names[record], ": feature ", name, " holds ", tf.strings.as_string(value),
                ", ", text]))
        return tf.gather(tf.stack(messages), tf.argmax(tf.cast(bad[record], tf.int32)))

    # The message is built only for a batch that fails.
    message = tf.cond(ok, lambda: tf.constant(""), describe_first_bad_record)
    assertion = tf.debugging.Assert(ok, [message], summarize=1)
    with tf.control_dependencies([assertion]):
        return {name: tf.identity(value) for name, value in features.items()}


def parse_records(serialized, name_to_features, names=None, limits=None):
    """Parses serialized Examples; int64 -> int32 (original `_decode_record`).

    Args:
      serialized: string Tensor [batch].
      name_to_features: the parsing spec.
      names: optional string Tensor [batch] (`record_names`): a record that
        does not parse (a feature missing or of another length) is named in
        the error.
      limits: optional {name: (limit, limit_name)}, checked with
        `check_values` (needs `names`).
    """
    example = tf.io.parse_example(serialized, name_to_features, example_names=names)
    if limits:
        example = check_values(example, names, limits)
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in example.items()}


def _parse_batch(name_to_features, limits, records):
    """The map function of a batched dataset: serialized[, file indexes, numbers] -> features.

    `records`: the `_Records` the batches come from; `_NumberedRecords` give
    each record its name and check it.
    """
    if not isinstance(records, _NumberedRecords):
        return lambda serialized: parse_records(serialized, name_to_features)
    limits = limits_for(name_to_features, limits or {})

    def parse(serialized, indexes, numbers):
        return parse_records(serialized, name_to_features, records.names(indexes, numbers),
                             limits)
    return parse


def bad_record_error(error):
    """The one-line `UserError` for an input-record error raised by tf.data, else None.

    Args:
      error: a `tf.errors.OpError` raised while iterating a dataset of this
        module (possibly inside a `tf.function`).

    Returns:
      A `UserError` naming the file and the record (counted from 0) and what
      is wrong with it, or None if `error` is not about an input record.
    """
    message = getattr(error, "message", None) or str(error)
    if isinstance(error, tf.errors.DataLossError):
        # TFRecordDataset says where in the file, not which file.
        where = _DATA_LOSS_RE.search(message)
        if where is None:
            return None
        return UserError("an input TFRecord file is corrupt or truncated (%s)" % where.group(0))
    for line in message.splitlines():
        if "assertion failed: [<<" in line:
            # `check_values`: tf.debugging.Assert C-escapes the message.
            line = _c_unescape(line)
        match = _RECORD_NAME_RE.search(line)
        if match is None:
            continue
        where = "%s: record %s (counting from 0)" % (match.group(1), match.group(2))
        rest = line[match.start():]
        check = _CHECK_ERROR_RE.search(rest)
        if check:
            return UserError("%s: %s" % (where, check.group(1)))
        length = _LENGTH_ERROR_RE.search(rest)
        if length:
            name, got, want = length.groups()
            return UserError("%s: feature %r has length %s, but %s expects %s%s"
                             % (where, name, got, _LENGTH_FLAGS.get(name, "the model"), want,
                                " (the file was written with %s=%s?)"
                                % (_LENGTH_FLAGS[name], got) if name in _LENGTH_FLAGS else ""))
        missing = _MISSING_ERROR_RE.search(rest)
        if missing:
            return UserError("%s: no feature %r" % (where, missing.group(1)))
        return UserError("%s: %s" % (where, _first_clause(rest[match.end() - match.start():])))
    if _NOT_AN_EXAMPLE in message:
        # Parsing a batch that holds a record of another kind names no record.
        return UserError(_NOT_AN_EXAMPLE_MESSAGE)
    return None


def _c_unescape(text):
    """Undoes the C escaping (`\\'`, `\\xc3\\xa9`) TensorFlow applies to printed strings."""
    try:
        return text.encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
    except (UnicodeError, ValueError):
        return text


def _first_clause(text):
    """The words of a TensorFlow error message without its node and op decorations."""
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text).strip(" ,:")
    return text.splitlines()[0].split(" [[")[0].split(" [Op:")[0][:300] if text else ""


@contextlib.contextmanager
def bad_records_as_user_errors():
    """Re-raises the tf.data error of a bad input record as its one-line `UserError`.

    Any other error passes through unchanged.

    Example:
      with bad_records_as_user_errors():
          for batch in dataset: ...
    """
    try:
        yield
    except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
        user_error = bad_record_error(e)
        if user_error is None:
            raise
        raise user_error from None
    except UnicodeDecodeError as e:
        # TensorFlow quotes a record that is no Example in its error message;
        # binary bytes there make the message itself undecodable.
        if _NOT_AN_EXAMPLE.encode() not in bytes(e.object):
            raise
        raise UserError(_NOT_AN_EXAMPLE_MESSAGE) from None


# ----------------------------------------------------------------- pre-training


def decode_batch(serialized, max_seq_length, max_predictions_per_seq, names=None,
                 limits=None):
    """Parses a batch of serialized Examples; int64 -> int32 (original `_decode_record`).

    Args:
      serialized: string Tensor of shape [batch_size].
      names, limits: optional; see `parse_records`.

    Returns:
      dict of Tensors: input_ids, input_mask, segment_ids int32 [batch_size,
      max_seq_length]; masked_lm_positions, masked_lm_ids int32 [batch_size,
      max_predictions_per_seq]; masked_lm_weights float32 [batch_size,
      max_predictions_per_seq]; next_sentence_labels int32 [batch_size, 1].
    """
    return parse_records(serialized, name_to_features(max_seq_length, max_predictions_per_seq),
                         names, limits)


def create_pretraining_dataset(input_files, max_seq_length, max_predictions_per_seq,
                               batch_size, is_training, input_context=None,
                               num_cpu_threads=4, seed=None, check_files=True, config=None,
                               check_every_record=True):
    """Builds the pre-training `tf.data.Dataset` (original `input_fn`).

    Args:
      input_files: list of str TFRecord files or glob patterns (or one
        comma-separated str).
      max_seq_length: int, length of input_ids/input_mask/segment_ids.
      max_predictions_per_seq: int, length of the masked_lm_* features.
      batch_size: int, examples per batch of THIS pipeline (under tf.distribute:
        `input_context.get_per_replica_batch_size(global_batch_size)`).
      is_training: bool; training shuffles and interleaves, evaluation reads in
        order. Both repeat forever.
      input_context: optional `tf.distribute.InputContext`; shards the input by
        `input_pipeline_id` over `num_input_pipelines`.
      num_cpu_threads: int, parallel files read (cycle length) and parse calls.
      seed: optional int. Port note: with a seed, training shuffles are seeded
        and the interleave is deterministic (reproducible runs); without one
        (the default) the interleave is sloppy as in the original.
      check_files: bool, check the first record of each file (see
        `check_pretraining_records`).
      config: optional `BertConfig`; with it, every record's token ids must be
        below `vocab_size` and its segment ids below `type_vocab_size`.
      check_every_record: bool (new); parse each record under its name and
        check its values (`record_limits`): a bad record fails the iterator
        with an error naming its file and number (`bad_record_error`).

    Returns:
      A `tf.data.Dataset` of dicts (see `decode_batch`), batches of exactly
      `batch_size`.

    Raises:
      UserError: missing files, or a first record that does not match.
    """
    if batch_size < 1:
        raise UserError("batch_size must be >= 1, got %d" % batch_size)
    files = expand_files(input_files)
    if check_files:
        # Port note: the original fails inside the training loop instead.
        check_pretraining_records(files, None, max_seq_length, max_predictions_per_seq,
                                  num_records=1)
    num_pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    shard_files = num_pipelines > 1 and len(files) >= num_pipelines
    records = (_NumberedRecords if check_every_record else _Records)(files)
    every_file = range(len(files))

    if is_training and (num_pipelines == 1 or shard_files):
        d = records.file_list(every_file)
        num_files = len(files)
        if shard_files:
            d = d.shard(num_pipelines, pipeline_id)
            num_files = len(files[pipeline_id::num_pipelines])
        d = d.repeat()
        d = d.shuffle(buffer_size=num_files, seed=seed)
        cycle_length = min(num_cpu_threads, num_files)
        # Port note: "sloppy" (non-deterministic) as the original unless a
        # seed asks for a reproducible order.
        d = d.interleave(records.of_file, cycle_length=cycle_length,
                         num_parallel_calls=cycle_length,
                         deterministic=seed is not None)
        d = d.shuffle(buffer_size=100, seed=seed)
    elif is_training:
        # Fewer files than input pipelines: every pipeline reads all files in
        # order and keeps every num_pipelines-th record (a true partition).
        d = records.of_files(every_file).shard(num_pipelines, pipeline_id)
        d = d.repeat()
        d = d.shuffle(buffer_size=100, seed=seed)
    else:
        if shard_files:
            d = records.of_files(every_file[pipeline_id::num_pipelines])
        else:
            d = records.of_files(every_file)
            if num_pipelines > 1:
                d = d.shard(num_pipelines, pipeline_id)
        d = d.repeat()

    # Port note: batch, then one vectorized parse (the original parses each
    # record, then batches); the values are the same.
    d = d.batch(batch_size, drop_remainder=True)
    limits = record_limits(config, max_seq_length)
    d = d.map(_parse_batch(name_to_features(max_seq_length, max_predictions_per_seq), limits,
                           records),
              num_parallel_calls=num_cpu_threads)
    return d.prefetch(tf.data.AUTOTUNE)


# ----------------------------------------------------------------- fine-tuning


def create_finetuning_dataset(input_file, name_to_features, batch_size, input_context=None,
                              seed=None, limits=None, check_every_record=True):
    """Training batches of a fine-tuning TFRecord file (original `file_based_input_fn_builder`).

    As the original for training: the records repeat forever, are shuffled in
    a buffer of 100, and batched with `drop_remainder=True`. Under
    tf.distribute each input pipeline keeps every num_pipelines-th record.

    Args:
      input_file: str, e.g. `output_dir/train.tf_record`.
      name_to_features: the parsing spec (`classifier_data.name_to_features`,
        `squad_data.name_to_features`).
      batch_size: int, examples per batch of THIS pipeline.
      input_context: optional `tf.distribute.InputContext`.
      seed: optional int for a reproducible shuffle.
      limits: optional `record_limits(...)`; the spec's features among them
        are checked in every record (0/1 features are checked regardless).
      check_every_record: bool; see `create_pretraining_dataset`.
    """
    records = (_NumberedRecords if check_every_record else _Records)([input_file])
    d = records.of_files([0])
    limits = dict(record_limits(), **(limits or {}))
    if input_context and input_context.num_input_pipelines > 1:
        d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    d = d.repeat().shuffle(buffer_size=100, seed=seed)
    d = d.batch(batch_size, drop_remainder=True)
    d = d.map(_parse_batch(name_to_features, limits, records),
              num_parallel_calls=tf.data.AUTOTUNE)
    return d.prefetch(tf.data.AUTOTUNE)


def finite_records_input(input_file, name_to_features, num_examples, global_batch_size,
                         limits=None):
    """A `FiniteInput` over the first `num_examples` records of `input_file`, in order.

    Every record is parsed under its name and checked against `limits` (see
    `create_finetuning_dataset`).
    """
    from bert_tf.data.finite_input import FiniteInput  # pylint: disable=g-import-not-at-top
    limits = limits_for(name_to_features, dict(record_limits(), **(limits or {})))

    def examples_fn():
        records = _NumberedRecords([input_file])

        def parse(serialized, index, number):
            names = records.names(index[None], number[None])
            example = parse_records(serialized[None], name_to_features, names, limits)
            return {name: t[0] for name, t in example.items()}
        return records.of_files([0]).map(parse, num_parallel_calls=tf.data.AUTOTUNE)

    return FiniteInput(examples_fn, num_examples, global_batch_size)
