"""bert_tf.data.tfrecord against TensorFlow's TFRecordWriter, and Example parsing."""

import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.pretraining import data as pd
from bert_tf.data import tfrecord

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _records(seed, count, max_length):
    rng = random.Random(seed)
    return [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, max_length)))
            for _ in range(count)]


def _tf_file(path, records):
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    with open(path, "rb") as f:
        return f.read()


def crc32c(data):
    """CRC32C of one bytes object (an int), by `crc32c_many`."""
    return int(tfrecord.crc32c_many([bytes(data)])[0])


def masked_crc32c(data):
    """TFRecord's masked CRC32C of `data` (TensorFlow's crc32c::Mask)."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_known_values():
    # The check value of CRC-32C (RFC 3720, B.4) and the empty string.
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(b"\x00" * 32) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43


def test_crc32c_many_equals_one_by_one():
    records = _records(0, 50, 300) + [b"", b"\x00", b"\x00" * 700]
    many = tfrecord.crc32c_many(records)
    assert many.dtype == np.uint32
    assert [int(c) for c in many] == [crc32c(r) for r in records]


@pytest.mark.slow
def test_writer_bytes_equal_tensorflow(tmp_path):
    """Edge lengths, an empty record, and more records than one flush."""
    records = [b"", b"a", b"\x00" * 8, bytes(range(256)), b"\xff" * 4097]
    records += _records(1, tfrecord._FLUSH_RECORDS + 37, 40)  # pylint: disable=protected-access
    ours = str(tmp_path / "ours.tfrecord")
    with tfrecord.TFRecordWriter(ours) as writer:
        for record in records:
            writer.write(record)
    with open(ours, "rb") as f:
        ours_bytes = f.read()
    assert ours_bytes == _tf_file(str(tmp_path / "tf.tfrecord"), records)
    assert list(tf.data.TFRecordDataset(ours).as_numpy_iterator()) == records


def test_frame_records_and_write_framed(tmp_path):
    records = _records(2, 300, 600)
    framed = tfrecord.frame_records(records)
    assert framed == _tf_file(str(tmp_path / "tf.tfrecord"), records)
    assert tfrecord.frame_records([]) == b""
    path = str(tmp_path / "framed.tfrecord")
    with tfrecord.TFRecordWriter(path) as writer:
        writer.write(records[0])
        writer.write_framed(tfrecord.frame_records(records[1:]))
    with open(path, "rb") as f:
        assert f.read() == framed


def test_masked_crc_is_tensorflows():
    record = b"bert_tf"
    framed = tfrecord.frame_records([record])
    assert framed[-4:] == masked_crc32c(record).to_bytes(4, "little")
    assert framed[8:12] == masked_crc32c(len(record).to_bytes(8, "little")).to_bytes(
        4, "little")


def test_round_robin_write_framed_equals_write(tmp_path):
    """The sharded mode's framed path writes what record-by-record writing writes."""
    records = _records(3, 45, 80)

    class _Vocab(object):
        inv_vocab = {}

    def run(name, framed):
        outputs = [str(tmp_path / ("%s%d" % (name, i))) for i in range(3)]
        writer = pd.writing.RoundRobinWriter(outputs, _Vocab())
        writer._log_example = lambda record: None  # pylint: disable=protected-access
        if framed:
            for part in (records[:7], records[7:8], records[8:]):
                writer.write_framed(tfrecord.frame_records(part), [len(r) + 16 for r in part])
        else:
            for record in records:
                writer.write(record)
        writer.close()
        assert writer.total_written == len(records)
        result = []
        for path in outputs:
            with open(path, "rb") as f:
                result.append(f.read())
        return result

    assert run("framed", True) == run("plain", False)


def test_parse_example_equals_protobuf():
    serializer = pd.records.ExampleSerializer(16, 4, 3000)
    record = serializer.serialize([2, 700, 2999, 3, 150, 3], 2, 1, [1, 4], [700, 150], True)
    parsed = pd.records.parse_example(record)
    example = tf.train.Example.FromString(record)
    assert set(parsed) == set(example.features.feature)
    for name, feature in example.features.feature.items():
        expected = list(feature.int64_list.value) or list(feature.float_list.value)
        assert parsed[name] == expected, name
    # Other kinds and negative int64s, as protobuf writes them.
    other = tf.train.Example(features=tf.train.Features(feature={
        "b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x", b""])),
        "f": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, -2.0])),
        "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[-1, 0, 2 ** 40])),
    })).SerializeToString()
    assert pd.records.parse_example(other) == {"b": [b"x", b""], "f": [0.5, -2.0],
                                               "i": [-1, 0, 2 ** 40]}


def test_local_run_does_not_import_tensorflow(tmp_path):
    """Reading, generating and writing local files never imports TensorFlow."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\nthe dog ran .\n\nthe mat was red .\n"
                      "a cat and a dog .\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
                                "sat", "on", "mat", ".", "dog", "ran", "was", "red", "a",
                                "and"]) + "\n")
    script = (
        "import sys\n"
        "from bert_tf import tokenization\n"
        "from bert_tf.tasks.pretraining import data as pd\n"
        "tok = tokenization.FullTokenizer(%r)\n"
        "for workers, per_shard in ((1, 0), (2, 1)):\n"
        "    files = pd.expand_input_patterns([%r])\n"
        "    pd.create_pretraining_data(files, [%r + str(workers)], tok, dupe_factor=2,\n"
        "                               max_seq_length=16, max_predictions_per_seq=3,\n"
        "                               num_workers=workers, documents_per_shard=per_shard)\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
        % (str(vocab), str(corpus), str(tmp_path / "out")))
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for workers in (1, 2):
        assert list(tf.data.TFRecordDataset(str(tmp_path / ("out%d" % workers))))
