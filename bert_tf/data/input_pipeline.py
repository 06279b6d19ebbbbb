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
* the first record of every file is checked eagerly, so a file written with
  another `max_seq_length`/`max_predictions_per_seq`, or without a feature,
  stops at once with an error that names the file, the feature and both
  lengths (instead of a parse error deep inside the training loop).
"""

import tensorflow as tf

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


def expand_files(input_files):
    """Expands a list (or comma-separated str) of files and glob patterns.

    Raises:
      UserError: an entry matches no file.
    """
    if isinstance(input_files, str):
        input_files = input_files.split(",")
    files = []
    for pattern in input_files:
        pattern = pattern.strip()
        if not pattern:
            continue
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            raise UserError("input file %r matches no file" % pattern)
        files.extend(matches)
    if not files:
        raise UserError("no input files given")
    return files


def check_first_records(input_files, max_seq_length, max_predictions_per_seq):
    """Checks that the first record of each file has the expected features.

    Args:
      input_files: list of str TFRecord files.
      max_seq_length, max_predictions_per_seq: the lengths the model expects.

    Raises:
      UserError: naming the file, the feature and both lengths (or the kind)
        for the first mismatch; also for an empty, unreadable or corrupt file.
    """
    lengths = {"seq": max_seq_length, "pred": max_predictions_per_seq, 1: 1}
    for input_file in input_files:
        try:
            records = list(tf.data.TFRecordDataset(input_file).take(1).as_numpy_iterator())
        except (tf.errors.NotFoundError, tf.errors.PermissionDeniedError) as e:
            raise UserError("%s cannot be read: %s" % (input_file, e.message)) from None
        except tf.errors.DataLossError:
            raise UserError("%s is not a TFRecord file (or is corrupt)" % input_file) from None
        if not records:
            raise UserError("%s has no records" % input_file)
        try:
            example = tf.train.Example.FromString(records[0])
        except Exception:  # pylint: disable=broad-except  (protobuf DecodeError)
            raise UserError("%s: the first record is not a tf.train.Example" % input_file) from None
        feature = example.features.feature
        for name, dtype, kind in _FEATURES:
            if name not in feature:
                raise UserError("%s has no feature %r (is it pre-training data from "
                                "create_pretraining_data?)" % (input_file, name))
            f = feature[name]
            kind_name = f.WhichOneof("kind")
            expected_kind = "float_list" if dtype == tf.float32 else "int64_list"
            if kind_name != expected_kind:
                raise UserError("%s: feature %r is a %s, expected a %s"
                                % (input_file, name, kind_name, expected_kind))
            got = len(getattr(f, expected_kind).value)
            want = lengths[kind]
            if got != want:
                flag = _flag_of(kind)
                raise UserError(
                    "%s: feature %r has length %d, but %s expects %d%s"
                    % (input_file, name, got,
                       "--%s" % flag if flag else "the model", want,
                       " (the file was written with --%s=%d?)" % (flag, got) if flag else ""))


def decode_batch(serialized, max_seq_length, max_predictions_per_seq):
    """Parses a batch of serialized Examples; int64 -> int32 (original `_decode_record`).

    Args:
      serialized: string Tensor of shape [batch_size].

    Returns:
      dict of Tensors: input_ids, input_mask, segment_ids int32 [batch_size,
      max_seq_length]; masked_lm_positions, masked_lm_ids int32 [batch_size,
      max_predictions_per_seq]; masked_lm_weights float32 [batch_size,
      max_predictions_per_seq]; next_sentence_labels int32 [batch_size, 1].
    """
    example = tf.io.parse_example(
        serialized, name_to_features(max_seq_length, max_predictions_per_seq))
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in example.items()}


def create_pretraining_dataset(input_files, max_seq_length, max_predictions_per_seq,
                               batch_size, is_training, input_context=None,
                               num_cpu_threads=4, seed=None, check_files=True):
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
        `check_first_records`).

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
        check_first_records(files, max_seq_length, max_predictions_per_seq)
    num_pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    shard_files = num_pipelines > 1 and len(files) >= num_pipelines

    if is_training and (num_pipelines == 1 or shard_files):
        d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
        num_files = len(files)
        if shard_files:
            d = d.shard(num_pipelines, pipeline_id)
            num_files = len(files[pipeline_id::num_pipelines])
        d = d.repeat()
        d = d.shuffle(buffer_size=num_files, seed=seed)
        cycle_length = min(num_cpu_threads, num_files)
        # Port note: "sloppy" (non-deterministic) as the original unless a
        # seed asks for a reproducible order.
        d = d.interleave(tf.data.TFRecordDataset, cycle_length=cycle_length,
                         num_parallel_calls=cycle_length,
                         deterministic=seed is not None)
        d = d.shuffle(buffer_size=100, seed=seed)
    elif is_training:
        # Fewer files than input pipelines: every pipeline reads all files in
        # order and keeps every num_pipelines-th record (a true partition).
        d = tf.data.TFRecordDataset(files).shard(num_pipelines, pipeline_id)
        d = d.repeat()
        d = d.shuffle(buffer_size=100, seed=seed)
    else:
        if shard_files:
            d = tf.data.TFRecordDataset(files[pipeline_id::num_pipelines])
        else:
            d = tf.data.TFRecordDataset(files)
            if num_pipelines > 1:
                d = d.shard(num_pipelines, pipeline_id)
        d = d.repeat()

    # Port note: batch, then one vectorized parse (the original parses each
    # record, then batches); the values are the same.
    d = d.batch(batch_size, drop_remainder=True)
    d = d.map(lambda s: decode_batch(s, max_seq_length, max_predictions_per_seq),
              num_parallel_calls=num_cpu_threads)
    return d.prefetch(tf.data.AUTOTUNE)
