//! One finding's script: the messages devsim sent, the check, and the issue text around them.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::check::{Why, check};
use super::{Context, FORMAT, Launch, MARKER, Script};
use crate::conformance::rule;
use crate::findings::{ANY_ACTION, Finding, Located, located, without_wording};
use crate::runner::ScenarioReport;
use crate::scenario::model::Scenario;
use crate::subject::encode;
use crate::subject::protocol::{PROTOCOL, ToSubject};

/// The protocol messages devsim sent for `scenario` up to step `last`, then `end`.
fn messages(
    scenario: &Scenario,
    report: &ScenarioReport,
    last: Option<usize>,
) -> Result<Vec<Value>, Why> {
    let host = encode::host(&scenario.host).map_err(|error| error.to_string())?;
    // A scenario-level failure replays every step: devsim sent steps until one was answered `unsupported`
    // (whose recorded events its trace rules still judge), and so does the kit. Steps devsim left out (the
    // subject lacks their kernel or action) were never sent.
    let last = last.unwrap_or(usize::MAX);
    let mut sent = vec![
        ToSubject::Hello {
            protocol: PROTOCOL,
            devsim: env!("CARGO_PKG_VERSION").into(),
            live: false,
        },
        ToSubject::Scenario {
            name: report.name.clone(),
            host,
            live: false,
        },
    ];
    sent.extend(
        scenario
            .steps
            .iter()
            .filter(|step| step.number <= last && !report.left_out.contains(&step.number))
            .map(|step| ToSubject::Step(encode::step(&report.name, step))),
    );
    sent.push(ToSubject::End {
        scenario: report.name.clone(),
    });
    sent.iter()
        .map(|message| serde_json::to_value(message).map_err(|error| error.to_string()))
        .collect()
}

/// A name part: lower case, words joined by `-`, at most 48 characters.
pub(super) fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut out: String = out.trim_end_matches('-').chars().take(48).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// The file stem of a finding's script (before any number that keeps it unique).
pub(super) fn stem(finding: &Finding) -> String {
    let signature = &finding.signature;
    let check = slug(finding.rule().unwrap_or(&signature.check));
    let detail = match &signature.decided_by {
        Some(place) => place.rsplit(':').next().unwrap_or(place).to_string(),
        None => {
            let action = match signature.action.as_str() {
                ANY_ACTION => "gate",
                action => action,
            };
            let mut parts = vec![action, signature.build.as_str()];
            parts.extend(signature.kernel.as_deref());
            parts.push(signature.key.rsplit('.').next().unwrap_or(&signature.key));
            parts.join("-")
        }
    };
    format!("{check}-{}", slug(&detail))
}

/// Escapes text for a Python triple-quoted docstring.
pub(super) fn docstring(text: &str) -> String {
    text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

/// The first `n` names, then how many more.
fn some_names(names: &[String], n: usize) -> String {
    let shown: Vec<&str> = names.iter().take(n).map(String::as_str).collect();
    match names.len().saturating_sub(n) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// The script of one finding, replaying `scenario` as run in `report`; `Err`: why none can be written.
pub fn script(
    finding: &Finding,
    scenario: &Scenario,
    report: &ScenarioReport,
    context: &Context,
    file_name: &str,
) -> Result<Script, String> {
    script_of(finding, scenario, report, context, file_name, true)
}

/// Whether a failure is of a conditional expectation (`when_ok`, `when_refused`), which a fix may make
/// not apply rather than hold.
fn conditional(failure: &Located<'_>) -> bool {
    failure.mismatch.key.starts_with("when_")
}

/// [`script`]; with `conditional_too` false, only a failure of an unconditional expectation is replayed.
pub(super) fn script_of(
    finding: &Finding,
    scenario: &Scenario,
    report: &ScenarioReport,
    context: &Context,
    file_name: &str,
    conditional_too: bool,
) -> Result<Script, String> {
    let failures = located(scenario, report);
    let Some(failure) = failures.iter().find(|failure| {
        failure.signature == finding.signature && (conditional_too || !conditional(failure))
    }) else {
        return Err(format!("scenario {} does not show it", report.name));
    };
    // the step sent after the last answered one: steps devsim left out were never sent
    let answered = report.steps.last().map_or(0, |s| s.number);
    let stopped_at = scenario
        .steps
        .iter()
        .map(|s| s.number)
        .find(|&n| n > answered && !report.left_out.contains(&n))
        .unwrap_or(answered + 1);
    let check = check(scenario, failure, stopped_at)?;
    let messages = messages(scenario, report, failure.step)?;
    let mismatch = failure.mismatch;
    let expected = format!("{} {}", mismatch.key, mismatch.expected);
    let observed = format!("{} {}", mismatch.key, without_wording(&mismatch.actual));
    let heading = match finding.decided_by() {
        Some(place) => format!("[{}] decided by {place}", finding.signature.check),
        None => finding.signature.to_string(),
    };
    let place = match failure.step {
        Some(n) => format!("step {n}"),
        None => "the scenario's trace".into(),
    };
    let mut subject = match &context.launch {
        Launch::File(file) => json!({"file": file}),
        Launch::Command(words) => json!({"command": words}),
    };
    if let (Some(source), Value::Object(map)) = (&context.source, &mut subject) {
        map.insert("source".into(), json!(source));
    }
    let mut check = check;
    if let Value::Object(map) = &mut check {
        map.insert("where".into(), json!(place));
    }
    let data = json!({
        "format": FORMAT,
        "finding": heading,
        "scenario": report.name,
        "expected": expected,
        "subject": subject,
        "messages": messages,
        "check": check,
    });
    let data = serde_json::to_string_pretty(&data)
        .map_err(|error| error.to_string())?
        // Inside a raw ''' string: a quote only ever occurs inside a JSON string, where \u0027 means it.
        .replace('\'', "\\u0027");
    let mut header = String::new();
    let _ = writeln!(header, "devsim finding: {heading}");
    let _ = writeln!(header);
    match finding.rule().and_then(rule) {
        Some(rule) => {
            let _ = writeln!(
                header,
                "Rule {} (AGENTS.md policy {}): {}.\nThe seed's words: \"{}\"",
                rule.id, rule.policy, rule.title, rule.seed
            );
        }
        None => {
            let _ = writeln!(header, "Check: {}", finding.signature.check);
        }
    }
    let _ = writeln!(header);
    let _ = writeln!(
        header,
        "Where the project decided it: {}",
        finding
            .decided_by()
            .unwrap_or_else(|| "location unknown".into())
    );
    let _ = writeln!(header, "Expected: {expected}");
    let _ = writeln!(header, "Observed: {observed}");
    let _ = writeln!(
        header,
        "Shown by {} scenario(s): {}",
        finding.scenarios.len(),
        some_names(&finding.scenarios, 3)
    );
    let _ = writeln!(header, "Replayed here: {}, {place}", report.name);
    let _ = writeln!(header);
    let _ = writeln!(header, "Generated by: {}", context.generated_by);
    let _ = writeln!(
        header,
        "Run: python3 {file_name} [--subject FILE] [--subject-src DIR]; needs only the subject kit and the project.\nExit status: 1 while the finding is there, 0 once it is fixed, 2 when nothing could be judged."
    );
    let kit = match &context.kit {
        Some(kit) => format!("{kit:?}"),
        None => "None".into(),
    };
    let text = format!(
        r#"#!/usr/bin/env python3
{MARKER}
"""{header}"""

import json
import pathlib
import sys

KIT = {kit}  # the subject kit's import folder, relative to this file (None: installed)

REPRO = json.loads(r'''
{data}
''')

if __name__ == "__main__":
    if KIT is not None:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / KIT))
    from devsim_subject_kit.repro import main

    sys.exit(main(REPRO, __file__))
"#,
        header = docstring(&header),
    );
    Ok(Script {
        file_name: file_name.to_string(),
        text,
    })
}
