"""Named tolerances: the only place they are defined.

EXACT comparisons (tokens, ids, TFRecord bytes, names, shapes) use `==`.
"""

# A layer or a tiny model against a NumPy re-statement of the original equations.
LAYER_ATOL = LAYER_RTOL = 1e-5
# Our model against the original code run on the same machine (float32 noise).
MODEL_ATOL = 1e-5
# extract_features JSON values (rounded to 6 places) against the original's.
JSON_ATOL = 1e-4
# Several replicas (or accumulation micro-batches, or loop shapes) against one
# device on the same global batch: summation order only.
REPLICA_ATOL = 1e-5
# bfloat16 inference against float32 on the same weights: bfloat16 keeps 8
# significant bits (~3 decimal digits), so probabilities differ by up to a
# few 1e-3 and hidden states (LayerNorm outputs of magnitude ~1) by a few 1e-2.
BF16_PROBABILITY_ATOL = 2e-2
BF16_HIDDEN_ATOL = 1e-1
# ONNX Runtime's kernels against TensorFlow's on the same converted graph (a
# `--format=onnx` export against its SavedModel): float32 noise.
ONNX_ATOL = 1e-5
# int8 (dynamic range: int8 weights per channel, activations quantized per
# call) against float32 on the same weights: int8 keeps about 2 significant
# digits of each matmul's operands. A tiny fine-tuned classifier's
# probabilities differ by ~1e-2 typically, by up to ~5e-2 on the worst of
# tests/test_export_int8.py's 256 dev examples (LiteRT 0.047, ONNX 0.048),
# hidden states (LayerNorm outputs of magnitude ~1) by ~5e-2.
INT8_PROBABILITY_ATOL = 5e-2
INT8_HIDDEN_ATOL = 1.5e-1
