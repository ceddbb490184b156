#!/usr/bin/env bash
# Install GPTQModel 7.7.0 from its sdist (source only, no CUDA extensions) for the devsim subject.
#
#   subjects/gptqmodel/install.sh [VENV [SRC_DIR]]
#
# VENV     a Python venv that already has torch (default: .venv-torch at the repo root, torch 2.11.0)
# SRC_DIR  where the GPTQModel sdist is unpacked, outside the repository, never committed (default:
#          gptqmodel-src next to the repository, the `source` subjects/gptqmodel.toml gives the subject)
#
# Idempotent: a second run with everything in place only checks. GPTQModel asks for torch>=2.14.1;
# its other requirements are installed under a constraint that keeps the venv's torch (2.11.0 by
# default, override with TORCH_VERSION), and GPTQModel itself runs from SRC_DIR with PYTHONPATH.
# Afterwards the subject kit and the subject package are installed editable into VENV, with pytest and pytest-xdist.
#
# GPTQMODEL_SRC_ONLY=1 stops after unpacking (and compiling) the sdist: a second release to judge with
# `devsim run --subject-src SRC_DIR`, on the venv the first install made (another release's requirements,
# e.g. 7.3.4's numpy==2.2.6, would change the venv under the first).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VENV=${1:-$REPO/.venv-torch}
SRC=${2:-$(dirname "$REPO")/gptqmodel-src}
VERSION=${GPTQMODEL_VERSION:-7.7.0}
TORCH_VERSION=${TORCH_VERSION:-2.11.0}
case "$(cd "$(dirname "$SRC")" 2>/dev/null && pwd)/" in
  "$REPO"/*) echo "install.sh: $SRC is inside the repository; unpack GPTQModel outside it" >&2; exit 2 ;;
esac
PY="$VENV/bin/python"
export BUILD_CUDA_EXT=0 PIP_DISABLE_PIP_VERSION_CHECK=1

[ -x "$PY" ] || { echo "install.sh: no python at $PY" >&2; exit 2; }
have_torch=$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null) \
  || { echo "install.sh: torch is not installed in $VENV" >&2; exit 2; }
[ "$have_torch" = "$TORCH_VERSION" ] \
  || echo "install.sh: warning: $VENV has torch $have_torch, constraining to it instead of $TORCH_VERSION" >&2
TORCH_VERSION=$have_torch

# 1. The sdist, unpacked into SRC (checked by its PKG-INFO version).
if ! grep -qx "Version: $VERSION" "$SRC/PKG-INFO" 2>/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$PY" -m pip download --quiet --no-deps --no-binary :all: "gptqmodel==$VERSION" -d "$tmp"
  if [ -e "$SRC" ] && [ -n "$(ls -A "$SRC" 2>/dev/null)" ] && ! grep -qx "Name: [Gg][Pp][Tt][Qq][Mm]odel" "$SRC/PKG-INFO" 2>/dev/null; then
    echo "install.sh: $SRC exists and is not an unpacked GPTQModel sdist; not touching it" >&2
    exit 2
  fi
  rm -rf "$SRC" && mkdir -p "$SRC"
  tar xzf "$tmp"/gptqmodel-"$VERSION".tar.gz -C "$SRC" --strip-components=1
fi
[ -f "$SRC/gptqmodel/__init__.py" ] || { echo "install.sh: $SRC has no gptqmodel package" >&2; exit 1; }
# Its bytecode, as pip writes it for an installed package: GPTQModel runs from SRC, and where
# PYTHONDONTWRITEBYTECODE is set every subject start would otherwise compile its 340 modules again, about
# 1 s of each start. compileall rewrites only stale files, so a re-run is quick. Without it (SRC read-only,
# say) the subject still runs, only each start is slower: a warning, not a failure.
"$PY" -m compileall -q -j 0 "$SRC/gptqmodel" >/dev/null \
  || echo "install.sh: warning: could not compile GPTQModel's bytecode in $SRC; each subject start compiles it" >&2
if [ "${GPTQMODEL_SRC_ONLY:-0}" = 1 ]; then
  # A release that imports torchvision at import (7.3.4 does, 7.7.0 does not) gets the torchvision of the venv's
  # torch (2.11 -> 0.26; TORCHVISION_VERSION overrides) inside SRC, first on the subject's path: never in the venv,
  # where it would change what the first release imports.
  if grep -rqsE --include='*.py' '^(import|from) torchvision' "$SRC/gptqmodel" \
    && ! "$PY" -c 'import torchvision' 2>/dev/null && [ ! -d "$SRC/torchvision" ]; then
    minor=${TORCH_VERSION#*.}; minor=${minor%%.*}
    "$PY" -m pip install --quiet --no-deps --target "$SRC" "torchvision==${TORCHVISION_VERSION:-0.$((minor + 15)).0}"
  fi
  echo "install.sh: GPTQModel $VERSION unpacked in $SRC (source only; judge it with --subject-src $SRC)"
  exit 0
fi

# 2. Its requirements, minus torch (kept), build tools (no build here) and torchao (not imported by the
#    dispatch code; its releases pin newer torch), under a torch constraint.
constraints=$(mktemp)
reqs=$(mktemp)
echo "torch==$TORCH_VERSION" >"$constraints"
grep -vE '^\s*(#|$)' "$SRC/requirements.txt" \
  | grep -viE '^\s*(torch|ninja|maturin|torchao)\b' >"$reqs"
echo "pytest" >>"$reqs"
# the kit's tests run a --devsim-host session under pytest-xdist (-n 2), as projects do
echo "pytest-xdist" >>"$reqs"
if ! "$PY" - "$reqs" <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
from packaging.requirements import Requirement
for line in open(sys.argv[1]):
    r = Requirement(line.strip())
    if r.marker and not r.marker.evaluate():
        continue
    try:
        v = version(r.name)
    except PackageNotFoundError:
        sys.exit(1)
    if r.specifier and not r.specifier.contains(v, prereleases=True):
        sys.exit(1)
PYEOF
then
  "$PY" -m pip install --quiet -r "$reqs" -c "$constraints"
fi
rm -f "$reqs"

# 3. Optional kernel packages whose validate_once() GPTQModel runs before any device check (kernels.toml
#    `requires`): with them installed their verdicts are observed instead of skipped. Each must import on a
#    CPU-only machine with the venv's torch; an install or import failure stops here, naming the package.
#    llama-cpp-python has no wheel on PyPI: pip builds its sdist here, for the CPU only (GGML_NATIVE off, no
#    examples, tools or server), which is what GGUFCppKernel runs on; the CUDA kernel's verdicts need a CUDA
#    build and stay skipped (kernels.toml `requires_library`). It is built unoptimized (-O0): the subject loads
#    its libraries, binds their symbols and validates, and the corpus runs no GGUF arithmetic on the CPU, so
#    only build time changes (on a 2-core machine 460 s of CPU time instead of 812 s at -O3; 2026-12-07).
#    Not installed: bitblas (0.1.0.post1's bundled TVM links libcuda.so.1, libcudart.so.12 and libnvrtc.so.12,
#    so `import bitblas` fails without the NVIDIA driver) and mlx (see README.md).
OPTIONAL=${GPTQMODEL_OPTIONAL:-bitsandbytes==0.50.2 llama-cpp-python==0.3.36}
for spec in $OPTIONAL; do
  pkg=${spec%%[=<>!~]*}
  want=${spec#"$pkg"}; want=${want#==}
  module=${pkg//-/_} cmake_args=""
  if [ "$pkg" = llama-cpp-python ]; then
    module=llama_cpp
    cmake_args="-DCMAKE_C_FLAGS_RELEASE=-O0 -DCMAKE_CXX_FLAGS_RELEASE=-O0 -DGGML_NATIVE=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF"
  fi
  have=$("$PY" -c "from importlib.metadata import version; print(version('$pkg'))" 2>/dev/null || true)
  if [ -z "$have" ] || { [ -n "$want" ] && [ "$have" != "$want" ]; }; then
    echo "torch==$TORCH_VERSION" >"$constraints"
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$PY" -m pip install --quiet "$spec" -c "$constraints" \
      || { echo "install.sh: installing $spec failed" >&2; rm -f "$constraints"; exit 1; }
  fi
  (cd / && "$PY" -c "import $module" >/dev/null 2>&1) \
    || { echo "install.sh: $spec is installed but does not import on this machine (python -c 'import $module')" >&2; rm -f "$constraints"; exit 1; }
done
rm -f "$constraints"

# 4. devsim's Python subject kit (editable, with jsonschema and its `fast` extra, jsonschema-rs; its pytest
#    plugin registers through the pytest11 entry point), then the subject package itself (editable, no dependencies: above).
if ! (cd / && "$PY" -c 'import devsim_subject_kit, jsonschema, jsonschema_rs' 2>/dev/null); then
  "$PY" -m pip install --quiet -e "$REPO/subjects/kit[fast]" -c <(echo "torch==$TORCH_VERSION") \
    || { echo "install.sh: installing the subject kit (subjects/kit) failed" >&2; exit 1; }
fi
if ! (cd / && "$PY" -c 'import devsim_subject_gptqmodel' 2>/dev/null); then
  "$PY" -m pip install --quiet --no-deps --no-build-isolation -e "$HERE" 2>/dev/null \
    || "$PY" -m pip install --quiet --no-deps -e "$HERE"
fi

# 5. Smoke check: GPTQModel imports from SRC with this torch.
PYTHONPATH="$SRC${PYTHONPATH:+:$PYTHONPATH}" "$PY" -c \
  'import gptqmodel.models._const as c, sys; print("gptqmodel", c.__file__, file=sys.stderr)' >/dev/null
echo "install.sh: GPTQModel $VERSION ready: PYTHONPATH=$SRC, venv $VENV (torch $TORCH_VERSION)"
