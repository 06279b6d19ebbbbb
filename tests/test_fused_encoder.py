"""The exports' fused inference pass (bert_tf.export.fused_encoder) equals BertEncoder's."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf.export import fused_encoder
from bert_tf.modeling import precision
from tests.conftest import TINY_CONFIG, make_inputs
from tests.tolerances import MODEL_ATOL


def _model(hidden_act="gelu", seed=5):
    keras.utils.set_random_seed(seed)
    model = BertModel(BertConfig.from_dict(dict(TINY_CONFIG, hidden_act=hidden_act)))
    inputs = make_inputs()
    _call(model, inputs)
    return model, inputs


def _call(model, inputs, **kwargs):
    kwargs.setdefault("training", False)
    return model(inputs["input_ids"], input_mask=inputs["input_mask"],
                 token_type_ids=inputs["token_type_ids"], **kwargs)


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_exact", "relu"])
def test_the_fused_pass_equals_the_layers(hidden_act):
    model, inputs = _model(hidden_act)
    want = _call(model, inputs)
    fused = fused_encoder.FusedEncoder(model.encoder)
    model.encoder.set_inference_pass(fused)
    got = tf.function(lambda: _call(model, inputs))()
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(got[name].numpy(), want[name].numpy(), atol=MODEL_ATOL,
                                   err_msg=name)
    for got_layer, want_layer in zip(got["all_encoder_layers"], want["all_encoder_layers"]):
        np.testing.assert_allclose(got_layer.numpy(), want_layer.numpy(), atol=MODEL_ATOL)
    # It stands for each layer's query, key and value, and nothing else.
    assert len(fused.replaced_variables()) == 6 * TINY_CONFIG["num_hidden_layers"]
    assert {v.path.rsplit("/", 2)[-2] for v in fused.replaced_variables()} == {
        "query", "key", "value"}


def test_training_head_masks_and_attentions_take_the_layers():
    model, inputs = _model()
    calls = []
    fused = fused_encoder.FusedEncoder(model.encoder)
    model.encoder.set_inference_pass(lambda *args: calls.append(1) or fused(*args))
    _call(model, inputs)
    assert calls == [1]
    _call(model, inputs, training=True)
    _call(model, inputs, output_attentions=True)
    _call(model, inputs, head_mask=np.ones((2, 4), np.float32))
    assert calls == [1]
    model.encoder.set_inference_pass(None)
    _call(model, inputs)
    assert calls == [1]


def test_only_float32_encoders_with_every_head_are_fused():
    model, _ = _model()
    assert fused_encoder.fusable(model)
    model.prune_heads({0: [1]})
    assert not fused_encoder.fusable(model)
    with precision.inference_policy("bf16"):
        bf16 = BertModel(BertConfig.from_dict(dict(TINY_CONFIG)))
    bf16(np.ones((1, 4), np.int32))
    assert not fused_encoder.fusable(bf16)
