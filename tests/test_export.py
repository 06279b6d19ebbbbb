# coding=utf-8
"""Tests for bert_tf.export.saved_model: SavedModels that take raw text and answer as run_classifier does.

Data: an MRPC-layout task of real English (`demo_corpus.write_sentence_pair_task`),
a WordPiece vocab learned from it, a tiny BERT (2 layers, hidden 32) saved as
a pre-training checkpoint (the encoder's) and with a classifier head of large
weights (the classifier's: its probabilities differ from example to example
by far more than the tolerance). The classifier checkpoint is saved as a bf16
run saves it (a model built under the mixed_bfloat16 policy, `Trainer.save`'s
call), and exported while the process's policy is still bf16.

* `tools/run_classifier.py --do_predict` (float32) on that checkpoint writes
  the reference `test_results.tsv` and `predict.tf_record`.
* The classifier and encoder exports (the encoder's is `tests.export_cache`'s,
  which the other export tests read too), and the same two with
  `--mixed_precision=bf16`, are loaded in ONE fresh process where
  only `tensorflow` (and tensorflow-serving-api's protos) can be imported:
  keras, tf_keras, tensorflow_text, bert_tf and tests are blocked. It
  answers every signature and `PredictRequest`s as TF Serving would; the
  tests compare:
  - serving_default on the test file's raw text_a/text_b (as the MRPC
    processor reads them) against test_results.tsv; a batch of one per row
    against the whole batch;
  - serve_features and serve_examples (predict.tf_record's records) against
    the same rows;
  - serve_text_a (and empty text_b) against the Keras classifier on
    FullTokenizer features of text_a alone;
  - the encoder against `BertModel` on FullTokenizer + build_pair_features;
  - the bf16 run's export: float32 variables, float32 answers;
  - the --mixed_precision=bf16 exports: bf16 dense weights, the same
    signatures, answers near float32's and not float32's.
"""

import base64
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.modeling import checkpoint
from bert_tf.export import kinds
from bert_tf.export import saved_model as export
from bert_tf import tokenization
from bert_tf.tasks.classifier.model import BertClassifier
from bert_tf.tasks.classifier import data as classifier_data
from bert_tf.tasks.classifier import data_processors as classifier_processors
from bert_tf.data import demo_corpus
from bert_tf.data import vocab
from bert_tf.tokenization.pair_features import build_pair_features
from bert_tf.errors import UserError
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling import precision
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_init_checkpoint
from tests.tolerances import MODEL_ATOL
from tests.tolerances import REPLICA_ATOL
from tests.tolerances import BF16_HIDDEN_ATOL
from tests.tolerances import BF16_PROBABILITY_ATOL
from tests.tools import toolrun
from tests import bare_tf
from tests import export_cache

# Every test here reads the exports the module's `setup` builds (about 50 s on 2 cores):
# make test runs them, make test-fast does not.
pytestmark = pytest.mark.slow

SEQ_LENGTH = 32
NUM_TEST = 21
LABELS = ["0", "1"]
CLASSIFIER_SIGNATURES = {"serving_default", "serve_text_a", "serve_features", "serve_examples"}
# Beyond the test file: an empty text_a, one that is all truncated, non-ASCII.
EXTRA_TEXTS = [(u"", u"Only the second one."), (u"word " * 60, u"x"),
               (u"Caf\u00e9 \u4e2d\u6587 na\u00efve \u03a3\u039f\u03a3", u"")]


def write_task(tmp):
    """The task files, vocab, config and checkpoints the export tests (and the tool's) use.

    Returns a dict: data_dir, vocab, config (BertConfig), config_file, init
    (a release-like directory: bert_model.ckpt, no `checkpoint` file; bert +
    cls), finetuned (a directory with a `checkpoint` file naming
    model.ckpt-7: bert + output_weights/output_bias).
    """
    data_dir = os.path.join(str(tmp), "MRPC")
    demo_corpus.write_sentence_pair_task(
        data_dir, sizes=(("train.tsv", 8), ("dev.tsv", 4), ("test.tsv", NUM_TEST)))
    vocab_file = os.path.join(str(tmp), "vocab.txt")
    tokens = vocab.build_vocab([os.path.join(data_dir, name)
                                for name in ("train.tsv", "dev.tsv", "test.tsv")],
                               vocab_file, vocab_size=400, lower_thresh=2)
    # initializer_range 0.2 (BERT's is 0.02): the random model tells examples apart.
    config = tiny_config(vocab_size=len(tokens), initializer_range=0.2)
    init_dir = os.path.join(str(tmp), "init")
    init = write_init_checkpoint(config, os.path.join(init_dir, "bert_model.ckpt"))
    values = checkpoint.read_checkpoint(init)
    rng = np.random.RandomState(5)
    values["output_weights"] = rng.normal(0.0, 1.0, (2, config.hidden_size)).astype(np.float32)
    values["output_bias"] = np.array([0.3, -0.3], np.float32)
    finetuned_dir = os.path.join(str(tmp), "finetuned")
    checkpoint.write_checkpoint(os.path.join(finetuned_dir, "model.ckpt-7"), values)
    write_config(config, os.path.join(str(tmp), "bert_config.json"))
    return task_paths(tmp)


def task_paths(tmp):
    """`write_task`'s dict of the files it wrote in `tmp`."""
    tmp = str(tmp)
    config_file = os.path.join(tmp, "bert_config.json")
    init_dir = os.path.join(tmp, "init")
    finetuned_dir = os.path.join(tmp, "finetuned")
    return {"tmp": tmp, "data_dir": os.path.join(tmp, "MRPC"),
            "vocab": os.path.join(tmp, "vocab.txt"),
            "config": BertConfig.from_json_file(config_file), "config_file": config_file,
            "init": init_dir, "init_prefix": os.path.join(init_dir, "bert_model.ckpt"),
            "finetuned": finetuned_dir,
            "finetuned_prefix": os.path.join(finetuned_dir, "model.ckpt-7")}


# ---------------------------------------------------------------------------
# The bare loader: a fresh process with only tensorflow importable
# ---------------------------------------------------------------------------

_BARE_LOADER = bare_tf.PRELUDE + r'''
import base64, json

from tensorflow_serving.apis import predict_pb2


def tensor(value):
    dtype, data = value
    if dtype == "bytes":
        return tf.constant([base64.b64decode(x) for x in data], tf.string)
    if dtype == "string":
        return tf.constant([x.encode("utf-8") for x in data], tf.string)
    return tf.constant(data, dtype)


def plain(array):
    if array.dtype == object:
        return [x.decode("utf-8") for x in array.reshape(-1).tolist()]
    return array.tolist()


def predict(loaded, signature_name, inputs):
    """What TF Serving's Predict does with a PredictRequest, on the wire and back."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "bert"
    request.model_spec.signature_name = signature_name
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(tensor(value).numpy()))
    request = predict_pb2.PredictRequest.FromString(request.SerializeToString())
    fn = loaded.signatures[request.model_spec.signature_name or "serving_default"]
    specs = fn.structured_input_signature[1]
    assert set(request.inputs) == set(specs), (sorted(request.inputs), sorted(specs))
    kwargs = {}
    for key, proto in request.inputs.items():
        assert tf.as_dtype(proto.dtype) == specs[key].dtype, key
        kwargs[key] = tf.constant(tf.make_ndarray(proto), specs[key].dtype)
    response = predict_pb2.PredictResponse()
    response.model_spec.CopyFrom(request.model_spec)
    for key, value in fn(**kwargs).items():
        response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
    response = predict_pb2.PredictResponse.FromString(response.SerializeToString())
    return {key: plain(tf.make_ndarray(proto)) for key, proto in response.outputs.items()}


plan = json.load(open(sys.argv[1], encoding="utf-8"))
loaded = {}
results = {}
for call in plan:
    path = call["export"]
    if path not in loaded:
        loaded[path] = tf.saved_model.load(path)
    module = loaded[path]
    if call.get("predict_request"):
        results[call["id"]] = predict(module, call["signature"], call["inputs"])
        continue
    fn = module.signatures[call["signature"]]
    if call.get("expect_error"):
        try:
            fn(**{k: tensor(v) for k, v in call["inputs"].items()})
            results[call["id"]] = {"error": None}
        except tf.errors.InvalidArgumentError as e:
            results[call["id"]] = {"error": str(e)}
        continue
    out = fn(**{k: tensor(v) for k, v in call["inputs"].items()})
    results[call["id"]] = {k: plain(v.numpy()) for k, v in out.items()}
for path, module in loaded.items():
    results["attributes:" + path] = {
        "signatures": sorted(module.signatures),
        "do_lower_case": bool(module.do_lower_case.numpy()),
        "max_seq_length": int(module.max_seq_length.numpy()),
        "labels": plain(module.labels.numpy()) if hasattr(module, "labels") else None,
        "vocab_file": module.vocab_file.asset_path.numpy().decode("utf-8"),
        "variable_dtypes": sorted(set(v.dtype.name for v in module.model_variables)),
        "signature_specs": {
            key: {"inputs": {k: [s.dtype.name, s.shape.as_list()]
                             for k, s in fn.structured_input_signature[1].items()},
                  "outputs": {k: [s.dtype.name, s.shape.as_list()]
                              for k, s in fn.structured_outputs.items()}}
            for key, fn in module.signatures.items()},
    }
results["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
json.dump(results, open(sys.argv[2], "w"))
'''


def run_bare(tmp, plan):
    """Runs `plan` (a list of calls) in a fresh process where only tensorflow imports."""
    plan_file = os.path.join(tmp, "plan.json")
    with open(plan_file, "w", encoding="utf-8") as f:
        json.dump(plan, f)
    out = os.path.join(tmp, "bare_results.json")
    bare_tf.run_script(_BARE_LOADER, [plan_file, out], tmp)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def _strings(texts):
    return ["string", list(texts)]


def _ints(rows):
    return ["int32", np.asarray(rows).tolist()]


# ---------------------------------------------------------------------------
# Set-up shared by the tests: reference run, exports, one bare process
# ---------------------------------------------------------------------------


def _read_test_results(path):
    with open(path) as f:
        return np.array([[float(x) for x in line.split("\t")]
                         for line in f.read().splitlines()], np.float64)


def _records(path):
    records = [r.numpy() for r in tf.data.TFRecordDataset(path)]
    spec = classifier_data.name_to_features(SEQ_LENGTH)
    parsed = tf.io.parse_example(tf.constant(records), spec)
    features = {k: parsed[k].numpy().astype(np.int32)
                for k in ("input_ids", "input_mask", "segment_ids")}
    return records, features


def _full_features(files, pairs):
    """FullTokenizer + build_pair_features, as run_classifier / extract_features build them."""
    tokenizer = tokenization.FullTokenizer(files["vocab"], do_lower_case=True)
    rows = [build_pair_features(tokenizer.tokenize(a), tokenizer.tokenize(b) if b else None,
                                SEQ_LENGTH, tokenizer) for a, b in pairs]
    return {key: np.array([getattr(r, key) for r in rows], np.int32)
            for key in ("input_ids", "input_mask", "segment_ids")}


def _write_bf16_checkpoint(files):
    """The fine-tuned weights saved as a bf16 run saves them.

    A model built under the mixed_bfloat16 policy (as `--mixed_precision=bf16`
    builds it), the weights of `files["finetuned"]`, `Trainer.save`'s call:
    `output_dir/model.ckpt-7` with global_step and a `checkpoint` file.
    """
    with precision.dtype_policy("bf16"):
        model = BertClassifier(files["config"], len(LABELS))
        assert model.bert.compute_dtype == "bfloat16"
    checkpoint.load_checkpoint(model, files["finetuned_prefix"])
    output_dir = os.path.join(files["tmp"], "bf16_run")
    checkpoint.save_checkpoint(model, os.path.join(output_dir, "model.ckpt-7"), global_step=7)
    return output_dir


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    files = export_cache.task_files(tmp_path_factory, "export")
    bf16_run = _write_bf16_checkpoint(files)
    bf16_prefix = os.path.join(bf16_run, "model.ckpt-7")
    reference_dir = os.path.join(files["tmp"], "mrpc_output")

    config = files["config"]
    # The classifier is exported while the process's policy is still bf16 (as
    # after a bf16 run), from the run's directory (its `checkpoint` file).
    with precision.dtype_policy("bf16"):
        classifier = export.export_saved_model(
            "MRPC", config, files["vocab"], True, bf16_run,
            os.path.join(files["tmp"], "export", "mrpc"), SEQ_LENGTH, version=1)
    assert keras.config.dtype_policy().name == "float32"
    # The encoder from a Google release directory (bert_model.ckpt, no `checkpoint` file):
    # the export the other export tests read too.
    encoder = export_cache.saved_model(tmp_path_factory, "encoder")
    # --mixed_precision=bf16 (test_mixed_precision_bf16_export_computes_in_bf16), answered
    # in the same bare process.
    bf16_classifier = export.export_saved_model(
        "MRPC", config, files["vocab"], True, files["finetuned"],
        os.path.join(files["tmp"], "export", "mrpc_bf16"), SEQ_LENGTH, version=1,
        mixed_precision="bf16")
    bf16_encoder = export.export_saved_model(
        "encoder", config, files["vocab"], True, files["init"],
        os.path.join(files["tmp"], "export", "encoder_bf16"), SEQ_LENGTH, version=1,
        mixed_precision="bf16")
    assert keras.config.dtype_policy().name == "float32"
    exports = {"classifier": classifier, "encoder": encoder,
               "bf16_classifier": bf16_classifier, "bf16_encoder": bf16_encoder}

    # The reference: run_classifier --do_predict (float32) on the bf16 run's checkpoint.
    toolrun.run_tool("run_classifier", [
        "--task_name=MRPC", "--do_predict=true", "--data_dir=" + files["data_dir"],
        "--vocab_file=" + files["vocab"], "--bert_config_file=" + files["config_file"],
        "--init_checkpoint=" + bf16_prefix, "--max_seq_length=%d" % SEQ_LENGTH,
        "--predict_batch_size=4", "--output_dir=" + reference_dir])
    test_results = _read_test_results(os.path.join(reference_dir, "test_results.tsv"))
    assert test_results.shape == (NUM_TEST, 2)
    records, record_features = _records(os.path.join(reference_dir, "predict.tf_record"))
    examples = classifier_processors.get_processor("mrpc").get_test_examples(files["data_dir"])
    pairs = [(e.text_a, e.text_b) for e in examples]

    texts_a = [a for a, _ in pairs]
    texts_b = [b for _, b in pairs]
    extra_a = [a for a, _ in EXTRA_TEXTS]
    extra_b = [b for _, b in EXTRA_TEXTS]
    b64 = ["bytes", [base64.b64encode(r).decode("ascii") for r in records]]
    plan = [
        {"id": "text", "export": classifier, "signature": "serving_default",
         "inputs": {"text_a": _strings(texts_a), "text_b": _strings(texts_b)}},
        {"id": "features", "export": classifier, "signature": "serve_features",
         "inputs": {k: _ints(v) for k, v in record_features.items()}},
        {"id": "examples", "export": classifier, "signature": "serve_examples",
         "inputs": {"examples": b64}},
        {"id": "text_a", "export": classifier, "signature": "serve_text_a",
         "inputs": {"text_a": _strings(texts_a + extra_a)}},
        {"id": "text_empty_b", "export": classifier, "signature": "serving_default",
         "inputs": {"text_a": _strings(texts_a + extra_a),
                    "text_b": _strings([""] * (NUM_TEST + len(EXTRA_TEXTS)))}},
        {"id": "request", "export": classifier, "signature": "serving_default",
         "predict_request": True,
         "inputs": {"text_a": _strings(texts_a), "text_b": _strings(texts_b)}},
        {"id": "request_examples", "export": classifier, "signature": "serve_examples",
         "predict_request": True, "inputs": {"examples": b64}},
        {"id": "mismatch", "export": classifier, "signature": "serving_default",
         "expect_error": True,
         "inputs": {"text_a": _strings(texts_a[:2]), "text_b": _strings(texts_b[:1])}},
        # Pairs, and single segments (an empty text_b) in the same batch.
        {"id": "encoder", "export": encoder, "signature": "serving_default",
         "inputs": {"text_a": _strings(texts_a[:6] + extra_a),
                    "text_b": _strings(texts_b[:6] + extra_b)}},
        {"id": "encoder_features", "export": encoder, "signature": "serve_features",
         "inputs": {k: _ints(v[:4]) for k, v in record_features.items()}},
    ]
    # Rows shorter than max_seq_length (cut after the longest text), and longer ones.
    rows = _short_rows(record_features)
    short = _longest_text(np.asarray(record_features["input_mask"])[rows])
    for path, name in ((classifier, "features"), (encoder, "encoder_features")):
        plan.append({"id": name + "_short", "export": path, "signature": "serve_features",
                     "inputs": {k: _ints(np.asarray(v)[rows, :short])
                                for k, v in record_features.items()}})
        plan.append({"id": name + "_too_long", "export": path, "signature": "serve_features",
                     "expect_error": True,
                     "inputs": {k: _ints(np.pad(np.asarray(v)[:4], [[0, 0], [0, 1]]))
                                for k, v in record_features.items()}})
    for i, (a, b) in enumerate(pairs):
        plan.append({"id": "one_%d" % i, "export": classifier, "signature": "serving_default",
                     "inputs": {"text_a": _strings([a]), "text_b": _strings([b])}})
    plan += [
        {"id": "bf16_features", "export": bf16_classifier, "signature": "serve_features",
         "inputs": {k: _ints(v) for k, v in record_features.items()}},
        {"id": "bf16_text", "export": bf16_classifier, "signature": "serving_default",
         "inputs": {"text_a": _strings(texts_a), "text_b": _strings(texts_b)}},
        {"id": "bf16_encoder", "export": bf16_encoder, "signature": "serve_features",
         "inputs": {k: _ints(v[:4]) for k, v in record_features.items()}},
    ]
    results = run_bare(files["tmp"], plan)
    return dict(files=files, exports=exports, results=results, test_results=test_results,
                pairs=pairs, records=records, record_features=record_features,
                bf16_prefix=bf16_prefix)


def _short_rows(record_features):
    """Up to four rows whose texts leave padding."""
    lengths = np.asarray(record_features["input_mask"]).sum(axis=1)
    return list(np.nonzero(lengths < SEQ_LENGTH - 4)[0][:4])


def _longest_text(input_mask):
    """The number of positions up to the last attended one of any row."""
    attended = np.nonzero(np.asarray(input_mask).any(axis=0))[0]
    return int(attended[-1]) + 1


def _probabilities(result):
    return np.array(result["probabilities"], np.float64)


# ---------------------------------------------------------------------------
# Classifier
# ---------------------------------------------------------------------------


def test_nothing_but_tensorflow_was_imported(setup):
    assert setup["results"]["modules"] == []


def test_raw_text_gives_run_classifier_test_results(setup):
    expected = setup["test_results"]
    # The examples are told apart far beyond the tolerance.
    assert np.diff(expected[:, 0]).std() > 100 * MODEL_ATOL
    got = setup["results"]["text"]
    np.testing.assert_allclose(_probabilities(got), expected, atol=MODEL_ATOL,
                               err_msg="serving_default probabilities")
    assert got["label"] == [LABELS[i] for i in expected.argmax(axis=1)]


def test_a_batch_of_one_gives_the_rows_of_the_batch(setup):
    batch = _probabilities(setup["results"]["text"])
    results = setup["results"]
    for i in range(NUM_TEST):
        one = results["one_%d" % i]
        assert len(one["label"]) == 1
        np.testing.assert_allclose(_probabilities(one)[0], batch[i], atol=REPLICA_ATOL,
                                   err_msg="row %d" % i)
        assert one["label"][0] == results["text"]["label"][i]


def test_features_and_examples_give_the_same_probabilities(setup):
    expected = setup["test_results"]
    results = setup["results"]
    for key in ("features", "examples", "request_examples"):
        np.testing.assert_allclose(_probabilities(results[key]), expected, atol=MODEL_ATOL,
                                   err_msg=key)
        assert results[key]["label"] == results["text"]["label"], key


def test_predict_request_is_answered_as_tf_serving_would(setup):
    response = setup["results"]["request"]
    assert sorted(response) == ["label", "probabilities"]
    np.testing.assert_allclose(_probabilities(response), setup["test_results"],
                               atol=MODEL_ATOL, err_msg="PredictResponse probabilities")
    assert response["label"] == setup["results"]["text"]["label"]


def test_text_a_and_text_b_of_different_batch_sizes_are_refused(setup):
    error = setup["results"]["mismatch"]["error"]
    assert error and "text_a and text_b must have the same batch size" in error


def test_text_a_alone_is_a_single_segment(setup):
    files = setup["files"]
    texts_a = [a for a, _ in setup["pairs"]] + [a for a, _ in EXTRA_TEXTS]
    model = BertClassifier(files["config"], len(LABELS))
    checkpoint.load_checkpoint(model, files["finetuned_prefix"])
    features = _full_features(files, [(a, None) for a in texts_a])
    expected = tf.nn.softmax(model(features, training=False)["logits"]).numpy()
    results = setup["results"]
    for key in ("text_a", "text_empty_b"):
        np.testing.assert_allclose(_probabilities(results[key]), expected, atol=MODEL_ATOL,
                                   err_msg=key)
    # Not the pair's answer: text_b counted in serving_default.
    assert np.abs(_probabilities(results["text_a"])[:NUM_TEST]
                  - setup["test_results"]).max() > 100 * MODEL_ATOL


def test_module_attributes_and_assets(setup):
    files = setup["files"]
    path = setup["exports"]["classifier"]
    assert path == os.path.join(files["tmp"], "export", "mrpc", "1")
    attributes = setup["results"]["attributes:" + path]
    assert set(attributes["signatures"]) == CLASSIFIER_SIGNATURES
    assert attributes["do_lower_case"] is True
    assert attributes["max_seq_length"] == SEQ_LENGTH
    assert attributes["labels"] == LABELS
    assert attributes["vocab_file"] == os.path.join(path, "assets", "vocab.txt")
    with open(os.path.join(path, "assets", "vocab.txt"), "rb") as f, \
            open(files["vocab"], "rb") as g:
        assert f.read() == g.read()
    assert not [n for n in os.listdir(os.path.dirname(path)) if ".tmp-" in n]


def test_signature_names_dtypes_and_shapes(setup):
    path = setup["exports"]["classifier"]
    specs = setup["results"]["attributes:" + path]["signature_specs"]
    # Feature rows of any length up to max_seq_length (a longer one is refused: below).
    text, features = ["string", [None]], ["int32", [None, None]]
    assert {key: spec["inputs"] for key, spec in specs.items()} == {
        "serving_default": {"text_a": text, "text_b": text},
        "serve_text_a": {"text_a": text},
        "serve_features": {"input_ids": features, "input_mask": features,
                           "segment_ids": features},
        "serve_examples": {"examples": text},
    }
    for key, spec in specs.items():
        assert spec["outputs"] == {"probabilities": ["float32", [None, 2]],
                                   "label": ["string", [None]]}, key
    config = setup["files"]["config"]
    hidden, layers = config.hidden_size, config.num_hidden_layers
    specs = setup["results"]["attributes:" + setup["exports"]["encoder"]]["signature_specs"]
    assert sorted(specs) == ["serve_features", "serve_text_a", "serving_default"]
    # serve_features answers rows of the length given.
    encoder_outputs = {"pooled_output": ["float32", [None, hidden]],
                       "sequence_output": ["float32", [None, None, hidden]],
                       "encoder_outputs": ["float32", [None, layers, None, hidden]]}
    assert specs["serve_features"]["outputs"] == encoder_outputs
    # Text is packed to max_seq_length.
    encoder_outputs["sequence_output"] = ["float32", [None, SEQ_LENGTH, hidden]]
    encoder_outputs["encoder_outputs"] = ["float32", [None, layers, SEQ_LENGTH, hidden]]
    encoder_outputs["input_mask"] = ["int32", [None, SEQ_LENGTH]]
    assert specs["serving_default"]["outputs"] == encoder_outputs
    assert specs["serve_text_a"]["outputs"] == encoder_outputs
    assert specs["serving_default"]["inputs"] == {"text_a": text, "text_b": text}


# ---------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------


def test_encoder_outputs_equal_bert_model(setup):
    files = setup["files"]
    pairs = setup["pairs"]
    model = BertModel(files["config"])
    checkpoint.load_checkpoint(model, files["init_prefix"])  # strict; cls/* unused

    def expected(features):
        # The model's outputs on the whole rows; the export's are 0 at padding positions.
        out = model(features["input_ids"], input_mask=features["input_mask"],
                    token_type_ids=features["segment_ids"], training=False)
        kept = np.asarray(features["input_mask"], np.float32)  # [B, S]
        return {"pooled_output": out["pooled_output"].numpy(),
                "sequence_output": out["sequence_output"].numpy() * kept[:, :, None],
                "encoder_outputs": np.stack([x.numpy() for x in out["all_encoder_layers"]], 1)
                                   * kept[:, None, :, None]}

    config = files["config"]
    for key, case_pairs in {"encoder": pairs[:6] + EXTRA_TEXTS}.items():
        features = _full_features(files, case_pairs)
        want = expected(features)
        got = setup["results"][key]
        np.testing.assert_array_equal(got["input_mask"], features["input_mask"], err_msg=key)
        n = len(case_pairs)
        assert np.shape(got["encoder_outputs"]) == (
            n, config.num_hidden_layers, SEQ_LENGTH, config.hidden_size)
        assert np.shape(got["pooled_output"]) == (n, config.hidden_size)
        for name, value in want.items():
            np.testing.assert_allclose(np.array(got[name]), value, atol=MODEL_ATOL,
                                       err_msg="%s %s" % (key, name))
    features = {k: v[:4] for k, v in setup["record_features"].items()}
    got = setup["results"]["encoder_features"]
    assert sorted(got) == ["encoder_outputs", "pooled_output", "sequence_output"]
    for name, value in expected(features).items():
        np.testing.assert_allclose(np.array(got[name]), value, atol=MODEL_ATOL,
                                   err_msg="serve_features " + name)
    attributes = setup["results"]["attributes:" + setup["exports"]["encoder"]]
    assert set(attributes["signatures"]) == {"serving_default", "serve_text_a",
                                             "serve_features"}
    assert attributes["labels"] is None


def test_feature_rows_of_any_length_up_to_max_seq_length(setup):
    """serve_features takes rows as long as the batch's longest text (no padding to send),
    answers them as the padded rows, and refuses rows longer than max_seq_length."""
    results, features = setup["results"], setup["record_features"]
    rows = _short_rows(features)
    short = _longest_text(np.asarray(features["input_mask"])[rows])
    assert len(rows) >= 2 and short < SEQ_LENGTH
    np.testing.assert_allclose(_probabilities(results["features_short"]),
                               _probabilities(results["features"])[rows], atol=MODEL_ATOL)
    assert results["features_short"]["label"] == [results["features"]["label"][i] for i in rows]
    # The encoder on the same rows, whole: the text signature's rows are the records'.
    encoder = setup["results"]["encoder_features_short"]
    whole = BertModel(setup["files"]["config"])
    checkpoint.load_checkpoint(whole, setup["files"]["init_prefix"])
    out = whole(np.asarray(features["input_ids"])[rows],
                input_mask=np.asarray(features["input_mask"])[rows],
                token_type_ids=np.asarray(features["segment_ids"])[rows], training=False)
    kept = np.asarray(features["input_mask"])[rows][:, :short, None]
    np.testing.assert_allclose(encoder["pooled_output"], out["pooled_output"], atol=MODEL_ATOL)
    np.testing.assert_allclose(encoder["sequence_output"],
                               out["sequence_output"].numpy()[:, :short] * kept, atol=MODEL_ATOL)
    for name in ("features_too_long", "encoder_features_too_long"):
        assert "feature rows longer than max_seq_length (%d)" % SEQ_LENGTH in str(
            results[name]["error"]), name


# ---------------------------------------------------------------------------
# Mixed precision
# ---------------------------------------------------------------------------


def test_bf16_run_exports_float32(setup):
    """The classifier came from a bf16 run's checkpoint, exported under the bf16 policy."""
    path = setup["exports"]["classifier"]
    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    dtypes = reader.get_variable_to_dtype_map()
    model_dtypes = {dtypes[name] for name in dtypes if name.startswith("model_variables/")}
    assert model_dtypes == {tf.float32}, model_dtypes
    config = setup["files"]["config"]
    num_weights = len(checkpoint.expected_tf1_variables(config)) + 2
    # Each layer's query, key and value (6 variables) are saved fused, as 2
    # (bert_tf.export.fused_encoder); nothing else is saved twice.
    fused = [n for n in dtypes if n.startswith("fused_encoder/")]
    assert {dtypes[n] for n in fused} == {tf.float32}
    assert len(fused) == 2 * config.num_hidden_layers
    assert len([n for n in dtypes if n.startswith("model_variables/")]) == (
        num_weights - 6 * config.num_hidden_layers)
    assert setup["results"]["attributes:" + path]["variable_dtypes"] == ["float32"]
    # Float32 compute (bf16 would be off by about 1e-2), as run_classifier's float32 predict.
    np.testing.assert_allclose(_probabilities(setup["results"]["features"]),
                               setup["test_results"], atol=MODEL_ATOL, err_msg="bf16-run export")


# ---------------------------------------------------------------------------
# Library pieces without an export
# ---------------------------------------------------------------------------


def test_regression_returns_score(setup):
    files = setup["files"]
    with precision.inference_policy():
        model = BertClassifier(files["config"], 1)
    tokenizer = export.GraphTokenizer(files["vocab"], True)
    module = kinds.ClassifierServingModule(model, tokenizer, [None], True, SEQ_LENGTH,
                                           files["vocab"])
    features = _full_features(files, [("a b", None), ("c", "d")])
    out = module.serve_features(**features)
    assert sorted(out) == ["score"] and out["score"].shape == (2,)
    assert out["score"].dtype == tf.float32
    np.testing.assert_allclose(out["score"].numpy(),
                               model(features, training=False)["logits"].numpy()[:, 0],
                               atol=MODEL_ATOL)
    assert export.task_spec("STS-B") == ("classifier", ["None"], True)


def test_resolve_init_checkpoint(setup, tmp_path):
    files = setup["files"]
    assert checkpoint.resolve_checkpoint(files["finetuned"]) == files["finetuned_prefix"]
    assert checkpoint.resolve_checkpoint(files["init"]) == files["init_prefix"]
    assert checkpoint.resolve_checkpoint(files["init_prefix"]) == files["init_prefix"]
    # model.ckpt-N without a `checkpoint` file: the highest N.
    bare = tmp_path / "steps"
    bare.mkdir()
    for step in (9, 10, 2):
        (bare / ("model.ckpt-%d.index" % step)).write_text("")
    assert checkpoint.resolve_checkpoint(str(bare)) == str(bare / "model.ckpt-10")
    with pytest.raises(UserError, match="the directory holds no checkpoint"):
        checkpoint.resolve_checkpoint(str(tmp_path))
    with pytest.raises(UserError, match=r"no checkpoint there \(expected .*missing.index\)"):
        checkpoint.resolve_checkpoint(str(tmp_path / "missing"))


def test_checks_name_the_culprit(setup, tmp_path):
    files = setup["files"]
    config = files["config"]
    with pytest.raises(UserError, match=r"has no classifier head \(variable output_weights"):
        export.check_checkpoint(files["init_prefix"], config, "classifier", 2, task_name="mrpc")
    with pytest.raises(UserError, match=r"variable output_weights has shape \[2, 32\] in the "
                                        r"checkpoint but \[3, 32\]"):
        export.check_checkpoint(files["finetuned_prefix"], config, "classifier", 3)
    wide = tiny_config(vocab_size=config.vocab_size, hidden_size=64)
    with pytest.raises(UserError, match="variable bert/embeddings/word_embeddings has shape"):
        export.check_checkpoint(files["init_prefix"], wide, kinds.ENCODER)
    small = tiny_config(vocab_size=config.vocab_size - 1)
    with pytest.raises(UserError, match=r"vocab.txt has %d tokens, more than vocab_size %d"
                       % (config.vocab_size, config.vocab_size - 1)):
        tokenization.check_vocab(files["vocab"], small)
    with pytest.raises(UserError, match="--format=tfhub exports the encoder"):
        export.export_saved_model("mrpc", config, files["vocab"], True, files["finetuned"],
                                  str(tmp_path / "hub"), SEQ_LENGTH, format="tfhub")
    with pytest.raises(UserError, match="exists already"):
        export.export_saved_model("mrpc", config, files["vocab"], True, setup["bf16_prefix"],
                                  os.path.dirname(setup["exports"]["classifier"]), SEQ_LENGTH,
                                  version=1)
    assert not (tmp_path / "hub").exists()



def test_mixed_precision_bf16_export_computes_in_bf16(setup, tmp_path):
    """--mixed_precision=bf16: bf16 dense weights, float32 signatures and outputs; bf16 numbers."""
    files = setup["files"]
    config = files["config"]
    with pytest.raises(UserError, match="--mixed_precision must be one of bf16"):
        export.export_saved_model("mrpc", config, files["vocab"], True, files["finetuned"],
                                  str(tmp_path / "bad"), SEQ_LENGTH, mixed_precision="int8")
    assert not (tmp_path / "bad").exists()
    # The setup's exports, answered in its bare process.
    exports = setup["exports"]
    record_features = setup["record_features"]
    results = {key: setup["results"]["bf16_" + key] for key in ("features", "text", "encoder")}
    assert setup["results"]["modules"] == []
    for bf16_path, fp32_path in ((exports["bf16_classifier"], exports["classifier"]),
                                 (exports["bf16_encoder"], exports["encoder"])):
        got = setup["results"]["attributes:" + bf16_path]
        want = setup["results"]["attributes:" + fp32_path]
        assert got["variable_dtypes"] == ["bfloat16", "float32"]  # dense kernels in bf16
        assert got["signature_specs"] == want["signature_specs"]

    expected = setup["test_results"]  # run_classifier.py --do_predict, float32
    for key in ("features", "text"):
        probabilities = _probabilities(results[key])
        diff = float(np.abs(probabilities - expected).max())
        # Close to float32, and not float32 itself (bf16 really computed).
        assert 100 * MODEL_ATOL < diff <= BF16_PROBABILITY_ATOL, (key, diff)
        agree = np.mean(probabilities.argmax(1) == expected.argmax(1))
        assert agree >= 0.9, (key, agree)
    assert results["features"]["label"] == results["text"]["label"]

    model = BertModel(config)
    checkpoint.load_checkpoint(model, files["init_prefix"])
    features = {k: v[:4] for k, v in record_features.items()}
    out = model(features["input_ids"], input_mask=features["input_mask"],
                token_type_ids=features["segment_ids"], training=False)
    kept = {"pooled_output": 1.0,  # the export's sequence_output is 0 at padding positions
            "sequence_output": np.asarray(features["input_mask"], np.float32)[:, :, None]}
    for name in ("pooled_output", "sequence_output"):
        diff = float(np.abs(np.array(results["encoder"][name]) - out[name].numpy() * kept[name]).max())
        assert 100 * MODEL_ATOL < diff <= BF16_HIDDEN_ATOL, (name, diff)
    print("bf16 export vs float32: probabilities %.4f (max abs difference)"
          % np.abs(_probabilities(results["features"]) - expected).max())
