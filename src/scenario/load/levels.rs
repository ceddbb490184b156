//! Giving every expectation its conformance level: the written `levels` table, else the default for its key
//! (`docs/conformance.md`); a key whose default is ambiguous must be written.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use crate::conformance::{Conformance, DefaultLevel, Levels, StepContext, default_for};
use crate::dispatch::selector::Selector;
use crate::scenario::error::LoadError;
use crate::scenario::load::source::{Source, did_you_mean, shown};
use crate::scenario::model::Expectations;

/// A written `levels` table.
pub(crate) type Written = Spanned<BTreeMap<String, Spanned<String>>>;

/// Whether a selector names an ordinal: an integer, `cuda:1`, `torch.device('cuda:1')`, a torch device with
/// an index.
pub(crate) fn explicit_ordinal(selector: &Selector) -> bool {
    match selector {
        Selector::Ordinal(_) => true,
        Selector::Text(text) => text
            .split(':')
            .skip(1)
            .any(|rest| rest.starts_with(|c: char| c.is_ascii_digit())),
        Selector::Family(_) => false,
        Selector::Torch(device) => device.index.is_some(),
    }
}

/// The levels of `keys` (the expectations of one table, named `table` in errors, at `at`).
pub(crate) fn resolve(
    source: &Source,
    written: Option<&Written>,
    keys: &[String],
    context: &StepContext,
    table: &str,
    at: Range<usize>,
) -> Result<Levels, LoadError> {
    let mut levels = Levels::default();
    if let Some(written) = written {
        for (key, value) in written.get_ref() {
            if !keys.contains(key) {
                let known = if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                };
                return Err(source.error_with_help(
                    written.span(),
                    format!(
                        "set the level of `{}` in [{table}.levels]: the table has no such expectation; its expectations are {known}",
                        shown(key)
                    ),
                    did_you_mean(key, keys.iter().map(String::as_str)),
                ));
            }
            let conformance: Conformance = value.get_ref().parse().map_err(|error| {
                source.error(
                    value.span(),
                    format!("set the level of `{key}`: failed to {error}"),
                )
            })?;
            levels.insert(key.clone(), conformance);
        }
    }
    for key in keys {
        if levels.get(key).is_some() {
            continue;
        }
        match default_for(key, context) {
            DefaultLevel::Level(conformance) => levels.insert(key.clone(), conformance),
            DefaultLevel::Ambiguous(why) => {
                return Err(source.error(
                    at,
                    format!(
                        "give `{key}` a level in [{table}.levels]: it has no default, because {why}"
                    ),
                ));
            }
        }
    }
    Ok(levels)
}

/// Resolves the levels of a step's expectations and of its conditional tables.
pub(crate) fn resolve_step(
    source: &Source,
    expect: &mut Expectations,
    written: [Option<&Written>; 3],
    context: StepContext,
    at: Range<usize>,
) -> Result<(), LoadError> {
    let [main, ok, refused] = written;
    expect.levels = resolve(
        source,
        main,
        &expect.keys(),
        &StepContext {
            expects_ok: expect.ok,
            ..context
        },
        "step.expect",
        at.clone(),
    )?;
    for (branch, written, table, outcome) in [
        (&mut expect.when_ok, ok, "step.when_ok", true),
        (
            &mut expect.when_refused,
            refused,
            "step.when_refused",
            false,
        ),
    ] {
        if let Some(branch) = branch {
            branch.levels = resolve(
                source,
                written,
                &branch.keys(),
                &StepContext {
                    expects_ok: Some(outcome),
                    ..context
                },
                table,
                at.clone(),
            )?;
        }
    }
    Ok(())
}
