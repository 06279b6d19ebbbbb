"""Recomputation (`gradient_checkpointing`): each encoder layer run again in the backward
pass, with the same dropout masks, so the gradients are the plain model's.

tools/run_pretraining.py's `--gradient_checkpointing` runs in this process
(`toolrun.run_tool`: the flags parsed and the library called as the command
line does).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.layers.transformer import BertIntermediate
from bert_tf.tasks.classifier.model import BertClassifier
from tests.conftest import TINY_CONFIG, make_inputs
from tests.tools import toolrun

# The recomputed pass's ops are the first pass's, in another graph: float32 noise.
GRAD_RTOL = GRAD_ATOL = 1e-5


def _config(dropout=0.1, **overrides):
    return BertConfig.from_dict(dict(TINY_CONFIG, hidden_dropout_prob=dropout,
                                     attention_probs_dropout_prob=dropout, **overrides))


def _loss_and_grads(model, inputs, training=True, **kwargs):
    with tf.GradientTape() as tape:
        outputs = model(inputs["input_ids"], input_mask=inputs["input_mask"],
                        token_type_ids=inputs["token_type_ids"], training=training, **kwargs)
        loss = tf.reduce_sum(outputs["sequence_output"] ** 2) + tf.reduce_sum(
            outputs["pooled_output"])
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, [tf.convert_to_tensor(g) for g in grads]


def _twins(dropout, strategy=None):
    """The same model (weights and dropout seeds) without and with recomputation."""
    models = []
    for gradient_checkpointing in (False, True):
        keras.utils.set_random_seed(7)
        with strategy.scope() if strategy else tf.init_scope():
            models.append(BertModel(_config(dropout),
                                    gradient_checkpointing=gradient_checkpointing))
    return models


def _assert_same(first, second):
    (loss0, grads0), (loss1, grads1) = first, second
    # The same forward pass, the same dropout masks (other masks: another loss by far more).
    np.testing.assert_allclose(float(loss1), float(loss0), rtol=1e-6)
    for g0, g1 in zip(grads0, grads1):
        np.testing.assert_allclose(g1, g0, rtol=GRAD_RTOL, atol=GRAD_ATOL)


@pytest.mark.slow
@pytest.mark.parametrize("run, dropout", [("eager", 0.0), ("tf.function", 0.0), ("eager", 0.1),
                                          ("tf.function", 0.1), ("mirrored", 0.1)])
def test_recomputed_gradients_are_the_plain_models(run, dropout):
    inputs = make_inputs()
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"]) if run == "mirrored" else None
    results = []
    for model in _twins(dropout, strategy):
        step = lambda m=model: _loss_and_grads(m, inputs)  # noqa: E731
        if run == "tf.function":
            results.append(tf.function(step)())
        elif run == "mirrored":
            loss, grads = tf.function(lambda: strategy.run(step))()
            results.append((loss, grads))
        else:
            results.append(step())
    _assert_same(*results)
    if dropout:
        # The masks matter: without dropout the loss is another.
        loss, _ = _loss_and_grads(_twins(dropout)[0], inputs, training=False)
        assert float(loss) != float(results[0][0])


def test_each_layer_runs_again_in_the_backward_pass_only_when_training(monkeypatch):
    calls = []
    original_call = BertIntermediate.call
    monkeypatch.setattr(BertIntermediate, "call",
                        lambda self, x: calls.append(self.path) or original_call(self, x))
    plain, recomputed = _twins(0.1)
    inputs = make_inputs()
    _loss_and_grads(plain, inputs)
    assert len(calls) == 2  # two layers
    del calls[:]
    _loss_and_grads(recomputed, inputs)
    assert sorted(calls) == sorted(["bert/encoder/layer_0/intermediate",
                                    "bert/encoder/layer_1/intermediate"] * 2)
    del calls[:]
    _loss_and_grads(recomputed, inputs, training=False)
    assert len(calls) == 2


def test_head_mask_and_attentions_under_recomputation():
    inputs = make_inputs()
    head_mask = tf.constant([[1.0, 0.5, 0.0, 1.0], [0.25, 1.0, 1.0, 0.0]])
    results = []
    for model in _twins(0.1):
        with tf.GradientTape() as tape:
            tape.watch(head_mask)
            outputs = model(inputs["input_ids"], input_mask=inputs["input_mask"],
                            training=True, head_mask=head_mask, output_attentions=True)
            loss = tf.reduce_sum(outputs["sequence_output"] ** 2)
        results.append((loss, [tape.gradient(loss, head_mask)], outputs["attentions"]))
    _assert_same(results[0][:2], results[1][:2])
    for a0, a1 in zip(results[0][2], results[1][2]):
        np.testing.assert_array_equal(a0, a1)


def test_the_option_is_in_the_config_only_when_set(tmp_path):
    config = _config()
    assert config.gradient_checkpointing is False
    assert "gradient_checkpointing" not in config.to_dict()
    assert not BertModel(config).gradient_checkpointing
    config.gradient_checkpointing = True
    assert config.to_dict()["gradient_checkpointing"] is True
    path = str(tmp_path / "bert_config.json")
    config.to_json_file(path)
    loaded = BertConfig.from_json_file(path)
    assert loaded.gradient_checkpointing is True
    model = BertModel(loaded)
    assert model.gradient_checkpointing
    assert all(layer.gradient_checkpointing for layer in model.encoder.layers)
    # The constructor's argument wins; Keras' config keeps it.
    model = BertModel(_config(), gradient_checkpointing=True)
    assert BertModel.from_config(model.get_config()).gradient_checkpointing
    model.gradient_checkpointing_disable()
    assert not model.gradient_checkpointing
    with pytest.raises(UserError, match='key "gradient_checkpointing" must be true or false'):
        BertConfig.from_dict(dict(TINY_CONFIG, gradient_checkpointing="yes"))


@pytest.mark.slow
def test_keras_fit_step_of_a_task_model_is_the_plain_ones():
    inputs = make_inputs(batch_size=4)
    x = {"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
         "segment_ids": inputs["token_type_ids"]}
    y = np.array([0, 1, 1, 0], np.int32)
    losses, weights = [], []
    for gradient_checkpointing in (False, True):
        keras.utils.set_random_seed(3)
        model = BertClassifier(_config(0.1, gradient_checkpointing=gradient_checkpointing),
                               num_labels=2)
        assert model.bert.gradient_checkpointing == gradient_checkpointing
        model.compile(optimizer=keras.optimizers.SGD(0.1))
        losses.append(model.train_on_batch(x, y, return_dict=True)["loss"])
        weights.append(model.bert.get_weights())
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)
    for w0, w1 in zip(*weights):
        np.testing.assert_allclose(w1, w0, rtol=GRAD_RTOL, atol=GRAD_ATOL)


@pytest.mark.slow
def test_run_pretraining_with_the_flag_trains(tmp_path):
    from tests.test_pretraining import random_batches, tiny_config, write_config, write_records
    config_file = write_config(tiny_config(dropout=0.1), str(tmp_path / "bert_config.json"))
    input_file = write_records(str(tmp_path / "data.tfrecord"), random_batches(2, seed=5))
    output_dir = tmp_path / "output"
    _, log = toolrun.run_tool("run_pretraining", [
        "--input_file=%s" % input_file, "--output_dir=%s" % output_dir,
        "--bert_config_file=%s" % config_file, "--do_train=True", "--train_batch_size=8",
        "--max_seq_length=16", "--max_predictions_per_seq=4", "--num_train_steps=2",
        "--num_warmup_steps=1", "--learning_rate=1e-3", "--distribution_strategy=mirrored",
        "--num_gpus=0", "--gradient_checkpointing"])
    assert "Each encoder layer is recomputed in the backward pass (--gradient_checkpointing)" in log
    assert "step 2/2: loss = " in log
    assert tf.train.latest_checkpoint(str(output_dir)) == str(output_dir / "model.ckpt-2")
    # The run's config is the user's: the option is not a model key.
    with open(config_file) as f:
        assert "gradient_checkpointing" not in f.read()
