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
use crate::subject::protocol::DecidedBy;

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
type Grouped = Option<(Signature, u32)>;

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
        let mut seen = Vec::new();
        for step in &report.steps {
            for m in &step.mismatches {
                let decided = std::iter::once(&step.observed.decided_by);
                seen.push(grouped(m, scenario, Some(step.number), decided));
            }
        }
        for m in &report.trace_mismatches {
            let decided = report.steps.iter().map(|s| &s.observed.decided_by);
            seen.push(grouped(m, scenario, None, decided));
        }
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
        let (heading, unknown) = match finding.decided_by() {
            Some(place) => (
                format!("[{}] decided by {place}", finding.signature.check),
                "",
            ),
            None => (finding.signature.to_string(), "\n    location unknown"),
        };
        let _ = writeln!(
            out,
            "  finding {}: {}{unknown}\n    shown by {} scenario(s): {}",
            n + 1,
            crate::shown::field(&heading),
            finding.scenarios.len(),
            first_names(&finding.scenarios, 5)
        );
        for shows in finding.shows.iter().take(5) {
            let _ = writeln!(out, "    shows {}", crate::shown::field(shows));
        }
        if finding.shows.len() > 5 {
            let _ = writeln!(out, "    shows {} more", finding.shows.len() - 5);
        }
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

    /// One step of `action` on `kernel` (none: "") for "cuda:1" on a HIP host.
    fn one_step(action: &str, kernel: &str) -> Scenario {
        let kernel = match kernel {
            "" => String::new(),
            kernel => format!("kernel = \"{kernel}\"\n"),
        };
        let text = format!(
            "format = 1\ndescription = \"x\"\n[host]\nprofile = \"r9700x2\"\n\
             [[step]]\naction = \"{action}\"\n{kernel}device = \"cuda:1\"\n"
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

    /// One failed observation of a table case: the step's action and kernel, the host's build, the
    /// mismatched key and its rule, and the deciding function and line the subject named (`None`: unknown).
    struct Seen {
        action: &'static str,
        kernel: &'static str,
        build: crate::vocab::TorchBuild,
        key: &'static str,
        rule: &'static str,
        decided_by: Option<(&'static str, u32)>,
    }

    const HIP: crate::vocab::TorchBuild = crate::vocab::TorchBuild::Hip;
    const CUDA: crate::vocab::TorchBuild = crate::vocab::TorchBuild::Cuda;

    fn seen(
        action: &'static str,
        kernel: &'static str,
        key: &'static str,
        rule: &'static str,
        decided_by: Option<(&'static str, u32)>,
    ) -> Seen {
        Seen {
            action,
            kernel,
            build: HIP,
            key,
            rule,
            decided_by,
        }
    }

    /// The findings of one failed scenario per observation, as `findings` groups them.
    fn findings_of(observations: &[Seen]) -> Vec<Finding> {
        let runs: Vec<(Scenario, ScenarioReport)> = observations
            .iter()
            .enumerate()
            .map(|(n, o)| {
                let mut scenario = one_step(o.action, o.kernel);
                scenario.name = format!("s{n}.toml");
                scenario.host.torch = o.build;
                let mut observed = crate::output::ObservedOutput::default();
                if let Some((function, line)) = o.decided_by {
                    let (module, function) = function.split_once(':').expect("module:function");
                    observed.decided_by.insert(
                        o.key.to_string(),
                        DecidedBy {
                            module: module.into(),
                            function: function.into(),
                            line,
                            file: "x.py".into(),
                        },
                    );
                }
                let mut report = ScenarioReport::with_status(&scenario, Status::Failed);
                report.steps.push(crate::runner::run::StepReport::of(
                    &scenario.steps[0],
                    observed,
                    vec![mismatch(o.key, o.rule)],
                    Vec::new(),
                    std::time::Duration::ZERO,
                ));
                (scenario, report)
            })
            .collect();
        findings(runs.iter().map(|(s, r)| (s, r)))
    }

    #[test]
    fn findings_group_by_rule_and_deciding_function_where_known() {
        const GATE: Option<(&str, u32)> = Some(("p.importer:validate_quant_linear", 275));
        const CANON: Option<(&str, u32)> = Some(("p.helpers:_canonical_device", 297));
        // (case, observations, distinct findings, how each reads: decided by ... or the plain signature)
        let cases: Vec<(&str, Vec<Seen>, &[&str])> = vec![
            (
                "the ordinal and torch-device forms of one decision are one finding",
                vec![
                    seen("resolve", "", "ordinal", "resolve-late", CANON),
                    seen("resolve", "", "torch_device", "resolve-late", CANON),
                ],
                &["[policy:resolve-late] decided by p.helpers:_canonical_device:297"],
            ),
            (
                "one decision seen on both builds and through several actions is one finding",
                vec![
                    Seen {
                        build: CUDA,
                        ..seen("move", "gptq_torch", "torch_device", "resolve-late", CANON)
                    },
                    seen("resolve", "", "torch_device", "resolve-late", CANON),
                ],
                &["[policy:resolve-late] decided by p.helpers:_canonical_device:297"],
            ),
            (
                "kernels admitted by the shared gate are one finding, whatever lines of it decided",
                vec![
                    seen("validate", "gptq_triton", "ok", "declared-families", GATE),
                    seen("validate", "gptq_marlin", "ok", "declared-families", GATE),
                    seen(
                        "warmup",
                        "gptq_marlin",
                        "ok",
                        "declared-families",
                        Some(("p.importer:validate_quant_linear", 254)),
                    ),
                ],
                &["[policy:declared-families] decided by p.importer:validate_quant_linear:254,275"],
            ),
            (
                "a kernel's own override is its own finding",
                vec![
                    seen("validate", "gptq_triton", "ok", "declared-families", GATE),
                    seen(
                        "validate",
                        "gptq_marlin",
                        "ok",
                        "declared-families",
                        Some(("p.marlin:MarlinLinear.validate_device", 40)),
                    ),
                ],
                &[
                    "[policy:declared-families] decided by p.importer:validate_quant_linear:275",
                    "[policy:declared-families] decided by p.marlin:MarlinLinear.validate_device:40",
                ],
            ),
            (
                "one function breaking two rules is two findings",
                vec![
                    seen("move", "gptq_torch", "torch_device", "resolve-late", CANON),
                    seen(
                        "move",
                        "gptq_torch",
                        "lands_on",
                        "family-move-current",
                        CANON,
                    ),
                ],
                &[
                    "[policy:family-move-current] decided by p.helpers:_canonical_device:297",
                    "[policy:resolve-late] decided by p.helpers:_canonical_device:297",
                ],
            ),
            (
                "where the location is unknown the signature is today's",
                vec![
                    seen("validate", "gptq_triton", "ok", "declared-families", None),
                    seen("validate", "gptq_marlin", "ok", "declared-families", None),
                    seen("validate", "gptq_marlin", "ok", "declared-families", GATE),
                ],
                &[
                    "[policy:declared-families] decided by p.importer:validate_quant_linear:275",
                    "[policy:declared-families] validate/move/warmup (string selector, hip build, kernel gptq_marlin): ok expected false, got true\n    location unknown",
                    "[policy:declared-families] validate/move/warmup (string selector, hip build, kernel gptq_triton): ok expected false, got true\n    location unknown",
                ],
            ),
        ];
        for (case, observations, expected) in cases {
            let found = findings_of(&observations);
            let mut read: Vec<String> = found
                .iter()
                .map(|f| match f.decided_by() {
                    Some(place) => format!("[{}] decided by {place}", f.signature.check),
                    None => format!("{}\n    {}", f.signature, f.location()),
                })
                .collect();
            read.sort();
            assert_eq!(read, expected, "{case}");
        }
    }

    #[test]
    fn a_finding_by_function_lists_what_it_groups_and_prints_its_place() {
        let found = findings_of(&[
            seen("resolve", "", "ordinal", "resolve-late", Some(("p.c:f", 3))),
            seen("resolve", "", "ok", "declared-families", None),
        ]);
        let by_function = found
            .iter()
            .find(|f| f.signature.decided_by.is_some())
            .expect("a finding by function");
        assert_eq!(
            by_function.signature.to_string(),
            "[policy:resolve-late] decided by p.c:f"
        );
        assert_eq!(by_function.shows.len(), 1);
        assert!(by_function.shows[0].contains("ordinal expected false, got true"));
        let text = human(2, &found);
        assert!(
            text.contains("[policy:resolve-late] decided by p.c:f:3\n"),
            "{text}"
        );
        assert!(text.contains("got true\n    location unknown\n"), "{text}");
        let output = crate::cli::output::finding(by_function);
        assert_eq!(output.decided_by.as_deref(), Some("p.c:f:3"));
    }

    #[test]
    fn a_trace_rule_is_placed_by_the_first_event_it_names() {
        assert_eq!(
            decided_fields("expect.trace.never", "nvidia_capability, amd_arch"),
            ["trace.nvidia_capability"]
        );
        assert_eq!(
            decided_fields("trace.count", "launch x2"),
            Vec::<String>::new()
        );
        assert_eq!(decided_fields("message", "x"), ["error", "ok"]);
        assert_eq!(decided_fields("torch_device", "cuda:0"), ["torch_device"]);
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
