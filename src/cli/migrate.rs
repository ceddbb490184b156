//! `devsim migrate`: rewrite the deprecated forms of every scenario file under the paths
//! ([`crate::scenario::migrate`]), or with `--check` only list them. Each file is rewritten through
//! [`crate::contain::write_file`] (a fresh temporary file renamed over it, never through a link), so a
//! leftover `<file>.migrating` from an older devsim is neither in the way nor touched.

use std::path::PathBuf;

use super::select::{default_paths, print_load_errors};
use super::{CliError, RunOutcome};
use crate::scenario::error::escape_controls;
use crate::scenario::find_scenarios;
use crate::scenario::load::read_bounded;
use crate::scenario::migrate::migrate_text;

/// Migrates (or with `check`, lists) every scenario file under `paths` that has a deprecated form.
pub(super) fn migrate(paths: &[PathBuf], check: bool) -> Result<RunOutcome, CliError> {
    let paths = default_paths(paths)?;
    let files = find_scenarios(&paths)?;
    let mut unreadable = Vec::new();
    let mut changed = 0;
    for file in &files {
        let text = match read_bounded(file) {
            Ok(text) => text,
            Err(error) => {
                unreadable.push(error);
                continue;
            }
        };
        let Some(migrated) = migrate_text(&text) else {
            continue;
        };
        changed += 1;
        if !check {
            // Written before it is reported: "migrated" is said of a file that was.
            crate::contain::write_beside(
                file,
                migrated.text.as_bytes(),
                crate::contain::Permissions::Kept,
            )?;
        }
        let shown = escape_controls(&file.display().to_string()).into_owned();
        for change in &migrated.changes {
            say!(
                "{} {shown}: {change}",
                if check { "would migrate" } else { "migrated" }
            );
        }
    }
    print_load_errors(&unreadable);
    let verb = if check { "need migrating" } else { "migrated" };
    say!("{changed} of {} file(s) {verb}", files.len());
    if !unreadable.is_empty() {
        return Ok(RunOutcome::LoadErrors {
            count: unreadable.len(),
        });
    }
    if check && changed > 0 {
        return Ok(RunOutcome::MigrationNeeded { count: changed });
    }
    Ok(RunOutcome::Passed)
}
