//! `devsim run`: the subject judged (the catalog, a subject process, live or simulated), the suite through
//! `suite::run_suite`, and the output in the format asked for.

use super::args::{RunArgs, RunFormat, default_jobs};
use super::progress::{self, Progress};
use super::select::{contained, contained_subject, load_selected, print_load_errors};
use super::{CliError, RunOutcome, color, review};
use crate::baseline::Baseline;
use crate::kernel::Catalog;
use crate::live_record::{CorpusFiles, LiveRecord};
use crate::reporter::human;
use crate::reporter::run::{JudgedSubject, RunReport};
use crate::repro;
use crate::runner::ScenarioReport;
use crate::scenario::Scenario;
use crate::shown::field;
use crate::subject::{ChosenSubject, SubjectRequest, SubjectSpec, choose_subject};
use crate::suite::{SuiteExpectations, SuiteObserver, run_suite};

pub(super) fn run(catalog: Catalog, args: RunArgs) -> Result<RunOutcome, CliError> {
    // Path arguments first: a link out of its folder is refused before anything is loaded or run.
    refuse_escaping_paths(&args)?;
    // The reproduction folder is made (or refused) before anything runs, not after a long run.
    let repro_context = args
        .repro
        .as_deref()
        .map(|dir| repro_context(dir, &args))
        .transpose()?;
    // The date a live record is written with, read first: a wrong override fails before anything runs.
    let today = match args.live {
        true => Some(crate::live_record::today()?),
        false => None,
    };
    let baseline = args.baseline.as_deref().map(Baseline::read).transpose()?;
    // A process subject's kernels are named by devsim's reference catalog.
    let reference = args.subject.as_ref().map(|_| Catalog::reference());
    let naming = reference.as_ref().unwrap_or(&catalog);
    let (scenarios, errors) = load_selected(naming, &args.paths, &args.selection, &args.corpus)?;
    let human = args.format == RunFormat::Human;
    if human {
        print_load_errors(&errors);
    }
    let request = SubjectRequest {
        subject: args.subject.as_deref(),
        source: args.subject_src.as_deref(),
        live: args.live,
        jobs: args.jobs.unwrap_or_else(default_jobs),
    };
    let ChosenSubject {
        mut subject,
        live_description,
        driver_failing,
        fake_driver,
        live_devices,
        live_record,
        warnings,
    } = choose_subject(catalog, &request, &scenarios)?;
    for warning in &warnings {
        warn!("{}", field(warning));
    }
    // What the scenarios' files hold now: a live record says it was taken on them, a read one is checked against
    // them.
    let corpus = CorpusFiles::of(&scenarios);
    // The live record a simulated run marks its findings with: the flag's, else the subject file's; one taken
    // on another corpus or subject version is stale and confirms nothing (said, never an error).
    let record = match args.live_record.as_ref().or(live_record.as_ref()) {
        Some(path) if !args.live => {
            let record = LiveRecord::read(path)?.for_subject(path, subject.name())?;
            match record.staleness(&corpus, subject.version()) {
                Some(stale) => {
                    warn!(
                        "live record {} is stale and confirms nothing: {}",
                        field(&path.display()),
                        field(&stale)
                    );
                    None
                }
                None => Some(record),
            }
        }
        _ => None,
    };
    if human {
        say!("subject: {}", field(subject.describe()));
        if let Some(line) = &live_description {
            say!("{}", field(line));
        }
    }
    let mut shown = Shown {
        progress: Progress::new(scenarios.len(), human && progress::wanted_here()),
        human,
        quiet: args.quiet,
    };
    let suite = run_suite(subject.as_mut(), &scenarios, errors.len(), &mut shown);
    shown.progress.finish();
    let plain = suite.plain_reports();
    let (summary, findings, reports) = (&suite.summary, &suite.findings, &suite.reports);
    // A live run's findings are confirmed by its own record: they failed on this machine.
    let record = match today {
        Some(date) => {
            let own = LiveRecord {
                fake_driver,
                ..LiveRecord::of(
                    subject.name(),
                    subject.version(),
                    live_devices,
                    date,
                    &plain,
                    findings,
                )
                .on_corpus(&corpus)
            };
            if let Some(path) = &args.write_live_record {
                own.write(path)?;
            }
            Some(own)
        }
        None => record,
    };
    let marks = crate::live_record::marks(findings, record.as_ref());
    let differences = match (&args.baseline, &baseline) {
        (Some(path), Some(baseline)) => Some(
            suite
                .compare(baseline, args.selection.is_active())
                .map_err(|other| CliError::BaselineSubject {
                    path: path.display().to_string(),
                    recorded: other.recorded,
                    judged: other.judged,
                })?,
        ),
        _ => None,
    };
    if let Some(path) = &args.write_baseline {
        suite.outcomes.write(path)?;
    }
    let reproductions = match (&args.repro, &repro_context) {
        (Some(dir), Some(context)) => {
            let runs = scenarios
                .iter()
                .zip(reports.iter().map(|(report, _)| report));
            let scripts = repro::scripts(findings, runs, context);
            repro::write(dir, findings, scripts, context)?
        }
        _ => Vec::new(),
    };
    if args.accept {
        review::accept_failures(&scenarios, &plain, &accept_levels(&args))?;
    }
    let judged = JudgedSubject {
        name: subject.name().to_string(),
        version: subject.version().to_string(),
        kind: subject.kind().to_string(),
    };
    let rendered = RunReport {
        subject: &judged,
        live: args.live,
        machine: live_description.as_deref(),
        fake_driver,
        scenarios: &scenarios,
        reports,
        load_errors: &errors,
        summary,
        findings,
        marks: &marks,
        baseline_differences: differences.as_deref(),
        wrote_baseline: args.write_baseline.as_deref(),
        wrote_live_record: args.write_live_record.as_deref(),
        reproductions: args.repro.as_deref().map(|dir| (dir, &reproductions[..])),
    };
    print(&rendered, args.format)?;
    let asked = SuiteExpectations {
        baseline_differences: differences,
        writes_baseline: args.write_baseline.is_some(),
        require_live: args.require_live,
        fake_driver,
        allow_fake: args.allow_fake,
        driver_failing,
    };
    Ok(RunOutcome::of_run(
        suite.verdict(&scenarios, &asked),
        args.baseline.as_deref(),
    ))
}

/// Refuses each path argument of `run` that is a link resolving outside the folder it was given under.
fn refuse_escaping_paths(args: &RunArgs) -> Result<(), CliError> {
    if let Some(subject) = &args.subject {
        contained_subject(subject)?;
    }
    let paths = [
        ("--baseline", &args.baseline),
        ("--write-baseline", &args.write_baseline),
        ("--live-record", &args.live_record),
        ("--write-live-record", &args.write_live_record),
        ("--repro", &args.repro),
    ];
    for (flag, path) in paths {
        if let Some(path) = path {
            contained(flag, path)?;
        }
    }
    Ok(())
}

/// The conformance levels `run --accept` writes pending expectations for: those asked, else every level.
fn accept_levels(args: &RunArgs) -> Vec<crate::conformance::Level> {
    if args.accept_level.is_empty() {
        crate::conformance::Level::EVERY.to_vec()
    } else {
        args.accept_level.iter().map(|&l| l.into()).collect()
    }
}

/// Prints what follows the last scenario's report in `format`: the closing lines of human output, or the
/// whole JSON or JUnit document.
fn print(rendered: &RunReport<'_>, format: RunFormat) -> Result<(), CliError> {
    match format {
        RunFormat::Human => {
            for entry in rendered.human_closing() {
                say!("{entry}");
            }
        }
        RunFormat::Json => {
            document!("{}", serde_json::to_string_pretty(&rendered.json())?);
        }
        RunFormat::Junit => document!("{}", rendered.junit()?.trim_end()),
    }
    Ok(())
}

/// What the scripts `run --repro DIR` writes share: the subject (its file relative to DIR, or its command),
/// `--subject-src`, the subject kit's folder, and the command that generates them, in canonical form.
fn repro_context(dir: &std::path::Path, args: &RunArgs) -> Result<repro::Context, CliError> {
    repro::create_folder(dir)?;
    let subject = args.subject.clone().unwrap_or_default();
    let spec = SubjectSpec::parse_with_source(&subject, args.subject_src.as_deref())?;
    let quote = |word: &str| shell_words::quote(word).into_owned();
    let mut words = vec!["devsim run --subject".to_string(), quote(&subject)];
    if let Some(source) = &args.subject_src {
        words.extend(["--subject-src".into(), quote(&source.display().to_string())]);
    }
    for tag in &args.selection.tags {
        words.extend(["--tag".into(), quote(tag)]);
    }
    for filter in &args.selection.filters {
        words.extend(["--filter".into(), quote(filter)]);
    }
    words.extend(["--repro".into(), quote(&dir.display().to_string())]);
    words.extend(args.paths.iter().map(|p| quote(&p.display().to_string())));
    Ok(repro::Context::for_subject(
        dir,
        &spec,
        &subject,
        args.subject_src.as_deref(),
        words.join(" "),
    )?)
}

/// What `devsim run` shows while the suite runs: the progress bar, and each report (failures always,
/// the rest unless `--quiet`) in human output.
pub(super) struct Shown {
    pub(super) progress: Progress,
    pub(super) human: bool,
    pub(super) quiet: bool,
}

impl SuiteObserver for Shown {
    fn started(&mut self, scenario: &Scenario) {
        self.progress.start(&scenario.name);
    }

    fn finished(&mut self, _scenario: &Scenario, report: &ScenarioReport) {
        if self.human && (report.status.fails_run() || !self.quiet) {
            self.progress
                .suspend(|| color::print(&color::report(human::scenario(report).trim_end())));
        }
        self.progress.done();
    }
}
