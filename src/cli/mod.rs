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

pub mod bench;
mod error;
mod visible;

pub use error::CliError;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::baseline::Baseline;
use crate::kernel::Catalog;
use crate::report;
use crate::scenario::error::render;
use crate::scenario::live::LiveContext;
use crate::scenario::suite::{Summary, load_all_with};
use crate::scenario::{CorpusError, LoadError, ProfileSources, Scenario};
use crate::subject::{CatalogSubject, ProcessSubject, Subject, SubjectSpec};

/// The exit code of `run --live` and `probe` when a GPU driver is present but failing.
pub const EXIT_DRIVER_FAILING: u8 = 3;

/// A test harness for cross-vendor GPU device dispatch.
#[derive(Parser)]
#[command(
    name = "devsim",
    version,
    about,
    after_help = "Exit codes: 0 success; 1 scenarios failed; 2 bad input or usage; 3 a GPU driver is \
present but failing (run --live, probe)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Text for people.
    Human,
    /// JSON for tools.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenario files on the simulated runtime (default: scenarios/).
    Run {
        /// Files or folders.
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Replay on the real machine: scenarios whose host it satisfies run live, the rest are skipped
        /// with the reason. Exits 3 when a GPU driver is present but failing.
        #[arg(long)]
        live: bool,
        /// With --live: fail (exit 1) when fewer than N scenarios ran live (the rest were skipped).
        #[arg(long, value_name = "N", requires = "live")]
        require_live: Option<usize>,
        /// Internal: this process is the child that runs one `env` scenario live.
        #[arg(long, hide = true, requires = "live")]
        child: bool,
        #[command(flatten)]
        corpus: CorpusArgs,
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
    },
    /// Print a JSON Schema.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaName,
    },
    /// Print the real machine as a host profile (scenarios/hosts/<name>.toml). Exits 3 when a GPU
    /// driver is present but failing.
    Probe,
    /// Load and validate scenario files without running them.
    Check {
        /// Files or folders.
        paths: Vec<PathBuf>,
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Instead, start this subject and check its handshake only.
        #[arg(long, value_name = "CMD|FILE")]
        subject: Option<String>,
    },
    /// List the kernel catalog.
    Kernels {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
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
    /// Benchmark the kernel matrix and the scenario corpus.
    Bench {
        /// The scenario root.
        #[arg(default_value = "scenarios")]
        root: PathBuf,
        /// How many rounds of each measurement.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Measure live replay overhead against direct runtime calls on the real GPU instead.
        #[arg(long)]
        live: bool,
        /// Run the corpus through the reference catalog and this subject side by side instead.
        #[arg(long, value_name = "CMD|FILE", conflicts_with = "live")]
        subject: Option<String>,
    },
    /// Internal: both visible-device views for JSON-line cases on stdin (tools/torch_visible/diff.py).
    #[command(hide = true)]
    Visible {
        /// Read one case per line on stdin, answer one per line on stdout.
        #[arg(long, required = true)]
        stdin_jsonl: bool,
    },
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

impl CorpusArgs {
    /// The profile sources: the `--hosts` folders, else the default for these paths.
    fn profiles(&self, paths: &[PathBuf]) -> Result<ProfileSources, CliError> {
        if self.hosts.is_empty() {
            Ok(ProfileSources::for_paths(paths))
        } else {
            Ok(ProfileSources::folders(self.hosts.clone()).map_err(CorpusError::from)?)
        }
    }

    /// Loads every scenario under `paths`; nothing to load is an error unless `--allow-empty`.
    fn load(
        &self,
        paths: Vec<PathBuf>,
        catalog: &Catalog,
    ) -> Result<(Vec<Scenario>, Vec<LoadError>), CliError> {
        let paths = default_paths(paths);
        let (scenarios, errors) = load_all_with(&paths, catalog, &self.profiles(&paths)?)?;
        if scenarios.is_empty() && errors.is_empty() && !self.allow_empty {
            let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            return Err(CorpusError::Empty {
                paths: shown.join(", "),
            }
            .into());
        }
        Ok((scenarios, errors))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SchemaName {
    /// The messages of the subject protocol, both directions.
    SubjectProtocol,
}

/// What `devsim run` was asked.
struct RunArgs {
    paths: Vec<PathBuf>,
    format: Format,
    live: bool,
    child: bool,
    subject: Option<String>,
    baseline: Option<PathBuf>,
    write_baseline: Option<PathBuf>,
    corpus: CorpusArgs,
    require_live: Option<usize>,
}

/// Prints a line to stdout, ignoring a closed pipe (`devsim kernels | head` must not panic).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// Prints a line to stderr, ignoring a closed stream (`devsim check 2>&- ` must not panic).
macro_rules! warn {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

fn print_load_errors(errors: &[LoadError]) {
    for error in errors {
        warn!("{}", render(error).trim_end());
    }
}

/// The subject `devsim run` judges: the given process, or the binary's own catalog (live or simulated);
/// with the live machine's description when live.
/// What `devsim run` judges, with the live machine's description and, where its GPU driver is present but
/// failing, why.
struct Judged {
    subject: Box<dyn Subject>,
    live_description: Option<String>,
    driver_failing: Option<String>,
}

fn subject_for(catalog: Catalog, args: &RunArgs) -> Result<Judged, CliError> {
    if let Some(subject) = &args.subject {
        if args.live {
            return Err(CliError::LiveSubject {
                subject: subject.clone(),
            });
        }
        let subject = ProcessSubject::start(SubjectSpec::parse(subject)?)?;
        return Ok(Judged {
            subject: Box::new(subject),
            live_description: None,
            driver_failing: None,
        });
    }
    let mut subject = catalog_subject(catalog);
    let mut description = None;
    let mut driver_failing = None;
    if args.live {
        let exe = if args.child {
            None
        } else {
            std::env::current_exe().ok()
        };
        let context = LiveContext::detect(exe);
        description = Some(context.describe());
        driver_failing = context
            .driver_failing()
            .then(|| context.unavailable.join("; "));
        subject = subject.live(context);
    }
    Ok(Judged {
        subject: Box::new(subject),
        live_description: description,
        driver_failing,
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
        args.corpus
            .load(args.paths.clone(), &Catalog::reference())?
    } else {
        args.corpus.load(args.paths.clone(), &catalog)?
    };
    print_load_errors(&errors);
    let Judged {
        mut subject,
        live_description,
        driver_failing,
    } = subject_for(catalog, &args)?;
    if args.format == Format::Human {
        say!("subject: {}", subject.describe());
        if let Some(line) = &live_description {
            say!("{line}");
        }
    }
    let reports: Vec<_> = scenarios
        .iter()
        .map(|scenario| subject.run(scenario))
        .collect();
    let summary = Summary::of(&reports, errors.len());
    let outcomes = Baseline::of(subject.name(), &reports);
    let differences = match &args.baseline {
        Some(path) => Some(Baseline::read(path)?.compare(&outcomes)),
        None => None,
    };
    if let Some(path) = &args.write_baseline {
        outcomes.write(path)?;
    }
    match args.format {
        Format::Human => {
            for report in &reports {
                say!("{}", report::human(report).trim_end());
            }
            if let Some(differences) = &differences {
                for difference in differences {
                    say!("baseline changed: {difference}");
                }
            }
            if let Some(path) = &args.write_baseline {
                say!("baseline written to {}", path.display());
            }
            say!("subject {}: {summary}", subject.name());
        }
        Format::Json => {
            let value = serde_json::json!({
                "mode": if args.live { "live" } else { "simulated" },
                "machine": live_description,
                "subject": {
                    "name": subject.name(),
                    "version": subject.version(),
                    "kind": subject.kind(),
                },
                "scenarios": reports,
                "load_errors": errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "baseline_differences": differences.as_ref().map(|d| d.iter().map(ToString::to_string).collect::<Vec<_>>()),
                "summary": summary,
            });
            say!("{}", serde_json::to_string_pretty(&value)?);
        }
    }
    if let Some(failing) = driver_failing {
        return Err(CliError::DriverFailing(failing));
    }
    if let Some(required) = args.require_live {
        let ran = reports
            .iter()
            .filter(|report| !matches!(report.status, crate::scenario::Status::Skipped(_)))
            .count();
        if ran < required {
            return Err(CliError::TooFewLive { ran, required });
        }
    }
    match (&args.baseline, differences) {
        (Some(path), Some(differences)) if !differences.is_empty() => {
            Err(CliError::BaselineDiffers {
                path: path.display().to_string(),
                count: differences.len(),
            })
        }
        // With a baseline, known failures are expected; only load errors still fail the run.
        (Some(_), _) if errors.is_empty() => Ok(()),
        _ if args.write_baseline.is_some() && errors.is_empty() => Ok(()),
        _ if summary.failed > 0 => Err(CliError::Failed {
            failed: summary.failed,
        }),
        _ => Ok(()),
    }
}

fn schema(which: SchemaName) -> Result<(), CliError> {
    match which {
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
    Ok(())
}

fn probe() -> Result<(), CliError> {
    let live = LiveContext::detect(None);
    if live.machine.gpus.is_empty() {
        warn!("{}", live.describe());
    }
    say!("{}", live.machine.to_profile().trim_end());
    if live.driver_failing() {
        return Err(CliError::DriverFailing(live.unavailable.join("; ")));
    }
    Ok(())
}

fn check(catalog: &Catalog, paths: Vec<PathBuf>, corpus: &CorpusArgs) -> Result<(), CliError> {
    let (scenarios, errors) = corpus.load(paths, catalog)?;
    print_load_errors(&errors);
    say!(
        "{} scenario(s) loaded, {} failed to load",
        scenarios.len(),
        errors.len()
    );
    if errors.is_empty() {
        Ok(())
    } else {
        Err(CliError::Load {
            count: errors.len(),
        })
    }
}

fn kernels(catalog: &Catalog, format: Format) -> Result<(), CliError> {
    match format {
        Format::Json => {
            let rows: Vec<_> = catalog
                .iter()
                .map(|kernel| {
                    let spec = kernel.spec();
                    serde_json::json!({
                        "name": spec.name,
                        "method": spec.method,
                        "bits": spec.bits,
                        "families": spec.families,
                        "arch": spec.arch_text(),
                        "extension": spec.extension,
                        "requires": spec.requires,
                        "priority": spec.priority,
                        "selectable": spec.selectable,
                        "alternative": spec.alternative,
                        "rocm_audit": crate::kernel::audit::Inventory::reference().row(&spec.name).map(|row| serde_json::json!({"decision": row.rocm, "reason": row.reason})),
                    })
                })
                .collect();
            say!("{}", serde_json::to_string_pretty(&rows)?);
        }
        Format::Human => {
            say!(
                "{:<22} {:<12} {:<26} {:>4} {:<5} {:<14} arch",
                "name",
                "method",
                "families",
                "prio",
                "auto",
                "extension"
            );
            for kernel in catalog.iter() {
                let spec = kernel.spec();
                say!(
                    "{:<22} {:<12} {:<26} {:>4} {:<5} {:<14} {}",
                    spec.name,
                    spec.method.as_str(),
                    spec.families_text(),
                    spec.priority,
                    if spec.selectable { "yes" } else { "no" },
                    spec.extension.as_deref().unwrap_or("-"),
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
    print_load_errors(&errors);
    match format {
        Format::Json => say!("{}", serde_json::to_string_pretty(&profiles)?),
        Format::Human => {
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
    if errors.is_empty() {
        Ok(())
    } else {
        Err(CliError::Load {
            count: errors.len(),
        })
    }
}

/// Runs the `devsim` command line (arguments from the process) against `catalog`.
pub fn main(catalog: Catalog) -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            paths,
            format,
            live,
            child,
            subject,
            baseline,
            write_baseline,
            corpus,
            require_live,
        } => run(
            catalog,
            RunArgs {
                paths,
                format,
                live,
                child,
                subject,
                baseline,
                write_baseline,
                corpus,
                require_live,
            },
        ),
        Command::Schema { which } => schema(which),
        Command::Probe => probe(),
        Command::Check {
            subject: Some(subject),
            ..
        } => check_subject(&subject),
        Command::Check {
            paths,
            subject: None,
            corpus,
        } => check(&catalog, paths, &corpus),
        Command::Kernels { format } => kernels(&catalog, format),
        Command::Hosts {
            root,
            hosts: folders,
            format,
        } => hosts(root, folders, format),
        Command::Bench {
            root,
            rounds,
            live,
            subject,
        } => {
            if let Some(subject) = subject {
                bench::run_subject(&root, &subject, rounds)
            } else if live {
                bench::run_live(rounds)
            } else {
                bench::run(&root, &catalog, rounds)
            }
        }
        Command::Visible { stdin_jsonl: _ } => visible::stdin_jsonl().map_err(CliError::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Failed { failed }) => {
            warn!("error: failed to pass {failed} scenario(s)");
            ExitCode::from(1)
        }
        Err(error @ CliError::TooFewLive { .. }) => {
            warn!("error: failed to {error}");
            ExitCode::from(1)
        }
        Err(error @ CliError::DriverFailing(_)) => {
            warn!("error: failed to {error}");
            ExitCode::from(EXIT_DRIVER_FAILING)
        }
        Err(error @ CliError::BaselineDiffers { .. }) => {
            warn!("error: failed to {error}");
            ExitCode::from(1)
        }
        Err(error) => {
            warn!("error: failed to {error}");
            ExitCode::from(2)
        }
    }
}
