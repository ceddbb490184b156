#!/usr/bin/env bash
# Install vLLM 0.33.0 (PyPI) and the subject into their own venv: vLLM pins torch 2.14.0, so it cannot share
# the torch 2.11.0 venv of the other subjects.
#
#   subjects/vllm/install.sh [VENV]
#
# VENV  the venv to create or reuse (default: .venv-vllm at the repo root)
#
# It needs about 10 GB of disk (a 336 MB wheel, 202 packages, a 9.4 GB venv) and about 11 minutes on a
# 2-core machine; it checks the free disk first. Idempotent: with everything in place it only checks.
# vLLM's CUDA platform module links libcuda.so.1, which the subject answers with devsim's fake driver:
# run scripts/build-fake-drivers too.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VENV=${1:-$REPO/.venv-vllm}
VERSION=${VLLM_VERSION:-0.33.0}
NEED_GIB=12
export PIP_DISABLE_PIP_VERSION_CHECK=1

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
have=$("$PY" -c "from importlib.metadata import version; print(version('vllm'))" 2>/dev/null || true)
if [ "$have" != "$VERSION" ]; then
  free=$(df -Pk "$(dirname "$VENV")" | awk 'NR == 2 { printf "%d", $4 / 1048576 }')
  if [ "$free" -lt "$NEED_GIB" ]; then
    echo "install.sh: vLLM $VERSION and its torch need about $NEED_GIB GiB; only $free GiB free" >&2
    exit 1
  fi
  "$PY" -m pip install --quiet "vllm==$VERSION" \
    || { echo "install.sh: installing vllm==$VERSION failed" >&2; exit 1; }
fi
if ! (cd / && "$PY" -c 'import devsim_subject_kit, jsonschema, jsonschema_rs' 2>/dev/null); then
  "$PY" -m pip install --quiet -e "$REPO/subjects/kit[fast]" \
    || { echo "install.sh: installing the subject kit (subjects/kit) failed" >&2; exit 1; }
fi
if ! (cd / && "$PY" -c 'import devsim_subject_vllm' 2>/dev/null); then
  "$PY" -m pip install --quiet --no-deps -e "$HERE"
fi
"$PY" -m pip install --quiet pytest >/dev/null
torch=$("$PY" -c 'import torch; print(torch.__version__)')
echo "install.sh: vLLM $VERSION ready in $VENV (torch $torch)"
