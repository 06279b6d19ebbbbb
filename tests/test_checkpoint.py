import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from bert_tf.modeling import checkpoint
from bert_tf.errors import UserError
from bert_tf.modeling.heads import BertPretrainingHeads
from tests.conftest import TINY_CONFIG


def _model(**overrides):
    config = BertConfig.from_dict(dict(TINY_CONFIG, **overrides))
    return BertModel(config), BertPretrainingHeads(config)


def test_save_load_save_is_bit_exact(tmp_path):
    model, heads = _model()
    first = checkpoint.save_checkpoint([model, heads], str(tmp_path / "a" / "model.ckpt-1"),
                                       global_step=1)
    clone, clone_heads = _model()
    report = checkpoint.load_checkpoint([clone, clone_heads], first)
    assert len(report.loaded) == len(model.weights) + len(heads.weights)
    assert report.global_step == 1
    second = checkpoint.save_checkpoint([clone, clone_heads], str(tmp_path / "b" / "model.ckpt-1"),
                                        global_step=1)
    a, b = checkpoint.read_checkpoint(first), checkpoint.read_checkpoint(second)
    assert list(a) == list(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # The files themselves are identical too.
    for suffix in (".index", ".data-00000-of-00001"):
        with open(first + suffix, "rb") as f1, open(second + suffix, "rb") as f2:
            assert f1.read() == f2.read()


def test_checkpoint_is_written_atomically_and_listed(tmp_path):
    model, _ = _model()
    for step in (1, 2):
        checkpoint.save_checkpoint(model, str(tmp_path / ("model.ckpt-%d" % step)), global_step=step)
    assert not [f for f in os.listdir(tmp_path) if ".tmp-" in f]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-2")
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-1", "model.ckpt-2"]
    # A directory resolves to its latest checkpoint.
    assert checkpoint.load_checkpoint(model, str(tmp_path)).global_step == 2


def test_heads_and_optimizer_state_are_reported_not_dropped(tmp_path):
    model, heads = _model()
    values = {checkpoint.tf1_name(v): v for v in model.weights + heads.weights}
    for name, v in list(values.items()):
        values[name + "/adam_m"] = tf.zeros_like(v)
        values[name + "/adam_v"] = tf.zeros_like(v)
    values["global_step"] = tf.constant(42, tf.int64)
    prefix = checkpoint.write_checkpoint(str(tmp_path / "model.ckpt-42"), values)
    clone, _ = _model()
    report = checkpoint.load_checkpoint(clone, prefix)
    assert sorted(report.unused_heads) == sorted(checkpoint.tf1_name(v) for v in heads.weights)
    assert len(report.skipped_optimizer) == 2 * (len(model.weights) + len(heads.weights)) + 1
    assert report.global_step == 42
    assert report.uninitialized == []


def test_missing_variable_is_named(tmp_path):
    small, _ = _model()
    prefix = checkpoint.save_checkpoint(small, str(tmp_path / "bert_model.ckpt"))
    big, _ = _model(num_hidden_layers=3)
    with pytest.raises(UserError) as e:
        checkpoint.load_checkpoint(big, prefix)
    msg = str(e.value)
    assert "bert/encoder/layer_2/" in msg and "missing" in msg and "\n" not in msg
    # Non-strict (the original's init_checkpoint): the shared part loads.
    report = checkpoint.load_checkpoint(big, prefix, strict=False)
    assert all(n.startswith("bert/encoder/layer_2/") for n in report.uninitialized)
    assert len(report.uninitialized) == 16


def test_unexpected_variable_is_named(tmp_path):
    big, _ = _model(num_hidden_layers=3)
    prefix = checkpoint.save_checkpoint(big, str(tmp_path / "bert_model.ckpt"))
    small, _ = _model()
    with pytest.raises(UserError, match="bert/encoder/layer_2/.* has no place in the model"):
        checkpoint.load_checkpoint(small, prefix)


def test_wrong_shape_names_variable_and_both_shapes(tmp_path):
    model, _ = _model(vocab_size=120)
    prefix = checkpoint.save_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
    other, _ = _model()
    before = other.embedding_table.numpy().copy()
    with pytest.raises(UserError) as e:
        checkpoint.load_checkpoint(other, prefix)
    assert "bert/embeddings/word_embeddings" in str(e.value)
    assert "[120, 32]" in str(e.value) and "[99, 32]" in str(e.value)
    # Nothing was assigned.
    np.testing.assert_array_equal(other.embedding_table.numpy(), before)


def test_no_checkpoint_names_the_flag(tmp_path):
    model, _ = _model()
    with pytest.raises(UserError, match="--init_checkpoint=.*nothing.ckpt: no checkpoint there"):
        checkpoint.load_checkpoint(model, str(tmp_path / "nothing.ckpt"))
    with pytest.raises(UserError, match="holds no checkpoint"):
        checkpoint.load_checkpoint(model, str(tmp_path))


def test_wrapper_prefixes_and_unscoped_classifier_names():
    assert checkpoint.tf1_name("pretrainer/bert/pooler/dense/kernel") == "bert/pooler/dense/kernel"
    assert checkpoint.tf1_name("cls/predictions/output_bias:0") == "cls/predictions/output_bias"
    assert checkpoint.tf1_name("classifier/output_weights") == "output_weights"


def test_assignment_map_as_the_original(tmp_path):
    model, heads = _model()
    prefix = checkpoint.save_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
    assignment_map, initialized = checkpoint.get_assignment_map_from_checkpoint(
        model.weights + heads.weights, prefix)
    assert set(assignment_map) == {checkpoint.tf1_name(v) for v in model.weights}
    assert "bert/pooler/dense/kernel:0" in initialized
    assert not any(n.startswith("cls/") for n in assignment_map)


def test_state_file_of_a_relative_output_dir_lists_bare_names(tmp_path, monkeypatch):
    # `python tools/run_classifier.py --output_dir=out/mrpc` from a working
    # directory: the state file must name `model.ckpt-N` (as tf.train.Saver
    # writes it), or neither resuming, pruning nor the original finds them.
    from bert_tf import training
    monkeypatch.chdir(tmp_path)
    model = BertModel(BertConfig.from_dict(TINY_CONFIG))
    for step in (1, 2, 3):
        checkpoint.save_checkpoint(model, os.path.join("out", "mrpc", "model.ckpt-%d" % step),
                                   global_step=step)
    with open(os.path.join("out", "mrpc", "checkpoint")) as f:
        state = f.read()
    assert 'model_checkpoint_path: "model.ckpt-3"' in state, state
    assert "../" not in state, state
    assert training.latest_checkpoint(os.path.join("out", "mrpc")) == os.path.join(
        "out", "mrpc", "model.ckpt-3")
    training.prune_checkpoints(os.path.join("out", "mrpc"), keep_checkpoint_max=1)
    assert sorted(os.listdir(os.path.join("out", "mrpc"))) == [
        "checkpoint", "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index"]


def test_release_directory_without_state_file_loads(tmp_path):
    # A Google release directory: bert_model.ckpt.*, no `checkpoint` state file.
    model, heads = _model()
    release = tmp_path / "uncased_L-12_H-768_A-12"
    checkpoint.save_checkpoint([model, heads], str(release / "bert_model.ckpt"),
                               update_state=False)
    assert sorted(os.listdir(release)) == ["bert_model.ckpt.data-00000-of-00001",
                                           "bert_model.ckpt.index"]
    clone, _ = _model()
    report = checkpoint.load_checkpoint(clone, str(release))
    assert len(report.loaded) == len(model.weights)
    assert sorted(report.unused_heads) == sorted(checkpoint.tf1_name(v) for v in heads.weights)
    for a, b in zip(model.weights, clone.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


def test_directory_without_checkpoints_names_the_flag(tmp_path):
    # An output_dir whose checkpoints were deleted: the state file names
    # files that are gone, and other files are there.
    model, _ = _model()
    out = tmp_path / "output_dir"
    checkpoint.save_checkpoint(model, str(out / "model.ckpt-3"), global_step=3)
    for suffix in (".index", ".data-00000-of-00001"):
        os.remove(str(out / "model.ckpt-3") + suffix)
    (out / "eval_results.txt").write_text("eval_accuracy = 0.5\n")
    with pytest.raises(UserError) as e:
        checkpoint.load_checkpoint(model, str(out), strict=False)
    assert str(e.value) == (
        "--init_checkpoint=%s: the directory holds no checkpoint (no `checkpoint` file, "
        "model.ckpt-N or bert_model.ckpt.index)" % out)


def _damage(prefix, how):
    data = prefix + ".data-00000-of-00001"
    if how == "garbage index":
        with open(prefix + ".index", "wb") as f:
            f.write(b"\x00not a checkpoint index" * 16)
    elif how == "truncated index":
        size = os.path.getsize(prefix + ".index")
        with open(prefix + ".index", "r+b") as f:
            f.truncate(size // 2)
    elif how == "truncated data":
        # Cut short at 90%: the first tensors still read (the word embeddings
        # among them), later ones fail.
        with open(data, "r+b") as f:
            f.truncate(int(os.path.getsize(data) * 0.9))
    elif how == "flipped byte":
        with open(data, "r+b") as f:
            f.seek(os.path.getsize(data) - 8)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
    elif how == "missing data":
        os.remove(data)


@pytest.mark.parametrize("how,expected", [
    ("garbage index", "bert_model.ckpt.index is not a readable checkpoint index"),
    ("truncated index", "bert_model.ckpt.index is not a readable checkpoint index"),
    ("truncated data", "the checkpoint's data file is truncated or corrupt"),
    ("flipped byte", "the checkpoint's data file is truncated or corrupt"),
    ("missing data", "the checkpoint's data file %s.data-* is missing"),
])
def test_unreadable_checkpoint_is_one_line_and_assigns_nothing(tmp_path, how, expected):
    saved, heads = _model()
    prefix = checkpoint.save_checkpoint([saved, heads], str(tmp_path / "bert_model.ckpt"),
                                        global_step=5)
    _damage(prefix, how)
    if how == "truncated data":
        # What a loader that assigns as it reads would already have assigned.
        reader = tf.train.load_checkpoint(prefix)
        reader.get_tensor("bert/embeddings/word_embeddings")
    model, model_heads = _model(initializer_range=0.5)
    before = [v.numpy().copy() for v in model.weights + model_heads.weights]
    for flag in ("init_checkpoint", "output_dir"):
        with pytest.raises(UserError) as e:
            checkpoint.load_checkpoint([model, model_heads], prefix, flag=flag)
        message = str(e.value)
        assert message.startswith("--%s=%s: " % (flag, prefix)), message
        assert (expected % prefix if "%s" in expected else expected) in message, message
        assert "\n" not in message
    for value, v in zip(before, model.weights + model_heads.weights):
        np.testing.assert_array_equal(v.numpy(), value, err_msg=v.path)
    # The other readers say the same.
    with pytest.raises(UserError, match="--init_checkpoint="):
        checkpoint.read_checkpoint(prefix)
    if "index" in how:
        with pytest.raises(UserError, match="not a readable checkpoint index"):
            checkpoint.list_checkpoint_variables(prefix)


def test_allow_missing_heads_takes_a_whole_head_or_none(tmp_path):
    from bert_tf.tasks.classifier.model import BertClassifier
    config = BertConfig.from_dict(TINY_CONFIG)
    backbone = BertModel(config)
    prefix = checkpoint.save_checkpoint(backbone, str(tmp_path / "release" / "bert_model.ckpt"))
    classifier = BertClassifier(config, 3)
    with pytest.raises(UserError, match="output_weights .* is missing from the checkpoint"):
        checkpoint.load_checkpoint(classifier, prefix)
    report = checkpoint.load_checkpoint(classifier, prefix, allow_missing_heads=True)
    assert sorted(report.uninitialized) == ["output_bias", "output_weights"]
    np.testing.assert_array_equal(classifier.bert.embedding_table.numpy(),
                                  backbone.embedding_table.numpy())
    # Half a head is a damaged checkpoint, not a fresh head.
    values = checkpoint.read_checkpoint(prefix)
    values["output_weights"] = classifier.classifier.output_weights
    half = checkpoint.write_checkpoint(str(tmp_path / "half" / "model.ckpt-1"), values)
    with pytest.raises(UserError, match="output_bias .* is missing from the checkpoint"):
        checkpoint.load_checkpoint(classifier, half, allow_missing_heads=True)
    # The backbone is never optional.
    del values["bert/pooler/dense/bias"]
    values["output_bias"] = classifier.classifier.output_bias
    no_pooler = checkpoint.write_checkpoint(str(tmp_path / "no_pooler" / "model.ckpt-1"), values)
    with pytest.raises(UserError, match="bert/pooler/dense/bias .* is missing"):
        checkpoint.load_checkpoint(classifier, no_pooler, allow_missing_heads=True)


def test_the_name_table_holds_every_head(tiny_config):
    """The one TF1 name table (`expected_tf1_variables`, `head_of`) against each task model."""
    from bert_tf.tasks.classifier.model import BertClassifier
    from bert_tf.tasks.pretraining.model import BertPretrainer
    from bert_tf.tasks.squad.model import BertSquad
    models = {"pretraining": BertPretrainer(tiny_config),
              "classifier": BertClassifier(tiny_config, 3),
              "squad": BertSquad(tiny_config)}
    assert tuple(models) == checkpoint.HEADS
    backbone = set(checkpoint.expected_tf1_variables(tiny_config))
    for head, model in models.items():
        got = {checkpoint.tf1_name(v): tuple(v.shape) for v in model.weights}
        assert got == dict(checkpoint.expected_tf1_variables(tiny_config, head=head,
                                                             num_labels=3)), head
        assert {checkpoint.head_of(n) for n in got if n not in backbone} == {head}
        assert {checkpoint.head_of(n) for n in backbone} == {None}
    with pytest.raises(ValueError, match="not one of"):
        checkpoint.expected_tf1_variables(tiny_config, head="ner")
