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

/// Prints human output and a newline to stdout, ignoring a closed pipe (`devsim kernels | head` must not
/// panic). The printing end of human output's rule ([`crate::shown`]): every control character but the
/// newlines between lines is escaped, so nothing placed in the text reaches the terminal raw.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stdout().lock(), "{}", crate::shown::lines(&text));
    }};
}

/// [`say!`] to stderr, ignoring a closed stream (`devsim check 2>&- ` must not panic).
macro_rules! warn {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stderr().lock(), "{}", crate::shown::lines(&text));
    }};
}

/// Prints a machine-readable document (JSON, JUnit XML, a schema, a TOML profile) and a newline to stdout
/// as it is, ignoring a closed pipe: its format escapes what it must, and human escapes would corrupt it.
macro_rules! document {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod args;
mod color;
mod commands;
mod error;
pub(crate) mod filter;
pub(crate) mod masks;
mod migrate;
mod outcome;
mod review;
mod run;
mod select;
// Not part of the public API: public only for devsim's own tests of `probe --write` and progress.
#[doc(hidden)]
pub mod probe {
    //! [`crate::probe`], at the path devsim's own tests of `probe --write` use.
    pub use crate::probe::{ProbeError, driver_version, profile_text, write_profile};
}
#[doc(hidden)]
pub mod progress;
mod visible;

pub use error::CliError;
pub use outcome::RunOutcome;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::bench;
use crate::kernel::Catalog;
use args::{Cli, Command};
use commands::{check, check_subject, coverage, hosts, kernels, probe, schema};
use run::run;
use select::{contained_subject, write_stdout};

/// The exit code of `run --live` and `probe` when a GPU driver is present but failing.
pub const EXIT_DRIVER_FAILING: u8 = devsim_metadata::exit::DRIVER_FAILING;

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
            subject_src,
            ..
        } => check_subject(&subject, subject_src.as_deref()),
        Command::Check {
            paths,
            selection,
            corpus,
            format,
            subject: None,
            subject_src: _,
        } => check(&catalog, &paths, &selection, &corpus, format),
        Command::Coverage {
            paths,
            threshold,
            corpus,
            format,
        } => coverage(&catalog, &paths, &threshold, &corpus, format),
        Command::Kernels { format } => kernels(&catalog, format),
        Command::Migrate { paths, check } => migrate::migrate(&paths, check),
        Command::Hosts {
            root,
            hosts: folders,
            format,
        } => hosts(root, folders, format),
        Command::Schema { which } => schema(which),
        Command::Bench { costs: true, .. } => {
            let mut show = |line: &str| say!("{line}");
            bench::costs::run_costs(&catalog, &mut show)
                .map(|()| RunOutcome::Passed)
                .map_err(CliError::from)
        }
        Command::Bench {
            root,
            rounds,
            live,
            subject,
            subject_src,
            jobs,
            ..
        } => bench_command(
            &catalog,
            &root,
            rounds,
            live,
            &subject,
            subject_src.as_deref(),
            jobs,
        ),
        Command::Completions { shell } => {
            // Into memory first: clap_complete panics on a failed write, and a closed pipe is no error.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "devsim", &mut script);
            write_stdout(&script).map(|()| RunOutcome::Passed)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(CliError::Io)
                .and_then(|()| write_stdout(&page))
                .map(|()| RunOutcome::Passed)
        }
        Command::LiveWorker => crate::replay::worker::serve(
            &catalog,
            std::io::stdin().lock(),
            std::io::stdout().lock(),
        )
        .map(|()| RunOutcome::Passed)
        .map_err(CliError::from),
        Command::DriverView => masks::driver_view().map(|()| RunOutcome::Passed),
        Command::Visible { stdin_jsonl: _ } => visible::stdin_jsonl()
            .map(|()| RunOutcome::Passed)
            .map_err(CliError::from),
    };
    let code = match result {
        Ok(outcome) => {
            if let Some(shortfall) = outcome.shortfall() {
                warn!("error: failed to {shortfall}");
            }
            outcome.exit_code()
        }
        Err(error) => {
            warn!("error: failed to {error}");
            error.exit_code()
        }
    };
    ExitCode::from(code)
}

/// `devsim bench`: subjects side by side, the live benchmarks, or the simulated ones, each figure printed
/// as it is measured.
fn bench_command(
    catalog: &Catalog,
    root: &std::path::Path,
    rounds: u32,
    live: bool,
    subjects: &[String],
    source: Option<&std::path::Path>,
    jobs: Option<std::num::NonZeroUsize>,
) -> Result<RunOutcome, CliError> {
    let mut show = |line: &str| say!("{line}");
    if !subjects.is_empty() {
        for subject in subjects {
            contained_subject(subject)?;
        }
        let jobs = jobs.unwrap_or_else(args::default_jobs);
        bench::side_by_side::run_subjects(root, subjects, source, rounds, jobs, &mut show)?;
    } else if live {
        bench::run_live(rounds, &mut show)?;
        bench::corpus_live(root, catalog, rounds, &mut show)?;
    } else {
        bench::run(root, catalog, rounds, &mut show)?;
    }
    Ok(RunOutcome::Passed)
}
