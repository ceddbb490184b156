//! Running one scenario and judging it: its steps against a runtime wrapped by the recorder (`run`), each
//! step's observations compared with its expectations (`expect`), the typed outcome (`status`), a scenario on
//! the simulated runtime of its host and the counts of many reports (`simulated`), and which kernel paths a
//! corpus exercised (`coverage`).

pub mod coverage;
pub(crate) mod expect;
pub(crate) mod run;
pub(crate) mod simulated;
pub(crate) mod status;

pub use expect::Mismatch;
pub use run::{ScenarioReport, StepReport, run_scenario};
pub use simulated::{Summary, run_simulated};
pub use status::{HarnessFault, Skip, Status};
