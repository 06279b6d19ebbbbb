"""Tests for bert_tf/training/optimization.py (original: optimization.py, optimization_test.py).

* NumPy re-statements of the schedule, one AdamWeightDecay step, and LAMB steps.
* The original's optimization_test (100 steps, w -> x).
* Differential (`original`): tests/original/optimizer_oracle.py runs the
  original `create_optimizer` train op for 5 steps on a BERT-named graph; ours
  must give the same parameters, adam_m and adam_v after every step. (The
  oracle pins the original's racy global_step increment after the update; see
  its docstring.)
* MirroredStrategy over 2 logical CPUs gives the one-device result (subprocess).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import optimization
from bert_tf.errors import UserError

# One optimizer step in float32, ours vs the original or NumPy.
STEP_ATOL = 1e-6
STEP_RTOL = 1e-6

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The differential test's variables (TF1 name -> shape). The loss uses all
# but the pooler kernel, whose gradient is therefore None.
VARIABLE_SHAPES = {
    "bert/embeddings/word_embeddings": (7, 4),
    "bert/encoder/layer_0/attention/output/dense/kernel": (4, 4),
    "bert/encoder/layer_0/attention/output/dense/bias": (4,),
    "bert/encoder/layer_0/attention/output/LayerNorm/gamma": (4,),
    "bert/encoder/layer_0/attention/output/LayerNorm/beta": (4,),
    "bert/pooler/dense/kernel": (4, 4),
    "cls/predictions/output_bias": (7,),
}
DECAYED = {"bert/embeddings/word_embeddings",
           "bert/encoder/layer_0/attention/output/dense/kernel",
           "bert/pooler/dense/kernel"}


# ----------------------------------------------------------------- helpers

class _Scope(keras.layers.Layer):
    """A TF1 variable scope as a Keras layer: weights `values` plus child scopes."""

    def __init__(self, name, values=None, children=()):
        super().__init__(name=name)
        self.values = dict(values or {})
        self.children_scopes = list(children)

    def build(self, input_shape=None):
        for child in self.children_scopes:
            child.build()
        for leaf, value in self.values.items():
            self.add_weight(name=leaf, shape=value.shape,
                            initializer=keras.initializers.Constant(value))
        self.built = True


def _make_variables(values):
    """Keras variables in nested layers whose `.path` is the TF1 name.

    Args:
      values: dict TF1 name -> np.ndarray initial value.
    Returns:
      dict TF1 name -> keras.Variable.
    """
    tree = {}
    for name, value in values.items():
        *scopes, leaf = name.split("/")
        node = tree
        for scope in scopes:
            node = node.setdefault(scope, {})
        node[leaf] = value

    def make(name, node):
        children = [make(k, v) for k, v in node.items() if isinstance(v, dict)]
        leaves = {k: v for k, v in node.items() if not isinstance(v, dict)}
        return _Scope(name, leaves, children)

    roots = [make(name, node) for name, node in tree.items()]
    variables = {}
    for root in roots:
        root.build()
        for v in root.weights:
            variables[v.path] = v
    assert sorted(variables) == sorted(values)
    return variables


def _loss(v, ids, targets, loss_scale):
    """tests/original/optimizer_oracle.py `build_loss`, in TF2."""
    word_embeddings = v["bert/embeddings/word_embeddings"]
    prefix = "bert/encoder/layer_0/attention/output/"
    h = tf.gather(word_embeddings, ids)                                       # [B, 4]
    h = tf.matmul(h, v[prefix + "dense/kernel"]) + v[prefix + "dense/bias"]
    h = h * v[prefix + "LayerNorm/gamma"] + v[prefix + "LayerNorm/beta"]
    logits = tf.matmul(h, word_embeddings, transpose_b=True)                  # [B, 7]
    logits += v["cls/predictions/output_bias"]
    return loss_scale * tf.reduce_sum(tf.square(logits - targets))


def _np_schedule(step, init_lr, num_train_steps, num_warmup_steps):
    lr = init_lr * (1.0 - min(step, num_train_steps) / num_train_steps)
    if num_warmup_steps and step < num_warmup_steps:
        lr = init_lr * step / num_warmup_steps
    return lr


def _np_adamw(param, grad, m, v, lr, weight_decay_rate, decay,
              beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """The original AdamWeightDecayOptimizer step, in float64 NumPy."""
    m = beta_1 * m + (1 - beta_1) * grad
    v = beta_2 * v + (1 - beta_2) * grad ** 2
    update = m / (np.sqrt(v) + epsilon)
    if decay:
        update = update + weight_decay_rate * param
    return param - lr * update, m, v


def _np_lamb(param, grad, m, v, t, lr, weight_decay_rate, decay, adapt,
             beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """One LAMB step (You et al. 2019 / Model Garden), in float64 NumPy; t is 1-based."""
    m = beta_1 * m + (1 - beta_1) * grad
    v = beta_2 * v + (1 - beta_2) * grad ** 2
    update = (m / (1 - beta_1 ** t)) / (np.sqrt(v / (1 - beta_2 ** t)) + epsilon)
    if decay:
        update = update + weight_decay_rate * param
    ratio = 1.0
    if adapt:
        w_norm, u_norm = np.linalg.norm(param), np.linalg.norm(update)
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return param - ratio * lr * update, m, v


def _random_values(rng, shapes):
    return {name: rng.normal(0.0, 0.5, shape).astype(np.float32) for name, shape in shapes.items()}


# ----------------------------------------------------------------- schedule

def test_schedule_hand_values():
    # init_lr 0.1, 10 train steps, 2 warmup steps: warmup 0, 0.05; then decay
    # from step 0: 0.1 * (1 - t/10), i.e. 0.08 at t=2 (the original's dip).
    schedule = optimization.WarmupLinearDecay(0.1, 10, 2)
    expected = {0: 0.0, 1: 0.05, 2: 0.08, 3: 0.07, 5: 0.05, 9: 0.01, 10: 0.0, 15: 0.0}
    for step, lr in expected.items():
        np.testing.assert_allclose(float(schedule(tf.constant(step, tf.int64))), lr,
                                   rtol=1e-6, atol=1e-8, err_msg="step %d" % step)
    for step in range(20):
        np.testing.assert_allclose(float(schedule(step)), _np_schedule(step, 0.1, 10, 2),
                                   rtol=1e-6, atol=1e-8, err_msg="step %d" % step)


@pytest.mark.parametrize("num_warmup_steps", [0, None])
def test_schedule_without_warmup(num_warmup_steps):
    schedule = optimization.WarmupLinearDecay(2e-5, 100, num_warmup_steps)
    np.testing.assert_allclose(float(schedule(0)), 2e-5, rtol=1e-6)
    np.testing.assert_allclose(float(schedule(25)), 1.5e-5, rtol=1e-6)
    np.testing.assert_allclose(float(schedule(100)), 0.0, atol=1e-12)


def test_schedule_config_round_trip_and_bad_values():
    schedule = optimization.WarmupLinearDecay(1e-4, 1000, 10)
    config = schedule.get_config()
    assert config == {"init_lr": 1e-4, "num_train_steps": 1000, "num_warmup_steps": 10}
    clone = optimization.WarmupLinearDecay.from_config(config)
    assert float(clone(5)) == float(schedule(5))
    clone = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert isinstance(clone, optimization.WarmupLinearDecay)
    with pytest.raises(UserError, match="num_train_steps"):
        optimization.WarmupLinearDecay(1e-4, 0, 0)
    with pytest.raises(UserError, match="num_warmup_steps"):
        optimization.WarmupLinearDecay(1e-4, 10, -1)


# ----------------------------------------------------------------- AdamWeightDecay

def test_adam_weight_decay_one_step_matches_numpy():
    rng = np.random.RandomState(1)
    values = _random_values(rng, {
        "bert/encoder/layer_0/output/dense/kernel": (3, 2),
        "bert/encoder/layer_0/output/dense/bias": (2,),
        "bert/encoder/layer_0/output/LayerNorm/gamma": (2,),
    })
    variables = _make_variables(values)
    var_list = list(variables.values())
    grads = {n: rng.normal(0, 1, values[n].shape).astype(np.float32) for n in values}
    optimizer = optimization.AdamWeightDecay(
        learning_rate=0.01, weight_decay_rate=0.1,
        exclude_from_weight_decay=list(optimization.DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY))
    optimizer.apply([tf.constant(grads[v.path]) for v in var_list], var_list)
    for name, variable in variables.items():
        decay = name.endswith("kernel")
        assert optimizer.uses_weight_decay(variable) == decay, name
        p, m, v = _np_adamw(values[name].astype(np.float64), grads[name].astype(np.float64),
                            0.0, 0.0, lr=0.01, weight_decay_rate=0.1, decay=decay)
        slots = optimizer.get_slot_variables(variable)
        np.testing.assert_allclose(variable.numpy(), p, rtol=STEP_RTOL, atol=STEP_ATOL, err_msg=name)
        np.testing.assert_allclose(slots["adam_m"].numpy(), m, rtol=STEP_RTOL, atol=STEP_ATOL,
                                   err_msg=name + "/adam_m")
        np.testing.assert_allclose(slots["adam_v"].numpy(), v, rtol=STEP_RTOL, atol=STEP_ATOL,
                                   err_msg=name + "/adam_v")
    # No bias correction: the first step moves each entry by about
    # lr * 0.1|g| / sqrt(0.001 g^2) = lr * sqrt(10) (Keras Adam would move lr).
    name = "bert/encoder/layer_0/output/LayerNorm/gamma"
    np.testing.assert_allclose(np.abs(variables[name].numpy() - values[name]),
                               0.01 * np.sqrt(10.0), rtol=1e-3)


def test_weight_decay_not_applied_to_layer_norm_and_bias():
    # A zero gradient leaves Adam's update at 0, so only the decay moves a
    # parameter: decayed ones become p * (1 - lr * wd); excluded ones stay.
    values = _random_values(np.random.RandomState(2), VARIABLE_SHAPES)
    variables = _make_variables(values)
    var_list = list(variables.values())
    optimizer = optimization.create_optimizer(0.1, 10, 0)   # wd 0.01, lr(0) = 0.1
    optimizer.apply([tf.zeros_like(v) for v in var_list], var_list)
    for name, variable in variables.items():
        decayed = name in DECAYED
        assert optimizer.uses_weight_decay(variable) == decayed, name
        expected = values[name] * (1.0 - 0.1 * 0.01) if decayed else values[name]
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-6, atol=1e-7, err_msg=name)
        if not decayed:
            np.testing.assert_array_equal(variable.numpy(), values[name], err_msg=name)


def test_first_update_with_warmup_has_lr_zero():
    # Keras feeds the schedule `iterations` BEFORE incrementing it, like the
    # original's global_step: update 0 has lr 0 (params stay, slots move).
    rng = np.random.RandomState(3)
    values = {"bert/pooler/dense/kernel": rng.normal(0, 1, (2, 2)).astype(np.float32)}
    variable = _make_variables(values)["bert/pooler/dense/kernel"]
    optimizer = optimization.create_optimizer(0.1, 10, 2)
    grad = rng.normal(0, 0.1, (2, 2)).astype(np.float32)    # global norm < 1: no clip
    optimizer.apply([tf.constant(grad)], [variable])
    assert int(optimizer.iterations.numpy()) == 1
    np.testing.assert_array_equal(variable.numpy(), values["bert/pooler/dense/kernel"])
    p, m, v = _np_adamw(values["bert/pooler/dense/kernel"], grad, 0.0, 0.0, 0.0, 0.01, True)
    slots = optimizer.get_slot_variables(variable)
    np.testing.assert_allclose(slots["adam_m"].numpy(), m, rtol=STEP_RTOL, atol=STEP_ATOL)
    np.testing.assert_allclose(slots["adam_v"].numpy(), v, rtol=STEP_RTOL, atol=STEP_ATOL)
    optimizer.apply([tf.constant(grad)], [variable])        # lr(1) = 0.05
    p, m, v = _np_adamw(p, grad, m, v, 0.05, 0.01, True)
    np.testing.assert_allclose(variable.numpy(), p, rtol=STEP_RTOL, atol=STEP_ATOL)


def test_original_optimization_test_restated():
    # optimization_test.py: w = [0.1, -0.2, -0.1], x = [0.4, 0.2, -0.5],
    # loss = mean((x - w)^2), AdamWeightDecayOptimizer(learning_rate=0.2),
    # 100 steps -> w ~ x (rtol = atol = 1e-2).
    w = keras.Variable(np.array([0.1, -0.2, -0.1], np.float32), name="w")
    x = tf.constant([0.4, 0.2, -0.5])
    optimizer = optimization.AdamWeightDecay(learning_rate=0.2)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x - w))
        optimizer.apply(tape.gradient(loss, [w]), [w])

    optimizer.build([w])
    for _ in range(100):
        train_step()
    np.testing.assert_allclose(w.numpy(), [0.4, 0.2, -0.5], rtol=1e-2, atol=1e-2)
    assert int(optimizer.iterations.numpy()) == 100


def test_clip_by_global_norm_helper_keeps_none():
    a = tf.constant([3.0, 0.0])
    b = tf.constant([[0.0, 4.0]])
    clipped, norm = optimization.clip_by_global_norm([a, None, b], 1.0)
    assert clipped[1] is None
    np.testing.assert_allclose(float(norm), 5.0, rtol=1e-6)
    np.testing.assert_allclose(clipped[0].numpy(), [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped[2].numpy(), [[0.0, 0.8]], rtol=1e-6)
    small, norm = optimization.clip_by_global_norm([a * 0.1], 1.0)   # norm 0.5: unchanged
    np.testing.assert_allclose(small[0].numpy(), [0.3, 0.0], rtol=1e-6)


def test_keras_weight_decay_refused_and_config_round_trip():
    with pytest.raises(ValueError, match="weight_decay_rate"):
        optimization.AdamWeightDecay(learning_rate=0.1, weight_decay=0.01)
    optimizer = optimization.create_optimizer(1e-4, 100, 10)
    assert optimizer.weight_decay is None and optimizer.global_clipnorm == 1.0
    clone = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(clone, optimization.AdamWeightDecay)
    assert clone.get_config() == optimizer.get_config()
    lamb = optimization.create_optimizer(1e-4, 100, 10, optimizer_type="lamb")
    clone = keras.optimizers.deserialize(keras.optimizers.serialize(lamb))
    assert isinstance(clone, optimization.LAMB)
    assert clone.get_config() == lamb.get_config()
    with pytest.raises(UserError, match="optimizer_type"):
        optimization.create_optimizer(1e-4, 100, 10, optimizer_type="sgd")


def test_get_slot_variables_errors():
    variable = keras.Variable(np.zeros(2, np.float32), name="bias")
    other = keras.Variable(np.zeros(2, np.float32), name="kernel")
    optimizer = optimization.AdamWeightDecay(learning_rate=0.1)
    with pytest.raises(ValueError, match="not built"):
        optimizer.get_slot_variables(variable)
    optimizer.build([variable])
    assert set(optimizer.get_slot_variables(variable)) == {"adam_m", "adam_v"}
    with pytest.raises(ValueError, match="kernel"):
        optimizer.get_slot_variables(other)


# ----------------------------------------------------------------- vs the original

def _differential_inputs(rng, num_steps=5, batch=3):
    data = _random_values(rng, VARIABLE_SHAPES)
    data["ids"] = rng.randint(0, 7, (num_steps, batch)).astype(np.int32)
    data["targets"] = rng.normal(0.0, 1.0, (num_steps, batch, 7)).astype(np.float32)
    # Steps 0, 1, 3 have a global norm well above 1 (clipped), 2 and 4 below.
    data["loss_scale"] = np.array([1.0, 1.0, 0.02, 1.0, 0.01], np.float32)
    return data


@pytest.fixture(scope="module")
def original_run(tmp_path_factory):
    from tests.original import run_oracle
    tmp = tmp_path_factory.mktemp("optimizer_oracle")
    data = _differential_inputs(np.random.RandomState(0))
    np.savez(tmp / "in.npz", **data)
    run_oracle("optimizer_oracle", tmp / "in.npz", tmp / "out.npz", 0.1, 10, 2, "pinned")
    return data, dict(np.load(tmp / "out.npz"))


@pytest.mark.original
@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.filterwarnings("ignore:Gradients do not exist")   # the pooler kernel, on purpose
def test_matches_original_create_optimizer(original_run, jit_compile):
    data, want = original_run
    norms = want["global_norm"]
    assert (norms > 1.0).any() and (norms < 1.0).any(), norms   # both clip branches ran

    variables = _make_variables({n: data[n] for n in VARIABLE_SHAPES})
    var_list = list(variables.values())
    optimizer = optimization.create_optimizer(
        init_lr=0.1, num_train_steps=10, num_warmup_steps=2)
    optimizer.build(var_list)

    @tf.function(jit_compile=jit_compile)
    def train_step(ids, targets, loss_scale):
        with tf.GradientTape() as tape:
            loss = _loss(variables, ids, targets, loss_scale)
        grads = tape.gradient(loss, var_list)   # None for the pooler kernel
        optimizer.apply(grads, var_list)
        return loss

    for step in range(len(data["ids"])):
        loss = train_step(data["ids"][step], data["targets"][step], data["loss_scale"][step])
        np.testing.assert_allclose(float(loss), want["loss"][step], rtol=1e-6,
                                   err_msg="loss, step %d" % step)
        assert int(optimizer.iterations.numpy()) == int(want["s%d:global_step" % step])
        for name, variable in variables.items():
            key = "s%d:%s" % (step, name)
            np.testing.assert_allclose(variable.numpy(), want[key], rtol=STEP_RTOL,
                                       atol=STEP_ATOL, err_msg=key)
            slots = optimizer.get_slot_variables(variable)
            if name == "bert/pooler/dense/kernel":
                # No gradient: the original skips it and never creates slots.
                assert key + "/adam_m" not in want
                np.testing.assert_array_equal(variable.numpy(), data[name])
                assert not slots["adam_m"].numpy().any() and not slots["adam_v"].numpy().any()
                continue
            for slot in optimization.SLOT_NAMES:
                np.testing.assert_allclose(slots[slot].numpy(), want[key + "/" + slot],
                                           rtol=STEP_RTOL, atol=STEP_ATOL,
                                           err_msg=key + "/" + slot)
        if step == 0:
            # Warmup: lr(0) = 0, so the original left every parameter as it was.
            for name in VARIABLE_SHAPES:
                np.testing.assert_array_equal(want["s0:" + name], data[name], err_msg=name)


@pytest.mark.original
def test_original_lr_reads_global_step_before_or_after_increment(tmp_path):
    # The original groups the update and `global_step += 1` without a control
    # dependency, so update t uses lr(t) or lr(t + 1) depending on op order (a
    # race; the differential test above pins the intended lr(t)). Measured from
    # a variable without decay: lr = (p_before - p_after) / (m / (sqrt(v) + eps)).
    from tests.original import run_oracle
    data = _differential_inputs(np.random.RandomState(0))
    np.savez(tmp_path / "in.npz", **data)
    run_oracle("optimizer_oracle", tmp_path / "in.npz", tmp_path / "out.npz", 0.1, 10, 2, "as_is")
    got = np.load(tmp_path / "out.npz")
    name = "bert/encoder/layer_0/attention/output/LayerNorm/gamma"
    before = data[name]
    for step in range(len(data["ids"])):
        key = "s%d:%s" % (step, name)
        after = got[key]
        update = got[key + "/adam_m"] / (np.sqrt(got[key + "/adam_v"]) + 1e-6)
        lr = np.mean((before - after) / update)
        allowed = [_np_schedule(t, 0.1, 10, 2) for t in (step, step + 1)]
        assert min(abs(lr - a) for a in allowed) < 1e-5, (step, lr, allowed)
        before = after


# ----------------------------------------------------------------- tf.distribute

_MIRRORED_SCRIPT = r"""
import json, os, sys
os.environ["KERAS_BACKEND"] = "tensorflow"
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
import keras
import numpy as np
from bert_tf.training import optimization

rng = np.random.RandomState(0)
init = {"table": rng.normal(0, 1, (7, 4)).astype(np.float32),
        "kernel": rng.normal(0, 1, (4, 3)).astype(np.float32),
        "bias": rng.normal(0, 1, (3,)).astype(np.float32)}
ids = rng.randint(0, 7, (2, 4)).astype(np.int32)          # [steps, global_batch]
y = rng.normal(0, 1, (2, 4, 3)).astype(np.float32)
GLOBAL_BATCH = 4

def per_example_loss(v, ids, y):
    h = tf.matmul(tf.gather(v["table"], ids), v["kernel"]) + v["bias"]
    return 10.0 * tf.reduce_sum(tf.square(h - y), axis=-1)       # [B]

def make(strategy):
    with strategy.scope():
        v = {k: keras.Variable(a, name=k) for k, a in init.items()}
        opt = optimization.create_optimizer(0.1, 10, 0)
        opt.build(list(v.values()))
    return v, opt

def results(v, opt):
    out = {}
    for k, var in v.items():
        out[k] = var.numpy().tolist()
        for s, slot in opt.get_slot_variables(var).items():
            out[k + "/" + s] = slot.numpy().tolist()
    out["iterations"] = int(opt.iterations.numpy())
    out["decay"] = {k: bool(opt.uses_weight_decay(var)) for k, var in v.items()}
    return out

# One device, the global batch at once.
v1, opt1 = make(tf.distribute.get_strategy())
norms = []
@tf.function
def step_one(ids, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(per_example_loss(v1, ids, y)) / GLOBAL_BATCH
    grads = tape.gradient(loss, list(v1.values()))
    opt1.apply(grads, list(v1.values()))
    return optimization.clip_by_global_norm(grads, 1.0)[1]
for s in range(2):
    norms.append(float(step_one(ids[s], y[s])))

# Two replicas, two examples each; Keras sums the gradients across replicas.
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
v2, opt2 = make(strategy)
@tf.function
def step_two(dist):
    def fn(ids, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(per_example_loss(v2, ids, y)) / GLOBAL_BATCH
        opt2.apply(tape.gradient(loss, list(v2.values())), list(v2.values()))
    strategy.run(fn, args=dist)
for s in range(2):
    ds = tf.data.Dataset.from_tensor_slices((ids[s], y[s])).batch(GLOBAL_BATCH)
    step_two(next(iter(strategy.experimental_distribute_dataset(ds))))

print(json.dumps({"replicas": strategy.num_replicas_in_sync, "norms": norms,
                  "one": results(v1, opt1), "two": results(v2, opt2),
                  "traces": {"all": optimization._adam_weight_decay_apply_all
                                 .experimental_get_tracing_count(),
                             "per_variable": optimization._adam_weight_decay_apply
                                 .experimental_get_tracing_count()}}))
"""


@pytest.mark.slow
def test_mirrored_strategy_matches_one_device():
    env = dict(os.environ)
    env.update(KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=REPO_ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _MIRRORED_SCRIPT], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["replicas"] == 2
    assert all(n > 1.0 for n in result["norms"]), result["norms"]   # clipping is active
    one, two = result["one"], result["two"]
    assert one["iterations"] == two["iterations"] == 2
    assert one["decay"] == two["decay"] == {"table": True, "kernel": True, "bias": False}
    # One device: one compiled call for all three variables; two replicas: a compiled
    # update per variable and device (Keras's `extended.update`).
    assert result["traces"]["all"] == 1 and result["traces"]["per_variable"] >= 1, \
        result["traces"]
    for key in one:
        if key in ("iterations", "decay"):
            continue
        np.testing.assert_allclose(np.array(two[key]), np.array(one[key]),
                                   rtol=STEP_RTOL, atol=STEP_ATOL, err_msg=key)


# ----------------------------------------------------------------- LAMB

@pytest.mark.parametrize("exclude", [True, False])
def test_lamb_two_steps_match_numpy(exclude):
    rng = np.random.RandomState(4)
    values = _random_values(rng, {"cls/predictions/transform/dense/kernel": (3, 2),
                                  "cls/predictions/output_bias": (2,)})
    variables = _make_variables(values)
    var_list = list(variables.values())
    patterns = list(optimization.DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY) if exclude else None
    optimizer = optimization.LAMB(learning_rate=0.05, weight_decay_rate=0.01,
                                  exclude_from_weight_decay=patterns)
    state = {n: (values[n].astype(np.float64), 0.0, 0.0) for n in values}
    for t in (1, 2):
        grads = {n: rng.normal(0, 1, values[n].shape).astype(np.float32) for n in values}
        optimizer.apply([tf.constant(grads[v.path]) for v in var_list], var_list)
        for name, variable in variables.items():
            excluded = exclude and name.endswith("bias")
            assert optimizer.uses_weight_decay(variable) == (not excluded), name
            assert optimizer.uses_layer_adaptation(variable) == (not excluded), name
            p, m, v = state[name]
            state[name] = _np_lamb(p, grads[name], m, v, t, 0.05, 0.01,
                                   decay=not excluded, adapt=not excluded)
            slots = optimizer.get_slot_variables(variable)
            for got, want, what in ((variable, state[name][0], ""),
                                    (slots["adam_m"], state[name][1], "/adam_m"),
                                    (slots["adam_v"], state[name][2], "/adam_v")):
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=STEP_ATOL,
                                           err_msg="%s%s step %d" % (name, what, t))


def test_lamb_trust_ratio_is_one_for_zero_weights_and_separate_exclusions():
    variables = _make_variables({"bert/pooler/dense/kernel": np.zeros((2, 2), np.float32),
                                 "bert/pooler/dense/bias": np.ones((2,), np.float32)})
    var_list = list(variables.values())
    optimizer = optimization.LAMB(learning_rate=0.1, weight_decay_rate=0.01,
                                  exclude_from_weight_decay=["bias"],
                                  exclude_from_layer_adaptation=["kernel"])
    grad = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    optimizer.apply([tf.constant(grad), tf.constant([1.0, -1.0])], var_list)
    kernel = variables["bert/pooler/dense/kernel"]
    bias = variables["bert/pooler/dense/bias"]
    assert not optimizer.uses_layer_adaptation(kernel) and optimizer.uses_weight_decay(kernel)
    assert optimizer.uses_layer_adaptation(bias) and not optimizer.uses_weight_decay(bias)
    # ||w|| = 0 for the kernel: ratio 1, and a bias-corrected first step is
    # m_hat / (sqrt(v_hat) + eps) = sign(g) / (1 + eps/|g|).
    np.testing.assert_allclose(kernel.numpy(), -0.1 * grad / (np.abs(grad) + 1e-6), rtol=1e-5)
    # Bias: update u = [1, -1] / (1 + 1e-6), ratio = ||w|| / ||u|| = 1 + 1e-6,
    # so w - lr * ratio * u = [0.9, 1.1].
    np.testing.assert_allclose(bias.numpy(), [0.9, 1.1], rtol=1e-6)


def _tf_adamw_op_by_op(param, grad, m, v, lr, weight_decay_rate):
    """The original's update as its float32 TF ops compute it, one op at a time (no XLA).

    Returns [(value, scale)] for param, m and v: scale, the sum of the
    magnitudes of the terms of the last add (a fused multiply-add rounds once
    at the scale of its terms, not of a result that cancels them).
    """
    param, grad, m, v = (tf.constant(x) for x in (param, grad, m, v))
    next_m = 0.9 * m + (1.0 - 0.9) * grad
    next_v = 0.999 * v + (1.0 - 0.999) * tf.square(grad)
    update = next_m / (tf.sqrt(next_v) + 1e-6)
    update += weight_decay_rate * param
    scales = (tf.abs(param) + tf.abs(lr * update), 0.9 * tf.abs(m) + 0.1 * tf.abs(grad), next_v)
    return [(x.numpy(), scale.numpy())
            for x, scale in zip((param - lr * update, next_m, next_v), scales)]


def test_update_is_the_originals_float32_ops_within_fused_multiply_add_rounding():
    # The update runs as one XLA-compiled loop per variable, where a multiply
    # and an add become one fused multiply-add (one rounding instead of two):
    # m and v within 2 float32 ulps (at the scale of their terms) of the
    # original's op-by-op result; the parameter, whose update carries the
    # roundings of m, v and the division, within 8 (5 seen).
    rng = np.random.RandomState(7)
    shape = (64, 48)
    name = "bert/encoder/layer_0/output/dense/kernel"
    variable = _make_variables({name: rng.normal(0, 1, shape).astype(np.float32)})[name]
    optimizer = optimization.AdamWeightDecay(0.05, weight_decay_rate=0.01)
    optimizer.build([variable])
    slots = optimizer.get_slot_variables(variable)
    for _ in range(4):
        grad = rng.normal(0, 0.1, shape).astype(np.float32)
        # Each step starts from our own state, so only one step's rounding is compared.
        state = (variable.numpy(), slots["adam_m"].numpy(), slots["adam_v"].numpy())
        expected = _tf_adamw_op_by_op(state[0], grad, state[1], state[2], np.float32(0.05), 0.01)
        optimizer.apply([tf.constant(grad)], [variable])
        for got, (want, scale), max_ulps in zip(
                (variable.numpy(), slots["adam_m"].numpy(), slots["adam_v"].numpy()),
                expected, (8, 2, 2)):
            ulps = np.abs(got - want) / np.spacing(scale)
            assert ulps.max() <= max_ulps, ulps.max()


def test_update_is_not_retraced_for_every_variable_shape():
    # One device: one compiled call updates every variable, traced once for
    # the model (not once per shape: no "triggered tf.function retracing"
    # warning), and not again at the next step.
    update = optimization._adam_weight_decay_apply_all  # pylint: disable=protected-access
    per_variable = optimization._adam_weight_decay_apply  # pylint: disable=protected-access
    before = (update.experimental_get_tracing_count(),
              per_variable.experimental_get_tracing_count())
    shapes = [(3,), (5, 6), (7, 8), (9,), (10, 11), (12, 13), (14,), (15, 16)]
    variables = [keras.Variable(np.ones(s, np.float32), name="v%d" % i)
                 for i, s in enumerate(shapes)]
    optimizer = optimization.create_optimizer(0.1, 10, 0)
    optimizer.build(variables)
    for _ in range(2):
        optimizer.apply([tf.ones(s) for s in shapes], variables)
    assert update.experimental_get_tracing_count() - before[0] == 1
    assert per_variable.experimental_get_tracing_count() == before[1]
    # Several replicas update per variable and device: test_mirrored_strategy_matches_one_device.


def _clipped_update_inputs():
    rng = np.random.RandomState(3)
    values = {"bert/embeddings/word_embeddings": rng.normal(0, 1, (7, 4)).astype(np.float32),
              "bert/encoder/layer_0/attention/output/dense/kernel":
                  rng.normal(0, 1, (4, 4)).astype(np.float32),
              "bert/encoder/layer_0/attention/output/dense/bias":
                  rng.normal(0, 1, (4,)).astype(np.float32)}
    # An embedding gradient with repeated rows (as a gather's), and dense ones;
    # the global norm is far above 1, so the clip scales them all.
    sparse = tf.IndexedSlices(tf.constant(rng.normal(0, 3, (5, 4)).astype(np.float32)),
                              tf.constant([1, 3, 3, 6, 1]), tf.constant([7, 4]))
    dense = [tf.constant(rng.normal(0, 3, v.shape).astype(np.float32))
             for v in list(values.values())[1:]]
    return values, [sparse] + dense


def _apply_create_optimizer(values, grads, steps=3):
    variables = list(_make_variables(values).values())
    optimizer = optimization.create_optimizer(0.1, 10, 0)
    optimizer.build(variables)
    for _ in range(steps):
        optimizer.apply(grads, variables)
    return [v.numpy() for v in variables] + [
        s.numpy() for v in variables for s in optimizer.get_slot_variables(v).values()]


def test_clip_in_the_update_is_tf_clip_by_global_norm_then_the_update():
    # The clip's multiply runs inside each variable's compiled update; the
    # result is bit for bit tf.clip_by_global_norm's gradients fed to the same
    # update (sparse gradients scaled before their repeated rows are summed).
    values, grads = _clipped_update_inputs()
    got = _apply_create_optimizer(values, grads)
    state = [v.copy() for v in values.values()]
    decay = [True, True, False]  # the bias is excluded from weight decay
    m = [np.zeros_like(v) for v in state]
    v = [np.zeros_like(x) for x in state]
    for step in range(3):
        lr = optimization.WarmupLinearDecay(0.1, 10, 0)(step)
        clipped, _ = tf.clip_by_global_norm(grads, 1.0)
        for k, g in enumerate(clipped):
            state[k], m[k], v[k] = (x.numpy() for x in optimization._adam_weight_decay_update(  # pylint: disable=protected-access
                tf.constant(state[k]), tf.constant(m[k]), tf.constant(v[k]),
                tf.convert_to_tensor(g), 1.0, lr, 0.9, 0.999, 1e-6,
                0.01 if decay[k] else None))
    want = state + [x for pair in zip(m, v) for x in pair]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_in_place_update_equals_the_values_in_values_out_update(monkeypatch):
    # Where a strategy's copies are not found by device, the update falls back
    # to values in, values out (Keras assigns): the same numbers.
    values, grads = _clipped_update_inputs()
    in_place = _apply_create_optimizer(values, grads)
    calls = []
    monkeypatch.setattr(optimization, "_local_copy",
                        lambda variable, device_variable: calls.append(1))
    assigned = _apply_create_optimizer(values, grads)
    assert calls  # the fallback ran
    for a, b in zip(in_place, assigned):
        np.testing.assert_array_equal(a, b)


def test_clip_scale_is_tf_clip_by_global_norm_factor():
    grads = [tf.constant([3.0, 0.0]), None, tf.constant([[0.0, 4.0]])]
    np.testing.assert_array_equal(optimization.clip_scale(grads, 1.0).numpy(), np.float32(0.2))
    np.testing.assert_array_equal(optimization.clip_scale(grads, 10.0).numpy(), np.float32(1.0))
    assert np.isnan(optimization.clip_scale([tf.constant([np.inf])], 1.0).numpy())
