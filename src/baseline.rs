//! Baselines: each scenario's outcome for one subject, committed, so a change in EITHER direction (a fix or
//! a regression) is noticed and the baseline updated on purpose.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::findings::Finding;
use crate::runner::{ScenarioReport, Status};

/// Every scenario's outcome for one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The subject the outcomes belong to.
    pub subject: String,
    /// Scenario name → `passed`, `failed: <first difference>`, `skipped: <reason>`, `not applicable:
    /// <reason>` or `set aside: <reason>`.
    pub outcomes: BTreeMap<String, String>,
    /// Each distinct finding (its signature, `crate::findings`) → the scenarios that show it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub findings: BTreeMap<String, Vec<String>>,
}

/// One scenario whose outcome is not the baseline's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The scenario.
    pub scenario: String,
    /// The baseline's outcome, or `None` for a scenario the baseline lacks.
    pub expected: Option<String>,
    /// This run's outcome, or `None` for a scenario that did not run.
    pub actual: Option<String>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |o: &Option<String>| o.clone().unwrap_or_else(|| "(absent)".into());
        write!(
            f,
            "{}: baseline {}, now {}",
            self.scenario,
            show(&self.expected),
            show(&self.actual)
        )
    }
}

/// A baseline file that cannot be read or written.
#[derive(Debug, Error)]
pub enum BaselineError {
    /// Reading or writing failed.
    #[error("{action} baseline {path}: {source}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file would be written through a link or could not be written
    /// ([`crate::contain::write_file`]).
    #[error(transparent)]
    Write(#[from] crate::contain::WriteError),
    /// The file cannot be read: not a regular file inside its folder, too large, not UTF-8.
    #[error("read baseline {path}: {message}")]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why, without any of its content.
        message: String,
    },
    /// The file is not a baseline.
    #[error("parse baseline {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was expected, with the line.
        message: String,
    },
}

/// A scenario's outcome on one line, as a baseline records it: the [`Status`]'s word
/// ([`crate::output::Outcome::word`]), then the first line of its cause or first difference (`passed`,
/// `failed: <first difference>`, `skipped: <reason>`).
pub fn outcome(report: &ScenarioReport) -> String {
    match &report.status {
        Status::Passed => report.status.word().into(),
        Status::Skipped(_)
        | Status::NotApplicable(_)
        | Status::SetAside(_)
        | Status::Errored(_) => {
            let reason = report.status.reason().unwrap_or_default();
            format!("{}: {}", report.status.word(), first_line(&reason))
        }
        Status::Failed => {
            let first = report
                .steps
                .iter()
                .find_map(|step| {
                    step.mismatches
                        .first()
                        .map(|m| format!("step {} {}", step.number, line(m)))
                })
                .or_else(|| report.trace_mismatches.first().map(line))
                .unwrap_or_else(|| "(no difference recorded)".into());
            format!("failed: {first}")
        }
    }
}

fn line(m: &crate::runner::expect::Mismatch) -> String {
    let level = m
        .conformance
        .as_ref()
        .map(|c| format!(" [{c}]"))
        .unwrap_or_default();
    first_line(&format!(
        "{}{level}: expected {}, got {}",
        m.key, m.expected, m.actual
    ))
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

impl Baseline {
    /// The outcomes of a run and its distinct findings.
    pub fn of(subject: &str, reports: &[ScenarioReport], findings: &[Finding]) -> Self {
        Self {
            subject: subject.to_string(),
            outcomes: reports
                .iter()
                .map(|r| (r.name.clone(), outcome(r)))
                .collect(),
            findings: findings
                .iter()
                .map(|f| (f.signature.to_string(), f.scenarios.clone()))
                .collect(),
        }
    }

    /// Reads a baseline file (TOML).
    pub fn read(path: &Path) -> Result<Self, BaselineError> {
        // Contained like every file devsim reads from a user's tree: a link out of its folder, a FIFO or a
        // huge file is refused before a byte of it is read.
        let text = crate::scenario::load::corpus::read_in_folder(path).map_err(|error| {
            BaselineError::Refused {
                path: path.to_path_buf(),
                message: error.message,
            }
        })?;
        toml::from_str(&text).map_err(|error| BaselineError::Parse {
            path: path.to_path_buf(),
            message: error.to_string().trim().replace('\n', " "),
        })
    }

    /// Writes the baseline as TOML.
    pub fn write(&self, path: &Path) -> Result<(), BaselineError> {
        let text = toml::to_string(self).map_err(|error| BaselineError::Parse {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
        let header = "# devsim baseline: each scenario's outcome for this subject (devsim run --subject … --write-baseline).\n";
        // Never through a link, written whole (a temporary file renamed into place).
        crate::contain::write_beside(
            path,
            format!("{header}{text}").as_bytes(),
            crate::contain::Permissions::Kept,
        )?;
        Ok(())
    }

    /// Every scenario whose outcome differs, in either direction, plus scenarios only one side has; then
    /// every finding that appeared, went, or is now shown by other scenarios (named `finding: <signature>`).
    pub fn compare(&self, now: &Baseline) -> Vec<Difference> {
        let mut differences = self.compare_outcomes(now);
        let mut signatures: Vec<&String> =
            self.findings.keys().chain(now.findings.keys()).collect();
        signatures.sort();
        signatures.dedup();
        let show = |scenarios: Option<&Vec<String>>| {
            scenarios.map(|s| format!("{} scenario(s): {}", s.len(), s.join(", ")))
        };
        for signature in signatures {
            let (before, after) = (self.findings.get(signature), now.findings.get(signature));
            if before != after {
                differences.push(Difference {
                    scenario: format!("finding: {signature}"),
                    expected: show(before),
                    actual: show(after),
                });
            }
        }
        differences
    }

    /// The baseline of only `scenarios`: their outcomes, and each finding as far as they show it.
    pub fn restricted_to<'a>(&self, scenarios: impl IntoIterator<Item = &'a String>) -> Baseline {
        let keep: std::collections::BTreeSet<&String> = scenarios.into_iter().collect();
        Baseline {
            subject: self.subject.clone(),
            outcomes: self
                .outcomes
                .iter()
                .filter(|(name, _)| keep.contains(name))
                .map(|(name, outcome)| (name.clone(), outcome.clone()))
                .collect(),
            findings: self
                .findings
                .iter()
                .filter_map(|(signature, shown)| {
                    let shown: Vec<String> =
                        shown.iter().filter(|s| keep.contains(s)).cloned().collect();
                    (!shown.is_empty()).then(|| (signature.clone(), shown))
                })
                .collect(),
        }
    }

    fn compare_outcomes(&self, now: &Baseline) -> Vec<Difference> {
        let mut names: Vec<&String> = self.outcomes.keys().chain(now.outcomes.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|name| {
                let expected = self.outcomes.get(name);
                let actual = now.outcomes.get(name);
                (expected != actual).then(|| Difference {
                    scenario: name.clone(),
                    expected: expected.cloned(),
                    actual: actual.cloned(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(pairs: &[(&str, &str)]) -> Baseline {
        Baseline {
            subject: "s".into(),
            outcomes: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            findings: BTreeMap::new(),
        }
    }

    #[test]
    fn a_fix_a_regression_and_a_new_or_missing_scenario_are_all_differences() {
        let old = baseline(&[
            ("a", "passed"),
            ("b", "failed: step 1 family: expected rocm, got cuda"),
            ("c", "passed"),
            ("gone", "passed"),
        ]);
        let new = baseline(&[
            ("a", "failed: step 1 ok: expected true, got false"),
            ("b", "passed"),
            ("c", "passed"),
            ("new", "skipped: subject s does not record amd_arch"),
        ]);
        let names: Vec<String> = old
            .compare(&new)
            .iter()
            .map(|d| d.scenario.clone())
            .collect();
        assert_eq!(names, ["a", "b", "gone", "new"]);
        assert!(old.compare(&old).is_empty());
    }

    #[test]
    fn a_baseline_survives_a_round_trip_through_its_file() {
        let dir = tempfile::tempdir().expect("scratch");
        let path = dir.path().join("baseline.toml");
        let written = baseline(&[("normalization/x.toml", "skipped: why")]);
        written.write(&path).expect("write");
        assert_eq!(Baseline::read(&path).expect("read"), written);
    }
}
