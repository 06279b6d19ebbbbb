#!/usr/bin/env bash
# GPU check: BERT-large pre-training, BERT-base fine-tuning and inference on one
# NVIDIA GPU (bf16, XLA), seq/s and model FLOPs utilization; see bench/gpu_check.py.
#
#   bash bench/gpu_check.sh [gpu_check.py flags, e.g. --peak_tflops=989]
#   GPU_CHECK_PYTHON=.venv/bin/python bash bench/gpu_check.sh --tiny   # no set-up; CPU: seconds
#
# Set-up: without GPU_CHECK_PYTHON, `make setup` creates (or reuses) .venv from
# requirements.txt; when nvidia-smi lists a GPU that TensorFlow does not see,
# the CUDA libraries TensorFlow needs (tensorflow[and-cuda], the same version)
# are added to that environment. GPU_CHECK_PYTHON names a ready interpreter
# instead, and nothing is installed. The check itself is stopped after
# GPU_CHECK_TIMEOUT seconds (default 480); its own budget (--time_budget_s,
# default 420) skips a measurement that would start later.
set -euo pipefail

cd "$(dirname "$0")/.."
export KERAS_BACKEND=tensorflow
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

if [[ -n "${GPU_CHECK_PYTHON:-}" ]]; then
  PY="$GPU_CHECK_PYTHON"
  if ! "$PY" -c "import bert_tf" >/dev/null 2>&1; then
    echo "error: GPU_CHECK_PYTHON=$PY cannot import bert_tf (run make setup, or unset it)" >&2
    exit 2
  fi
else
  make -s setup
  PY=.venv/bin/python
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    if [[ "$("$PY" -c 'import tensorflow as tf; print(len(tf.config.list_physical_devices("GPU")))' 2>/dev/null)" == "0" ]]; then
      version="$("$PY" -c 'import tensorflow as tf; print(tf.__version__)')"
      echo "gpu_check: nvidia-smi lists a GPU that TensorFlow does not see;" \
           "installing tensorflow[and-cuda]==$version into .venv" >&2
      "$PY" -m pip install -q "tensorflow[and-cuda]==$version"
    fi
  fi
fi

exec timeout "${GPU_CHECK_TIMEOUT:-480}" "$PY" bench/gpu_check.py "$@"
