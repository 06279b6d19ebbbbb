"""Tests for `--quantize=int8` (bert_tf.export.quantize): the accuracy gate, files, refusals.

Data: a synthetic single-sentence task (SST-2's labels "0" / "1") that a tiny
BERT (2 layers, hidden 32) learns with Keras `fit` in a few seconds: label 1
iff word A occurs more often than word B among filler words. Its vocab is
the words themselves ("w5" ... "w98"), so FullTokenizer reads the same text
back. The fine-tuned model is saved as a Google checkpoint and exported
three times: float32 (the SavedModel), `quantize="int8"` (model.tflite) and
`format="onnx", quantize="int8"` (model.onnx in int8, ONNX Runtime's own
dynamic quantization; when tf2onnx and onnxruntime are installed).

* The gate (MLPerf's), for both int8 exports: the int8 model's dev accuracy
  is at least 99% of float32's, its probabilities within
  INT8_PROBABILITY_ATOL of float32's (the max abs difference is printed), on
  features (the LiteRT one also on raw text: `Int8Model` tokenizes as the
  SavedModel's serving signatures do).
* The version directory holds model.tflite, vocab.txt and
  export_config.json (task, max_seq_length, do_lower_case, labels); the
  encoder's and the embedder's int8 exports answer as their float32
  serve_features within INT8_HIDDEN_ATOL; a regression head's score and a
  multi-label head's sigmoid, multi-hot predictions and labels come through.
  The ONNX int8 export's directory holds the float32 ONNX export's files,
  its metadata says int8, and every dense layer's MatMul is int8.
* The cut (`attended_length`, `trim_padding`, `Int8Model`'s) keeps every
  attended position of a batch whose longest row ends at any length 1 to
  seq_length (one past a multiple of 16 included): a tiny int8 encoder
  answers such a batch as model.tflite does on the whole padded rows.
* Bad combinations (--format=tfhub, --mixed_precision, --doc_stride, a task
  other than a classifier, encoder or embeddings; with --format=onnx, other
  than those and multiple_choice) are one-line errors naming the flags,
  before anything is written (a missing onnxruntime, and the ONNX int8
  conversion of other tasks: tests/test_export_onnx.py).

Tiny models show no speed-up: the speed is bench/int8_bench.py's.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.export import kinds
from bert_tf.export import quantize
from bert_tf.export import saved_model as export
from bert_tf.modeling import checkpoint
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tokenization.graph_tokenizer import GraphTokenizer
from bert_tf.training.optimization import create_optimizer
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.tolerances import INT8_HIDDEN_ATOL
from tests.tolerances import INT8_PROBABILITY_ATOL
from tests.tools import toolrun

SEQ_LENGTH = 24
WORD_A, WORD_B = 10, 11  # label 1 iff WORD_A occurs more often than WORD_B
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def synthetic_texts(num_examples, seed):
    """(texts, labels): 8-12 filler words with 1-4 A's and a different count of B's."""
    rng = np.random.RandomState(seed)
    texts, labels = [], []
    for _ in range(num_examples):
        count_a, count_b = rng.choice(np.arange(1, 5), 2, replace=False)
        words = list(rng.randint(20, 99, rng.randint(8, 13)))
        words += [WORD_A] * count_a + [WORD_B] * count_b
        rng.shuffle(words)
        texts.append(" ".join("W%d" % w for w in words))  # upper case: do_lower_case matters
        labels.append(int(count_a > count_b))
    return texts, np.array(labels, np.int32)


def features_of(texts):
    """FullTokenizer's features as run_classifier builds them (ids = the word numbers)."""
    input_ids = np.zeros((len(texts), SEQ_LENGTH), np.int32)
    for i, text in enumerate(texts):
        ids = [2] + [int(w[1:]) for w in text.split()] + [3]
        input_ids[i, :len(ids)] = ids
    return {"input_ids": input_ids, "input_mask": (input_ids > 0).astype(np.int32),
            "segment_ids": np.zeros_like(input_ids)}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A fine-tuned tiny classifier as a checkpoint, its vocab, config and dev set."""
    tmp = str(tmp_path_factory.mktemp("int8"))
    vocab_file = os.path.join(tmp, "vocab.txt")
    with open(vocab_file, "w") as f:
        f.write("\n".join(SPECIAL + ["w%d" % i for i in range(len(SPECIAL), 99)]) + "\n")
    config = tiny_config()  # BERT's initializer_range (0.02): no knife-edge examples
    tf.keras.utils.set_random_seed(3)
    model = BertClassifier(config, 2)
    train_texts, train_labels = synthetic_texts(512, seed=0)
    steps = 10 * 512 // 32
    model.compile(optimizer=create_optimizer(1e-3, steps, steps // 10))
    model.fit(features_of(train_texts), train_labels, batch_size=32, epochs=10, verbose=0)
    prefix = checkpoint.save_checkpoint(model, os.path.join(tmp, "sst2", "model.ckpt-160"),
                                        global_step=160)
    dev_texts, dev_labels = synthetic_texts(256, seed=1)
    return {"tmp": tmp, "vocab": vocab_file, "config": config, "prefix": prefix,
            "config_file": write_config(config, os.path.join(tmp, "bert_config.json")),
            "dev_texts": dev_texts, "dev_labels": dev_labels}


@pytest.fixture(scope="module")
def exports(trained):
    def run(name, **kwargs):
        return export.export_saved_model(
            "SST-2", trained["config"], trained["vocab"], True, trained["prefix"],
            os.path.join(trained["tmp"], "export", name), SEQ_LENGTH, version=1, **kwargs)
    return {"fp32": run("fp32"), "int8": run("int8", quantize="int8")}


@pytest.fixture(scope="module")
def onnx_int8(trained):
    """The version directory of the classifier's `--format=onnx --quantize=int8` export."""
    pytest.importorskip("tf2onnx", reason="tf2onnx (pip install bert_tf[onnx]) converts it")
    pytest.importorskip("onnxruntime", reason="onnxruntime (pip install bert_tf[onnx]) "
                        "quantizes and runs it")
    return export.export_saved_model(
        "SST-2", trained["config"], trained["vocab"], True, trained["prefix"],
        os.path.join(trained["tmp"], "export", "onnx_int8"), SEQ_LENGTH, version=1,
        format="onnx", quantize="int8")


def _accuracy(probabilities, labels):
    return float(np.mean(np.argmax(probabilities, axis=-1) == labels))


def _int8_probabilities(request, exports, which, features):
    """The probabilities of the LiteRT (Int8Model) or the ONNX (ONNX Runtime) int8 export."""
    if which == "litert":
        return quantize.Int8Model(exports["int8"]).predict_features(**features)["probabilities"]
    path = request.getfixturevalue("onnx_int8")
    import onnxruntime
    session = onnxruntime.InferenceSession(os.path.join(path, "model.onnx"),
                                           providers=["CPUExecutionProvider"])
    probabilities, = session.run(["probabilities"], features)
    return probabilities


@pytest.mark.slow
@pytest.mark.parametrize("which", ["litert", "onnx"])
def test_int8_keeps_99_percent_of_float32_accuracy(trained, exports, which, request):
    features = features_of(trained["dev_texts"])
    fp32 = tf.saved_model.load(exports["fp32"]).signatures["serve_features"](
        **{k: tf.constant(v) for k, v in features.items()})["probabilities"].numpy()
    int8 = _int8_probabilities(request, exports, which, features)
    labels = trained["dev_labels"]
    fp32_accuracy, int8_accuracy = _accuracy(fp32, labels), _accuracy(int8, labels)
    diff = float(np.abs(int8 - fp32).max())
    print("%s: dev accuracy: float32 %.4f, int8 %.4f (%.2f%% of float32); probabilities max abs "
          "diff %.4f; predictions that differ: %d / %d" % (
              which, fp32_accuracy, int8_accuracy, 100 * int8_accuracy / fp32_accuracy, diff,
              int((fp32.argmax(-1) != int8.argmax(-1)).sum()), len(labels)))
    assert fp32_accuracy >= 0.8, fp32_accuracy  # it learned the task (chance: about 0.5)
    assert int8_accuracy >= 0.99 * fp32_accuracy
    assert diff <= INT8_PROBABILITY_ATOL


@pytest.mark.slow
def test_int8_model_on_text_answers_as_the_float32_text_signature(trained, exports):
    texts = trained["dev_texts"][:32] + ["", "w10 " * 40]  # empty, and truncated
    fp32 = tf.saved_model.load(exports["fp32"]).signatures["serve_text_a"](
        text_a=tf.constant(texts))
    model = quantize.Int8Model(exports["int8"], num_threads=1)
    int8 = model(texts)
    np.testing.assert_allclose(int8["probabilities"], fp32["probabilities"].numpy(),
                               atol=INT8_PROBABILITY_ATOL)
    agree = np.mean(np.array(int8["label"]) == fp32["label"].numpy().astype(str))
    assert agree >= 0.9, agree
    one = model(texts[:1])  # another batch size
    np.testing.assert_allclose(one["probabilities"], int8["probabilities"][:1], atol=1e-5)


@pytest.mark.slow
def test_version_directory_files_and_config(trained, exports):
    path = exports["int8"]
    assert sorted(os.listdir(os.path.dirname(path))) == ["1"]  # nothing half-written left
    assert sorted(os.listdir(path)) == ["export_config.json", "model.tflite", "vocab.txt"]
    with open(os.path.join(path, "vocab.txt")) as f, open(trained["vocab"]) as g:
        assert f.read() == g.read()
    with open(os.path.join(path, "export_config.json")) as f:
        config = json.load(f)
    assert config == {
        "format": "tflite", "quantize": "int8", "task_name": "SST-2", "task": "classifier",
        "max_seq_length": SEQ_LENGTH, "do_lower_case": True, "vocab_file": "vocab.txt",
        "model_file": "model.tflite", "signature": "serve_features",
        "inputs": ["input_ids", "input_mask", "segment_ids"], "outputs": ["probabilities"],
        "labels": ["0", "1"], "is_regression": False, "multi_label": False, "threshold": 0.5}


@pytest.mark.slow
def test_onnx_int8_version_directory(trained, onnx_int8):
    """`--format=onnx --quantize=int8`: the float32 ONNX export's files, model.onnx in int8."""
    import onnx
    assert sorted(os.listdir(os.path.dirname(onnx_int8))) == ["1"]  # nothing half-written left
    assert sorted(os.listdir(onnx_int8)) == ["bert_tf_onnx.json", "labels.txt", "model.onnx",
                                             "vocab.txt"]
    with open(os.path.join(onnx_int8, "bert_tf_onnx.json")) as f:
        metadata = json.load(f)
    assert (metadata["task"], metadata["labels"], metadata["quantize"]) == (
        "sst-2", ["0", "1"], "int8")
    assert metadata["quantization"]["method"] == "onnxruntime.quantization.quantize_dynamic"
    model = onnx.load(os.path.join(onnx_int8, "model.onnx"))
    ops = [node.op_type for node in model.graph.node]
    # Every dense layer of the 2 layers (query/key/value fused, attention output, the
    # feed-forward's two), the pooler and the classifier head; the token-type table's
    # MatMul (a lookup by one-hot rows) stays float32.
    assert ops.count("MatMulInteger") == metadata["quantization"]["int8_matmuls"] == 10


@pytest.mark.slow
def test_encoder_and_embeddings(trained):
    features = features_of(trained["dev_texts"][:8])
    for task, outputs in (("encoder", ("encoder_outputs", "pooled_output", "sequence_output")),
                          ("embeddings", ("embeddings",))):
        paths = [export.export_saved_model(
            task, trained["config"], trained["vocab"], True, trained["prefix"],
            os.path.join(trained["tmp"], "export", task + name), SEQ_LENGTH, version=1,
            **kwargs) for name, kwargs in (("_fp32", {}), ("_int8", {"quantize": "int8"}))]
        fp32 = tf.saved_model.load(paths[0]).signatures["serve_features"](
            **{k: tf.constant(v) for k, v in features.items()})
        model = quantize.Int8Model(paths[1])
        assert model.config["task"] == task and model.config["outputs"] == list(outputs)
        int8 = model.predict_features(**features)
        for name in outputs:
            assert int8[name].shape == tuple(fp32[name].shape), name
            print("%s %s: max abs diff %.4f" % (task, name,
                                                np.abs(int8[name] - fp32[name].numpy()).max()))
            np.testing.assert_allclose(int8[name], fp32[name].numpy(), atol=INT8_HIDDEN_ATOL,
                                       err_msg=name)
        if task == "encoder":
            _check_rows_of_any_length(model, paths[1], trained)
    assert model.config["pooling"] == "mean" and model.config["normalize"] is False


def _check_rows_of_any_length(model, path, trained):
    """The encoder's int8 export on short rows: cut, unpadded, too long, and without bert_tf."""
    texts = [t for t in trained["dev_texts"] if len(t.split()) + 2 <= 16][:6]
    assert len(texts) >= 3
    padded = features_of(texts)  # [6, 24]: the model runs on their first 16 positions
    assert quantize.attended_length(padded["input_mask"]) == 16
    whole = model.predict_features(**padded)
    short = model.predict_features(**{k: v[:, :16] for k, v in padded.items()})
    assert whole["sequence_output"].shape[:2] == (len(texts), SEQ_LENGTH)  # the rows' length
    assert whole["encoder_outputs"].shape[:3] == (len(texts), 2, SEQ_LENGTH)
    assert short["sequence_output"].shape[:2] == (len(texts), 16)
    kept = padded["input_mask"][:, :, None].astype(bool)
    assert not np.any(np.where(kept, 0, whole["sequence_output"]))  # 0 at padding positions
    # model.tflite alone takes rows of any length: on the whole padded rows it
    # answers as on the cut ones, up to float32 rounding (padding is masked out).
    runner = quantize._interpreter(os.path.join(path, "model.tflite"), 1).get_signature_runner(
        "serve_features")
    full = runner(**padded)
    assert full["sequence_output"].shape[:2] == (len(texts), SEQ_LENGTH)
    for name in ("pooled_output", "sequence_output"):
        np.testing.assert_allclose(whole[name], np.where(kept, full[name], 0) if
                                   name == "sequence_output" else full[name],
                                   atol=1e-5, err_msg=name)
        np.testing.assert_allclose(short[name], whole[name][:, :16] if
                                   name == "sequence_output" else whole[name], atol=0,
                                   err_msg=name)
    with pytest.raises(UserError, match=r"^Int8Model: input_ids, input_mask and segment_ids "
                                        r"must be \[batch, length\] with length 1 to 24, got "
                                        r"\[\[6, 25\], \[6, 25\], \[6, 25\]\]$"):
        model.predict_features(**{k: np.pad(v, [(0, 0), (0, 1)]) for k, v in padded.items()})


def test_attended_length_is_the_saved_models_cut():
    """Int8Model cuts a batch where the SavedModel's signatures do (serving_module.trim_padding)."""
    from bert_tf.export import serving_module
    rng = np.random.RandomState(0)
    masks = [np.zeros((2, 24), np.int32), np.ones((1, 7), np.int32), np.ones((3, 128), np.int32)]
    for _ in range(20):
        mask = np.zeros((rng.randint(1, 4), rng.choice([16, 24, 64, 128])), np.int32)
        for row in mask:
            row[:rng.randint(0, mask.shape[1] + 1)] = 1
        masks.append(mask)
    for mask in masks:
        cut = serving_module.trim_padding({"input_mask": tf.constant(mask)})["input_mask"]
        assert quantize.attended_length(mask) == cut.shape[-1], mask.sum(-1)


def _masks_ending_at_every_length(seq_length, rng):
    """(length, mask [3, seq_length]) for each length 1..seq_length: the longest row's.

    The other rows are no longer (each attends at least its first position,
    as [CLS]), and the longest has a hole before its last token, so only the
    last attended position sets the cut.
    """
    for length in range(1, seq_length + 1):
        mask = np.zeros((3, seq_length), np.int32)
        mask[0, :length] = 1
        if length > 2:
            mask[0, rng.randint(1, length - 1)] = 0
        mask[1, :rng.randint(1, length + 1)] = 1
        mask[2, :max(1, length // 2)] = 1
        yield length, mask


def test_the_cut_keeps_every_attended_position_of_rows_ending_anywhere():
    """The cut at every last position 1..seq_length, one past a multiple of 16 included."""
    from bert_tf.export import serving_module
    from bert_tf.modeling import padding
    seq_length = 72  # 16k + 1 for k = 1..4; a length past the last multiple of 16
    rng = np.random.RandomState(0)
    for length, mask in _masks_ending_at_every_length(seq_length, rng):
        want = min(seq_length, -(-length // 16) * 16)
        assert padding.attended_length(tf.constant(mask)).numpy() == want, length
        assert padding.numpy_attended_length(mask) == want, length
        assert quantize.attended_length(mask) == want, length
        cut = serving_module.trim_padding({"input_mask": tf.constant(mask)})["input_mask"]
        assert cut.shape == (3, want) and cut.numpy().sum() == mask.sum(), length


def test_int8_model_answers_rows_ending_anywhere_as_the_whole_rows(tmp_path):
    """Int8Model's cut batches give the outputs of model.tflite on the whole padded rows."""
    from bert_tf.modeling.bert_model import BertModel
    seq_length = 40  # 17 and 33: one past a multiple of 16; 33..40 cut at 40
    vocab_file = str(tmp_path / "vocab.txt")
    with open(vocab_file, "w") as f:
        f.write("\n".join(SPECIAL + ["w%d" % i for i in range(len(SPECIAL), 99)]) + "\n")
    tf.keras.utils.set_random_seed(0)
    bert = BertModel(tiny_config(num_hidden_layers=1, max_position_embeddings=seq_length))
    export_dir = str(tmp_path / "int8")
    quantize.export_int8("encoder", "encoder", bert, vocab_file, True, seq_length, export_dir)
    model = quantize.Int8Model(export_dir, num_threads=1)
    assert model.any_length
    whole_rows = quantize._interpreter(os.path.join(export_dir, "model.tflite"),
                                       1).get_signature_runner("serve_features")
    rng = np.random.RandomState(1)
    for length, mask in _masks_ending_at_every_length(seq_length, rng):
        features = {"input_ids": np.where(mask > 0, rng.randint(5, 99, mask.shape), 0),
                    "input_mask": mask, "segment_ids": np.zeros_like(mask)}
        got = model.predict_features(**features)
        want = whole_rows(**{k: v.astype(np.int32) for k, v in features.items()})
        kept = mask[:, :, None] > 0
        assert np.all(np.abs(got["sequence_output"][0, length - 1]) > 0), length
        np.testing.assert_allclose(got["sequence_output"],
                                   np.where(kept, want["sequence_output"], 0), atol=1e-5,
                                   err_msg="rows ending at %d" % length)
        np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5,
                                   err_msg="rows ending at %d" % length)


def _flags(trained, export_dir, **overrides):
    values = {"task_name": "SST-2", "bert_config_file": trained["config_file"],
              "vocab_file": trained["vocab"], "do_lower_case": "true",
              "init_checkpoint": trained["prefix"], "max_seq_length": SEQ_LENGTH,
              "export_dir": export_dir, "quantize": "int8"}
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items()]


@pytest.mark.slow
def test_bad_combinations_are_one_line_errors_and_write_nothing(trained):
    cases = [
        ("tfhub", {"task_name": "encoder", "format": "tfhub"},
         "--quantize=int8 and --format=tfhub exclude each other (the int8 export is a "
         "LiteRT model, or with --format=onnx an ONNX one)"),
        ("bf16", {"mixed_precision": "bf16"},
         "--quantize=int8 and --mixed_precision=bf16 exclude each other (the int8 model "
         "computes in int8 and float32)"),
        ("squad", {"task_name": "squad"},
         "--quantize=int8 exports a classifier, encoder or embeddings: not --task_name=squad"),
        ("fill_mask", {"task_name": "fill_mask"},
         "--quantize=int8 exports a classifier, encoder or embeddings: not "
         "--task_name=fill_mask"),
        ("doc_stride", {"doc_stride": 8}, "--quantize=int8 serves features (ids in): "
         "--doc_stride is for the SavedModel's text signatures"),
        ("ner", {"task_name": "ner"},
         "--quantize=int8 exports a classifier, encoder or embeddings: not --task_name=ner"),
        ("multiple_choice", {"task_name": "multiple_choice"},
         "--quantize=int8 exports a classifier, encoder or embeddings: not "
         "--task_name=multiple_choice"),
        # ONNX Runtime's int8 (--format=onnx): the ONNX export's tasks.
        ("onnx_squad", {"task_name": "squad", "format": "onnx"},
         "--format=onnx --quantize=int8 exports a classifier, encoder, embeddings or "
         "multiple_choice: not --task_name=squad"),
        ("onnx_bf16", {"format": "onnx", "mixed_precision": "bf16"},
         "--quantize=int8 and --mixed_precision=bf16 exclude each other (the int8 model "
         "computes in int8 and float32)"),
        ("onnx_doc_stride", {"format": "onnx", "doc_stride": 8},
         "--quantize=int8 serves features (ids in): --doc_stride is for the SavedModel's "
         "text signatures"),
    ]
    export_dirs = {name: os.path.join(trained["tmp"], "bad", name) for name, _, _ in cases}
    # The tool's flags parsed as the command line parses them (its exit status 2 and one
    # `error:` line for a UserError: tests/tools/test_export_saved_model_tool.py).
    results = toolrun.user_errors_here("export_saved_model", [
        (name, _flags(trained, export_dirs[name], **overrides)) for name, overrides, _ in cases])
    for name, _, message in cases:
        assert results[name] == message, name
        assert not os.path.exists(export_dirs[name]), name
    with pytest.raises(UserError, match=r"^--quantize must be one of int8 \(or empty\), got "
                                        r"'int4'$"):
        quantize.check_quantize("int4")


@pytest.mark.slow
def test_regression_and_multi_label_heads(trained, tmp_path):
    """STS-B's score and a multi-label classifier's sigmoid, multi-hot and labels; each
    head's outputs under one set of names (`classifier.head_outputs`) in Keras's predict,
    the SavedModel's signatures and the int8 export (the SavedModel adds `label`)."""
    features = features_of(trained["dev_texts"][:8])
    for name, kwargs in (("single_label", {"num_labels": 2}),
                         ("regression", {"num_labels": 1, "is_regression": True}),
                         ("multi_label", {"num_labels": 3, "multi_label": True})):
        tf.keras.utils.set_random_seed(0)
        model = BertClassifier(trained["config"], **kwargs)
        logits = model(features, training=False)["logits"].numpy()
        keras_names = set(model.predict(features, verbose=0)) - {"logits"}
        labels = {"multi_label": ["a", "b", "c"], "single_label": ["0", "1"]}.get(name)
        is_regression, multi_label = (kwargs.get("is_regression", False),
                                      kwargs.get("multi_label", False))
        quantize.export_int8("classifier", name, model, trained["vocab"], True, SEQ_LENGTH,
                             str(tmp_path / name), labels, is_regression, multi_label,
                             threshold=0.5)
        int8 = quantize.Int8Model(str(tmp_path / name))
        outputs = int8.predict_features(**features)
        served = kinds.ClassifierServingModule(
            model, GraphTokenizer(trained["vocab"], True), labels, is_regression, SEQ_LENGTH,
            trained["vocab"], multi_label=multi_label).serve_features(
                **{k: tf.constant(v) for k, v in features.items()})
        assert (sorted(outputs) == int8.config["outputs"] == sorted(keras_names)
                == sorted(set(served) - {"label"})), (name, sorted(served))
        if name == "single_label":
            continue
        if name == "regression":
            assert sorted(outputs) == ["score"]
            np.testing.assert_allclose(outputs["score"], logits[:, 0],
                                       atol=INT8_PROBABILITY_ATOL)
            continue
        probabilities = 1 / (1 + np.exp(-logits))
        np.testing.assert_allclose(outputs["probabilities"], probabilities,
                                   atol=INT8_PROBABILITY_ATOL)
        np.testing.assert_array_equal(outputs["predictions"],
                                      (outputs["probabilities"] >= 0.5).astype(np.int32))
        texts = trained["dev_texts"][:8]
        answered = int8(texts)
        assert answered["label"] == [
            ",".join(l for l, on in zip(labels, row) if on) for row in answered["predictions"]]
