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
  microseconds of host CPU per record (`bench/input_check_bench.py`). The
  checks themselves are `bert_tf.data.record_checks`' (their names are
  importable from here too).

Fine-tuning data (run_classifier, run_squad) goes through the same functions:
`create_finetuning_dataset` for training and `finite_records_input` for
evaluation and prediction (every example once, see `FiniteInput`).
"""

import tensorflow as tf

from bert_tf import fileio
from bert_tf.data.record_checks import check_records
from bert_tf.data.record_checks import check_values
from bert_tf.data.record_checks import limits_for
from bert_tf.data.record_checks import record_limits
from bert_tf.data.record_checks import record_names
from bert_tf.errors import UserError
# The record checks' other public names, where the runs and the trainer import them from.
from bert_tf.data.record_checks import bad_record_error  # noqa: F401
from bert_tf.data.record_checks import bad_records_as_user_errors  # noqa: F401

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
# `check_values` (`bert_tf.data.record_checks`) asserts every bounded
# feature, on the host, inside tf.data.


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


# ---------------------------------------------------------- bucketing by length

# --bucket_by_length sorts the records of this many batches at a time.
BUCKET_WINDOW_BATCHES = 50


def batch_by_length(d, batch_size, input_mask_spec, records, seed=None,
                     window=BUCKET_WINDOW_BATCHES):
    """Batches of records of similar lengths, in a shuffled order (`--bucket_by_length`).

    The records of `window` batches, as `d` gives them, are sorted by their
    number of attended positions (`input_mask`; ties keep their order) and cut
    into batches of `batch_size`, then the batches are shuffled in a buffer of
    `window`. Each batch then spans a narrow range of lengths, so its cut
    (`Task.trim_padding`) is short. With a `seed`, the order is a function of
    it (and a resumed run's skip of the batches already seen lands exactly).

    Args:
      d: a repeated dataset of unbatched records (`_Records` or
        `_NumberedRecords` elements, whose names a bad record's error gives).
      batch_size: examples per batch of this input pipeline.
      input_mask_spec: the records' `input_mask` `FixedLenFeature`.
      records: the `_Records` `d` reads.

    Returns:
      A dataset of batches of serialized records (and their file indexes and
      numbers), with `drop_remainder=True`.
    """
    numbered = isinstance(records, _NumberedRecords)

    def sort(*window_records):
        names = records.names(window_records[1], window_records[2]) if numbered else None
        mask = tf.io.parse_example(window_records[0], {"input_mask": input_mask_spec},
                                   example_names=names)["input_mask"]
        lengths = tf.reduce_sum(tf.cast(mask != 0, tf.int32), axis=-1)
        order = tf.argsort(lengths, stable=True)
        return tuple(tf.gather(values, order) for values in window_records)

    d = d.batch(batch_size * window, drop_remainder=True)
    d = d.map(sort if numbered else lambda serialized: sort(serialized)[0])
    d = d.unbatch().batch(batch_size, drop_remainder=True)
    return d.shuffle(window, seed=seed)


# ----------------------------------------------------------------- pre-training


def create_pretraining_dataset(input_files, max_seq_length, max_predictions_per_seq,
                               batch_size, is_training, input_context=None,
                               num_cpu_threads=4, seed=None, check_files=True, config=None,
                               check_every_record=True, bucket_by_length=False):
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
      bucket_by_length: bool (new); training batches of similar lengths
        (`batch_by_length`).

    Returns:
      A `tf.data.Dataset` of dicts (`name_to_features`' names, int32 but
      masked_lm_weights float32), batches of exactly
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
    spec = name_to_features(max_seq_length, max_predictions_per_seq)
    if is_training and bucket_by_length:
        d = batch_by_length(d, batch_size, spec["input_mask"], records, seed)
    else:
        d = d.batch(batch_size, drop_remainder=True)
    limits = record_limits(config, max_seq_length)
    d = d.map(_parse_batch(spec, limits, records),
              num_parallel_calls=num_cpu_threads)
    return d.prefetch(tf.data.AUTOTUNE)


# ----------------------------------------------------------------- fine-tuning


def create_finetuning_dataset(input_file, name_to_features, batch_size, input_context=None,
                              seed=None, limits=None, check_every_record=True,
                              bucket_by_length=False):
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
      bucket_by_length: bool (new); batches of similar lengths after the
        shuffle (`batch_by_length`).
    """
    records = (_NumberedRecords if check_every_record else _Records)([input_file])
    d = records.of_files([0])
    limits = dict(record_limits(), **(limits or {}))
    if input_context and input_context.num_input_pipelines > 1:
        d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    d = d.repeat().shuffle(buffer_size=100, seed=seed)
    if bucket_by_length:
        d = batch_by_length(d, batch_size, name_to_features["input_mask"], records, seed)
    else:
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
