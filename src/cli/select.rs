//! Which scenarios a command takes: the paths (default `./scenarios`) and the tag and name selection.

use std::path::{Path, PathBuf};

use super::CliError;
use super::args::{CorpusArgs, Selection};
use super::filter::Filter;
use crate::kernel::Catalog;
use crate::scenario::error::render;
use crate::scenario::load::load_all_named;
use crate::scenario::{CorpusError, LoadError, ProfileSources, Scenario};

/// The paths given, or `./scenarios` when none was; no such folder here is an error that says where devsim
/// looked and what to pass instead.
pub(super) fn default_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    if !paths.is_empty() {
        return Ok(paths.to_vec());
    }
    let default = PathBuf::from("scenarios");
    if !default.is_dir() {
        let here = std::env::current_dir()
            .map(|dir| {
                crate::scenario::error::escape_controls(&dir.display().to_string()).into_owned()
            })
            .unwrap_or_else(|_| "the current folder".into());
        return Err(CliError::NoDefaultScenarios { here });
    }
    Ok(vec![default])
}

/// Writes `bytes` to stdout; a reader that closed the pipe early is not an error.
pub(super) fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(bytes) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Io(error)),
        _ => Ok(()),
    }
}

/// Refuses a path argument (`flag`) that is a link resolving outside the folder it was given under, before
/// anything it names is listed or read. A path that does not resolve is left to the command to report.
pub(super) fn contained(flag: &'static str, path: &Path) -> Result<(), CliError> {
    match crate::contain::escapes_its_folder(path) {
        Ok(Some(folder)) => Err(CliError::Escapes {
            flag,
            path: path.to_path_buf(),
            folder,
        }),
        // A dangling link cannot be resolved; written through, it would create its target wherever it points.
        Err(_) if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => {
            Err(CliError::DanglingLink {
                flag,
                path: path.to_path_buf(),
            })
        }
        Ok(None) | Err(_) => Ok(()),
    }
}

/// Refuses a folder argument (`what`: `--root`, `the folder`) that is itself a link resolving outside the
/// folder it was given under, or a link to nothing, before anything below it is listed, read or written.
/// A folder that is no link (`..` included) is the user's own choice.
pub(super) fn contained_folder(what: &'static str, path: &Path) -> Result<(), CliError> {
    match crate::contain::link_escapes(path) {
        Ok(Some(folder)) => Err(CliError::Escapes {
            flag: what,
            path: path.to_path_buf(),
            folder,
        }),
        Err(_) => Err(CliError::DanglingLink {
            flag: what,
            path: path.to_path_buf(),
        }),
        Ok(None) => Ok(()),
    }
}

/// [`contained`] for `--subject`, when it names a subject file (an existing `*.toml`, as
/// [`crate::subject::SubjectSpec::parse`] reads it); a command line is run as given.
pub(super) fn contained_subject(argument: &str) -> Result<(), CliError> {
    let path = Path::new(argument);
    if path.extension().is_some_and(|e| e == "toml") && path.exists() {
        contained("--subject", path)?;
    }
    Ok(())
}

pub(super) fn print_load_errors(errors: &[LoadError]) {
    for error in errors {
        warn!("{}", render(error).trim_end());
    }
}

/// Prints each distinct load warning of `scenarios` once (a matrix file's cases share theirs), to stderr.
pub(super) fn print_load_warnings(scenarios: &[Scenario]) {
    let mut seen = std::collections::HashSet::new();
    for warning in scenarios.iter().flat_map(|s| &s.warnings) {
        let error = &warning.0;
        if seen.insert((
            error.path.clone(),
            error.line,
            error.column,
            error.message.clone(),
        )) {
            warn!("{}", render(warning).trim_end());
        }
    }
}

/// Loads the scenarios under `paths` that `selection` takes, with profiles from `corpus`; files that
/// fail to load are kept when their name is selected (their tags cannot be read, so a tag selection keeps
/// them too). Nothing to load is an error unless `--allow-empty`.
pub(super) fn load_selected(
    catalog: &Catalog,
    paths: &[PathBuf],
    selection: &Selection,
    corpus: &CorpusArgs,
) -> Result<(Vec<Scenario>, Vec<LoadError>), CliError> {
    let filter = Filter::new(selection.tags.clone(), &selection.filters)?;
    let paths = default_paths(paths)?;
    for folder in &corpus.hosts {
        contained("--hosts", folder)?;
    }
    let profiles = if corpus.hosts.is_empty() {
        ProfileSources::for_paths(&paths)
    } else {
        ProfileSources::folders(corpus.hosts.clone()).map_err(CorpusError::from)?
    };
    let (scenarios, errors) = load_all_named(&paths, catalog, &profiles)?;
    if scenarios.is_empty() && errors.is_empty() && !corpus.allow_empty {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(CorpusError::Empty {
            paths: shown.join(", "),
        }
        .into());
    }
    let total = scenarios.len() + errors.len();
    let mut tags: Vec<String> = scenarios.iter().flat_map(|s| s.tags.clone()).collect();
    tags.sort();
    tags.dedup();
    let scenarios: Vec<Scenario> = scenarios
        .into_iter()
        .filter(|s| filter.takes(&s.name, &s.tags))
        .collect();
    print_load_warnings(&scenarios);
    let errors: Vec<LoadError> = errors
        .into_iter()
        .filter(|(name, _)| filter.takes_name(name))
        .map(|(_, error)| error)
        .collect();
    if selection.is_active()
        && total > 0
        && scenarios.is_empty()
        && errors.is_empty()
        && !corpus.allow_empty
    {
        // A typo in a CI filter must not go green on zero scenarios.
        let unknown: Vec<&String> = selection
            .tags
            .iter()
            .filter(|t| !tags.contains(t))
            .collect();
        let hint = unknown
            .iter()
            .filter_map(|t| {
                crate::kernel::catalog::closest(t, tags.iter().map(String::as_str))
                    .map(|close| format!(" (tag `{t}`: did you mean `{close}`?)"))
            })
            .collect::<String>();
        let mut asked: Vec<String> = selection
            .tags
            .iter()
            .map(|t| format!("--tag {t}"))
            .collect();
        asked.extend(selection.filters.iter().map(|f| format!("--filter {f}")));
        return Err(CliError::EmptySelection {
            asked: asked.join(" "),
            total,
            hint,
        });
    }
    Ok((scenarios, errors))
}
