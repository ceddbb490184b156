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

use crate::conformance::{Conformance, Level, Levels};
use crate::host::Gpu;
use crate::output::ObservedOutput as Observed;
use crate::runner::Status;
use crate::runner::expect::{Mismatch, check_trace, compare};
use crate::scenario::model::{Action, Expectations, Step, TraceRules};
use crate::subject::handshake::Capabilities;
use crate::subject::protocol::ObservedMessage;
use crate::trace::Entry;
use crate::vocab::TorchBuild;

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
        if let Some(why) = contract::not_judged(observed) {
            remember(&mut self.set_aside, why, "", "numerics");
        }
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

    /// A step the subject cannot perform (an action or kernel it does not have) in a scenario whose other
    /// steps it can: nothing of the step is judged, and its expectations are set aside with `why`, so the
    /// scenario can pass no more than set aside.
    pub fn lacking(&mut self, step: &Step, why: &str) {
        remember(
            &mut self.set_aside,
            why.to_string(),
            "",
            &format!("step {}", step.number),
        );
    }

    /// The scenario-level trace rules of a scenario some of whose steps were not run (`lacking`): only
    /// `never` rules are judged, since an event that happened stays happened while the steps not run
    /// might have made the others hold; those are set aside with `why`.
    pub fn scenario_in_part(
        &mut self,
        rules: &TraceRules,
        levels: &Levels,
        entries: &[Entry],
        why: &str,
    ) -> Vec<Mismatch> {
        let never = TraceRules {
            never: rules.never.clone(),
            ..TraceRules::default()
        };
        let rest = TraceRules {
            never: Vec::new(),
            ..rules.clone()
        };
        for key in rest.keys() {
            remember(&mut self.set_aside, why.to_string(), "expect.", &key);
        }
        self.scenario(&never, levels, entries)
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

mod contract;

use contract::numerics;

#[cfg(test)]
mod partial_tests;
#[cfg(test)]
mod tests;
