//! `devsim probe --check-masks` and `devsim driver-view`: the command line of [`crate::probe::masks`],
//! which runs the children and judges each mask; this module prints and maps the tally to an outcome.

use crate::cli::{CliError, RunOutcome};
use crate::probe::masks::{MaskCheckError, check_masks};
use crate::runtime::live::masks::DriverView;

/// `devsim driver-view`: prints [`DriverView::read`] as one JSON line.
pub fn driver_view() -> Result<(), CliError> {
    let text = serde_json::to_string(&DriverView::read())?;
    say(&text);
    Ok(())
}

fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// `devsim probe --check-masks`.
pub fn check() -> Result<RunOutcome, CliError> {
    let exe = std::env::current_exe()?;
    let tally = check_masks(&exe, &mut |line| say(line)).map_err(|error| match error {
        MaskCheckError::Machine(why) => CliError::Io(std::io::Error::other(why)),
    })?;
    if tally.disagree > 0 {
        return Ok(RunOutcome::MasksDisagree {
            count: tally.disagree,
        });
    }
    Ok(RunOutcome::Passed)
}
