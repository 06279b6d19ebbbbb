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
  parse error deep inside the training loop).

Fine-tuning data (run_classifier, run_squad) goes through the same functions:
`create_finetuning_dataset` for training and `finite_records_input` for
evaluation and prediction (every example once, see `FiniteInput`).
"""

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
      id_limits: optional {name: (limit, flag)} for other bounded features,
        e.g. {"masked_lm_positions": (128, "--max_seq_length")}.
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
                        raise UserError(
                            "%s: feature %s holds %d, outside [0, %s=%d)%s"
                            % (input_file, name, high if high >= limit else low, limit_name,
                               limit, " of bert_config_file (data made with another vocab?)"
                               if not limit_name.startswith("--") else ""))


def check_pretraining_records(input_files, config, max_seq_length, max_predictions_per_seq,
                              num_records=8):
    """`check_records` for pre-training data, and `max_seq_length` against the model.

    Checks each file's first records: every feature of the original's
    `name_to_features` with its length, token ids below `vocab_size`, segment
    ids below `type_vocab_size`, masked positions inside the sequence.
    """
    if config is not None and max_seq_length > config.max_position_embeddings:
        raise UserError(
            "--max_seq_length=%d is longer than max_position_embeddings=%d of bert_config_file"
            % (max_seq_length, config.max_position_embeddings))
    lengths = {"seq": max_seq_length, "pred": max_predictions_per_seq, 1: 1}
    spec = {name: (dtype, lengths[kind], _flag_of(kind)) for name, dtype, kind in _FEATURES}
    check_records(input_files, spec, config=config, num_records=num_records,
                  id_limits={"masked_lm_positions": (max_seq_length, "--max_seq_length")})


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
        `check_pretraining_records`).

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


# ----------------------------------------------------------------- fine-tuning


def parse_records(serialized, name_to_features):
    """Parses serialized Examples with `name_to_features`; int64 -> int32 (original `_decode_record`)."""
    example = tf.io.parse_example(serialized, name_to_features)
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in example.items()}


def create_finetuning_dataset(input_file, name_to_features, batch_size, input_context=None,
                              seed=None):
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
    """
    d = tf.data.TFRecordDataset(input_file)
    if input_context and input_context.num_input_pipelines > 1:
        d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    d = d.repeat().shuffle(buffer_size=100, seed=seed)
    d = d.batch(batch_size, drop_remainder=True)
    d = d.map(lambda s: parse_records(s, name_to_features), num_parallel_calls=tf.data.AUTOTUNE)
    return d.prefetch(tf.data.AUTOTUNE)


def finite_records_input(input_file, name_to_features, num_examples, global_batch_size):
    """A `FiniteInput` over the first `num_examples` records of `input_file`, in order."""
    from bert_tf.data.finite_input import FiniteInput  # pylint: disable=g-import-not-at-top

    def examples_fn():
        def parse(serialized):
            example = tf.io.parse_single_example(serialized, name_to_features)
            return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
                    for name, t in example.items()}
        return tf.data.TFRecordDataset(input_file).map(parse, num_parallel_calls=tf.data.AUTOTUNE)

    return FiniteInput(examples_fn, num_examples, global_batch_size)
