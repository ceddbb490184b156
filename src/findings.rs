//! Distinct findings: failures grouped by what they show, not by how many scenarios show it.
//!
//! A failed expectation has a [`Signature`]: the rule (or level and key) it checks, the action, the selector
//! form, the build, and the expected versus observed values. For a rule that does not depend on the
//! kernel (`inventory/rules.toml`, `per_kernel = false`) the kernel is left out, so one behaviour of a
//! kernel-independent path seen through 33 kernels is one finding; for one a single gate decides whatever
//! the action (`per_action = false`), the action is left out. A conditional expectation (`when_ok.lands_on`)
//! is the same observation as its unconditional form (`lands_on`). Each finding names every scenario that
//! shows it.
//!
//! Where the subject says which function of the project under test decided the observed value (its
//! `decided_by`), a policy finding is that rule and that function: the ordinal and torch-device forms of
//! one decision, every selector form and build it shows on, and every kernel the same shared gate admits
//! are one finding, and a per-kernel rule splits by kernel only where a kernel's own override decided.
//! Where the location is unknown the signature is the one above.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::conformance::{Level, rule};
use crate::dispatch::selector::{WrittenForm, written_form};
use crate::runner::expect::Mismatch;
use crate::runner::{ScenarioReport, Status};
use crate::scenario::model::{Action, Scenario};
use devsim_metadata::protocol::DecidedBy;

/// What one failure shows, independent of the scenario it was seen in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Signature {
    /// `policy:<rule>`, `contract`, `reference`, or `breakdown` (the harness or the subject's process).
    pub check: String,
    /// The action, `scenario` for a scenario-level trace rule, or [`ANY_ACTION`].
    pub action: String,
    /// The selector's form (`string`, `ordinal`, `family_enum`, `torch_device`), or `-`.
    pub form: String,
    /// The host's torch build.
    pub build: String,
    /// The kernel, for a rule that depends on it.
    pub kernel: Option<String>,
    /// The expectation key.
    pub key: String,
    /// What was expected.
    pub expected: String,
    /// What was observed, without the subject's own wording.
    pub actual: String,
    /// The function of the project under test that decided it (`module:function`); `None`: location unknown.
    /// When known, the fields above but `check` are `-`: the rule and the function are the finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(decided_by) = &self.decided_by {
            return write!(f, "[{}] decided by {decided_by}", self.check);
        }
        write!(
            f,
            "[{}] {} ({} selector, {} build",
            self.check, self.action, self.form, self.build
        )?;
        if let Some(kernel) = &self.kernel {
            write!(f, ", kernel {kernel}")?;
        }
        write!(
            f,
            "): {} expected {}, got {}",
            self.key, self.expected, self.actual
        )
    }
}

/// One distinct finding and every scenario that shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What it shows.
    pub signature: Signature,
    /// The scenarios that show it, sorted.
    pub scenarios: Vec<String>,
    /// For a finding by deciding function, the signatures it groups (what was seen where), sorted; empty
    /// otherwise.
    pub shows: Vec<String>,
    /// For a finding by deciding function, the lines of it where the values were decided, sorted.
    pub lines: Vec<u32>,
}

impl Finding {
    /// The policy rule it is attributed to, if any.
    pub fn rule(&self) -> Option<&str> {
        self.signature.check.strip_prefix("policy:")
    }

    /// Where it was decided, `module:function:line` (several lines joined by commas); `None`: unknown.
    pub fn decided_by(&self) -> Option<String> {
        let function = self.signature.decided_by.as_ref()?;
        let lines: Vec<String> = self.lines.iter().map(u32::to_string).collect();
        Some(match lines.is_empty() {
            true => function.clone(),
            false => format!("{function}:{}", lines.join(",")),
        })
    }

    /// Where it was decided, for people: `decided by module:function:line` or `location unknown`.
    pub fn location(&self) -> String {
        match self.decided_by() {
            Some(place) => format!("decided by {place}"),
            None => "location unknown".into(),
        }
    }
}

/// Where a finding stands against a live run (`crate::live_record`): confirmed on a real GPU, or simulated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// A scenario of the finding failed live with the same signature.
    Confirmed {
        /// The record's devices.
        devices: Vec<String>,
        /// The record's date.
        date: String,
        /// The record was written through a fake driver.
        fake_driver: bool,
    },
    /// No live run showed it.
    Simulated,
}

impl Mark {
    /// For people: `confirmed on a real GPU (NVIDIA H100 80GB HBM3, 2026-12-06)` or `simulated (no live run
    /// showed it)`.
    pub fn human(&self) -> String {
        match self {
            Mark::Simulated => "simulated (no live run showed it)".into(),
            Mark::Confirmed {
                devices,
                date,
                fake_driver: true,
            } => format!(
                "confirmed live through devsim's FAKE DRIVER, not a real GPU ({}, {date})",
                devices_or_cpu(devices)
            ),
            Mark::Confirmed { devices, date, .. } if devices.is_empty() => {
                format!("confirmed live on a machine without GPUs ({date})")
            }
            Mark::Confirmed { devices, date, .. } => {
                format!("confirmed on a real GPU ({}, {date})", devices.join(", "))
            }
        }
    }

    /// Whether a live run showed it.
    pub fn is_confirmed(&self) -> bool {
        matches!(self, Mark::Confirmed { .. })
    }
}

fn devices_or_cpu(devices: &[String]) -> String {
    match devices.is_empty() {
        true => "no GPU".into(),
        false => devices.join(", "),
    }
}

/// The observed value with the subject's own message removed: `false (unsupported-arch: …)` →
/// `false (unsupported-arch)`, `unsupported-family: …` → `unsupported-family`.
pub(crate) fn without_wording(actual: &str) -> String {
    let first = actual.lines().next().unwrap_or_default();
    if let Some(inner) = first.strip_prefix("false (") {
        let kind = inner.split([':', ')']).next().unwrap_or_default();
        return format!("false ({kind})");
    }
    match first.split_once(": ") {
        Some((kind, _)) if !kind.contains(' ') => kind.to_string(),
        _ => first.to_string(),
    }
}

/// A `never` rule's values without their counts (`nvidia_capability x2` → `nvidia_capability`): how many
/// times a forbidden event happened follows the host's GPU count, not the behaviour.
fn without_counts(key: &str, values: String) -> String {
    if !key.ends_with("trace.never") {
        return values;
    }
    values
        .split(", ")
        .map(|value| match value.rsplit_once(" x") {
            Some((event, count)) if count.bytes().all(|b| b.is_ascii_digit()) => event,
            _ => value,
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn form_and_kernel(action: &Action) -> (&'static str, Option<&str>) {
    let form = |selector| match written_form(selector) {
        WrittenForm::Text(_) => "string",
        WrittenForm::Ordinal(_) => "ordinal",
        WrittenForm::FamilyEnum(_) => "family_enum",
        WrittenForm::TorchDevice(_) => "torch_device",
    };
    match action {
        Action::Normalize(device) | Action::Resolve(device) | Action::Select { device, .. } => {
            (form(device), None)
        }
        Action::Validate { kernel, device }
        | Action::Warmup { kernel, device }
        | Action::Move { kernel, device } => (form(device), Some(kernel.as_str())),
        Action::Lock { scope, .. } => (form(scope), None),
        Action::SetDevice(_) | Action::Discover | Action::DefaultDevice => ("-", None),
    }
}

/// The action of a kernel's finding whose rule one gate decides for every action (`per_action = false`).
pub const ANY_ACTION: &str = "validate/move/warmup";

/// The `decided_by` entries that may place a mismatch of expectation `key` whose observed value is `actual`:
/// the field itself; for an error's kind or message, the step's verdict (`ok`); for a trace rule, the first
/// event it names (`trace.<event>`).
fn decided_fields(key: &str, actual: &str) -> Vec<String> {
    match key {
        "error" | "message" | "kind" | "error.kind" | "error.message" => {
            vec!["error".into(), "ok".into()]
        }
        _ if key.ends_with("trace.never") => actual
            .split(", ")
            .next()
            .filter(|event| !event.is_empty())
            .map(|event| vec![format!("trace.{event}")])
            .unwrap_or_default(),
        _ if key.starts_with("trace.") || key.contains(".trace.") => Vec::new(),
        _ => vec![key.to_string()],
    }
}

/// The signature of a finding by deciding function: the rule and the function only.
fn by_decider(check: String, decided_by: &DecidedBy) -> Signature {
    let dash = || "-".to_string();
    Signature {
        check,
        action: dash(),
        form: dash(),
        build: dash(),
        kernel: None,
        key: dash(),
        expected: dash(),
        actual: dash(),
        decided_by: Some(format!("{}:{}", decided_by.module, decided_by.function)),
    }
}

/// What a mismatch adds to a finding by deciding function: the plain signature it shows and the line.
pub(crate) type Grouped = Option<(Signature, u32)>;

/// A mismatch's signature, and the plain signature it groups when a deciding function is known: the
/// `decided_by` of its step, or for a scenario-level trace rule of the first step that has one.
fn grouped<'a>(
    mismatch: &Mismatch,
    scenario: &Scenario,
    step: Option<usize>,
    decided: impl IntoIterator<Item = &'a BTreeMap<String, DecidedBy>>,
) -> (Signature, Grouped) {
    let plain = signature(mismatch, scenario, step);
    if !plain.check.starts_with("policy:") {
        return (plain, None);
    }
    let fields = decided_fields(&plain.key, &plain.actual);
    let place = decided
        .into_iter()
        .find_map(|map| fields.iter().find_map(|field| map.get(field)));
    match place {
        Some(place) => {
            let line = place.line;
            (by_decider(plain.check.clone(), place), Some((plain, line)))
        }
        None => (plain, None),
    }
}

fn signature(mismatch: &Mismatch, scenario: &Scenario, step: Option<usize>) -> Signature {
    let action = step.and_then(|n| scenario.steps.get(n.wrapping_sub(1)));
    let (form, kernel) = action.map_or(("-", None), |s| form_and_kernel(&s.action));
    let check = match &mismatch.conformance {
        Some(c) => c.to_string(),
        None => "breakdown".into(),
    };
    let policy_rule = match &mismatch.conformance {
        Some(c) if c.level == Level::Policy => c.rule.as_deref().and_then(rule),
        _ => None,
    };
    let per_kernel = match &mismatch.conformance {
        Some(c) if c.level == Level::Policy => policy_rule.is_some_and(|r| r.per_kernel),
        // Declarations and reference details are facts of one kernel.
        Some(_) => true,
        None => false,
    };
    let action_name = match action {
        Some(_) if kernel.is_some() && policy_rule.is_some_and(|r| !r.per_action) => ANY_ACTION,
        Some(step) => step.action.name(),
        None => "scenario",
    };
    let key = ["when_ok.", "when_refused."]
        .iter()
        .find_map(|prefix| mismatch.key.strip_prefix(prefix))
        .unwrap_or(&mismatch.key);
    if mismatch.conformance.is_none() {
        // A breakdown of the subject's process is the same breakdown on every host and in every scenario:
        // what was expected and what happened, the scenario's own name taken out.
        let anonymous = |text: &str| match scenario.name.as_str() {
            "" => text.to_string(),
            name => text.replace(name, "<scenario>"),
        };
        return Signature {
            check,
            action: action_name.to_string(),
            form: form.to_string(),
            build: "-".into(),
            kernel: None,
            key: key.to_string(),
            expected: anonymous(&mismatch.expected),
            actual: anonymous(&without_wording(&mismatch.actual)),
            decided_by: None,
        };
    }
    Signature {
        check,
        action: action_name.to_string(),
        form: form.to_string(),
        build: scenario.host.torch.to_string(),
        kernel: kernel.filter(|_| per_kernel).map(str::to_string),
        key: key.to_string(),
        expected: without_counts(key, mismatch.expected.clone()),
        actual: without_counts(key, without_wording(&mismatch.actual)),
        decided_by: None,
    }
}

/// Every distinct finding of the failed reports, each with the scenarios that show it, most shown first.
pub fn findings<'a>(
    runs: impl IntoIterator<Item = (&'a Scenario, &'a ScenarioReport)>,
) -> Vec<Finding> {
    #[derive(Default)]
    struct Group {
        scenarios: Vec<String>,
        shows: BTreeSet<String>,
        lines: BTreeSet<u32>,
    }
    let mut groups: BTreeMap<Signature, Group> = BTreeMap::new();
    for (scenario, report) in runs {
        if report.status != Status::Failed {
            continue;
        }
        let mut seen: Vec<(Signature, Grouped)> = located(scenario, report)
            .into_iter()
            .map(|failure| (failure.signature, failure.plain))
            .collect();
        seen.sort();
        seen.dedup();
        for (signature, plain) in seen {
            let group = groups.entry(signature).or_default();
            group.scenarios.push(report.name.clone());
            if let Some((plain, line)) = plain {
                group.shows.insert(plain.to_string());
                group.lines.insert(line);
            }
        }
    }
    let mut out: Vec<Finding> = groups
        .into_iter()
        .map(|(signature, mut group)| {
            group.scenarios.sort();
            group.scenarios.dedup();
            Finding {
                signature,
                scenarios: group.scenarios,
                shows: group.shows.into_iter().collect(),
                lines: group.lines.into_iter().collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.scenarios
            .len()
            .cmp(&a.scenarios.len())
            .then_with(|| a.signature.cmp(&b.signature))
    });
    out
}

mod located;

pub(crate) use located::{Located, located};

#[cfg(test)]
mod tests;
