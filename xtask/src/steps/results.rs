//! The steps that hold the subjects to their committed results: every baseline, the generated
//! reproductions (regenerated, then run both ways) and the revert table.

use xshell::cmd;

use crate::ci::{Ci, Job, StepError, last_lines, lines_starting};

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
        let text = run_against_baseline(
            ci,
            cmd!(
                ci.sh(),
                "cargo run --locked --release -q -- run --quiet --subject {file} --baseline {baseline} {repro...}"
            ),
            &log,
            subject,
            subject,
        )?;
        let summary = format!("subject {subject}:");
        // and whether the subject's committed live record is stale (it then confirms nothing)
        for line in lines_starting(&text, &[&summary, "live record "]) {
            ci.say(line);
        }
        for line in text.lines().filter(|line| is_failed_count(line)) {
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

/// Runs `job`, a `devsim run … --baseline` of the subject its summary line calls `name`, its output into
/// `log`, and gives that output when the run passed and matched its baseline; otherwise the lines that say
/// why are shown and the step fails, naming the subject as `label`.
pub fn run_against_baseline<'a>(
    ci: &Ci,
    job: impl Into<Job<'a>>,
    log: &str,
    name: &str,
    label: &str,
) -> Result<String, StepError> {
    let ran = ci.run_logged(job, log)?;
    if ran.success {
        return Ok(ran.text);
    }
    show_failure(ci, &ran.text, name);
    Err(StepError::Subject {
        subject: label.to_string(),
        what: "the run failed or differs from its baseline",
        log: log.to_string(),
    })
}

/// What a failed subject run's log says about it: its baseline, summary and error lines, else its end.
fn show_failure(ci: &Ci, text: &str, subject: &str) {
    let summary = format!("subject {subject}:");
    let told = lines_starting(text, &["baseline changed", &summary, "error"]);
    let shown = if told.is_empty() {
        last_lines(text, 40)
    } else {
        told
    };
    for line in shown {
        ci.say(line);
    }
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
