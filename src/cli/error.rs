//! Why `devsim` as a whole could not do what it was asked: errors, never verdicts (those are
//! [`super::RunOutcome`]).

use thiserror::Error;

use crate::baseline::BaselineError;
use crate::bench::BenchError;
use crate::cli::filter::PatternError;
use crate::host::HostError;
use crate::probe::ProbeError;
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
    /// A host profile was invalid.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A profile file could not be loaded.
    #[error(transparent)]
    Profile(#[from] LoadError),
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
    /// `migrate` could not write a file: a link in its place, or the file system refused
    /// ([`crate::contain::write_file`]).
    #[error(transparent)]
    Write(#[from] crate::contain::WriteError),
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
    /// The coverage threshold file cannot be read.
    #[error(transparent)]
    Threshold(#[from] crate::runner::coverage::ThresholdError),
    /// A benchmark could not be measured (`devsim bench`).
    #[error(transparent)]
    Bench(#[from] BenchError),
}

impl CliError {
    /// The exit code of a command that ends with this: every variant named, so a new one must choose.
    /// Verdicts (failed, errored, too few live …) are not errors: [`super::RunOutcome::exit_code`].
    pub fn exit_code(&self) -> u8 {
        use devsim_metadata::exit;
        match self {
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
            // What devsim was given could not be used, or what it writes could not be written.
            Self::Escapes { .. }
            | Self::DanglingLink { .. }
            | Self::Corpus(_)
            | Self::Host(_)
            | Self::Profile(_)
            | Self::NoDefaultScenarios { .. }
            | Self::Accept(_)
            | Self::Write(_)
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
    fn an_error_is_bad_input_unless_a_live_driver_failed_while_measured() {
        let io = || std::io::Error::other("x");
        assert_eq!(CliError::Io(io()).exit_code(), exit::BAD_INPUT);
        assert_eq!(
            CliError::Bench(BenchError::Io(io())).exit_code(),
            exit::BAD_INPUT
        );
        assert_eq!(
            CliError::Bench(BenchError::Live("x".into())).exit_code(),
            exit::DRIVER_FAILING
        );
        assert_eq!(
            CliError::NoDefaultScenarios { here: ".".into() }.exit_code(),
            exit::BAD_INPUT
        );
    }
}
