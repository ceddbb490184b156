//! Checking a step's `[step.expect]` table and trace rules: names exist, values are well-formed, and every
//! key is one the step can produce (a key that could never be checked is an error, not a silent no-op).

use std::ops::Range;

use toml::Spanned;

use crate::dispatch::DispatchError;
use crate::kernel::Catalog;
use crate::scenario::error::LoadError;
use crate::scenario::format::{IntOrWord, StepExpectFields, TraceRuleFields};
use crate::scenario::load::hints;
use crate::scenario::load::source::{Source, did_you_mean, shown};
use crate::scenario::load::steps::ActionSpec;
use crate::scenario::model::{Expectations, ExpectedOrdinal, TraceRules};
use crate::trace::{event_names, is_event_name};
use crate::vocab::Family;

/// The first expectation key the action can never produce, with its span when the format keeps one; or
/// `message` on a step that must succeed (a message is only compared with an error).
pub(crate) fn unproducible(
    fields: &StepExpectFields,
    spec: &ActionSpec,
) -> Option<(&'static str, Option<Range<usize>>)> {
    let given: [(&'static str, bool, Option<Range<usize>>); 13] = [
        (
            "family",
            fields.family.is_some(),
            fields.family.as_ref().map(Spanned::span),
        ),
        (
            "ordinal",
            fields.ordinal.is_some(),
            fields.ordinal.as_ref().map(Spanned::span),
        ),
        (
            "torch_device",
            fields.torch_device.is_some(),
            fields.torch_device.as_ref().map(Spanned::span),
        ),
        (
            "ran_on",
            fields.ran_on.is_some(),
            fields.ran_on.as_ref().map(Spanned::span),
        ),
        (
            "lands_on",
            fields.lands_on.is_some(),
            fields.lands_on.as_ref().map(Spanned::span),
        ),
        (
            "selected",
            fields.selected.is_some(),
            fields.selected.as_ref().map(Spanned::span),
        ),
        (
            "covers",
            fields.covers.is_some(),
            fields.covers.as_ref().map(Spanned::span),
        ),
        (
            "vendor",
            fields.vendor.is_some(),
            fields.vendor.as_ref().map(Spanned::span),
        ),
        (
            "archs",
            fields.archs.is_some(),
            fields.archs.as_ref().map(Spanned::span),
        ),
        (
            "current_after",
            fields.current_after.is_some(),
            fields.current_after.as_ref().map(Spanned::span),
        ),
        (
            "torch_device_count",
            fields.torch_device_count.is_some(),
            None,
        ),
        ("runtime_devices", fields.runtime_devices.is_some(), None),
        (
            "retained_bytes",
            fields.retained_bytes.is_some(),
            fields.retained_bytes.as_ref().map(Spanned::span),
        ),
    ];
    given
        .into_iter()
        .find(|(key, present, _)| *present && !spec.can_produce(key))
        .map(|(key, _, span)| (key, span))
}

/// `message` given on a step that must succeed: its span.
fn message_on_success(fields: &StepExpectFields) -> Option<Range<usize>> {
    let succeeds = fields.error.is_none() && fields.ok() != Some(false);
    fields
        .message
        .as_ref()
        .filter(|_| succeeds)
        .map(Spanned::span)
}

fn trace_names(source: &Source, names: &[Spanned<String>]) -> Result<Vec<String>, LoadError> {
    names
        .iter()
        .map(|name| {
            if is_event_name(name.get_ref()) {
                Ok(name.get_ref().clone())
            } else {
                Err(unknown_event(source, name.span(), name.get_ref()))
            }
        })
        .collect()
}

fn unknown_event(source: &Source, span: Range<usize>, name: &str) -> LoadError {
    let names = event_names();
    source.error_with_help(
        span,
        format!(
            "match trace event `{}`: expected one of {}",
            shown(name),
            names.join(", ")
        ),
        did_you_mean(name, names.iter().copied()),
    )
}

pub(crate) fn trace_rules(
    source: &Source,
    fields: &TraceRuleFields,
) -> Result<TraceRules, LoadError> {
    let count = match &fields.count {
        None => Vec::new(),
        Some(table) => table
            .get_ref()
            .iter()
            .map(|(name, n)| {
                if is_event_name(name) {
                    Ok((name.clone(), *n))
                } else {
                    Err(unknown_event(source, table.span(), name))
                }
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(TraceRules {
        never: trace_names(source, &fields.never)?,
        once: trace_names(source, &fields.once)?,
        count,
        order: trace_names(source, &fields.order)?,
    })
}

fn place_word(source: &Source, value: &Spanned<IntOrWord>, key: &str) -> Result<String, LoadError> {
    match value.get_ref() {
        IntOrWord::Int(n) if *n >= 0 => Ok(n.to_string()),
        IntOrWord::Word(word) if word == "cpu" => Ok(word.clone()),
        _ => Err(source.error(
            value.span(),
            format!("expect `{key}`: expected a device ordinal (0, 1 ...) or \"cpu\""),
        )),
    }
}

/// Checks a step's expectations.
/// Warns of a step's `[step.expect]` that says `ok = false` and nothing of which refusal: any passes.
pub(crate) fn warn_lone_refusal(source: &Source, fields: &StepExpectFields, refused: bool) {
    let Some(ok) = fields.ok.as_ref().filter(|ok| !*ok.get_ref()) else {
        return;
    };
    if fields.error.is_none() && fields.message.is_none() && !refused {
        source.warn(
            ok.span(),
            "expect `ok = false` alone: any refusal passes, whatever its kind or cause",
            "say which refusal with `error = \"<kind>\"` (and a `message` fragment), or check what a refusal must show in [step.when_refused]".to_string(),
        );
    }
}

pub(crate) fn expectations(
    source: &Source,
    catalog: &Catalog,
    fields: &StepExpectFields,
) -> Result<Expectations, LoadError> {
    if let Some(span) = message_on_success(fields) {
        return Err(source.error(
            span,
            "expect `message` on a step that must succeed: a message is only compared with an error; set `ok = false` or `error`",
        ));
    }
    if let Some(error) = &fields.error {
        if !DispatchError::KINDS.contains(&error.get_ref().as_str()) {
            return Err(source.error_with_help(
                error.span(),
                format!(
                    "expect error kind `{}`: expected one of {}",
                    shown(error.get_ref()),
                    DispatchError::KINDS.join(", ")
                ),
                did_you_mean(error.get_ref(), DispatchError::KINDS),
            ));
        }
        if fields.ok() == Some(true) {
            return Err(source.error(
                error.span(),
                "expect an error with `ok = true`: set `ok = false` or drop `error`",
            ));
        }
    }
    if let Some(family) = &fields.family {
        let names: Vec<&str> = Family::EVERY.iter().map(|f| f.as_str()).collect();
        if !names.contains(&family.get_ref().as_str()) {
            return Err(source.error_with_help(
                family.span(),
                format!(
                    "expect family `{}`: expected one of {}",
                    shown(family.get_ref()),
                    names.join(", ")
                ),
                hints::family(family.get_ref()).or_else(|| did_you_mean(family.get_ref(), names)),
            ));
        }
    }
    let ordinal = match &fields.ordinal {
        None => None,
        Some(value) => Some(match value.get_ref() {
            IntOrWord::Int(n) => ExpectedOrdinal::Some(u32::try_from(*n).map_err(|_| {
                source.error(
                    value.span(),
                    "expect `ordinal`: expected a non-negative ordinal or \"none\"",
                )
            })?),
            IntOrWord::Word(word) if word == "none" => ExpectedOrdinal::None,
            IntOrWord::Word(_) => {
                return Err(source.error(
                    value.span(),
                    "expect `ordinal`: expected a non-negative ordinal or \"none\"",
                ));
            }
        }),
    };
    if let Some(device) = &fields.torch_device {
        device
            .get_ref()
            .parse::<crate::vocab::TorchDevice>()
            .map_err(|_| {
                source.error(
                    device.span(),
                    format!(
                        "expect torch device `{}`: expected torch's spelling (cpu, cuda, cuda:1, xpu:0, mps)",
                        shown(device.get_ref())
                    ),
                )
            })?;
    }
    if let Some(selected) = &fields.selected {
        if catalog.get(selected.get_ref()).is_err() {
            return Err(source.error_with_help(
                selected.span(),
                format!(
                    "expect selected kernel `{}`: it is not in the catalog",
                    shown(selected.get_ref())
                ),
                did_you_mean(selected.get_ref(), catalog.names()),
            ));
        }
    }
    if let Some(vendor) = &fields.vendor {
        const VENDORS: [&str; 5] = ["nvidia", "amd", "intel", "apple", "none"];
        if !VENDORS.contains(&vendor.get_ref().as_str()) {
            return Err(source.error_with_help(
                vendor.span(),
                format!(
                    "expect vendor `{}`: expected one of {}",
                    shown(vendor.get_ref()),
                    VENDORS.join(", ")
                ),
                did_you_mean(vendor.get_ref(), VENDORS),
            ));
        }
    }
    Ok(Expectations {
        ok: Some(fields.ok().unwrap_or(fields.error.is_none())),
        error: fields.error.as_ref().map(|e| e.get_ref().clone()),
        message: fields.message.as_ref().map(|m| m.get_ref().clone()),
        family: fields.family.as_ref().map(|f| f.get_ref().clone()),
        ordinal,
        torch_device: fields.torch_device.as_ref().map(|d| d.get_ref().clone()),
        ran_on: fields
            .ran_on
            .as_ref()
            .map(|v| place_word(source, v, "ran_on"))
            .transpose()?,
        lands_on: fields
            .lands_on
            .as_ref()
            .map(|v| place_word(source, v, "lands_on"))
            .transpose()?,
        current_after: fields.current_after.as_ref().map(|c| *c.get_ref()),
        selected: fields.selected.as_ref().map(|s| s.get_ref().clone()),
        covers: fields.covers.as_ref().map(|c| c.get_ref().clone()),
        vendor: fields.vendor.as_ref().map(|v| v.get_ref().clone()),
        archs: fields.archs.as_ref().map(|a| a.get_ref().clone()),
        torch_device_count: fields.torch_device_count,
        runtime_devices: fields.runtime_devices.clone(),
        retained_bytes: fields.retained_bytes.as_ref().map(|b| *b.get_ref()),
        trace: match &fields.trace {
            Some(rules) => trace_rules(source, rules)?,
            None => TraceRules::default(),
        },
        when_ok: None,
        when_refused: None,
        levels: Default::default(),
    })
}

/// Which conditional table is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Branch {
    /// `[step.when_ok]`: checked when the step succeeded.
    Ok,
    /// `[step.when_refused]`: checked when the step failed.
    Refused,
}

/// Reads a conditional table: the same keys as `[step.expect]`, but the outcome is the table's condition,
/// so `ok` is refused in both and `error`/`message` in `when_ok`.
pub(crate) fn branch_expectations(
    source: &Source,
    catalog: &Catalog,
    fields: &StepExpectFields,
    branch: Branch,
    at: Range<usize>,
) -> Result<Expectations, LoadError> {
    let table = match branch {
        Branch::Ok => "when_ok",
        Branch::Refused => "when_refused",
    };
    if fields.ok.is_some() {
        return Err(source.error(
            at,
            format!("expect `ok` in [step.{table}]: the table's name is its condition; drop `ok`"),
        ));
    }
    if branch == Branch::Ok {
        if let Some(span) = fields
            .error
            .as_ref()
            .map(Spanned::span)
            .or_else(|| fields.message.as_ref().map(Spanned::span))
        {
            return Err(source.error(
                span,
                "expect an error in [step.when_ok]: it is checked only when the step succeeds; use [step.when_refused]",
            ));
        }
    }
    // A refusal table may name the message without the kind: the condition already says it failed.
    let checked = match branch {
        Branch::Ok => expectations(source, catalog, fields)?,
        Branch::Refused => {
            let as_failure = StepExpectFields {
                ok: Some(Spanned::new(0..0, false)),
                ..fields.clone()
            };
            expectations(source, catalog, &as_failure)?
        }
    };
    Ok(Expectations {
        ok: None,
        ..checked
    })
}
