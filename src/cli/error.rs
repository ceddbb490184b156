//! Why `devsim` as a whole could not do what it was asked.

use thiserror::Error;

use crate::cli::filter::PatternError;
use crate::cli::probe::ProbeError;
use crate::dispatch::DispatchError;
use crate::host::HostError;
use crate::scenario::{CorpusError, LoadError};

/// Why `devsim` as a whole could not do what it was asked.
#[derive(Debug, Error)]
pub enum CliError {
    /// A file or folder could not be listed.
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// Files failed to load.
    #[error("load {count} file(s)")]
    Load {
        /// How many files failed.
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
}
