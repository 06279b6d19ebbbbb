"""Optimization (original: optimization.py): warmup + linear decay, AdamWeightDecay, LAMB, create_optimizer.

The original's `create_optimizer(loss, ...)` builds a whole TF1 train op:

  1. lr = polynomial_decay(init_lr, global_step, num_train_steps, end 0, power 1),
     replaced by init_lr * global_step / num_warmup_steps while
     global_step < num_warmup_steps (`WarmupLinearDecay`);
  2. grads = tf.gradients(loss, tf.trainable_variables());
  3. grads = tf.clip_by_global_norm(grads, 1.0)  ("This is how the model was pre-trained.");
  4. AdamWeightDecayOptimizer(lr, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
     epsilon=1e-6, exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
     applies them (`AdamWeightDecay`: Adam with NO bias correction, decoupled decay);
  5. global_step += 1.

Here `create_optimizer` returns a Keras 3 optimizer that does 1, 3, 4 and 5 in
`optimizer.apply(grads, variables)`; the train step only computes the gradients.

Example (one device or under any `tf.distribute` strategy):

  with strategy.scope():
      model = ...
      optimizer = create_optimizer(init_lr=1e-4, num_train_steps=10000,
                                   num_warmup_steps=100)
      optimizer.build(model.trainable_variables)

  def step_fn(features):                      # runs on each replica
      with tf.GradientTape() as tape:
          # Per-replica loss scaled so that the SUM over replicas is the
          # global-batch loss (Keras all-reduces gradients with SUM).
          loss = model_loss(features) / strategy.num_replicas_in_sync
      grads = tape.gradient(loss, model.trainable_variables)
      optimizer.apply(grads, model.trainable_variables)   # lr, clip, update, step += 1

Checkpoint slots: `optimizer.get_slot_variables(variable)` returns
`{"adam_m": m, "adam_v": v}`, to be saved as `<tf1 name>/adam_m` and
`<tf1 name>/adam_v` as the original does; `optimizer.iterations` is the
original's `global_step`.
"""

import collections
import re

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import tensorflow as tf

from bert_tf.errors import UserError

# The original's `create_optimizer` list: every LayerNorm gamma/beta and every
# bias (including `cls/predictions/output_bias`) is excluded from weight decay.
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")

# Slot names, as suffixes of the TF1 variable name in the original checkpoints.
SLOT_NAMES = ("adam_m", "adam_v")

OPTIMIZER_TYPES = ("adamw", "lamb")


def variable_name(variable):
    """The TF1-style name of `variable`, the string the decay patterns are searched in.

    Args:
      variable: a `keras.Variable` (its `path`, e.g.
        "bert/encoder/layer_0/output/LayerNorm/gamma") or a `tf.Variable` (its
        `name` without the ":0" suffix, as the original's `_get_variable_name`).

    Returns:
      str. Keras 3's `variable.name` is only the last segment ("gamma"), so it
      is never used: the original's pattern "LayerNorm" would never match it.
    """
    path = getattr(variable, "path", None)
    if isinstance(path, str) and path:
        return path
    name = variable.name
    match = re.match(r"^(.*):\d+$", name)
    return match.group(1) if match else name


def clip_by_global_norm(grads, clip_norm=1.0):
    """`tf.clip_by_global_norm` over a list of gradients (None entries stay None).

    The original clips all gradients together with `clip_norm=1.0`; a None
    gradient (a variable the loss does not use) is left out of the norm and
    skipped by the update, exactly as `tf.clip_by_global_norm` does.

    `create_optimizer` already clips inside the optimizer (after the
    cross-replica sum), so a train step using it must not call this too; the
    helper is for custom loops and for logging the norm.

    Args:
      grads: list of gradient Tensors / IndexedSlices / None.
      clip_norm: float, the maximum global norm.

    Returns:
      (clipped_grads, global_norm): the list with None kept in place, and the
      float32 scalar global norm before clipping.
    """
    present = [g for g in grads if g is not None]
    if not present:
        return list(grads), tf.constant(0.0)
    clipped, norm = tf.clip_by_global_norm(present, clip_norm)
    clipped = iter(clipped)
    return [None if g is None else next(clipped) for g in grads], norm


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The original's learning rate: linear decay from step 0 to 0, with linear warmup.

    lr(step) = init_lr * (1 - min(step, num_train_steps) / num_train_steps)
    and, if num_warmup_steps and step < num_warmup_steps,
    lr(step) = init_lr * step / num_warmup_steps.

    `step` is the PRE-increment step (Keras passes `optimizer.iterations` before
    adding 1, as the original's `global_step` is read before its increment), so
    with warmup the very first update has lr 0: the parameters do not move but
    adam_m / adam_v are updated. The decay runs from step 0, not from the end of
    warmup, so lr dips slightly at step == num_warmup_steps, as the original.

    Args:
      init_lr: float, the peak learning rate (`--learning_rate`).
      num_train_steps: int > 0, the step at which lr reaches 0.
      num_warmup_steps: int or None; 0 / None disables warmup.
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=None):
        if not num_train_steps or num_train_steps <= 0:
            raise UserError("num_train_steps must be a positive number of steps, got %r"
                            % (num_train_steps,))
        if num_warmup_steps is not None and num_warmup_steps < 0:
            raise UserError("num_warmup_steps must be >= 0, got %r" % (num_warmup_steps,))
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = None if num_warmup_steps is None else int(num_warmup_steps)

    def __call__(self, step):
        # Port note: the original's train op is tf.group(update, global_step += 1)
        # with no control dependency, so its lr may read global_step before or
        # after the increment (a race; under TF 2.21 compat.v1 most steps get
        # lr(t + 1)). Keras evaluates the schedule on `iterations` before
        # incrementing it, so update t always uses lr(t), the pre-increment step
        # the original's comments and every stock TF1 optimizer intend.
        with tf.name_scope("WarmupLinearDecay"):
            init_lr = tf.constant(self.init_lr, tf.float32)
            # tf.compat.v1.train.polynomial_decay(..., end_learning_rate=0.0,
            # power=1.0, cycle=False), stated with the same ops.
            global_step = tf.cast(step, tf.float32)
            decay_steps = tf.constant(float(self.num_train_steps), tf.float32)
            p = tf.minimum(global_step, decay_steps) / decay_steps
            learning_rate = (init_lr - 0.0) * tf.pow(1.0 - p, 1.0) + 0.0
            if self.num_warmup_steps:
                # "if global_step < num_warmup_steps, the learning rate will be
                # `global_step/num_warmup_steps * init_lr`."
                global_steps_int = tf.cast(step, tf.int32)
                warmup_steps_int = tf.constant(self.num_warmup_steps, tf.int32)
                warmup_percent_done = (tf.cast(global_steps_int, tf.float32)
                                       / tf.cast(warmup_steps_int, tf.float32))
                warmup_learning_rate = init_lr * warmup_percent_done
                is_warmup = tf.cast(global_steps_int < warmup_steps_int, tf.float32)
                learning_rate = ((1.0 - is_warmup) * learning_rate
                                 + is_warmup * warmup_learning_rate)
            return learning_rate

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }


def schedule_end(optimizer):
    """The step at which `optimizer`'s learning rate reaches 0, or None for another schedule.

    The `WarmupLinearDecay` of `create_optimizer` ends at `num_train_steps`:
    an update at or past it moves nothing (lr 0).
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # inside a loss-scale wrapper
    schedule = getattr(optimizer, "_learning_rate", None)
    if isinstance(schedule, WarmupLinearDecay):
        return schedule.num_train_steps
    return None


class _BertOptimizer(keras.optimizers.Optimizer):
    """Shared parts of `AdamWeightDecay` and `LAMB`.

    * Slots `adam_m` / `adam_v` per variable (`get_slot_variables`).
    * Weight decay of our own (`weight_decay_rate`), excluded by `re.search` of
      each pattern in `variable_name(v)`; Keras's `weight_decay` must stay None.
    * `global_clipnorm` clips with `tf.clip_by_global_norm` AFTER the
      cross-replica gradient sum (see `_all_reduce_sum_gradients`).
    """

    def __init__(self, learning_rate, weight_decay_rate, beta_1, beta_2, epsilon,
                 exclude_from_weight_decay, name, **kwargs):
        if kwargs.get("weight_decay") is not None:
            raise ValueError(
                "%s applies its own decoupled decay: pass weight_decay_rate, not "
                "Keras's weight_decay (it would decay twice)" % type(self).__name__)
        kwargs.pop("weight_decay", None)
        super().__init__(learning_rate=learning_rate, weight_decay=None, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate or 0.0)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay = (
            None if exclude_from_weight_decay is None else list(exclude_from_weight_decay))

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._adam_m, self._adam_v = self.add_optimizer_variables(var_list, list(SLOT_NAMES))
        # Decided once per variable from its TF1 name; update_step only sees the
        # underlying tf.Variable (a per-replica component under tf.distribute).
        self._use_weight_decay_flags = tuple(
            self._do_use_weight_decay(variable_name(v)) for v in var_list)

    def _do_use_weight_decay(self, param_name):
        """Whether to use L2 weight decay for `param_name` (as the original)."""
        if not self.weight_decay_rate:
            return False
        for pattern in self.exclude_from_weight_decay or ():
            if re.search(pattern, param_name) is not None:
                return False
        return True

    def uses_weight_decay(self, variable):
        """Whether `variable` (of the list the optimizer was built on) is decayed."""
        return self._use_weight_decay_flags[self._get_variable_index(variable)]

    def get_slot_variables(self, variable):
        """The optimizer state of one model variable.

        Args:
          variable: a trainable variable of the list the optimizer was built on.

        Returns:
          {"adam_m": keras.Variable, "adam_v": keras.Variable}, both of the
          variable's shape; the original stores them as "<tf1 name>/adam_m" and
          "<tf1 name>/adam_v".
        """
        if not self.built:
            raise ValueError("the optimizer is not built yet: call "
                             "optimizer.build(model.trainable_variables) first")
        try:
            index = self._get_variable_index(variable)
        except KeyError:
            raise ValueError("variable %s is not one the optimizer was built on"
                             % variable_name(variable)) from None
        return {"adam_m": self._adam_m[index], "adam_v": self._adam_v[index]}

    def _slots(self, variable):
        index = self._get_variable_index(variable)
        return self._adam_m[index], self._adam_v[index], self._use_weight_decay_flags[index]

    def _clip_gradients(self, grads):
        if self.global_clipnorm:
            # Port note: Keras clips each replica's gradients BEFORE summing
            # them across replicas, which under MirroredStrategy is not the
            # global-batch clip. We clip after the sum instead, in
            # `_all_reduce_sum_gradients`, so N replicas give the same update as
            # one device with the same global batch (the original clipped on a
            # single GPU; on TPU it clipped per shard before CrossShardOptimizer's
            # sum).
            return grads
        return super()._clip_gradients(grads)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # Keras's TF backend calls this hook from `_backend_update_step` (in
        # replica context it sums the gradients over replicas; on one device
        # it returns them as they are). The update steps come right after.
        grads_and_vars = list(super()._all_reduce_sum_gradients(grads_and_vars))
        if self.global_clipnorm:
            grads = self._clip_summed_gradients([g for g, _ in grads_and_vars])
            grads_and_vars = [(g, v) for g, (_, v) in zip(grads, grads_and_vars)]
        return grads_and_vars

    def _clip_summed_gradients(self, grads):
        """The summed gradients clipped by global norm, as `update_step` takes them."""
        return clip_by_global_norm(grads, self.global_clipnorm)[0]

    @staticmethod
    def _dense(gradient, variable):
        # The original's `tf.multiply(1 - beta_1, grad)` turns an IndexedSlices
        # gradient (embedding gather) into a dense one: every row's m and v decay.
        return tf.cast(tf.convert_to_tensor(gradient), variable.dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        config.update({
            "weight_decay_rate": self.weight_decay_rate,
            "beta_1": self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
            "exclude_from_weight_decay": self.exclude_from_weight_decay,
        })
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(_BertOptimizer):
    """The original's `AdamWeightDecayOptimizer`: Adam without bias correction, decoupled decay.

    For each variable with gradient g (variables with a None gradient are
    skipped, as the original):

      m <- beta_1 * m + (1 - beta_1) * g
      v <- beta_2 * v + (1 - beta_2) * g**2
      update = m / (sqrt(v) + epsilon)           # NO bias correction
      update += weight_decay_rate * param        # unless a pattern matches the name
      param <- param - lr * update

    Args:
      learning_rate: float, or a schedule such as `WarmupLinearDecay` (fed
        `optimizer.iterations` before its increment).
      weight_decay_rate: float; 0 (the class default, as the original's) turns
        decay off. `create_optimizer` uses 0.01.
      beta_1, beta_2, epsilon: Adam constants (original defaults 0.9, 0.999, 1e-6).
      exclude_from_weight_decay: list of regex patterns searched (`re.search`) in
        `variable.path`, the TF1 name, e.g. ["LayerNorm", "layer_norm", "bias"].
      name: optimizer name (scope of its own variables).
      **kwargs: Keras optimizer arguments, e.g. `global_clipnorm` (clipped after
        the cross-replica sum with `tf.clip_by_global_norm`). Keras's
        `weight_decay` is refused.
    """

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.0, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-6, exclude_from_weight_decay=None,
                 name="AdamWeightDecay", **kwargs):
        super().__init__(learning_rate, weight_decay_rate, beta_1, beta_2, epsilon,
                         exclude_from_weight_decay, name, **kwargs)

    def _clip_summed_gradients(self, grads):
        # Port note: the original clips with tf.clip_by_global_norm, which
        # writes every clipped gradient (g * scale) before the update reads it
        # again. Here the global norm and the scale are the same, but the
        # multiply by the scale happens in each variable's compiled update
        # (`update_step`): the same float32 product, one pass over memory
        # fewer. Sparse (IndexedSlices) gradients are scaled first, as there,
        # so their repeated rows are summed after scaling, as there.
        scale = clip_scale(grads, self.global_clipnorm)
        clipped = []
        for g in grads:
            if g is None:
                clipped.append(None)
            elif isinstance(g, tf.IndexedSlices):
                values = g.values * tf.cast(scale, g.values.dtype)
                clipped.append(tf.IndexedSlices(values, g.indices, g.dense_shape))
            else:
                clipped.append(_ScaledGradient(g, scale))
        return clipped

    def _distributed_tf_update_step(self, distribution, grads_and_vars, learning_rate):
        # One device (no strategy, or a one-device one): every variable's update in one
        # compiled call (`_adam_weight_decay_apply_all`), the same arithmetic per variable
        # as `update_step`'s, without a launch per variable (a BERT has about 100 to 200).
        # Several replicas: Keras's way, `update_step` per variable and device.
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        if distribution.num_replicas_in_sync == 1 and not isinstance(
                distribution, (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy)):
            updates = []
            for gradient, variable in grads_and_vars:
                grad, scale, m, v, weight_decay_rate = self._update_operands(gradient, variable)
                local = [_local_copy(x, variable) for x in (variable, m, v)]
                if any(x is None for x in local):
                    break
                updates.append(local + [grad, scale, weight_decay_rate])
            else:
                if updates:
                    params, ms, vs, grads, scales, rates = (list(x) for x in zip(*updates))
                    _adam_weight_decay_apply_all(params, ms, vs, grads, scales,
                                                 tf.cast(learning_rate, tf.float32), self.beta_1,
                                                 self.beta_2, self.epsilon, tuple(rates))
                return
        super()._distributed_tf_update_step(distribution, grads_and_vars, learning_rate)

    def _update_operands(self, gradient, variable):
        """(dense gradient, clip scale, m, v, weight decay rate or None) of one variable's update."""
        m, v, use_weight_decay = self._slots(variable)
        scale = 1.0  # no clip, or a sparse gradient already scaled
        if isinstance(gradient, _ScaledGradient):
            gradient, scale = gradient
        return (self._dense(gradient, variable), scale, m, v,
                self.weight_decay_rate if use_weight_decay else None)

    def update_step(self, gradient, variable, learning_rate):
        grad, scale, m, v, weight_decay_rate = self._update_operands(gradient, variable)
        lr = tf.cast(learning_rate, variable.dtype)
        # Under tf.distribute this runs once per device, with `variable` that
        # device's copy; the slots are found by the same device.
        local = [_local_copy(x, variable) for x in (variable, m, v)]
        if all(x is not None for x in local):
            # In place: the compiled update reads and writes the variables.
            _adam_weight_decay_apply(*local, grad, scale, lr, self.beta_1, self.beta_2,
                                     self.epsilon, weight_decay_rate)
            return
        # Values in, values out (a strategy whose copies are not found by
        # device): Keras assigns the results.
        param, m_value, v_value = (tf.convert_to_tensor(x) for x in (variable, m, v))
        next_param, next_m, next_v = _adam_weight_decay_update(
            param, m_value, v_value, grad, scale, lr, self.beta_1, self.beta_2, self.epsilon,
            weight_decay_rate)
        self.assign(variable, next_param)
        self.assign(m, next_m)
        self.assign(v, next_v)


def clip_scale(grads, clip_norm):
    """The factor `tf.clip_by_global_norm(grads, clip_norm)` multiplies every gradient by.

    clip_norm / max(global_norm, clip_norm), in its float32 ops; NaN when the
    norm is not finite, so a non-finite gradient poisons the update as there.
    None entries are left out of the norm.
    """
    norm = tf.linalg.global_norm([g for g in grads if g is not None])
    clip_norm = tf.convert_to_tensor(clip_norm, norm.dtype)
    scale_for_finite = clip_norm * tf.minimum(1.0 / norm, tf.constant(1.0, norm.dtype) / clip_norm)
    return scale_for_finite + (norm - norm)


# A summed dense gradient and the clip factor still to apply to it. A
# namedtuple, so tf.distribute passes it through `extended.update` per device.
_ScaledGradient = collections.namedtuple("_ScaledGradient", ["gradient", "scale"])


def _local_copy(variable, device_variable):
    """The plain `tf.Variable` behind `variable` on `device_variable`'s device, or None.

    One device: the variable itself. Under MirroredStrategy (where
    `strategy.extended.update` hands the update each device's copy of the model
    variable, while the slots stay mirrored): the copy on that device.
    """
    if isinstance(variable, keras.Variable):
        variable = variable.value
    if isinstance(variable, tf.distribute.DistributedValues):
        for component in variable.values:
            if component.device == device_variable.device:
                variable = component
                break
        else:
            return None
    # A variable of a loaded SavedModel (a TF Hub encoder's) is no CompositeTensor:
    # handed to the compiled update inside a traced step, it would be captured by
    # that trace (which fails once the variable is gone); it goes values in, values out.
    if not isinstance(variable, tf.__internal__.CompositeTensor):
        return None
    return variable if isinstance(variable, tf.Variable) else None


# The update of one variable, compiled by XLA (one trace serves every shape,
# reduce_retracing; XLA compiles each shape it meets). Op by op, each elementwise step
# of the update reads and writes a whole tensor (about 20 passes over the 110M
# parameters of BERT-base per step); compiled, it is one loop over memory, in
# any graph (a step compiled as a whole inlines it). The arithmetic is the
# original's, in its order; XLA contracts a multiply and an add into one fused
# multiply-add (one rounding instead of two). `scale` is the global-norm clip
# factor (1.0: none).
def _adam_weight_decay_step(param, m, v, grad, scale, lr, beta_1, beta_2, epsilon,
                            weight_decay_rate):
    """(next param, next m, next v) of the original's update (values in, values out)."""
    # The clipped gradient, as tf.clip_by_global_norm's `g * scale`.
    grad = grad * scale
    # Standard Adam update.
    next_m = beta_1 * m + (1.0 - beta_1) * grad
    next_v = beta_2 * v + (1.0 - beta_2) * tf.square(grad)
    update = next_m / (tf.sqrt(next_v) + epsilon)

    # Just adding the square of the weights to the loss function is *not*
    # the correct way of using L2 regularization/weight decay with Adam,
    # since that will interact with the m and v parameters in strange ways.
    # Instead we decay the weights in a manner that doesn't interact with
    # the m/v parameters (decay uses the parameter before this update).
    if weight_decay_rate is not None:
        update += weight_decay_rate * param

    return param - lr * update, next_m, next_v


_adam_weight_decay_update = tf.function(
    _adam_weight_decay_step, jit_compile=True, autograph=False, reduce_retracing=True)


def _adam_weight_decay_assign(param, m, v, grad, scale, lr, beta_1, beta_2, epsilon,
                              weight_decay_rate):
    """The update written in place: the variables read, updated and assigned."""
    next_param, next_m, next_v = _adam_weight_decay_step(
        param.read_value(), m.read_value(), v.read_value(), grad, scale,
        tf.cast(lr, param.dtype), beta_1, beta_2, epsilon, weight_decay_rate)
    param.assign(next_param)
    m.assign(next_m)
    v.assign(next_v)


# One variable's update on the variables themselves, compiled.
_adam_weight_decay_apply = tf.function(
    _adam_weight_decay_assign, jit_compile=True, autograph=False, reduce_retracing=True)


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _adam_weight_decay_apply_all(params, ms, vs, grads, scales, lr, beta_1, beta_2, epsilon,
                                 weight_decay_rates):
    """`_adam_weight_decay_apply` on lists of variables, in one compiled call."""
    for param, m, v, grad, scale, rate in zip(params, ms, vs, grads, scales,
                                              weight_decay_rates):
        _adam_weight_decay_assign(param, m, v, grad, scale, lr, beta_1, beta_2, epsilon, rate)


@keras.saving.register_keras_serializable(package="bert_tf")
class LAMB(_BertOptimizer):
    """LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning"), as Model Garden's / tf-addons'.

    Not in the original BERT code (`--optimizer_type=lamb`). For each variable
    with gradient g, with t = iterations + 1:

      m <- beta_1 * m + (1 - beta_1) * g ;  v <- beta_2 * v + (1 - beta_2) * g**2
      update = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
      update += weight_decay_rate * param        # unless excluded from decay
      ratio = ||param|| / ||update||             # 1.0 if either norm is 0, or if
                                                 # excluded from layer adaptation
      param <- param - ratio * lr * update

    The moments keep the original's slot names (`adam_m`, `adam_v`) so the
    checkpoint layout is the same as with AdamWeightDecay.

    Args:
      learning_rate: as `AdamWeightDecay`'s, as are beta_1, beta_2, epsilon,
        weight_decay_rate, exclude_from_weight_decay, name and **kwargs.
      exclude_from_layer_adaptation: list of regex patterns (searched in the
        TF1 name) of variables updated without the trust ratio; None means the
        same list as `exclude_from_weight_decay`.
    """

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.0, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-6, exclude_from_weight_decay=None,
                 exclude_from_layer_adaptation=None, name="LAMB", **kwargs):
        super().__init__(learning_rate, weight_decay_rate, beta_1, beta_2, epsilon,
                         exclude_from_weight_decay, name, **kwargs)
        self.exclude_from_layer_adaptation = (
            None if exclude_from_layer_adaptation is None
            else list(exclude_from_layer_adaptation))

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._layer_adaptation_flags = tuple(
            self._do_layer_adaptation(variable_name(v)) for v in var_list)

    def _do_layer_adaptation(self, param_name):
        """Whether to scale the update of `param_name` by the trust ratio."""
        patterns = self.exclude_from_layer_adaptation
        if patterns is None:
            patterns = self.exclude_from_weight_decay
        for pattern in patterns or ():
            if re.search(pattern, param_name) is not None:
                return False
        return True

    def uses_layer_adaptation(self, variable):
        """Whether `variable`'s update is scaled by the trust ratio."""
        return self._layer_adaptation_flags[self._get_variable_index(variable)]

    def update_step(self, gradient, variable, learning_rate):
        m, v, use_weight_decay = self._slots(variable)
        layer_adaptation = self._layer_adaptation_flags[self._get_variable_index(variable)]
        grad = self._dense(gradient, variable)
        dtype = variable.dtype
        lr = tf.cast(learning_rate, dtype)
        local_step = tf.cast(self.iterations + 1, dtype)
        beta_1_power = tf.pow(tf.constant(self.beta_1, dtype), local_step)
        beta_2_power = tf.pow(tf.constant(self.beta_2, dtype), local_step)

        next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
        m_hat = next_m / (1.0 - beta_1_power)
        v_hat = next_v / (1.0 - beta_2_power)
        update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
        if use_weight_decay:
            update += self.weight_decay_rate * variable

        if layer_adaptation:
            w_norm = tf.norm(variable, ord=2)
            g_norm = tf.norm(update, ord=2)
            ratio = tf.where(w_norm > 0.0,
                             tf.where(g_norm > 0.0, w_norm / g_norm, 1.0),
                             1.0)
            update = ratio * update

        next_param = variable - lr * update
        self.assign(variable, next_param)
        self.assign(m, next_m)
        self.assign(v, next_v)

    def get_config(self):
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = self.exclude_from_layer_adaptation
        return config


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer_type="adamw",
                     weight_decay_rate=0.01, global_clipnorm=1.0,
                     exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
                     beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """The original's optimizer set-up, as one Keras optimizer.

    Port note: the original `create_optimizer(loss, init_lr, num_train_steps,
    num_warmup_steps, use_tpu)` builds a TF1 train op (gradients, global-norm
    clip at 1.0, update, global_step += 1). This one returns the optimizer; the
    clip (`global_clipnorm`, applied after the cross-replica gradient sum), the
    update and the step increment (`optimizer.iterations`, the original's
    `global_step`) all happen in `optimizer.apply(grads, variables)`, so a train
    step computes the gradients and calls `apply`, and clips nothing itself.
    `use_tpu` (CrossShardOptimizer) has no counterpart: distribution is the
    strategy's job.

    Args:
      init_lr: float, peak learning rate (`--learning_rate`).
      num_train_steps: int > 0; lr decays linearly to 0 at this step.
      num_warmup_steps: int or None; linear warmup over these steps (0/None: none).
      optimizer_type: "adamw" (the original's AdamWeightDecayOptimizer) or
        "lamb" (`LAMB`, not in the original).
      weight_decay_rate: float, 0.01 as the original.
      global_clipnorm: float or None; 1.0 as the original ("This is how the
        model was pre-trained."). None disables clipping.
      exclude_from_weight_decay: regex patterns searched in the TF1 variable
        names; also LAMB's layer-adaptation exclusions.
      beta_1, beta_2, epsilon: as the original (0.9, 0.999, 1e-6).

    Returns:
      An `AdamWeightDecay` or `LAMB` whose learning rate is a `WarmupLinearDecay`.
    """
    # Port note: returns the optimizer, not a train op; clipping, update and
    # the global_step increment happen in optimizer.apply (see the docstring).
    schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    common = dict(learning_rate=schedule, weight_decay_rate=weight_decay_rate,
                  beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                  exclude_from_weight_decay=list(exclude_from_weight_decay or ()),
                  global_clipnorm=global_clipnorm)
    if optimizer_type == "adamw":
        return AdamWeightDecay(**common)
    if optimizer_type == "lamb":
        return LAMB(**common)
    raise UserError("--optimizer_type must be one of %s, got %r"
                    % ("|".join(OPTIMIZER_TYPES), optimizer_type))
