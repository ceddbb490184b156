//! What `devsim run|check|kernels|hosts --format json` print, as serde types: the CLI serializes them and
//! tools (and the tests) deserialize them. A leaf module: it depends on nothing else in the crate.
//!
//! Conventions: a device ordinal is a JSON number everywhere (`ordinal`, `ran_on`, `lands_on`,
//! `current_after`, trace devices); the host CPU is the string `"cpu"`. Every document carries
//! [`VERSION`]; a field is only ever added within one version.

use std::fmt;

use serde::{Deserialize, Serialize};

mod inventory;
mod run;

pub use inventory::{
    ArchRulesOutput, AuditDecision, AuditOutput, CapabilityOutput, CheckOutput, CheckedOutput,
    FaultOutput, GpuOutput, HostOutput, HostsOutput, KernelOutput, KernelsOutput, NvidiaRuleOutput,
};
pub use run::{
    ElidedOutput, ErrorOutput, FindingOutput, LiveMarkOutput, LiveStatusOutput, LoadErrorOutput,
    MismatchOutput, NumericsOutput, ObservedOutput, Outcome, RunOutput, ScenarioOutput, StepOutput,
    SubjectOutput, SummaryOutput, TraceEntryOutput,
};

/// The version of these documents.
pub const VERSION: u32 = 1;

/// What a trace entry concerned: a visible device ordinal, or a word (`"cpu"`, a device-pool key such as
/// `cuda:0`). Where work ran or data ended is a [`crate::Place`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TraceDevice {
    /// A visible device ordinal.
    Ordinal(u32),
    /// A word: `"cpu"`, a device-pool key.
    Word(String),
}

impl TraceDevice {
    /// An ordinal when `text` is one, else the word as written.
    pub fn parse(text: &str) -> Self {
        text.parse()
            .map(TraceDevice::Ordinal)
            .unwrap_or_else(|_| TraceDevice::Word(text.to_string()))
    }
}

/// The ordinal's digits or the word.
impl fmt::Display for TraceDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceDevice::Ordinal(n) => write!(f, "{n}"),
            TraceDevice::Word(word) => f.write_str(word),
        }
    }
}

pub use crate::Place;

/// Where a run happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// On the simulated runtime.
    Simulated,
    /// On the real machine (`--live`).
    Live,
}
