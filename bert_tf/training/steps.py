"""The compiled steps and loops behind `Trainer`: train, evaluate, predict.

Each builder returns a `tf.function` that runs under the trainer's
`tf.distribute.Strategy`. How the loss is split across replicas: the task
gives per-replica sums (`loss_normalizers`, e.g. the masked-LM weight and the
number of examples); the train step all-reduces them, so every replica and
every accumulation micro-batch divides its partial loss by the normalizers of
the whole global batch. Summed over replicas (Keras all-reduces the gradients
with SUM) and micro-batches, the gradient is exactly that of the original's
loss on the global batch; the optimizer then clips it by global norm 1.0 and
updates.

With a seed (`dropout_seed`), every dropout mask is keyed: the masks of a
step are a function of (seed, global_step, replica, micro-batch, layer)
(`dropout_key`, `bert_tf.modeling.layers.dropout.keyed_seeds`), so a run
resumed from a checkpoint draws the same masks as the run that was never
stopped.

`bert_tf.tasks.task_model.TaskModel` makes the same replica step Keras's
`train_step`.

No work on padding (`trim_padding=True`, the default): each (micro-)batch
reaches the task cut after its longest row (`Task.trim_padding`), and the
encoder skips the padding of its shorter rows (`without_padding`), in
training, evaluation and prediction; the traced functions take rows of any
length, so a run traces each once. XLA and TPUs compile fixed shapes: there
the rows stay whole (`fixed_shapes`).
"""

import contextlib

import tensorflow as tf

from bert_tf.modeling import padding
from bert_tf.modeling.layers import dropout as dropout_lib


def fixed_shapes(strategy, use_xla=False):
    """Whether steps under `strategy` must see whole rows: XLA, or a TPU strategy."""
    return bool(use_xla) or isinstance(
        strategy, (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy))


@contextlib.contextmanager
def without_padding(task, model, features, trim_padding=True):
    """The context a step calls the task's model in; yields the features it calls it on.

    With `trim_padding`, for a task that reads no padding position: the
    features cut after the batch's longest row (`Task.trim_padding`), the
    model's encoder skipping the padding inside the cut
    (`padding.padding_skipped`). Otherwise the features as they are.
    """
    if not (trim_padding and task.skips_padding):
        yield features
        return
    with padding.padding_skipped(model):
        yield task.trim_padding(features)


def predict_outputs(task, model, features, trim_padding=True):
    """`task.predict_step` on `features` cut (`Task.trim_padding`), at the rows' length.

    The per-position outputs (`task.sequence_outputs`) come back padded to the
    features' length, every padding position (input_mask 0) holding the
    task's value for it, so every batch's outputs have one shape (gathered
    over replicas, concatenated over batches) and a prediction does not
    depend on the batch it was in; the features it hands back are the uncut
    ones.
    """
    with without_padding(task, model, features, trim_padding) as trimmed:
        outputs = dict(task.predict_step(model, trimmed))
    if trimmed is features:
        return outputs
    mask = features["input_mask"]
    length = mask.shape[1] if mask.shape.rank == 2 and mask.shape[1] else tf.shape(mask)[1]
    for key, constant in task.sequence_outputs.items():
        if key in outputs:
            value = padding.pad_to_length(outputs[key], length, axis=1, constant=constant)
            kept = tf.reshape(tf.not_equal(mask, 0), tf.concat(
                [tf.shape(mask), tf.ones([value.shape.rank - 2], tf.int32)], 0))
            outputs[key] = tf.where(kept, value, tf.cast(constant, value.dtype))
    # A feature handed back (label_ids, label_mask) is handed back whole.
    for key in task.sequence_features:
        if key in outputs and features.get(key) is not None:
            outputs[key] = features[key]
    return outputs


def split_micro_batches(features, num_micro_batches):
    """[B, ...] -> [num_micro_batches, B / num_micro_batches, ...] for every feature."""
    def split(x):
        shape = tf.shape(x)
        new_shape = tf.concat([[num_micro_batches, -1], shape[1:]], axis=0)
        return tf.reshape(x, new_shape)
    return tf.nest.map_structure(split, features)


def _to_dense(gradient):
    if gradient is None:
        return None
    return tf.convert_to_tensor(gradient)


def dropout_key(seed, global_step, replica_id=0, micro_batch=0):
    """The [2] int64 key of one forward pass's dropout masks (see `keyed_seeds`).

    Args:
      seed: int >= 0, the run's seed (`--seed`).
      global_step: int64 scalar, the step being taken (before its update).
      replica_id: the replica's index in its sync group.
      micro_batch: the accumulation micro-batch's index.
    """
    seed = int(seed)
    key = tf.constant([seed % (1 << 31), (seed >> 31) % (1 << 31)], tf.int64)
    for value in (global_step, replica_id, micro_batch):
        key = tf.random.experimental.stateless_fold_in(key, tf.cast(value, tf.int64))
    return key


def _accumulated_gradients(compute_gradients, features, normalizers, num_micro_batches,
                           variables, metric_keys):
    """Sums the gradients (and losses, metric sums) of the micro-batches of `features`."""
    micro_batches = split_micro_batches(features, num_micro_batches)
    # Which variables get a gradient (the others are skipped by the update, as
    # the original skips None gradients); recorded while the loop body is
    # traced, which happens once.
    has_gradient = []

    def body(i, loss_sum, metric_values, accumulated):
        micro = tf.nest.map_structure(lambda x: tf.gather(x, i), micro_batches)
        loss, metrics, grads = compute_gradients(micro, normalizers, i)
        if not has_gradient:
            has_gradient.extend(g is not None for g in grads)
        accumulated = [a if g is None else a + tf.cast(_to_dense(g), a.dtype)
                       for a, g in zip(accumulated, grads)]
        metric_values = [v + metrics[k] for v, k in zip(metric_values, metric_keys)]
        return i + 1, loss_sum + loss, metric_values, accumulated

    _, loss, metric_values, accumulated = tf.while_loop(
        lambda i, *unused: i < num_micro_batches, body,
        (tf.constant(0), tf.constant(0.0), [tf.constant(0.0) for _ in metric_keys],
         [tf.zeros(v.shape, v.dtype) for v in variables]))
    grads = [a if present else None for a, present in zip(accumulated, has_gradient)]
    return loss, dict(zip(metric_keys, metric_values)), grads


def _poison_on_any_overflow(grads, replica_context):
    """fp16: makes every replica's gradients NaN if any replica's overflowed.

    Keras's LossScaleOptimizer decides to skip a step from each worker's own
    gradients; a worker whose gradients overflowed alone would skip the
    all-reduce the others wait in. Agreeing first keeps them in step.
    """
    grads = [_to_dense(g) for g in grads]
    bad = tf.add_n([tf.reduce_sum(tf.cast(~tf.math.is_finite(g), tf.float32))
                    for g in grads if g is not None])
    bad = replica_context.all_reduce(tf.distribute.ReduceOp.SUM, bad)
    poison = tf.where(bad > 0.0, float("nan"), 1.0)
    return [None if g is None else g * tf.cast(poison, g.dtype) for g in grads]


def whole_step_compiles(strategy):
    """Whether XLA can compile a replica's whole training step under `strategy`.

    The optimizer update syncs the replicas (the gradient all-reduce, then
    `strategy.extended.update` of every variable). With one replica there is
    nothing to sync; with several, TensorFlow runs that sync inside an XLA
    function only when every device is a GPU (`MirroredStrategy` then skips
    its `merge_call`, as Keras's `jit_compile=True` relies on); on CPU devices
    the update needs a `merge_call`, which no compiled function may contain.
    """
    if strategy.num_replicas_in_sync == 1:
        return True
    devices = getattr(strategy.extended, "worker_devices", ())
    return bool(devices) and all(
        tf.DeviceSpec.from_string(d).device_type == "GPU" for d in devices)


def build_replica_train_step(task, model, optimizer, num_accumulation_steps=1, use_xla=False,
                             loss_scaling=False, dropout_seed=None, trim_padding=True):
    """One replica's training step: loss, gradients, one optimizer update.

    With `use_xla`, the whole step (forward, backward, accumulation, the
    cross-replica sums, gradient clipping, the optimizer update and the
    global_step increment) is one XLA-compiled function, where the strategy
    allows it (`whole_step_compiles`); otherwise (several replicas on CPU
    devices) each micro-batch's forward and backward pass is compiled and the
    update runs outside XLA.

    With `dropout_seed` (an int), each micro-batch's dropout masks are keyed
    by (dropout_seed, global_step, replica, micro-batch) (`dropout_key`);
    None: each `Dropout` draws from its own seed generator.

    With `trim_padding` (not under XLA), each micro-batch's loss and
    gradients are computed without its padding (`without_padding`).

    Returns:
      `fn(features) -> float32 [1 + len(task.metric_sum_keys)]`: this
      replica's share of the loss, then its metric sums (one vector, so the
      cross-replica reduction is one collective).
    """
    metric_keys = tuple(task.metric_sum_keys)
    dropouts = dropout_lib.dropout_layers(model) if dropout_seed is not None else None
    trim = trim_padding and not use_xla

    def compute_gradients(features, normalizers, micro_batch=0):
        variables = model.trainable_variables
        with tf.GradientTape() as tape, without_padding(task, model, features,
                                                         trim) as features:
            if dropouts is None:
                loss, metrics = task.compute_loss(model, features, normalizers, training=True)
            else:
                step = getattr(optimizer, "inner_optimizer", optimizer).iterations
                replica_id = tf.distribute.get_replica_context().replica_id_in_sync_group
                key = dropout_key(dropout_seed, step, replica_id, micro_batch)
                with dropout_lib.keyed_seeds(dropouts, key):
                    loss, metrics = task.compute_loss(model, features, normalizers,
                                                      training=True)
            scaled_loss = optimizer.scale_loss(loss) if loss_scaling else loss
        return loss, metrics, tape.gradient(scaled_loss, variables)

    def replica_step(features, compute_gradients=compute_gradients):
        replica_context = tf.distribute.get_replica_context()
        normalizers = replica_context.all_reduce(
            tf.distribute.ReduceOp.SUM, task.loss_normalizers(features))
        if num_accumulation_steps == 1:
            loss, metrics, grads = compute_gradients(features, normalizers)
        else:
            loss, metrics, grads = _accumulated_gradients(
                compute_gradients, features, normalizers, num_accumulation_steps,
                model.trainable_variables, metric_keys)
        if loss_scaling:
            grads = _poison_on_any_overflow(grads, replica_context)
        # The optimizer sums the gradients over replicas, clips them by global
        # norm and updates (global_step += 1). A variable without a gradient
        # (the pooler, under the SQuAD loss) is skipped, as the original's
        # optimizer skips it; Keras would skip it too, with a warning that asks
        # whether a loss is missing. Built first on every variable, as Keras does.
        variables = model.trainable_variables
        if not optimizer.built:
            optimizer.build(variables)
        present = [i for i, g in enumerate(grads) if g is not None]
        optimizer.apply([grads[i] for i in present], [variables[i] for i in present])
        return tf.stack([loss] + [metrics[k] for k in metric_keys])

    if not use_xla:
        return replica_step

    whole_step = tf.function(replica_step, jit_compile=True)
    compiled_gradients = tf.function(compute_gradients, jit_compile=True)

    def xla_replica_step(features):
        # Decided while tracing, inside `strategy.run`.
        if whole_step_compiles(tf.distribute.get_strategy()):
            return whole_step(features)
        return replica_step(features, compiled_gradients)

    return xla_replica_step


def build_train_loop(strategy, task, replica_step, stop_flag=None):
    """`loop(iterator, num_steps) -> (losses [num_steps], metric sums, stopped)`, one host call.

    The loop stops early at a non-finite loss (the caller raises), and when
    `stop_flag` (a float32 scalar `tf.Variable` on the host; a preemption
    notice sets it > 0 while the loop runs) asks it to: with one worker, it
    is read before each step, so the step under way when it is set is the
    last; under `MultiWorkerMirroredStrategy`, each worker's flag, read as a
    step starts, is summed across workers with that step's results (no extra
    collective), so every worker stops after the same step, the first one
    that started after any worker's flag was set. `stopped` (a bool tensor)
    says the loop ended so.
    """
    keys = tuple(task.metric_sum_keys)
    agree = stop_flag is not None and isinstance(
        strategy, tf.distribute.MultiWorkerMirroredStrategy)

    def replica_step_and_stop_flag(features, stop):
        return tf.concat([replica_step(features), tf.reshape(stop, [1])], axis=0)

    @tf.function
    def train_loop(iterator, num_steps):
        losses = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        # Defined before the loop, so autograph traces the step only once.
        metric_sums = {k: tf.constant(0.0) for k in keys}
        stopped = tf.constant(False)
        for i in tf.range(num_steps):
            if stop_flag is not None and not agree:
                if stop_flag.read_value() > 0.0:
                    stopped = tf.constant(True)
                    break
            if agree:
                per_replica = strategy.run(replica_step_and_stop_flag,
                                           args=(next(iterator), stop_flag.read_value()))
            else:
                per_replica = strategy.run(replica_step, args=(next(iterator),))
            values = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
            loss = values[0]
            losses = losses.write(i, loss)
            metric_sums = {k: metric_sums[k] + values[j + 1] for j, k in enumerate(keys)}
            if not tf.math.is_finite(loss):
                break
            if agree:
                if values[-1] > 0.0:
                    stopped = tf.constant(True)
                    break
        return losses.stack(), metric_sums, stopped

    return train_loop


def eval_sum_keys(task):
    """The keys of the eval loop's sums: the task's, then `batch_loss_sum`."""
    return tuple(task.eval_sum_keys) + ("batch_loss_sum",)


def initial_eval_sums(task):
    """The eval loop's sums before the first batch: float32 zeros."""
    return {k: tf.constant(0.0) for k in eval_sum_keys(task)}


def replica_eval_sums(task, model, features, trim_padding=True):
    """One global eval batch's sums, in a replica context: the one reduction of evaluation.

    The task's `eval_step` sums on this replica, summed over every replica
    (one collective), and `batch_loss_sum`: the batch's loss
    (`task.eval_batch_loss`, the Estimator's `loss` metric times the number
    of batches). Every replica returns the same values. `Trainer.evaluate`'s
    loop and the task models' Keras `test_step` both add these up. With
    `trim_padding`, `eval_step` sees the batch cut after its longest row.
    """
    keys = tuple(task.eval_sum_keys)
    with without_padding(task, model, features, trim_padding) as features:
        local = task.eval_step(model, features)
    total = tf.distribute.get_replica_context().all_reduce(
        tf.distribute.ReduceOp.SUM, tf.stack([tf.cast(local[k], tf.float32) for k in keys]))
    batch = {k: total[j] for j, k in enumerate(keys)}
    batch["batch_loss_sum"] = task.eval_batch_loss(batch)
    return batch


def eval_results(task, sums, num_batches, predictions=None):
    """The task's metrics from the summed batches (and every prediction, where it needs them).

    Args:
      sums: the added-up `replica_eval_sums` (Python floats or float32 Tensors).
      num_batches: how many global batches they add up.
      predictions: every example's `predict_step` outputs with its labels (in
        input order, padding dropped), for a task whose
        `needs_eval_predictions` (STS-B's Pearson and Spearman); else None.
    """
    results = dict(task.eval_results(sums, num_batches))
    if task.needs_eval_predictions:
        if predictions is None:
            raise TypeError("task %s evaluates from its predictions too: pass them"
                            % task.name)
        results.update(task.eval_results_from_predictions(predictions))
    return results


def build_eval_loop(strategy, task, model, trim_padding=True):
    """`loop(iterator, num_steps, sums) -> sums`: adds `num_steps` batches' eval sums to `sums`.

    Each batch's sums are `replica_eval_sums` (all-reduced in the replicas;
    the first replica's copy is added). Start from `initial_eval_sums(task)`;
    an evaluation may run in chunks (one host call each, so progress shows
    between them): passing each chunk's float32 sums to the next adds every
    batch in the same order as one call over all the batches, so the sums
    are the same to the bit.
    """

    def replica_step(features):
        return replica_eval_sums(task, model, features, trim_padding)

    @tf.function
    def eval_loop(iterator, num_steps, sums):
        for _ in tf.range(num_steps):
            per_replica = strategy.run(replica_step, args=(next(iterator),))
            batch = tf.nest.map_structure(
                lambda value: strategy.experimental_local_results(value)[0], per_replica)
            sums = {k: sums[k] + batch[k] for k in sums}
        return sums

    return eval_loop


def build_predict_step(strategy, task, model, keep_keys=("example_index", "is_real_example"),
                       trim_padding=True):
    """`step(iterator) -> {name: Tensor [global_batch, ...]}` for one global batch.

    The task's per-example outputs (`predict_outputs`: `task.predict_step`,
    on the batch cut after its longest row with `trim_padding`) plus the
    features in `keep_keys`, gathered from every replica (and worker) in
    replica order.
    """

    def replica_predict_step(features):
        outputs = predict_outputs(task, model, features, trim_padding)
        for key in keep_keys:
            if key in features:
                outputs[key] = features[key]
        return outputs

    @tf.function
    def predict_step(iterator):
        per_replica = strategy.run(replica_predict_step, args=(next(iterator),))
        return tf.nest.map_structure(lambda t: strategy.gather(t, axis=0), per_replica)

    return predict_step
