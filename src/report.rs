//! Human and JSON output for scenario reports.

use std::fmt::Write;

use crate::runner::{ScenarioReport, Status};

/// One scenario's result for a terminal: a status line, and for failures every difference with the
/// failing step's trace. Control characters from user text (names, descriptions, messages) are escaped.
pub fn human(report: &ScenarioReport) -> String {
    human_raw(report)
        .lines()
        .map(|line| crate::scenario::error::escape_controls(line).into_owned() + "\n")
        .collect()
}

fn human_raw(report: &ScenarioReport) -> String {
    let mut out = String::new();
    match &report.status {
        Status::Passed => {
            let _ = writeln!(out, "ok      {}", report.name);
        }
        Status::Skipped(reason) => {
            let _ = writeln!(out, "skipped {} ({reason})", report.name);
        }
        Status::NotApplicable(reason) => {
            let _ = writeln!(out, "n/a     {} ({reason})", report.name);
        }
        Status::SetAside(reason) => {
            let _ = writeln!(out, "partial {} ({reason})", report.name);
        }
        Status::Errored(error) => {
            let _ = writeln!(out, "ERROR   {}", report.name);
            let _ = writeln!(out, "  scenario: {}", report.path);
            let _ = writeln!(
                out,
                "  {error} (a failure of devsim, not a finding about the code under test)"
            );
        }
        Status::Failed => {
            let _ = writeln!(out, "FAILED  {}", report.name);
            let _ = writeln!(out, "  scenario: {}", report.path);
            if !report.subject.is_empty() {
                let _ = writeln!(out, "  subject: {}", report.subject);
            }
            let _ = writeln!(out, "  what it pins: {}", report.description);
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
                        m.key,
                        level_tag(m),
                        m.expected,
                        m.actual
                    );
                }
                let _ = writeln!(out, "    trace of the step:");
                if step.trace.is_empty() {
                    let _ = writeln!(out, "      (empty)");
                }
                for entry in &step.trace {
                    let _ = writeln!(out, "      {entry}");
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
                    m.key,
                    level_tag(m),
                    m.expected,
                    m.actual
                );
            }
        }
    }
    out
}

/// The first `n` names, then how many more: `a, b, c and 4 more`.
pub fn first_names(names: &[String], n: usize) -> String {
    let shown: Vec<&str> = names.iter().take(n).map(String::as_str).collect();
    match names.len().saturating_sub(n) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// ` [policy:rule]` after a mismatch's key, or nothing for a breakdown.
fn level_tag(m: &crate::runner::Mismatch) -> String {
    m.conformance
        .as_ref()
        .map(|c| format!(" [{c}]"))
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
        };
        let shown = human(&report);
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(shown.contains("evil\\u{1b}[2J.toml"), "{shown:?}");
        assert!(!shown.contains('\u{202e}'), "{shown:?}");
    }
}
