"""No work on padding: a batch cut after its last attended position, its outputs put back.

Rows are padded to `max_seq_length`, but a batch needs only the positions up
to its longest row's last token: every other position is masked out of every
attention (-10000, an exact 0 after the softmax) and read by no loss, so the
outputs at the kept positions are those of the whole rows, up to float32
rounding of the shorter sums. The length is rounded up to a multiple of a few
positions (at most the rows' length), so a run or a server sees few distinct
shapes. The exports cut every request so (`bert_tf.export.serving_module`),
and so do training, evaluation and prediction (`bert_tf.tasks.base.Task.trim_padding`,
`bert_tf.training.steps`).

The padding inside the cut, in every row shorter than the longest, is
skipped too where the task reads no padding position (`padding_skipped`):
the encoder then runs on the batch's attended tokens alone
(`BertEncoder.skip_padding`).
"""

import contextlib

import numpy as np
import tensorflow as tf

# An export's rows are cut to a multiple of this many positions (at most their length).
LENGTH_MULTIPLE = 16
# Training, evaluation and prediction's: finer (less padding computed), still few shapes.
TRAINING_LENGTH_MULTIPLE = 8


def attended_length(input_mask, multiple=LENGTH_MULTIPLE):
    """int32 scalar: the positions a batch needs.

    The last position where any row's `input_mask` is not 0, rounded up to a
    multiple of `multiple`, at least 1 and at most the rows' length.

    Args:
      input_mask: int Tensor [..., seq_length].
    """
    seq_length = tf.shape(input_mask)[-1]
    attended = tf.reshape(tf.cast(input_mask != 0, tf.int32), [-1, seq_length])  # [rows, S]
    last = tf.reduce_max(attended * tf.range(1, seq_length + 1)[None, :])  # 0: no row attends
    return tf.minimum(seq_length, tf.maximum(1, -(-last // multiple) * multiple))


def numpy_attended_length(input_mask, multiple=LENGTH_MULTIPLE):
    """`attended_length` of a NumPy mask, as a Python int (rows cut before they reach a graph)."""
    input_mask = np.asarray(input_mask)
    seq_length = input_mask.shape[-1]
    columns = np.flatnonzero(np.any(input_mask.reshape(-1, seq_length) != 0, axis=0))
    last = int(columns[-1]) + 1 if columns.size else 0
    return min(seq_length, max(1, -(-last // multiple) * multiple))


def trim_padding(features, keys=None, multiple=LENGTH_MULTIPLE, mask=None):
    """The features cut after the batch's last attended position (`attended_length`).

    Args:
      features: dict of Tensors with `input_mask` [..., seq_length].
      keys: the features cut with it, along the mask's last axis; None: every
        value of the mask's rank, cut along its last axis (a feature of another
        rank, such as the windows' `text_index`, is kept).
      multiple: the rounding of the length.
      mask: the mask the length is read from, of input_mask's shape (default:
        `input_mask`; a task whose labels may lie beyond it adds them).

    Returns:
      A new dict: the features in `keys` cut to [..., length, ...]; the others as given.
    """
    if mask is None:
        mask = features["input_mask"]
    rank = mask.shape.rank
    length = attended_length(mask, multiple)
    if keys is None:
        keys = [key for key, value in features.items() if value.shape.rank == rank]
    trimmed = dict(features)
    for key in keys:
        value = features.get(key)
        if value is not None:
            trimmed[key] = value[(slice(None),) * (rank - 1) + (slice(0, length),)]
    return trimmed


def pad_to_length(value, length, axis=1, constant=0):
    """`value` padded with `constant` along `axis` up to `length` positions (a cut put back).

    Args:
      value: Tensor [..., cut, ...], `cut <= length` along `axis`.
      length: int or int32 scalar Tensor, the rows' length.
    """
    value = tf.convert_to_tensor(value)
    paddings = [[0, 0]] * value.shape.rank
    paddings[axis] = [0, length - tf.shape(value)[axis]]
    padded = tf.pad(value, paddings, constant_values=tf.cast(constant, value.dtype))
    if isinstance(length, int):
        shape = value.shape.as_list()
        shape[axis] = length
        padded.set_shape(shape)
    return padded


@contextlib.contextmanager
def padding_skipped(model):
    """Within: every `BertEncoder` of `model` runs on the attended tokens alone.

    `BertEncoder.skip_padding` is set while the block runs (and put back
    after), so a `tf.function` traced inside builds the packed pass: the
    dense layers, dropout and LayerNorm on [T, D] (T the batch's attended
    tokens), the attention scores in the rows. For a task that reads no
    padding position (`Task.skips_padding`): its numbers stay the whole
    rows'; the encoder's outputs are 0 at padding. The encoders are found
    by that switch (a layer that has a `skip_padding` attribute), so this
    module imports no layer.
    """
    encoders = [layer for layer in model._flatten_layers()  # pylint: disable=protected-access
                if hasattr(layer, "skip_padding")]
    before = [encoder.skip_padding for encoder in encoders]
    for encoder in encoders:
        encoder.skip_padding = True
    try:
        yield
    finally:
        for encoder, value in zip(encoders, before):
            encoder.skip_padding = value
