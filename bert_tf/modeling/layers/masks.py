"""The attention mask (original: `create_attention_mask_from_input_mask`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
from keras import ops

# Added to the scores of masked key positions (the original's -10000.0, not
# -inf). Next to any attended key, exp(-10000) underflows to 0, so masked keys
# get probability exactly 0. A row whose input_mask is all zeros gets the same
# -10000.0 added to every score, so its softmax stays that of the raw scores
# (up to float32 rounding at 10000) instead of NaN; it is not uniform. (A much
# larger adder, such as -1e9, would round the scores away and make that row
# uniform: different numbers from the original's.)
MASK_ADDER = -10000.0


def create_attention_mask_from_input_mask(from_tensor, to_mask):
    """Create 3D attention mask from a 2D tensor mask.

    Args:
      from_tensor: 2D or 3D Tensor of shape [batch_size, from_seq_length, ...].
      to_mask: int32 Tensor of shape [batch_size, to_seq_length].

    Returns:
      float Tensor of shape [batch_size, from_seq_length, to_seq_length]: 1.0
      where the key position is attended to, 0.0 where it is masked. Only the
      key ("to") side is masked, as in the original.
    """
    from_shape = ops.shape(from_tensor)
    batch_size, from_seq_length = from_shape[0], from_shape[1]
    to_mask = ops.cast(ops.expand_dims(to_mask, 1), "float32")  # [B, 1, T]
    broadcast_ones = ops.ones((batch_size, from_seq_length, 1), dtype="float32")  # [B, F, 1]
    return broadcast_ones * to_mask  # [B, F, T]


def attention_mask_adder(input_mask, dtype="float32"):
    """`(1 - mask) * -10000.0` shaped [batch_size, 1, 1, to_seq_length].

    The original builds the mask as [B, F, T] (all F rows equal) and expands it
    to [B, 1, F, T]; broadcasting one row gives the same numbers with F times
    less memory.

    Args:
      input_mask: int Tensor of shape [batch_size, to_seq_length]; 1 = attend.
    """
    # expand_dims, not [:, None, None, :]: LiteRT converts it at any length (--quantize=int8).
    mask = ops.expand_dims(ops.expand_dims(ops.cast(input_mask, dtype), 1), 1)  # [B, 1, 1, T]
    return (1.0 - mask) * MASK_ADDER


# ------------------------------------------------------------ the batch's tokens alone
#
# A batch's rows are padded to one length, but every layer of the encoder but
# the attention scores works on each position alone (the dense layers, dropout,
# the residuals, LayerNorm): run on the attended tokens only, packed as [T, D],
# they give the same numbers at those tokens and no work on the padding. The
# attention scores need the rows: the queries, keys and values go back to
# [B, S, ...] (zeros at padding, which the -10000 adder masks out) and the
# context comes back packed (`BertEncoder.skip_padding`).


def token_positions(attention_adder):
    """int32 [T]: the flat positions (row * seq_length + position) of a batch's attended
    tokens, in order, from its `attention_mask_adder` [B, 1, 1, S] (0 where attended)."""
    return ops.cast(ops.reshape(ops.where(ops.reshape(attention_adder, (-1,)) == 0.0), (-1,)),
                    "int32")


def rows_to_tokens(values, positions):
    """[B, S, W] -> [T, W]: the rows' values at the attended tokens (`token_positions`)."""
    return ops.take(ops.reshape(values, (-1, ops.shape(values)[-1])), positions, axis=0)


def tokens_to_rows(values, positions, attention_adder):
    """[T, W] -> [B, S, W]: the tokens' values put back in their rows, 0 at padding."""
    shape = ops.shape(attention_adder)
    batch_size, seq_length, width = shape[0], shape[-1], ops.shape(values)[-1]
    rows = ops.scatter(ops.expand_dims(positions, -1), values,
                       (batch_size * seq_length, width))
    return ops.reshape(rows, (batch_size, seq_length, width))
