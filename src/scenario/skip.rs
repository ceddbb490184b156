//! Why a scenario was skipped: it could not run here, so nothing was observed, and a skip is never a pass.
//! Each cause is its own variant, so nothing downstream decides by reading a reason's words.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::runtime::live::machine::Unmet;

/// Why a scenario could not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "skip", content = "why", rename_all = "kebab-case")]
pub enum Skip {
    /// Live: this machine is not the scenario's host (build, GPU count, arch, shared memory).
    Machine(Unmet),
    /// Live: the GPU driver is present but failing, so no GPU scenario runs.
    DriverFailing(String),
    /// Live: the driver rejects a visible-device mask (this process's, or the scenario's for its worker).
    MaskRejected(String),
    /// torch's device count and the driver's view of the visible devices differ under the scenario's
    /// masks, so no one runtime can show both.
    ViewsDiffer(String),
    /// Live, through a subject: a part of the host one long-lived subject process on this machine cannot
    /// be (visible-device variables, another runtime version, a CPU build, fewer GPUs than the machine's).
    LiveSubject(String),
    /// The subject protocol cannot carry what the scenario needs (fault injection, repeated steps,
    /// retained memory, a scenario without steps).
    Protocol(String),
    /// The subject answered a step `unsupported`: its reason.
    Subject(String),
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::Machine(unmet) => unmet.fmt(f),
            Skip::DriverFailing(why) => write!(f, "the GPU driver is failing: {why}"),
            Skip::MaskRejected(why)
            | Skip::ViewsDiffer(why)
            | Skip::LiveSubject(why)
            | Skip::Protocol(why)
            | Skip::Subject(why) => f.write_str(why),
        }
    }
}

impl From<Unmet> for Skip {
    fn from(unmet: Unmet) -> Self {
        Skip::Machine(unmet)
    }
}
