//! Why `devsim` as a whole could not do what it was asked.

use thiserror::Error;

use crate::baseline::BaselineError;
use crate::bench::BenchError;
use crate::cli::filter::PatternError;
use crate::cli::probe::ProbeError;
use crate::dispatch::DispatchError;
use crate::host::HostError;
use crate::scenario::error::escape_controls;
use crate::scenario::{CorpusError, LoadError};
use crate::subject::SubjectError;

/// Why `devsim` as a whole could not do what it was asked.
#[derive(Debug, Error)]
pub enum CliError {
    /// A path argument (`--hosts`, `--baseline`, `--subject`) is a link that resolves outside the folder it
    /// was given under; it is refused before anything it names is read.
    #[error(
        "use {flag} {}: it is a link that resolves outside {}; links are followed only inside the folder they were given under",
        escape_controls(&path.display().to_string()),
        escape_controls(&folder.display().to_string())
    )]
    Escapes {
        /// The argument, as `--hosts`.
        flag: &'static str,
        /// The path as given.
        path: std::path::PathBuf,
        /// The folder it was given under, resolved.
        folder: std::path::PathBuf,
    },
    /// A path argument is a link whose target does not exist: devsim neither reads nor writes through it.
    #[error(
        "use {flag} {}: it is a link to nothing; devsim does not write through a link it cannot resolve",
        escape_controls(&path.display().to_string())
    )]
    DanglingLink {
        /// The argument, as `--write-baseline`.
        flag: &'static str,
        /// The path as given.
        path: std::path::PathBuf,
    },
    /// A file or folder could not be listed.
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// Files failed to load.
    #[error("load {count} file(s)")]
    Load {
        /// How many files failed.
        count: usize,
    },
    /// devsim failed to run or judge scenarios (not findings about the code under test).
    #[error("run or judge {count} scenario(s): devsim's own failure, not the code under test's")]
    Errored {
        /// How many.
        count: usize,
    },
    /// Scenarios failed.
    #[error("pass {failed} scenario(s)")]
    Failed {
        /// How many failed.
        failed: usize,
    },
    /// A host profile was invalid.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A profile file could not be loaded.
    #[error(transparent)]
    Profile(#[from] LoadError),
    /// A dispatch step outside a scenario failed (benchmarks).
    #[error(transparent)]
    Dispatch(#[from] DispatchError),
    /// `run --live --require-live N` ran fewer than N scenarios live.
    #[error("run {required} GPU scenario(s) live: only {ran} ran, the rest were skipped")]
    TooFewLive {
        /// How many ran live.
        ran: usize,
        /// How many were required.
        required: usize,
    },
    /// `run --live --require-live N` through one of devsim's fake drivers.
    #[error(
        "run {required} GPU scenario(s) live: the driver is one of devsim's fakes, which proves nothing about a GPU (pass --allow-fake in devsim's own tests)"
    )]
    FakeDriver {
        /// How many were required.
        required: usize,
    },
    /// No path was given and there is no `./scenarios` folder.
    #[error(
        "find scenarios: given no path, devsim reads ./scenarios, and {here} has none; pass a folder or file (`devsim run path/to/scenarios`), or run devsim where your scenarios/ folder is"
    )]
    NoDefaultScenarios {
        /// The current folder.
        here: String,
    },
    /// `run --accept` could not write a pending copy, or `review` could not settle one.
    #[error(transparent)]
    Accept(#[from] crate::accept::AcceptError),
    /// `migrate --check` found files with deprecated forms.
    #[error(
        "pass the migration check: {count} file(s) have deprecated forms; `devsim migrate` rewrites them"
    )]
    MigrationNeeded {
        /// How many files.
        count: usize,
    },
    /// `migrate` could not write a file.
    #[error("write {}: {source}", crate::scenario::error::escape_controls(&path.display().to_string()))]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `review` left pending changes undecided.
    #[error(
        "settle {count} pending change(s): `devsim review --accept` or `--reject`, or review on a terminal"
    )]
    PendingLeft {
        /// How many pending copies are left.
        count: usize,
    },
    /// `probe --require-gpu N` found fewer than N real GPUs.
    #[error("find {required} real GPU(s): {found}")]
    TooFewGpus {
        /// How many were required.
        required: usize,
        /// What the probe found, in one line.
        found: String,
    },
    /// `probe --check-masks`: the driver showed other GPUs than devsim predicts under some masks.
    #[error("match the driver under {count} visible-device mask(s): devsim predicts other GPUs")]
    MasksDisagree {
        /// How many masks disagreed.
        count: usize,
    },
    /// A GPU driver is present but failed while devsim read the GPUs (`run --live`, `probe`).
    #[error("read the GPUs: {0}")]
    DriverFailing(String),
    /// Standard input or output failed.
    #[error("read stdin or write stdout: {0}")]
    Io(#[from] std::io::Error),
    /// The subject could not be started or refused the handshake.
    #[error(transparent)]
    Subject(#[from] SubjectError),
    /// A baseline file could not be read or written.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// Reproductions (`run --repro DIR`) could not be written.
    #[error(transparent)]
    Repro(#[from] crate::repro::ReproError),
    /// A live record could not be read, written or used (`crate::live_record`).
    #[error(transparent)]
    LiveRecord(#[from] crate::live_record::LiveRecordError),
    /// Outcomes differ from the baseline.
    #[error("match baseline {path}: {count} scenario(s) changed outcome")]
    BaselineDiffers {
        /// The baseline file.
        path: String,
        /// How many scenarios changed.
        count: usize,
    },
    /// A tag or filter selected none of the scenarios.
    #[error(
        "select scenarios: {asked} matched none of the {total} scenario(s){hint}; pass --allow-empty to accept an empty run"
    )]
    EmptySelection {
        /// The selection as given.
        asked: String,
        /// How many scenarios there were to choose from.
        total: usize,
        /// A suggestion for a mistyped tag, or empty.
        hint: String,
    },
    /// The baseline was recorded for another subject.
    #[error(
        "compare with baseline {path}: it records subject `{recorded}`, this run judges `{judged}`"
    )]
    BaselineSubject {
        /// The baseline file.
        path: String,
        /// The subject it records.
        recorded: String,
        /// The subject judged now.
        judged: String,
    },
    /// JSON output could not be written.
    #[error("write json: {0}")]
    Json(#[from] serde_json::Error),
    /// A `--filter` pattern was not a valid glob.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// A probed profile could not be written.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// JUnit output could not be written.
    #[error("write junit: {0}")]
    Junit(#[from] quick_junit::SerializeError),
    /// `coverage`: paths the corpus's threshold asks for that no passing scenario exercised.
    #[error("cover every kernel path the threshold asks for: {count} not exercised")]
    CoverageGaps {
        /// How many kernel/path/build cells are missing.
        count: usize,
    },
    /// The coverage threshold file cannot be read.
    #[error(transparent)]
    Threshold(#[from] crate::runner::coverage::ThresholdError),
    /// A benchmark could not be measured (`devsim bench`).
    #[error(transparent)]
    Bench(#[from] BenchError),
}

impl CliError {
    /// The exit code of a command that ends with this: every variant named, so a new one must choose.
    pub fn exit_code(&self) -> u8 {
        use devsim_metadata::exit;
        match self {
            // Verdicts on the code under test, or on the machine a live run needs.
            Self::Failed { .. }
            | Self::TooFewLive { .. }
            | Self::FakeDriver { .. }
            | Self::TooFewGpus { .. }
            | Self::MasksDisagree { .. }
            | Self::BaselineDiffers { .. }
            | Self::PendingLeft { .. }
            | Self::MigrationNeeded { .. }
            | Self::CoverageGaps { .. } => exit::FAILED,
            // devsim's own failure to run or judge: no verdict.
            Self::Errored { .. } => exit::ERRORED,
            Self::DriverFailing(_) => exit::DRIVER_FAILING,
            // A GPU driver failed while a live benchmark measured it.
            Self::Bench(error) => match error {
                BenchError::Live(_) => exit::DRIVER_FAILING,
                BenchError::Io(_)
                | BenchError::Corpus(_)
                | BenchError::Load(_)
                | BenchError::Dispatch(_)
                | BenchError::Subject(_)
                | BenchError::LiveRecord(_) => exit::BAD_INPUT,
            },
            // What devsim was given could not be used.
            Self::Escapes { .. }
            | Self::DanglingLink { .. }
            | Self::Corpus(_)
            | Self::Load { .. }
            | Self::Host(_)
            | Self::Profile(_)
            | Self::Dispatch(_)
            | Self::NoDefaultScenarios { .. }
            | Self::Accept(_)
            | Self::Write { .. }
            | Self::Io(_)
            | Self::Subject(_)
            | Self::Baseline(_)
            | Self::Repro(_)
            | Self::LiveRecord(_)
            | Self::EmptySelection { .. }
            | Self::BaselineSubject { .. }
            | Self::Json(_)
            | Self::Pattern(_)
            | Self::Probe(_)
            | Self::Junit(_)
            | Self::Threshold(_) => exit::BAD_INPUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use devsim_metadata::exit;

    #[test]
    fn an_errored_run_has_its_own_exit_code_apart_from_failures_and_bad_input() {
        let errored = CliError::Errored { count: 1 }.exit_code();
        assert_eq!(errored, exit::ERRORED);
        assert_ne!(errored, CliError::Failed { failed: 1 }.exit_code());
        assert_ne!(errored, CliError::Load { count: 1 }.exit_code());
        assert_eq!(
            CliError::DriverFailing("x".into()).exit_code(),
            exit::DRIVER_FAILING
        );
        let codes = [
            exit::PASSED,
            exit::FAILED,
            exit::BAD_INPUT,
            exit::DRIVER_FAILING,
            errored,
        ];
        let mut distinct = codes.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), codes.len(), "every outcome is told apart");
    }
}
