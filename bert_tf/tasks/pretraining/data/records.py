"""`tf.train.Example` bytes by hand: the original's seven features, without TensorFlow.

The features of the original's `write_instance_to_example_files` (P:103-137,
P = pip bert-tensorflow 1.0.4), serialized by `ExampleSerializer` with
precomputed varints and fixed-length pieces, byte-identical to
`tf.train.Example(...).SerializeToString(deterministic=True)`; `parse_example`
reads them back and `log_example` logs an instance as the original logs its
first 20 (P:144-157; at DEBUG here, the tools' `--verbosity=1`).

Port note: map entries of an Example are written in sorted key order (what
protobuf's deterministic serialization does). The original calls
`SerializeToString()`, whose map order under protobuf 7 (upb) changes from
process to process, so the original's own files are not byte-reproducible;
its records equal ours after deterministic re-serialization.
"""

import struct

from absl import logging


# The features in the original's OrderedDict order (used for logging).
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


# --------------------------------------------------------------------------
# Serialization of tf.train.Example, by hand.
# --------------------------------------------------------------------------

def _varint(value):
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


class ExampleSerializer(object):
    """Serializes the seven pre-training features into `tf.train.Example` bytes.

    Equals `tf.train.Example(features=...).SerializeToString(deterministic=True)`
    byte for byte: map entries in sorted key order, packed int64/float lists.

    Args:
      max_seq_length: int, length of input_ids/input_mask/segment_ids.
      max_predictions_per_seq: int, length of the masked_lm_* features.
      max_id: int, the largest token id.
    """

    def __init__(self, max_seq_length, max_predictions_per_seq, max_id):
        s, p = max_seq_length, max_predictions_per_seq
        self.max_seq_length = s
        self.max_predictions_per_seq = p
        self._varints = [_varint(i) for i in range(max(max_id, s, 4 * (s + p)) + 64)]
        v = self._varint
        self._zeros = [b"\x00" * n for n in range(s + 1)]
        self._ones = [b"\x01" * n for n in range(s + 1)]
        self._pzeros = [b"\x00" * n for n in range(p + 1)]
        self._keys = {name: b"\x0a" + v(len(name)) + name.encode() for name in FEATURE_NAMES}
        # Fixed-length features: whole map entries, precomputed.
        self._input_mask = [self._int64_entry("input_mask", self._ones[n] + self._zeros[s - n])
                            for n in range(s + 1)]
        one = b"\x00\x00\x80\x3f"  # struct.pack("<f", 1.0)
        self._weights = [self._float_entry("masked_lm_weights", one * k + b"\x00" * (4 * (p - k)))
                         for k in range(p + 1)]
        self._labels = [self._int64_entry("next_sentence_labels", b"\x00"),
                        self._int64_entry("next_sentence_labels", b"\x01")]
        self._segment_header = self._entry_header("segment_ids", s)
        # Headers of the variable-length features, by payload length (a
        # varint takes 1-5 bytes, so payloads are at most 5x their count).
        self._ids_header = [self._entry_header("input_ids", n) for n in range(5 * s + 1)]
        self._pos_header = [self._entry_header("masked_lm_positions", n)
                            for n in range(5 * p + 1)]
        self._mid_header = [self._entry_header("masked_lm_ids", n) for n in range(5 * p + 1)]

    def _varint(self, n):
        return self._varints[n] if n < len(self._varints) else _varint(n)

    def _entry_header(self, name, payload_len, float_list=False):
        """Bytes of a map entry up to (excluding) its packed payload."""
        v = self._varint
        list_len = 1 + len(v(payload_len)) + payload_len
        feature_len = 1 + len(v(list_len)) + list_len
        key = self._keys[name]
        body_len = len(key) + 1 + len(v(feature_len)) + feature_len
        return (b"\x0a" + v(body_len) + key + b"\x12" + v(feature_len) +
                (b"\x12" if float_list else b"\x1a") + v(list_len) + b"\x0a" + v(payload_len))

    def _int64_entry(self, name, payload):
        return self._entry_header(name, len(payload)) + payload

    def _float_entry(self, name, payload):
        return self._entry_header(name, len(payload), float_list=True) + payload

    def serialize(self, input_ids, len_a, len_b, masked_lm_positions, masked_lm_ids,
                  is_random_next):
        """Returns the serialized Example of one instance.

        Args:
          input_ids: list of int, the masked tokens' ids, [CLS] A [SEP] B [SEP]
            (unpadded; length len_a + len_b + 3 <= max_seq_length).
          len_a, len_b: int, lengths of segments A and B.
          masked_lm_positions: sorted list of int (<= max_predictions_per_seq).
          masked_lm_ids: list of int, the original ids at those positions.
          is_random_next: bool (label 1) or False (label 0).
        """
        s, p = self.max_seq_length, self.max_predictions_per_seq
        vt = self._varints
        n = len(input_ids)
        k = len(masked_lm_positions)
        ids_payload = b"".join(map(vt.__getitem__, input_ids)) + self._zeros[s - n]
        pos_payload = b"".join(map(vt.__getitem__, masked_lm_positions)) + self._pzeros[p - k]
        mid_payload = b"".join(map(vt.__getitem__, masked_lm_ids)) + self._pzeros[p - k]
        # Port note: the map entries in sorted key order (deterministic
        # serialization); see the module docstring.
        features = b"".join((
            self._ids_header[len(ids_payload)], ids_payload,
            self._input_mask[n],
            self._mid_header[len(mid_payload)], mid_payload,
            self._pos_header[len(pos_payload)], pos_payload,
            self._weights[k],
            self._labels[1 if is_random_next else 0],
            self._segment_header, self._zeros[len_a + 2], self._ones[len_b + 1],
            self._zeros[s - n]))
        return b"\x0a" + self._varint(len(features)) + features


# --------------------------------------------------------------------------
# Parsing (for logging), without TensorFlow.
# --------------------------------------------------------------------------

def parse_example(record):
    """The features of a serialized `tf.train.Example`, without TensorFlow.

    Returns:
      A dict feature name -> list of values (int for int64_list, float for
      float_list, bytes for bytes_list).
    """
    features = {}
    for field, value in _proto_fields(record):
        if field != 1:
            continue
        for entry_field, entry in _proto_fields(value):
            if entry_field != 1:
                continue
            name, values = None, []
            for key_field, key_value in _proto_fields(entry):
                if key_field == 1:
                    name = key_value.decode("utf-8")
                elif key_field == 2:
                    values = _feature_values(key_value)
            features[name] = values
    return features


def _proto_varint(buf, pos):
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _proto_fields(buf):
    """Yields (field number, value) of a protobuf message: int or bytes (length-delimited)."""
    buf = memoryview(buf)
    pos = 0
    while pos < len(buf):
        tag, pos = _proto_varint(buf, pos)
        wire_type = tag & 7
        if wire_type == 0:
            value, pos = _proto_varint(buf, pos)
        elif wire_type == 2:
            length, pos = _proto_varint(buf, pos)
            value = bytes(buf[pos:pos + length])
            pos += length
        elif wire_type == 5:
            value = bytes(buf[pos:pos + 4])
            pos += 4
        elif wire_type == 1:
            value = bytes(buf[pos:pos + 8])
            pos += 8
        else:
            raise ValueError("unsupported protobuf wire type %d" % wire_type)
        yield tag >> 3, value


def _feature_values(feature):
    values = []
    for kind, value_list in _proto_fields(feature):  # 1 bytes, 2 float, 3 int64
        for field, value in _proto_fields(value_list):
            if field != 1:
                continue
            if kind == 1:
                values.append(value)
            elif kind == 2:
                data = value if isinstance(value, bytes) else b""
                values.extend(x for (x,) in struct.iter_unpack("<f", data))
            elif kind == 3:
                if isinstance(value, int):
                    values.append(value - (1 << 64) if value >> 63 else value)
                    continue
                pos = 0
                while pos < len(value):
                    v, pos = _proto_varint(value, pos)
                    values.append(v - (1 << 64) if v >> 63 else v)
    return values


def log_example(record, vocab_info):
    """Logs a serialized instance as the original logs its first 20 (at DEBUG, not INFO)."""
    feature = parse_example(record)
    num_tokens = sum(feature["input_mask"])
    inv = vocab_info.inv_vocab
    tokens = [inv[i] for i in feature["input_ids"][:num_tokens]]
    logging.debug("*** Example ***")
    logging.debug("tokens: %s" % " ".join(tokens))
    for name in FEATURE_NAMES:
        logging.debug("%s: %s" % (name, " ".join([str(x) for x in feature[name]])))
