//! The `devsim` command line, as a library: a downstream crate ships its own devsim-compatible binary with
//! its own catalog in two lines of `main`:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     crate::cli::main(crate::Catalog::reference())
//! }
//! ```
//!
//! Live replay re-runs scenarios in child processes of the *running* binary, so a downstream binary's
//! children judge the downstream catalog.

pub mod bench;
mod error;

pub use error::CliError;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::kernel::Catalog;
use crate::report;
use crate::scenario::live::LiveContext;
use crate::scenario::load::{HOSTS_DIR, load_profile, profile_names};
use crate::scenario::schema::SchemaKind;
use crate::scenario::suite::{Summary, load_all, run_simulated};

/// A test harness for cross-vendor GPU device dispatch.
#[derive(Parser)]
#[command(name = "devsim", version, about)]
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
        /// with the reason.
        #[arg(long)]
        live: bool,
        /// Internal: this process is the child that runs one `env` scenario live.
        #[arg(long, hide = true, requires = "live")]
        child: bool,
    },
    /// Print the real machine as a host profile (scenarios/hosts/<name>.toml).
    Probe,
    /// Load and validate scenario files without running them.
    Check {
        /// Files or folders.
        paths: Vec<PathBuf>,
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

fn run(
    catalog: &Catalog,
    paths: Vec<PathBuf>,
    format: Format,
    live: bool,
    child: bool,
) -> Result<(), CliError> {
    let (scenarios, errors) = load_all(&default_paths(paths), catalog)?;
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
    if summary.failed > 0 {
        return Err(CliError::Failed {
            failed: summary.failed,
        });
    }
    Ok(())
}

fn probe() -> Result<(), CliError> {
    let live = LiveContext::detect(None);
    if live.machine.library.is_none() {
        eprintln!("{}", live.describe());
    }
    say!("{}", live.machine.to_profile().trim_end());
    Ok(())
}

fn check(catalog: &Catalog, paths: Vec<PathBuf>) -> Result<(), CliError> {
    let (scenarios, errors) = load_all(&default_paths(paths), catalog)?;
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
                        "rocm_audit": crate::kernel::audit::decision(spec.name).map(|d| format!("{d:?}")),
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
            say!(
                "{} host profile(s) in {}",
                profiles.len(),
                root.join(HOSTS_DIR).display()
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
        } => run(&catalog, paths, format, live, child),
        Command::Probe => probe(),
        Command::Check { paths } => check(&catalog, paths),
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
