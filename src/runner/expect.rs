//! Comparing what a step produced with what its scenario expects.

use serde::{Deserialize, Serialize};

use crate::conformance::{Conformance, Levels, ORDER_KEY, trace_key};
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::scenario::model::{Expectations, ExpectedOrdinal, TraceRules};
use crate::trace::Entry;

/// One expected-versus-actual difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The expectation key (`ran_on`, `trace.never` ...).
    pub key: String,
    /// What the scenario expects.
    pub expected: String,
    /// What happened.
    pub actual: String,
    /// The expectation's level and rule; `None` for a difference that is no expectation of the scenario
    /// (the harness or the subject's process broke down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conformance: Option<Conformance>,
}

impl Mismatch {
    /// A difference that is no expectation of the scenario: the harness or the subject's process broke
    /// down.
    pub fn breakdown(
        key: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            expected: expected.into(),
            actual: actual.into(),
            conformance: None,
        }
    }
}

fn check(out: &mut Vec<Mismatch>, key: &str, expected: Option<&str>, actual: Option<String>) {
    let Some(expected) = expected else { return };
    let actual = actual.unwrap_or_else(|| "(nothing)".into());
    if expected != actual {
        out.push(Mismatch {
            key: key.into(),
            expected: expected.into(),
            actual,
            conformance: None,
        });
    }
}

/// Every difference between a step's expectations and what it produced, each with its expectation's level.
pub fn compare<'a>(
    expect: &Expectations,
    observed: &Observed,
    entries: impl Iterator<Item = &'a Entry> + Clone,
) -> Vec<Mismatch> {
    let mut out = compare_fields(expect, observed);
    for mismatch in &mut out {
        mismatch.conformance = expect.levels.get(&mismatch.key).cloned();
    }
    out.extend(check_trace(
        &expect.trace,
        entries.clone(),
        "trace",
        &expect.levels,
    ));
    let (branch, prefix) = match observed.error {
        None => (&expect.when_ok, "when_ok"),
        Some(_) => (&expect.when_refused, "when_refused"),
    };
    if let Some(branch) = branch {
        out.extend(
            compare(branch, observed, entries)
                .into_iter()
                .map(|m| Mismatch {
                    key: format!("{prefix}.{}", m.key),
                    ..m
                }),
        );
    }
    out
}

/// The differences of the table's own fields (not its trace rules or conditional tables).
fn compare_fields(expect: &Expectations, observed: &Observed) -> Vec<Mismatch> {
    let mut out = Vec::new();
    match &observed.error {
        None if expect.ok == Some(false) => out.push(Mismatch {
            key: "ok".into(),
            expected: match &expect.error {
                Some(kind) => format!("false (error {kind})"),
                None => "false".into(),
            },
            actual: "true".into(),
            conformance: None,
        }),
        Some(ErrorOutput { kind, message }) => {
            if expect.ok == Some(true) {
                out.push(Mismatch {
                    key: "ok".into(),
                    expected: "true".into(),
                    actual: format!("false ({kind}: {message})"),
                    conformance: None,
                });
            }
            check(
                &mut out,
                "error",
                expect.error.as_deref(),
                Some(kind.clone()),
            );
            if let Some(fragment) = &expect.message {
                if !message.contains(fragment.as_str()) {
                    out.push(Mismatch {
                        key: "message".into(),
                        expected: format!("a message containing {fragment:?}"),
                        actual: message.clone(),
                        conformance: None,
                    });
                }
            }
        }
        None => {}
    }
    check(
        &mut out,
        "family",
        expect.family.as_deref(),
        observed.family.clone(),
    );
    if let Some(ordinal) = expect.ordinal {
        let expected = match ordinal {
            ExpectedOrdinal::Some(n) => n.to_string(),
            ExpectedOrdinal::None => "none".into(),
        };
        let actual = observed
            .family
            .as_ref()
            .map(|_| observed.ordinal.map_or("none".into(), |n| n.to_string()));
        check(&mut out, "ordinal", Some(&expected), actual);
    }
    check(
        &mut out,
        "torch_device",
        expect.torch_device.as_deref(),
        observed.torch_device.clone(),
    );
    check(
        &mut out,
        "ran_on",
        expect.ran_on.as_deref(),
        observed.ran_on.as_ref().map(ToString::to_string),
    );
    check(
        &mut out,
        "lands_on",
        expect.lands_on.as_deref(),
        observed.lands_on.as_ref().map(ToString::to_string),
    );
    check(
        &mut out,
        "current_after",
        expect.current_after.map(|n| n.to_string()).as_deref(),
        observed.current_after.map(|n| n.to_string()),
    );
    check(
        &mut out,
        "selected",
        expect.selected.as_deref(),
        observed.selected.clone(),
    );
    if let Some(covers) = &expect.covers {
        let mut expected = covers.clone();
        expected.sort();
        let mut actual = observed.covers.clone().unwrap_or_default();
        actual.sort();
        if expected != actual {
            out.push(Mismatch {
                key: "covers".into(),
                expected: format!("{expected:?}"),
                actual: format!("{actual:?}"),
                conformance: None,
            });
        }
    }
    check(
        &mut out,
        "vendor",
        expect.vendor.as_deref(),
        observed.vendor.clone(),
    );
    check(
        &mut out,
        "torch_device_count",
        expect.torch_device_count.map(|n| n.to_string()).as_deref(),
        observed.torch_device_count.map(|n| n.to_string()),
    );
    check(
        &mut out,
        "retained_bytes",
        expect.retained_bytes.map(|n| n.to_string()).as_deref(),
        observed.retained_bytes.map(|n| n.to_string()),
    );
    for (key, expected, actual) in [
        ("archs", &expect.archs, &observed.archs),
        (
            "runtime_devices",
            &expect.runtime_devices,
            &observed.runtime_devices,
        ),
    ] {
        if let Some(expected) = expected {
            let actual = actual.clone().unwrap_or_default();
            if *expected != actual {
                out.push(Mismatch {
                    key: key.into(),
                    expected: format!("{expected:?}"),
                    actual: format!("{actual:?}"),
                    conformance: None,
                });
            }
        }
    }
    out
}

/// Every way `entries` breaks `rules`; keys are prefixed with `prefix`, levels come from `levels`.
pub fn check_trace<'a>(
    rules: &TraceRules,
    entries: impl Iterator<Item = &'a Entry> + Clone,
    prefix: &str,
    levels: &Levels,
) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut expect_count = |rule: &str, name: &str, wanted: usize| {
        let seen = entries.clone().filter(|entry| entry.name() == name).count();
        if seen != wanted {
            out.push(Mismatch {
                key: format!("{prefix}.{rule}"),
                expected: format!("{name} x{wanted}"),
                actual: format!("{name} x{seen}"),
                conformance: levels.get(&trace_key(rule, name)).cloned(),
            });
        }
    };
    for name in &rules.never {
        expect_count("never", name, 0);
    }
    for name in &rules.once {
        expect_count("once", name, 1);
    }
    for (name, wanted) in &rules.count {
        expect_count("count", name, *wanted);
    }
    if !rules.order.is_empty() {
        let mut wanted = rules.order.iter().peekable();
        for entry in entries.clone() {
            if wanted.peek().is_some_and(|name| *name == entry.name()) {
                wanted.next();
            }
        }
        if wanted.peek().is_some() {
            out.push(Mismatch {
                key: format!("{prefix}.order"),
                expected: rules.order.join(" .. "),
                actual: shown_names(entries),
                conformance: levels.get(ORDER_KEY).cloned(),
            });
        }
    }
    out
}

/// The names of a trace for a message: the first [`SHOWN_NAMES`], then how many more there were.
fn shown_names<'a>(entries: impl Iterator<Item = &'a Entry>) -> String {
    let mut shown = Vec::new();
    let mut more = 0usize;
    for entry in entries {
        if shown.len() < SHOWN_NAMES {
            shown.push(entry.name());
        } else {
            more += 1;
        }
    }
    let mut text = shown.join(", ");
    if more > 0 {
        text.push_str(&format!(", … and {more} more"));
    }
    text
}

/// How many entry names an order mismatch shows.
const SHOWN_NAMES: usize = 64;
