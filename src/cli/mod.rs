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
pub mod filter;
pub mod junit;
pub mod output;
pub mod probe;
pub mod progress;

pub use error::CliError;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};

use crate::kernel::Catalog;
use crate::output::{CheckOutput, HostsOutput, KernelsOutput, Mode, RunOutput};
use crate::report;
use crate::scenario::live::LiveContext;
use crate::scenario::load::scenario_name;
use crate::scenario::load::{HOSTS_DIR, load_profile, profile_names};
use crate::scenario::schema::SchemaKind;
use crate::scenario::suite::{Summary, load_all, run_simulated};
use crate::scenario::{LoadError, Scenario, ScenarioReport, Status};
use filter::Filter;
use progress::Progress;

/// Exit codes, for `--help` and the README.
const EXIT_CODES: &str = "Exit codes:
  0  every selected scenario passed (skips allowed)
  1  at least one scenario failed
  2  a file failed to load, or the command line or another input was wrong";

/// A test harness for cross-vendor GPU device dispatch.
#[derive(Parser)]
#[command(name = "devsim", version, about, after_help = EXIT_CODES)]
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

/// The schemas `devsim schema` prints.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SchemaName {
    /// A scenario file.
    Scenario,
    /// A host profile (scenarios/hosts/<name>.toml).
    Host,
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

#[derive(Subcommand)]
enum Command {
    /// Run scenario files on the simulated runtime (default: scenarios/).
    #[command(after_help = EXIT_CODES)]
    Run {
        /// Files or folders.
        paths: Vec<PathBuf>,
        /// Which scenarios.
        #[command(flatten)]
        selection: Selection,
        /// Print only failures and the summary.
        #[arg(long, short)]
        quiet: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = RunFormat::Human)]
        format: RunFormat,
        /// Replay on the real machine: scenarios whose host it satisfies run live, the rest are skipped
        /// with the reason.
        #[arg(long)]
        live: bool,
        /// Internal: this process is the child that runs one `env` scenario live; it answers with the
        /// internal reports as JSON, whatever `--format` says.
        #[arg(long, hide = true, requires = "live")]
        child: bool,
    },
    /// Print the real machine as a host profile, or write it as <root>/hosts/<NAME>.toml.
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
    },
    /// Load and validate scenario files without running them.
    #[command(after_help = EXIT_CODES)]
    Check {
        /// Files or folders.
        paths: Vec<PathBuf>,
        /// Which scenarios.
        #[command(flatten)]
        selection: Selection,
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
    /// List the host profiles.
    Hosts {
        /// The scenario root holding hosts/.
        #[arg(default_value = "scenarios")]
        root: PathBuf,
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
        /// Measure live replay overhead against direct runtime calls on the real GPU instead.
        #[arg(long)]
        live: bool,
    },
}

/// Prints a line to stdout, ignoring a closed pipe (`devsim kernels | head` must not panic).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

fn print_load_errors(errors: &[crate::scenario::LoadError]) {
    for error in errors {
        eprintln!("{:?}", miette::Report::new(error.clone()));
    }
}

/// Loads the scenarios under `paths` that `selection` takes; files that fail to load are kept when their
/// name is selected (their tags cannot be read, so a tag selection keeps them too).
fn load_selected(
    catalog: &Catalog,
    paths: Vec<PathBuf>,
    selection: &Selection,
) -> Result<(Vec<Scenario>, Vec<LoadError>), CliError> {
    let filter = Filter::new(selection.tags.clone(), &selection.filters)?;
    let (scenarios, errors) = load_all(&default_paths(paths), catalog)?;
    let scenarios = scenarios
        .into_iter()
        .filter(|s| filter.takes(&s.name, &s.tags))
        .collect();
    let errors = errors
        .into_iter()
        .filter(|e| filter.takes_name(&scenario_name(&e.path)))
        .collect();
    Ok((scenarios, errors))
}

/// What a live child process (`run --live --child`) prints for its parent to read.
#[derive(serde::Serialize)]
struct ChildAnswer {
    scenarios: Vec<ScenarioReport>,
}

/// `run`'s switches.
struct RunOptions {
    quiet: bool,
    format: RunFormat,
    live: bool,
    child: bool,
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

fn run(
    catalog: &Catalog,
    paths: Vec<PathBuf>,
    selection: &Selection,
    options: RunOptions,
) -> Result<(), CliError> {
    let (scenarios, errors) = load_selected(catalog, paths, selection)?;
    let human = options.format == RunFormat::Human && !options.child;
    if human {
        print_load_errors(&errors);
    }
    let live = options.live.then(|| {
        let exe = if options.child {
            None
        } else {
            std::env::current_exe().ok()
        };
        LiveContext::detect(exe)
    });
    if let (Some(live), true) = (&live, human) {
        say!("{}", live.describe());
    }
    let progress = Progress::new(scenarios.len(), human && progress::wanted_here());
    let mut reports: Vec<(ScenarioReport, Duration)> = Vec::new();
    for scenario in &scenarios {
        progress.start(&scenario.name);
        let started = Instant::now();
        let report = match &live {
            Some(live) => live.run(scenario, catalog),
            None => run_simulated(scenario, catalog),
        };
        let took = started.elapsed();
        let failed = report.status == Status::Failed;
        if human && (failed || !options.quiet) {
            progress.suspend(|| say!("{}", report::human(&report).trim_end()));
        }
        progress.done();
        reports.push((report, took));
    }
    progress.finish();
    let plain: Vec<ScenarioReport> = reports.iter().map(|(r, _)| r.clone()).collect();
    let summary = Summary::of(&plain, errors.len());
    if options.child {
        // The child's answer to its parent (`scenario::live`): the internal reports, not the tool output.
        let answer = ChildAnswer { scenarios: plain };
        say!("{}", serde_json::to_string(&answer)?);
        return verdict(errors.len(), summary.failed - errors.len());
    }
    match options.format {
        RunFormat::Human => say!("{summary}"),
        RunFormat::Json => {
            let document = RunOutput {
                version: crate::output::VERSION,
                mode: if live.is_some() {
                    Mode::Live
                } else {
                    Mode::Simulated
                },
                machine: live.as_ref().map(LiveContext::describe),
                scenarios: reports
                    .iter()
                    .zip(&scenarios)
                    .map(|((report, took), scenario)| {
                        output::scenario(report, &scenario.tags, *took)
                    })
                    .collect(),
                load_errors: errors.iter().map(output::load_error).collect(),
                summary: output::summary(&summary, errors.len()),
            };
            say!("{}", serde_json::to_string_pretty(&document)?);
        }
        RunFormat::Junit => say!("{}", junit::render(&reports, &errors)?.trim_end()),
    }
    verdict(errors.len(), summary.failed - errors.len())
}

fn probe(write: Option<String>, force: bool, root: PathBuf) -> Result<(), CliError> {
    let live = LiveContext::detect(None);
    if live.machine.library.is_none() {
        eprintln!("{}", live.describe());
    }
    let text = probe::profile_text(&live.machine, SystemTime::now());
    match write {
        None => say!("{}", text.trim_end()),
        Some(name) => {
            let path = probe::write_profile(&root, &name, &text, force)?;
            say!("wrote {}", path.display());
        }
    }
    Ok(())
}

fn check(
    catalog: &Catalog,
    paths: Vec<PathBuf>,
    selection: &Selection,
    format: Format,
) -> Result<(), CliError> {
    let (scenarios, errors) = load_selected(catalog, paths, selection)?;
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
                    spec.extension.unwrap_or("-"),
                    spec.arch_text()
                );
            }
            say!("{} kernels", catalog.len());
        }
    }
    Ok(())
}

fn hosts(root: PathBuf, format: Format) -> Result<(), CliError> {
    let mut profiles = Vec::new();
    let mut errors = Vec::new();
    for name in profile_names(&root) {
        match load_profile(&root.join(HOSTS_DIR).join(format!("{name}.toml"))) {
            Ok(host) => profiles.push(host),
            Err(error) => errors.push(error),
        }
    }
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
            say!(
                "{} host profile(s) in {}",
                profiles.len(),
                root.join(HOSTS_DIR).display()
            );
        }
    }
    verdict(errors.len(), 0)
}

/// Runs the `devsim` command line (arguments from the process) against `catalog`.
pub fn main(catalog: Catalog) -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            paths,
            selection,
            quiet,
            format,
            live,
            child,
        } => run(
            &catalog,
            paths,
            &selection,
            RunOptions {
                quiet,
                format,
                live,
                child,
            },
        ),
        Command::Probe { write, force, root } => probe(write, force, root),
        Command::Check {
            paths,
            selection,
            format,
        } => check(&catalog, paths, &selection, format),
        Command::Kernels { format } => kernels(&catalog, format),
        Command::Hosts { root, format } => hosts(root, format),
        Command::Schema { which } => {
            let kind = match which {
                SchemaName::Scenario => SchemaKind::Scenario,
                SchemaName::Host => SchemaKind::Host,
            };
            say!("{}", kind.render().trim_end());
            Ok(())
        }
        Command::Bench { root, rounds, live } => {
            if live {
                bench::run_live(rounds)
            } else {
                bench::run(&root, &catalog, rounds)
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Failed { failed }) => {
            eprintln!("error: failed to pass {failed} scenario(s)");
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("error: failed to {error}");
            ExitCode::from(2)
        }
    }
}
