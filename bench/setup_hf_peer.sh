#!/usr/bin/env bash
# Hugging Face transformers (its TensorFlow models) in its own virtual environment, bench/.hf-peer:
# the loader that tests/test_huggingface.py's slow parity test holds bert_tf's Hugging Face
# directories against. It is no dependency of bert_tf.
#
#   bash bench/setup_hf_peer.sh .venv/bin/python [--venv DIR]
#
# transformers 4.44.2 (the last release with TFBertModel and friends on tf-keras) needs
# tokenizers<0.20, which cannot share the project venv's tokenizers, so it gets a venv of its own,
# made from the same base Python. That venv reads the project venv's site-packages through a .pth
# file, after its own packages: it runs on the project's TensorFlow, NumPy and safetensors, with
# its own transformers, tokenizers and huggingface_hub, every version pinned below. It ends by
# loading transformers' TFBertModel on the project's TensorFlow and checking that the venv holds
# nothing unpinned; then it writes DIR/.installed (with it there and the pins unchanged, it does
# nothing).
set -euo pipefail

usage() { echo "usage: bash bench/setup_hf_peer.sh PYTHON [--venv DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
PY=$1
shift
cd "$(dirname "$0")/.."
VENV=bench/.hf-peer
while [ $# -gt 0 ]; do
  case $1 in
    --venv) [ $# -ge 2 ] || usage; VENV=$2; shift 2 ;;
    --venv=*) VENV=${1#--venv=}; shift ;;
    *) echo "setup_hf_peer.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if ! [ -x "$PY" ]; then
  echo "setup_hf_peer.sh: PYTHON is not an interpreter: $PY (run \`make setup\` first)" >&2
  exit 2
fi

# Installed with --no-deps: everything else they need comes from the project venv.
PINS=(
  transformers==4.44.2
  tokenizers==0.19.1
  huggingface-hub==0.24.7
  tf-keras==2.21.0
  regex==2026.11.19
)

MARKER=$VENV/.installed
if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "${PINS[*]}" ] && [ -x "$VENV/bin/python" ]; then
  echo "setup_hf_peer.sh: $VENV is set up (remove $MARKER to check it again)"
  exit 0
fi

PROJECT_SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PROJECT_TF=$("$PY" -c 'import importlib.util as u
s = u.find_spec("tensorflow")
print(s.origin if s else "")')
if [ -z "$PROJECT_TF" ]; then
  echo "setup_hf_peer.sh: $PY has no TensorFlow (run \`make setup\` first)" >&2
  exit 2
fi
if ! [ -x "$VENV/bin/python" ]; then
  BASE_PY=$("$PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
  echo "setup_hf_peer.sh: creating $VENV from $BASE_PY"
  "$BASE_PY" -m venv "$VENV"
fi
PEER_SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# A .pth line is appended to sys.path after the venv's own site-packages.
echo "$PROJECT_SITE" > "$PEER_SITE/zz_project_venv.pth"

"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps "${PINS[@]}"

TF_USE_LEGACY_KERAS=1 TF_CPP_MIN_LOG_LEVEL=2 \
  "$VENV/bin/python" - "$PROJECT_TF" "$PEER_SITE" "${PINS[@]}" <<'PYEOF'
import sys

project_tf, peer_site, pins = sys.argv[1], sys.argv[2], sys.argv[3:]
import importlib.metadata as metadata
import tensorflow as tf
import tokenizers
import transformers
from transformers import TFBertModel  # noqa: F401

if tf.__file__ != project_tf:
    sys.exit("setup_hf_peer.sh: TensorFlow comes from %s, not the project's %s"
             % (tf.__file__, project_tf))
def key(name):
    return name.lower().replace("_", "-")
pinned = {key(p.split("==")[0]): p.split("==")[1] for p in pins}
for dist in metadata.distributions(path=[peer_site]):
    name, version = key(dist.metadata["Name"]), dist.version
    if name in ("pip", "setuptools"):
        continue
    if name not in pinned:
        sys.exit("setup_hf_peer.sh: %s %s in %s is not pinned" % (name, version, peer_site))
    if pinned[name] != version:
        sys.exit("setup_hf_peer.sh: %s is %s, pinned %s" % (name, version, pinned[name]))
print("setup_hf_peer.sh: transformers %s, tokenizers %s on TensorFlow %s (the project's)"
      % (transformers.__version__, tokenizers.__version__, tf.__version__))
PYEOF
echo "${PINS[*]}" > "$MARKER"
