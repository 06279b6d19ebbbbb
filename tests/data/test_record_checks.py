"""bert_tf.data.record_checks: every input record held against the model, bad ones named.

The first records of each file, checked before training (`check_records`, at
the limits exactly), and every record as the tf.data pipelines of
bert_tf.data.input_pipeline read it (`check_values`): a bad one stops the run
with a one-line error naming its file and number (`bad_record_error`).
"""

import pytest
import tensorflow as tf

from bert_tf.data import input_pipeline as ip
from bert_tf.data import record_checks
from bert_tf.errors import UserError
from tests.data import pretraining_testlib as lib
from tests.data.test_input_pipeline import PRED
from tests.data.test_input_pipeline import SEQ
from tests.data.test_input_pipeline import _write_records

BAD_RECORD = 17  # beyond the first records that are checked before reading
VOCAB_SIZE = 1000


def _config():
    from bert_tf.modeling.config import BertConfig
    return BertConfig(vocab_size=VOCAB_SIZE, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=37, type_vocab_size=2)


def _set(name, index, value):
    def edit(feature):
        feature[name].int64_list.value[index] = value
    return edit


def _resize(name, length):
    def edit(feature):
        del feature[name].int64_list.value[:]
        feature[name].int64_list.value.extend([1] * length)
    return edit


def _drop(name):
    def edit(feature):
        del feature[name]
    return edit


def _write_with_bad_record(path, edit, n=30, bad=BAD_RECORD):
    """n good records (ids below VOCAB_SIZE) but record `bad`, changed by `edit(feature map)`."""
    _write_records(path, n, offset=0)
    records = lib.read_records(path)
    example = tf.train.Example.FromString(records[bad])
    edit(example.features.feature)
    records[bad] = example.SerializeToString()
    with tf.io.TFRecordWriter(path) as w:
        for record in records:
            w.write(record)
    return path


# (name, edit of record 17, expected message after "<file>: record 17 (counting from 0): ")
_BAD_RECORDS = [
    ("vocab", _set("input_ids", 3, 1200),
     "feature input_ids holds 1200, outside [0, vocab_size=1000) of bert_config_file "
     "(data made with another vocab?)"),
    ("masked_id", _set("masked_lm_ids", 0, -3),
     "feature masked_lm_ids holds -3, outside [0, vocab_size=1000) of bert_config_file "
     "(data made with another vocab?)"),
    ("int32_overflow", _set("input_ids", 1, 2 ** 32 + 5),
     "feature input_ids holds 4294967301, outside [0, vocab_size=1000) of bert_config_file "
     "(data made with another vocab?)"),
    ("segment", _set("segment_ids", 2, 2),
     "feature segment_ids holds 2, outside [0, type_vocab_size=2) of bert_config_file"),
    ("position", _set("masked_lm_positions", 0, SEQ),
     "feature masked_lm_positions holds 32, outside [0, --max_seq_length=32)"),
    ("mask", _set("input_mask", 5, 7), "feature input_mask holds 7, outside [0, 2)"),
    ("label", _set("next_sentence_labels", 0, 2),
     "feature next_sentence_labels holds 2, outside [0, 2)"),
    ("length", _resize("input_ids", 16),
     "feature 'input_ids' has length 16, but --max_seq_length expects 32 (the file was "
     "written with --max_seq_length=16?)"),
    ("missing", _drop("next_sentence_labels"), "no feature 'next_sentence_labels'"),
]


def _first_error(dataset, num_batches):
    with pytest.raises(UserError) as e:
        with record_checks.bad_records_as_user_errors():
            for _ in dataset.take(num_batches):
                pass
    return str(e.value)


@pytest.mark.slow
def test_every_record_is_checked_and_a_bad_one_is_named(tmp_path):
    good = _write_records(str(tmp_path / "good.tfrecord"), 21, offset=0)
    config = _config()
    for name, edit, expected in _BAD_RECORDS:
        bad = _write_with_bad_record(str(tmp_path / ("bad_%s.tfrecord" % name)), edit)
        # The eager check of the first records lets the file through ...
        ip.check_pretraining_records([good, bad], config, SEQ, PRED, num_records=8)
        # ... the pipeline stops at record 17, in order (evaluation) or shuffled (training).
        for is_training in (False, True):
            d = ip.create_pretraining_dataset([good, bad], SEQ, PRED, 4, is_training, seed=5,
                                              config=config)
            message = _first_error(d, 60)
            assert message == "%s: record %d (counting from 0): %s" % (bad, BAD_RECORD, expected), (
                name, is_training)


def test_a_bad_record_is_named_when_pipelines_share_the_files(tmp_path):
    """Fewer files than input pipelines: records are numbered before sharding."""
    # A file name that TensorFlow escapes in its messages.
    bad = _write_with_bad_record(str(tmp_path / "bad record d\u00e9j\u00e0 \"vu\" it's.tfrecord"),
                                 _set("input_ids", 0, 5000))
    messages = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id)
        for is_training in (False, True):
            d = ip.create_pretraining_dataset([bad], SEQ, PRED, 2, is_training, seed=1,
                                              input_context=context, config=_config())
            try:
                with record_checks.bad_records_as_user_errors():
                    for _ in d.take(30):
                        pass
            except UserError as e:
                messages.append((pipeline_id, str(e)))
    # Record 17 is every other pipeline's: only pipeline 1 reads it.
    assert sorted(set(messages)) == [(1, "%s: record 17 (counting from 0): feature input_ids "
                                         "holds 5000, outside [0, vocab_size=1000) of "
                                         "bert_config_file (data made with another vocab?)"
                                      % bad)]


def test_other_errors_pass_through_unchanged():
    error = tf.errors.InvalidArgumentError(None, None, "Matrix size-incompatible: In[0]: [2,3]")
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        with record_checks.bad_records_as_user_errors():
            raise error
    assert e.value is error
    assert record_checks.bad_record_error(error) is None
    with pytest.raises(KeyError):
        with record_checks.bad_records_as_user_errors():
            raise KeyError("input_ids")


def test_corrupt_files_and_foreign_records_are_one_line_errors(tmp_path):
    good = _write_records(str(tmp_path / "good.tfrecord"), 20)
    with open(good, "rb") as f:
        data = f.read()
    truncated = str(tmp_path / "truncated.tfrecord")
    with open(truncated, "wb") as f:
        f.write(data[:-40])
    d = ip.create_pretraining_dataset([truncated], SEQ, PRED, 4, False)
    assert _first_error(d, 10).startswith(
        "an input TFRecord file is corrupt or truncated (truncated record at ")
    # A record that is no tf.train.Example after the first (checked) ones.
    mixed = str(tmp_path / "mixed.tfrecord")
    with tf.io.TFRecordWriter(mixed) as w:
        for i, record in enumerate(lib.read_records(good)):
            w.write(b"\x08\x96\x01 not an example" if i == 9 else record)
    d = ip.create_pretraining_dataset([mixed], SEQ, PRED, 4, False)
    assert _first_error(d, 10) == ("an input record is not a tf.train.Example (a TFRecord "
                                   "file of other data?)")


def _write_classifier_records(path, labels):
    with tf.io.TFRecordWriter(path) as w:
        for label in labels:
            feature = {
                "input_ids": [2, 7, 3, 0], "input_mask": [1, 1, 1, 0],
                "segment_ids": [0, 0, 0, 0], "label_ids": [label], "is_real_example": [1]}
            w.write(tf.train.Example(features=tf.train.Features(feature={
                k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
                for k, v in feature.items()})).SerializeToString())
    return path


def test_finetuning_records_are_checked(tmp_path):
    from bert_tf.tasks.classifier import data as classifier_data
    labels = [0, 1] * 6
    labels[9] = 3
    path = _write_classifier_records(str(tmp_path / "train.tf_record"), labels)
    spec = classifier_data.name_to_features(4)
    limits = record_checks.record_limits(_config(), 4, num_labels=2)
    expected = ("%s: record 9 (counting from 0): feature label_ids holds 3, outside "
                "[0, num_labels=2) (the task's number of labels)" % path)
    # Shuffled (a buffer of 100 over the repeated records): a fixed seed, so that
    # record 9 is drawn within the batches read (unseeded, it is missed now and then).
    d = ip.create_finetuning_dataset(path, spec, 4, limits=limits, seed=0)
    assert _first_error(d, 10) == expected
    finite = ip.finite_records_input(path, spec, len(labels), 4, limits=limits)
    assert _first_error(finite.dataset_fn(), 10) == expected
    # Good records pass, with the original's values.
    labels[9] = 1
    _write_classifier_records(path, labels)
    batch = next(iter(ip.finite_records_input(path, spec, 12, 12, limits=limits).dataset_fn()))
    assert batch["label_ids"].numpy().tolist() == labels
    batch = next(iter(ip.create_finetuning_dataset(path, spec, 12, limits=limits, seed=0)))
    assert set(batch["label_ids"].numpy().tolist()) <= {0, 1}
    assert batch["input_ids"].dtype == tf.int32


# (feature, its limit, the refusal's words after "feature <name> holds <limit>, "): each
# bounded feature of the pre-training records at its limit, which the check refuses.
_LIMITS = [
    ("input_ids", VOCAB_SIZE,
     "outside [0, vocab_size=1000) of bert_config_file (data made with another vocab?)"),
    ("masked_lm_ids", VOCAB_SIZE,
     "outside [0, vocab_size=1000) of bert_config_file (data made with another vocab?)"),
    ("segment_ids", 2, "outside [0, type_vocab_size=2) of bert_config_file"),
    ("masked_lm_positions", SEQ, "outside [0, --max_seq_length=32)"),
    ("input_mask", 2, "outside [0, 2)"),
    ("next_sentence_labels", 2, "outside [0, 2)"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,limit,outside", _LIMITS, ids=[n for n, _, _ in _LIMITS])
def test_the_first_records_are_checked_at_the_limits_exactly(tmp_path, name, limit, outside):
    """The up-front check refuses limit (and -1), accepts limit - 1, in one line naming the file."""
    config = _config()
    at_limit = _write_with_bad_record(str(tmp_path / "at_limit.tfrecord"), _set(name, 0, limit),
                                      n=4, bad=0)
    with pytest.raises(UserError) as e:
        ip.check_pretraining_records([at_limit], config, SEQ, PRED)
    assert str(e.value) == "%s: feature %s holds %d, %s" % (at_limit, name, limit, outside)
    negative = _write_with_bad_record(str(tmp_path / "negative.tfrecord"), _set(name, 0, -1),
                                      n=4, bad=0)
    with pytest.raises(UserError, match=r"negative.tfrecord: feature %s holds -1, " % name):
        ip.check_pretraining_records([negative], config, SEQ, PRED)
    below = _write_with_bad_record(str(tmp_path / "below.tfrecord"), _set(name, 0, limit - 1),
                                   n=4, bad=0)
    ip.check_pretraining_records([below], config, SEQ, PRED)


def test_finetuning_labels_are_checked_at_the_limit_exactly(tmp_path):
    """Each fine-tuning record is checked as it is read: num_labels refused, num_labels - 1 not."""
    from bert_tf.tasks.classifier import data as classifier_data
    spec = classifier_data.name_to_features(4)
    limits = record_checks.record_limits(_config(), 4, num_labels=3)
    path = _write_classifier_records(str(tmp_path / "train.tf_record"), [0, 1, 3, 2])
    finite = ip.finite_records_input(path, spec, 4, 4, limits=limits)
    assert _first_error(finite.dataset_fn(), 1) == (
        "%s: record 2 (counting from 0): feature label_ids holds 3, outside [0, num_labels=3) "
        "(the task's number of labels)" % path)
    _write_classifier_records(path, [0, 1, 2, 2])
    batch = next(iter(ip.finite_records_input(path, spec, 4, 4, limits=limits).dataset_fn()))
    assert batch["label_ids"].numpy().tolist() == [0, 1, 2, 2]


def test_the_pipelines_names_are_the_checks():
    """What the runs and the trainer import from input_pipeline is record_checks' own."""
    for name in ("record_limits", "check_records", "check_values", "limits_for", "record_names",
                 "bad_record_error", "bad_records_as_user_errors"):
        assert getattr(ip, name) is getattr(record_checks, name), name
