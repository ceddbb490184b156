//! Conformance levels: how binding an expectation is, and for whom (`docs/conformance.md`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How binding an expectation is, and for whom.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Required of any correct dispatch code by the accelerator-family policy.
    Policy,
    /// A fact of one catalog's declarations, judged against the subject's own contract.
    Contract,
    /// A detail of devsim's reference model.
    Reference,
}

impl Level {
    /// Every level, most binding first.
    pub const EVERY: [Level; 3] = [Level::Policy, Level::Contract, Level::Reference];

    /// Its name in files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Policy => "policy",
            Level::Contract => "contract",
            Level::Reference => "reference",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Level {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Level::EVERY
            .into_iter()
            .find(|level| level.as_str() == text)
            .ok_or_else(|| text.to_string())
    }
}
