#!/usr/bin/env bash
# The live runs on a lent GPU machine, from the bundle tools/live/bundle.sh packed into .live/.
#
#   tools/live/gpu-run.sh STEP...     (in the repository root there; results under $OUT, default ./live-out)
#
# STEP is one of:
#   corpus     devsim run --live --subject subjects/gptqmodel.toml over scenarios/ (no JIT build)   corpus.json,
#              and its live record (docs/live-record.md)                                        live-record.toml
#   jit        the live warmup scenarios again with GPTQModel's own JIT builds (DEVSIM_GPTQMODEL_JIT=1,
#              step_timeout_s = 290), AWQ/FP8 first, then GPTQ        jit-awq_fp8.json, jit-gptq.json
#   filtered   the scenarios FILTER names (devsim run --filter), JIT builds on                   filtered.json
#   bnb-table  tools/live/bnb_table.py: the seed's bitsandbytes table                           bnb-table.json
#   bnb-tests  bitsandbytes' own tests (the three files of docs/own-suite.md), no devsim          bnb-gpu.xml
# Every step first installs the bundle (idempotent): the wheels into the machine's python, GPTQModel's sdist
# unpacked to /tmp/gptqmodel-src. A step's failure is reported and the next step still runs; the exit code is
# the worst step's.
set -uo pipefail

OUT=${OUT:-$PWD/live-out}
B=$PWD/.live
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-16}
export DEVSIM_GPTQMODEL_TESTS=$B/gptqmodel-tests
export PATH=$(dirname "$(command -v "$PY")"):$B/bin:$PATH
GSRC=/tmp/gptqmodel-src

timed() {
  local label=$1 started=$SECONDS code
  shift
  "$@"
  code=$?
  echo "$label: $((SECONDS - started)) s wall, exit $code" >&2
  return $code
}

setup() {
  if [ ! -f /tmp/.devsim-live-installed ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$B"/whl/*.whl || return 1
    tar xzf "$B/gptqmodel-src.tar.gz" -C /tmp || return 1
    touch /tmp/.devsim-live-installed
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c 'import torch, triton, bitsandbytes; print("torch", torch.__version__, "triton", triton.__version__, "bitsandbytes", bitsandbytes.__version__)'
}

corpus() {
  timed corpus devsim run --live --subject subjects/gptqmodel.toml --subject-src "$GSRC" \
    --format json --write-live-record "$OUT/live-record.toml" scenarios >"$OUT/corpus.json"
}

jit() {
  # one run per scenario file, so that what finished comes back when a later build outlasts the call
  sed 's/^step_timeout_s = .*/step_timeout_s = 290/' subjects/gptqmodel.toml >subjects/gptqmodel-jit.toml
  local code=0 file
  for file in awq_fp8 gptq; do
    DEVSIM_GPTQMODEL_JIT=1 timed "jit-$file" devsim run --live --subject subjects/gptqmodel-jit.toml \
      --subject-src "$GSRC" --format json --filter "live/h200_${file}_kernels_warm_up*" scenarios \
      >"$OUT/jit-$file.json" || code=$?
  done
  rm -f subjects/gptqmodel-jit.toml
  return $code
}

filtered() {
  # the scenarios FILTER selects (devsim's --filter), with JIT builds on: one case re-measured on its own
  sed 's/^step_timeout_s = .*/step_timeout_s = 290/' subjects/gptqmodel.toml >subjects/gptqmodel-jit.toml
  DEVSIM_GPTQMODEL_JIT=1 timed filtered devsim run --live --subject subjects/gptqmodel-jit.toml \
    --subject-src "$GSRC" --format json --filter "${FILTER:?filtered needs FILTER}" scenarios >"$OUT/filtered.json"
  local code=$?
  rm -f subjects/gptqmodel-jit.toml
  return $code
}

bnb-table() {
  PYTHONPATH=$GSRC timed bnb-table "$PY" tools/live/bnb_table.py --json "$OUT/bnb-table.json"
}

bnb-tests() {
  (cd "$B/bnb" && timed bnb-tests "$PY" -m pytest -p no:cacheprovider \
    tests/test_cuda_setup_evaluator.py tests/test_linear8bitlt.py tests/test_parametrize.py \
    --junitxml="$OUT/bnb-gpu.xml" -q 2>&1 | tail -15)
}

setup || { echo "gpu-run: failed to install the bundle" >&2; exit 2; }
worst=0
for step in "$@"; do
  echo "== $step"
  "$step"
  code=$?
  echo "== $step: exit $code"
  [ "$code" -gt "$worst" ] && worst=$code
done
exit "$worst"
