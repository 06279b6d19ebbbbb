# coding=utf-8
"""Tests for bert_tf.export.onnx: `--format=onnx`, an export's features signature as an ONNX model.

Data: tests/test_export.py's `write_task` (an MRPC-layout task of real English,
its WordPiece vocab, a tiny BERT as a pre-training checkpoint and fine-tuned
with a classifier head), plus a multiple-choice head on the same encoder; the
SavedModels compared with are `tests.export_cache`'s (written once per test
run, read by the hostile-request and SavedModel tests too).

* Parity: ONNX Runtime's outputs (`onnxruntime.InferenceSession`) on the
  FullTokenizer features of real text (`test_export._full_features`: what
  run_classifier builds) equal those of the SavedModel's `serve_features`
  (`tf.saved_model.load`) within float32 noise (ONNX_ATOL), for batches of 1
  and 3 rows and more (the batch axis is dynamic): the classifier (fast:
  the library's conversion of a SavedModel export), and through
  `export_saved_model(format="onnx")` / the tool the encoder, the embedder
  and multiple_choice; a SavedModel whose signature leaves the sequence
  axis free gives an ONNX model that takes any length.
* The version directory: model.onnx, vocab.txt, labels.txt (a classifier's),
  bert_tf_onnx.json, and nothing half-written beside it.
* int8 (`quantize="int8"`, ONNX Runtime's own `quantize_dynamic`): the same
  files and metadata, plus `quantize` and `quantization`; every MatMul with a
  constant weight int8 (`MatMulInteger`), nothing else quantized; the answers
  within the int8 tolerances (tests/tolerances.py) of the SavedModel's: the
  classifier (fast), the encoder and multiple_choice. (The accuracy gate,
  on a fine-tuned classifier: tests/test_export_int8.py.)
* Refusals, one line each, before anything is written: a task without a
  features signature (squad, fill_mask, ner), --doc_stride,
  --mixed_precision, tf2onnx missing, and with --quantize=int8 onnxruntime
  missing (`pip install bert_tf[onnx]`; the command line exits 2). Importing
  the export or the tool imports none of onnx, tf2onnx, onnxruntime.
"""

import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.classifier import data_processors as classifier_processors
from bert_tf.errors import UserError
from bert_tf.export import onnx as onnx_export
from bert_tf.export import saved_model as export
from bert_tf.export import kinds
from tests.test_export import EXTRA_TEXTS
from tests.test_export import SEQ_LENGTH
from tests.test_export import _full_features
from tests import export_cache
from tests.tolerances import INT8_HIDDEN_ATOL
from tests.tolerances import INT8_PROBABILITY_ATOL
from tests.tolerances import ONNX_ATOL
from tests.tools import toolrun

ort = pytest.importorskip("onnxruntime", reason="onnxruntime (requirements-dev.txt) runs the "
                          "ONNX models")
pytest.importorskip("tf2onnx", reason="tf2onnx (pip install bert_tf[onnx]) converts them")

NUM_CHOICES = 3
ONNX_FILES = ["bert_tf_onnx.json", "model.onnx", "vocab.txt"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    files = export_cache.task_files(tmp_path_factory, "export_onnx")
    files["saved_model"] = lambda kind: export_cache.saved_model(tmp_path_factory, kind)
    files["head"] = lambda kind: export_cache.head_checkpoint(tmp_path_factory, kind)
    examples = classifier_processors.get_processor("mrpc").get_test_examples(files["data_dir"])
    # Pairs, and single segments: an empty text, one all truncated, non-ASCII.
    files["pairs"] = [(e.text_a, e.text_b) for e in examples[:3]] + [
        (a, b or None) for a, b in EXTRA_TEXTS]
    return files


def _features(files, pairs=None):
    return _full_features(files, files["pairs"] if pairs is None else pairs)


def _batches(features):
    """Batches of 1, 3 and every row."""
    return [{k: v[:1] for k, v in features.items()}, {k: v[1:4] for k, v in features.items()},
            features]


def _serve_features(saved_model_dir):
    return tf.saved_model.load(saved_model_dir).signatures["serve_features"]


def _parity(serve, onnx_dir, batches, atol=ONNX_ATOL):
    """{output: max abs difference} of ONNX Runtime against `serve` (a SavedModel's
    serve_features) over `batches`, each within `atol`."""
    numeric = sorted(k for k, spec in serve.structured_outputs.items() if spec.dtype != tf.string)
    session = ort.InferenceSession(os.path.join(onnx_dir, onnx_export.MODEL_FILE),
                                   providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == list(onnx_export.FEATURES)
    assert sorted(o.name for o in session.get_outputs()) == numeric
    diffs = dict.fromkeys(numeric, 0.0)
    for batch in batches:
        want = serve(**{k: tf.constant(v) for k, v in batch.items()})
        got = dict(zip([o.name for o in session.get_outputs()], session.run(None, batch)))
        for name in numeric:
            assert got[name].shape == tuple(want[name].shape), name
            assert got[name].dtype == want[name].dtype.as_numpy_dtype, name
            if got[name].dtype.kind == "f":
                np.testing.assert_allclose(got[name], want[name].numpy(), rtol=0, atol=atol,
                                           err_msg=name)
            else:  # multiple_choice's predictions (an argmax): equal, but int8 may flip a tie
                agree = np.mean(got[name] == want[name].numpy())
                assert agree >= (1.0 if atol == ONNX_ATOL else 0.8), (name, agree)
            diffs[name] = max(diffs[name], float(np.abs(got[name] - want[name].numpy()).max()))
    print("ONNX Runtime vs serve_features (%s): %s" % (onnx_dir, ", ".join(
        "%s %.2g" % item for item in sorted(diffs.items()))))
    return diffs


def _export(files, task, init_checkpoint, name, **kwargs):
    return export.export_saved_model(task, files["config"], files["vocab"], True, init_checkpoint,
                                     os.path.join(files["tmp"], "models", name), SEQ_LENGTH,
                                     version=1, **kwargs)


def _shapes(path):
    """{name: [dim_value or dim_param]} of an ONNX file's inputs and outputs."""
    import onnx
    model = onnx.load(path)
    return {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(model.graph.input) + list(model.graph.output)}


# ---------------------------------------------------------------------------
# The classifier (fast): a SavedModel export, converted by the library
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def classifier(files):
    saved = files["saved_model"]("classifier")  # MRPC, files["finetuned"]
    onnx_dir = os.path.join(files["tmp"], "models", "mrpc_onnx", "1")
    metadata = onnx_export.convert_saved_model(saved, onnx_dir, "MRPC")
    return {"serve": _serve_features(saved), "onnx": onnx_dir, "metadata": metadata}


def test_classifier_probabilities_equal_the_saved_model(files, classifier):
    features = _features(files)
    diffs = _parity(classifier["serve"], classifier["onnx"], _batches(features))
    assert sorted(diffs) == ["probabilities"]  # the `label` string stays out
    # The rows are told apart far beyond the tolerance.
    session = ort.InferenceSession(os.path.join(classifier["onnx"], onnx_export.MODEL_FILE))
    probabilities, = session.run(["probabilities"], features)
    assert np.diff(probabilities[:, 0]).std() > 100 * ONNX_ATOL


def test_classifier_files_and_metadata(files, classifier):
    path = classifier["onnx"]
    assert sorted(os.listdir(path)) == sorted(ONNX_FILES + ["labels.txt"])
    with open(os.path.join(path, "vocab.txt"), "rb") as f, open(files["vocab"], "rb") as g:
        assert f.read() == g.read()
    with open(os.path.join(path, "labels.txt"), encoding="utf-8") as f:
        assert f.read() == "0\n1\n"
    with open(os.path.join(path, "bert_tf_onnx.json"), encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata == classifier["metadata"]
    # The signature's free axes are the ONNX model's: the batch (and the sequence if free).
    signature = classifier["serve"]
    length = signature.structured_input_signature[1]["input_ids"].shape[1] or "sequence"
    features = ["batch", length]
    assert {k: v for k, v in metadata.items() if k not in ("inputs", "outputs")} == {
        "task": "mrpc", "max_seq_length": SEQ_LENGTH, "do_lower_case": True,
        "labels": ["0", "1"], "labels_file": "labels.txt", "vocab_file": "vocab.txt",
        "model_file": "model.onnx", "opset": 17, "quantize": None}
    assert metadata["inputs"] == [{"name": name, "dtype": "int32", "shape": features}
                                  for name in ("input_ids", "input_mask", "segment_ids")]
    assert metadata["outputs"] == [{"name": "probabilities", "dtype": "float32",
                                    "shape": ["batch", 2]}]
    assert _shapes(os.path.join(path, "model.onnx")) == {
        "input_ids": features, "input_mask": features, "segment_ids": features,
        "probabilities": ["batch", 2]}


# ---------------------------------------------------------------------------
# int8: ONNX Runtime's dynamic quantization of the converted model
# ---------------------------------------------------------------------------


def _constant_matmuls(path):
    """{op type: count} of the nodes of an ONNX file that multiply by a constant weight."""
    import onnx
    model = onnx.load(path)
    constants = {t.name for t in model.graph.initializer}
    counts = {}
    for node in model.graph.node:
        if node.op_type in ("MatMul", "MatMulInteger", "Gemm") and node.input[1] in constants:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts, sorted({node.op_type for node in model.graph.node})


@pytest.fixture(scope="module")
def classifier_int8(files, classifier):
    saved = files["saved_model"]("classifier")
    onnx_dir = os.path.join(files["tmp"], "models", "mrpc_onnx_int8", "1")
    metadata = onnx_export.convert_saved_model(saved, onnx_dir, "MRPC", quantize="int8")
    return {"onnx": onnx_dir, "metadata": metadata}


def test_int8_classifier_files_metadata_and_answers(files, classifier, classifier_int8):
    path = classifier_int8["onnx"]
    assert sorted(os.listdir(path)) == sorted(ONNX_FILES + ["labels.txt"])
    for name in ("vocab.txt", "labels.txt"):
        with open(os.path.join(path, name), "rb") as f, \
                open(os.path.join(classifier["onnx"], name), "rb") as g:
            assert f.read() == g.read(), name
    with open(os.path.join(path, "bert_tf_onnx.json"), encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata == classifier_int8["metadata"]
    quantization = metadata.pop("quantization")
    # The float32 export's metadata but for `quantize`: the same inputs and outputs.
    assert metadata == dict(classifier["metadata"], quantize="int8")
    assert _shapes(os.path.join(path, "model.onnx")) == _shapes(
        os.path.join(classifier["onnx"], "model.onnx"))
    import onnxruntime
    assert quantization == {
        "method": "onnxruntime.quantization.quantize_dynamic",
        "onnxruntime": onnxruntime.__version__, "op_types": ["MatMul"],
        "weights": "int8, symmetric", "per_channel": True, "reduce_range": False,
        "activations": "uint8, one scale per tensor, at each call",
        "int8_matmuls": quantization["int8_matmuls"]}
    # Every MatMul by a weight is int8, and nothing else: 2 layers x 4 dense layers
    # (query/key/value fused), the pooler, the classifier; but the token-type table's
    # (the lookup the original writes as one-hot rows times the table) stays float32.
    float_counts, _ = _constant_matmuls(os.path.join(classifier["onnx"], "model.onnx"))
    counts, ops = _constant_matmuls(os.path.join(path, "model.onnx"))
    assert counts == {"MatMulInteger": quantization["int8_matmuls"], "MatMul": 1}
    assert quantization["int8_matmuls"] == sum(float_counts.values()) - 1 == 10
    assert "DynamicQuantizeLinear" in ops and "DequantizeLinear" not in ops  # no table in int8
    # The answers: within int8's tolerance of the SavedModel's (and not float32's to 1e-5).
    features = _features(files)
    diffs = _parity(classifier["serve"], path, _batches(features), atol=INT8_PROBABILITY_ATOL)
    assert sorted(diffs) == ["probabilities"]
    assert diffs["probabilities"] > ONNX_ATOL


@pytest.mark.slow
def test_int8_encoder_and_multiple_choice(files, tmp_path):
    """The cached SavedModels converted and quantized: hidden states and probabilities."""
    saved = files["saved_model"]("encoder")
    onnx_export.convert_saved_model(saved, str(tmp_path / "encoder"), "encoder", quantize="int8")
    diffs = _parity(_serve_features(saved), str(tmp_path / "encoder"), _batches(_features(files)),
                    atol=INT8_HIDDEN_ATOL)
    assert sorted(diffs) == ["encoder_outputs", "pooled_output", "sequence_output"]
    saved = files["saved_model"]("multiple_choice")
    onnx_export.convert_saved_model(saved, str(tmp_path / "mc"), "multiple_choice",
                                    quantize="int8")
    features = _features(files, files["pairs"])
    features = {k: v.reshape(2, NUM_CHOICES, -1) for k, v in features.items()}
    diffs = _parity(_serve_features(saved), str(tmp_path / "mc"), [features],
                    atol=INT8_PROBABILITY_ATOL)
    assert sorted(diffs) == ["predictions", "probabilities"]


# ---------------------------------------------------------------------------
# Refusals: one line, nothing written
# ---------------------------------------------------------------------------


def test_refusals_are_one_line_and_write_nothing(files, tmp_path, monkeypatch):
    def refused(task="MRPC", init_checkpoint=None, **kwargs):
        with pytest.raises(UserError) as error:
            export.export_saved_model(task, files["config"], files["vocab"], True,
                                      init_checkpoint or files["finetuned"],
                                      str(tmp_path / "out"), SEQ_LENGTH, version=1,
                                      format="onnx", **kwargs)
        message = str(error.value)
        assert "\n" not in message
        assert not (tmp_path / "out").exists(), message
        return message

    for task in ("squad", "fill_mask", "ner"):
        assert refused(task, files["init"]).startswith(
            "--format=onnx converts the features signature (ids in), which --task_name=%s "
            "has not" % task)
    assert refused(doc_stride=16).startswith("--doc_stride windows long texts")
    assert refused(mixed_precision="bf16").startswith(
        "--mixed_precision is for --format=saved_model and tfhub")
    # int8: the ONNX export's tasks (multiple_choice too), and onnxruntime to quantize.
    assert refused("squad", files["init"], quantize="int8") == (
        "--format=onnx --quantize=int8 exports a classifier, encoder, embeddings or "
        "multiple_choice: not --task_name=squad")
    assert refused(quantize="int8", mixed_precision="bf16") == (
        "--quantize=int8 and --mixed_precision=bf16 exclude each other (the int8 model "
        "computes in int8 and float32)")
    assert refused(quantize="int8", doc_stride=16).startswith(
        "--quantize=int8 serves features (ids in): --doc_stride")
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
        message = refused(quantize="int8")
        assert message.startswith("--format=onnx --quantize=int8 needs onnxruntime, which "
                                  "quantizes (")
        assert message.endswith(": pip install bert_tf[onnx]")
        # The tool's flags, parsed as the command line parses them (exit 2 and one
        # `error:` line: test_command_line_without_tf2onnx_exits_2_with_one_line).
        export_dir = tmp_path / "tool"
        assert toolrun.user_errors_here("export_saved_model", [("int8", [
            "--task_name=MRPC", "--bert_config_file=" + files["config_file"],
            "--vocab_file=" + files["vocab"], "--do_lower_case=true",
            "--init_checkpoint=" + files["finetuned"], "--export_dir=%s" % export_dir,
            "--format=onnx", "--quantize=int8"])])["int8"] == message
        assert not export_dir.exists()
        onnx_export.check_request()  # float32 needs no onnxruntime
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # as if it were not installed
    message = refused()
    assert message.startswith("--format=onnx needs tf2onnx and onnx")
    assert message.endswith(": pip install bert_tf[onnx]")
    assert refused(quantize="int8").startswith("--format=onnx needs tf2onnx and onnx")


@pytest.fixture(scope="module")
def command_line(files, tmp_path_factory):
    """One process: imports the export and the tool (and prints the ONNX packages then
    imported), then runs the command line as if tf2onnx were not installed."""
    export_dir = tmp_path_factory.mktemp("onnx_command_line") / "encoder"
    code = ("import sys, bert_tf.export.saved_model, bert_tf.tools.export_saved_model; "
            "print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('onnx', 'tf2onnx', 'onnxruntime')), flush=True); "
            "sys.modules['tf2onnx'] = None; "
            "from bert_tf.tools.export_saved_model import main; sys.exit(main(sys.argv))")
    rc, out, err = toolrun.run([sys.executable, "-c", code, "--task_name=encoder",
                                "--bert_config_file=" + files["config_file"],
                                "--vocab_file=" + files["vocab"], "--do_lower_case=true",
                                "--init_checkpoint=" + files["init"],
                                "--max_seq_length=%d" % SEQ_LENGTH,
                                "--export_dir=%s" % export_dir, "--format=onnx"])
    return {"rc": rc, "out": out, "err": err, "export_dir": export_dir}


@pytest.mark.slow
def test_command_line_without_tf2onnx_exits_2_with_one_line(command_line):
    rc, err = command_line["rc"], command_line["err"]
    assert rc == 2, err[-3000:]
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: --format=onnx needs tf2onnx"), err
    assert errors[0].endswith("pip install bert_tf[onnx]")
    assert not command_line["export_dir"].exists()


@pytest.mark.slow
def test_importing_the_export_imports_no_onnx_package(command_line):
    assert command_line["out"].strip().splitlines()[-1] == "[]", command_line["err"][-3000:]


# ---------------------------------------------------------------------------
# The other tasks, end to end: export_saved_model(format="onnx") and the tool
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_encoder_through_the_tool(files):
    saved = files["saved_model"]("encoder")  # files["init"]
    export_dir = os.path.join(files["tmp"], "models", "encoder_onnx")
    onnx_dir, log = toolrun.run_tool("export_saved_model", [
        "--task_name=encoder", "--bert_config_file=" + files["config_file"],
        "--vocab_file=" + files["vocab"], "--do_lower_case=true",
        "--init_checkpoint=" + files["init"], "--max_seq_length=%d" % SEQ_LENGTH,
        "--export_dir=" + export_dir, "--version=3", "--format=onnx"])
    assert onnx_dir == os.path.join(export_dir, "3")
    assert os.listdir(export_dir) == ["3"]  # the temporary directory was renamed
    assert sorted(os.listdir(onnx_dir)) == ONNX_FILES
    assert "Exported encoder from %s to %s (ONNX: model.onnx" % (
        files["init_prefix"], onnx_dir) in log
    diffs = _parity(_serve_features(saved), onnx_dir, _batches(_features(files)))
    assert sorted(diffs) == ["encoder_outputs", "pooled_output", "sequence_output"]
    with open(os.path.join(onnx_dir, "bert_tf_onnx.json"), encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata["labels"] is None and metadata["labels_file"] is None
    config = files["config"]
    shapes = {o["name"]: o["shape"] for o in metadata["outputs"]}
    assert shapes["pooled_output"] == ["batch", config.hidden_size]
    assert shapes["encoder_outputs"][:2] == ["batch", config.num_hidden_layers]


@pytest.mark.slow
def test_embeddings(files):
    saved = files["saved_model"]("embeddings")  # files["init"]
    onnx_dir = _export(files, "embeddings", files["init"], "embeddings_onnx", format="onnx")
    features = _features(files, [(a, None) for a, _ in files["pairs"]])
    assert sorted(_parity(_serve_features(saved), onnx_dir, _batches(features))) == [
        "embeddings"]
    with open(os.path.join(onnx_dir, "bert_tf_onnx.json"), encoding="utf-8") as f:
        metadata = json.load(f)
    assert (metadata["pooling"], metadata["normalize"]) == ("mean", False)


@pytest.mark.slow
def test_multiple_choice(files):
    # The pre-training checkpoint's encoder with a random head (output_weights [1, hidden]).
    saved = files["saved_model"]("multiple_choice")
    prefix = files["head"]("multiple_choice")
    onnx_dir = _export(files, "multiple_choice", prefix, "multiple_choice_onnx", format="onnx")
    # Two questions of three choices each: [2, 3, S].
    features = _features(files, files["pairs"])
    features = {k: v.reshape(2, NUM_CHOICES, -1) for k, v in features.items()}
    batches = [{k: v[:1] for k, v in features.items()}, features]
    assert sorted(_parity(_serve_features(saved), onnx_dir, batches)) == [
        "predictions", "probabilities"]
    shapes = _shapes(os.path.join(onnx_dir, "model.onnx"))
    assert shapes["probabilities"] == ["batch", "choices"]
    assert shapes["predictions"] == ["batch"]
    assert shapes["input_ids"][:2] == ["batch", "choices"]


@pytest.mark.slow
def test_a_free_sequence_axis_stays_free(files, tmp_path):
    """A serve_features of [batch, any length] converts into a model that takes any length."""
    model = export.load_model(kinds.ENCODER, files["config"], files["init_prefix"])
    module = kinds.EncoderServingModule(model, export.GraphTokenizer(files["vocab"], True),
                                        SEQ_LENGTH, files["vocab"])

    def serve_features(input_ids, input_mask, segment_ids):
        return module.outputs({"input_ids": input_ids, "input_mask": input_mask,
                               "segment_ids": segment_ids})

    module.serve_features = tf.function(serve_features, autograph=False, input_signature=[
        tf.TensorSpec([None, None], tf.int32, name=name) for name in onnx_export.FEATURES])
    saved = str(tmp_path / "saved")
    export.save_module(module, {"serve_features": module.serve_features}, saved, files["vocab"])
    onnx_dir = str(tmp_path / "onnx")
    onnx_export.convert_saved_model(saved, onnx_dir, "encoder")
    shapes = _shapes(os.path.join(onnx_dir, "model.onnx"))
    assert shapes["input_ids"] == ["batch", "sequence"]
    assert shapes["sequence_output"] == ["batch", "sequence", files["config"].hidden_size]
    assert shapes["encoder_outputs"][2] == "sequence"
    features = _features(files)
    short = {k: v[:, :12] for k, v in features.items()}
    _parity(_serve_features(saved), onnx_dir, _batches(features) + _batches(short))
