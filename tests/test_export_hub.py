# coding=utf-8
"""Tests for bert_tf.export.hub: TF Hub's BERT preprocessor + encoder pair.

One export (tiny config, corpus vocab, uncased) serves every test:
  * the preprocessor against FullTokenizer + `build_pair_features`, exactly
    (single sentences, pairs, truncation at every small length, the words
    dimension of `tokenize` against BasicTokenizer + WordpieceTokenizer);
  * the encoder against `BertModel` loaded from the same checkpoint;
  * preprocessor -> encoder in a fresh process where tensorflow_text, keras,
    tf_keras and bert_tf cannot be imported;
  * then, in that process (TF_USE_LEGACY_KERAS=1) with those packages
    importable again, `hub.KerasLayer` for both in a tf_keras functional model.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.export import hub as export_hub
from bert_tf import tokenization
from bert_tf.tokenization.pair_features import build_pair_features
from bert_tf.modeling.bert_model import BertModel
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_init_checkpoint
from tests.test_tokenization import EDGE_TEXTS
from tests.test_tokenization import _write_vocab
from tests.test_tokenization import build_corpus_vocab
from tests.test_tokenization import corpus_paragraphs
from tests import bare_tf

SEQ_LENGTH = 24
DO_LOWER_CASE = True
KEYS = {"input_word_ids": "input_ids", "input_mask": "input_mask",
        "input_type_ids": "segment_ids"}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _encodable(text):
    if not isinstance(text, str):
        return False  # bytes inputs are covered by tests/test_graph_tokenizer.py
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:  # lone surrogates have no UTF-8 form
        return False


def _texts():
    paragraphs = corpus_paragraphs()
    texts = paragraphs[:40] + [t for t in EDGE_TEXTS if _encodable(t)]
    return texts + [u"Short one.", u"x " * 40, u"Hello, world!"]


class Export(object):
    def __init__(self, root):
        vocab = build_corpus_vocab(corpus_paragraphs())
        self.vocab_file = _write_vocab(os.path.join(root, "vocab.txt"), vocab)
        # Dropout in the config: inference must not use it, training=True must.
        self.config = tiny_config(dropout=0.1, vocab_size=len(vocab))
        self.ckpt = write_init_checkpoint(self.config, os.path.join(root, "ckpt", "bert_model.ckpt"))
        self.out = os.path.join(root, "hub")
        self.preprocessor_dir, self.encoder_dir = export_hub.export_tfhub(
            self.config, self.vocab_file, DO_LOWER_CASE, self.ckpt, self.out, SEQ_LENGTH)
        self.full = tokenization.FullTokenizer(self.vocab_file, do_lower_case=DO_LOWER_CASE)
        self._model = None
        self._loaded = {}

    def load(self, which):
        if which not in self._loaded:
            self._loaded[which] = tf.saved_model.load(getattr(self, which + "_dir"))
        return self._loaded[which]

    @property
    def model(self):
        if self._model is None:
            self._model = BertModel(self.config)
            checkpoint.load_checkpoint(self._model, self.ckpt, strict=True)
        return self._model

    def features(self, texts_a, texts_b=None, seq_length=SEQ_LENGTH):
        """FullTokenizer + build_pair_features, under TF Hub's names."""
        rows = [build_pair_features(self.full.tokenize(a),
                                    None if texts_b is None else self.full.tokenize(b),
                                    seq_length, self.full)
                for a, b in zip(texts_a, texts_b or texts_a)]
        return {hub: np.array([getattr(r, ours) for r in rows], np.int32)
                for hub, ours in KEYS.items()}

    def reference(self, features):
        out = self.model(features["input_word_ids"], input_mask=features["input_mask"],
                         token_type_ids=features["input_type_ids"], training=False)
        return {k: np.asarray(v) if not isinstance(v, list) else [np.asarray(x) for x in v]
                for k, v in out.items()}


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    return Export(str(tmp_path_factory.mktemp("export_hub")))


def _assert_features(got, want, context=""):
    assert set(got) == set(KEYS)
    for key in KEYS:
        value = got[key]
        assert value.dtype == tf.int32, key
        np.testing.assert_array_equal(value.numpy(), want[key], err_msg="%s %s" % (key, context))


# ---------------------------------------------------------------------------
# Preprocessor
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_layout(export):
    assert sorted(os.listdir(export.out)) == ["encoder", "preprocessor"]
    for which in ("preprocessor", "encoder"):
        loaded = export.load(which)
        assert os.path.basename(loaded.vocab_file.asset_path.numpy().decode()) == "vocab.txt"
        with open(loaded.vocab_file.asset_path.numpy().decode(), encoding="utf-8") as f:
            assert f.read() == open(export.vocab_file, encoding="utf-8").read()
        assert loaded.do_lower_case.dtype == tf.bool
        assert bool(loaded.do_lower_case.numpy()) is DO_LOWER_CASE
    special = {k: int(v) for k, v in export.load("preprocessor").tokenize.get_special_tokens_dict().items()}
    vocab = export.full.vocab
    assert special == {"vocab_size": len(vocab), "start_of_sequence_id": vocab["[CLS]"],
                       "end_of_segment_id": vocab["[SEP]"], "padding_id": 0,
                       "mask_id": vocab["[MASK]"]}


def test_preprocessor_single_sentences(export):
    texts = _texts()
    got = export.load("preprocessor")(tf.constant(texts))
    assert got["input_word_ids"].shape.as_list() == [len(texts), SEQ_LENGTH]
    _assert_features(got, export.features(texts))


def test_tokenize_has_basic_tokenizer_words(export):
    texts = _texts()
    got = export.load("preprocessor").tokenize(tf.constant(texts))
    assert isinstance(got, tf.RaggedTensor) and got.dtype == tf.int32 and got.ragged_rank == 2
    full = export.full
    want = [[full.convert_tokens_to_ids(full.wordpiece_tokenizer.tokenize(word))
             for word in full.basic_tokenizer.tokenize(text)] for text in texts]
    assert got.to_list() == want
    assert got.merge_dims(1, 2).to_list() == [
        full.convert_tokens_to_ids(full.tokenize(t)) for t in texts]
    empty = export.load("preprocessor").tokenize(tf.constant([], tf.string))
    assert empty.shape.as_list()[0] == 0


def test_bert_pack_inputs_pairs(export):
    preprocessor = export.load("preprocessor")
    texts = _texts()
    texts_b = texts[::-1]
    tokens_a = preprocessor.tokenize(tf.constant(texts))
    tokens_b = preprocessor.tokenize(tf.constant(texts_b))
    # Default seq_length; rank-2 (words) and rank-1 segments.
    _assert_features(preprocessor.bert_pack_inputs([tokens_a, tokens_b]),
                     export.features(texts, texts_b), "pairs")
    _assert_features(preprocessor.bert_pack_inputs([tokens_a.merge_dims(1, 2), tokens_b]),
                     export.features(texts, texts_b), "pairs, rank 1")
    _assert_features(preprocessor.bert_pack_inputs([tokens_a]), export.features(texts), "single")
    for seq_length in (3, 7, 64):
        got = preprocessor.bert_pack_inputs([tokens_a, tokens_b],
                                            seq_length=tf.constant(seq_length))
        assert got["input_word_ids"].shape.as_list() == [len(texts), seq_length]
        _assert_features(got, export.features(texts, texts_b, seq_length), seq_length)


def test_bert_pack_inputs_truncates_as_truncate_seq_pair(export):
    pack = export.load("preprocessor").bert_pack_inputs
    cls_id, sep_id = export.full.vocab["[CLS]"], export.full.vocab["[SEP]"]

    class Ids(object):
        def convert_tokens_to_ids(self, tokens):
            return [{"[CLS]": cls_id, "[SEP]": sep_id}.get(t, t) for t in tokens]

    rows_a = [list(range(100, 100 + n)) for n in range(8) for _ in range(8)]
    rows_b = [list(range(200, 200 + n)) for _ in range(8) for n in range(8)]
    ragged_a = tf.ragged.constant(rows_a, tf.int32, row_splits_dtype=tf.int64)
    ragged_b = tf.ragged.constant(rows_b, tf.int32, row_splits_dtype=tf.int64)
    for seq_length in range(2, 13):
        for with_b in (False, True):
            if with_b and seq_length < 3:
                continue
            got = pack([ragged_a, ragged_b] if with_b else [ragged_a],
                       seq_length=tf.constant(seq_length))
            got = {k: v.numpy().tolist() for k, v in got.items()}
            for i, (a, b) in enumerate(zip(rows_a, rows_b)):
                want = build_pair_features(a, b if with_b else None, seq_length, Ids())
                for hub, ours in KEYS.items():
                    assert got[hub][i] == getattr(want, ours), (hub, seq_length, with_b, a, b)
    with pytest.raises(tf.errors.InvalidArgumentError, match="too short"):
        pack([ragged_a, ragged_b], seq_length=tf.constant(2))


# ---------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------


def test_encoder_matches_bert_model(export):
    encoder = export.load("encoder")
    texts = _texts()
    features = export.features(texts[:30], texts[30:60])
    want = export.reference(features)
    got = encoder({k: tf.constant(v) for k, v in features.items()})
    assert set(got) == {"pooled_output", "default", "sequence_output", "encoder_outputs"}
    np.testing.assert_allclose(got["pooled_output"].numpy(), want["pooled_output"], atol=1e-5)
    np.testing.assert_array_equal(got["default"].numpy(), got["pooled_output"].numpy())
    np.testing.assert_allclose(got["sequence_output"].numpy(), want["sequence_output"], atol=1e-5)
    assert len(got["encoder_outputs"]) == export.config.num_hidden_layers
    for ours, theirs in zip(got["encoder_outputs"], want["all_encoder_layers"]):
        assert ours.shape.as_list() == [30, SEQ_LENGTH, export.config.hidden_size]
        np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-5)
    np.testing.assert_array_equal(got["encoder_outputs"][-1].numpy(),
                                  got["sequence_output"].numpy())
    # training=False is the default; training=True runs dropout.
    explicit = encoder({k: tf.constant(v) for k, v in features.items()}, training=False)
    np.testing.assert_array_equal(explicit["pooled_output"].numpy(), got["pooled_output"].numpy())
    dropped = encoder({k: tf.constant(v) for k, v in features.items()}, training=True)
    assert np.abs(dropped["sequence_output"].numpy() - got["sequence_output"].numpy()).max() > 1e-3
    # What hub.KerasLayer(trainable=True) reads.
    assert len(encoder.trainable_variables) == len(export.model.trainable_variables)
    assert {tuple(v.shape) for v in encoder.trainable_variables} == {
        tuple(v.shape) for v in export.model.trainable_variables}
    assert all(v.trainable for v in encoder.trainable_variables)
    assert len(encoder.variables) == len(export.model.variables)
    assert list(encoder.regularization_losses) == []


def test_encoder_has_a_serving_default_signature(export):
    """What TF Serving and saved_model_cli see: flat named inputs, the layers stacked."""
    signature = export.load("encoder").signatures["serving_default"]
    assert sorted(signature.structured_input_signature[1]) == sorted(KEYS)
    texts = _texts()
    features = export.features(texts[:5], texts[5:10])
    want = export.reference(features)
    got = signature(**{k: tf.constant(v) for k, v in features.items()})
    assert set(got) == {"pooled_output", "default", "sequence_output", "encoder_outputs"}
    np.testing.assert_allclose(got["pooled_output"].numpy(), want["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(got["sequence_output"].numpy(), want["sequence_output"],
                               atol=1e-5)
    assert got["encoder_outputs"].shape == (5, export.config.num_hidden_layers, SEQ_LENGTH,
                                            export.config.hidden_size)
    np.testing.assert_allclose(got["encoder_outputs"].numpy(),
                               np.stack(want["all_encoder_layers"], axis=1), atol=1e-5)
    # The preprocessor's serving_default: strings in, the encoder's inputs out.
    packed = export.load("preprocessor").signatures["serving_default"](
        sentences=tf.constant(texts[:5]))
    assert sorted(packed) == sorted(KEYS)


def test_export_rejects_bad_arguments(export, tmp_path):
    from bert_tf.errors import UserError
    small = tiny_config(vocab_size=10)
    with pytest.raises(UserError, match="vocab_size"):
        export_hub.export_tfhub(small, export.vocab_file, True, export.ckpt, str(tmp_path), 8)
    with pytest.raises(UserError, match="max_position_embeddings"):
        export_hub.export_tfhub(export.config, export.vocab_file, True, export.ckpt,
                                str(tmp_path), export.config.max_position_embeddings + 1)
    assert os.listdir(str(tmp_path)) == []


# ---------------------------------------------------------------------------
# Fresh processes: bare TensorFlow, and tf_keras + tensorflow_hub
# ---------------------------------------------------------------------------

_BARE_CHAIN = bare_tf.PRELUDE + r'''
import json

import numpy as np

preprocessor_dir, encoder_dir, texts_file, out_file, hub_out_file = sys.argv[1:]
texts = json.load(open(texts_file, encoding="utf-8"))
preprocessor = tf.saved_model.load(preprocessor_dir)
encoder = tf.saved_model.load(encoder_dir)
single = encoder(preprocessor(tf.constant(texts)))
a = preprocessor.tokenize(tf.constant(texts))
b = preprocessor.tokenize(tf.constant(texts[::-1]))
pair = encoder(preprocessor.bert_pack_inputs([a, b], seq_length=tf.constant(16)))
modules = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
np.savez(out_file, single=single["pooled_output"].numpy(),
         single_seq=single["sequence_output"].numpy(), pair=pair["pooled_output"].numpy(),
         modules=np.array(modules + [""]))
'''

# Then, in the same process, what a tf_keras user does (the process has
# TF_USE_LEGACY_KERAS=1 from its start; the bare part imported none of keras, tf_keras
# and tensorflow_hub): the packages importable again, hub.KerasLayer for both.
_HUB_KERAS = r'''
if not hub_out_file:
    raise SystemExit(0)
import os
sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, Refuse)]
assert os.environ["TF_USE_LEGACY_KERAS"] == "1"
import tensorflow_hub as hub
import tf_keras

text_input = tf_keras.layers.Input(shape=(), dtype=tf.string)
preprocessor = hub.KerasLayer(preprocessor_dir)
encoder = hub.KerasLayer(encoder_dir, trainable=True)
outputs = encoder(preprocessor(text_input))
model = tf_keras.Model(text_input, outputs["pooled_output"])
single = model(tf.constant(texts)).numpy()

# The pair recipe of TF Hub's docs: tokenize and bert_pack_inputs as layers.
loaded = hub.load(preprocessor_dir)
tokenize = hub.KerasLayer(loaded.tokenize)
pack = hub.KerasLayer(loaded.bert_pack_inputs, arguments=dict(seq_length=16))
inputs = [tf_keras.layers.Input(shape=(), dtype=tf.string) for _ in range(2)]
pair_model = tf_keras.Model(inputs, encoder(pack([tokenize(s) for s in inputs]))["pooled_output"])
pair = pair_model([tf.constant(texts), tf.constant(texts[::-1])]).numpy()

np.savez(hub_out_file, single=single, pair=pair,
         has_training=encoder._has_training_argument,
         trainable=len(encoder.trainable_weights), weights=len(encoder.weights),
         model_trainable=len(model.trainable_weights),
         keras=tf_keras.__version__, is_tf_keras=type(model).__module__.startswith("tf_keras"))
'''


def _hub_and_tf_keras_installed():
    import importlib.util
    return all(importlib.util.find_spec(name) for name in ("tensorflow_hub", "tf_keras"))


@pytest.fixture(scope="module")
def fresh_process(export, tmp_path_factory):
    """{"bare": the bare chain's results, "hub": hub.KerasLayer's (None without
    tensorflow_hub and tf_keras)}: one process, TF_USE_LEGACY_KERAS=1."""
    tmp = tmp_path_factory.mktemp("hub_process")
    texts_file = tmp / "texts.json"
    texts_file.write_text(json.dumps(_texts()[:30]), encoding="utf-8")
    out, hub_out = tmp / "out.npz", tmp / "hub_out.npz"
    with_hub = _hub_and_tf_keras_installed()
    bare_tf.run_script(_BARE_CHAIN + _HUB_KERAS, [
        export.preprocessor_dir, export.encoder_dir, texts_file, out,
        hub_out if with_hub else ""], tmp, {"TF_USE_LEGACY_KERAS": "1"})
    return {"bare": np.load(str(out)), "hub": np.load(str(hub_out)) if with_hub else None}


def _expected(export, texts):
    single = export.reference(export.features(texts))
    pair = export.reference(export.features(texts, texts[::-1], 16))
    return single, pair


@pytest.mark.slow
def test_chain_in_bare_tensorflow_process(export, fresh_process):
    texts = _texts()[:30]
    got = fresh_process["bare"]
    assert got["modules"].tolist() == [""]
    single, pair = _expected(export, texts)
    np.testing.assert_allclose(got["single"], single["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(got["single_seq"], single["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(got["pair"], pair["pooled_output"], atol=1e-5)


@pytest.mark.slow
def test_hub_keras_layer_with_tf_keras(export, fresh_process):
    pytest.importorskip("tensorflow_hub")
    pytest.importorskip("tf_keras")
    texts = _texts()[:30]
    got = fresh_process["hub"]
    assert bool(got["is_tf_keras"])
    assert bool(got["has_training"])  # hub.KerasLayer passes training=... to the encoder
    n_trainable = len(export.model.trainable_variables)
    assert int(got["trainable"]) == n_trainable
    assert int(got["model_trainable"]) == n_trainable
    assert int(got["weights"]) == len(export.model.variables)
    single, pair = _expected(export, texts)
    np.testing.assert_allclose(got["single"], single["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(got["pair"], pair["pooled_output"], atol=1e-5)
