//! `devsim run --accept` and `devsim review`: observed values into pending scenario copies, then a review of
//! each (the library side is [`crate::accept`]).

use crate::shown::field;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use crate::accept;
use crate::cli::{CliError, RunOutcome};
use crate::conformance::Level;
use crate::reporter::accept as shown;
use crate::runner::ScenarioReport;
use crate::scenario::model::Scenario;

/// Writes the pending copy of every failed scenario whose failures can take their observed values, and says
/// what was written and what was kept.
pub fn accept_failures(
    scenarios: &[Scenario],
    reports: &[ScenarioReport],
    levels: &[Level],
) -> Result<(), CliError> {
    let mut written = 0;
    for (scenario, report) in scenarios.iter().zip(reports) {
        let plan = accept::plan(scenario, report, levels);
        if plan.changes.is_empty() && plan.kept.is_empty() {
            continue;
        }
        let (plan, pending) = accept::write_pending(scenario, plan)?;
        written += usize::from(pending.is_some());
        for line in shown::plan(&scenario.name, &plan, pending.as_deref()) {
            say!("{line}");
        }
    }
    say!("{}", shown::written(written));
    Ok(())
}

/// `devsim review`: each pending copy under `root` as a diff, then accepted (it replaces the scenario file),
/// rejected (deleted) or, on a terminal, asked about.
pub fn review(root: &Path, accept_all: bool, reject_all: bool) -> Result<RunOutcome, CliError> {
    super::select::contained_folder("the folder", root)?;
    let pending = accept::pending_under(root);
    if pending.is_empty() {
        say!("review: nothing pending under {}", field(root.display()));
        return Ok(RunOutcome::Passed);
    }
    let interactive = !accept_all && !reject_all && std::io::stdin().is_terminal();
    let mut left = 0;
    let stdin = std::io::stdin();
    let mut answers = stdin.lock().lines();
    for copy in &pending {
        let Some(original) = accept::original_of(copy) else {
            continue;
        };
        // Only a regular file of the tree is shown or replaced: never what a symbolic link points at.
        if !std::fs::symlink_metadata(&original).is_ok_and(|m| m.file_type().is_file()) {
            say!(
                "review: skipped {}: not a regular scenario file",
                field(copy.display())
            );
            left += 1;
            continue;
        }
        let old = accept::read_for_review(&original)?;
        let new = accept::read_for_review(copy)?;
        say!("{}", accept::diff(&original, &old, &new).trim_end());
        let decision = if accept_all {
            'a'
        } else if reject_all {
            'r'
        } else if interactive {
            print!(
                "accept (a), reject (r) or skip (s) {}? ",
                field(original.display())
            );
            let _ = std::io::stdout().flush();
            answers
                .next()
                .and_then(Result::ok)
                .and_then(|line| line.trim().chars().next())
                .unwrap_or('s')
        } else {
            's'
        };
        match decision {
            'a' | 'A' => {
                accept::accept_pending(copy, &original)?;
                say!("accepted: {}", field(original.display()));
            }
            'r' | 'R' => {
                accept::reject_pending(copy)?;
                say!("rejected: {}", field(original.display()));
            }
            _ => left += 1,
        }
    }
    if left > 0 {
        return Ok(RunOutcome::PendingLeft { count: left });
    }
    Ok(RunOutcome::Passed)
}
