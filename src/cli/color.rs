//! Colour on a terminal: the status word that opens each human report (`FAILED` red, `ok` green, `skipped`,
//! `n/a` and `partial` yellow), through anstream, which drops the styling where it does not
//! belong (not a terminal, `NO_COLOR`, `--color never`). JSON and JUnit are never styled.

use anstyle::{AnsiColor, Style};

/// When to colour, as `--color` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    /// On a terminal, unless `NO_COLOR` is set (or `CLICOLOR=0`).
    Auto,
    /// Always, also into a pipe (`CLICOLOR_FORCE` does the same).
    Always,
    /// Never.
    Never,
}

/// Makes `when` the choice of every anstream writer in this process.
pub fn choose(when: When) {
    anstream::ColorChoice::write_global(match when {
        When::Auto => anstream::ColorChoice::Auto,
        When::Always => anstream::ColorChoice::Always,
        When::Never => anstream::ColorChoice::Never,
    });
}

/// A human report with its first word styled by outcome.
pub fn report(text: &str) -> String {
    let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
    let style = match word {
        "FAILED" => Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        "ok" => Style::new().fg_color(Some(AnsiColor::Green.into())),
        "skipped" | "n/a" | "partial" => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
        _ => return text.to_string(),
    };
    format!("{style}{word}{style:#} {rest}")
}

/// Prints `text` and a newline to stdout through anstream; a closed pipe is not an error. The text is
/// already escaped ([`crate::report::human`]): the only control sequences left are the styling's own.
pub fn print(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(anstream::stdout().lock(), "{text}");
}
