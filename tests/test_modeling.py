import glob
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf.modeling import checkpoint
from bert_tf.modeling.heads import BertPretrainingHeads
from bert_tf.modeling.layers import BertSelfAttention, create_attention_mask_from_input_mask
from bert_tf.modeling.layers import attention_mask_adder
from bert_tf.modeling.layers.initializers import layer_norm
from tests import numpy_bert
from tests.conftest import make_inputs
from tests.tolerances import LAYER_ATOL, LAYER_RTOL

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _weights(*layers):
    return {checkpoint.tf1_name(v): v.numpy() for layer in layers for v in layer.weights}


def test_variable_paths_are_the_original_checkpoint_names(tiny_config):
    model = BertModel(tiny_config)
    heads = BertPretrainingHeads(tiny_config)
    got = {v.path: tuple(v.shape) for v in model.weights + heads.weights}
    assert got == dict(checkpoint.expected_tf1_variables(tiny_config, heads=True))


def test_forward_pass_matches_numpy_restatement_of_the_original(tiny_config):
    keras.utils.set_random_seed(1)
    model = BertModel(tiny_config)
    inputs = make_inputs(batch_size=4, seq_length=11)
    out = model(inputs["input_ids"], inputs["input_mask"], inputs["token_type_ids"],
                training=False)
    layers, pooled = numpy_bert.bert_forward(_weights(model), tiny_config, inputs["input_ids"],
                                             inputs["input_mask"], inputs["token_type_ids"])
    assert len(out["all_encoder_layers"]) == tiny_config.num_hidden_layers
    for i, (ours, ref) in enumerate(zip(out["all_encoder_layers"], layers)):
        np.testing.assert_allclose(ours.numpy(), ref, atol=LAYER_ATOL, rtol=LAYER_RTOL,
                                   err_msg="layer_%d" % i)
    np.testing.assert_allclose(out["sequence_output"].numpy(), layers[-1], atol=LAYER_ATOL)
    np.testing.assert_allclose(out["pooled_output"].numpy(), pooled, atol=LAYER_ATOL,
                               rtol=LAYER_RTOL, err_msg="pooled_output")


def test_defaults_for_mask_and_token_types(tiny_config):
    model = BertModel(tiny_config)
    ids = make_inputs()["input_ids"]
    a = model(ids, training=False)["pooled_output"]
    b = model(ids, np.ones_like(ids), np.zeros_like(ids), training=False)["pooled_output"]
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_padding_does_not_change_real_positions(tiny_config):
    model = BertModel(tiny_config)
    inputs = make_inputs(batch_size=2, seq_length=6)
    ids, types = inputs["input_ids"][:, :6], inputs["token_type_ids"][:, :6]
    short = model(ids, np.ones_like(ids), types, training=False)["sequence_output"].numpy()
    pad = np.zeros((2, 5), np.int32)
    padded_ids = np.concatenate([ids, pad + 7], 1)  # garbage ids behind the mask
    mask = np.concatenate([np.ones_like(ids), pad], 1)
    long = model(padded_ids, mask, np.concatenate([types, pad], 1),
                 training=False)["sequence_output"].numpy()
    # -10000 is not -inf: exp(-10000) underflows to exactly 0 in float32.
    np.testing.assert_allclose(long[:, :6], short, atol=1e-6)


def test_dropout_only_when_training():
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, hidden_dropout_prob=0.5,
                        attention_probs_dropout_prob=0.5)
    model = BertModel(config)
    ids = make_inputs(vocab_size=50)["input_ids"]
    a = model(ids, training=False)["sequence_output"].numpy()
    b = model(ids, training=False)["sequence_output"].numpy()
    c = model(ids, training=True)["sequence_output"].numpy()
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-3


def test_xla_compiled_call_equals_eager(tiny_config):
    model = BertModel(tiny_config)
    inputs = make_inputs()
    args = (inputs["input_ids"], inputs["input_mask"], inputs["token_type_ids"])
    eager = model(*args, training=False)["pooled_output"].numpy()
    compiled = tf.function(lambda *a: model(*a, training=False)["pooled_output"],
                           jit_compile=True)(*args).numpy()
    np.testing.assert_allclose(compiled, eager, atol=1e-5)


def test_sequence_longer_than_max_position_embeddings_is_an_error(tiny_config):
    model = BertModel(tiny_config)
    ids = np.zeros((1, tiny_config.max_position_embeddings + 1), np.int32)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(ids)


def test_get_config_round_trip(tiny_config):
    model = BertModel(tiny_config)
    clone = BertModel.from_config(model.get_config())
    assert clone.config.to_dict() == tiny_config.to_dict()
    assert [v.path for v in clone.weights] == [v.path for v in model.weights]
    layer = BertSelfAttention(hidden_size=32, num_attention_heads=4, name="self")
    assert BertSelfAttention.from_config(layer.get_config()).get_config() == layer.get_config()


def test_attention_mask_is_key_side_only():
    mask = create_attention_mask_from_input_mask(np.zeros((2, 3), np.int32),
                                                 np.array([[1, 1, 0, 0], [1, 0, 0, 0]], np.int32))
    mask = np.asarray(mask)
    assert mask.shape == (2, 3, 4)
    np.testing.assert_array_equal(mask[0], [[1, 1, 0, 0]] * 3)
    np.testing.assert_array_equal(mask[1], [[1, 0, 0, 0]] * 3)


def test_attention_mask_adder_is_the_originals_minus_10000():
    adder = np.asarray(attention_mask_adder(np.array([[1, 1, 0], [0, 0, 0]], np.int32)))
    assert adder.shape == (2, 1, 1, 3)
    np.testing.assert_array_equal(
        adder[:, 0, 0], [[0.0, 0.0, -10000.0], [-10000.0, -10000.0, -10000.0]],
        err_msg="the attention mask adder must be the original's (1 - mask) * -10000.0")
    # What the value changes: a row whose input_mask is all zeros keeps the
    # softmax of its raw scores (float32 rounding at 10000 aside), where a
    # larger adder (-1e9) would make it uniform.
    scores = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    probs = np.asarray(keras.ops.softmax(scores + np.float32(-10000.0)))
    np.testing.assert_allclose(probs, numpy_bert.softmax(scores.astype(np.float64)), atol=1e-3)
    assert np.abs(probs - 0.25).max() > 0.3


def test_layer_norm_epsilon_is_1e_12_on_rows_of_tiny_variance():
    """The original's LayerNorm epsilon is 1e-12; rows whose variance is near it show it.

    With variance 1e-12 the epsilon changes the output by a factor sqrt(2);
    an epsilon of 1e-6 would shrink these rows by a factor of 30 to 1000.
    """
    rng = np.random.RandomState(0)
    stddevs = np.array([1e-6, 3e-6, 1e-5, 3e-5, 1.0])[:, None]  # variances 1e-12 .. 1
    x = (rng.randn(5, 32) * stddevs).astype(np.float32)
    x -= x.mean(-1, keepdims=True)  # zero-mean rows: no cancellation in float32
    norm = layer_norm()
    gamma = rng.uniform(0.5, 1.5, 32).astype(np.float32)
    beta = rng.uniform(-0.1, 0.1, 32).astype(np.float32)
    norm.build((None, 32))
    norm.set_weights([gamma, beta])
    ours = np.asarray(norm(x))
    want = numpy_bert.layer_norm(x.astype(np.float64), gamma, beta)
    for row, stddev in enumerate(stddevs[:, 0]):
        np.testing.assert_allclose(
            ours[row], want[row], atol=LAYER_ATOL, rtol=LAYER_RTOL,
            err_msg="LayerNorm of a row with variance %.0e: epsilon must be the original's "
                    "1e-12" % stddev ** 2)


def test_heads_match_numpy_restatement(tiny_config):
    model = BertModel(tiny_config)
    heads = BertPretrainingHeads(tiny_config)
    inputs = make_inputs()
    out = model(inputs["input_ids"], inputs["input_mask"], inputs["token_type_ids"])
    mlm, nsp = heads(out["sequence_output"], out["pooled_output"],
                     inputs["masked_lm_positions"], model.embedding_table)
    w = _weights(model, heads)
    seq = out["sequence_output"].numpy().astype(np.float64)
    gathered = np.take_along_axis(seq, inputs["masked_lm_positions"][:, :, None], axis=1)
    x = numpy_bert.gelu(gathered @ w["cls/predictions/transform/dense/kernel"]
                        + w["cls/predictions/transform/dense/bias"])
    x = numpy_bert.layer_norm(x, w["cls/predictions/transform/LayerNorm/gamma"],
                              w["cls/predictions/transform/LayerNorm/beta"])
    ref_mlm = x @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    ref_nsp = (out["pooled_output"].numpy() @ w["cls/seq_relationship/output_weights"].T
               + w["cls/seq_relationship/output_bias"])
    assert mlm.shape == (3, 4, tiny_config.vocab_size)
    np.testing.assert_allclose(mlm.numpy(), ref_mlm, atol=LAYER_ATOL, rtol=LAYER_RTOL)
    np.testing.assert_allclose(nsp.numpy(), ref_nsp, atol=LAYER_ATOL, rtol=LAYER_RTOL)


def test_bundled_configs_build_the_released_architectures():
    paths = sorted(glob.glob(os.path.join(REPO, "configs", "*.json")))
    assert len(paths) >= 32
    for path in paths:
        config = BertConfig.from_json_file(path)
        name = os.path.basename(path)[:-5]
        # The directory names encode the architecture: L layers, H hidden, A heads.
        parts = dict(p.split("-") for p in name.split("_") if "-" in p)
        assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (
            int(parts["L"]), int(parts["H"]), int(parts["A"])), name
        assert config.intermediate_size == 4 * config.hidden_size
        assert config.type_vocab_size == 2


@pytest.mark.slow
def test_bert_base_has_the_original_parameter_count():
    # The original graph for BERT-Base uncased plus the pre-training heads:
    # 206 variables, 110,106,428 parameters.
    config = BertConfig.from_json_file(os.path.join(REPO, "configs", "uncased_L-12_H-768_A-12.json"))
    variables = checkpoint.expected_tf1_variables(config, heads=True)
    assert len(variables) == 206
    assert sum(int(np.prod(s)) for s in variables.values()) == 110106428
    model = BertModel(config)
    heads = BertPretrainingHeads(config)
    assert len(model.weights) + len(heads.weights) == 206
    assert sum(int(np.prod(v.shape)) for v in model.weights + heads.weights) == 110106428


def test_bert_dense_is_keras_dense_with_a_fused_2d_matmul():
    """BertDense: keras.layers.Dense's variables, config and numbers, on 2-D and 3-D inputs."""
    from bert_tf.modeling import activations
    from bert_tf.modeling.layers.dense import BertDense
    from bert_tf.modeling import precision

    rng = np.random.RandomState(0)
    for activation in (None, activations.gelu, "tanh"):
        ours = BertDense(24, activation=activation, name="dense")
        ref = keras.layers.Dense(24, activation=activation, name="dense")
        ours.build((None, None, 16))
        ref.build((None, None, 16))
        assert [v.path for v in ours.weights] == ["dense/kernel", "dense/bias"]
        ref.set_weights([rng.normal(size=(16, 24)).astype("float32"),
                         rng.normal(size=(24,)).astype("float32")])
        ours.set_weights(ref.get_weights())
        for shape in ((5, 16), (3, 7, 16)):
            x = rng.normal(size=shape).astype("float32")
            got = tf.function(ours)(x).numpy()  # under tf.function, as the models run
            assert got.shape == shape[:-1] + (24,)
            np.testing.assert_allclose(got, ref(x).numpy(), atol=LAYER_ATOL, rtol=LAYER_RTOL)
        clone = BertDense.from_config(ours.get_config())
        assert clone.get_config() == ours.get_config()
    with precision.dtype_policy("bf16"):
        mixed = BertDense(24, name="dense")
    mixed.build((None, None, 16))
    mixed.set_weights(ref.get_weights())
    out = mixed(x)
    assert out.dtype == "bfloat16" and mixed.kernel.dtype == "float32"
    want = keras.layers.Dense(24, activation="tanh")
    want.build((None, None, 16))
    want.set_weights(ref.get_weights())
    np.testing.assert_allclose(np.tanh(out.numpy().astype("float32")), want(x).numpy(), atol=0.1)


def test_gelu_is_the_originals_tanh_formula():
    import math

    from bert_tf.modeling import activations

    x = np.linspace(-6, 6, 2001).astype("float32")
    want = x * 0.5 * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(activations.gelu(x).numpy(), want, atol=LAYER_ATOL, rtol=LAYER_RTOL)


def test_the_test_processes_keep_the_grappler_passes_that_change_results():
    """conftest turns off the passes that only rewrite; the fusions users get stay on."""
    from tests.conftest import TEST_PROCESS_GRAPPLER_OFF
    options = tf.config.optimizer.get_experimental_options()
    assert all(options.get(name) is False for name in TEST_PROCESS_GRAPPLER_OFF), options
    for kept in ("remapping", "arithmetic_optimization", "function_optimization"):
        assert options.get(kept, True) is not False, kept
