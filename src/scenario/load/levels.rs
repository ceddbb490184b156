//! Giving every expectation its conformance level: the written `levels` table, else the default for its key
//! (`docs/conformance.md`); a key whose default is ambiguous must be written.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use crate::conformance::{Conformance, DefaultLevel, Levels, StepContext, default_for};
use crate::dispatch::selector::Selector;
use crate::scenario::error::LoadError;
use crate::scenario::format::TraceRuleFields;
use crate::scenario::load::source::{Source, did_you_mean, shown};
use crate::scenario::model::Expectations;

/// The level format 1 gives a key that has no default (`trace.*.extension_load`), with a deprecation
/// warning. Files written before conformance levels existed said nothing of levels: an in-process catalog
/// is judged at every level, so their meaning there is unchanged, and `reference` binds a subject only
/// where it claims that level, so no correct subject is failed by a rule its author never leveled.
fn legacy_level() -> Conformance {
    Conformance::reference()
}

/// Where a trace key is written among `fields`: the event's name in `never`/`once`, the `count` table.
pub(crate) fn trace_key_span(fields: Option<&TraceRuleFields>, key: &str) -> Option<Range<usize>> {
    let fields = fields?;
    let (rule, event) = key.strip_prefix("trace.")?.split_once('.')?;
    let named = |names: &[Spanned<String>]| {
        names
            .iter()
            .find(|name| name.get_ref() == event)
            .map(Spanned::span)
    };
    match rule {
        "never" => named(&fields.never),
        "once" => named(&fields.once),
        "count" => fields.count.as_ref().map(Spanned::span),
        _ => None,
    }
}

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

/// The levels of `keys` (the expectations of one table, named `table` in messages, whose trace rules are
/// `trace`; `at` locates what has no place of its own). The keys are taken, to become the levels' own.
pub(crate) fn resolve(
    source: &Source,
    written: Option<&Written>,
    keys: Vec<String>,
    context: &StepContext,
    (table, trace): (&str, Option<&TraceRuleFields>),
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
        if levels.get(&key).is_some() {
            continue;
        }
        match default_for(&key, context) {
            DefaultLevel::Level(conformance) => levels.insert(key, conformance),
            DefaultLevel::Ambiguous(why) => {
                source.warn(
                    trace_key_span(trace, &key).unwrap_or_else(|| at.clone()),
                    format!(
                        "read `{key}` without a level: format 1 reads it as `reference`, but it has no default, because {why}"
                    ),
                    format!(
                        "write its level in [{table}.levels] (`\"{key}\" = \"policy:extensions-after-gates\"` or `\"reference\"`), or run `devsim migrate` on the file to write `reference`"
                    ),
                );
                levels.insert(key, legacy_level());
            }
        }
    }
    Ok(levels)
}

/// Resolves the levels of a step's expectations and of its conditional tables (each table's written
/// levels and trace rules, in the order main, `when_ok`, `when_refused`).
pub(crate) fn resolve_step(
    source: &Source,
    expect: &mut Expectations,
    written: [(Option<&Written>, Option<&TraceRuleFields>); 3],
    context: StepContext,
    at: Range<usize>,
) -> Result<(), LoadError> {
    let [(main, main_trace), (ok, ok_trace), (refused, refused_trace)] = written;
    expect.levels = resolve(
        source,
        main,
        expect.keys(),
        &StepContext {
            expects_ok: expect.ok,
            ..context
        },
        ("step.expect", main_trace),
        at.clone(),
    )?;
    for (branch, written, table, outcome) in [
        (&mut expect.when_ok, ok, ("step.when_ok", ok_trace), true),
        (
            &mut expect.when_refused,
            refused,
            ("step.when_refused", refused_trace),
            false,
        ),
    ] {
        if let Some(branch) = branch {
            branch.levels = resolve(
                source,
                written,
                branch.keys(),
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
