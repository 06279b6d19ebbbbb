"""int8 exports for CPUs: a LiteRT (TFLite) model with int8 weights (`--quantize=int8`, new).

With `--format=onnx`, `--quantize=int8` writes ONNX Runtime's own int8 of the
ONNX export instead (`bert_tf.export.onnx.quantize_int8`: model.onnx,
quantized by `onnxruntime.quantization.quantize_dynamic`); `check_quantize`
refuses the combinations neither can be. The rest of this module is the
LiteRT one.

`export_int8(...)` writes `export_dir/<version>/` (by `export_saved_model`,
atomically) with:

  model.tflite         the model on features, signature `serve_features`:
                       input_ids, input_mask, segment_ids int32 [batch, length], any
                       length up to max_seq_length (a short request costs what its
                       tokens cost) -> the float32 outputs of the SavedModel's serve_features
                       (classifier: probabilities [batch, num_labels], multi-label
                       also predictions int32 [batch, num_labels], regression score
                       [batch]; encoder: pooled_output, sequence_output,
                       encoder_outputs, of the rows' length; embeddings:
                       embeddings [batch, H]).
  vocab.txt            the tokenizer's vocab.
  export_config.json   what a caller needs to tokenize and read the answers:
                       task_name, task, max_seq_length, do_lower_case, labels
                       (classifier), pooling / normalize (embeddings), the
                       signature's inputs and outputs.

The quantization is TFLite's dynamic range (`tf.lite.Optimize.DEFAULT`): the
weights of every dense layer are int8 with a scale per output channel, the
embedding tables int8 with one scale each; each call quantizes the
activations to int8 on the fly, per row, so no calibration data is needed,
and the matmuls run in int8 (XNNPACK, which `tf.lite.Interpreter` applies by
default). Attention scores, softmax, LayerNorm and GELU stay float32. On a
2-core AVX-512 VNNI Xeon a model of all-MiniLM-L6-v2's size (6 layers, hidden
384, seq 128) answers 2-2.8x as fast as the float32 SavedModel
(BENCHMARKS.md).

Why not a SavedModel: TensorFlow's CPU kernels have no fast int8 matmul that
stock builds run everywhere. Keras's `layer.quantize("int8")` runs TensorFlow's
int8 `MatMul` (int32 out), 6-8x slower than float32; the oneDNN
`QuantizedMatMulWithBiasAndDequantize` runs only while oneDNN is on (it
fails with TF_ENABLE_ONEDNN_OPTS=0) and was slower than float32 at batch 1. The
tokenizer stays outside (ids in): `Int8Model` tokenizes with `FullTokenizer`
as run_classifier does.

  model = Int8Model("/models/sst2/1")
  model(["a gripping film"])   # {"probabilities": [[...]], "label": ["1"]}
"""

import json
import os
import shutil
import tempfile
import warnings

import numpy as np
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.export import kinds
from bert_tf.export import onnx as onnx_export
from bert_tf.modeling import padding
from bert_tf.modeling import precision

QUANTIZE = ("int8",)
MODEL_FILE = "model.tflite"
CONFIG_FILE = "export_config.json"
VOCAB_FILE = "vocab.txt"
SIGNATURE = "serve_features"
INPUTS = ("input_ids", "input_mask", "segment_ids")


def check_quantize(quantize, kind=None, task_name=None, format="saved_model",  # pylint: disable=redefined-builtin
                   mixed_precision=None, doc_stride=None):
    """Refuses, in one line naming the flags, what an int8 export cannot be.

    `format` "saved_model" (the default) makes the LiteRT model of this
    module; "onnx" makes ONNX Runtime's int8 of the ONNX model
    (`bert_tf.export.onnx.quantize_int8`), for the ONNX export's tasks.

    Raises:
      UserError: an unknown --quantize; --quantize with --format=tfhub,
        --mixed_precision or --doc_stride (the windows need the tokenizer in
        the graph); a kind without an int8 export (`ExportKind.int8`: a
        classifier, encoder or embeddings), or with --format=onnx one without
        `serve_features` (those and multiple_choice).
    """
    if not quantize:
        return
    if quantize not in QUANTIZE:
        raise UserError("--quantize must be one of %s (or empty), got %r"
                        % ("|".join(QUANTIZE), quantize))
    if format not in ("saved_model", onnx_export.FORMAT):
        raise UserError("--quantize=%s and --format=%s exclude each other (the int8 export "
                        "is a LiteRT model, or with --format=onnx an ONNX one)"
                        % (quantize, format))
    if precision.MIXED_PRECISION.get(mixed_precision, mixed_precision):  # "fp32": float32
        raise UserError("--quantize=%s and --mixed_precision=%s exclude each other (the "
                        "int8 model computes in int8 and float32)" % (quantize, mixed_precision))
    # The kinds it makes: ONNX Runtime's int8 converts serve_features, the LiteRT one its own.
    onnx = format == onnx_export.FORMAT
    takers = kinds.kinds_with("serve_features" if onnx else "int8")
    if kind is not None and kind not in takers:
        raise UserError("%s--quantize=%s exports %s: not --task_name=%s" % (
            "--format=onnx " if onnx else "", quantize, kinds.listed(takers), task_name))
    if doc_stride is not None:
        raise UserError("--quantize=%s serves features (ids in): --doc_stride is for the "
                        "SavedModel's text signatures" % quantize)


# ---------------------------------------------------------------------------
# The model on features, converted
# ---------------------------------------------------------------------------


class _FeatureModule(tf.Module):
    """The model's variables and its `serve_features`, to be converted."""

    def __init__(self, model, outputs):
        super().__init__(name="int8_export")
        self.model_variables = [v.value for v in model.weights]
        self.serve_features = tf.function(
            lambda input_ids, input_mask, segment_ids: outputs(
                {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}),
            # Rows of any length (at most max_seq_length: the position table's
            # rows), so that Int8Model runs a batch on its attended positions only.
            input_signature=[tf.TensorSpec([None, None], tf.int32, name=name)
                             for name in INPUTS],
            autograph=False)


def convert_int8(module):
    """The TFLite flatbuffer (bytes) of `module.serve_features`, dynamic-range int8.

    Converted from a SavedModel (written to a temporary directory), so the
    signature keeps its name and its inputs' and outputs' names.
    """
    staging = tempfile.mkdtemp(prefix="bert_export_int8_")
    try:
        tf.saved_model.save(module, staging, signatures={SIGNATURE: module.serve_features})
        converter = tf.lite.TFLiteConverter.from_saved_model(staging, signature_keys=[SIGNATURE])
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        # Builtin ops only: any LiteRT runtime runs it, no TensorFlow ops inside.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        return converter.convert()
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def export_int8(kind, task_name, model, vocab_file, do_lower_case, max_seq_length, output_dir,
                labels=None, is_regression=False, multi_label=False, threshold=0.5,
                pooling=None, normalize=None):
    """Writes model.tflite, vocab.txt and export_config.json to `output_dir` (see the module).

    Args:
      kind: an export kind with an int8 export (`kinds.EXPORTS`, `ExportKind.int8`:
        "classifier", "encoder", "embeddings"), whose outputs and settings it writes.
      task_name: the task's name, as given (kept in export_config.json).
      model: the float32 model, its variables loaded (`saved_model.load_model`).
      vocab_file, do_lower_case: the tokenizer's.
      max_seq_length: int, the longest feature row (the position table's rows in use).
      output_dir: a directory to create (export_saved_model's temporary one).
      labels, is_regression, multi_label, threshold: a classifier's.
      pooling, normalize: the embedder's.

    Returns:
      the dict written as export_config.json.
    """
    int8 = kinds.EXPORTS[kind].int8
    settings = kinds.ServingSettings(
        labels=labels, is_regression=is_regression, max_seq_length=max_seq_length,
        vocab_file=vocab_file, do_lower_case=do_lower_case, multi_label=multi_label,
        threshold=threshold, pooling=pooling or "mean", normalize=bool(normalize))
    module = _FeatureModule(model, lambda features: int8.outputs(model, features, settings))
    flatbuffer = convert_int8(module)
    outputs = sorted(module.serve_features.get_concrete_function().structured_outputs)
    config = {"format": "tflite", "quantize": "int8", "task_name": task_name, "task": kind,
              "max_seq_length": int(max_seq_length), "do_lower_case": bool(do_lower_case),
              "vocab_file": VOCAB_FILE, "model_file": MODEL_FILE, "signature": SIGNATURE,
              "inputs": list(INPUTS), "outputs": outputs}
    config.update(int8.config(settings))
    tf.io.gfile.makedirs(output_dir)
    with tf.io.gfile.GFile(os.path.join(output_dir, MODEL_FILE), "wb") as f:
        f.write(flatbuffer)
    tf.io.gfile.copy(vocab_file, os.path.join(output_dir, VOCAB_FILE), overwrite=True)
    with tf.io.gfile.GFile(os.path.join(output_dir, CONFIG_FILE), "w") as f:
        f.write(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return config


# ---------------------------------------------------------------------------
# Running an int8 export
# ---------------------------------------------------------------------------


def _interpreter(model_path, num_threads):
    try:
        interpreter_class = tf.lite.Interpreter
    except AttributeError:  # TensorFlow without tf.lite: LiteRT's own package
        from ai_edge_litert.interpreter import Interpreter as interpreter_class  # pylint: disable=g-import-not-at-top
    with warnings.catch_warnings():
        # TF 2.20+ warns that tf.lite.Interpreter moves to ai_edge_litert (same API).
        warnings.simplefilter("ignore", UserWarning)
        return interpreter_class(model_path=model_path, num_threads=num_threads)


# The positions a batch needs (NumPy): where the SavedModel's signatures cut it.
attended_length = padding.numpy_attended_length


class Int8Model(object):
    """An int8 export (`export_dir/<version>/`) run by the LiteRT interpreter.

    `model(texts_a, texts_b=None)` tokenizes as run_classifier does
    (`FullTokenizer`, export_config.json's do_lower_case and max_seq_length)
    and returns the outputs of `predict_features`, plus for a single-label
    classifier `label` (list of str, the argmax's label) and for a multi-label
    one `label` (the labels over the threshold, comma-separated).

    Args:
      export_dir: the version directory (model.tflite, vocab.txt, export_config.json).
      num_threads: the interpreter's threads; default: the CPUs this process may use.
    """

    def __init__(self, export_dir, num_threads=None):
        with tf.io.gfile.GFile(os.path.join(export_dir, CONFIG_FILE)) as f:
            self.config = json.load(f)
        if num_threads is None:
            num_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else os.cpu_count()
        self.interpreter = _interpreter(os.path.join(export_dir, self.config["model_file"]),
                                        int(num_threads))
        self.tokenizer = tokenization.FullTokenizer(
            os.path.join(export_dir, self.config["vocab_file"]), self.config["do_lower_case"])
        self.max_seq_length = int(self.config["max_seq_length"])
        # Resizes the inputs to each call's shape (a no-op when it is the last one's).
        self._runner = self.interpreter.get_signature_runner(self.config["signature"])
        # Exports before variable lengths fixed the rows at max_seq_length.
        shape = self._runner.get_input_details()["input_ids"]["shape_signature"]
        self.any_length = int(shape[-1]) == -1

    def features(self, texts_a, texts_b=None):
        """int32 NumPy features [batch, max_seq_length] of the texts (texts_b None: single)."""
        return self.tokenizer(list(texts_a), None if texts_b is None else list(texts_b),
                              padding="max_length", truncation=True,
                              max_length=self.max_seq_length, return_tensors="np")

    def predict_features(self, input_ids, input_mask, segment_ids):
        """The signature's outputs (NumPy arrays) on int [batch, length] features.

        Rows may have any length up to max_seq_length. As the SavedModel's
        signatures, the model runs on the batch's attended positions only
        (cut after the last position whose input_mask is not 0 in any row,
        rounded up to a multiple of 16); the encoder's `sequence_output` and
        `encoder_outputs` come back at the rows' length, 0 at padding positions.
        """
        features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        features = {k: np.asarray(v, np.int32) for k, v in features.items()}
        shape = features["input_ids"].shape
        if (len(shape) != 2 or any(v.shape != shape for v in features.values())
                or not 1 <= shape[1] <= self.max_seq_length
                or (not self.any_length and shape[1] != self.max_seq_length)):
            raise UserError("Int8Model: input_ids, input_mask and segment_ids must be [batch, "
                            "length] with length %s, got %s" % (
                                "1 to %d" % self.max_seq_length if self.any_length
                                else self.max_seq_length,
                                [list(v.shape) for v in features.values()]))
        if not self.any_length:
            return self._runner(**features)  # copies of the output tensors
        length = attended_length(features["input_mask"])
        outputs = self._runner(**{k: v[:, :length] for k, v in features.items()})
        if length < shape[1]:  # the per-position outputs back at the rows' length
            for name, axis in (("sequence_output", 1), ("encoder_outputs", 2)):
                if name in outputs:
                    pad = [(0, 0)] * outputs[name].ndim
                    pad[axis] = (0, shape[1] - length)
                    outputs[name] = np.pad(outputs[name], pad)
        return outputs

    def __call__(self, texts_a, texts_b=None):
        outputs = self.predict_features(**self.features(texts_a, texts_b))
        labels = self.config.get("labels")
        if labels and self.config.get("multi_label"):
            outputs["label"] = [",".join(l for l, on in zip(labels, row) if on)
                                for row in outputs["predictions"]]
        elif labels:
            outputs["label"] = [labels[i] for i in np.argmax(outputs["probabilities"], axis=-1)]
        return outputs
