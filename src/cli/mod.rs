//! The `devsim` command line, as a library: a downstream crate ships its own devsim-compatible binary with
//! its own catalog in two lines of `main`:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     devsim::cli::main(devsim::Catalog::reference())
//! }
//! ```
//!
//! Live replay re-runs scenarios in child processes of the *running* binary, so a downstream binary's
//! children judge the downstream catalog.

/// Prints a line to stdout, ignoring a closed pipe (`devsim kernels | head` must not panic).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub(crate) mod bench;
mod color;
mod error;
pub(crate) mod filter;
pub(crate) mod junit;
pub(crate) mod masks;
pub(crate) mod output;
mod review;
mod side_by_side;
// Not part of the public API: public only for devsim's own tests of `probe --write` and progress.
#[doc(hidden)]
pub mod probe;
#[doc(hidden)]
pub mod progress;
mod visible;

pub use error::CliError;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use crate::baseline::Baseline;
use crate::kernel::Catalog;
use crate::output::{CheckOutput, HostsOutput, KernelsOutput, Mode, RunOutput, SubjectOutput};
use crate::report;
use crate::runner::{Expectations, SuiteObserver, Verdict, run_suite};
use crate::scenario::coverage::{Coverage, Threshold};
use crate::scenario::error::render;
use crate::scenario::live::LiveContext;
use crate::scenario::load::scenario_name;
use crate::scenario::schema::SchemaKind;
use crate::scenario::suite::load_all_with;
use crate::scenario::{CorpusError, LoadError, ProfileSources, Scenario, ScenarioReport, Status};
use crate::subject::{CatalogSubject, ProcessSubject, Subject, SubjectSpec};
use filter::Filter;
use progress::Progress;

/// The exit code of `run --live` and `probe` when a GPU driver is present but failing.
pub const EXIT_DRIVER_FAILING: u8 = 3;

/// Exit codes, for `--help` and the README.
const EXIT_CODES: &str = "Exit codes:
  0  every selected scenario passed (skips, set-asides and not-applicables allowed), or matched its baseline
  1  at least one scenario failed, changed from its baseline, or too few ran live (--require-live)
  2  a file failed to load, a selection matched nothing, or the command line or another input was wrong
  3  a GPU driver is present but failing (run --live)";

/// `devsim check`'s exit codes.
const CHECK_EXIT_CODES: &str = "Exit codes:
  0  every selected file loaded (or the subject completed its handshake)
  2  a file failed to load, a selection matched nothing, the subject's handshake was refused, or the command
     line was wrong";

/// `devsim coverage`'s exit codes.
const COVERAGE_EXIT_CODES: &str = "Exit codes:
  0  every kernel covers what the threshold file asks
  1  some kernel falls short of the threshold (the gaps are listed)
  2  a file failed to load, or the command line or the threshold file was wrong";

/// A test harness for cross-vendor GPU device dispatch.
#[derive(Parser)]
#[command(name = "devsim", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// When to colour human output: auto (a terminal without NO_COLOR), always or never.
    #[arg(long, value_enum, global = true, default_value_t = color::When::Auto)]
    color: color::When,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Text for people.
    Human,
    /// JSON for tools.
    Json,
}

/// The schemas `devsim schema` prints.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SchemaName {
    /// A scenario file.
    Scenario,
    /// A host profile (scenarios/hosts/<name>.toml).
    Host,
    /// The messages of the subject protocol, both directions.
    SubjectProtocol,
}

/// `run`'s output formats.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RunFormat {
    /// Text for people.
    Human,
    /// JSON for tools (`devsim::output::RunOutput`).
    Json,
    /// JUnit XML: one test case per scenario.
    Junit,
}

/// Which scenarios to take.
#[derive(clap::Args)]
struct Selection {
    /// Only scenarios carrying this tag (repeatable: any of them).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Only scenarios whose name (path under the scenario root, e.g. `seed/gptq.toml`) contains PATTERN,
    /// or matches it as a glob when it has `*`, `?` or `[` (repeatable: any of them).
    #[arg(long = "filter", value_name = "PATTERN")]
    filters: Vec<String>,
}

impl Selection {
    /// Whether a tag or filter narrows the run.
    fn is_active(&self) -> bool {
        !self.tags.is_empty() || !self.filters.is_empty()
    }
}

/// Where scenarios' host profiles come from, and whether an empty run is acceptable.
#[derive(clap::Args)]
struct CorpusArgs {
    /// A host profile folder, searched in the order given, before the built-in profiles (repeatable;
    /// default: `<folder>/hosts` of each folder argument).
    #[arg(long = "hosts", value_name = "DIR")]
    hosts: Vec<PathBuf>,
    /// Accept paths that hold no scenario file.
    #[arg(long)]
    allow_empty: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenario files against a subject (default: the built-in catalog on the simulated runtime,
    /// scenarios/).
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Print the real machine as a host profile, or write it as <root>/hosts/<NAME>.toml, or check
    /// visible-device masks against the driver (--check-masks). Exits 3 when a GPU driver is present
    /// but failing, 1 when --require-gpu finds too few real GPUs or --check-masks a disagreement.
    Probe {
        /// Write the profile as hosts/NAME.toml under the scenario root instead of printing it.
        #[arg(long, value_name = "NAME")]
        write: Option<String>,
        /// Replace an existing profile of that name.
        #[arg(long, requires = "write")]
        force: bool,
        /// The scenario root holding hosts/.
        #[arg(long, default_value = "scenarios")]
        root: PathBuf,
        /// Instead, check devsim's visible-device model against the driver: for masks generated from
        /// this machine's GPUs, compare the GPUs devsim predicts with those the driver shows a child
        /// with only that variable set. Exits 1 on any disagreement.
        #[arg(long, conflicts_with_all = ["write", "force"])]
        check_masks: bool,
        /// Fail (exit 1) unless the driver shows at least N real GPUs: a GPU runner whose driver
        /// disappeared, or one of devsim's fake drivers, fails here before any replay (the live
        /// workflows' first step).
        #[arg(long, value_name = "N", conflicts_with = "check_masks")]
        require_gpu: Option<usize>,
    },
    /// Load and validate scenario files without running them.
    #[command(after_help = CHECK_EXIT_CODES)]
    Check {
        /// Files or folders.
        paths: Vec<PathBuf>,
        /// Which scenarios.
        #[command(flatten)]
        selection: Selection,
        /// Where profiles come from.
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Instead, start this subject and check its handshake only.
        #[arg(long, value_name = "CMD|FILE")]
        subject: Option<String>,
    },
    /// Run the scenarios and count, per kernel, which of validate, warmup and move passing scenarios
    /// exercised on which build; fails (exit 1) under the threshold file.
    #[command(after_help = COVERAGE_EXIT_CODES)]
    Coverage {
        /// Files or folders.
        paths: Vec<PathBuf>,
        /// The threshold the corpus sets (paths and builds every kernel must cover).
        #[arg(long, value_name = "FILE", default_value = "inventory/coverage.toml")]
        threshold: PathBuf,
        /// Where profiles come from.
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// List the kernel catalog.
    Kernels {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Show each pending change `run --accept` wrote (`<file>.toml.pending`) as a diff, and accept or reject
    /// it: interactively on a terminal, or all at once with --accept / --reject. Exits 1 when changes are
    /// left pending.
    Review {
        /// The scenario root to look under.
        #[arg(default_value = "scenarios")]
        root: PathBuf,
        /// Accept every pending change: each pending copy replaces its scenario file.
        #[arg(long, conflicts_with = "reject")]
        accept: bool,
        /// Reject every pending change: each pending copy is deleted.
        #[arg(long)]
        reject: bool,
    },
    /// List the host profiles.
    Hosts {
        /// The scenario root holding hosts/ (used when no --hosts is given).
        #[arg(default_value = "scenarios")]
        root: PathBuf,
        /// A host profile folder, searched in the order given, before the built-in profiles (repeatable).
        #[arg(long = "hosts", value_name = "DIR")]
        hosts: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Print a JSON Schema (committed under docs/schema/; `.taplo.toml` points editors at them).
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaName,
    },
    /// Benchmark the kernel matrix and the scenario corpus.
    Bench {
        /// The scenario root.
        #[arg(default_value = "scenarios")]
        root: PathBuf,
        /// How many rounds of each measurement.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Measure live replay instead: overhead against direct runtime calls on the real GPU, and the
        /// corpus live (worker pool included) against simulated.
        #[arg(long)]
        live: bool,
        /// Run the corpus through the reference catalog and these subjects side by side instead (repeatable):
        /// timings, then each subject's outcomes and distinct findings by rule.
        #[arg(long, value_name = "CMD|FILE", conflicts_with = "live")]
        subject: Vec<String>,
    },
    /// Print shell completions for devsim to stdout (e.g. `devsim completions bash >
    /// ~/.local/share/bash-completion/completions/devsim`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print devsim's man page (roff) to stdout (e.g. `devsim man > devsim.1; man ./devsim.1`).
    Man,
    /// Internal: a live worker (`scenario::worker`): runs the scenarios named on stdin, one JSON line
    /// each, on the real machine with this process's visible-device variables, answering reports.
    #[command(name = "live-worker", hide = true)]
    LiveWorker,
    /// Internal: the GPUs the driver shows this process (ordinals, names, UUIDs) as one JSON line,
    /// for `probe --check-masks`.
    #[command(name = "driver-view", hide = true)]
    DriverView,
    /// Internal: both visible-device views for JSON-line cases on stdin (tools/torch_visible/diff.py).
    #[command(hide = true)]
    Visible {
        /// Read one case per line on stdin, answer one per line on stdout.
        #[arg(long, required = true)]
        stdin_jsonl: bool,
    },
}

/// Prints a line to stderr, ignoring a closed stream (`devsim check 2>&- ` must not panic).
macro_rules! warn {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// The paths given, or `./scenarios` when none was; no such folder here is an error that says where devsim
/// looked and what to pass instead.
fn default_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
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
fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(bytes) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Io(error)),
        _ => Ok(()),
    }
}

fn print_load_errors(errors: &[LoadError]) {
    for error in errors {
        warn!("{}", render(error).trim_end());
    }
}

/// Loads the scenarios under `paths` that `selection` takes, with profiles from `corpus`; files that
/// fail to load are kept when their name is selected (their tags cannot be read, so a tag selection keeps
/// them too). Nothing to load is an error unless `--allow-empty`.
fn load_selected(
    catalog: &Catalog,
    paths: &[PathBuf],
    selection: &Selection,
    corpus: &CorpusArgs,
) -> Result<(Vec<Scenario>, Vec<LoadError>), CliError> {
    let filter = Filter::new(selection.tags.clone(), &selection.filters)?;
    let paths = default_paths(paths)?;
    let profiles = if corpus.hosts.is_empty() {
        ProfileSources::for_paths(&paths)
    } else {
        ProfileSources::folders(corpus.hosts.clone()).map_err(CorpusError::from)?
    };
    let (scenarios, errors) = load_all_with(&paths, catalog, &profiles)?;
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
    let errors: Vec<LoadError> = errors
        .into_iter()
        .filter(|e| filter.takes_name(&scenario_name(&e.path)))
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

/// The exit status of a finished run or check: load errors first (2), then failures (1).
fn verdict(load_errors: usize, failed: usize) -> Result<(), CliError> {
    if load_errors > 0 {
        Err(CliError::Load { count: load_errors })
    } else if failed > 0 {
        Err(CliError::Failed { failed })
    } else {
        Ok(())
    }
}

/// What `devsim run` was asked.
#[derive(clap::Args)]
struct RunArgs {
    /// Files or folders.
    paths: Vec<PathBuf>,
    /// Which scenarios.
    #[command(flatten)]
    selection: Selection,
    /// Where profiles come from.
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Print only failures and the summary.
    #[arg(long, short)]
    quiet: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Human)]
    format: RunFormat,
    /// Replay on the real machine: scenarios whose host it satisfies run live, the rest are skipped
    /// with the reason. Exits 3 when a GPU driver is present but failing.
    #[arg(long)]
    live: bool,
    /// With --require-live: count scenarios run through one of devsim's fake drivers (devsim's own tests).
    #[arg(long, requires = "require_live")]
    allow_fake: bool,
    /// With --live: fail (exit 1) when fewer than N scenarios with GPUs ran live (the rest were skipped;
    /// CPU-only scenarios run anywhere and do not count).
    #[arg(long, value_name = "N", requires = "live")]
    require_live: Option<usize>,
    /// Judge this dispatch code instead of the built-in catalog: a command line ('CMD ARGS') or a
    /// subject file (x.toml) speaking the subject protocol (docs/subject-protocol.md).
    #[arg(long, value_name = "CMD|FILE")]
    subject: Option<String>,
    /// Compare each scenario's outcome with this baseline file; any change, either way, fails.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write each scenario's outcome to this baseline file.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Write what each failing step observed into its scenario's expectations, as a pending copy
    /// (`<file>.toml.pending`) for `devsim review`. The catalog's observations only: a subject's are
    /// findings, not expectations.
    #[arg(long, conflicts_with_all = ["subject", "live"])]
    accept: bool,
    /// With --accept: only expectations of these levels (repeatable; default: every level).
    #[arg(long, value_enum, value_name = "LEVEL", requires = "accept")]
    accept_level: Vec<AcceptLevel>,
}

/// A level `run --accept` may rewrite.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AcceptLevel {
    /// Expectations of the accelerator-family policy.
    Policy,
    /// Facts of the catalog's declarations.
    Contract,
    /// Details of devsim's reference model.
    Reference,
}

impl From<AcceptLevel> for crate::conformance::Level {
    fn from(level: AcceptLevel) -> Self {
        match level {
            AcceptLevel::Policy => Self::Policy,
            AcceptLevel::Contract => Self::Contract,
            AcceptLevel::Reference => Self::Reference,
        }
    }
}

/// What `devsim run` judges, with the live machine's description and, where its GPU driver is present but
/// failing, why.
struct Judged {
    subject: Box<dyn Subject>,
    live_description: Option<String>,
    driver_failing: Option<String>,
    /// The live driver is one of devsim's fakes.
    fake_driver: bool,
}

/// The subject `devsim run` judges: the given process, or the binary's own catalog (live or simulated).
fn subject_for(catalog: Catalog, args: &RunArgs) -> Result<Judged, CliError> {
    if let Some(subject) = &args.subject {
        let spec = SubjectSpec::parse(subject)?;
        let (mut live_description, mut driver_failing, mut fake_driver) = (None, None, false);
        let subject = if args.live {
            // The subject runs the scenarios itself, on the real torch: no worker processes of devsim's.
            let context = LiveContext::detect(None);
            fake_driver = context.machine.fake;
            driver_failing = context
                .driver_failing()
                .then(|| context.unavailable.join("; "));
            let description = context.describe();
            let subject = ProcessSubject::start_live(spec, context)?;
            live_description = Some(format!(
                "{description} (subject {} runs them on the real torch)",
                subject.capabilities().name
            ));
            subject
        } else {
            ProcessSubject::start(spec)?
        };
        if let Some(warning) = subject.capabilities().deprecation() {
            warn!("{warning}");
        }
        return Ok(Judged {
            subject: Box::new(subject),
            live_description,
            driver_failing,
            fake_driver,
        });
    }
    let mut subject = catalog_subject(catalog);
    let mut live_description = None;
    let mut driver_failing = None;
    let mut fake_driver = false;
    if args.live {
        let context = LiveContext::detect(std::env::current_exe().ok());
        fake_driver = context.machine.fake;
        live_description = Some(context.describe());
        driver_failing = context
            .driver_failing()
            .then(|| context.unavailable.join("; "));
        subject = subject.live(context);
    }
    Ok(Judged {
        subject: Box::new(subject),
        live_description,
        driver_failing,
        fake_driver,
    })
}

/// The binary's own catalog as a subject: `reference` when it is devsim's reference catalog.
fn catalog_subject(catalog: Catalog) -> CatalogSubject {
    let names = |c: &Catalog| c.names().join(",");
    let name = if names(&catalog) == names(&Catalog::reference()) {
        "reference"
    } else {
        "catalog"
    };
    CatalogSubject::new(name, env!("CARGO_PKG_VERSION"), catalog)
}

fn run(catalog: Catalog, args: RunArgs) -> Result<(), CliError> {
    // A process subject's kernels are named by devsim's reference catalog.
    let (scenarios, errors) = if args.subject.is_some() {
        load_selected(
            &Catalog::reference(),
            &args.paths,
            &args.selection,
            &args.corpus,
        )?
    } else {
        load_selected(&catalog, &args.paths, &args.selection, &args.corpus)?
    };
    let human = args.format == RunFormat::Human;
    if human {
        print_load_errors(&errors);
    }
    let Judged {
        mut subject,
        live_description,
        driver_failing,
        fake_driver,
    } = subject_for(catalog, &args)?;
    if human {
        say!("subject: {}", subject.describe());
        if let Some(line) = &live_description {
            say!("{line}");
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
    let failed = suite.failed();
    let (summary, findings, reports) = (&suite.summary, &suite.findings, &suite.reports);
    let differences = match &args.baseline {
        Some(path) => Some(
            suite
                .compare(&Baseline::read(path)?, args.selection.is_active())
                .map_err(|other| CliError::BaselineSubject {
                    path: path.display().to_string(),
                    recorded: other.recorded,
                    judged: other.judged,
                })?,
        ),
        None => None,
    };
    if let Some(path) = &args.write_baseline {
        suite.outcomes.write(path)?;
    }
    if args.accept {
        let levels: Vec<crate::conformance::Level> = if args.accept_level.is_empty() {
            crate::conformance::Level::EVERY.to_vec()
        } else {
            args.accept_level.iter().map(|&l| l.into()).collect()
        };
        review::accept_failures(&scenarios, &plain, &levels)?;
    }
    match args.format {
        RunFormat::Human => {
            for difference in differences.iter().flatten() {
                say!("baseline changed: {difference}");
            }
            if let Some(path) = &args.write_baseline {
                say!("baseline written to {}", path.display());
            }
            if failed > 0 {
                say!(
                    "{failed} failed scenario(s) hold {} distinct finding(s):",
                    findings.len()
                );
                for (n, finding) in findings.iter().enumerate() {
                    say!(
                        "  finding {}: {}\n    shown by {} scenario(s): {}",
                        n + 1,
                        finding.signature,
                        finding.scenarios.len(),
                        crate::report::first_names(&finding.scenarios, 5)
                    );
                }
            }
            say!("subject {}: {summary}", subject.name());
        }
        RunFormat::Json => {
            let document = RunOutput {
                version: crate::output::VERSION,
                mode: if args.live {
                    Mode::Live
                } else {
                    Mode::Simulated
                },
                machine: live_description,
                subject: SubjectOutput {
                    name: subject.name().to_string(),
                    version: subject.version().to_string(),
                    kind: subject.kind().to_string(),
                },
                baseline_differences: differences
                    .as_ref()
                    .map(|d| d.iter().map(ToString::to_string).collect()),
                scenarios: reports
                    .iter()
                    .zip(&scenarios)
                    .map(|((report, took), scenario)| output::scenario(report, scenario, *took))
                    .collect(),
                load_errors: errors.iter().map(output::load_error).collect(),
                summary: output::summary(summary, errors.len()),
                findings: findings.iter().map(output::finding).collect(),
            };
            say!("{}", serde_json::to_string_pretty(&document)?);
        }
        RunFormat::Junit => {
            let run = junit::RunInfo {
                subject: format!("{} {}", subject.name(), subject.version()),
                mode: if args.live { "live" } else { "simulated" },
                machine: live_description.as_deref(),
                fake_driver,
            };
            say!("{}", junit::render(reports, &errors, &run)?.trim_end());
        }
    }
    let asked = Expectations {
        baseline_differences: differences,
        writes_baseline: args.write_baseline.is_some(),
        require_live: args.require_live,
        fake_driver,
        allow_fake: args.allow_fake,
        driver_failing,
    };
    match suite.verdict(&scenarios, &asked) {
        Verdict::Passed => Ok(()),
        Verdict::DriverFailing(failing) => Err(CliError::DriverFailing(failing)),
        Verdict::FakeDriver { required } => Err(CliError::FakeDriver { required }),
        Verdict::TooFewLive { ran, required } => Err(CliError::TooFewLive { ran, required }),
        Verdict::BaselineDiffers { count } => Err(CliError::BaselineDiffers {
            path: args
                .baseline
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            count,
        }),
        Verdict::LoadErrors { count } => Err(CliError::Load { count }),
        Verdict::Failed { count } => Err(CliError::Failed { failed: count }),
    }
}

/// What `devsim run` shows while the suite runs: the progress bar, and each report (failures always,
/// the rest unless `--quiet`) in human output.
struct Shown {
    progress: Progress,
    human: bool,
    quiet: bool,
}

impl SuiteObserver for Shown {
    fn started(&mut self, scenario: &Scenario) {
        self.progress.start(&scenario.name);
    }

    fn finished(&mut self, _scenario: &Scenario, report: &ScenarioReport) {
        if self.human && (report.status == Status::Failed || !self.quiet) {
            self.progress
                .suspend(|| color::print(&color::report(report::human(report).trim_end())));
        }
        self.progress.done();
    }
}

fn schema(which: SchemaName) -> Result<(), CliError> {
    match which {
        SchemaName::Scenario => say!("{}", SchemaKind::Scenario.render().trim_end()),
        SchemaName::Host => say!("{}", SchemaKind::Host.render().trim_end()),
        SchemaName::SubjectProtocol => say!(
            "{}",
            serde_json::to_string_pretty(&crate::subject::protocol::schema())?
        ),
    }
    Ok(())
}

fn check_subject(subject: &str) -> Result<(), CliError> {
    let subject = ProcessSubject::start(SubjectSpec::parse(subject)?)?;
    let capabilities = subject.capabilities();
    say!(
        "subject: {} (handshake in {:.1} ms)",
        subject.describe(),
        subject.start_time().as_secs_f64() * 1e3
    );
    say!("  actions: {}", capabilities.actions.join(", "));
    say!("  kernels: {}", capabilities.kernels.join(", "));
    say!("  events: {}", capabilities.events.join(", "));
    if let Some(warning) = capabilities.deprecation() {
        warn!("{warning}");
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
                [d.name.clone(), own, devsim, differs.to_string()]
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
    Ok(())
}

fn probe(
    write: Option<String>,
    force: bool,
    root: PathBuf,
    require_gpu: Option<usize>,
) -> Result<(), CliError> {
    let live = LiveContext::detect(None);
    if live.machine.gpus.is_empty() {
        warn!("{}", live.describe());
    }
    let text = probe::profile_text(&live.machine, SystemTime::now());
    match write {
        None => say!("{}", text.trim_end()),
        Some(name) => {
            let path = probe::write_profile(&root, &name, &text, force)?;
            say!("wrote {}", path.display());
        }
    }
    if live.driver_failing() {
        return Err(CliError::DriverFailing(live.unavailable.join("; ")));
    }
    if let Some(required) = require_gpu {
        let real = if live.machine.fake {
            0
        } else {
            live.machine.gpus.len()
        };
        if real < required {
            return Err(CliError::TooFewGpus {
                required,
                found: live.describe(),
            });
        }
    }
    Ok(())
}

fn check(
    catalog: &Catalog,
    paths: &[PathBuf],
    selection: &Selection,
    corpus: &CorpusArgs,
    format: Format,
) -> Result<(), CliError> {
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
            say!("{}", serde_json::to_string_pretty(&document)?);
        }
    }
    verdict(errors.len(), 0)
}

fn coverage(
    catalog: &Catalog,
    paths: &[PathBuf],
    threshold_file: &Path,
    corpus: &CorpusArgs,
    format: Format,
) -> Result<(), CliError> {
    let selection = Selection {
        tags: Vec::new(),
        filters: Vec::new(),
    };
    let (scenarios, errors) = load_selected(catalog, paths, &selection, corpus)?;
    print_load_errors(&errors);
    let reports: Vec<ScenarioReport> = scenarios
        .iter()
        .map(|scenario| crate::scenario::suite::run_simulated(scenario, catalog))
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
        Format::Json => say!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "version": crate::output::VERSION,
                "coverage": counted,
                "threshold": threshold,
                "gaps": gaps,
            }))?
        ),
    }
    let failed = reports
        .iter()
        .filter(|r| r.status == Status::Failed)
        .count();
    if !gaps.is_empty() {
        return Err(CliError::CoverageGaps { count: gaps.len() });
    }
    verdict(errors.len(), failed)
}

fn kernels(catalog: &Catalog, format: Format) -> Result<(), CliError> {
    match format {
        Format::Json => {
            let document = KernelsOutput {
                version: crate::output::VERSION,
                kernels: catalog.iter().map(|k| output::kernel(k.spec())).collect(),
            };
            say!("{}", serde_json::to_string_pretty(&document)?);
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
    Ok(())
}

fn hosts(root: PathBuf, folders: Vec<PathBuf>, format: Format) -> Result<(), CliError> {
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
            say!("{}", serde_json::to_string_pretty(&document)?);
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
                    host.name,
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
                .map(|f| f.display().to_string())
                .collect();
            searched.push("the built-in profiles".into());
            say!(
                "{} host profile(s) from {}",
                profiles.len(),
                searched.join(", ")
            );
        }
    }
    verdict(errors.len(), 0)
}

/// Runs the `devsim` command line (arguments from the process) against `catalog`.
pub fn main(catalog: Catalog) -> ExitCode {
    let cli = Cli::parse();
    color::choose(cli.color);
    let result = match cli.command {
        Command::Run(args) => run(catalog, args),
        Command::Review {
            root,
            accept,
            reject,
        } => review::review(&root, accept, reject),
        Command::Probe {
            check_masks: true, ..
        } => masks::check(),
        Command::Probe {
            write,
            force,
            root,
            require_gpu,
            ..
        } => probe(write, force, root, require_gpu),
        Command::Check {
            subject: Some(subject),
            ..
        } => check_subject(&subject),
        Command::Check {
            paths,
            selection,
            corpus,
            format,
            subject: None,
        } => check(&catalog, &paths, &selection, &corpus, format),
        Command::Coverage {
            paths,
            threshold,
            corpus,
            format,
        } => coverage(&catalog, &paths, &threshold, &corpus, format),
        Command::Kernels { format } => kernels(&catalog, format),
        Command::Hosts {
            root,
            hosts: folders,
            format,
        } => hosts(root, folders, format),
        Command::Schema { which } => schema(which),
        Command::Bench {
            root,
            rounds,
            live,
            subject,
        } => {
            if !subject.is_empty() {
                side_by_side::run_subjects(&root, &subject, rounds)
            } else if live {
                bench::run_live(rounds).and_then(|()| bench::corpus_live(&root, &catalog, rounds))
            } else {
                bench::run(&root, &catalog, rounds)
            }
        }
        Command::Completions { shell } => {
            // Into memory first: clap_complete panics on a failed write, and a closed pipe is no error.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "devsim", &mut script);
            write_stdout(&script)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(CliError::Io)
                .and_then(|()| write_stdout(&page))
        }
        Command::LiveWorker => crate::scenario::worker::serve(
            &catalog,
            std::io::stdin().lock(),
            std::io::stdout().lock(),
        )
        .map_err(CliError::from),
        Command::DriverView => masks::driver_view(),
        Command::Visible { stdin_jsonl: _ } => visible::stdin_jsonl().map_err(CliError::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Failed { failed }) => {
            warn!("error: failed to pass {failed} scenario(s)");
            ExitCode::from(1)
        }
        Err(
            error @ (CliError::TooFewLive { .. }
            | CliError::FakeDriver { .. }
            | CliError::TooFewGpus { .. }
            | CliError::MasksDisagree { .. }
            | CliError::BaselineDiffers { .. }
            | CliError::PendingLeft { .. }
            | CliError::CoverageGaps { .. }),
        ) => {
            warn!("error: failed to {error}");
            ExitCode::from(1)
        }
        Err(error @ CliError::DriverFailing(_)) => {
            warn!("error: failed to {error}");
            ExitCode::from(EXIT_DRIVER_FAILING)
        }
        Err(error) => {
            warn!("error: failed to {error}");
            ExitCode::from(2)
        }
    }
}
