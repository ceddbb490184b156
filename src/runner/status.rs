//! How a scenario ended ([`Status`]), with a skip's cause ([`Skip`]) and a harness failure ([`HarnessFault`])
//! as types of their own, so nothing downstream decides by reading a reason's words, and a failure of devsim
//! is never reported as a finding about the code under test.

use std::fmt;

use devsim_metadata::output::Outcome;
use serde::{Deserialize, Serialize};

use crate::runtime::live::machine::Unmet;

/// How a scenario ended: its [`Outcome`] (the kind, as JSON documents and baselines name it) with the
/// cause where the kind has one. [`Status::outcome`] is the one mapping from one to the other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", content = "reason", rename_all = "snake_case")]
pub enum Status {
    /// Every applicable expectation was observed and held, at least one of them at the policy level.
    Passed,
    /// At least one expectation failed.
    Failed,
    /// It could not run here: why, by cause.
    Skipped(Skip),
    /// Nothing in it applies to the subject (a kernel or action it does not have, only levels it does not
    /// claim): why.
    NotApplicable(String),
    /// Everything observed held, but some applicable expectation could not be observed: what was and was
    /// not. Never a pass.
    SetAside(String),
    /// devsim could not run or judge it: a failure of the harness, never a finding about the dispatch code.
    /// Never a pass; the run fails.
    Errored(HarnessFault),
}

impl Status {
    /// The reason of a status that has one, in words.
    pub fn reason(&self) -> Option<String> {
        match self {
            Status::Passed | Status::Failed => None,
            Status::Skipped(skip) => Some(skip.to_string()),
            Status::Errored(error) => Some(error.to_string()),
            Status::NotApplicable(reason) | Status::SetAside(reason) => Some(reason.clone()),
        }
    }

    /// Whether it fails a run: a failure of the code under test, or one of devsim's own (never hidden by
    /// `--quiet` nor left out of a command's verdict).
    pub fn fails_run(&self) -> bool {
        matches!(self, Status::Failed | Status::Errored(_))
    }

    /// Its kind, without the cause.
    pub fn outcome(&self) -> Outcome {
        match self {
            Status::Passed => Outcome::Passed,
            Status::Failed => Outcome::Failed,
            Status::Skipped(_) => Outcome::Skipped,
            Status::NotApplicable(_) => Outcome::NotApplicable,
            Status::SetAside(_) => Outcome::SetAside,
            Status::Errored(_) => Outcome::Errored,
        }
    }

    /// How reports name it: `passed`, `failed`, `skipped`, `not applicable`, `set aside`, `errored`
    /// ([`Outcome::word`]).
    pub fn word(&self) -> &'static str {
        self.outcome().word()
    }
}

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
    /// The subject broke down the same way too many times, so the run sent it no more scenarios: which
    /// breakdown. Never a pass, never a new finding (the breakdowns themselves are one).
    SubjectStopped(String),
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
            | Skip::Subject(why)
            | Skip::SubjectStopped(why) => f.write_str(why),
        }
    }
}

impl From<Unmet> for Skip {
    fn from(unmet: Unmet) -> Self {
        Skip::Machine(unmet)
    }
}

/// devsim failed to run or judge a scenario (a live worker that died or hung, a runtime that refused the
/// host, the current device that could not be set): what it was doing, and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessFault {
    /// What devsim was doing, as a fragment after "failed to" (`set the current device at start`).
    pub doing: String,
    /// What went wrong.
    pub problem: String,
}

impl HarnessFault {
    /// devsim failed at `doing` because of `problem`.
    pub fn new(doing: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            doing: doing.into(),
            problem: problem.into(),
        }
    }
}

impl HarnessFault {
    /// The subject never gave a report for a scenario it was handed.
    pub fn not_reported() -> Self {
        Self::new(
            "run the scenario",
            "the subject returned without a report for it",
        )
    }
}

impl fmt::Display for HarnessFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "devsim failed to {}: {}", self.doing, self.problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_of_devsim_fails_a_run_as_a_failure_does_and_nothing_else_does() {
        let errored = Status::Errored(HarnessFault::new(
            "run the scenario in a live worker",
            "it died",
        ));
        assert!(Status::Failed.fails_run());
        assert!(errored.fails_run());
        for status in [
            Status::Passed,
            Status::Skipped(Skip::Protocol("no step to judge".into())),
            Status::NotApplicable("no such kernel".into()),
            Status::SetAside("trace unobservable".into()),
        ] {
            assert!(!status.fails_run(), "{status:?}");
        }
        assert_eq!(
            errored.reason().as_deref(),
            Some("devsim failed to run the scenario in a live worker: it died")
        );
    }
}
