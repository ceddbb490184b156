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

use crate::kernel::Catalog;
use crate::report;
use crate::scenario::error::render;
use crate::scenario::live::LiveContext;
use crate::scenario::suite::{Summary, load_all_with, run_simulated};
use crate::scenario::{CorpusError, LoadError, ProfileSources, Scenario};

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

fn run(
    catalog: &Catalog,
    paths: Vec<PathBuf>,
    format: Format,
    live: bool,
    child: bool,
    corpus: &CorpusArgs,
    require_live: Option<usize>,
) -> Result<(), CliError> {
    let (scenarios, errors) = corpus.load(paths, catalog)?;
    print_load_errors(&errors);
    let live = live.then(|| {
        let exe = if child {
            None
        } else {
            std::env::current_exe().ok()
        };
        LiveContext::detect(exe)
    });
    if let (Some(live), Format::Human) = (&live, format) {
        say!("{}", live.describe());
    }
    let reports: Vec<_> = scenarios
        .iter()
        .map(|scenario| match &live {
            Some(live) => live.run(scenario, catalog),
            None => run_simulated(scenario, catalog),
        })
        .collect();
    let summary = Summary::of(&reports, errors.len());
    match format {
        Format::Human => {
            for report in &reports {
                say!("{}", report::human(report).trim_end());
            }
            say!("{summary}");
        }
        Format::Json => {
            let value = serde_json::json!({
                "mode": if live.is_some() { "live" } else { "simulated" },
                "machine": live.as_ref().map(LiveContext::describe),
                "scenarios": reports,
                "load_errors": errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "summary": summary,
            });
            say!("{}", serde_json::to_string_pretty(&value)?);
        }
    }
    if let Some(live) = live.as_ref().filter(|live| live.driver_failing()) {
        return Err(CliError::DriverFailing(live.unavailable.join("; ")));
    }
    if let Some(required) = require_live {
        let ran = reports
            .iter()
            .filter(|report| !matches!(report.status, crate::scenario::Status::Skipped(_)))
            .count();
        if ran < required {
            return Err(CliError::TooFewLive { ran, required });
        }
    }
    if summary.failed > 0 {
        return Err(CliError::Failed {
            failed: summary.failed,
        });
    }
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
            corpus,
            require_live,
        } => run(&catalog, paths, format, live, child, &corpus, require_live),
        Command::Probe => probe(),
        Command::Check { paths, corpus } => check(&catalog, paths, &corpus),
        Command::Kernels { format } => kernels(&catalog, format),
        Command::Hosts {
            root,
            hosts: folders,
            format,
        } => hosts(root, folders, format),
        Command::Bench { root, rounds, live } => {
            if live {
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
        Err(error) => {
            warn!("error: failed to {error}");
            ExitCode::from(2)
        }
    }
}
