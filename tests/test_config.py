import json

import pytest

from bert_tf import BertConfig
from bert_tf.errors import UserError
from tests.conftest import TINY_CONFIG, write_config


def test_json_round_trip_uses_the_original_format(tmp_path):
    config = BertConfig.from_json_file(write_config(tmp_path / "c.json", TINY_CONFIG))
    text = config.to_json_string()
    # The original: json.dumps(to_dict(), indent=2, sort_keys=True) + "\n".
    assert text == json.dumps(TINY_CONFIG, indent=2, sort_keys=True) + "\n"
    assert BertConfig.from_dict(json.loads(text)).to_dict() == config.to_dict()


def test_extra_keys_are_kept_and_missing_keys_take_the_original_defaults(tmp_path):
    data = dict(TINY_CONFIG, pooler_type="first_token_transform", directionality="bidi")
    del data["type_vocab_size"]
    config = BertConfig.from_dict(data)
    assert config.pooler_type == "first_token_transform"
    assert config.type_vocab_size == 16  # the original constructor's default, not 2


@pytest.mark.parametrize("change, needle", [
    ({"vocab_size": None}, "vocab_size"),
    ({"hidden_size": "32"}, "hidden_size"),
    ({"num_attention_heads": 5}, "not a multiple of num_attention_heads"),
    ({"hidden_act": "swishy"}, "hidden_act"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
])
def test_bad_values_name_the_key(tmp_path, change, needle):
    data = dict(TINY_CONFIG, **change)
    if change.get("vocab_size", 0) is None:
        del data["vocab_size"]
    path = write_config(tmp_path / "bad.json", data)
    with pytest.raises(UserError) as e:
        BertConfig.from_json_file(path)
    assert needle in str(e.value)
    assert "bad.json" in str(e.value)
    assert "\n" not in str(e.value)


def test_malformed_and_missing_files(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"vocab_size": 3,')
    with pytest.raises(UserError, match="broken.json: not valid JSON"):
        BertConfig.from_json_file(str(bad))
    with pytest.raises(UserError, match="no such file"):
        BertConfig.from_json_file(str(tmp_path / "absent.json"))


def test_gelu_exact_is_selectable():
    import numpy as np
    from bert_tf.modeling import activations
    x = np.linspace(-3, 3, 13).astype("float32")
    tanh_form = np.asarray(activations.get_activation("gelu")(x))
    erf_form = np.asarray(activations.get_activation("gelu_exact")(x))
    from math import erf, sqrt
    np.testing.assert_allclose(erf_form, [0.5 * v * (1 + erf(v / sqrt(2))) for v in x], atol=1e-6)
    assert np.abs(tanh_form - erf_form).max() > 1e-5  # really two different functions
    assert activations.get_activation("linear") is None
    assert activations.get_activation("") is None
