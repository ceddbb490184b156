#!/usr/bin/env bash
# Install bitsandbytes 0.50.2 (the PyPI wheel, about 43 MB) and the subject into a venv that has torch.
#
#   subjects/bitsandbytes/install.sh [VENV]
#
# VENV  a Python venv that already has torch (default: .venv-torch at the repo root, torch 2.11.0)
#
# Idempotent: with everything in place it only checks. bitsandbytes is installed under a constraint that keeps
# the venv's torch. The kit (subjects/kit) and the subject package are installed editable.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VENV=${1:-$REPO/.venv-torch}
VERSION=${BITSANDBYTES_VERSION:-0.50.2}
PY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1

[ -x "$PY" ] || { echo "install.sh: no python at $PY" >&2; exit 2; }
torch=$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null) \
  || { echo "install.sh: torch is not installed in $VENV" >&2; exit 2; }

have=$("$PY" -c "from importlib.metadata import version; print(version('bitsandbytes'))" 2>/dev/null || true)
if [ "$have" != "$VERSION" ]; then
  "$PY" -m pip install --quiet "bitsandbytes==$VERSION" -c <(echo "torch==$torch") \
    || { echo "install.sh: installing bitsandbytes==$VERSION failed" >&2; exit 1; }
fi
if ! (cd / && "$PY" -c 'import devsim_subject_kit, jsonschema, jsonschema_rs' 2>/dev/null); then
  "$PY" -m pip install --quiet -e "$REPO/subjects/kit[fast]" -c <(echo "torch==$torch") \
    || { echo "install.sh: installing the subject kit (subjects/kit) failed" >&2; exit 1; }
fi
if ! (cd / && "$PY" -c 'import devsim_subject_bitsandbytes' 2>/dev/null); then
  "$PY" -m pip install --quiet --no-deps -e "$HERE"
fi
# Smoke check: the subject reads bitsandbytes' declaration from its files (bitsandbytes itself is not imported).
(cd / && "$PY" -c 'from devsim_subject_bitsandbytes import declare; print("families", declare.read().families)') >&2
echo "install.sh: bitsandbytes $VERSION ready in $VENV (torch $torch)"
