//! Subjects: the dispatch code being judged.
//!
//! A [`Subject`] runs one scenario and reports how it went. [`CatalogSubject`] is a [`crate::Catalog`] in
//! this process on the simulated runtime (or live); [`ProcessSubject`] is dispatch code in another process,
//! in any language, speaking the subject protocol (`docs/subject-protocol.md`, [`protocol`]).

mod answer;
mod applicable;
mod catalog;
mod choose;
mod decode;
pub(crate) mod encode;
mod error;
mod handshake;
pub(crate) mod judge;
mod lanes;
pub(crate) mod process;
mod session;
mod spec;

use std::fmt;
use std::time::{Duration, Instant};

pub use answer::{Judged, judge_answer};
pub use catalog::CatalogSubject;
pub use choose::{ChosenSubject, SubjectRequest, catalog_subject, choose_subject};
pub use devsim_metadata::protocol;
pub use error::SubjectError;
pub use handshake::{Capabilities, handshake};
pub use lanes::{Lanes, useful_lanes};
pub use process::ProcessSubject;
pub use spec::{SOURCE_VARIABLE, SubjectSpec};

use crate::runner::ScenarioReport;
use crate::scenario::Scenario;

/// Where the code under test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    /// A catalog inside the devsim process.
    Catalog,
    /// Another process speaking the subject protocol.
    Process,
}

impl fmt::Display for SubjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SubjectKind::Catalog => "in-process catalog",
            SubjectKind::Process => "process",
        })
    }
}

/// What [`Subject::run_all`] tells as it goes; scenarios are named by their index.
#[derive(Debug)]
pub enum RunEvent {
    /// The scenario started.
    Started(usize),
    /// The scenario finished with this report, after this long.
    Finished(usize, Box<ScenarioReport>, Duration),
}

/// The dispatch code being judged.
pub trait Subject {
    /// How reports name it.
    fn name(&self) -> &str;
    /// The version of the code under test.
    fn version(&self) -> &str;
    /// Where it runs.
    fn kind(&self) -> SubjectKind;
    /// Runs one scenario: every scenario gets a report naming this subject, whatever the subject does.
    fn run(&mut self, scenario: &Scenario) -> ScenarioReport;

    /// Runs every scenario, telling `event` when each starts and finishes (in order here; a subject that
    /// runs several at once, [`Lanes`], as they happen).
    fn run_all(&mut self, scenarios: &[Scenario], event: &mut dyn FnMut(RunEvent)) {
        for (index, scenario) in scenarios.iter().enumerate() {
            event(RunEvent::Started(index));
            let began = Instant::now();
            let report = self.run(scenario);
            event(RunEvent::Finished(index, Box::new(report), began.elapsed()));
        }
    }

    /// One line naming the subject: `gptqmodel 7.7.0 (process)`.
    fn describe(&self) -> String {
        format!("{} {} ({})", self.name(), self.version(), self.kind())
    }
}
