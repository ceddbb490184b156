//! Human text for a terminal: one scenario's report (its status line and, for a failure, every difference
//! with the failing step's trace). Printing is the caller's; this only renders.

use std::fmt::Write;

use crate::shown::field;

use crate::runner::{ScenarioReport, Status};

/// One scenario's result for a terminal: a status line, and for failures every difference with the
/// failing step's trace. Every piece of user text (the name with its matrix values, the path, the
/// description, reasons, messages, trace entries) is placed through [`field`], so none can start a line of
/// its own or reach the terminal raw ([`crate::shown`]).
pub fn scenario(report: &ScenarioReport) -> String {
    crate::shown::lines(&placed(report)).into_owned()
}

fn placed(report: &ScenarioReport) -> String {
    let name = field(&report.name);
    let mut out = String::new();
    match &report.status {
        Status::Passed => {
            let _ = writeln!(out, "ok      {name}");
        }
        Status::Skipped(reason) => {
            let _ = writeln!(out, "skipped {name} ({})", field(reason));
        }
        Status::NotApplicable(reason) => {
            let _ = writeln!(out, "n/a     {name} ({})", field(reason));
        }
        Status::SetAside(reason) => {
            let _ = writeln!(out, "partial {name} ({})", field(reason));
        }
        Status::Errored(error) => {
            let _ = writeln!(out, "ERROR   {name}");
            let _ = writeln!(out, "  scenario: {}", field(&report.path));
            let _ = writeln!(
                out,
                "  {} (a failure of devsim, not a finding about the code under test)",
                field(error)
            );
        }
        Status::Failed => {
            let _ = writeln!(out, "FAILED  {name}");
            let _ = writeln!(out, "  scenario: {}", field(&report.path));
            if !report.subject.is_empty() {
                let _ = writeln!(out, "  subject: {}", field(&report.subject));
            }
            let _ = writeln!(out, "  what it pins: {}", field(&report.description));
            for step in report.steps.iter().filter(|s| !s.mismatches.is_empty()) {
                let _ = writeln!(
                    out,
                    "  step {} ({}, line {}):",
                    step.number, step.action, step.line
                );
                for m in &step.mismatches {
                    let _ = writeln!(
                        out,
                        "    {}{}: expected {}, got {}",
                        field(&m.key),
                        level_tag(m),
                        field(&m.expected),
                        field(&m.actual)
                    );
                }
                let _ = writeln!(out, "    trace of the step:");
                if step.trace.is_empty() {
                    let _ = writeln!(out, "      (empty)");
                }
                for entry in &step.trace {
                    let _ = writeln!(out, "      {}", field(entry));
                }
                if !step.elided.is_empty() {
                    let _ = writeln!(
                        out,
                        "      (and {} more repetition(s) that recorded what the first did, entries {}..{} above: counted, not stored)",
                        step.elided.repetitions(),
                        step.elided.first.start + 1,
                        step.elided.first.end
                    );
                }
            }
            for m in &report.trace_mismatches {
                let _ = writeln!(
                    out,
                    "  {}{}: expected {}, got {}",
                    field(&m.key),
                    level_tag(m),
                    field(&m.expected),
                    field(&m.actual)
                );
            }
        }
    }
    out
}

/// ` [policy:rule]` after a mismatch's key, or nothing for a breakdown.
fn level_tag(m: &crate::runner::Mismatch) -> String {
    m.conformance
        .as_ref()
        .map(|c| format!(" [{}]", field(c)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_in_user_text_are_shown_escaped() {
        let report = ScenarioReport {
            name: "evil\u{1b}[2J.toml".into(),
            path: "evil.toml".into(),
            description: "a \u{202e}reversed description".into(),
            status: Status::Failed,
            steps: Vec::new(),
            trace_mismatches: Vec::new(),
            subject: String::new(),
            stopped_decided_by: Default::default(),
            left_out: Vec::new(),
        };
        let shown = scenario(&report);
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(shown.contains("evil\\u{1b}[2J.toml"), "{shown:?}");
        assert!(!shown.contains('\u{202e}'), "{shown:?}");
    }
}
