"""SavedModels for TF Serving and TF Hub, with the tokenizer inside the graph.

  saved_model  export_saved_model: the entry point (tools/export_saved_model.py):
               the task, the checkpoint checked against the config, the model
               rebuilt in float32 (or bf16 / fp16) for inference;
               export_dir/<version>/ written atomically.
  kinds        `EXPORTS`, one `ExportKind` per kind (its model, head, flags,
               serving module, whether ONNX converts it, how its int8 model is
               made), read with no branch per kind; the encoder's serving module
               (each task's is in its folder: `bert_tf/tasks/<task>/serving.py`).
  serving_module
               ModelServingModule, what each served model's tf.Module starts
               with (the variables, the tokenizer, the settings as variables).

A task's own serving module is in its folder (`bert_tf/tasks/<task>/serving.py`:
squad's answers, fill-mask's tokens, the named entities).

  hub          the TF Hub pair: preprocessor and encoder SavedModels.
  quantize     --quantize=int8: a LiteRT model with int8 weights for CPUs
               (features in), and Int8Model to run it.

`export_saved_model` is here by name, loaded when first used: a task's serving
module imports `serving_module` from this package, and the export it would load
imports every task's serving module.
"""

from bert_tf import _lazy

_LAZY = {"export_saved_model": "bert_tf.export.saved_model"}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = _lazy.names(__name__, _LAZY)
