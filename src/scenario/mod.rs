//! Scenario files: the format, the checked model, loading with located diagnostics (`load/`), matrix expansion
//! and the schema. Running and comparing are [`crate::runner`]'s; live replay is [`crate::replay`]'s.

pub(crate) mod error;
pub(crate) mod format;
pub(crate) mod load;
pub(crate) mod matrix;
pub mod migrate;
pub(crate) mod model;
pub(crate) mod schema;

pub use error::{CorpusError, LoadError, LoadWarning, ProfileError, Snippet, render};
#[allow(deprecated)]
pub use load::root_of;
pub use load::{
    Found, HOSTS_DIR, MAX_DEPTH, ProfileSources, SHIPPED, decode, expand_scenarios, find_named,
    find_scenarios, load_all, load_all_with, load_found, load_profile, load_scenario,
    load_scenario_named, load_scenario_with, load_scenarios_with, profile_names,
};
pub use model::{Action, Expectations, ExpectedOrdinal, Scenario, Step, TraceRules};
pub use schema::SchemaKind;
