//! Scenario files: the format, loading with located diagnostics, running, and comparing.

pub mod coverage;
pub mod error;
pub mod expect;
pub mod format;
pub mod live;
pub mod load;
pub mod matrix;
pub mod model;
pub mod observed;
pub mod run;
pub mod schema;
pub mod suite;
pub mod worker;

pub use error::{CorpusError, LoadError, ProfileError, Snippet};
pub use load::{
    ProfileSources, expand_scenarios, find_scenarios, load_profile, load_scenario,
    load_scenario_with, load_scenarios_with, root_of,
};
pub use model::Scenario;
pub use run::{ScenarioReport, Status, run_scenario};
