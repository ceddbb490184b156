//! Why a scenario or host-profile file cannot be loaded, located at `path:line:column`, and why a corpus
//! cannot be listed.

use std::path::PathBuf;

use thiserror::Error;

/// A scenario or host-profile file that cannot be loaded, located at `path:line:column`. Shown (its
/// `Display`, its help, [`render`]) with control characters in the path, message and help escaped; the
/// fields keep the text as it was.
#[derive(Debug, Clone, Error)]
#[error(
    "{}:{line}:{column}: {}",
    escape_controls(&path.display().to_string()),
    escape_controls(message)
)]
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

/// A few lines of the file around a [`LoadError`], ready to render: each line clipped around the error and
/// control characters escaped, so no input can break the renderer or the terminal.
#[derive(Debug, Clone)]
pub struct Snippet {
    /// The file's path, as shown.
    pub name: String,
    /// The excerpt: whole lines (clipped), joined by `\n`.
    pub text: String,
    /// The 0-based line in the file of the excerpt's first line.
    pub first_line: usize,
    /// The 0-based line in the file of the error.
    pub line: usize,
    /// The 0-based column in the file of the error.
    pub column: usize,
    /// The offending range, within `text`.
    pub span: miette::SourceSpan,
}

impl miette::SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let inner = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        // Lines are numbered as in the file; the error's own column is the file's, not the clipped one.
        let line = inner.line() + self.first_line;
        let column = if line == self.line && span.offset() == self.span.offset() {
            self.column
        } else {
            inner.column()
        };
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            line,
            column,
            inner.line_count(),
        )))
    }
}

/// Text with control characters (and bidirectional overrides) escaped: human output's one rule, in
/// [`crate::shown`].
pub use crate::shown::escape_controls;

/// Renders a diagnostic with miette's graphical handler, without colour or line wrapping: what the CLI
/// prints and what the snapshot tests pin.
pub fn render(diagnostic: &dyn miette::Diagnostic) -> String {
    let mut out = String::new();
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .with_width(100)
            .with_links(false)
            .with_wrap_lines(false);
    if handler.render_report(&mut out, diagnostic).is_err() {
        out = diagnostic.to_string();
    }
    out
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
            .map(|help| Box::new(crate::shown::field(help)) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.snippet
            .as_ref()
            .map(|snippet| &**snippet as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let snippet = self.snippet.as_ref()?;
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(Some("here".into()), snippet.span),
        )))
    }
}

/// Something a file should change that does not stop it loading: a deprecated form, with the migration in
/// its help. Located like a [`LoadError`], rendered with miette's warning severity.
#[derive(Debug, Clone, Error)]
#[error(transparent)]
pub struct LoadWarning(pub LoadError);

impl miette::Diagnostic for LoadWarning {
    fn severity(&self) -> Option<miette::Severity> {
        Some(miette::Severity::Warning)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.0.help()
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.0.source_code()
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.0.labels()
    }
}

/// A scenario path that cannot be listed, or a scenario run with nothing to run.
#[derive(Debug, Error)]
pub enum CorpusError {
    /// A file or folder could not be read; the path is the one that failed, not the argument above it.
    #[error("read {}: {source}", escape_controls(&path.display().to_string()))]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A symbolic link resolves outside the scenario root; it is not followed.
    #[error(
        "follow link {}: it resolves outside the scenario root {}",
        escape_controls(&path.display().to_string()),
        escape_controls(&root.display().to_string())
    )]
    Escapes {
        /// The link.
        path: PathBuf,
        /// The scenario root.
        root: PathBuf,
    },
    /// A `*.toml` entry that is a FIFO, socket or device; it is not opened.
    #[error("read {}: it is {kind}, expected a regular file", escape_controls(&path.display().to_string()))]
    NotRegular {
        /// The entry.
        path: PathBuf,
        /// What it is, in words.
        kind: &'static str,
    },
    /// A folder lies deeper below its argument than discovery goes.
    #[error(
        "walk {}: it is more than {limit} folders below the folder given; scenario trees are at most {limit} deep",
        escape_controls(&path.display().to_string())
    )]
    TooDeep {
        /// The first folder too deep.
        path: PathBuf,
        /// The limit, [`crate::scenario::load::corpus::MAX_DEPTH`].
        limit: usize,
    },
    /// The paths hold no scenario file.
    #[error(
        "find scenarios: no scenario file (*.toml) under {paths}; pass --allow-empty to accept that"
    )]
    Empty {
        /// The paths searched.
        paths: String,
    },
    /// The host profile folders cannot be used.
    #[error(transparent)]
    Profiles(#[from] ProfileError),
    /// A file would take the run past its run-wide budget of step executions (matrix cases included); the
    /// error names the file, at its `[matrix]` header or its start.
    #[error("stay within the run's budget: {0}")]
    OverBudget(Box<LoadError>),
}

/// Why a host profile cannot be found, or a profile folder cannot be used.
#[derive(Debug, Error)]
pub enum ProfileError {
    /// A configured profile folder is missing.
    #[error("use profile folder {}: it does not exist or is not a folder", escape_controls(&path.display().to_string()))]
    MissingFolder {
        /// The folder.
        path: PathBuf,
    },
    /// A profile folder is a link that resolves outside the folder it was given under; it is not followed.
    #[error(
        "use profile folder {}: it is a link that resolves outside {}; links are followed only inside the folder they were given under",
        escape_controls(&path.display().to_string()),
        escape_controls(&folder.display().to_string())
    )]
    Escapes {
        /// The folder as given.
        path: PathBuf,
        /// The folder it was given under, resolved.
        folder: PathBuf,
    },
    /// A configured profile folder cannot be listed.
    #[error("list profile folder {}: {source}", escape_controls(&path.display().to_string()))]
    Io {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No folder and no built-in profile has the name.
    #[error("find host profile `{name}`: searched {searched}; expected one of {available}")]
    NotFound {
        /// The name asked for (escaped, clipped).
        name: String,
        /// Every place searched, in order.
        searched: String,
        /// Every profile name that exists.
        available: String,
    },
    /// Two configured folders define the name.
    #[error(
        "find host profile `{name}`: it is defined twice, in {} and {}",
        escape_controls(&first.display().to_string()),
        escape_controls(&second.display().to_string())
    )]
    Ambiguous {
        /// The name.
        name: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
}
