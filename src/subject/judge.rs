//! Judging a subject's answers with the same code as in-process runs, without false green: expectations on
//! events the subject does not record are set aside, and a scenario that needed them cannot pass. So are
//! `message` fragments: they pin devsim's own wording, and another implementation words its errors its own
//! way (the error *kind* is still compared).

use std::collections::BTreeSet;

use crate::dispatch::DispatchError;
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::scenario::expect::{Mismatch, check_trace, compare};
use crate::scenario::model::{Expectations, TraceRules};
use crate::subject::protocol::ObservedMessage;
use crate::trace::{Entry, Event};

/// What the subject records, and the trace rules it could not be judged on.
pub struct Judge {
    recorded: BTreeSet<String>,
    /// Event names some rule needed but the subject does not record.
    pub unrecorded: BTreeSet<String>,
    /// Whether `message` fragments are compared (the subject words its errors as devsim does).
    compares_messages: bool,
    /// Whether some `message` fragment was set aside.
    pub messages_set_aside: bool,
}

impl Judge {
    /// A judge for a subject that records `events`; `compares_messages` when it words its errors as devsim
    /// does.
    pub fn new(events: &[String], compares_messages: bool) -> Self {
        Self {
            recorded: events.iter().cloned().collect(),
            unrecorded: BTreeSet::new(),
            compares_messages,
            messages_set_aside: false,
        }
    }

    /// The rules it can check; every name it cannot is remembered in [`Judge::unrecorded`]. An `order`
    /// rule with one unrecorded name is set aside whole.
    fn checkable(&mut self, rules: &TraceRules) -> TraceRules {
        let mut keep = |name: &String| {
            let known = self.recorded.contains(name);
            if !known {
                self.unrecorded.insert(name.clone());
            }
            known
        };
        let never = rules.never.iter().filter(|n| keep(n)).cloned().collect();
        let once = rules.once.iter().filter(|n| keep(n)).cloned().collect();
        let count = rules
            .count
            .iter()
            .filter(|(n, _)| keep(n))
            .cloned()
            .collect();
        // Every name is visited (not short-circuited) so each unrecorded one is remembered.
        let order_kept = rules.order.iter().filter(|n| keep(n)).count();
        let order_ok = order_kept == rules.order.len();
        TraceRules {
            never,
            once,
            count,
            order: if order_ok {
                rules.order.clone()
            } else {
                Vec::new()
            },
        }
    }

    /// The expectations that can be checked, conditional tables included: trace rules on recorded
    /// events, and no `message` fragment.
    fn checkable_expectations(&mut self, expect: &Expectations) -> Expectations {
        let compares = self.compares_messages;
        if expect.message.is_some() && !compares {
            self.messages_set_aside = true;
        }
        Expectations {
            trace: self.checkable(&expect.trace),
            message: expect.message.clone().filter(|_| compares),
            when_ok: expect
                .when_ok
                .as_ref()
                .map(|branch| Box::new(self.checkable_expectations(branch))),
            when_refused: expect
                .when_refused
                .as_ref()
                .map(|branch| Box::new(self.checkable_expectations(branch))),
            ..expect.clone()
        }
    }

    /// Compares a step with its checkable expectations.
    pub fn step(
        &mut self,
        expect: &Expectations,
        observed: &Observed,
        entries: &[Entry],
    ) -> Vec<Mismatch> {
        let expect = self.checkable_expectations(expect);
        compare(&expect, observed, entries)
    }

    /// Why a scenario whose checkable expectations all held still cannot pass, if it cannot.
    pub fn unchecked(&self, subject: &str) -> Option<String> {
        let mut parts = Vec::new();
        if !self.unrecorded.is_empty() {
            let names: Vec<&str> = self.unrecorded.iter().map(String::as_str).collect();
            parts.push(format!("does not record {}", names.join(", ")));
        }
        if self.messages_set_aside {
            parts.push(
                "words its errors its own way (devsim's message fragments were not checked)".into(),
            );
        }
        (!parts.is_empty()).then(|| format!("subject {subject} {}", parts.join(", and ")))
    }

    /// Checks the scenario-level rules, checkable ones only.
    pub fn scenario(&mut self, rules: &TraceRules, entries: &[Entry]) -> Vec<Mismatch> {
        let rules = self.checkable(rules);
        check_trace(&rules, entries, "expect.trace")
    }
}

/// An answer devsim cannot accept as an observation.
pub type Invalid = String;

/// Turns an `observed` message into what expectations are compared with, and its trace into entries.
/// Events must be devsim names declared in the handshake; error kinds must be devsim's.
pub fn observed(
    message: &ObservedMessage,
    declared: &[String],
) -> Result<(Observed, Vec<Entry>), Invalid> {
    let error = match (message.ok, &message.error) {
        (true, None) => None,
        (true, Some(_)) => return Err("`ok` is true but an `error` is given".into()),
        (false, None) => Some(ErrorOutput {
            kind: "(unclassified)".into(),
            message: "(no message)".into(),
        }),
        (false, Some(error)) => {
            let kind = match &error.kind {
                Some(kind) if DispatchError::KINDS.contains(&kind.as_str()) => kind.clone(),
                Some(kind) => {
                    return Err(format!(
                        "error kind `{kind}` is not one of devsim's ({})",
                        DispatchError::KINDS.join(", ")
                    ));
                }
                None => "(unclassified)".into(),
            };
            Some(ErrorOutput {
                kind,
                message: error.message.clone(),
            })
        }
    };
    let mut entries = Vec::with_capacity(message.trace.len());
    for event in &message.trace {
        let parsed: Event = event.event.parse().map_err(|name| {
            format!(
                "trace event `{name}` is not one of devsim's ({})",
                crate::trace::event_names().join(", ")
            )
        })?;
        if !declared.contains(&event.event) {
            return Err(format!(
                "trace event `{}` was not declared in the handshake",
                event.event
            ));
        }
        entries.push(Entry::Reported {
            event: parsed,
            device: event.device.map(|d| d.to_string()),
            detail: event.detail.clone(),
        });
    }
    let observed = Observed {
        error,
        family: message.family.clone(),
        ordinal: message.ordinal,
        torch_device: message.torch_device.clone(),
        ran_on: message.ran_on.map(Into::into),
        lands_on: message.lands_on.map(Into::into),
        current_after: message.current_after,
        selected: message.selected.clone(),
        covers: message.covers.clone(),
        vendor: message.vendor.clone(),
        archs: message.archs.clone(),
        torch_device_count: message.torch_device_count,
        runtime_devices: message.runtime_devices.clone(),
        retained_bytes: None,
    };
    Ok((observed, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(never: &[&str], order: &[&str]) -> TraceRules {
        TraceRules {
            never: never.iter().map(|s| s.to_string()).collect(),
            order: order.iter().map(|s| s.to_string()).collect(),
            ..TraceRules::default()
        }
    }

    #[test]
    fn a_rule_on_an_unrecorded_event_is_set_aside_and_remembered() {
        let mut judge = Judge::new(&["set_device".into()], true);
        let kept = judge.checkable(&rules(
            &["nvidia_capability", "set_device"],
            &["set_device", "launch"],
        ));
        assert_eq!(kept.never, ["set_device"]);
        assert!(kept.order.is_empty(), "an order rule needs every name");
        let unrecorded: Vec<&str> = judge.unrecorded.iter().map(String::as_str).collect();
        assert_eq!(unrecorded, ["launch", "nvidia_capability"]);
    }
}
