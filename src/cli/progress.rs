//! A progress bar for runs on a terminal: the count and the scenario running now. Plain text (no bar)
//! when stdout or stderr is not a terminal, or when `CI` is set.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether a bar is wanted: both streams are terminals and `CI` is not set.
pub fn wanted(stdout_is_terminal: bool, stderr_is_terminal: bool, ci: bool) -> bool {
    stdout_is_terminal && stderr_is_terminal && !ci
}

/// Whether this process should draw a bar.
pub fn wanted_here() -> bool {
    wanted(
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
        std::env::var_os("CI").is_some(),
    )
}

/// A run's progress: a bar on stderr, or nothing.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar over `total` scenarios when `enabled`, else a silent stand-in.
    pub fn new(total: usize, enabled: bool) -> Self {
        let bar = enabled.then(|| {
            let bar = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Self { bar }
    }

    /// Shows the scenario that starts now (its name escaped, [`crate::shown`]).
    pub fn start(&self, name: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(crate::shown::field(name).to_string());
        }
    }

    /// Counts one scenario done.
    pub fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Runs `print` with the bar hidden, so printed lines never mix with it.
    pub fn suspend(&self, print: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
