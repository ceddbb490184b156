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
use crate::host::Gpu;
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::runner::Status;
use crate::runner::expect::{Mismatch, check_trace, compare};
use crate::scenario::model::{Action, Expectations, Step, TraceRules};
use crate::subject::handshake::Capabilities;
use crate::subject::protocol::{ArchDeclaration, KernelDeclaration, ObservedMessage};
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
    /// The build's GPUs in ordinal order (as the runtime exposes them): whose arch a target has.
    gpus: Vec<Gpu>,
    /// The thread's current device as the scenario left it (its start, then each `set_device` that held):
    /// the GPU a family target means.
    current: u32,
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
            gpus: Vec::new(),
            current: 0,
            policy_observed: 0,
            others_observed: 0,
            set_aside: BTreeMap::new(),
            not_applicable: BTreeMap::new(),
        }
    }

    /// A judge for a scenario on `host`: its build, with as many GPUs as it makes visible.
    pub fn for_host(capabilities: &'a Capabilities, host: &crate::host::HostSpec) -> Self {
        let visible = host.visible().unwrap_or_default();
        let count = u32::try_from(visible.len()).unwrap_or(u32::MAX);
        let mut judge = Self::new(capabilities, host.torch, count);
        judge.gpus = visible
            .iter()
            .filter_map(|physical| host.gpus.get(*physical).cloned())
            .collect();
        judge.current = host.current;
        judge
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
        undecided: &BTreeMap<String, String>,
        prefix: &str,
        unbacked: &mut Vec<Mismatch>,
    ) {
        let levels = table.levels.clone();
        let order = table.trace.order.clone();
        table.retain(|key| {
            let conformance = levels.get(key);
            let decision = match undecided_reason(key, undecided) {
                Some(why) => Decision::NotApplicable(why),
                None => self.decide(key, conformance, action, absent, &order),
            };
            match decision {
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
        let undecided = &message.undecided;
        self.filter(&mut expect, action, &absent, undecided, "", &mut unbacked);
        for (branch, prefix) in [
            (&mut expect.when_ok, "when_ok."),
            (&mut expect.when_refused, "when_refused."),
        ] {
            if let Some(branch) = branch {
                self.filter(branch, action, &absent, undecided, prefix, &mut unbacked);
            }
        }
        let mut mismatches = compare(&expect, observed, entries.iter());
        mismatches.extend(unbacked);
        mismatches.extend(self.declared(step, observed, undecided));
        mismatches.extend(self.per_target_arch(step, observed, undecided));
        mismatches.extend(numerics(observed));
        if let (Action::SetDevice(ordinal), None) = (&step.action, &observed.error) {
            self.current = *ordinal;
        }
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
        let decided = BTreeMap::new();
        self.filter(
            &mut table,
            None,
            &BTreeSet::new(),
            &decided,
            "expect.",
            &mut unbacked,
        );
        let mut mismatches = check_trace(&table.trace, entries.iter(), "expect.trace", levels);
        mismatches.extend(unbacked);
        mismatches
    }

    /// A step the subject could not finish (`unsupported`) with the events it recorded before it stopped
    /// (`stopped`; `so_far` holds every earlier step's too). Only `never` rules can be judged on such a
    /// prefix: an event that happened stays happened, while one that would have come later is unknown. The
    /// step's own rules are judged over its events, the scenario's over all of them.
    pub fn stopped(
        &mut self,
        step: &Step,
        scenario: (&TraceRules, &Levels),
        so_far: &[Entry],
        stopped: &[Entry],
    ) -> Vec<Mismatch> {
        let never_only = |rules: &TraceRules| TraceRules {
            never: rules.never.clone(),
            ..TraceRules::default()
        };
        let mut unbacked = Vec::new();
        let action = Some(step.action.name());
        let mut own = Expectations {
            ok: None,
            trace: never_only(&step.expect.trace),
            levels: step.expect.levels.clone(),
            ..Expectations::default()
        };
        let nothing = BTreeMap::new();
        self.filter(
            &mut own,
            action,
            &BTreeSet::new(),
            &nothing,
            "",
            &mut unbacked,
        );
        let mut mismatches = check_trace(&own.trace, stopped.iter(), "trace", &own.levels);
        let mut whole = Expectations {
            ok: None,
            trace: never_only(scenario.0),
            levels: scenario.1.clone(),
            ..Expectations::default()
        };
        self.filter(
            &mut whole,
            None,
            &BTreeSet::new(),
            &nothing,
            "expect.",
            &mut unbacked,
        );
        mismatches.extend(check_trace(
            &whole.trace,
            so_far.iter().chain(stopped),
            "expect.trace",
            &whole.levels,
        ));
        mismatches
    }

    /// The checks the subject's own declarations imply for a kernel step (rule `declared-families`): a
    /// kernel refuses a family it does not declare, never refuses one it declares as `unsupported-family`,
    /// and selection never picks a kernel that does not declare the target's family. Where the project
    /// decided nothing (`undecided`: no gate on this path, a pick by backend alone) nothing is implied.
    fn declared(
        &mut self,
        step: &Step,
        observed: &Observed,
        undecided: &BTreeMap<String, String>,
    ) -> Vec<Mismatch> {
        if !self.claims(Level::Contract) || self.capabilities.declared.is_empty() {
            return Vec::new();
        }
        let decided_field = if matches!(step.action, Action::Select { .. }) {
            "selected"
        } else {
            "ok"
        };
        if let Some(why) = undecided.get(decided_field) {
            remember(
                &mut self.not_applicable,
                format!("the project decides no {decided_field} on this step: {why}"),
                "declared-families.",
                decided_field,
            );
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

    /// The checks the subject's own arch rules imply (rule `per-target-arch`, policy level, binding every
    /// subject that declares them), each on the target's own GPU: the selector's ordinal, or the current
    /// device for a family target. A kernel selected for a target, or validated for it, must admit that GPU
    /// by the rules the subject declares for it; a kernel whose declared rules admit that GPU must not refuse
    /// it as `unsupported-arch` (declared rules are the kernel's arch rules, as declared families are its
    /// families). A kernel without declared rules, a GPU no rule speaks about, and a spelling the policy does
    /// not give a meaning are not judged this way.
    fn per_target_arch(
        &mut self,
        step: &Step,
        observed: &Observed,
        undecided: &BTreeMap<String, String>,
    ) -> Option<Mismatch> {
        let (kernel, device, key) = match (&step.action, &observed.error) {
            (Action::Validate { kernel, device }, None) => (kernel.as_str(), device, "ok"),
            (Action::Validate { kernel, device }, Some(error))
                if error.kind == "unsupported-arch" =>
            {
                (kernel.as_str(), device, "error")
            }
            (Action::Select { device, .. }, None) => {
                (observed.selected.as_deref()?, device, "selected")
            }
            _ => return None,
        };
        let decided_field = if key == "error" { "ok" } else { key };
        if undecided.contains_key(decided_field) || !policy_spelling(device, step.action.name()) {
            return None;
        }
        let declaration = self
            .capabilities
            .declared
            .iter()
            .find(|d| d.name == kernel)?;
        let rules = declaration.arch.as_ref()?;
        let count = self.visible_count;
        let target = normalize(device, self.build, || Ok::<u32, DispatchError>(count)).ok()?;
        if target.family != self.build.gpu_family()? {
            return None;
        }
        let ordinal = target.ordinal.unwrap_or(self.current);
        let gpu = self.gpus.get(usize::try_from(ordinal).ok()?)?;
        let verdict = broken_rule(rules, gpu)?;
        self.policy_observed += 1;
        let written = match target.ordinal {
            Some(n) => format!("GPU {n}"),
            None => format!("the current GPU {ordinal}"),
        };
        let source = rules
            .source
            .as_deref()
            .map(|s| format!("; {s}"))
            .unwrap_or_default();
        let arch = &gpu.arch;
        let (expected, actual) = match (key, verdict) {
            ("error", Ok(())) => (
                format!(
                    "no unsupported-arch refusal (the subject's {kernel} declares {}{source}, which the target, {written}, {arch}, satisfies)",
                    described(rules)
                ),
                observed
                    .error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.kind, e.message))
                    .unwrap_or_default(),
            ),
            ("ok", Err(broken)) => (
                format!(
                    "false (the subject's {kernel} declares {broken}{source}; the target, {written}, is {arch})"
                ),
                "true".to_string(),
            ),
            ("selected", Err(broken)) => (
                format!("a kernel whose declared arch rules admit the target, {written} ({arch})"),
                format!("{kernel} (declares {broken}{source})"),
            ),
            _ => return None,
        };
        Some(Mismatch {
            key: key.into(),
            expected,
            actual,
            conformance: Some(Conformance::policy("per-target-arch")),
        })
    }

    /// The subject's declaration of `kernel`, where it declares any family: a kernel that declares none (a
    /// class without a device declaration) has declared nothing to hold it to, so nothing is implied.
    fn declaration(&self, kernel: &str) -> Option<&'a KernelDeclaration> {
        self.capabilities
            .declared
            .iter()
            .find(|d| d.name == kernel && !d.families.is_empty())
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

/// Why expectation `key` does not apply where the answer says the project decided nothing: a field named in
/// `undecided`, or the error and message of an undecided `ok`.
fn undecided_reason(key: &str, undecided: &BTreeMap<String, String>) -> Option<String> {
    let field = match key {
        "error" | "message" => "ok",
        _ => key,
    };
    undecided
        .get(field)
        .map(|why| format!("the project decides no {field} on this step: {why}"))
}

/// The observation fields an answer leaves out.
fn absent_fields(message: &ObservedMessage) -> BTreeSet<&'static str> {
    crate::subject::decode::reported_fields(message)
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

/// A kernel's declared arch rules in words: `min capability sm_90, gfx gfx11, gfx12`.
fn described(rules: &ArchDeclaration) -> String {
    let mut words = Vec::new();
    if let Some(least) = rules.min_capability {
        words.push(format!("min capability sm_{least}"));
    }
    if let Some(most) = rules.max_capability {
        words.push(format!("max capability sm_{most}"));
    }
    if !rules.gfx.is_empty() {
        words.push(format!("gfx {}", rules.gfx.join(", ")));
    }
    if let Some(least) = rules.min_smem_optin {
        words.push(format!("min shared memory {least} bytes"));
    }
    words.join(", ")
}

/// Whether `gpu` satisfies a kernel's declared arch rules: `None` when no rule speaks about it (a GPU of
/// another vendor than the rules name, and no shared-memory rule); else `Ok` or `Err` naming the rule it
/// breaks.
fn broken_rule(rules: &ArchDeclaration, gpu: &Gpu) -> Option<Result<(), String>> {
    let capability = |c: u32| format!("sm_{c}");
    let mut spoke = false;
    if let Some(have) = gpu.arch.capability() {
        let have = have.major * 10 + have.minor;
        if let Some(least) = rules.min_capability {
            spoke = true;
            if have < least {
                return Some(Err(format!("min capability {}", capability(least))));
            }
        }
        if let Some(most) = rules.max_capability {
            spoke = true;
            if have > most {
                return Some(Err(format!("max capability {}", capability(most))));
            }
        }
    }
    if let Some(target) = gpu.arch.gfx() {
        if !rules.gfx.is_empty() {
            spoke = true;
            if !rules
                .gfx
                .iter()
                .any(|g| target.base.starts_with(g.as_str()))
            {
                return Some(Err(format!("gfx {}", rules.gfx.join(", "))));
            }
        }
    }
    if let Some(least) = rules.min_smem_optin {
        spoke = true;
        if gpu.smem_optin < least {
            return Some(Err(format!(
                "min shared memory {least} bytes (the GPU opts in {})",
                gpu.smem_optin
            )));
        }
    }
    spoke.then_some(Ok(()))
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
