//! The steps of the Python side: devsim's torch view against torch, the three project subjects (installed,
//! their tests), the pip-installable wheel, and the subjects' lints.

use xshell::cmd;

use crate::ci::{Ci, Job, StepError, lines_starting};
use crate::steps::results::run_against_baseline;

/// The release binary the corpus step builds, which the Python steps hand to the kit as `DEVSIM`.
fn release_devsim(ci: &Ci) -> std::path::PathBuf {
    ci.root().join("target/release/devsim")
}

/// GPTQModel's second release, whose source tree the subject runs on with `--subject-src`.
const GPTQMODEL_SECOND_RELEASE: &str = "7.3.4";

pub fn visible_devices(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(ci.sh(), "cargo build --locked --quiet"))?;
    ci.run(cmd!(
        ci.sh(),
        "timeout 120 .venv-torch/bin/python tools/torch_visible/diff.py --devsim target/debug/devsim --cases 120000"
    ))
}

/// The subject kit's own tests (the protocol, the simulated host, the plugin, the sanitizer, the real-bug
/// runner) on the release binary.
pub fn kit(ci: &Ci) -> Result<(), StepError> {
    let devsim = release_devsim(ci);
    ci.run(
        cmd!(
            ci.sh(),
            ".venv-torch/bin/python -m pytest -q subjects/kit/tests"
        )
        .env("DEVSIM", &devsim),
    )
}

/// GPTQModel 7.7.0's install into the torch venv, and the second release's source tree beside the repository.
pub fn gptqmodel_install(ci: &Ci) -> Result<(), StepError> {
    let venv = ci.root().join(".venv-torch");
    let beside = ci.root().parent().unwrap_or(ci.root()).to_path_buf();
    ci.run(cmd!(ci.sh(), "subjects/gptqmodel/install.sh {venv}"))?;
    let src = beside.join(format!("gptqmodel-src-{GPTQMODEL_SECOND_RELEASE}"));
    ci.run(
        Job::from(cmd!(ci.sh(), "subjects/gptqmodel/install.sh {venv} {src}"))
            .env("GPTQMODEL_VERSION", GPTQMODEL_SECOND_RELEASE)
            .env("GPTQMODEL_SRC_ONLY", "1"),
    )
}

pub fn gptqmodel(ci: &Ci) -> Result<(), StepError> {
    let devsim = release_devsim(ci);
    let beside = ci.root().parent().unwrap_or(ci.root()).to_path_buf();
    ci.run(cmd!(ci.sh(), "cargo build --locked --release --quiet"))?;
    ci.run(cmd!(
        ci.sh(),
        ".venv-torch/bin/python -m pytest -q subjects/gptqmodel/tests"
    ))?;
    ci.in_dir("examples/pytest-gptqmodel", |ci| {
        ci.run(
            Job::from(cmd!(ci.sh(), "../../.venv-torch/bin/python -m pytest -q"))
                .env("PYTHONPATH", beside.join("gptqmodel-src"))
                .env("DEVSIM", &devsim),
        )
    })?;
    // the subject on a second release's source tree (gptqmodel-install unpacked it), against its baseline
    let src = beside.join(format!("gptqmodel-src-{GPTQMODEL_SECOND_RELEASE}"));
    let baseline = format!("subjects/gptqmodel/baseline-{GPTQMODEL_SECOND_RELEASE}.toml");
    let log = format!("target/gptqmodel-{GPTQMODEL_SECOND_RELEASE}-run.txt");
    let subject = format!("gptqmodel {GPTQMODEL_SECOND_RELEASE}");
    let text = run_against_baseline(
        ci,
        cmd!(
            ci.sh(),
            "target/release/devsim run --quiet --subject subjects/gptqmodel.toml --subject-src {src} --baseline {baseline}"
        ),
        &log,
        "gptqmodel",
        &subject,
    )?;
    if text.contains("[breakdown]") {
        return Err(StepError::Subject {
            subject,
            what: "a scenario broke down",
            log,
        });
    }
    for line in lines_starting(&text, &["subject gptqmodel:"]) {
        ci.say(line);
    }
    Ok(())
}

pub fn wheel(ci: &Ci) -> Result<(), StepError> {
    let venv = ci.root().join(".venv-torch");
    let src = ci
        .root()
        .parent()
        .unwrap_or(ci.root())
        .join("gptqmodel-src");
    ci.run(cmd!(ci.sh(), "scripts/check-wheel {venv} {src}"))
}

pub fn bitsandbytes(ci: &Ci) -> Result<(), StepError> {
    let venv = ci.root().join(".venv-torch");
    ci.run(cmd!(ci.sh(), "subjects/bitsandbytes/install.sh {venv}"))?;
    ci.run(cmd!(
        ci.sh(),
        ".venv-torch/bin/python -m pytest -q subjects/bitsandbytes/tests"
    ))?;
    ci.run(cmd!(
        ci.sh(),
        ".venv-torch/bin/python -m pytest -q -p no:cacheprovider tools/live/tests tools/fidelity/tests"
    ))
}

/// The real-bug cases CI runs: three whose two sides both install from the package index (git cases need
/// repository mirrors CI does not have), each against its verdicts in the committed results.
const REAL_BUGS_IN_CI: &[&str] = &[
    "bitsandbytes-quantstate-code-device",
    "bitsandbytes-rocm-version-tag",
    "transformerlens-explicit-ordinal",
];

/// Those cases (`python -m devsim_subject_kit.bugs run --index-only`) on the release binary: a case's error, a
/// false alarm, or a verdict that moved from `docs/real-bugs.json` fails the step.
pub fn real_bugs(ci: &Ci) -> Result<(), StepError> {
    let devsim = release_devsim(ci);
    let only = REAL_BUGS_IN_CI.iter().flat_map(|id| ["--only", id]);
    ci.run(
        cmd!(
            ci.sh(),
            ".venv-torch/bin/python -m devsim_subject_kit.bugs run --index-only --jobs 2 {only...} --against docs/real-bugs.json --json target/real-bugs-ci.json --junit target/real-bugs-ci.xml"
        )
        .env("DEVSIM", &devsim),
    )
}

pub fn vllm_install(ci: &Ci) -> Result<(), StepError> {
    ci.free_gib()?;
    let venv = ci.root().join(".venv-vllm");
    ci.run(cmd!(ci.sh(), "subjects/vllm/install.sh {venv}"))
}

pub fn vllm(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        ".venv-vllm/bin/python -m pytest -q subjects/vllm/tests"
    ))
}

/// The Python the subjects ship, as ruff sees it.
const RUFF_PATHS: &[&str] = &[
    "subjects/gptqmodel",
    "subjects/kit",
    "subjects/bitsandbytes",
    "subjects/vllm",
    "examples/pytest-gptqmodel",
    "tools/fidelity",
    "tools/live",
    "bugs/repro",
];

/// Each mypy run: its configuration and what it checks (from the repository root).
const MYPY_RUNS: &[(&[&str], &[&str])] = &[
    (
        &["--config-file", "subjects/kit/pyproject.toml"],
        &["subjects/kit/src/devsim_subject_kit"],
    ),
    (
        &["--config-file", "subjects/gptqmodel/pyproject.toml"],
        &[
            "subjects/gptqmodel/src/devsim_subject_gptqmodel",
            "subjects/gptqmodel/tools/findings.py",
            "subjects/gptqmodel/tools/reverts.py",
        ],
    ),
    (
        &["--config-file", "subjects/bitsandbytes/pyproject.toml"],
        &["subjects/bitsandbytes/src/devsim_subject_bitsandbytes"],
    ),
    (
        &["--config-file", "subjects/vllm/pyproject.toml"],
        &["subjects/vllm/src/devsim_subject_vllm"],
    ),
    (&["--strict"], &["tools/fidelity/table.py"]),
    (
        &["--ignore-missing-imports"],
        &["tools/live/bnb_table.py", "tools/live/bnb_oracles.py"],
    ),
    // the real-bug cases' repro scripts import the projects they reproduce, which are not installed here
    (&["--ignore-missing-imports"], &["bugs/repro"]),
];

pub fn lint(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        ".venv-torch/bin/pip install --quiet --disable-pip-version-check ruff==0.17.6 mypy==2.4.1"
    ))?;
    ci.run(cmd!(ci.sh(), ".venv-torch/bin/ruff check {RUFF_PATHS...}"))?;
    for &(options, paths) in MYPY_RUNS {
        ci.run(cmd!(
            ci.sh(),
            ".venv-torch/bin/mypy {options...} {paths...}"
        ))?;
    }
    // vLLM's findings scripts are checked from their folder (they import each other as top-level modules)
    ci.in_dir("subjects/vllm/findings", |ci| {
        ci.run(cmd!(
            ci.sh(),
            "../../../.venv-torch/bin/mypy --config-file ../pyproject.toml ."
        ))
    })
}
