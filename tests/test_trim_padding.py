"""No work on padding: a batch cut after its longest row gives the numbers of the whole rows.

Training, evaluation and prediction run each batch only up to its longest
row's last token (rounded up to 8 positions; `Task.trim_padding`). What users
rely on, for every task that cuts (the classifier, multi-label and
regression, named entities, multiple choice, sentence embeddings,
pre-training): the loss, its gradients, the eval sums and the predictions of
a cut batch are those of the whole rows, within float32 rounding (dropout off:
a cut batch draws masks of its own shape); the per-position predictions come
back at the rows' length; the trainer's loops trace once for batches of every
length. run_squad keeps its rows whole, because its loss reads every
position. `--bucket_by_length` batches rows of similar lengths in an order
that follows the seed; its kill -9 resume is in tests/test_exact_resume.py.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.data import input_pipeline
from bert_tf.data.finite_input import FiniteInput
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.modeling import padding
from bert_tf.runs import finetuning
from bert_tf.tasks.embeddings import model as embeddings
from bert_tf.models import BertClassifier
from bert_tf.models import BertMultipleChoice
from bert_tf.models import BertPretrainer
from bert_tf.models import BertSquad
from bert_tf.models import BertTokenClassifier
from bert_tf.tasks.classifier.model import ClassifierTask
from bert_tf.training import distribute
from bert_tf.training import steps
from bert_tf.training.trainer import Trainer
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import tiny_config

SEQ_LENGTH = 32
BATCH_SIZE = 6
NUM_LABELS = 3
NUM_CHOICES = 3
MAX_PREDICTIONS = 4
# The same float32 maths on fewer positions: summation order only.
ATOL = 2e-5


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    yield
    keras.backend.clear_session()


def _rows(rng, num_rows, longest=11, shortest=2):
    """input_ids, input_mask, segment_ids [num_rows, SEQ_LENGTH]: one row `longest` long."""
    lengths = rng.randint(shortest, longest + 1, num_rows)
    lengths[rng.randint(num_rows)] = longest
    mask = (np.arange(SEQ_LENGTH) < lengths[:, None]).astype(np.int32)
    return {"input_ids": rng.randint(1, 99, (num_rows, SEQ_LENGTH)).astype(np.int32) * mask,
            "input_mask": mask,
            "segment_ids": (np.arange(SEQ_LENGTH) >= lengths[:, None] // 2).astype(np.int32)
            * mask}


# Each kind: (a function of a config that builds its model, a batch of its features).


def _classifier(rng, **kwargs):
    features = _rows(rng, BATCH_SIZE)
    features["label_ids"] = rng.randint(NUM_LABELS, size=BATCH_SIZE).astype(np.int32)
    features["is_real_example"] = np.array([1] * (BATCH_SIZE - 1) + [0], np.int32)
    num_labels = 1 if kwargs.get("is_regression") else NUM_LABELS
    return (lambda config: BertClassifier(config, num_labels, **kwargs)), features


def _multi_label(rng):
    make_model, features = _classifier(rng, multi_label=True)
    features["label_ids"] = rng.randint(2, size=(BATCH_SIZE, NUM_LABELS)).astype(np.int32)
    return make_model, features


def _regression(rng):
    make_model, features = _classifier(rng, is_regression=True)
    features["label_ids"] = rng.rand(BATCH_SIZE).astype(np.float32) * 5
    return make_model, features


def _ner(rng):
    features = _rows(rng, BATCH_SIZE)
    features["label_ids"] = rng.randint(NUM_LABELS, size=(BATCH_SIZE, SEQ_LENGTH)).astype(
        np.int32) * features["input_mask"]
    features["label_mask"] = (rng.rand(BATCH_SIZE, SEQ_LENGTH) < 0.6).astype(
        np.int32) * features["input_mask"]
    features["label_mask"][:, 0] = 0  # [CLS]
    features["is_real_example"] = np.ones(BATCH_SIZE, np.int32)
    return (lambda config: BertTokenClassifier(config, NUM_LABELS, labels=["O", "B-X", "I-X"])
            ), features


def _ner_labels_padded_with_0(rng):
    """Keras's form (no label_mask; -1: no label), the labels padded with 0 ("O") past each row:
    a padding position is no token, and its label is not read."""
    make_model, features = _ner(rng)
    del features["label_mask"]
    features["label_ids"][:, 0] = -1  # [CLS]
    return make_model, features


def _multiple_choice(rng):
    rows = _rows(rng, BATCH_SIZE * NUM_CHOICES)
    features = {k: v.reshape(BATCH_SIZE, NUM_CHOICES * SEQ_LENGTH) for k, v in rows.items()}
    features["label_ids"] = rng.randint(NUM_CHOICES, size=BATCH_SIZE).astype(np.int32)
    features["is_real_example"] = np.ones(BATCH_SIZE, np.int32)
    return (lambda config: BertMultipleChoice(config, num_choices=NUM_CHOICES)), features


def _embeddings(rng):
    features = _rows(rng, BATCH_SIZE, longest=7)
    features.update({embeddings.POSITIVE + k: v
                     for k, v in _rows(rng, BATCH_SIZE, longest=13).items()})
    features["is_real_example"] = np.ones(BATCH_SIZE, np.int32)
    return (lambda config: embeddings.SentenceEmbedder(config, pooling="mean")), features


def _pretraining(rng):
    features = _rows(rng, BATCH_SIZE, shortest=5)
    lengths = features["input_mask"].sum(-1)
    features["masked_lm_positions"] = np.stack(
        [np.sort(rng.choice(np.arange(1, n), MAX_PREDICTIONS, replace=False)) for n in lengths]
    ).astype(np.int32)
    features["masked_lm_ids"] = rng.randint(1, 99, (BATCH_SIZE, MAX_PREDICTIONS)).astype(np.int32)
    features["masked_lm_weights"] = (rng.rand(BATCH_SIZE, MAX_PREDICTIONS) < 0.8).astype(
        np.float32)
    features["next_sentence_labels"] = rng.randint(2, size=(BATCH_SIZE, 1)).astype(np.int32)
    return BertPretrainer, features


TASKS = {"classifier": _classifier, "multi_label": _multi_label, "regression": _regression,
         "ner": _ner, "ner_labels_padded_with_0": _ner_labels_padded_with_0,
         "multiple_choice": _multiple_choice, "embeddings": _embeddings,
         "pretraining": _pretraining}
# The length each batch is cut to (its longest row: 11 tokens; 7 for the embeddings'
# anchors).
CUT = {"embeddings": 8}


def _loss_and_gradients(task, model, features, trim, training=False):
    features = {k: tf.constant(v) for k, v in features.items()}
    normalizers = task.loss_normalizers(features)
    with tf.GradientTape() as tape, steps.without_padding(task, model, features,
                                                          trim) as features:
        # No dropout (the heads' own too): a cut batch would draw masks of its own shape.
        loss, metrics = task.compute_loss(model, features, normalizers, training=training)
    gradients = tape.gradient(loss, model.trainable_variables)
    return loss, metrics, gradients


@pytest.mark.parametrize("name", sorted(TASKS))
def test_a_cut_batch_gives_the_whole_rows_loss_gradients_eval_sums_and_predictions(name):
    make_model, features = TASKS[name](np.random.RandomState(len(name)))
    keras.utils.set_random_seed(1)
    model = make_model(tiny_config())
    task = model.task
    cut = task.trim_padding({k: tf.constant(v) for k, v in features.items()})
    assert cut["input_ids"].shape[-1] == CUT.get(name, 16), "the batch was not cut"
    if name == "embeddings":  # the positives after their own longest row (13 tokens)
        assert cut[embeddings.POSITIVE + "input_ids"].shape[-1] == 16

    loss, metrics, gradients = _loss_and_gradients(task, model, features, trim=False)
    cut_loss, cut_metrics, cut_gradients = _loss_and_gradients(task, model, features, trim=True)
    np.testing.assert_allclose(cut_loss, loss, atol=ATOL, rtol=ATOL)
    for key in metrics:
        np.testing.assert_allclose(cut_metrics[key], metrics[key], atol=ATOL, err_msg=key)
    assert sum(g is not None for g in gradients) > 10
    for variable, whole, trimmed in zip(model.trainable_variables, gradients, cut_gradients):
        assert (whole is None) == (trimmed is None), variable.path
        if whole is not None:
            np.testing.assert_allclose(tf.convert_to_tensor(trimmed), tf.convert_to_tensor(whole),
                                       atol=ATOL, rtol=1e-4, err_msg=variable.path)

    if task.eval_sum_keys:
        batch = {k: tf.constant(v) for k, v in features.items()}
        whole = steps.replica_eval_sums(task, model, batch, trim_padding=False)
        trimmed = steps.replica_eval_sums(task, model, batch, trim_padding=True)
        for key in whole:
            np.testing.assert_allclose(trimmed[key], whole[key], atol=ATOL, rtol=ATOL,
                                       err_msg=key)

    batch = {k: tf.constant(v) for k, v in features.items()}
    whole = steps.predict_outputs(task, model, batch, trim_padding=False)
    trimmed = steps.predict_outputs(task, model, batch, trim_padding=True)
    assert set(trimmed) == set(whole)
    kept = features["input_mask"].astype(bool)
    for key in whole:
        assert trimmed[key].shape == whole[key].shape, key
        a, b = np.asarray(trimmed[key]), np.asarray(whole[key])
        if key in task.sequence_outputs:
            # Real positions as the whole rows'; the cut-off ones the task's value.
            a, b = a[kept], b[kept]
            assert np.all(np.asarray(trimmed[key])[:, CUT.get(name, 16):]
                          == task.sequence_outputs[key]), key
        np.testing.assert_allclose(a, b, atol=ATOL, rtol=ATOL, err_msg=key)


def test_squad_keeps_its_rows_whole_because_its_loss_reads_every_position():
    rng = np.random.RandomState(0)
    features = _rows(rng, BATCH_SIZE)
    features["start_positions"] = rng.randint(1, 3, BATCH_SIZE).astype(np.int32)
    features["end_positions"] = features["start_positions"] + 1
    keras.utils.set_random_seed(1)
    model = BertSquad(tiny_config())
    task = model.task
    batch = {k: tf.constant(v) for k, v in features.items()}
    assert task.trim_padding(batch) is batch
    # The reason: the original's span softmax runs over the padding too, so a cut
    # (the base task's) would change the loss.
    normalizers = task.loss_normalizers(batch)
    whole, _ = task.compute_loss(model, batch, normalizers, training=False)
    cut, _ = task.compute_loss(model, padding.trim_padding(batch, task.sequence_features),
                               normalizers, training=False)
    assert abs(float(whole) - float(cut)) > 1e-2


def test_attended_length_is_the_last_attended_position_rounded_up():
    rng = np.random.RandomState(0)
    for last in range(SEQ_LENGTH + 1):
        mask = np.zeros((3, SEQ_LENGTH), np.int32)
        if last:
            mask[rng.randint(3), last - 1] = 1  # a hole before it, even
        want = min(SEQ_LENGTH, max(1, -(-last // 8) * 8))
        assert int(padding.attended_length(tf.constant(mask), 8)) == want, last
        assert padding.numpy_attended_length(mask, 8) == want, last
        if last not in (8, 16):
            # One position past a multiple: the next multiple, never the one before.
            assert want >= last


def test_predict_outputs_put_the_cut_positions_back_at_the_rows_length():
    value = tf.reshape(tf.range(2 * 3 * 2, dtype=tf.float32), [2, 3, 2])
    padded = padding.pad_to_length(value, 5, axis=1, constant=-1.0)
    assert padded.shape == (2, 5, 2)
    np.testing.assert_array_equal(padded[:, :3], value)
    assert np.all(padded[:, 3:] == -1.0)


# ------------------------------------------------------------- the trainer


class _CountingTask(ClassifierTask):
    """A classifier that counts the cuts traced (one per traced step)."""

    cuts = 0

    def trim_padding(self, features):
        type(self).cuts += 1
        return super().trim_padding(features)


class _CountingClassifier(BertClassifier):
    """A `BertClassifier` whose task is `_CountingTask`."""

    def make_task(self):
        return _CountingTask(self.config, self.num_labels)


def _batches(num_batches, seed):
    """Global batches of 4 whose longest row is 3 to 30 tokens long (every cut length)."""
    rng = np.random.RandomState(seed)
    batches = []
    for longest in np.linspace(3, 30, num_batches).astype(int):
        rows = _rows(rng, 4, longest=longest, shortest=min(2, longest))
        rows["label_ids"] = rng.randint(NUM_LABELS, size=4).astype(np.int32)
        batches.append(rows)
    return {k: np.stack([b[k] for b in batches]) for k in batches[0]}


def _run(output_dir, batches, trim_padding):
    from tests.test_pretraining import in_memory_dataset_fn
    keras.utils.set_random_seed(3)
    trainer = Trainer(distribute.get_strategy("off"),
                      lambda: _CountingClassifier(one_layer_config(), NUM_LABELS), str(output_dir),
                      trim_padding=trim_padding)
    history = trainer.train(in_memory_dataset_fn(batches), 4, len(batches["input_ids"]), 1e-3, 1,
                            iterations_per_loop=3, save_checkpoints_steps=100)
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in batches.items()}
    data = FiniteInput(lambda: tf.data.Dataset.from_tensor_slices(flat), len(flat["input_ids"]), 4)
    results = trainer.evaluate(data, 4)
    predictions = trainer.predict(data)
    return trainer, np.concatenate([h["losses"] for h in history]), results, predictions


@pytest.mark.slow
def test_the_trainer_cuts_every_batch_traces_once_and_keeps_the_whole_rows_numbers(tmp_path):
    batches = _batches(7, seed=5)
    _CountingTask.cuts = 0
    trainer, losses, results, predictions = _run(tmp_path / "cut", batches, True)
    # One trace each of the train loop, the eval loop and the predict step, for
    # batches whose cut takes every length from 8 to 32.
    assert trainer._train_loops[1].experimental_get_tracing_count() == 1
    assert trainer._eval_loop.experimental_get_tracing_count() == 1
    assert trainer._predict_step.experimental_get_tracing_count() == 1
    assert _CountingTask.cuts == 3
    _CountingTask.cuts = 0
    _, whole_losses, whole_results, whole_predictions = _run(tmp_path / "whole", batches, False)
    assert _CountingTask.cuts == 0
    np.testing.assert_allclose(losses, whole_losses, atol=ATOL, rtol=ATOL)
    for key in whole_results:
        np.testing.assert_allclose(results[key], whole_results[key], atol=ATOL, err_msg=key)
    for key in whole_predictions:
        np.testing.assert_allclose(predictions[key], whole_predictions[key], atol=ATOL,
                                   err_msg=key)
    final = "model.ckpt-%d" % len(batches["input_ids"])
    a = checkpoint.read_checkpoint(str(tmp_path / "cut" / final))
    b = checkpoint.read_checkpoint(str(tmp_path / "whole" / final))
    for name in sorted(b):
        np.testing.assert_allclose(a[name], b[name], atol=ATOL, rtol=1e-4, err_msg=name)


def test_fixed_shapes_under_xla_and_on_tpu(tmp_path):
    off = distribute.get_strategy("off")
    assert not steps.fixed_shapes(off) and steps.fixed_shapes(off, use_xla=True)
    build_model = lambda: BertClassifier(one_layer_config(), NUM_LABELS)  # noqa: E731
    assert Trainer(off, build_model, str(tmp_path), use_xla=True).trim_padding is False
    assert Trainer(off, build_model, str(tmp_path)).trim_padding is True
    # Keras: compiled with XLA, the model's steps keep whole rows.
    from bert_tf.training.optimization import create_optimizer
    model = build_model()
    model.compile(optimizer=create_optimizer(1e-3, 10, 1))
    assert model._trims_padding()
    model.compile(optimizer=create_optimizer(1e-3, 10, 1), jit_compile=True)
    assert not model._trims_padding()


@pytest.mark.slow
def test_keras_fit_evaluate_and_predict_run_cut_batches():
    rng = np.random.RandomState(2)
    make_model, features = _classifier(rng)
    del features["is_real_example"]
    keras.utils.set_random_seed(1)
    model = make_model(tiny_config())
    from bert_tf.training.optimization import create_optimizer
    model.compile(optimizer=create_optimizer(1e-3, 10, 1))
    cuts = []
    original = type(model.task).trim_padding

    def counting(self, batch):
        cuts.append(True)
        return original(self, batch)

    type(model.task).trim_padding = counting
    try:
        whole = model({k: tf.constant(v) for k, v in features.items()}, training=False)
        predicted = model.predict(features, batch_size=BATCH_SIZE, verbose=0)
        model.evaluate(features, batch_size=BATCH_SIZE, verbose=0)
        model.fit(features, batch_size=BATCH_SIZE, epochs=1, verbose=0)
    finally:
        type(model.task).trim_padding = original
    assert len(cuts) >= 3  # traced in predict, evaluate and fit
    np.testing.assert_allclose(predicted["logits"], whole["logits"], atol=ATOL)


# ------------------------------------------------------------- bucketing and the flags


def _write_records(path, num_records, seed=0):
    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(num_records):
            length = rng.randint(3, SEQ_LENGTH + 1)
            mask = (np.arange(SEQ_LENGTH) < length).astype(np.int64)
            values = {"input_ids": rng.randint(1, 99, SEQ_LENGTH) * mask, "input_mask": mask,
                      "segment_ids": np.zeros(SEQ_LENGTH, np.int64),
                      "label_ids": [rng.randint(NUM_LABELS)], "is_real_example": [1]}
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                k: tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(v).ravel()))
                for k, v in values.items()})).SerializeToString())
    return str(path)


def _cut_lengths(path, bucket, seed, num_batches=60):
    dataset = input_pipeline.create_finetuning_dataset(
        path, classifier_data.name_to_features(SEQ_LENGTH), 8, seed=seed,
        bucket_by_length=bucket)
    batches = list(dataset.take(num_batches).as_numpy_iterator())
    lengths = [padding.numpy_attended_length(b["input_mask"], 8) for b in batches]
    return lengths, [b["input_ids"].tobytes() for b in batches]


def test_bucket_by_length_batches_similar_lengths_in_an_order_the_seed_gives(tmp_path):
    path = _write_records(tmp_path / "train.tf_record", 300)
    plain, _ = _cut_lengths(path, False, seed=1)
    bucketed, order = _cut_lengths(path, True, seed=1)
    # Unbucketed, almost every batch holds a long row; bucketed, the cuts spread out.
    assert np.mean(bucketed) < 0.8 * np.mean(plain)
    assert len(set(bucketed)) >= 3
    assert _cut_lengths(path, True, seed=1)[1] == order
    assert _cut_lengths(path, True, seed=2)[1] != order


def test_bad_flag_combinations_are_one_line(tmp_path):
    from tests.test_tpu_flags import scale_out_of
    assert scale_out_of().trainer_options()["trim_padding"] is True
    assert scale_out_of("--notrim_padding").trainer_options()["trim_padding"] is False
    assert scale_out_of("--bucket_by_length").bucket_by_length is True
    with pytest.raises(UserError, match=r"^--bucket_by_length groups rows .* drop one of the "
                                        r"two$"):
        scale_out_of("--bucket_by_length", "--notrim_padding")
    with pytest.raises(UserError, match=r"^--bucket_by_length: with --use_xla every row stays "
                                        r"whole"):
        scale_out_of("--bucket_by_length", "--use_xla")
    from bert_tf.tasks.squad.run import run_squad
    from bert_tf.training.scale_out import ScaleOut
    from tests.test_pretraining import write_config
    config = write_config(tiny_config(), str(tmp_path / "bert_config.json"))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]) + "\n")
    output_dir = tmp_path / "squad_out"
    with pytest.raises(UserError, match=r"^--bucket_by_length: run_squad keeps every row whole"):
        run_squad(config, str(vocab), str(output_dir), train_file="unused.json", do_train=True,
                  max_seq_length=SEQ_LENGTH, doc_stride=8, max_query_length=8,
                  scale_out=ScaleOut(bucket_by_length=True))
    assert not os.path.exists(output_dir)


def test_the_training_input_pipelines_take_bucket_by_length(tmp_path):
    path = _write_records(tmp_path / "train.tf_record", 40)
    dataset_fn = finetuning.train_dataset_fn(path, classifier_data.name_to_features(SEQ_LENGTH),
                                             8, seed=1, bucket_by_length=True)
    context = tf.distribute.InputContext()
    batch = next(iter(dataset_fn(context)))
    assert batch["input_ids"].shape == (8, SEQ_LENGTH)


def test_the_encoder_skips_the_padding_of_the_shorter_rows():
    """Inside a cut batch, the shorter rows' padding reaches no dense layer: the encoder runs
    on the attended tokens alone (padding.padding_skipped), with the whole rows' numbers."""
    from bert_tf.modeling.bert_model import BertModel
    from bert_tf.modeling.layers.dense import BertDense
    rng = np.random.RandomState(4)
    rows = _rows(rng, BATCH_SIZE)
    keras.utils.set_random_seed(1)
    model = BertModel(tiny_config())
    args = (tf.constant(rows["input_ids"]), tf.constant(rows["input_mask"]),
            tf.constant(rows["segment_ids"]))
    whole = model(*args, training=False)["sequence_output"].numpy()
    seen = []
    call = BertDense.call

    def spy(self, inputs, training=None):
        seen.append(inputs.shape[0])
        return call(self, inputs, training)
    BertDense.call = spy
    try:
        with padding.padding_skipped(model):
            packed = model(*args, training=False)["sequence_output"].numpy()
    finally:
        BertDense.call = call
    assert not model.encoder.skip_padding  # put back after the block
    tokens = int(rows["input_mask"].sum())
    # Every dense layer of the encoder on the tokens; the pooler's on the [CLS] rows.
    assert tokens < BATCH_SIZE * 11 and set(seen) == {tokens, BATCH_SIZE}, (tokens, set(seen))
    kept = rows["input_mask"].astype(bool)
    np.testing.assert_allclose(packed[kept], whole[kept], atol=ATOL, rtol=ATOL)
    assert not packed[~kept].any()


def test_recomputed_layers_skip_the_padding_with_the_same_gradients():
    """--gradient_checkpointing: each layer recomputed in the backward pass on the tokens alone."""
    make_model, features = _pretraining(np.random.RandomState(7))  # no dropout in its heads
    config = tiny_config()
    config.gradient_checkpointing = True
    keras.utils.set_random_seed(1)
    model = make_model(config)
    task = model.task
    assert model.bert.encoder.gradient_checkpointing
    loss, _, gradients = _loss_and_gradients(task, model, features, trim=False, training=True)
    cut_loss, _, cut_gradients = _loss_and_gradients(task, model, features, trim=True,
                                                     training=True)
    np.testing.assert_allclose(cut_loss, loss, atol=ATOL, rtol=ATOL)
    for variable, whole, trimmed in zip(model.trainable_variables, gradients, cut_gradients):
        if whole is not None:
            np.testing.assert_allclose(tf.convert_to_tensor(trimmed), tf.convert_to_tensor(whole),
                                       atol=ATOL, rtol=1e-4, err_msg=variable.path)
