"""bert_tf.data.input_pipeline: the original input_fn's batches, sharding, checks."""

import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import input_pipeline as ip
from bert_tf.tasks.pretraining import data as pd
from bert_tf.errors import UserError
from tests.data import pretraining_testlib as lib

SEQ = 32
PRED = 5


def _write_records(path, n, seq=SEQ, pred=PRED, offset=0, drop=None):
    """n records whose input_ids[1] is offset + i (so each is recognisable)."""
    # max_id: the largest id written (its varint table is built for each call).
    serializer = pd.records.ExampleSerializer(seq, pred, max(999, offset + n))
    rng = random.Random(offset)
    with tf.io.TFRecordWriter(path) as w:
        for i in range(n):
            len_a = rng.randint(1, seq - 4)
            len_b = rng.randint(1, seq - 3 - len_a)
            ids = [2, offset + i] + [rng.randint(5, 999) for _ in range(len_a + len_b + 1)]
            k = rng.randint(1, pred)
            positions = sorted(rng.sample(range(1, len(ids)), k))
            record = serializer.serialize(ids, len_a, len_b, positions,
                                          [ids[p] for p in positions], i % 2 == 0)
            if drop:
                example = tf.train.Example.FromString(record)
                del example.features.feature[drop]
                record = example.SerializeToString()
            w.write(record)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pipeline")
    return [_write_records(str(d / ("part-%d.tfrecord" % k)), 23 + 4 * k, offset=1000 * (k + 1))
            for k in range(3)]


def _expected(files):
    out = []
    for f in files:
        for r in lib.read_records(f):
            out.append(lib.decode(r))
    return out


def test_eval_batches_are_the_records_in_order_and_repeat(files):
    d = ip.create_pretraining_dataset(files, SEQ, PRED, batch_size=8, is_training=False)
    expected = _expected(files)
    n = len(expected)
    batches = list(d.take((2 * n) // 8 + 1).as_numpy_iterator())
    got = []
    for b in batches:
        assert b["input_ids"].dtype == np.int32 and b["input_ids"].shape == (8, SEQ)
        assert b["masked_lm_weights"].dtype == np.float32
        assert b["masked_lm_weights"].shape == (8, PRED)
        assert b["next_sentence_labels"].shape == (8, 1)
        assert set(b) == set(lib.decode(lib.read_records(files[0])[0]))
        for i in range(8):
            got.append({k: list(v[i].reshape(-1)) for k, v in b.items()})
    # Repeats: record n follows record n - 1 with no gap (the files cycle).
    for i, g in enumerate(got):
        e = expected[i % n]
        for k in e:
            np.testing.assert_allclose(g[k], e[k])


def test_training_batches_cover_the_records(files):
    d = ip.create_pretraining_dataset(files, SEQ, PRED, batch_size=4, is_training=True, seed=1)
    ids = [int(x) for b in d.take(60).as_numpy_iterator() for x in b["input_ids"][:, 1]]
    all_ids = {int(e["input_ids"][1]) for e in _expected(files)}
    assert set(ids) <= all_ids and len(set(ids)) > 0.8 * len(all_ids)
    # Shuffled: not the file order.
    assert ids[:20] != sorted(ids[:20])
    again = ip.create_pretraining_dataset(files, SEQ, PRED, batch_size=4, is_training=True, seed=1)
    assert ids == [int(x) for b in again.take(60).as_numpy_iterator() for x in b["input_ids"][:, 1]]


@pytest.mark.slow
def test_sharding_by_input_pipeline_id(files):
    ids = {}
    for training in (False, True):
        for source in (files, files[:1]):  # whole files / records of one file
            seen = []
            for pid in range(2):
                ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pid)
                d = ip.create_pretraining_dataset(source, SEQ, PRED, batch_size=2,
                                                  is_training=training, input_context=ctx, seed=3)
                got = {int(x) for b in d.take(40).as_numpy_iterator() for x in b["input_ids"][:, 1]}
                seen.append(got)
            assert not seen[0] & seen[1], "pipelines must read disjoint data"
            union = {int(e["input_ids"][1]) for e in _expected(source)}
            assert seen[0] | seen[1] <= union
            ids[(training, len(source))] = seen
    # Eval with 3 files over 2 pipelines: pipeline 0 reads files 0 and 2.
    first_of = lambda f: int(lib.decode(lib.read_records(f)[0])["input_ids"][1])
    assert first_of(files[0]) in ids[(False, 3)][0] and first_of(files[1]) in ids[(False, 3)][1]


@pytest.mark.original
def test_eval_batches_equal_original_input_fn(files, tmp_path):
    out = str(tmp_path / "orig.npz")
    runs = [{"mode": "input_fn", "input_files": files, "max_seq_length": SEQ,
             "max_predictions_per_seq": PRED, "batch_size": 7, "num_batches": 15,
             "is_training": False, "out_npz": out}]
    runs_file = str(tmp_path / "runs.json")
    with open(runs_file, "w") as f:
        json.dump(runs, f)
    from tests.original import run_oracle
    run_oracle("pretraining_data_oracle", runs_file)
    original = np.load(out)
    d = ip.create_pretraining_dataset(files, SEQ, PRED, batch_size=7, is_training=False)
    for b, batch in enumerate(d.take(15).as_numpy_iterator()):
        for name, value in batch.items():
            theirs = original["%d/%s" % (b, name)]
            assert value.dtype == theirs.dtype and value.shape == theirs.shape, name
            np.testing.assert_array_equal(value, theirs)


def test_mismatched_lengths_name_file_feature_and_lengths(files, tmp_path):
    other = _write_records(str(tmp_path / "seq64.tfrecord"), 3, seq=64)
    with pytest.raises(UserError, match=r"seq64.tfrecord: feature 'input_ids' has length 64, "
                                        r"but --max_seq_length expects 32"):
        ip.create_pretraining_dataset(files + [other], SEQ, PRED, 4, True)
    with pytest.raises(UserError, match=r"feature 'masked_lm_positions' has length 5, "
                                        r"but --max_predictions_per_seq expects 20"):
        ip.create_pretraining_dataset(files, SEQ, 20, 4, False)
    missing = _write_records(str(tmp_path / "nolabels.tfrecord"), 2, drop="next_sentence_labels")
    with pytest.raises(UserError, match="nolabels.tfrecord has no feature 'next_sentence_labels'"):
        ip.create_pretraining_dataset([missing], SEQ, PRED, 4, False)


def test_bad_files(tmp_path):
    with pytest.raises(UserError, match="matches no file"):
        ip.create_pretraining_dataset([str(tmp_path / "none-*.tfrecord")], SEQ, PRED, 4, True)
    empty = str(tmp_path / "empty.tfrecord")
    tf.io.TFRecordWriter(empty).close()
    with pytest.raises(UserError, match="empty.tfrecord has no records"):
        ip.create_pretraining_dataset([empty], SEQ, PRED, 4, True)
    text = str(tmp_path / "text.tfrecord")
    with open(text, "w") as f:
        f.write("this is not a tfrecord file at all\n" * 10)
    with pytest.raises(UserError, match="text.tfrecord is not a TFRecord file"):
        ip.create_pretraining_dataset([text], SEQ, PRED, 4, True)


def test_reads_create_pretraining_data_output(tmp_path):
    """End to end: text -> our TFRecords -> batches with the right values."""
    corpus = lib.write_corpus(str(tmp_path))
    vocab = lib.write_vocab([corpus["a"]], str(tmp_path / "vocab.txt"), vocab_size=600)
    from bert_tf import tokenization
    # The output directory does not exist yet: it is created.
    outputs = [str(tmp_path / "new" / "o1.tfrecord"), str(tmp_path / "new" / "o2.tfrecord")]
    stats = pd.create_pretraining_data([corpus["a"]], outputs, tokenization.FullTokenizer(vocab),
                                       max_seq_length=SEQ, max_predictions_per_seq=PRED,
                                       dupe_factor=1)
    d = ip.create_pretraining_dataset(",".join(outputs), SEQ, PRED, 16, is_training=False)
    batch = next(iter(d.as_numpy_iterator()))
    first = lib.decode(lib.read_records(outputs[0])[0])
    np.testing.assert_array_equal(batch["input_ids"][0], first["input_ids"])
    assert stats["instances"] > 16
    assert os.path.getsize(outputs[1]) > 0


# ----------------------------------------------------------------- every record checked
# (the checks' own tests: tests/data/test_record_checks.py)


def test_without_the_check_the_batches_are_the_same(files):
    checked = ip.create_pretraining_dataset(files, SEQ, PRED, 5, False, config=_config_big())
    unchecked = ip.create_pretraining_dataset(files, SEQ, PRED, 5, False,
                                              check_every_record=False)
    for a, b in zip(checked.take(12).as_numpy_iterator(), unchecked.take(12).as_numpy_iterator()):
        assert set(a) == set(b)
        for key in a:
            assert a[key].dtype == b[key].dtype
            np.testing.assert_array_equal(a[key], b[key])


def _config_big():
    """The module's files hold input_ids up to 3000 + n."""
    from bert_tf.modeling.config import BertConfig
    return BertConfig(vocab_size=4000, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=37)
