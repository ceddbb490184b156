//! The steps that hold the subjects to their committed results: every baseline, the generated
//! reproductions (regenerated, then run both ways) and the revert table.

use xshell::cmd;

use crate::ci::{Ci, Job, StepError, lines_starting};
use crate::steps::python::show_failure;

/// Each subject file under `subjects/` run against the whole corpus, its baseline, and whether its generated
/// reproductions are regenerated into `subjects/NAME/repro` (the shipped projects', docs/reproductions.md).
const BASELINES: &[(&str, &str, bool)] = &[
    ("gptqmodel", "subjects/gptqmodel/baseline.toml", true),
    (
        "gptqmodel-seedfix",
        "subjects/gptqmodel/baseline-seedfix.toml",
        false,
    ),
    (
        "gptqmodel-seedfix2",
        "subjects/gptqmodel/baseline-seedfix2.toml",
        false,
    ),
    ("bitsandbytes", "subjects/bitsandbytes/baseline.toml", true),
    ("vllm", "subjects/vllm/baseline.toml", true),
];

/// The folders of committed reproductions, which the runs above regenerate.
const REPRO_DIRS: &[&str] = &[
    "subjects/gptqmodel/repro",
    "subjects/bitsandbytes/repro",
    "subjects/vllm/repro",
];

pub fn baselines(ci: &Ci) -> Result<(), StepError> {
    for &(subject, baseline, regenerates) in BASELINES {
        let file = format!("subjects/{subject}.toml");
        let repro: Vec<String> = if regenerates {
            vec!["--repro".into(), format!("subjects/{subject}/repro")]
        } else {
            Vec::new()
        };
        let log = format!("target/{subject}-run.txt");
        let ran = ci.run_logged(
            cmd!(
                ci.sh(),
                "cargo run --locked --release -q -- run --quiet --subject {file} --baseline {baseline} {repro...}"
            ),
            &log,
        )?;
        if !ran.success {
            show_failure(ci, &ran.text, subject);
            return Err(StepError::Subject {
                subject: subject.to_string(),
                what: "the run failed or differs from its baseline",
                log,
            });
        }
        let summary = format!("subject {subject}:");
        for line in lines_starting(&ran.text, &[&summary]) {
            ci.say(line);
        }
        for line in ran.text.lines().filter(|line| is_failed_count(line)) {
            ci.say(line);
        }
    }
    ci.run(cmd!(
        ci.sh(),
        ".venv-torch/bin/python subjects/gptqmodel/tools/findings.py"
    ))?;
    ci.run(cmd!(
        ci.sh(),
        "git diff --exit-code subjects/gptqmodel/findings.md"
    ))?;
    // the committed reproductions are the ones the runs generate: none changed, none new, none gone
    ci.run(cmd!(ci.sh(), "git add --intent-to-add {REPRO_DIRS...}"))?;
    ci.run(cmd!(ci.sh(), "git diff --exit-code -- {REPRO_DIRS...}"))
}

/// A run's `N failed scenario…` line.
fn is_failed_count(line: &str) -> bool {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && line[digits..].starts_with(" failed scenario")
}

pub fn repro(ci: &Ci) -> Result<(), StepError> {
    for dir in REPRO_DIRS {
        ci.run(cmd!(ci.sh(), "scripts/check-repro {dir} 1"))?;
    }
    for overlay in ["seedfix", "seedfix2"] {
        ci.run(
            Job::from(cmd!(
                ci.sh(),
                "scripts/check-repro subjects/gptqmodel/repro 0"
            ))
            .env("DEVSIM_GPTQMODEL_OVERLAY", overlay),
        )?;
    }
    Ok(())
}

pub fn reverts(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(ci.sh(), "cargo build --locked --release -q"))?;
    ci.run(cmd!(
        ci.sh(),
        ".venv-torch/bin/python subjects/gptqmodel/tools/reverts.py --devsim target/release/devsim"
    ))?;
    ci.run(cmd!(
        ci.sh(),
        "git diff --exit-code subjects/gptqmodel/README.md"
    ))
}

#[cfg(test)]
mod tests {
    use super::is_failed_count;

    #[test]
    fn a_failed_count_line_is_digits_then_failed_scenario() {
        assert!(is_failed_count("12 failed scenarios:"));
        assert!(is_failed_count("1 failed scenario"));
        assert!(!is_failed_count("failed scenarios: 12"));
        assert!(!is_failed_count("12 passed"));
    }
}
