"""Record checks: TFRecords held against the model before and while it reads them.

Port note: new; the original did not check its input records. A file
written with another `max_seq_length` failed deep inside the training loop,
and ids out of range failed on CPU and gave silent garbage or NaNs on
GPU/TPU (the original's README: "NaNs when training on GPU or TPU due to
unchecked out-of-bounds access").

* `record_limits`: the range [0, limit) of every integer feature (token ids
  below `vocab_size`, segment ids below `type_vocab_size`, positions below
  `max_seq_length`, masks and labels 0 or 1, classifier labels below
  `num_labels`).
* `check_records`: the first records of each file, eagerly, before a model
  is built: every feature present, of its kind and length, within its
  limits; a one-line `UserError` names the file, the feature and both
  lengths.
* `record_names` / `check_values`: inside a tf.data pipeline, on the host,
  every record is named `<<file record N>>` and its integer features
  asserted within their limits (the pipeline's batches depend on the
  assertion).
* `bad_record_error` / `bad_records_as_user_errors`: the `InvalidArgumentError`
  or `DataLossError` that a bad record raises from tf.data, as a one-line
  `UserError` naming the file and the record (counted from 0).

The tf.data builders that use them are `bert_tf.data.input_pipeline`'s.
"""

import contextlib
import re

import tensorflow as tf

from bert_tf.errors import UserError

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

# ----------------------------------------------------------------- the first records of a file


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

# ----------------------------------------------------------------- every record, in tf.data
#
# `check_values` asserts every bounded feature of a batch, record by record,
# under the records' names (`record_names`); `bad_record_error` reads those
# names (and tf.io.parse_example's own, for a feature missing or of another
# length) back out of the error tf.data raises.

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
