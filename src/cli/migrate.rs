//! `devsim migrate`: rewrite the deprecated forms of every scenario file under the paths
//! ([`crate::scenario::migrate`]), or with `--check` only list them.

use std::io::Write as _;
use std::path::{Path, PathBuf};

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
        let shown = escape_controls(&file.display().to_string()).into_owned();
        for change in &migrated.changes {
            say!(
                "{} {shown}: {change}",
                if check { "would migrate" } else { "migrated" }
            );
        }
        if !check {
            write_atomically(file, &migrated.text)?;
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

/// Replaces `path` with `text` through `<path>.migrating` beside it, renamed over the original, so a
/// failed write leaves the original whole.
fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".migrating");
    let temporary = PathBuf::from(temporary);
    let written = std::fs::File::create_new(&temporary)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
        })
        .and_then(|()| std::fs::rename(&temporary, path));
    written.map_err(|source| {
        let _ = std::fs::remove_file(&temporary);
        CliError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}
