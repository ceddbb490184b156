//! Loading scenario and host-profile files into checked [`Scenario`]s, with located diagnostics.
//!
//! Every error names `path:line:column`, what was expected and, for names, the closest valid one.
//! Scenario files are untrusted: no key can name a library path, a command or a real environment change
//! (`env` only sets the three visible-device variables, inside the simulated host or a child process).
//! Discovery is contained and reads are bounded ([`corpus`]); host profiles come only from configured
//! folders and the built-in ones ([`ProfileSources`]).
//!
//! One job per submodule: [`corpus`] finds and reads files, `source` turns offsets into positions and
//! errors, [`hosts`] finds and merges host profiles, `steps` decodes each action, `expectations` checks
//! what a step expects.

pub mod corpus;
mod expectations;
pub mod hosts;
mod source;
mod steps;

use std::path::Path;

use crate::kernel::Catalog;
use crate::scenario::error::LoadError;
use crate::scenario::format::{FORMAT_VERSION, ScenarioFile};
use crate::scenario::model::{Scenario, TraceRules};

pub use corpus::{MAX_FILE_BYTES, decode, find_scenarios, read_bounded, root_of, scenario_name};
pub use hosts::{HOSTS_DIR, ProfileSources, SHIPPED, load_profile, parse_profile, profile_names};

use expectations::trace_rules;
use source::Source;
use steps::load_step;

/// Loads and checks one scenario file against the catalog, with the built-in host profiles.
pub fn load_scenario(path: &Path, catalog: &Catalog) -> Result<Scenario, LoadError> {
    load_scenario_with(path, catalog, &ProfileSources::shipped())
}

/// Loads and checks one scenario file, looking host profiles up in `profiles`.
pub fn load_scenario_with(
    path: &Path,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Result<Scenario, LoadError> {
    let text = read_bounded(path)?;
    parse_scenario(path, &text, catalog, profiles)
}

/// Checks a scenario's text (no size limit: the caller holds it already); `path` names it.
pub fn parse_scenario(
    path: &Path,
    text: &str,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Result<Scenario, LoadError> {
    let source = Source::new(path, text);
    let file: ScenarioFile = source.parse()?;
    if *file.format.get_ref() != FORMAT_VERSION {
        return Err(source.error(
            file.format.span(),
            format!(
                "read format {}: this devsim reads format = {FORMAT_VERSION}",
                file.format.get_ref()
            ),
        ));
    }
    if file.description.trim().is_empty() {
        return Err(source.error(
            0..0,
            "load the scenario: `description` must be one sentence, not empty",
        ));
    }
    let host = hosts::merged_host(&source, &file.host, profiles)?;
    let trace_rules = match file.expect.and_then(|e| e.trace) {
        Some(rules) => trace_rules(&source, &rules)?,
        None => TraceRules::default(),
    };
    let steps = file
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| load_step(&source, catalog, i + 1, step))
        .collect::<Result<Vec<_>, _>>()?;
    if steps.is_empty() {
        let end = text.trim_end().len();
        return Err(source.error(
            end..end,
            "load the scenario: expected at least one [[step]]",
        ));
    }
    Ok(Scenario {
        path: path.to_path_buf(),
        name: scenario_name(path),
        description: file.description,
        tags: file.tags,
        host,
        trace_rules,
        steps,
    })
}
