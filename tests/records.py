"""The tests' reading of a tf.train.Example record: the original's `_decode_record`."""


def decode_record(record, name_to_features):
    """A record as a dict of Tensors, int64 cast to int32 (original: `_decode_record`)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    example = tf.io.parse_single_example(record, name_to_features)
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in example.items()}
