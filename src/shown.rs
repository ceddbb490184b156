//! How text from a user's tree or a subject reaches a person: the one rule of human output.
//!
//! Scenario names (file names and `[matrix]` values), descriptions, reasons, messages, finding signatures and
//! a subject's answers and stderr are shown with every control character (newlines, carriage returns, tabs,
//! ESC, BEL, NUL, DEL, C1) and every bidirectional override escaped as Rust writes it (`\n`, `\u{1b}`). So no
//! input can move the cursor, restyle the terminal, reorder what is shown, or start a line of its own that
//! reads like devsim's (`ok …`, a summary). Human output applies the rule twice: each piece of user text as
//! it is placed ([`field`], [`escape_controls`]), and every finished line at the point it is printed
//! ([`lines`]: everything but the renderer's own newlines), so a piece placed without [`field`] can at worst
//! break a line, never reach the terminal raw. JSON and JUnit escape as their own formats require instead.
//! Depends on nothing else in devsim.

use std::borrow::Cow;
use std::fmt;

/// Control characters and the bidirectional overrides and isolates: what human output never shows raw.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Text with every [`is_unsafe`] character escaped, newlines and tabs included: one piece of user text,
/// safe to place anywhere in a line.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape_where(text, is_unsafe)
}

/// A finished block of human output, safe to print: every [`is_unsafe`] character escaped except `\n`,
/// which only the renderer puts between lines once its pieces went through [`field`].
pub fn lines(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && is_unsafe(c))
}

/// Whether `text` is safe to print as it is: no [`is_unsafe`] character but `\n`.
pub fn is_printable(text: &str) -> bool {
    !text.chars().any(|c| c != '\n' && is_unsafe(c))
}

fn escape_where(text: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A value shown through [`escape_controls`]: `format!("ok {}", field(&name))`. Width and alignment apply
/// to the escaped text.
pub fn field<T: fmt::Display>(value: T) -> Field<T> {
    Field(value)
}

/// See [`field`].
#[derive(Debug, Clone, Copy)]
pub struct Field<T>(pub T);

impl<T: fmt::Display> fmt::Display for Field<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        f.pad(&escape_controls(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_escapes_newlines_terminal_controls_and_bidi_overrides() {
        let value = "a\nok x.toml\r\u{1b}[2J\u{7}\u{0}\u{7f}\u{9b}\u{202e}\t";
        let shown = field(value).to_string();
        assert_eq!(
            shown,
            "a\\nok x.toml\\r\\u{1b}[2J\\u{7}\\u{0}\\u{7f}\\u{9b}\\u{202e}\\t"
        );
        assert!(is_printable(&shown) && !shown.contains('\n'));
        assert_eq!(format!("[{:<8}]", field("a\u{7}")), "[a\\u{7}  ]");
    }

    #[test]
    fn finished_lines_keep_their_newlines_and_lose_every_other_control() {
        assert_eq!(lines("ok a\nb\u{1b}c"), "ok a\nb\\u{1b}c");
        assert!(matches!(lines("plain\ntext"), Cow::Borrowed(_)));
        assert!(is_printable("two\nlines") && !is_printable("bell\u{7}"));
    }
}
