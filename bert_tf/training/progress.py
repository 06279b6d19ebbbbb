"""Progress logs (steps/s, examples/s, ETA) and TensorBoard scalars for long runs."""

import time

import tensorflow as tf
from absl import logging
from tensorflow.core.framework import summary_pb2

# Re-exported: `format_duration` lives at the ground floor, where the data modules use it too.
from bert_tf.item_progress import format_duration  # noqa: F401

# The Estimator's logging period (--log_steps), declared with the option.
from bert_tf.training.scale_out import LOG_STEPS  # noqa: F401,E402

# TensorBoard's scalar-plugin metadata, so `tf.summary.write` makes scalar
# summaries without importing `tensorboard` (not a dependency of this project).
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars", content=b""),
    data_class=summary_pb2.DATA_CLASS_SCALAR)


def scalar_summary(name, value, step=None):
    """`tf.summary.scalar` without the `tensorboard` package: a float32 scalar event."""
    return tf.summary.write(name, tf.constant(float(value), tf.float32), step=step,
                            metadata=_SCALAR_METADATA)


class TrainProgress(object):
    """Logs one line per host loop and writes the training summaries (chief only).

    Args:
      output_dir: where the event file goes (None or a non-chief: no file).
      num_train_steps: the final global step, for the ETA.
      train_batch_size: global batch, for examples/s.
    """

    def __init__(self, output_dir, num_train_steps, train_batch_size):
        self.num_train_steps = num_train_steps
        self.train_batch_size = train_batch_size
        self.start_time = time.time()
        self.writer = (tf.summary.create_file_writer(output_dir) if output_dir
                       else tf.summary.create_noop_writer())

    def record(self, step, losses, elapsed, learning_rate, train_metrics, traced=False):
        """Logs and summarizes one host loop that ended at `step`; returns its record.

        `traced`: the loop was the step's first call, its time mostly the tracing:
        no ETA from it (the line says so).
        """
        steps_per_sec = len(losses) / max(elapsed, 1e-9)
        examples_per_sec = steps_per_sec * self.train_batch_size
        remaining = (self.num_train_steps - step) / steps_per_sec if steps_per_sec else None
        eta = ("? (this loop traced the step)" if traced and step < self.num_train_steps
               else format_duration(remaining))
        record = {"step": step, "losses": losses, "loss": float(losses.mean()),
                  "learning_rate": learning_rate, "steps_per_sec": steps_per_sec,
                  "examples_per_sec": examples_per_sec}
        record.update(train_metrics)
        logging.info(
            "step %d/%d: loss = %.6g, %slr = %.3g, %.3g steps/s, %.1f examples/s, "
            "elapsed %s, ETA %s", step, self.num_train_steps, record["loss"],
            "".join("%s = %.4g, " % (k, v) for k, v in sorted(train_metrics.items())),
            learning_rate, steps_per_sec, examples_per_sec,
            format_duration(time.time() - self.start_time), eta)
        with self.writer.as_default(step=step):
            scalar_summary("loss", record["loss"])
            scalar_summary("learning_rate", learning_rate)
            for key, value in train_metrics.items():
                scalar_summary(key, value)
            scalar_summary("global_step/sec", steps_per_sec)
            scalar_summary("examples/sec", examples_per_sec)
        self.writer.flush()
        return record

    def close(self):
        self.writer.close()
