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
//! what a step expects, `batches` loads a long file's steps in batches across cores, [`budget`] bounds what a
//! whole corpus load asks of a run.

mod batches;
pub(crate) mod budget;
pub(crate) mod corpus;
mod expectations;
mod hints;
pub(crate) mod hosts;
mod levels;
pub(crate) mod source;
mod steps;

use std::path::{Path, PathBuf};

use crate::conformance::StepContext;
use crate::kernel::Catalog;
use crate::scenario::error::{CorpusError, LoadError};
use crate::scenario::format::{FORMAT_VERSION, ScenarioFile, StepFields};
use crate::scenario::matrix;
use crate::scenario::model::{Scenario, Step, TraceRules};
use crate::vocab::TorchBuild;
use batches::Batches;
use budget::{RunBudget, cost_of, matrix_context, refusal};
use toml::Spanned;

#[allow(deprecated)]
pub use corpus::root_of;
pub use corpus::{
    Found, MAX_DEPTH, decode, find_named, find_scenarios, read_bounded, scenario_name,
};
pub use hosts::{HOSTS_DIR, ProfileSources, SHIPPED, load_profile, profile_names};

use crate::parallel::in_parallel;
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

/// One scenario of a file (the file itself, or one case of its matrix), by name, loaded or not.
pub type Loaded = (String, Result<Scenario, LoadError>);

/// Loads one scenario file as every scenario it holds: itself, or one per case of its `[matrix]`
/// (`docs/scenario-format.md`, "Matrices"), each with its name. Never empty: a file that cannot be read or expanded
/// is one error; a case that cannot be loaded is an error of its own, named by its parameters, beside the
/// cases that load.
pub fn load_scenarios_with(
    path: &Path,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Vec<Loaded> {
    load_found(&Found::alone(path), catalog, profiles, None)
}

/// Loads a file [`find_named`] found as every scenario it holds, named from its name; with `only`, just the
/// scenario of that name (and any error of the file as a whole).
pub fn load_found(
    found: &Found,
    catalog: &Catalog,
    profiles: &ProfileSources,
    only: Option<&str>,
) -> Vec<Loaded> {
    match read_bounded(&found.path) {
        Ok(text) => expand_only(&found.path, &found.name, &text, catalog, profiles, only),
        Err(error) => vec![(found.name.clone(), Err(error))],
    }
}

/// The one scenario of `path` named `name` (a matrix case `x.toml[k=v]`, or the file's own name): only that
/// case is checked, so a test process that runs one matrix case does not check all of its file's cases.
/// Empty when the file has no scenario of that name (a load error of the file itself is still given).
pub fn load_scenario_named(
    path: &Path,
    name: &str,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Vec<Loaded> {
    load_found(&Found::alone(path), catalog, profiles, Some(name))
}

/// [`load_scenarios_with`] over text the caller already holds.
pub fn expand_scenarios(
    path: &Path,
    text: &str,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Vec<Loaded> {
    expand_only(path, &scenario_name(path), text, catalog, profiles, None)
}

/// The scenarios of `text` (its file named `base`); with `only`, just the case of that name (and any error
/// of the file as a whole).
fn expand_only(
    path: &Path,
    base: &str,
    text: &str,
    catalog: &Catalog,
    profiles: &ProfileSources,
    only: Option<&str>,
) -> Vec<Loaded> {
    let named = |scenario: Scenario| Scenario {
        name: base.to_string(),
        ..scenario
    };
    if !matrix::has_matrix(text) {
        return vec![(
            base.to_string(),
            parse_scenario(path, text, catalog, profiles).map(named),
        )];
    }
    let source = Source::new(path, text);
    let context = matrix_context(catalog, profiles);
    let cases = match matrix::plan(text, &context).map(|plan| plan.map(matrix::Plan::cases)) {
        Ok(None) => {
            return vec![(
                base.to_string(),
                parse_scenario(path, text, catalog, profiles).map(named),
            )];
        }
        Ok(Some(cases)) => cases,
        Err(error) => {
            let at = error.offset..error.offset;
            let error = source.error_with_help(at, error.message, error.help);
            return vec![(base.to_string(), Err(error))];
        }
    };
    cases
        .into_iter()
        .filter(|case| only.is_none_or(|wanted| case.name(base) == wanted))
        .map(|case| {
            let name = case.name(base);
            let scenario = match &case.text {
                Ok(text) => parse_scenario(path, text, catalog, profiles),
                Err(reason) => Err(LoadError::new(path, 1, 1, reason.clone())),
            };
            let scenario = scenario
                .map(|scenario| Scenario {
                    name: name.clone(),
                    params: case.params.clone(),
                    ..scenario
                })
                .map_err(|error| LoadError {
                    message: format!("{name}: {}", error.message),
                    ..error
                });
            (name, scenario)
        })
        .collect()
}

/// Checks a scenario's text (no size limit: the caller holds it already); `path` names it. A `[matrix]`
/// is not expanded here: see [`load_scenarios_with`].
pub fn parse_scenario(
    path: &Path,
    text: &str,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Result<Scenario, LoadError> {
    let source = Source::new(path, text);
    if let Some(offset) = text.find("[matrix]").filter(|_| matrix::has_matrix(text)) {
        return Err(source.error(
            offset..offset + "[matrix]".len(),
            "load a parametrized scenario as one: it has a [matrix]; load its cases with load_scenarios_with",
        ));
    }
    if let Some(batches) = Batches::of(text) {
        let loaded = batches.head(&source).and_then(|file| {
            checked(&source, file, profiles, |build, _| {
                batches
                    .load(source.lines(), catalog, build)
                    .map(|(steps, warnings)| {
                        source.add_warnings(warnings);
                        steps
                    })
            })
            .ok()
        });
        match loaded {
            Some(scenario) => return Ok(scenario),
            // Whatever went wrong is found again below, and reads as it always has.
            None => drop(source.take_warnings()),
        }
    }
    parse_whole(&source, catalog, profiles)
}

/// [`parse_scenario`] of the whole text at once, after the `[matrix]` check: what loading in batches
/// gives way to.
fn parse_whole(
    source: &Source,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Result<Scenario, LoadError> {
    let file: ScenarioFile = source.parse()?;
    checked(source, file, profiles, |build, steps| {
        // Consumed one by one, so each step's parsed fields are freed as soon as it is checked.
        steps
            .into_iter()
            .enumerate()
            .map(|(i, step)| load_step(source, catalog, i + 1, &step, build))
            .collect()
    })
}

/// The scenario a parsed file describes, checked: its format, description, host and expectations here, its
/// steps through `load_steps` (given the host's build and the parsed steps).
fn checked(
    source: &Source,
    file: ScenarioFile,
    profiles: &ProfileSources,
    load_steps: impl FnOnce(TorchBuild, Vec<Spanned<StepFields>>) -> Result<Vec<Step>, LoadError>,
) -> Result<Scenario, LoadError> {
    let path = source.path;
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
    let host = hosts::merged_host(source, &file.host, profiles)?;
    let expect = file.expect.unwrap_or_default();
    let trace_rules = match &expect.trace {
        Some(rules) => trace_rules(source, rules)?,
        None => TraceRules::default(),
    };
    let trace_levels = levels::resolve(
        source,
        expect.levels.as_ref(),
        trace_rules.keys(),
        &StepContext {
            action: None,
            build: host.torch,
            explicit_ordinal: false,
            expects_ok: None,
            policy_spelling: true,
        },
        ("expect", expect.trace.as_ref()),
        // Point at the rules themselves: their first name, else the levels table.
        expect
            .trace
            .as_ref()
            .and_then(|t| t.never.iter().chain(&t.once).chain(&t.order).next())
            .map(toml::Spanned::span)
            .or_else(|| expect.levels.as_ref().map(toml::Spanned::span))
            .unwrap_or(0..0),
    )?;
    let steps = load_steps(host.torch, file.steps)?;
    let mut executions = 0u64;
    for step in &steps {
        executions += u64::from(step.repeat);
        if executions > Step::MAX_EXECUTIONS {
            return Err(LoadError::new(
                path,
                step.line,
                1,
                format!(
                    "run the scenario: by step {} it asks for {executions} step executions (repeat included), more than the limit of {}",
                    step.number,
                    Step::MAX_EXECUTIONS
                ),
            ));
        }
    }
    if steps.is_empty() {
        let end = source.text.trim_end().len();
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
        trace_levels,
        steps,
        params: Vec::new(),
        warnings: source.take_warnings(),
    })
}

/// Files per worker below which a corpus is loaded on one thread: starting a thread costs about as much as
/// loading a few small files.
const FILES_PER_WORKER: usize = 16;

/// Every scenario under `paths`, loaded with the default profile folders
/// ([`ProfileSources::for_paths`]); files that fail to load come back as errors, never dropped.
pub fn load_all(
    paths: &[PathBuf],
    catalog: &Catalog,
) -> Result<(Vec<Scenario>, Vec<LoadError>), CorpusError> {
    load_all_with(paths, catalog, &ProfileSources::for_paths(paths))
}

/// Every scenario under `paths`, loaded with host profiles from `profiles`.
pub fn load_all_with(
    paths: &[PathBuf],
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Result<(Vec<Scenario>, Vec<LoadError>), CorpusError> {
    let (scenarios, errors) = load_all_named(paths, catalog, profiles)?;
    Ok((
        scenarios,
        errors.into_iter().map(|(_, error)| error).collect(),
    ))
}

/// A load error with the name of the scenario it stands for.
pub(crate) type NamedLoadError = (String, LoadError);

/// [`load_all_with`], each load error with the name of the scenario it stands for (a selection by name
/// keeps or drops it as it would the scenario). The files together are held to a run-wide budget
/// ([`budget`]), counted before any is loaded: a file that crosses it refuses the whole load, naming it.
pub(crate) fn load_all_named(
    paths: &[PathBuf],
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Result<(Vec<Scenario>, Vec<NamedLoadError>), CorpusError> {
    let mut scenarios = Vec::new();
    let mut errors = Vec::new();
    let profiles = &profiles.for_one_load();
    let files = find_named(paths)?;
    let costs = in_parallel(&files, FILES_PER_WORKER, |file| {
        cost_of(file, catalog, profiles)
    });
    let mut budget = RunBudget::default();
    for (file, cost) in files.iter().zip(costs) {
        if let Some((cost, at)) = cost {
            budget
                .ask(cost)
                .map_err(|over| CorpusError::OverBudget(Box::new(refusal(file, at, &over))))?;
        }
    }
    let loaded = in_parallel(&files, FILES_PER_WORKER, |file| {
        load_found(file, catalog, profiles, None)
    });
    for (name, loaded) in loaded.into_iter().flatten() {
        match loaded {
            Ok(scenario) => scenarios.push(scenario),
            Err(error) => errors.push((name, error)),
        }
    }
    Ok((scenarios, errors))
}
