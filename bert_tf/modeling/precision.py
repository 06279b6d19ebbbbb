"""Mixed precision for the models bert_tf builds, to train or to serve (new; the original was float32)."""

import contextlib

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras

from bert_tf.errors import UserError

MIXED_PRECISION = {None: None, "": None, "off": None, "fp32": None, "float32": None,
                   "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


# For inference only: the encoder's dense layers store their variables in the
# compute dtype (see `dtype_policy(..., inference=True)`).
INFERENCE_POLICY = {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


@contextlib.contextmanager
def dtype_policy(mixed_precision, inference=False):
    """Sets Keras's global dtype policy for the models built inside the block.

    Args:
      mixed_precision: None / "fp32" (float32), "bf16" (mixed_bfloat16) or
        "fp16" (mixed_float16). Variables stay float32; LayerNorm and the
        attention softmax compute in float32. The heads' matmuls (the MLM
        logits against the word embeddings included) run in the compute dtype;
        their logits are cast to float32 before the output bias is added, so
        the heads return float32 logits and the losses' log-softmax runs in
        float32 (bert_tf/modeling/heads.py).
      inference: True for a model that only predicts (extract_features, the
        SavedModel export): the encoder's dense kernels and biases are stored
        in bfloat16 / float16 (Keras's "bfloat16" / "float16" policies),
        rounded once when the checkpoint is loaded, the same rounding the
        mixed policy applies to them at every call; so the outputs are the
        mixed policy's (up to bfloat16 rounding: oneDNN may fuse differently),
        without casting ~85M weights per call (BERT-base), in half the memory. LayerNorm, the embedding tables and the
        heads keep float32 variables (`layers.initializers.float32_variables_dtype`).
    """
    if mixed_precision not in MIXED_PRECISION:
        raise UserError("--mixed_precision must be one of bf16|fp16 (or empty), got %r"
                        % (mixed_precision,))
    policy = MIXED_PRECISION[mixed_precision]
    if policy and inference:
        policy = INFERENCE_POLICY[policy]
    previous = keras.config.dtype_policy()
    if policy:
        keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


@contextlib.contextmanager
def inference_policy(mixed_precision=None):
    """The policy to build a model for inference under (an export, say).

    float32 whatever the process's (or the training run's) policy, or with
    "bf16" / "fp16" `dtype_policy(mixed_precision, inference=True)`: the
    matmuls in bfloat16 / float16 with the encoder's dense weights stored so,
    LayerNorm, embeddings and heads in float32.
    """
    if MIXED_PRECISION.get(mixed_precision, mixed_precision) is None:
        previous = keras.config.dtype_policy()
        keras.config.set_dtype_policy("float32")
        try:
            yield
        finally:
            keras.config.set_dtype_policy(previous)
        return
    with dtype_policy(mixed_precision, inference=True):
        yield
