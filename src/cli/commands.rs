//! The inspecting subcommands: `schema`, `check`, `probe`, `coverage`, `kernels` and `hosts`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::args::{CorpusArgs, Format, SchemaName, Selection};
use super::select::{contained, contained_subject, load_selected, print_load_errors};
use super::{CliError, RunOutcome};
use crate::kernel::Catalog;
use crate::output::{CheckOutput, HostsOutput, KernelsOutput};
use crate::replay::LiveContext;
use crate::reporter::json as output;
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
    say!(
        "subject: {} (handshake in {:.1} ms)",
        field(subject.describe()),
        subject.start_time().as_secs_f64() * 1e3
    );
    say!("  actions: {}", field(capabilities.actions.join(", ")));
    say!("  kernels: {}", field(capabilities.kernels.join(", ")));
    say!("  events: {}", field(capabilities.events.join(", ")));
    if let Some(warning) = capabilities.deprecation() {
        warn!("{}", field(warning));
    }
    if !capabilities.declared.is_empty() {
        // Information, never failures: a project's declarations are its own decision. devsim judges each
        // kernel against the subject's column.
        say!("  declared contract (the subject's own, beside devsim's reference catalog):");
        let reference = Catalog::reference();
        let rows: Vec<[String; 4]> = capabilities
            .declared
            .iter()
            .map(|d| {
                let devsim = reference
                    .get(&d.name)
                    .map_or_else(|_| "-".into(), |k| k.spec().families_text());
                let own = if d.families.is_empty() {
                    "(none)".to_string()
                } else {
                    d.families.join(", ")
                };
                let differs = if own == devsim { "" } else { "differs" };
                [
                    field(&d.name).to_string(),
                    field(own).to_string(),
                    devsim,
                    differs.to_string(),
                ]
            })
            .collect();
        let width = |i: usize| rows.iter().map(|r| r[i].len()).max().unwrap_or(0).max(6);
        let (w0, w1, w2) = (width(0), width(1), width(2));
        say!("    {:w0$}  {:w1$}  devsim", "kernel", "subject");
        for [name, own, devsim, differs] in &rows {
            let line = format!("    {name:w0$}  {own:w1$}  {devsim:w2$}  {differs}");
            say!("{}", line.trim_end());
        }
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
            say!("{}", counted.table().trim_end());
            say!("cells: ran/refused steps of passing scenarios; - none");
            say!(
                "threshold {}: {} gap(s)",
                threshold_file.display(),
                gaps.len()
            );
            for gap in &gaps {
                say!("  not exercised: {gap}");
            }
        }
        Format::Json => document!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "version": crate::output::VERSION,
                "coverage": counted,
                "threshold": threshold,
                "gaps": gaps,
            }))?
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
            say!(
                "{:<22} {:<12} {:<26} {:>4} {:<5} {:<14} {:<18} arch",
                "name",
                "method",
                "families",
                "prio",
                "auto",
                "extension",
                "rocm (inventory)"
            );
            let inventory = crate::kernel::audit::Inventory::reference();
            for kernel in catalog.iter() {
                let spec = kernel.spec();
                // The ROCm decision the inventory records for the kernel (`-`: a kernel it does not list).
                let rocm = inventory
                    .row(&spec.name)
                    .map_or("-", |row| row.rocm.as_str());
                say!(
                    "{:<22} {:<12} {:<26} {:>4} {:<5} {:<14} {:<18} {}",
                    spec.name,
                    spec.method.as_str(),
                    spec.families_text(),
                    spec.priority,
                    if spec.selectable { "yes" } else { "no" },
                    spec.extension.as_deref().unwrap_or("-"),
                    rocm,
                    spec.arch_text()
                );
            }
            say!("{} kernels", catalog.len());
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
            for host in &profiles {
                let gpus: Vec<String> = host.gpus.iter().map(|g| g.arch.to_string()).collect();
                let foreign: Vec<String> = host
                    .foreign_gpus
                    .iter()
                    .map(|g| g.arch.to_string())
                    .collect();
                say!(
                    "{:<14} torch={:<5} gpus=[{}]{}",
                    field(&host.name),
                    host.torch,
                    gpus.join(", "),
                    if foreign.is_empty() {
                        String::new()
                    } else {
                        format!(" foreign=[{}]", foreign.join(", "))
                    }
                );
            }
            let mut searched: Vec<String> = sources
                .configured()
                .iter()
                .map(|f| field(f.display()).to_string())
                .collect();
            searched.push("the built-in profiles".into());
            say!(
                "{} host profile(s) from {}",
                profiles.len(),
                searched.join(", ")
            );
        }
    }
    Ok(RunOutcome::of_counts(errors.len(), 0))
}
