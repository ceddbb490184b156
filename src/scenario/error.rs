//! Why a scenario or host-profile file cannot be loaded, located at `path:line:column`, and why a corpus
//! cannot be listed.

use std::path::PathBuf;

use thiserror::Error;

/// A scenario or host-profile file that cannot be loaded, located at `path:line:column`.
#[derive(Debug, Clone, Error)]
#[error("{}:{line}:{column}: {message}", path.display())]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was wrong and what was expected.
    pub message: String,
    /// A suggestion, such as the closest valid name.
    pub help: Option<String>,
    /// The offending text, for rendering (boxed: errors stay small on the happy path).
    pub snippet: Option<Box<Snippet>>,
}

/// The file text and byte range a [`LoadError`] points at.
#[derive(Debug, Clone)]
pub struct Snippet {
    /// The whole file, named by its path.
    pub source: miette::NamedSource<String>,
    /// The offending range.
    pub span: miette::SourceSpan,
}

impl LoadError {
    /// An error with no source snippet.
    pub fn new(
        path: impl Into<PathBuf>,
        line: usize,
        column: usize,
        message: impl Into<String>,
    ) -> Self {
        Self {
            path: path.into(),
            line,
            column,
            message: message.into(),
            help: None,
            snippet: None,
        }
    }
}

impl miette::Diagnostic for LoadError {
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.snippet
            .as_ref()
            .map(|snippet| &snippet.source as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let snippet = self.snippet.as_ref()?;
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(Some("here".into()), snippet.span),
        )))
    }
}

/// A scenario path that cannot be listed.
#[derive(Debug, Error)]
#[error("read {}: {source}", path.display())]
pub struct CorpusError {
    /// The file or folder.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}
