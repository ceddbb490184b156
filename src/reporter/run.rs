//! A whole `devsim run`, rendered: the closing lines of human output, the JSON document
//! ([`crate::output::RunOutput`]) and the JUnit report. Each scenario's own human report is printed as it
//! finishes ([`super::human::scenario`]); this is what follows the last one.

use std::path::Path;
use std::time::Duration;

use crate::baseline::Difference;
use crate::findings::{Finding, Mark};
use crate::output::{Mode, RunOutput, SubjectOutput};
use crate::repro::Reproduction;
use crate::runner::{ScenarioReport, Summary};
use crate::scenario::{LoadError, Scenario};
use crate::shown::field;

use super::json;

/// The subject a run judged, as its reports name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedSubject {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What kind of subject it is (`catalog`, `process`, …).
    pub kind: String,
}

/// Everything a finished `devsim run` reports, borrowed from the run.
#[derive(Debug, Clone, Copy)]
pub struct RunReport<'a> {
    /// The subject judged.
    pub subject: &'a JudgedSubject,
    /// Live on this machine, or simulated.
    pub live: bool,
    /// Live: the machine, in one line.
    pub machine: Option<&'a str>,
    /// Live through one of devsim's fake drivers.
    pub fake_driver: bool,
    /// The scenarios run, in order.
    pub scenarios: &'a [Scenario],
    /// Each scenario's report and how long it took, in the order of `scenarios`.
    pub reports: &'a [(ScenarioReport, Duration)],
    /// Files that failed to load.
    pub load_errors: &'a [LoadError],
    /// The counts.
    pub summary: &'a Summary,
    /// The distinct findings of the failures.
    pub findings: &'a [Finding],
    /// Each finding's mark against a live run (`marks[n]` for `findings[n]`).
    pub marks: &'a [Mark],
    /// How the run differs from its baseline, when one was given.
    pub baseline_differences: Option<&'a [Difference]>,
    /// The baseline file written, if any.
    pub wrote_baseline: Option<&'a Path>,
    /// The live record written, if any.
    pub wrote_live_record: Option<&'a Path>,
    /// The folder reproductions were written to, if any, and what was written for each finding.
    pub reproductions: Option<(&'a Path, &'a [Reproduction])>,
}

impl RunReport<'_> {
    /// What human output says after the last scenario's report, one line (or block) per entry: baseline
    /// changes, files written, the findings, the reproductions, and the summary. User text is placed through
    /// [`field`]; the caller prints each entry through human output's rule ([`crate::shown::lines`]).
    pub fn human_closing(&self) -> Vec<String> {
        let mut out = Vec::new();
        for difference in self.baseline_differences.into_iter().flatten() {
            out.push(format!("baseline changed: {}", field(difference)));
        }
        if let Some(path) = self.wrote_baseline {
            out.push(format!("baseline written to {}", field(path.display())));
        }
        if let Some(path) = self.wrote_live_record {
            out.push(format!("live record written to {}", field(path.display())));
        }
        let reproductions = self.reproductions.map_or(&[][..], |(_, written)| written);
        let lines: Vec<String> = reproductions.iter().map(Reproduction::human).collect();
        let findings =
            super::findings::human_with(self.summary.failed, self.findings, self.marks, &lines);
        if !findings.is_empty() {
            out.push(findings.trim_end().to_string());
        }
        if let Some((dir, reproductions)) = self.reproductions {
            let written = reproductions
                .iter()
                .filter(|r| matches!(r, Reproduction::Written(_)))
                .count();
            out.push(format!(
                "reproductions written to {}: {written} script(s), {} finding(s) without one (index: README.md there)",
                field(dir.display()),
                reproductions.len() - written
            ));
        }
        out.push(format!(
            "subject {}: {}",
            field(&self.subject.name),
            self.summary
        ));
        out
    }

    /// The run as the typed JSON document.
    pub fn json(&self) -> RunOutput {
        RunOutput {
            version: crate::output::VERSION,
            mode: if self.live {
                Mode::Live
            } else {
                Mode::Simulated
            },
            machine: self.machine.map(ToString::to_string),
            subject: SubjectOutput {
                name: self.subject.name.clone(),
                version: self.subject.version.clone(),
                kind: self.subject.kind.clone(),
            },
            baseline_differences: self
                .baseline_differences
                .map(|d| d.iter().map(ToString::to_string).collect()),
            scenarios: self
                .reports
                .iter()
                .zip(self.scenarios)
                .map(|((report, took), scenario)| json::scenario(report, scenario, *took))
                .collect(),
            load_errors: self.load_errors.iter().map(json::load_error).collect(),
            summary: json::summary(self.summary),
            findings: self
                .findings
                .iter()
                .zip(self.marks)
                .map(|(finding, mark)| json::finding(finding, mark))
                .collect(),
        }
    }

    /// The run as JUnit XML.
    #[cfg(feature = "cli")]
    pub fn junit(&self) -> Result<String, quick_junit::SerializeError> {
        let run = super::junit::RunInfo {
            subject: format!("{} {}", self.subject.name, self.subject.version),
            mode: if self.live { "live" } else { "simulated" },
            machine: self.machine,
            fake_driver: self.fake_driver,
            marks: scenario_marks(self.findings, self.marks),
        };
        super::junit::render(self.reports, self.load_errors, &run)
    }
}

/// Each scenario that shows a finding → its mark for people: confirmed when any of its findings is.
#[cfg(feature = "cli")]
fn scenario_marks(
    findings: &[Finding],
    marks: &[Mark],
) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for (finding, mark) in findings.iter().zip(marks) {
        for scenario in &finding.scenarios {
            if mark.is_confirmed() || !out.contains_key(scenario) {
                out.insert(scenario.clone(), mark.human());
            }
        }
    }
    out
}
