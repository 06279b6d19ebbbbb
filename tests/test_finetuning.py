"""Tests for bert_tf/runs/finetuning.py and bert_tf/data/finite_input.py (the original's main() flow).

The schedule (`Schedule.train_steps`: `num_train_steps`, `num_warmup_steps`)
is the original's formula; `test_results.tsv` is printed as the original
printed the Estimator's float32 probabilities; `FiniteInput` gives every
example exactly once, whatever the number of input pipelines.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.runs import finetuning
from bert_tf.data.finite_input import FiniteInput
from bert_tf.data.finite_input import in_input_order
from bert_tf.errors import UserError
from bert_tf.training.schedule import Schedule


def test_train_steps_are_the_originals():
    # The original's README: MRPC (3668 examples), batch 32, 3 epochs ->
    # global_step = 343, and 10% warmup -> 34 steps.
    assert Schedule().train_steps(3668) == (343, 34)
    # SQuAD counts examples (not features): 87599 / 12 * 2 = 14599.83 -> 14599.
    assert Schedule(train_batch_size=12, num_train_epochs=2.0).train_steps(87599) == (14599, 1459)


@pytest.mark.parametrize("args, message", [
    ((10, 32, 3.0, 0.1), "10 training examples / --train_batch_size=32 \\* --num_train_epochs=3 "
                         "gives no training step"),
    ((100, 32, 0.0, 0.1), "--num_train_epochs must be positive"),
    ((100, 32, 3.0, 1.5), "--warmup_proportion must be in \\[0, 1\\]"),
    ((100, 0, 3.0, 0.1), "--train_batch_size must be positive"),
])
def test_train_steps_refuse_flags_without_a_step(args, message):
    num_train_examples, train_batch_size, num_train_epochs, warmup_proportion = args
    schedule = Schedule(train_batch_size=train_batch_size, num_train_epochs=num_train_epochs,
                        warmup_proportion=warmup_proportion)
    with pytest.raises(UserError, match=message):
        schedule.train_steps(num_train_examples)


def test_the_run_record_holds_the_schedules_training_flags(tmp_path):
    """A run's `Schedule` is recorded by the flags that change the weights (a rerun compares
    them): the batch size, learning rate, epochs and warm-up; the rest is not recorded."""
    from bert_tf.training.dev_eval import DevEval
    from bert_tf.training.scale_out import ScaleOut
    schedule = Schedule(train_batch_size=16, eval_batch_size=4, learning_rate=2e-5,
                        num_train_epochs=2.0, save_checkpoints_steps=7)
    record = finetuning.run_record(str(tmp_path / "out"), "run_classifier", "classifier", True,
                                   False, ScaleOut(), DevEval(), schedule,
                                   dict(task_name="MRPC", max_seq_length=128))
    flags = record.record["training_flags"]
    assert {k: flags[k] for k in ("train_batch_size", "learning_rate", "num_train_epochs",
                                  "warmup_proportion")} == {
        "train_batch_size": 16, "learning_rate": 2e-5, "num_train_epochs": 2.0,
        "warmup_proportion": 0.1}
    assert not {"eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
                "iterations_per_loop"} & set(flags)
    assert not (tmp_path / "out").exists()


def test_test_results_tsv_is_the_originals_format(tmp_path):
    probabilities = np.array([[0.25, 0.75], [1.0 / 3.0, 2.0 / 3.0]], np.float32)
    path = str(tmp_path / "test_results.tsv")
    assert finetuning.write_test_results(path, {"probabilities": probabilities}) == 2
    # The original: "\t".join(str(class_probability) ...) over float32 values.
    expected = "".join("\t".join(str(p) for p in row) + "\n" for row in probabilities)
    assert open(path).read() == expected == "0.25\t0.75\n0.33333334\t0.6666667\n"
    finetuning.write_test_results(path, {"score": np.array([3.5, 1.25], np.float32)},
                                  is_regression=True)
    assert open(path).read() == "3.5\n1.25\n"


def _numbered_examples(n):
    return lambda: tf.data.Dataset.from_tensor_slices(
        {"input_ids": tf.reshape(tf.range(n * 3, dtype=tf.int32), [n, 3]),
         "label_ids": tf.range(n, dtype=tf.int32)})


class _Context(object):
    """What `distribute_datasets_from_function` passes, for `num_pipelines` workers."""

    def __init__(self, num_pipelines, pipeline_id, num_replicas):
        self.num_input_pipelines = num_pipelines
        self.input_pipeline_id = pipeline_id
        self.num_replicas_in_sync = num_replicas

    def get_per_replica_batch_size(self, global_batch_size):
        return global_batch_size // self.num_replicas_in_sync


@pytest.mark.parametrize("num_examples, batch_size", [(10, 4), (8, 4), (3, 8), (0, 4)])
def test_finite_input_pads_the_last_batch_and_marks_the_padding(num_examples, batch_size):
    data = FiniteInput(_numbered_examples(num_examples), num_examples, batch_size)
    batches = list(data.dataset_fn().as_numpy_iterator())
    assert len(batches) == data.num_steps == -(-num_examples // batch_size)
    rows = {k: np.concatenate([b[k] for b in batches]) if batches else np.zeros([0])
            for k in ("example_index", "is_real_example", "label_ids")}
    assert list(rows["example_index"][:num_examples]) == list(range(num_examples))
    assert list(rows["is_real_example"]) == [1] * num_examples + [0] * data.num_padding_examples
    assert all(rows["example_index"][num_examples:] == -1)
    assert list(rows["label_ids"][:num_examples]) == list(range(num_examples))


def test_finite_input_gives_each_example_to_exactly_one_of_several_workers():
    # 2 workers x 2 replicas each: global batch 8, per-replica batch 2.
    num_examples, global_batch = 13, 8
    data = FiniteInput(_numbered_examples(num_examples), num_examples, global_batch)
    per_worker = [list(data.dataset_fn(_Context(2, worker, 4)).as_numpy_iterator())
                  for worker in range(2)]
    # Every worker holds the same number of per-replica batches (none waits forever).
    assert len(per_worker[0]) == len(per_worker[1]) == data.num_steps * 4 // 2
    gathered = {k: np.concatenate([b[k] for batches in per_worker for b in batches])
                for k in ("example_index", "is_real_example", "label_ids")}
    ordered = in_input_order(gathered, num_examples)
    assert list(ordered["label_ids"]) == list(range(num_examples))
    assert gathered["is_real_example"].sum() == num_examples


def test_in_input_order_refuses_a_missing_example():
    outputs = {"example_index": np.array([0, 2, -1]), "is_real_example": np.array([1, 1, 0]),
               "probabilities": np.zeros([3, 2])}
    with pytest.raises(ValueError, match="missing or repeated"):
        in_input_order(outputs, 3)
