"""Tests for bert_tf.tokenization.pair_features: `[CLS] a [SEP] b [SEP]`, the original's rules.

Against the original's own features these run through `FullTokenizer.encode`
(tests/test_tokenizer_api.py) and `convert_single_example`
(tests/data/test_classifier_data.py); here: the rules on hand-made tokens,
and that the features have one home.
"""

import pytest

from bert_tf.errors import UserError
from bert_tf.tokenization import pair_features
from tests.test_layout import library_files_matching


class _Ids(object):
    """A tokenizer whose ids are the tokens' positions in a list."""

    def __init__(self, tokens):
        self.ids = {t: i for i, t in enumerate(tokens)}

    def convert_tokens_to_ids(self, tokens):
        return [self.ids[t] for t in tokens]


IDS = _Ids(["[PAD]", "[CLS]", "[SEP]", "a1", "a2", "a3", "b1", "b2", "b3"])


def test_a_pair_is_cls_a_sep_b_sep_with_segment_ids_and_padding():
    f = pair_features.build_pair_features(["a1", "a2"], ["b1"], 8, IDS)
    assert f.tokens == ["[CLS]", "a1", "a2", "[SEP]", "b1", "[SEP]"]
    assert f.input_ids == [1, 3, 4, 2, 6, 2, 0, 0]
    assert f.input_mask == [1, 1, 1, 1, 1, 1, 0, 0]
    assert f.segment_ids == [0, 0, 0, 0, 1, 1, 0, 0]
    unpadded = pair_features.build_pair_features(["a1", "a2"], ["b1"], 8, IDS, padding=False)
    assert unpadded.input_ids == [1, 3, 4, 2, 6, 2]
    assert pair_features.build_pair_features(["a1"], None, None, IDS).input_ids == [1, 3, 2]


def test_truncation_is_the_originals():
    # The longer side loses its last token first; on a tie, b.
    a, b = ["a1", "a2", "a3"], ["b1", "b2", "b3"]
    pair_features.truncate_seq_pair(a, b, 4)
    assert (a, b) == (["a1", "a2"], ["b1", "b2"])
    a, b = ["a1", "a2", "a3"], ["b1"]
    pair_features.truncate_seq_pair(a, b, 3)
    assert (a, b) == (["a1", "a2"], ["b1"])
    # build_pair_features leaves its arguments alone; one segment keeps its head.
    tokens_a = ["a1", "a2", "a3"]
    single = pair_features.build_pair_features(tokens_a, [], 4, IDS)
    assert single.tokens == ["[CLS]", "a1", "a2", "[SEP]"] and len(tokens_a) == 3


def test_too_short_a_max_seq_length_is_one_line():
    with pytest.raises(UserError, match=r"max_seq_length 2 is too short for \[CLS\] a \[SEP\] b"):
        pair_features.build_pair_features(["a1"], ["b1"], 2, IDS)
    with pytest.raises(UserError, match=r"max_seq_length 1 is too short for \[CLS\] a \[SEP\]$"):
        pair_features.build_pair_features(["a1"], None, 1, IDS)


def test_the_pair_features_have_one_home():
    """build_pair_features and truncate_seq_pair live in tokenization; nothing else defines them."""
    from bert_tf import tokenization
    from bert_tf.tokenization import full_tokenizer
    homes = library_files_matching(r"^\s*def (build_pair_features|truncate_seq_pair)\b")
    assert homes == ["bert_tf/tokenization/pair_features.py"]
    for name in ("build_pair_features", "truncate_seq_pair", "PairFeatures"):
        for module in (tokenization, full_tokenizer):
            assert getattr(module, name) is getattr(pair_features, name), (module, name)
