//! Conformance levels: which expectations bind which subject.
//!
//! The corpus is a conformance suite. Every expectation belongs to one [`Level`]:
//! - [`Level::Policy`]: what the accelerator-family policy (AGENTS.md, the seed) requires of any correct
//!   dispatch code; it names the [`Rule`] it checks, so a failure is attributed by data.
//! - [`Level::Contract`]: a fact of one catalog's declarations (which kernel declares which family, which
//!   kernel selection picks). A subject is judged against its *own* declared contract, never devsim's.
//! - [`Level::Reference`]: a detail of devsim's reference model (exact call counts, message wording,
//!   extension-load timing beyond the seed's requirement); binding only for a subject that claims it.
//!
//! Levels default by expectation key ([`default_for`]); a scenario overrides a default, or settles one that
//! is ambiguous, in a `levels` table (`docs/conformance.md`).

mod assign;
mod rules;
mod spelling;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use assign::{DefaultLevel, StepContext, default_for};
pub use rules::{Rule, rule, rules};
pub use spelling::policy_spelling;

pub use devsim_metadata::Level;

/// An expectation's level, and for a policy expectation the rule it checks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Conformance {
    /// The level.
    pub level: Level,
    /// The policy rule id (`inventory/rules.toml`); only with [`Level::Policy`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

impl Conformance {
    /// A policy expectation checking `rule` (an id of [`rules`]).
    pub fn policy(rule: &str) -> Self {
        Self {
            level: Level::Policy,
            rule: Some(rule.to_string()),
        }
    }

    /// A contract expectation.
    pub fn contract() -> Self {
        Self {
            level: Level::Contract,
            rule: None,
        }
    }

    /// A reference-model expectation.
    pub fn reference() -> Self {
        Self {
            level: Level::Reference,
            rule: None,
        }
    }
}

impl fmt::Display for Conformance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.rule {
            Some(rule) => write!(f, "{}:{rule}", self.level),
            None => write!(f, "{}", self.level),
        }
    }
}

/// Why a written level cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LevelError {
    /// Not `policy:<rule>`, `contract` or `reference`.
    #[error("read level `{0}`: expected `policy:<rule>`, `contract` or `reference`")]
    UnknownLevel(String),
    /// `policy` without a rule id.
    #[error(
        "read level `policy`: a policy expectation names its rule, `policy:<rule>` ({})",
        rule_ids()
    )]
    PolicyWithoutRule,
    /// A rule id the table lacks.
    #[error("find policy rule `{id}`: expected one of {ids}", id = .0, ids = rule_ids())]
    UnknownRule(String),
    /// A rule given to a level that takes none.
    #[error("read level `{0}`: only `policy` names a rule")]
    RuleOnNonPolicy(String),
}

fn rule_ids() -> String {
    rules()
        .iter()
        .map(|r| r.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Conformance {
    type Err = LevelError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (level, rule) = match text.split_once(':') {
            Some((level, rule)) => (level, Some(rule)),
            None => (text, None),
        };
        let level: Level = level
            .parse()
            .map_err(|_| LevelError::UnknownLevel(text.to_string()))?;
        match (level, rule) {
            (Level::Policy, None) => Err(LevelError::PolicyWithoutRule),
            (Level::Policy, Some(id)) => match rules::rule(id) {
                Some(_) => Ok(Conformance::policy(id)),
                None => Err(LevelError::UnknownRule(id.to_string())),
            },
            (_, Some(_)) => Err(LevelError::RuleOnNonPolicy(text.to_string())),
            (level, None) => Ok(Conformance { level, rule: None }),
        }
    }
}

/// The key of a trace rule's expectation on one event: `trace.never.nvidia_capability`.
pub fn trace_key(rule: &str, event: &str) -> String {
    format!("trace.{rule}.{event}")
}

/// The key of an `order` rule (one expectation over its whole list).
pub const ORDER_KEY: &str = "trace.order";

/// The resolved level of every expectation of one table, by key (`ok`, `family`,
/// `trace.never.nvidia_capability`, `trace.order` ...).
///
/// A list sorted by key, not a map: a table has a handful of expectations, and a scenario of a million steps
/// holds one of these per step.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Levels(Vec<(String, Conformance)>);

impl Levels {
    /// Where `key` is, or would be inserted.
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(have, _)| have.as_str().cmp(key))
    }

    /// The level of the expectation `key`, if it has one.
    pub fn get(&self, key: &str) -> Option<&Conformance> {
        self.find(key).ok().map(|at| &self.0[at].1)
    }

    /// Sets `key`'s level.
    pub fn insert(&mut self, key: String, conformance: Conformance) {
        match self.find(&key) {
            Ok(at) => self.0[at].1 = conformance,
            Err(at) => self.0.insert(at, (key, conformance)),
        }
    }

    /// Every key with its level, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Conformance)> {
        self.0.iter().map(|(key, conformance)| (key, conformance))
    }
}

impl fmt::Debug for Levels {
    /// As the map it stands for: `Levels({"ok": Conformance { .. }})`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Map<'a>(&'a Levels);
        impl fmt::Debug for Map<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map().entries(self.0.iter()).finish()
            }
        }
        f.debug_tuple("Levels").field(&Map(self)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_as_a_map_of_key_to_level() {
        let mut levels = Levels::default();
        let mut map = std::collections::BTreeMap::new();
        for (key, level) in [
            ("trace.order", Conformance::reference()),
            ("ok", Conformance::contract()),
            ("family", Conformance::policy("normalize-aliases")),
            ("ok", Conformance::reference()),
        ] {
            levels.insert(key.to_string(), level.clone());
            map.insert(key.to_string(), level);
        }
        assert!(
            levels.iter().eq(map.iter()),
            "key order, the last level kept"
        );
        assert_eq!(levels.get("ok"), Some(&Conformance::reference()));
        assert_eq!(levels.get("missing"), None);
        assert_eq!(format!("{levels:?}"), format!("Levels({map:?})"));
    }

    #[test]
    fn written_levels_read_back_and_bad_ones_say_what_was_expected() {
        for text in ["policy:no-cross-vendor-probe", "contract", "reference"] {
            let read: Conformance = text.parse().expect("a level");
            assert_eq!(read.to_string(), text);
        }
        assert_eq!(
            "policy".parse::<Conformance>(),
            Err(LevelError::PolicyWithoutRule)
        );
        assert_eq!(
            "policy:nope".parse::<Conformance>(),
            Err(LevelError::UnknownRule("nope".into()))
        );
        assert_eq!(
            "contract:declared-families".parse::<Conformance>(),
            Err(LevelError::RuleOnNonPolicy(
                "contract:declared-families".into()
            ))
        );
        let unknown = "strict".parse::<Conformance>().expect_err("unknown");
        assert!(unknown.to_string().contains("expected `policy:<rule>`"));
    }
}
