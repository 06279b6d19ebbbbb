"""BERT's inputs for a text or a pair, `[CLS] a [SEP] b [SEP]` (original: convert_single_example).

`build_pair_features` (with `truncate_seq_pair`, the original's
`_truncate_seq_pair`) is the one home of the original's sentence(-pair)
features, which it built in three places (`run_classifier.convert_single_example`,
`extract_features.convert_examples_to_features`, the Colab's
`input_fn_builder`). `FullTokenizer.encode` / `__call__`, the classifier's,
extract_features' and the multiple-choice data use it; `bert_tf.tokenization` and
`bert_tf.tokenization.full_tokenizer` export its names too.

Pure Python, no TensorFlow.
"""

import collections

from bert_tf.errors import UserError

# tokens: list of str (with [CLS]/[SEP]); input_ids, input_mask, segment_ids:
# lists of int (zero padded to max_seq_length when one is given).
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


def pad_features(features, length):
    """`features` with `input_ids`, `input_mask`, `segment_ids` zero-padded to `length`."""
    padding = [0] * (length - len(features.input_ids))
    return features._replace(input_ids=features.input_ids + padding,
                             input_mask=features.input_mask + padding,
                             segment_ids=features.segment_ids + padding)


def build_pair_features(tokens_a, tokens_b, max_seq_length, tokenizer, padding=True):
    """Builds the features of one (pair of) tokenized text(s), as the original's classifier.

    The one home of the original's sentence(-pair) features, which it built
    in three places (`run_classifier.convert_single_example`,
    `extract_features.convert_examples_to_features`, the Colab's
    `input_fn_builder`); the tools' data and `FullTokenizer.encode` /
    `__call__` use it.

    Args:
      tokens_a: list of str WordPiece tokens of the first segment (not modified).
      tokens_b: list of str tokens of the second segment, or None / [] for a
        single segment (the original tests `if tokens_b`, so an empty second
        text gives a single-segment example).
      max_seq_length: int >= 2 (>= 3 for a pair), or None: no truncation and
        no padding.
      tokenizer: has `convert_tokens_to_ids(tokens)`.
      padding: zero-pad to max_seq_length (the original); False leaves the
        features at their own length.

    Returns:
      `PairFeatures`: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` after
      truncation (pairs: `truncate_seq_pair` to max_seq_length - 3, and a b
      truncated to nothing gets no [SEP] of its own; single: the first
      max_seq_length - 2 tokens), segment ids 0 up to the first `[SEP]` and 1
      after, `input_mask` 1 for real tokens, and `input_ids`, `input_mask`,
      `segment_ids` zero-padded to max_seq_length.

    Raises:
      UserError: max_seq_length leaves no room for [CLS] and the [SEP]s.
    """
    tokens_a = list(tokens_a)
    tokens_b = list(tokens_b) if tokens_b else None
    if max_seq_length is not None:
        if max_seq_length < (3 if tokens_b else 2):
            raise UserError("max_seq_length %d is too short for [CLS] a [SEP]%s"
                            % (max_seq_length, " b [SEP]" if tokens_b else ""))
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
    input_ids = list(tokenizer.convert_tokens_to_ids(tokens))
    # The mask has 1 for real tokens and 0 for padding tokens. Only real
    # tokens are attended to.
    input_mask = [1] * len(input_ids)
    features = PairFeatures(tokens, input_ids, input_mask, segment_ids)
    if max_seq_length is not None and padding:
        features = pad_features(features, max_seq_length)
        assert len(features.input_ids) == max_seq_length
    return features
