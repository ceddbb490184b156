#!/usr/bin/env bash
# Packs what a live run on a lent GPU machine needs into .live/ (ignored by git), for tools/live/gpu-run.sh.
#
#   tools/live/bundle.sh GPTQMODEL_REPO BITSANDBYTES_REPO
#
# GPTQMODEL_REPO and BITSANDBYTES_REPO are git repositories (a clone or a bare mirror) of GPTQModel and
# bitsandbytes: their tests are what the live runs judge by (GPTQModel's tests/kernels/test_gptq.py states the
# kernels' tolerances; bitsandbytes' tests/ are its own suite). GPTQModel itself comes from the unpacked sdist
# the subject uses (../gptqmodel-src, subjects/gptqmodel/install.sh). The GPU machine has python 3.12, torch and
# no network: GPTQModel's pure-Python requirements travel as wheels, those published only as sdists built here
# with a python 3.12 (PYTHON312, default `python3.12`), and bitsandbytes' wheel keeps only its CPU and CUDA 13
# libraries (the machine's torch is cu130; the others would take 37 MB of the 64 MiB a call may carry).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
GPTQMODEL_REPO=${1:?usage: bundle.sh GPTQMODEL_REPO BITSANDBYTES_REPO}
BNB_REPO=${2:?usage: bundle.sh GPTQMODEL_REPO BITSANDBYTES_REPO}
SRC=${GPTQMODEL_SRC:-$(dirname "$REPO")/gptqmodel-src}
PY312=${PYTHON312:-python3.12}
OUT=$REPO/.live
grep -qx '/.live/' "$REPO/.git/info/exclude" 2>/dev/null || echo '/.live/' >>"$REPO/.git/info/exclude"
rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/whl" "$OUT/gptqmodel-tests/kernels" "$OUT/bnb"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

(cd "$REPO" && cargo build --release --quiet) && cp "$REPO/target/release/devsim" "$OUT/bin/"
tar czf "$OUT/gptqmodel-src.tar.gz" --exclude=__pycache__ -C "$(dirname "$SRC")" "$(basename "$SRC")"
git -C "$GPTQMODEL_REPO" show HEAD:tests/kernels/test_gptq.py >"$OUT/gptqmodel-tests/kernels/test_gptq.py"
git -C "$GPTQMODEL_REPO" rev-parse HEAD >"$OUT/gptqmodel-tests/REVISION"
git -C "$BNB_REPO" archive HEAD tests pyproject.toml | tar x -C "$OUT/bnb"
git -C "$BNB_REPO" rev-parse HEAD >"$OUT/bnb/REVISION"

platforms=()
for n in 17 24 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
"$PY312" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --platform manylinux2014_x86_64 -d "$tmp/bin" \
  bitsandbytes==0.50.2 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 \
  rpds-py==2026.9.1 dill==0.4.1 parameterized==0.9.0
"$PY312" -m pip wheel -q --no-deps -w "$OUT/whl" \
  logbar==0.4.15 tokenicer==0.0.14 device-smi==0.5.7 pypcre==0.6.4 defuser==0.0.28
for wheel in "$tmp"/bin/*.whl; do
  case "$(basename "$wheel")" in
    bitsandbytes-*) "$PY312" - "$wheel" "$OUT/whl/$(basename "$wheel")" <<'EOF' ;;
import re, sys, zipfile
drop = re.compile(r"bitsandbytes/libbitsandbytes_(cuda1[12]\d|rocm\d+|xpu\d+)\.so$")
with zipfile.ZipFile(sys.argv[1]) as zi, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as zo:
    for info in zi.infolist():
        if drop.match(info.filename):
            continue
        data = zi.read(info.filename)
        if info.filename.endswith("/RECORD"):
            data = b"\n".join(l for l in data.split(b"\n") if not drop.match(l.split(b",")[0].decode()))
        zo.writestr(info, data)
EOF
    *) cp "$wheel" "$OUT/whl/" ;;
  esac
done
du -sh "$OUT"
