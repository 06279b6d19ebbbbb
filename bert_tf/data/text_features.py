"""`[CLS] a [SEP] b [SEP]` features from text (original: `convert_single_example`'s core).

The original builds the same sentence(-pair) features in three places:
`run_classifier.convert_single_example`, `extract_features.convert_examples_to_features`
and the Colab's `input_fn_builder`. They are built here once and used by
extract_features, run_classifier and the SavedModel export.
"""

import collections

# tokens: list of str (with [CLS]/[SEP]); input_ids, input_mask, segment_ids:
# lists of int of length max_seq_length (zero padded).
PairFeatures = collections.namedtuple(
    "PairFeatures", ["tokens", "input_ids", "input_mask", "segment_ids"])


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates a sequence pair in place to the maximum length (original: `_truncate_seq_pair`).

    This is a simple heuristic which will always truncate the longer sequence
    one token at a time (from its end; on a tie, `tokens_b`). This makes more
    sense than truncating an equal percent of tokens from each, since if one
    sequence is very short then each token that's truncated likely contains
    more information than a longer sequence.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def build_pair_features(tokens_a, tokens_b, max_seq_length, tokenizer):
    """Builds the zero-padded features of one (pair of) tokenized text(s).

    Args:
      tokens_a: list of str WordPiece tokens of the first segment (not modified).
      tokens_b: list of str tokens of the second segment, or None / [] for a
        single segment (the original tests `if tokens_b`, so an empty second
        text gives a single-segment example).
      max_seq_length: int >= 2 (>= 3 for a pair).
      tokenizer: has `convert_tokens_to_ids(tokens)`.

    Returns:
      `PairFeatures`: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` after
      truncation (pairs: `truncate_seq_pair` to max_seq_length - 3; single:
      the first max_seq_length - 2 tokens), segment ids 0 up to the first
      `[SEP]` and 1 after, `input_mask` 1 for real tokens, and `input_ids`,
      `input_mask`, `segment_ids` zero-padded to max_seq_length.
    """
    tokens_a = list(tokens_a)
    tokens_b = list(tokens_b) if tokens_b else None
    if tokens_b:
        # Modifies `tokens_a` and `tokens_b` in place so that the total
        # length is less than the specified length.
        # Account for [CLS], [SEP], [SEP] with "- 3"
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        # Account for [CLS] and [SEP] with "- 2"
        tokens_a = tokens_a[0:(max_seq_length - 2)]

    # The convention in BERT is:
    # (a) For sequence pairs:
    #  tokens:   [CLS] is this jack ##son ##ville ? [SEP] no it is not . [SEP]
    #  type_ids: 0     0  0    0    0     0       0 0     1  1  1  1   1 1
    # (b) For single sequences:
    #  tokens:   [CLS] the dog is hairy . [SEP]
    #  type_ids: 0     0   0   0  0     0 0
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    # The mask has 1 for real tokens and 0 for padding tokens. Only real
    # tokens are attended to.
    input_mask = [1] * len(input_ids)
    padding = max_seq_length - len(input_ids)
    input_ids = list(input_ids) + [0] * padding
    input_mask += [0] * padding
    segment_ids += [0] * padding
    assert len(input_ids) == max_seq_length
    return PairFeatures(tokens, input_ids, input_mask, segment_ids)
