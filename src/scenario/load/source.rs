//! One file's text and where it lives: byte offsets become `line:column` through a line-start table built
//! once per file (a binary search per lookup), and errors carry a small, escaped excerpt for rendering.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::Range;
use std::path::Path;

use crate::kernel::catalog::closest;
use crate::scenario::error::{LoadError, LoadWarning, Snippet, escape_controls};

/// A file's text and line table without the warnings: what threads share to make [`Source`]s of batches.
#[derive(Clone, Copy)]
pub(crate) struct Lines<'a> {
    path: &'a Path,
    text: &'a str,
    line_starts: &'a [usize],
}

impl<'a> Lines<'a> {
    /// A source for the part of the file from byte `base`: the offsets and spans it is given count from
    /// there, while its lines, columns and excerpts are the whole file's.
    pub fn part(self, base: usize) -> Source<'a> {
        Source {
            path: self.path,
            text: self.text,
            line_starts: Cow::Borrowed(self.line_starts),
            base,
            warnings: RefCell::default(),
        }
    }
}

/// Lines of context above and below the offending line in an excerpt.
const CONTEXT_LINES: usize = 1;
/// The most characters of one line an excerpt shows; longer lines are clipped around the error.
const MAX_LINE_CHARS: usize = 120;

/// One file's text plus where it lives.
pub(crate) struct Source<'a> {
    /// The file, for messages.
    pub path: &'a Path,
    /// Its text.
    pub text: &'a str,
    /// The byte offset where each line starts; the first is 0.
    line_starts: Cow<'a, [usize]>,
    /// Where in `text` the offsets and spans this source is given count from: 0 for a whole file, a batch's
    /// start for [`Lines::part`].
    base: usize,
    /// What loading found to warn about, in the order found.
    warnings: RefCell<Vec<LoadWarning>>,
}

impl<'a> Source<'a> {
    /// Indexes a file's lines once.
    pub fn new(path: &'a Path, text: &'a str) -> Self {
        // A plain byte loop: scenario lines are short, and a string search per line cost more than the bytes.
        let mut line_starts = Vec::with_capacity(text.len() / 16 + 1);
        line_starts.push(0);
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self {
            path,
            text,
            line_starts: Cow::Owned(line_starts),
            base: 0,
            warnings: RefCell::default(),
        }
    }

    /// The file and its line table, to share with other threads ([`Source`] keeps its warnings in a cell).
    pub fn lines(&self) -> Lines<'_> {
        Lines {
            path: self.path,
            text: self.text,
            line_starts: &self.line_starts,
        }
    }

    /// Records a warning at `span`: the file loads, but should change as `help` says.
    pub fn warn(&self, span: Range<usize>, message: impl Into<String>, help: String) {
        let warning = LoadWarning(self.error_with_help(span, message, Some(help)));
        self.warnings.borrow_mut().push(warning);
    }

    /// Records warnings found through other sources of the same file (its batches), in order.
    pub fn add_warnings(&self, warnings: Vec<LoadWarning>) {
        self.warnings.borrow_mut().extend(warnings);
    }

    /// The warnings recorded so far, emptied.
    pub fn take_warnings(&self) -> Vec<LoadWarning> {
        self.warnings.take()
    }

    /// A byte offset clamped into the text and moved back onto a character boundary.
    fn clamp(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// The 0-based line index holding `offset`.
    fn line_index(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// The 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_index(self.clamp(self.base.saturating_add(offset))) + 1
    }

    /// The 1-based line and column (in characters) of a byte offset in the whole text.
    fn position(&self, offset: usize) -> (usize, usize) {
        let offset = self.clamp(offset);
        let index = self.line_index(offset);
        let column = self.text[self.line_starts[index]..offset].chars().count() + 1;
        (index + 1, column)
    }

    /// The text of a 0-based line, without its line break.
    fn line_text(&self, index: usize) -> &str {
        let start = self.line_starts[index];
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// An error at `span`.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> LoadError {
        let start = self.clamp(self.base.saturating_add(span.start));
        let end = self.base.saturating_add(span.end);
        let (line, column) = self.position(start);
        LoadError {
            snippet: Some(Box::new(self.excerpt(start, end, column))),
            ..LoadError::new(
                self.path,
                line,
                column,
                clip(escape_controls(&message.into()).into_owned()),
            )
        }
    }

    /// An error at `span` with a suggestion.
    pub fn error_with_help(
        &self,
        span: Range<usize>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> LoadError {
        LoadError {
            help: help.map(|h| escape_controls(&h).into_owned()),
            ..self.error(span, message)
        }
    }

    /// The lines around `start` (each clipped to [`MAX_LINE_CHARS`] around the error's column, control
    /// characters escaped), with the span mapped into them and cut at the end of its first line.
    fn excerpt(&self, start: usize, end: usize, column: usize) -> Snippet {
        let index = self.line_index(start);
        let first = index.saturating_sub(CONTEXT_LINES);
        let last = (index + CONTEXT_LINES).min(self.line_starts.len() - 1);
        let skip = (column - 1).saturating_sub(MAX_LINE_CHARS / 2);
        let end = self.clamp(end.max(start));
        let mut text = String::new();
        let mut mapped = (0, 0);
        for line in first..=last {
            let line_start = self.line_starts[line];
            let raw = self.line_text(line);
            let count = raw.chars().count();
            if skip > 0 && count > skip {
                text.push('…');
            }
            for (at, c) in raw.char_indices().skip(skip).take(MAX_LINE_CHARS) {
                let offset = line_start + at;
                if line == index && offset == start {
                    mapped.0 = text.len();
                }
                push_escaped(&mut text, c);
                if line == index && offset >= start && offset < end.max(start + 1) {
                    mapped.1 = text.len();
                }
            }
            if line == index && start >= line_start + raw.len() {
                // The error points past the line's last character (a missing value, the end of the file).
                mapped = (text.len(), text.len());
            }
            if count > skip + MAX_LINE_CHARS {
                text.push('…');
            }
            if line != last {
                text.push('\n');
            }
        }
        let (from, to) = (mapped.0, mapped.1.max(mapped.0));
        Snippet {
            name: escape_controls(&self.path.display().to_string()).into_owned(),
            text,
            first_line: first,
            line: index,
            column: column - 1,
            span: (from, to - from).into(),
        }
    }

    /// Parses the text from where this source's offsets count (the whole file, or a batch to its end) into
    /// `T`, turning syntax and unknown-key errors into located diagnostics.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, LoadError> {
        self.parse_part(self.text.len())
    }

    /// Like [`Source::parse`], for the text from where this source's offsets count up to the byte `end`.
    pub fn parse_part<T: serde::de::DeserializeOwned>(&self, end: usize) -> Result<T, LoadError> {
        let part = self.text.get(self.base..end).unwrap_or_default();
        toml::from_str(part).map_err(|error| {
            let message = list_matrix(error.message().trim());
            let span = match error.span() {
                Some(span) => span,
                None => unspanned(part, &message),
            };
            let (message, duplicate) = match duplicate_key(&message, part, &span) {
                Some(named) => (named, true),
                None => (message, false),
            };
            let help = unknown_field_hint(&message)
                .or_else(|| crate::scenario::load::hints::unknown_variant(&message))
                .or_else(|| crate::scenario::load::hints::missing_field(&message))
                .or_else(|| duplicate.then(|| DUPLICATE_KEY_HELP.to_string()));
            let (message, help) = match single_step_table(&message) {
                true => (
                    "read `[step]`: use [[step]] — a scenario has a list of steps".to_string(),
                    Some("write each step as its own [[step]] table".to_string()),
                ),
                false => (message, help),
            };
            self.error_with_help(span, message, help)
        })
    }
}

/// Where in `text` an error the TOML parser gave no span belongs: for a nesting limit, the first bracket past
/// the limit; otherwise the start of the file.
fn unspanned(text: &str, message: &str) -> Range<usize> {
    if message.contains("recursion") || message.contains("nest") {
        if let Some(at) = deepest_bracket(text) {
            return at..at + 1;
        }
    }
    0..0
}

/// The help under a key set twice in one table.
pub(crate) const DUPLICATE_KEY_HELP: &str = "keep one of the two: TOML sets a key once per table, a later line does not replace an earlier one";

/// The TOML parser's bare "duplicate key" with the key it points at named: `duplicate key `action``. The
/// span covers the key as written (a header's key for a table defined twice); quotes and brackets are
/// dropped, and the name is escaped and clipped as user text.
pub(crate) fn duplicate_key(message: &str, text: &str, span: &Range<usize>) -> Option<String> {
    if message != "duplicate key" {
        return None;
    }
    let key = text
        .get(span.clone())?
        .trim()
        .trim_matches(['[', ']', '"', '\''])
        .trim();
    (!key.is_empty()).then(|| format!("read key `{}`: it is set twice in one table", shown(key)))
}

/// Whether a serde message says a single table was given where the list of steps belongs.
fn single_step_table(message: &str) -> bool {
    message.starts_with("invalid type: map, expected a sequence")
}

/// The first `[` or `{` (outside strings and comments) opened deeper than TOML parsers accept, or the
/// deepest one.
fn deepest_bracket(text: &str) -> Option<usize> {
    let (mut depth, mut best, mut best_depth) = (0usize, None, 0usize);
    let mut quote: Option<u8> = None;
    let mut comment = false;
    for (at, byte) in text.bytes().enumerate() {
        match (quote, byte) {
            (_, b'\n') => comment = false,
            _ if comment => {}
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(byte),
            (None, b'#') => comment = true,
            (None, b'[' | b'{') => {
                depth += 1;
                if depth > best_depth {
                    best_depth = depth;
                    best = Some(at);
                }
                if depth > 80 {
                    return Some(at);
                }
            }
            (None, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    best
}

/// Pushes a character, or its escape when it could move the cursor or change the terminal.
fn push_escaped(out: &mut String, c: char) {
    if c != '\t' && is_unsafe(c) {
        out.extend(c.escape_default());
    } else {
        out.push(c);
    }
}

pub(crate) use crate::shown::is_unsafe;

/// serde's list of a scenario's top-level keys lacks `matrix`, which is read before the file is parsed: a
/// message listing them gets it added.
fn list_matrix(message: &str) -> String {
    let top_level = message.starts_with("unknown field `")
        && message.contains("`format`")
        && message.contains("`step`")
        && !message.contains("`matrix`");
    match top_level {
        true => format!("{message}, `matrix`"),
        false => message.to_string(),
    }
}

/// "did you mean …?" for serde's `unknown field `x`, expected one of `a`, `b`` messages.
fn unknown_field_hint(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, expected) = rest.split_once('`')?;
    let mut names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    // `[matrix]` is read before the file is parsed, so serde's list of a scenario's keys lacks it.
    if names.contains(&"format") && names.contains(&"step") {
        names.push("matrix");
    }
    closest(field, names).map(|name| format!("did you mean `{name}`?"))
}

/// "did you mean …?" for a name among candidates.
pub(crate) fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(input, candidates).map(|name| format!("did you mean {name}?"))
}

/// A whole message, cut at 2,000 characters (user text inside it is already escaped).
fn clip(message: String) -> String {
    const MAX: usize = 2000;
    match message.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message,
    }
}

/// User text for a message: control characters escaped, clipped to 64 characters.
pub(crate) fn shown(text: &str) -> String {
    const MAX: usize = 64;
    let escaped = escape_controls(text);
    match escaped.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &escaped[..at]),
        None => escaped.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let source = Source::new(Path::new("x.toml"), "a = 1\nbé = 2\n\nc");
        assert_eq!(source.position(0), (1, 1));
        assert_eq!(source.position(6), (2, 1));
        assert_eq!(source.position(9), (2, 3), "é is one column");
        assert_eq!(source.position(14), (3, 1), "an empty line");
        assert_eq!(source.position(15), (4, 1));
        assert_eq!(source.position(999), (4, 2), "past the end clamps");
        assert_eq!(source.line_of(13), 2, "a line break belongs to its line");
    }

    #[test]
    fn an_excerpt_of_a_long_line_is_clipped_around_the_error() {
        let text = format!("{}bad{}", "x".repeat(70_000), "y".repeat(70_000));
        let source = Source::new(Path::new("x.toml"), &text);
        let error = source.error(70_000..70_003, "nope");
        assert_eq!((error.line, error.column), (1, 70_001));
        let snippet = error.snippet.expect("a snippet");
        assert!(snippet.text.chars().count() <= MAX_LINE_CHARS + 2);
        let at = snippet.span.offset();
        assert_eq!(&snippet.text[at..at + snippet.span.len()], "bad");
    }

    #[test]
    fn control_characters_are_escaped_in_excerpts_and_messages() {
        let source = Source::new(Path::new("x.toml"), "a = \"\u{1b}[31m\"\n");
        let error = source.error(4..10, "see \u{1b}[31m");
        let snippet = error.snippet.as_ref().expect("a snippet");
        assert!(!snippet.text.contains('\u{1b}'), "{:?}", snippet.text);
        assert!(!error.message.contains('\u{1b}'), "{:?}", error.message);
    }

    #[test]
    fn did_you_mean_suggests_for_names_and_skips_what_cannot_be_a_typo() {
        let names = ["h200x2", "r9700x2", "gptq_marlin", "gptq_torch"];
        assert_eq!(
            did_you_mean("h200x3", names).as_deref(),
            Some("did you mean h200x2?")
        );
        assert_eq!(
            did_you_mean("gptq", names).as_deref(),
            Some("did you mean gptq_torch?"),
            "a short prefix of a longer name is still a typo"
        );
        let huge = format!("h200x2{}", "x".repeat(4 * 1024 * 1024));
        assert_eq!(did_you_mean(&huge, names), None, "a 4 MB name is no typo");
        let long = "h".repeat(crate::kernel::catalog::MAX_TYPO_CHARS + 1);
        assert_eq!(did_you_mean(&long, [long.as_str()]), None, "past the cap");
        // Ten times as long cannot score above 0.8 however it is spelled: skipped, as the score would.
        let ten = "ab".repeat(10);
        assert!(strsim::jaro_winkler("ab", &ten) <= 0.8);
        assert_eq!(did_you_mean("ab", [ten.as_str()]), None);
    }

    #[test]
    fn user_text_is_clipped() {
        assert_eq!(shown(&"a".repeat(100)).chars().count(), 65);
        assert_eq!(shown("\u{7}"), "\\u{7}");
    }
}
