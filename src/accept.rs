//! Accepting observed values as expectations, insta-style: `devsim run --accept` writes what each failing
//! step observed into its scenario file as a *pending* copy (`<file>.toml.pending`, comments and layout kept
//! by toml_edit); `devsim review` shows each pending change as a diff and accepts or rejects it.
//!
//! Only what a run can vouch for is written: a field expectation of a step that ran (`ok`, `family`,
//! `ran_on` …, in the step's table or the conditional branch that applied), at a level the run accepts.
//! Trace rules, message fragments and matrix files (whose one table serves many cases) are never
//! rewritten: each is reported as not accepted, with why.
//!
//! Both writes (the pending copy, and the scenario file it replaces on review) go through
//! [`crate::contain::write_file`]: a tree that ships a link named like a pending copy, or a link in place of
//! the scenario, is refused with an error naming it, never written through.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Value};

use crate::conformance::Level;
use crate::output::{ObservedOutput, Place};
use crate::runner::expect::Mismatch;
use crate::runner::{ScenarioReport, Status};
use crate::scenario::model::Scenario;

/// The suffix of a pending copy.
pub const PENDING: &str = "pending";

/// Why accepting failed.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// Reading or writing a file.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A pending copy or an accepted scenario would be written through a link or outside its folder.
    #[error(transparent)]
    Write(#[from] crate::contain::WriteError),
    /// The scenario file no longer parses as TOML.
    #[error("parse {path} for accepting: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The cause.
        source: toml_edit::TomlError,
    },
}

/// One expectation rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The step (1-based).
    pub step: usize,
    /// The key, with its branch (`when_ok.ran_on`).
    pub key: String,
    /// The value it had.
    pub expected: String,
    /// The value written.
    pub observed: String,
}

/// One failing expectation left as it is, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The step (1-based), or 0 for a scenario-level rule.
    pub step: usize,
    /// The key.
    pub key: String,
    /// Why it was not accepted.
    pub why: String,
}

/// What accepting one failed scenario does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The expectations to rewrite.
    pub changes: Vec<Change>,
    /// The failing expectations left alone.
    pub kept: Vec<Kept>,
}

/// Which failing expectations of `report` can take their observed value, at the `levels` accepted.
pub fn plan(scenario: &Scenario, report: &ScenarioReport, levels: &[Level]) -> Plan {
    let mut plan = Plan::default();
    if report.status != Status::Failed {
        return plan;
    }
    for mismatch in &report.trace_mismatches {
        plan.kept.push(Kept {
            step: 0,
            key: mismatch.key.clone(),
            why: "a trace rule is written by hand".into(),
        });
    }
    for step in &report.steps {
        for mismatch in &step.mismatches {
            let keep = |why: &str| Kept {
                step: step.number,
                key: mismatch.key.clone(),
                why: why.into(),
            };
            if !scenario.params.is_empty() {
                plan.kept.push(keep(
                    "a [matrix] file's table serves every case: edit it by hand",
                ));
                continue;
            }
            match judge(mismatch, &step.observed, levels) {
                Ok(observed) => plan.changes.push(Change {
                    step: step.number,
                    key: mismatch.key.clone(),
                    expected: mismatch.expected.clone(),
                    observed,
                }),
                Err(why) => plan.kept.push(keep(&why)),
            }
        }
    }
    plan
}

/// The observed value to write for `mismatch`, as TOML text, or why it is kept.
fn judge(
    mismatch: &Mismatch,
    observed: &ObservedOutput,
    levels: &[Level],
) -> Result<String, String> {
    let Some(conformance) = &mismatch.conformance else {
        return Err("the harness or the subject broke down: nothing was observed".into());
    };
    if !levels.contains(&conformance.level) {
        return Err(format!(
            "a {conformance} expectation, not a level this run accepts"
        ));
    }
    let field = mismatch.key.rsplit('.').next().unwrap_or(&mismatch.key);
    if mismatch.key.contains("trace") {
        return Err("a trace rule is written by hand".into());
    }
    observed_value(field, observed)
        .map(|value| value.to_string().trim().to_string())
        .ok_or_else(|| match field {
            "message" => "a message fragment is written by hand".to_string(),
            _ => format!("the step observed no {field}"),
        })
}

fn place(place: &Place) -> Value {
    match place {
        Place::Gpu(n) => Value::from(i64::from(*n)),
        Place::Cpu => Value::from("cpu"),
    }
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().map(String::as_str).collect::<Array>())
}

/// A field's observed value in the scenario format's spelling; None where nothing can be written.
fn observed_value(field: &str, observed: &ObservedOutput) -> Option<Value> {
    Some(match field {
        "ok" => Value::from(observed.error.is_none()),
        "error" => Value::from(observed.error.as_ref()?.kind.as_str()),
        "family" => Value::from(observed.family.as_deref()?),
        "ordinal" => {
            observed.family.as_ref()?;
            match observed.ordinal {
                Some(n) => Value::from(i64::from(n)),
                None => Value::from("none"),
            }
        }
        "torch_device" => Value::from(observed.torch_device.as_deref()?),
        "ran_on" => place(observed.ran_on.as_ref()?),
        "lands_on" => place(observed.lands_on.as_ref()?),
        "current_after" => Value::from(i64::from(observed.current_after?)),
        "selected" => Value::from(observed.selected.as_deref()?),
        "covers" => strings(observed.covers.as_ref()?),
        "vendor" => Value::from(observed.vendor.as_deref()?),
        "archs" => strings(observed.archs.as_ref()?),
        "torch_device_count" => Value::from(i64::from(observed.torch_device_count?)),
        "runtime_devices" => strings(observed.runtime_devices.as_ref()?),
        "retained_bytes" => Value::from(observed.retained_bytes?),
        _ => return None,
    })
}

/// `text` with `plan`'s changes written into each step's `expect` table (or its branch), everything else
/// as it was. A change whose table is not where the loader found it is moved to `kept`.
pub fn apply(text: &str, path: &Path, plan: &mut Plan) -> Result<String, AcceptError> {
    let mut document: DocumentMut = text.parse().map_err(|source| AcceptError::Parse {
        path: path.display().to_string(),
        source,
    })?;
    let mut written = Vec::new();
    for change in std::mem::take(&mut plan.changes) {
        let value: Value = match change.observed.parse() {
            Ok(value) => value,
            Err(_) => {
                plan.kept.push(Kept {
                    step: change.step,
                    key: change.key.clone(),
                    why: format!("the observed value {} is not TOML", change.observed),
                });
                continue;
            }
        };
        let mut keys: Vec<&str> = change.key.split('.').collect();
        let field = keys.pop().unwrap_or_default();
        let table = document
            .get_mut("step")
            .and_then(Item::as_array_of_tables_mut)
            .and_then(|steps| steps.get_mut(change.step.wrapping_sub(1)))
            .and_then(|step| step.get_mut("expect"))
            .and_then(|expect| keys.iter().try_fold(expect, |item, key| item.get_mut(key)))
            .and_then(Item::as_table_like_mut);
        match table {
            Some(table) if table.contains_key(field) => {
                if let Some(item) = table.get_mut(field) {
                    let decor = item.as_value().map(|v| v.decor().clone());
                    *item = Item::Value(value);
                    if let (Some(decor), Some(value)) = (decor, item.as_value_mut()) {
                        *value.decor_mut() = decor;
                    }
                }
                written.push(change);
            }
            _ => plan.kept.push(Kept {
                step: change.step,
                key: change.key.clone(),
                why: "its table is not a [step.expect] table of this file".into(),
            }),
        }
    }
    plan.changes = written;
    Ok(document.to_string())
}

/// The pending copy of `path`.
pub fn pending_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(PENDING);
    PathBuf::from(name)
}

/// The scenario file a pending copy belongs to.
pub fn original_of(pending: &Path) -> Option<PathBuf> {
    let name = pending.to_str()?.strip_suffix(&format!(".{PENDING}"))?;
    Some(PathBuf::from(name))
}

/// Writes `plan` for `scenario` into its pending copy; returns the plan as applied (None: nothing to write).
pub fn write_pending(
    scenario: &Scenario,
    mut plan: Plan,
) -> Result<(Plan, Option<PathBuf>), AcceptError> {
    if plan.changes.is_empty() {
        return Ok((plan, None));
    }
    let path = &scenario.path;
    let text = std::fs::read_to_string(path).map_err(|source| AcceptError::Io {
        action: "read",
        path: path.display().to_string(),
        source,
    })?;
    let updated = apply(&text, path, &mut plan)?;
    if plan.changes.is_empty() {
        return Ok((plan, None));
    }
    let pending = beside(path, &pending_path(path), updated.as_bytes())?;
    Ok((plan, Some(pending)))
}

/// Writes `contents` as `file`, a file in the folder `scenario` was found in.
fn beside(scenario: &Path, file: &Path, contents: &[u8]) -> Result<PathBuf, AcceptError> {
    let folder = crate::contain::folder_of(scenario);
    let name = file.file_name().map(Path::new).unwrap_or(file);
    crate::contain::write_file(folder, name, contents, crate::contain::Permissions::Kept)?;
    Ok(file.to_path_buf())
}

/// Accepts a pending copy: its text replaces `original`, the scenario file it belongs to (written in place
/// of it, never through a link), and the copy is removed. A copy that is not a regular file is refused.
pub fn accept_pending(copy: &Path, original: &Path) -> Result<(), AcceptError> {
    if std::fs::symlink_metadata(copy).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(crate::contain::WriteError::Link {
            path: copy.to_path_buf(),
        }
        .into());
    }
    // Opened without following a link: one swapped in after the check above is refused, not read into the
    // scenario file.
    let bytes = crate::contain::read_no_follow(copy, crate::scenario::load::corpus::MAX_FILE_BYTES)
        .map_err(|source| match crate::contain::is_link_refused(&source) {
            true => AcceptError::from(crate::contain::WriteError::Link {
                path: copy.to_path_buf(),
            }),
            false => AcceptError::Io {
                action: "accept",
                path: copy.display().to_string(),
                source,
            },
        })?;
    let text = crate::scenario::load::decode(copy, bytes).map_err(|error| AcceptError::Io {
        action: "accept",
        path: copy.display().to_string(),
        source: std::io::Error::other(error.message),
    })?;
    beside(original, original, text.as_bytes())?;
    reject_pending(copy)
}

/// Rejects a pending copy: it is deleted.
pub fn reject_pending(copy: &Path) -> Result<(), AcceptError> {
    std::fs::remove_file(copy).map_err(|source| AcceptError::Io {
        action: "reject",
        path: copy.display().to_string(),
        source,
    })
}

/// The text of a scenario file or its pending copy, for review.
pub fn read_for_review(path: &Path) -> Result<String, AcceptError> {
    // Never through a link: what review shows is what it may write, a regular file of the tree.
    crate::contain::read_no_follow(path, crate::scenario::load::corpus::MAX_FILE_BYTES)
        .and_then(|bytes| {
            String::from_utf8(bytes)
                .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
        })
        .map_err(|source| AcceptError::Io {
            action: "read",
            path: path.display().to_string(),
            source,
        })
}

/// Every pending copy under `root` (sorted), without following symbolic links.
pub fn pending_under(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file()
                && path
                    .to_str()
                    .is_some_and(|p| p.ends_with(&format!(".toml.{PENDING}")))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A unified diff from `old` to `new`, labelled with `path`.
pub fn diff(path: &Path, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(2)
        .header(
            &path.display().to_string(),
            &format!("{} (pending)", path.display()),
        )
        .to_string()
}
