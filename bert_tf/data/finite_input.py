"""Every example exactly once, on any number of replicas (original: `PaddingInputExample`).

The original's eval and predict read a finite file. On TPU, where every batch
must be full, `run_classifier.py` appended `PaddingInputExample`s (all-zero
features with `is_real_example = 0`) until the count divided the batch, and
its metrics were weighted by `is_real_example`. `FiniteInput` does this for
every device and strategy, inside tf.data:

  1. number the examples (`example_index` 0..N-1, so predictions can be put
     back in input order whatever the replica that computed them);
  2. append all-zero padding examples (`is_real_example = 0`,
     `example_index = -1`) up to `num_steps * global_batch_size`;
  3. give input pipeline i every num_pipelines-th example from i, so each
     pipeline holds the same whole number of per-replica batches;
  4. batch with `drop_remainder=True` (static shapes, as XLA and TPUs need).

Global batch j then holds examples j*G .. j*G + G - 1 (G the global batch),
exactly the original's batch j, with padding only at the end of the last one.
"""

import math

import tensorflow as tf

EXAMPLE_INDEX = "example_index"
IS_REAL_EXAMPLE = "is_real_example"


class FiniteInput(object):
    """A finite set of examples for `Trainer.evaluate` and `Trainer.predict`.

    Args:
      examples_fn: `fn() -> tf.data.Dataset` of single (unbatched) examples,
        each a dict of Tensors, in input order. It is called once per input
        pipeline and must give the same examples each time.
      num_examples: int, how many examples `examples_fn` gives.
      global_batch_size: int, examples per step over all replicas
        (`--eval_batch_size`, `--predict_batch_size`).

    Attributes:
      num_steps: global batches, ceil(num_examples / global_batch_size).
    """

    def __init__(self, examples_fn, num_examples, global_batch_size):
        if global_batch_size < 1:
            raise ValueError("global_batch_size must be >= 1, got %d" % global_batch_size)
        self.examples_fn = examples_fn
        self.num_examples = int(num_examples)
        self.global_batch_size = int(global_batch_size)
        self.num_steps = int(math.ceil(self.num_examples / float(self.global_batch_size)))

    @property
    def num_padding_examples(self):
        return self.num_steps * self.global_batch_size - self.num_examples

    def dataset_fn(self, input_context=None):
        """For `strategy.distribute_datasets_from_function`: per-replica batches."""
        num_pipelines = input_context.num_input_pipelines if input_context else 1
        pipeline_id = input_context.input_pipeline_id if input_context else 0
        batch_size = (input_context.get_per_replica_batch_size(self.global_batch_size)
                      if input_context else self.global_batch_size)

        def number(index, features):
            features = dict(features)
            features[EXAMPLE_INDEX] = tf.cast(index, tf.int32)
            if IS_REAL_EXAMPLE not in features:
                features[IS_REAL_EXAMPLE] = tf.constant(1, tf.int32)
            else:
                features[IS_REAL_EXAMPLE] = tf.cast(features[IS_REAL_EXAMPLE], tf.int32)
            return features

        d = self.examples_fn().take(self.num_examples).enumerate().map(number)
        if self.num_padding_examples:
            padding = tf.nest.map_structure(
                lambda spec: tf.zeros([n if n is not None else 0 for n in spec.shape],
                                      spec.dtype), d.element_spec)
            padding[EXAMPLE_INDEX] = tf.constant(-1, tf.int32)
            padding[IS_REAL_EXAMPLE] = tf.constant(0, tf.int32)
            d = d.concatenate(
                tf.data.Dataset.from_tensors(padding).repeat(self.num_padding_examples))
        if num_pipelines > 1:
            d = d.shard(num_pipelines, pipeline_id)
        d = d.batch(batch_size, drop_remainder=True)
        return d.prefetch(tf.data.AUTOTUNE)


def in_input_order(outputs, num_examples):
    """Drops padding rows and sorts gathered predictions by `example_index`.

    Args:
      outputs: dict of numpy arrays [num_rows, ...], with `example_index`.
      num_examples: how many real examples there must be.

    Returns:
      dict of numpy arrays [num_examples, ...], row i = example i (the
      `example_index` and `is_real_example` entries removed).

    Raises:
      ValueError: an example is missing or repeated (a bug, not a user error).
    """
    import numpy as np
    index = outputs[EXAMPLE_INDEX]
    keep = index >= 0
    order = np.argsort(index[keep], kind="stable")
    ordered_index = index[keep][order]
    if not np.array_equal(ordered_index, np.arange(num_examples)):
        raise ValueError("predictions cover %d rows for %d examples (missing or repeated "
                         "examples)" % (len(ordered_index), num_examples))
    return {k: v[keep][order] for k, v in outputs.items()
            if k not in (EXAMPLE_INDEX, IS_REAL_EXAMPLE)}
