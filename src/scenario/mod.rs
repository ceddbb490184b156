//! Scenario files: the format, loading with located diagnostics, running, and comparing.

pub(crate) mod coverage;
pub(crate) mod error;
pub(crate) mod expect;
pub(crate) mod format;
pub(crate) mod live;
pub(crate) mod load;
pub(crate) mod matrix;
pub(crate) mod model;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod status;
pub(crate) mod suite;
// Not part of the public API: live replay's worker processes, public only for devsim's own tests.
#[doc(hidden)]
pub mod worker;

pub use error::{CorpusError, LoadError, ProfileError, Snippet, render};
pub use expect::Mismatch;
pub use load::{
    ProfileSources, SHIPPED, decode, expand_scenarios, find_scenarios, load_profile, load_scenario,
    load_scenario_with, load_scenarios_with, root_of,
};
pub use model::{Action, Expectations, ExpectedOrdinal, Scenario, Step, TraceRules};
pub use run::{ScenarioReport, StepReport, run_scenario};
pub use schema::SchemaKind;
pub use status::Status;
pub use status::{HarnessFault, Skip};
pub use suite::{Summary, load_all, load_all_with, run_simulated};
