//! Judging a subject's answers as a conformance suite judges an implementation: each expectation at its
//! level (`crate::conformance`), only the conditional branch that applied, and without false green.
//!
//! - `policy` expectations bind every subject. One the subject cannot observe (an event it does not
//!   record, a field it does not observe for the action) is *set aside* alone; the rest are still judged.
//! - `contract` expectations are the reference catalog's declarations: for a subject they are not
//!   applicable. A subject that declares its own kernels is judged against *its* declarations instead
//!   (rule `declared-families`).
//! - `reference` expectations bind only a subject that claims the level; one that claims it and cannot
//!   observe them fails.
//!
//! A scenario passes only when every applicable expectation was observed and held and at least one of them
//! was a policy expectation; with something set aside it is [`Status::SetAside`], with nothing applicable
//! [`Status::NotApplicable`].

use std::collections::{BTreeMap, BTreeSet};

use crate::conformance::{Conformance, Level, Levels, policy_spelling};
use crate::dispatch::DispatchError;
use crate::dispatch::selector::{Selector, normalize};
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::runner::Status;
use crate::runner::expect::{Mismatch, check_trace, compare};
use crate::scenario::model::{Action, Expectations, Step, TraceRules};
use crate::subject::handshake::Capabilities;
use crate::subject::protocol::{KernelDeclaration, ObservedMessage};
use crate::trace::Entry;
use crate::vocab::{Family, TorchBuild};

/// What a failure expects when the subject claims a level whose expectation it cannot observe.
pub(crate) const UNBACKED: &str = "an observation (the subject claims this level)";

/// What happens to one expectation for this subject.
enum Decision {
    /// Compared with what the subject produced.
    Check,
    /// Not compared: the subject cannot observe it (why).
    SetAside(String),
    /// Not compared: it does not bind this subject (why).
    NotApplicable(String),
    /// Required but unobservable: the subject claimed a level it cannot back (why).
    Unbacked(String),
}

/// One scenario's judge for one subject.
pub struct Judge<'a> {
    capabilities: &'a Capabilities,
    build: TorchBuild,
    visible_count: u32,
    /// Policy expectations compared (the scenario's own and those derived from the subject's contract).
    policy_observed: usize,
    /// Expectations of other claimed levels compared.
    others_observed: usize,
    /// Why expectations were set aside → their keys.
    set_aside: BTreeMap<String, BTreeSet<String>>,
    /// Why expectations did not apply → their keys.
    not_applicable: BTreeMap<String, BTreeSet<String>>,
}

impl<'a> Judge<'a> {
    /// A judge for a scenario on a host of `build` with `visible_count` GPUs.
    pub fn new(capabilities: &'a Capabilities, build: TorchBuild, visible_count: u32) -> Self {
        Self {
            capabilities,
            build,
            visible_count,
            policy_observed: 0,
            others_observed: 0,
            set_aside: BTreeMap::new(),
            not_applicable: BTreeMap::new(),
        }
    }

    /// A judge for a scenario on `host`: its build, with as many GPUs as it makes visible.
    pub fn for_host(capabilities: &'a Capabilities, host: &crate::host::HostSpec) -> Self {
        let visible = u32::try_from(host.visible().map_or(0, |v| v.len())).unwrap_or(u32::MAX);
        Self::new(capabilities, host.torch, visible)
    }

    fn claims(&self, level: Level) -> bool {
        level == Level::Policy || self.capabilities.levels.contains(&level)
    }

    /// Whether the subject can observe expectation `key` of an `action` step (`None`: scenario level).
    fn observable(
        &self,
        key: &str,
        action: Option<&str>,
        absent: &BTreeSet<&'static str>,
        order: &[String],
    ) -> Option<String> {
        let subject = &self.capabilities.name;
        if let Some(rest) = key.strip_prefix("trace.") {
            // An `order` rule needs every event it names.
            let names: Vec<&str> = match rest.split_once('.') {
                Some((_, event)) => vec![event],
                None => order.iter().map(String::as_str).collect(),
            };
            return names
                .into_iter()
                .find(|event| !self.capabilities.events.iter().any(|e| e == event))
                .map(|event| format!("subject {subject} does not record {event}"));
        }
        match key {
            "ok" => None,
            // A message comes with every error; whether it can be compared depends on its wording.
            "message" => (!self.capabilities.compares_messages())
                .then(|| format!("subject {subject} words its errors its own way")),
            _ if absent.contains(key) => Some(format!("subject {subject} did not report {key}")),
            _ => {
                let action = action?;
                let observes = self.capabilities.observes.as_ref()?;
                let listed = observes.get(action).is_some_and(|keys| keys.contains(key));
                (!listed).then(|| format!("subject {subject} does not observe {key} on {action}"))
            }
        }
    }

    fn decide(
        &self,
        key: &str,
        conformance: Option<&Conformance>,
        action: Option<&str>,
        absent: &BTreeSet<&'static str>,
        order: &[String],
    ) -> Decision {
        let level = conformance.map_or(Level::Reference, |c| c.level);
        if level == Level::Contract {
            return Decision::NotApplicable(if self.capabilities.declared.is_empty() {
                "the reference catalog's declarations (the subject declares no contract)".into()
            } else {
                "the reference catalog's declarations (judged against the subject's own)".into()
            });
        }
        if !self.claims(level) {
            return Decision::NotApplicable("details of devsim's reference model".into());
        }
        match self.observable(key, action, absent, order) {
            None => Decision::Check,
            Some(why) if level == Level::Reference => {
                Decision::Unbacked(format!("{why}, but claims the reference level"))
            }
            Some(why) => Decision::SetAside(why),
        }
    }

    /// Keeps the expectations of one table this subject is judged on, remembering the rest; a claimed level
    /// the subject cannot back becomes a failure.
    fn filter(
        &mut self,
        table: &mut Expectations,
        action: Option<&str>,
        absent: &BTreeSet<&'static str>,
        prefix: &str,
        unbacked: &mut Vec<Mismatch>,
    ) {
        let levels = table.levels.clone();
        let order = table.trace.order.clone();
        table.retain(|key| {
            let conformance = levels.get(key);
            match self.decide(key, conformance, action, absent, &order) {
                Decision::Check => {
                    if conformance.is_some_and(|c| c.level == Level::Policy) {
                        self.policy_observed += 1;
                    } else {
                        self.others_observed += 1;
                    }
                    true
                }
                Decision::SetAside(why) => {
                    remember(&mut self.set_aside, why, prefix, key);
                    false
                }
                Decision::NotApplicable(why) => {
                    remember(&mut self.not_applicable, why, prefix, key);
                    false
                }
                Decision::Unbacked(why) => {
                    unbacked.push(Mismatch {
                        key: format!("{prefix}{key}"),
                        expected: UNBACKED.into(),
                        actual: why,
                        conformance: conformance.cloned(),
                    });
                    false
                }
            }
        });
    }

    /// Judges one step: its expectations at the subject's levels, the branch that applied, and the checks
    /// derived from the subject's declared contract.
    pub fn step(
        &mut self,
        step: &Step,
        message: &ObservedMessage,
        observed: &Observed,
        entries: &[Entry],
    ) -> Vec<Mismatch> {
        let action = Some(step.action.name());
        // Protocol 2: a field absent from the answer was not observed on this step (an `ordinal` of null is
        // a family target); protocol 1 answers are judged whole.
        let absent = if self.capabilities.protocol >= 2 {
            absent_fields(message)
        } else {
            BTreeSet::new()
        };
        let mut expect = step.expect.clone();
        let mut unbacked = Vec::new();
        // Only the branch that applied is judged: the other says nothing about this run.
        let refused = observed.error.is_some();
        if refused {
            expect.when_ok = None;
        } else {
            expect.when_refused = None;
        }
        self.filter(&mut expect, action, &absent, "", &mut unbacked);
        for (branch, prefix) in [
            (&mut expect.when_ok, "when_ok."),
            (&mut expect.when_refused, "when_refused."),
        ] {
            if let Some(branch) = branch {
                self.filter(branch, action, &absent, prefix, &mut unbacked);
            }
        }
        let mut mismatches = compare(&expect, observed, entries.iter());
        mismatches.extend(unbacked);
        mismatches.extend(self.declared(step, observed));
        mismatches.extend(numerics(observed));
        mismatches
    }

    /// Checks the scenario-level trace rules the subject is judged on.
    pub fn scenario(
        &mut self,
        rules: &TraceRules,
        levels: &Levels,
        entries: &[Entry],
    ) -> Vec<Mismatch> {
        let mut table = Expectations {
            ok: None,
            trace: rules.clone(),
            levels: levels.clone(),
            ..Expectations::default()
        };
        let mut unbacked = Vec::new();
        self.filter(&mut table, None, &BTreeSet::new(), "expect.", &mut unbacked);
        let mut mismatches = check_trace(&table.trace, entries.iter(), "expect.trace", levels);
        mismatches.extend(unbacked);
        mismatches
    }

    /// The checks the subject's own declarations imply for a kernel step (rule `declared-families`): a
    /// kernel refuses a family it does not declare, never refuses one it declares as `unsupported-family`,
    /// and selection never picks a kernel that does not declare the target's family.
    fn declared(&mut self, step: &Step, observed: &Observed) -> Vec<Mismatch> {
        if !self.claims(Level::Contract) || self.capabilities.declared.is_empty() {
            return Vec::new();
        }
        let (kernel, device) = match &step.action {
            Action::Validate { kernel, device }
            | Action::Warmup { kernel, device }
            | Action::Move { kernel, device } => (Some(kernel.as_str()), device),
            Action::Select { device, .. } => (None, device),
            _ => return Vec::new(),
        };
        // What another spelling means is the subject's own decision, not the policy's.
        if !policy_spelling(device, step.action.name()) {
            return Vec::new();
        }
        let Some(family) = self.true_family(device) else {
            return Vec::new();
        };
        let rule = || Some(Conformance::policy("declared-families"));
        let mut out = Vec::new();
        match kernel {
            Some(kernel) => {
                let Some(declaration) = self.declaration(kernel) else {
                    return out;
                };
                self.policy_observed += 1;
                let declares = declares(declaration, family);
                match &observed.error {
                    None if !declares => out.push(Mismatch {
                        key: "ok".into(),
                        expected: format!(
                            "false (the subject's {kernel} declares {}; the target is {family})",
                            families(declaration)
                        ),
                        actual: "true".into(),
                        conformance: rule(),
                    }),
                    Some(ErrorOutput { kind, message })
                        if declares && kind == "unsupported-family" =>
                    {
                        out.push(Mismatch {
                            key: "error".into(),
                            expected: format!(
                                "no unsupported-family refusal (the subject's {kernel} declares {family})"
                            ),
                            actual: format!("{kind}: {message}"),
                            conformance: rule(),
                        });
                    }
                    _ => {}
                }
            }
            None => {
                if let Some(selected) = &observed.selected {
                    if let Some(declaration) = self.declaration(selected) {
                        self.policy_observed += 1;
                        if !declares(declaration, family) {
                            out.push(Mismatch {
                                key: "selected".into(),
                                expected: format!("a kernel the subject declares for {family}"),
                                actual: format!("{selected} (declares {})", families(declaration)),
                                conformance: rule(),
                            });
                        }
                    }
                }
            }
        }
        out
    }

    fn declaration(&self, kernel: &str) -> Option<&'a KernelDeclaration> {
        self.capabilities.declared.iter().find(|d| d.name == kernel)
    }

    /// The family the policy says the selector means on this host (`cuda` on a HIP build is ROCm).
    fn true_family(&self, device: &Selector) -> Option<Family> {
        let count = self.visible_count;
        normalize(device, self.build, || Ok::<u32, DispatchError>(count))
            .ok()
            .map(|target| target.family)
    }

    /// The outcome of a scenario in which nothing failed and nothing was skipped.
    pub fn verdict(&self) -> Status {
        let subject = &self.capabilities.name;
        let listed = |reasons: &BTreeMap<String, BTreeSet<String>>| {
            reasons
                .iter()
                .map(|(why, keys)| {
                    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                    format!("{why} ({})", keys.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        match (self.policy_observed, self.set_aside.is_empty()) {
            (0, true) if self.others_observed > 0 => Status::NotApplicable(format!(
                "no policy expectation in it for subject {subject}: {} expectation(s) held at the levels it claims, which alone make no pass",
                self.others_observed
            )),
            (0, true) => Status::NotApplicable(format!(
                "no policy expectation applies to subject {subject}: {}",
                listed(&self.not_applicable)
            )),
            (0, false) => Status::SetAside(format!(
                "no policy expectation observed; set aside: {}",
                listed(&self.set_aside)
            )),
            (n, false) => Status::SetAside(format!(
                "{n} policy expectation(s) held; set aside: {}",
                listed(&self.set_aside)
            )),
            (_, true) => Status::Passed,
        }
    }
}

/// Files `prefix``key` under the reason it was not judged.
fn remember(
    reasons: &mut BTreeMap<String, BTreeSet<String>>,
    why: String,
    prefix: &str,
    key: &str,
) {
    reasons
        .entry(why)
        .or_default()
        .insert(format!("{prefix}{key}"));
}

/// The observation fields an answer leaves out.
fn absent_fields(message: &ObservedMessage) -> BTreeSet<&'static str> {
    let fields: [(&'static str, bool); 13] = [
        ("family", message.family.is_some()),
        ("ordinal", message.ordinal.is_some()),
        ("torch_device", message.torch_device.is_some()),
        ("ran_on", message.ran_on.is_some()),
        ("lands_on", message.lands_on.is_some()),
        ("current_after", message.current_after.is_some()),
        ("selected", message.selected.is_some()),
        ("covers", message.covers.is_some()),
        ("vendor", message.vendor.is_some()),
        ("archs", message.archs.is_some()),
        ("torch_device_count", message.torch_device_count.is_some()),
        ("runtime_devices", message.runtime_devices.is_some()),
        ("retained_bytes", message.retained_bytes.is_some()),
    ];
    fields
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(key, _)| key)
        .collect()
}

/// A declaration's families in words: `cuda, rocm`, or `no family`.
fn families(declaration: &KernelDeclaration) -> String {
    if declaration.families.is_empty() {
        "no family".into()
    } else {
        declaration.families.join(", ")
    }
}

fn declares(declaration: &KernelDeclaration, family: Family) -> bool {
    declaration
        .families
        .iter()
        .any(|f| f == "all" || f == family.as_str())
}

/// A live warmup's forward outside the tolerance it is judged by (the project's own against its reference
/// kernel, where the project states one; else the seed's against the FP64 oracle) is a failure of the
/// kernel's own contract (it computes the wrong result), whatever the scenario expects. Both errors are
/// named.
fn numerics(observed: &Observed) -> Option<Mismatch> {
    let numerics = observed.numerics.as_ref()?;
    let finite = numerics.max_abs_error.is_finite()
        && numerics.reference_max_abs_error.is_none_or(f64::is_finite);
    let dtype = numerics.dtype();
    let expected = match (&numerics.reference, &numerics.tolerance_source) {
        (Some(reference), Some(source)) => format!(
            "the {dtype} forward within atol + rtol·|reference| of {reference}'s output, the project's own tolerance (rtol = {}, atol = {}; {source})",
            numerics.rtol, numerics.atol
        ),
        (None, Some(source)) => format!(
            "the {dtype} forward within atol + rtol·|oracle| of the FP64 dequantize-and-matmul oracle, the project's own tolerance (rtol = {}, atol = {}; {source})",
            numerics.rtol, numerics.atol
        ),
        _ => format!(
            "the {dtype} forward within atol + rtol·|oracle| of the FP64 dequantize-and-matmul oracle (the seed's rtol = {}, atol = {}: the project states no tolerance for it)",
            numerics.rtol, numerics.atol
        ),
    };
    let against_reference = match (&numerics.reference, numerics.reference_max_abs_error) {
        (Some(reference), Some(error)) => format!("max |error| {error:e} against {reference}, "),
        _ => String::new(),
    };
    (!numerics.within || !finite).then(|| Mismatch {
        key: "numerics".into(),
        expected,
        actual: format!(
            "{against_reference}max |error| {:e} against the FP64 oracle{}",
            numerics.max_abs_error,
            numerics
                .shape
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        ),
        conformance: Some(Conformance::contract()),
    })
}

#[cfg(test)]
mod tests;
