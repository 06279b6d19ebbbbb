"""ONNX models of an export's features signature (new: `--format=onnx`).

For servers that run ONNX Runtime. `export_saved_model(..., format="onnx")`
writes the SavedModel of the task as `format="saved_model"` does, to a
temporary directory, and `convert_saved_model` turns its `serve_features`
signature into an ONNX model (tf2onnx, opset 17). The tokenizer stays
outside, as in TF Hub's preprocessor / encoder split: the model takes ids,
made by `bert_tf.tokenization.FullTokenizer` (its `encode` / `__call__`:
the original's packing, `build_pair_features`), exactly the features
`run_classifier.py` builds. `export_dir/<version>/` holds:

  model.onnx        inputs input_ids, input_mask, segment_ids: int32
                    [batch, max_seq_length] (multiple_choice: [batch,
                    choices, max_seq_length]); the outputs of serve_features
                    but its strings: a classifier's `probabilities`
                    float32 [batch, num_labels] (sts-b: `score` [batch];
                    multi-label: also `predictions` int32 [batch, num_labels]),
                    the encoder's pooled_output, sequence_output and
                    encoder_outputs, the embedder's `embeddings`,
                    multiple_choice's `probabilities` and `predictions`.
                    The axes the signature leaves free (the batch; the
                    sequence where it is not fixed) are dynamic, named
                    "batch", "choices", "sequence".
  vocab.txt         the vocab, for FullTokenizer.
  labels.txt        a classifier's labels, one a line, in the order of the
                    probabilities' columns (the `label` string of the
                    SavedModel is the argmax's line).
  bert_tf_onnx.json what a client needs to feed the model: task,
                    max_seq_length, do_lower_case, labels, the inputs' and
                    outputs' names, dtypes and shapes (also in model.onnx's
                    metadata, key "bert_tf_onnx").

  import json, onnxruntime
  from bert_tf import tokenization

  meta = json.load(open("models/mrpc/1/bert_tf_onnx.json"))
  tokenizer = tokenization.FullTokenizer("models/mrpc/1/vocab.txt", meta["do_lower_case"])
  features = tokenizer(texts_a, texts_b, padding="max_length", truncation=True,
                       max_length=meta["max_seq_length"], return_tensors="np")
  session = onnxruntime.InferenceSession("models/mrpc/1/model.onnx")
  probabilities, = session.run(["probabilities"], features)

`quantize="int8"` (`--format=onnx --quantize=int8`, new) writes the same
files with model.onnx in int8, quantized by ONNX Runtime's own dynamic
quantization (`onnxruntime.quantization.quantize_dynamic`, INT8_SETTINGS)
from the float32 model converted as above: every MatMul with a constant
weight (the encoder's dense layers, the pooler, the head) gets int8 weights
with a scale per output column (`MatMulInteger`), and each call quantizes
the MatMuls' inputs to uint8 on the fly, one scale per tensor
(`DynamicQuantizeLinear`), so no calibration data is needed. The word and
position embeddings, attention scores, softmax, LayerNorm and GELU stay
float32 (the token-type table too, which the original multiplies by one-hot
rows: a MatMul left float32); the inputs and outputs are the float32
model's. ONNX Runtime fuses each int8 MatMul into `DynamicQuantizeMatMul`,
whose u8 x s8 kernels use AMX, AVX-512 VNNI or AVX-VNNI where the CPU has
them. bert_tf_onnx.json (and the metadata) then say `"quantize": "int8"`
and how (`"quantization"`); it is null for float32. `session.run` is the
same as for float32.

Kinds without a features signature (`ExportKind.serve_features` false in
`bert_tf.export.kinds`: squad, fill_mask, ner, whose graphs tokenize and
decode text inside) are refused by `export_saved_model`. tf2onnx and onnx
(and for int8 onnxruntime) are imported only here, when an ONNX export runs
(`pip install bert_tf[onnx]`).
"""

import json
import logging
import os
import tempfile

from bert_tf import fileio
from bert_tf.errors import UserError

FORMAT = "onnx"
OPSET = 17
MODEL_FILE = "model.onnx"
VOCAB_FILE = "vocab.txt"
LABELS_FILE = "labels.txt"
METADATA_FILE = "bert_tf_onnx.json"
FEATURES = ("input_ids", "input_mask", "segment_ids")
# The free axes of the inputs, by rank; the free axes of an output are named
# after the inputs' in order (batch first, then choices, then sequence).
_AXES = {2: ("batch", "sequence"), 3: ("batch", "choices", "sequence")}
# The SavedModel's settings a client may need, copied to the metadata when present.
_SETTINGS = (("pooling", "pooling"), ("normalize", "normalize"),
             ("threshold", "multi_label_threshold"))
# --quantize=int8: `quantize_dynamic`'s settings, the fastest at batch 1 of those that keep
# the answers (all-MiniLM-L6-v2 on a 2-core AVX-512 VNNI / AMX Xeon, docs/serving.md;
# the tiny classifier of tests/test_export_int8.py). A scale per output channel costs
# no time and halves MiniLM's error against one per tensor (its mean-pooled embeddings'
# cosine to float32's: at least 0.9886 against 0.9255); int8 weights run ONNX Runtime's u8 x s8
# kernels (uint8 weights: 2x slower); reduce_range (7-bit weights, for CPUs without
# VNNI) was slower. MatMul only: quantize_dynamic's default also makes the word
# embeddings int8 with one scale for the whole table, which took no time off and
# doubled the tiny classifier's error (0.045 against 0.022: the gate is 0.05). The
# token-type table stays float32 too (`_one_hot_matmuls`): a lookup written as a MatMul
# by one-hot rows, [tokens, 2] x [2, H], no time to gain, and its int8 rows took the
# tiny classifier's error from 0.048 to 0.062.
INT8_SETTINGS = {"per_channel": True, "reduce_range": False, "weight_type": "QInt8",
                 "op_types_to_quantize": ["MatMul"]}


def check_request(doc_stride=None, mixed_precision=None, quantize=None):
    """Refuses what an ONNX export cannot hold, and a missing converter, in one line each.

    The caller has refused a kind without a features signature
    (`export_saved_model`: `ExportKind.serve_features`).

    Raises:
      UserError: --doc_stride (the text signatures' windows), --mixed_precision,
        tf2onnx / onnx not installed, or with quantize="int8" onnxruntime not
        installed.
    """
    if doc_stride is not None:
        raise UserError("--doc_stride windows long texts in the text signatures: --format=onnx "
                        "takes features (cut long texts into windows before feeding them)")
    if mixed_precision:
        raise UserError("--mixed_precision is for --format=saved_model and tfhub: --format=onnx "
                        "exports float32 (ONNX Runtime's own tools convert it to float16)")
    try:
        import onnx  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        import tf2onnx  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError as e:
        raise UserError("--format=onnx needs tf2onnx and onnx (%s): pip install bert_tf[onnx]"
                        % e) from e
    if quantize:
        try:
            # pylint: disable-next=import-outside-toplevel,unused-import
            import onnxruntime.quantization  # noqa: F401
        except ImportError as e:
            raise UserError("--format=onnx --quantize=%s needs onnxruntime, which quantizes "
                            "(%s): pip install bert_tf[onnx]" % (quantize, e)) from e


def _dims(shape, names):
    """A TensorShape as a JSON list: ints, and the axis names of its free axes."""
    free = iter(names)
    return [d if d is not None else next(free, None) for d in shape.as_list()]


def _convert(function, input_specs):
    """tf2onnx's `convert.from_function`, without its reshape optimizer; returns a ModelProto.

    With a free sequence axis, tf2onnx 1.17's reshape optimizer rewrites
    `reshape(dense(x), [shape(y)[0], shape(y)[1], N, H])` (the heads' split
    after a dense layer's [B*S, D] -> [B, S, D] reshape) into a Reshape with
    0s ("copy this dimension") that the back-to-back optimizer then merges
    with the dense layer's reshape, so the 0s copy B*S instead of B
    (onnx/tensorflow-onnx#2085). The other optimizers run as in
    `from_function`; ONNX Runtime folds the shape arithmetic itself.
    """
    # pylint: disable=import-outside-toplevel
    import tensorflow as tf
    from tf2onnx import optimizer
    from tf2onnx import tf_loader
    from tf2onnx import tfonnx
    from tf2onnx.convert import tensor_names_from_structed

    concrete = function.get_concrete_function(*input_specs)
    input_names = [t.name for t in concrete.inputs if t.dtype != tf.resource]
    output_names = [t.name for t in concrete.outputs if t.dtype != tf.resource]
    renames = tensor_names_from_structed(concrete, input_names, output_names)
    optimizers = optimizer._get_optimizers().copy()  # pylint: disable=protected-access
    optimizers.pop("reshape_optimizer", None)
    tf_logger = tf.get_logger()
    level = tf_logger.level
    with tf.device("/cpu:0"):
        # Grappler's pass over the frozen graph warns that the lookup tables' initializer
        # collection (the tokenizer's, not in this graph) cannot be serialized: no fault.
        tf_logger.setLevel(logging.ERROR)
        try:
            frozen = tf_loader.from_function(concrete, input_names, output_names)
        finally:
            tf_logger.setLevel(level)
        with tf.Graph().as_default() as graph:
            tf.import_graph_def(frozen, name="")
            # continue_on_error=False: an op without an ONNX mapping fails the export.
            onnx_graph = tfonnx.process_tf_graph(
                graph, opset=OPSET, input_names=input_names, output_names=output_names,
                tensors_to_rename=renames)
            onnx_graph = optimizer.optimize_graph(onnx_graph, optimizers=optimizers)
            return onnx_graph.make_model("bert_tf serve_features")


def _name_free_axes(model, input_specs, output_specs, free_names):
    """Names the free (dynamic) axes of model's inputs and outputs as the signature has them."""
    specs = dict(input_specs)
    specs.update(output_specs)
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        shape = specs[value.name].shape.as_list()
        if len(dims) != len(shape):
            raise AssertionError("%s: ONNX rank %d, signature %s" % (value.name, len(dims), shape))
        free = iter(free_names)
        for dim, size in zip(dims, shape):
            if size is None:
                name = next(free, None)
                if name is not None:
                    dim.dim_param = name
            elif not dim.HasField("dim_value"):
                dim.dim_value = size


class _QuantizerChatter(logging.Filter):
    """Drops what onnxruntime.quantization logs below ERROR (to the root logger).

    For these models it is all expected: a line for each tensor whose scale is
    computed at run time (all of them: dynamic), the int tensors it leaves
    alone (Pad's pads), and the advice to run `quant_pre_process` first, which
    changed neither the speed nor the answers (ONNX Runtime runs those passes
    itself when it loads the model).
    """

    def __init__(self, package_dir):
        super().__init__()
        self.package_dir = package_dir + os.sep

    def filter(self, record):
        return record.levelno >= logging.ERROR or not record.pathname.startswith(
            self.package_dir)


def _one_hot_matmuls(model):
    """The names of the MatMul nodes whose input is a one-hot matrix (through reshapes and
    casts): the token-type embedding lookup, which the original writes as a MatMul."""
    producer = {output: node for node in model.graph.node for output in node.output}
    found = []
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        source = producer.get(node.input[0])
        while source is not None and source.op_type in ("Reshape", "Cast", "Identity"):
            source = producer.get(source.input[0])
        if source is not None and source.op_type == "OneHot":
            found.append(node.name)
    return found


def quantize_int8(model):
    """`model` (a float32 ModelProto) through ONNX Runtime's `quantize_dynamic` (INT8_SETTINGS).

    Returns:
      (the int8 ModelProto, dict: how it was quantized, for the metadata).
    """
    # pylint: disable=import-outside-toplevel
    import onnx
    import onnxruntime
    import onnxruntime.quantization
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic

    settings = dict(INT8_SETTINGS, weight_type=getattr(QuantType, INT8_SETTINGS["weight_type"]))
    chatter = _QuantizerChatter(os.path.dirname(onnxruntime.quantization.__file__))
    root = logging.getLogger()
    root.addFilter(chatter)
    try:
        with tempfile.TemporaryDirectory(prefix="bert_export_onnx_int8_") as tmp:
            path = os.path.join(tmp, MODEL_FILE)
            quantize_dynamic(model, path, nodes_to_exclude=_one_hot_matmuls(model), **settings)
            quantized = onnx.load(path)
    finally:
        root.removeFilter(chatter)
    int8_matmuls = sum(node.op_type == "MatMulInteger" for node in quantized.graph.node)
    if not int8_matmuls:
        raise AssertionError("quantize_dynamic quantized no MatMul")
    info = {"method": "onnxruntime.quantization.quantize_dynamic",
            "onnxruntime": onnxruntime.__version__,
            "weights": "int8, symmetric",
            "op_types": list(INT8_SETTINGS["op_types_to_quantize"]),
            "per_channel": INT8_SETTINGS["per_channel"],
            "reduce_range": INT8_SETTINGS["reduce_range"],
            "activations": "uint8, one scale per tensor, at each call",
            "int8_matmuls": int8_matmuls}
    return quantized, info


def convert_saved_model(saved_model_dir, output_dir, task_name, phases=None, quantize=None):
    """Writes `output_dir/` model.onnx, vocab.txt, bert_tf_onnx.json (+ labels.txt).

    Args:
      saved_model_dir: a SavedModel of `export_saved_model` (a kind whose
        `ExportKind.serve_features` is true: it has the `serve_features` signature).
      output_dir: the directory to write (created).
      task_name: the task, for the metadata and errors.
      phases: an `item_progress.PhaseLog`, or None.
      quantize: None (float32), or "int8": the converted model through
        `quantize_int8` (onnxruntime needed).

    Returns:
      dict, the metadata written to bert_tf_onnx.json.
    """
    # pylint: disable=import-outside-toplevel
    import onnx
    import tensorflow as tf

    if quantize and quantize != "int8":
        raise UserError("--quantize must be int8 (or empty), got %r" % (quantize,))
    loaded = tf.saved_model.load(saved_model_dir)
    if "serve_features" not in loaded.signatures:
        raise UserError("--format=onnx: the export of --task_name=%s has no serve_features "
                        "signature" % task_name)
    serve_features = loaded.signatures["serve_features"]
    signature_inputs = serve_features.structured_input_signature[1]
    input_specs = [(name, tf.TensorSpec(signature_inputs[name].shape, signature_inputs[name].dtype,
                                        name=name)) for name in FEATURES]
    # Strings (a classifier's `label`) stay out: the numbers and labels.txt give them.
    output_specs = [(name, spec) for name, spec in sorted(serve_features.structured_outputs.items())
                    if spec.dtype != tf.string]
    output_names = [name for name, _ in output_specs]

    def features(input_ids, input_mask, segment_ids):
        outputs = serve_features(input_ids=input_ids, input_mask=input_mask,
                                 segment_ids=segment_ids)
        return {name: outputs[name] for name in output_names}

    function = tf.function(features, input_signature=[spec for _, spec in input_specs],
                           autograph=False)
    model = _convert(function, [spec for _, spec in input_specs])
    rank = input_specs[0][1].shape.rank
    free_names = [name for name, size in zip(_AXES[rank], input_specs[0][1].shape.as_list())
                  if size is None]
    _name_free_axes(model, input_specs, output_specs, free_names)
    if phases is not None:
        phases.done("serve_features converted to ONNX (opset %d)", OPSET)
    quantization = None
    if quantize:
        model, quantization = quantize_int8(model)
        if phases is not None:
            phases.done("quantized to int8 by ONNX Runtime %s (quantize_dynamic, %d MatMuls)",
                        quantization["onnxruntime"], quantization["int8_matmuls"])
    if [v.name for v in model.graph.input] != list(FEATURES) or \
            sorted(v.name for v in model.graph.output) != output_names:
        raise AssertionError("ONNX inputs %s, outputs %s" % (
            [v.name for v in model.graph.input], [v.name for v in model.graph.output]))

    labels = None
    if hasattr(loaded, "labels"):
        labels = [x.decode("utf-8") for x in loaded.labels.numpy().tolist()]
    metadata = {
        "task": task_name.lower(),
        "max_seq_length": int(loaded.max_seq_length.numpy()),
        "do_lower_case": bool(loaded.do_lower_case.numpy()),
        "labels": labels,
        "vocab_file": VOCAB_FILE,
        "labels_file": LABELS_FILE if labels is not None else None,
        "model_file": MODEL_FILE,
        "opset": OPSET,
        "quantize": quantize or None,
        "inputs": [{"name": name, "dtype": spec.dtype.name,
                    "shape": _dims(spec.shape, free_names)} for name, spec in input_specs],
        "outputs": [{"name": name, "dtype": spec.dtype.name,
                     "shape": _dims(spec.shape, free_names)} for name, spec in output_specs],
    }
    if quantization is not None:
        metadata["quantization"] = quantization
    for attribute, key in _SETTINGS:
        if hasattr(loaded, attribute):
            value = getattr(loaded, attribute).numpy()
            metadata[key] = value.decode("utf-8") if isinstance(value, bytes) else value.item()
    text = json.dumps(metadata, indent=2, sort_keys=True) + "\n"
    onnx.helper.set_model_props(model, {"bert_tf_onnx": json.dumps(metadata, sort_keys=True)})
    onnx.checker.check_model(model, full_check=True)

    fileio.makedirs(output_dir)
    with fileio.open_file(os.path.join(output_dir, MODEL_FILE), "wb") as f:
        f.write(model.SerializeToString())
    tf.io.gfile.copy(os.path.join(saved_model_dir, "assets", VOCAB_FILE),
                     os.path.join(output_dir, VOCAB_FILE))
    if labels is not None:
        with fileio.open_file(os.path.join(output_dir, LABELS_FILE), "w") as f:
            f.write("".join(label + "\n" for label in labels))
    with fileio.open_file(os.path.join(output_dir, METADATA_FILE), "w") as f:
        f.write(text)
    return metadata
