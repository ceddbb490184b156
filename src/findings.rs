//! Distinct findings: failures grouped by what they show, not by how many scenarios show it.
//!
//! A failed expectation has a [`Signature`]: the rule (or level and key) it checks, the action, the selector
//! form, the build, and the expected versus observed values. For a rule that does not depend on the
//! kernel (`inventory/rules.toml`, `per_kernel = false`) the kernel is left out, so one behaviour of a
//! kernel-independent path seen through 33 kernels is one finding; for one a single gate decides whatever
//! the action (`per_action = false`), the action is left out. A conditional expectation (`when_ok.lands_on`)
//! is the same observation as its unconditional form (`lands_on`). Each finding names every scenario that
//! shows it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::conformance::{Level, rule};
use crate::dispatch::selector::{WrittenForm, written_form};
use crate::runner::expect::Mismatch;
use crate::runner::{ScenarioReport, Status};
use crate::scenario::model::{Action, Scenario};

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
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
}

impl Finding {
    /// The policy rule it is attributed to, if any.
    pub fn rule(&self) -> Option<&str> {
        self.signature.check.strip_prefix("policy:")
    }
}

/// The observed value with the subject's own message removed: `false (unsupported-arch: …)` →
/// `false (unsupported-arch)`, `unsupported-family: …` → `unsupported-family`.
fn without_wording(actual: &str) -> String {
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
        Action::SetDevice(_) | Action::Discover => ("-", None),
    }
}

/// The action of a kernel's finding whose rule one gate decides for every action (`per_action = false`).
pub const ANY_ACTION: &str = "validate/move/warmup";

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
    }
}

/// Every distinct finding of the failed reports, each with the scenarios that show it, most shown first.
pub fn findings<'a>(
    runs: impl IntoIterator<Item = (&'a Scenario, &'a ScenarioReport)>,
) -> Vec<Finding> {
    let mut grouped: BTreeMap<Signature, Vec<String>> = BTreeMap::new();
    for (scenario, report) in runs {
        if report.status != Status::Failed {
            continue;
        }
        let mut seen = Vec::new();
        for step in &report.steps {
            for m in &step.mismatches {
                seen.push(signature(m, scenario, Some(step.number)));
            }
        }
        for m in &report.trace_mismatches {
            seen.push(signature(m, scenario, None));
        }
        seen.sort();
        seen.dedup();
        for signature in seen {
            grouped
                .entry(signature)
                .or_default()
                .push(report.name.clone());
        }
    }
    let mut out: Vec<Finding> = grouped
        .into_iter()
        .map(|(signature, mut scenarios)| {
            scenarios.sort();
            scenarios.dedup();
            Finding {
                signature,
                scenarios,
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

/// What the findings of a run's failures are, for a terminal: a heading, then each distinct finding with
/// the first scenarios that show it; nothing when no scenario failed. User text goes through
/// [`crate::shown::field`].
pub fn human(failed: usize, findings: &[Finding]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if failed == 0 {
        return out;
    }
    let _ = writeln!(
        out,
        "{failed} failed scenario(s) hold {} distinct finding(s):",
        findings.len()
    );
    for (n, finding) in findings.iter().enumerate() {
        let _ = writeln!(
            out,
            "  finding {}: {}\n    shown by {} scenario(s): {}",
            n + 1,
            crate::shown::field(&finding.signature),
            finding.scenarios.len(),
            first_names(&finding.scenarios, 5)
        );
    }
    crate::shown::lines(&out).into_owned()
}

/// The first `n` names, then how many more: `a, b, c and 4 more`; each name through
/// [`crate::shown::field`].
fn first_names(names: &[String], n: usize) -> String {
    let shown: Vec<String> = names
        .iter()
        .take(n)
        .map(|name| crate::shown::field(name).to_string())
        .collect();
    match names.len().saturating_sub(n) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::conformance::Conformance;
    use crate::kernel::Catalog;
    use crate::scenario::load::{ProfileSources, parse_scenario};

    /// One step of `action` on `kernel` for "cuda:1" on a HIP host.
    fn one_step(action: &str, kernel: &str) -> Scenario {
        let text = format!(
            "format = 1\ndescription = \"x\"\n[host]\nprofile = \"r9700x2\"\n\
             [[step]]\naction = \"{action}\"\nkernel = \"{kernel}\"\ndevice = \"cuda:1\"\n"
        );
        parse_scenario(
            Path::new("s.toml"),
            &text,
            &Catalog::reference(),
            &ProfileSources::shipped(),
        )
        .expect("loads")
    }

    fn mismatch(key: &str, rule: &str) -> Mismatch {
        Mismatch {
            key: key.into(),
            expected: "false".into(),
            actual: "true".into(),
            conformance: Some(Conformance::policy(rule)),
        }
    }

    #[test]
    fn a_kernel_admitted_where_it_does_not_belong_is_one_finding_whatever_the_action() {
        let admitted = mismatch("ok", "declared-families");
        let through = |action| signature(&admitted, &one_step(action, "gptq_triton"), Some(1));
        assert_eq!(through("validate"), through("move"));
        assert_eq!(through("validate"), through("warmup"));
        assert_eq!(through("warmup").action, ANY_ACTION);
        assert_ne!(
            through("validate"),
            signature(&admitted, &one_step("validate", "gptq_marlin"), Some(1)),
            "the kernel stays part of it"
        );
        let placed = mismatch("ran_on", "target-context");
        assert_ne!(
            signature(&placed, &one_step("warmup", "gptq_triton"), Some(1)).action,
            ANY_ACTION,
            "a rule that depends on the action keeps it"
        );
    }

    #[test]
    fn a_conditional_expectation_is_the_observation_of_its_plain_key() {
        let scenario = one_step("move", "gptq_torch");
        let plain = signature(
            &mismatch("lands_on", "family-move-current"),
            &scenario,
            Some(1),
        );
        let when_ok = signature(
            &mismatch("when_ok.lands_on", "family-move-current"),
            &scenario,
            Some(1),
        );
        assert_eq!(plain, when_ok);
        assert_eq!(when_ok.key, "lands_on");
    }

    #[test]
    fn one_breakdown_in_many_scenarios_is_one_finding() {
        let first = one_step("validate", "gptq_triton");
        let mut second = first.clone();
        second.name = "other.toml".into();
        second.host.torch = crate::vocab::TorchBuild::Cuda;
        let broke = |scenario: &Scenario| {
            Mismatch::breakdown(
                "subject x",
                format!("`ready` or `unsupported` for scenario {}", scenario.name),
                "no answer within 1.0 s\n  stderr: …",
            )
        };
        let a = signature(&broke(&first), &first, None);
        assert_eq!(a, signature(&broke(&second), &second, None));
        assert_eq!(
            a.expected,
            "`ready` or `unsupported` for scenario <scenario>"
        );
        let other = Mismatch::breakdown("subject x", "`done`", "no answer within 1.0 s");
        assert_ne!(a, signature(&other, &first, None));
    }

    #[test]
    fn the_subjects_wording_is_not_part_of_a_finding() {
        assert_eq!(
            without_wording("false (unsupported-arch: W4A needs cc 12.1; device 0 reports 10.0.)"),
            "false (unsupported-arch)"
        );
        assert_eq!(
            without_wording("unsupported-family: TritonV2Linear refuses rocm"),
            "unsupported-family"
        );
        assert_eq!(
            without_wording("nvidia_capability x1"),
            "nvidia_capability x1"
        );
        assert_eq!(without_wording("cuda:0"), "cuda:0");
    }

    #[test]
    fn how_often_a_forbidden_event_happened_is_not_part_of_a_finding() {
        let never = |values: &str| without_counts("expect.trace.never", values.to_string());
        assert_eq!(never("nvidia_capability x2"), "nvidia_capability");
        assert_eq!(
            never("nvidia_capability x1, amd_arch x12"),
            "nvidia_capability, amd_arch"
        );
        assert_eq!(
            without_counts("expect.trace.count", "launch x2".to_string()),
            "launch x2",
            "a count rule's counts are the finding"
        );
    }
}
