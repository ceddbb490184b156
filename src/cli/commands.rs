//! The inspecting subcommands: `schema`, `check`, `probe`, `coverage`, `kernels` and `hosts`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::args::{CorpusArgs, Format, SchemaName, Selection};
use super::select::{
    contained, contained_folder, contained_subject, load_selected, print_load_errors,
};
use super::{CliError, RunOutcome};
use crate::kernel::Catalog;
use crate::output::{CheckOutput, HostsOutput, KernelsOutput};
use crate::replay::LiveContext;
use crate::reporter::json as output;
use crate::reporter::tables;
use crate::runner::ScenarioReport;
use crate::runner::coverage::{Coverage, Threshold};
use crate::scenario::schema::SchemaKind;
use crate::scenario::{CorpusError, ProfileSources};
use crate::shown::field;
use crate::subject::{ProcessSubject, Subject, SubjectSpec};

pub(super) fn schema(which: SchemaName) -> Result<RunOutcome, CliError> {
    match which {
        SchemaName::Scenario => document!("{}", SchemaKind::Scenario.render().trim_end()),
        SchemaName::Host => document!("{}", SchemaKind::Host.render().trim_end()),
        SchemaName::SubjectProtocol => document!(
            "{}",
            serde_json::to_string_pretty(&crate::subject::protocol::schema())?
        ),
    }
    Ok(RunOutcome::Passed)
}

pub(super) fn check_subject(subject: &str, source: Option<&Path>) -> Result<RunOutcome, CliError> {
    contained_subject(subject)?;
    let subject = ProcessSubject::start(SubjectSpec::parse_with_source(subject, source)?)?;
    let capabilities = subject.capabilities();
    for line in tables::handshake(&subject.describe(), subject.start_time(), capabilities) {
        say!("{line}");
    }
    if let Some(warning) = capabilities.deprecation() {
        warn!("{}", field(warning));
    }
    // Information, never failures: devsim judges each kernel against the subject's column.
    for line in tables::declared_contract(&capabilities.declared, &Catalog::reference()) {
        say!("{line}");
    }
    Ok(RunOutcome::Passed)
}

pub(super) fn probe(
    write: Option<String>,
    force: bool,
    root: PathBuf,
    require_gpu: Option<usize>,
) -> Result<RunOutcome, CliError> {
    let live = LiveContext::detect(None);
    if live.machine.gpus.is_empty() {
        warn!("{}", live.describe());
    }
    let text = crate::probe::profile_text(&live.machine, SystemTime::now());
    match write {
        None => document!("{}", text.trim_end()),
        Some(name) => {
            contained_folder("--root", &root)?;
            let path = crate::probe::write_profile(&root, &name, &text, force)?;
            say!("wrote {}", path.display());
        }
    }
    if live.driver_failing() {
        return Ok(RunOutcome::DriverFailing(live.unavailable.join("; ")));
    }
    if let Some(required) = require_gpu {
        let real = if live.machine.fake {
            0
        } else {
            live.machine.gpus.len()
        };
        if real < required {
            return Ok(RunOutcome::TooFewGpus {
                required,
                found: live.describe(),
            });
        }
    }
    Ok(RunOutcome::Passed)
}

pub(super) fn check(
    catalog: &Catalog,
    paths: &[PathBuf],
    selection: &Selection,
    corpus: &CorpusArgs,
    format: Format,
) -> Result<RunOutcome, CliError> {
    let (scenarios, errors) = load_selected(catalog, paths, selection, corpus)?;
    match format {
        Format::Human => {
            print_load_errors(&errors);
            say!(
                "{} scenario(s) loaded, {} failed to load",
                scenarios.len(),
                errors.len()
            );
        }
        Format::Json => {
            let document = CheckOutput {
                version: crate::output::VERSION,
                scenarios: scenarios.iter().map(output::checked).collect(),
                load_errors: errors.iter().map(output::load_error).collect(),
            };
            document!("{}", serde_json::to_string_pretty(&document)?);
        }
    }
    Ok(RunOutcome::of_counts(errors.len(), 0))
}

pub(super) fn coverage(
    catalog: &Catalog,
    paths: &[PathBuf],
    threshold_file: &Path,
    corpus: &CorpusArgs,
    format: Format,
) -> Result<RunOutcome, CliError> {
    let selection = Selection {
        tags: Vec::new(),
        filters: Vec::new(),
    };
    let (scenarios, errors) = load_selected(catalog, paths, &selection, corpus)?;
    print_load_errors(&errors);
    let reports: Vec<ScenarioReport> = scenarios
        .iter()
        .map(|scenario| crate::runner::run_simulated(scenario, catalog))
        .collect();
    let runs: Vec<_> = scenarios.iter().zip(&reports).collect();
    let counted = Coverage::of(catalog, &runs);
    let threshold = Threshold::read(threshold_file)?;
    let gaps = counted.gaps(&threshold);
    match format {
        Format::Human => {
            for line in tables::coverage(&counted, threshold_file, &gaps) {
                say!("{line}");
            }
        }
        Format::Json => document!(
            "{}",
            serde_json::to_string_pretty(&output::coverage(&counted, &threshold, &gaps))?
        ),
    }
    let failed = reports.iter().filter(|r| r.status.fails_run()).count();
    if !gaps.is_empty() {
        return Ok(RunOutcome::CoverageGaps { count: gaps.len() });
    }
    Ok(RunOutcome::of_counts(errors.len(), failed))
}

pub(super) fn kernels(catalog: &Catalog, format: Format) -> Result<RunOutcome, CliError> {
    match format {
        Format::Json => {
            let document = KernelsOutput {
                version: crate::output::VERSION,
                kernels: catalog.iter().map(|k| output::kernel(k.spec())).collect(),
            };
            document!("{}", serde_json::to_string_pretty(&document)?);
        }
        Format::Human => {
            for line in tables::kernels(catalog) {
                say!("{line}");
            }
        }
    }
    Ok(RunOutcome::Passed)
}

pub(super) fn hosts(
    root: PathBuf,
    folders: Vec<PathBuf>,
    format: Format,
) -> Result<RunOutcome, CliError> {
    for folder in &folders {
        contained("--hosts", folder)?;
    }
    let sources = if folders.is_empty() {
        contained_folder("the folder", &root)?;
        ProfileSources::for_paths(&[root])
    } else {
        ProfileSources::folders(folders).map_err(CorpusError::from)?
    };
    let (profiles, errors) = sources.load_all().map_err(CorpusError::from)?;
    match format {
        Format::Json => {
            let document = HostsOutput {
                version: crate::output::VERSION,
                hosts: profiles.iter().map(output::host).collect(),
                load_errors: errors.iter().map(output::load_error).collect(),
            };
            document!("{}", serde_json::to_string_pretty(&document)?);
        }
        Format::Human => {
            print_load_errors(&errors);
            for line in tables::hosts(&profiles, sources.configured()) {
                say!("{line}");
            }
        }
    }
    Ok(RunOutcome::of_counts(errors.len(), 0))
}
