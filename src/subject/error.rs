//! Why a subject could not be judged at all: a bad subject file or command, a subject that does not start,
//! or a handshake devsim cannot accept. These abort a run; a subject misbehaving inside one scenario fails
//! that scenario instead (see [`super::process`]).

use std::path::PathBuf;

use thiserror::Error;

/// Why a subject could not be judged at all.
#[derive(Debug, Error)]
pub enum SubjectError {
    /// A subject file cannot be read: not a regular file inside its folder, too large, not UTF-8.
    #[error("read subject file {path}: {message}")]
    RefusedFile {
        /// The file.
        path: PathBuf,
        /// Why, without any of its content.
        message: String,
    },
    /// A subject file is not valid.
    #[error("parse subject file {path}:{line}: {message}")]
    ParseFile {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the problem.
        line: usize,
        /// What was expected.
        message: String,
    },
    /// A subject's source tree (`source`, `--subject-src`) cannot be used.
    #[error("use subject source tree {path}: {message}")]
    Source {
        /// The folder as given.
        path: PathBuf,
        /// Why not.
        message: String,
    },
    /// A command line could not be split into words.
    #[error("split subject command `{command}`: {message}")]
    CommandLine {
        /// The command as given.
        command: String,
        /// What is wrong with it.
        message: String,
    },
    /// The command is empty.
    #[error("start subject `{subject}`: expected a command, got none")]
    EmptyCommand {
        /// The subject's name.
        subject: String,
    },
    /// The command could not be started.
    #[error("start subject `{subject}` (`{command}`): {source}")]
    Start {
        /// The subject's name.
        subject: String,
        /// The command line.
        command: String,
        /// Why the OS refused.
        source: std::io::Error,
    },
    /// A thread starting one of several processes of a subject panicked (a bug of devsim).
    #[error("start a subject process: the thread starting it panicked")]
    StartPanicked,
    /// The subject did not complete the handshake.
    #[error("complete the handshake with subject `{subject}`: {problem}{stderr}")]
    Handshake {
        /// The subject's name.
        subject: String,
        /// What went wrong, with the offending line.
        problem: String,
        /// The tail of the subject's stderr, prefixed with a newline, or empty.
        stderr: String,
    },
    /// `run --live --subject` with a subject whose handshake does not say `live`.
    #[error(
        "replay subject `{subject}` live: its handshake does not say `live`, so it can only simulate hosts (drop --live, or give it a live mode: docs/subject-protocol.md)"
    )]
    NotLive {
        /// The subject's name.
        subject: String,
    },
    /// The subject speaks another protocol version.
    #[error(
        "speak protocol {got} with subject `{subject}`: this devsim speaks protocol {expected} and still accepts 1 (deprecated)"
    )]
    ProtocolVersion {
        /// The subject's name.
        subject: String,
        /// The version the subject announced.
        got: String,
        /// devsim's version.
        expected: u32,
    },
    /// The handshake names something devsim does not know.
    #[error(
        "accept the handshake of subject `{subject}`: {what} `{name}` is not one of devsim's ({expected})"
    )]
    UnknownName {
        /// The subject's name.
        subject: String,
        /// `kernel`, `action` or `event`.
        what: &'static str,
        /// The name.
        name: String,
        /// What devsim knows, or a suggestion.
        expected: String,
    },
}
