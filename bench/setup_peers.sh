#!/usr/bin/env bash
# The benchmarks' peers in their own virtual environment (bench/.peers): keras-hub and TF Model
# Garden. They are no dependencies of bert_tf; `make bench` calls this before bench/run.py.
#
#   bash bench/setup_peers.sh .venv/bin/python [--venv DIR]
#
# PYTHON is the project's interpreter (make setup's .venv). The peers' venv is made from the same
# base Python and reads the project venv's site-packages through a .pth file, so the peers run on
# the project's TensorFlow and Keras, and pip installs only what the peers add, every version
# pinned below:
#   * keras-hub with its dependencies (those the project venv does not already have);
#   * TF Model Garden (tf-models-official) without its dependencies: its own pins would replace
#     the project's TensorFlow; it runs with tf-keras, gin-config and scipy next to it.
# It ends by importing keras_hub, official.legacy.bert and tf_keras in the peers' venv and checking
# that their TensorFlow is the project's, and that the venv holds nothing unpinned; then it writes
# DIR/.installed. With that marker there (and the pins unchanged) it does nothing, and a venv made
# by hand with these commands is adopted: checked, then marked, not rebuilt.
set -euo pipefail

usage() { echo "usage: bash bench/setup_peers.sh PYTHON [--venv DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
PY=$1
shift
cd "$(dirname "$0")/.."
VENV=bench/.peers
while [ $# -gt 0 ]; do
  case $1 in
    --venv) [ $# -ge 2 ] || usage; VENV=$2; shift 2 ;;
    --venv=*) VENV=${1#--venv=}; shift ;;
    *) echo "setup_peers.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if ! [ -x "$PY" ]; then
  echo "setup_peers.sh: PYTHON is not an interpreter: $PY (run \`make setup\` first)" >&2
  exit 2
fi

# keras-hub 0.32.0 and the dependencies it adds to the project venv (tokenizers, kagglehub, and
# theirs), each pinned.
KERAS_HUB_PINS=(
  keras-hub==0.32.0
  kagglehub==1.0.2
  kagglesdk==0.1.28
  regex==2026.11.19
  sentencepiece==0.2.3
  tokenizers==0.23.3
  huggingface_hub==2.4.0
  hf-xet==1.8.0
  httpx2==2.16.2
  httpcore2==2.16.2
  h11==0.16.0
  anyio==4.16.0
  truststore==0.10.5
  click==8.5.1
  filelock==4.3.1
  fsspec==2026.9.0
  tqdm==4.70.1
)
# TF Model Garden, installed with --no-deps, and what it needs beside the project venv.
MODEL_GARDEN_PINS=(
  tf-models-official==2.20.0
  tf-keras==2.21.0
  gin-config==0.5.0
  scipy==1.17.1
)

MARKER=$VENV/.installed
PINS="${KERAS_HUB_PINS[*]} ${MODEL_GARDEN_PINS[*]}"
if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$PINS" ] && [ -x "$VENV/bin/python" ]; then
  echo "setup_peers.sh: $VENV is set up (remove $MARKER to check it again)"
  exit 0
fi

PROJECT_SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PROJECT_TF=$("$PY" -c 'import importlib.util as u
s = u.find_spec("tensorflow")
print(s.origin if s else "")')
if [ -z "$PROJECT_TF" ]; then
  echo "setup_peers.sh: $PY has no TensorFlow (run \`make setup\` first)" >&2
  exit 2
fi
if ! [ -x "$VENV/bin/python" ]; then
  BASE_PY=$("$PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
  echo "setup_peers.sh: creating $VENV from $BASE_PY"
  "$BASE_PY" -m venv "$VENV"
fi
PEER_SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PROJECT_SITE" > "$PEER_SITE/zz_project_venv.pth"

PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" "${KERAS_HUB_PINS[@]}"
"${PIP[@]}" --no-deps "${MODEL_GARDEN_PINS[@]}"

# The peers import, on the project's TensorFlow, and the venv holds only pinned packages.
KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=2 \
  "$VENV/bin/python" - "$PROJECT_TF" "$PEER_SITE" $PINS <<'EOF'
import sys

project_tf, peer_site, pins = sys.argv[1], sys.argv[2], sys.argv[3:]
import importlib.metadata as metadata
import keras_hub  # noqa: F401
import official.legacy.bert  # noqa: F401
import tensorflow as tf
import tf_keras  # noqa: F401

if tf.__file__ != project_tf:
    sys.exit("setup_peers.sh: the peers import TensorFlow from %s, not the project's %s"
             % (tf.__file__, project_tf))
def key(name):
    return name.lower().replace("_", "-")
pinned = {key(p.split("==")[0]): p.split("==")[1] for p in pins}
for dist in metadata.distributions(path=[peer_site]):
    name, version = key(dist.metadata["Name"]), dist.version
    if name in ("pip", "setuptools"):
        continue
    if name not in pinned:
        sys.exit("setup_peers.sh: %s %s in the peers' venv is not pinned in bench/setup_peers.sh"
                 % (name, version))
    if pinned[name] != version:
        sys.exit("setup_peers.sh: %s is %s in the peers' venv, pinned %s"
                 % (name, version, pinned[name]))
print("setup_peers.sh: keras-hub %s, Model Garden, tf-keras on TensorFlow %s (the project's)"
      % (keras_hub.__version__, tf.__version__))
EOF
echo "$PINS" > "$MARKER"
