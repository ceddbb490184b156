//! Decoding `[[step]]` tables: one table row per action says which step keys it takes, which expectation
//! keys it can produce, and which function decodes it.

use std::ops::Range;

use toml::Spanned;

use crate::conformance::{StepContext, policy_spelling};
use crate::dispatch::DispatchError;
use crate::dispatch::selector::{Selector, check_spelling};
use crate::kernel::{Catalog, Method};
use crate::pool::LockMode;
use crate::scenario::error::LoadError;
use crate::scenario::format::{SelectorValue, StepFields};
use crate::scenario::load::expectations::{
    Branch, branch_expectations, expectations, unproducible, warn_lone_refusal,
};
use crate::scenario::load::source::{Source, did_you_mean, shown};
use crate::scenario::load::{hints, levels};
use crate::scenario::model::{Action, Step};
use crate::vocab::TorchBuild;

/// Expectation keys every action can produce.
const ALWAYS: &[&str] = &["ok", "error", "message", "current_after", "trace"];
/// The keys a normalized target fills (also on refusals that carry a target).
const TARGET: &[&str] = &["family", "ordinal", "torch_device"];

/// What one action takes and produces, and how it is decoded.
pub(crate) struct ActionSpec {
    /// Its name in files.
    pub name: &'static str,
    /// Step keys it requires.
    pub required: &'static [&'static str],
    /// Step keys it accepts but does not require.
    pub optional: &'static [&'static str],
    /// Expectation keys it can produce, beyond [`ALWAYS`].
    pub produces: &'static [&'static [&'static str]],
    /// Builds the action from a step whose keys were checked against `required` and `optional`.
    decode: fn(&StepInput) -> Result<Action, LoadError>,
}

impl ActionSpec {
    /// Whether the action can produce an expectation key.
    pub fn can_produce(&self, key: &str) -> bool {
        ALWAYS.contains(&key) || self.produces.iter().any(|keys| keys.contains(&key))
    }

    /// Every expectation key the action can produce, for messages.
    pub fn producible(&self) -> Vec<&'static str> {
        let mut keys: Vec<&str> = ALWAYS.to_vec();
        keys.extend(self.produces.iter().flat_map(|k| k.iter().copied()));
        keys
    }
}

/// Every action, in the order of [`Action::NAMES`].
pub(crate) const ACTIONS: [ActionSpec; 10] = [
    ActionSpec {
        name: "normalize",
        required: &["device"],
        optional: &[],
        produces: &[TARGET],
        decode: normalize,
    },
    ActionSpec {
        name: "resolve",
        required: &["device"],
        optional: &[],
        produces: &[TARGET],
        decode: resolve,
    },
    ActionSpec {
        name: "validate",
        required: &["kernel", "device"],
        optional: &[],
        produces: &[TARGET],
        decode: validate,
    },
    ActionSpec {
        name: "warmup",
        required: &["kernel", "device"],
        optional: &[],
        produces: &[TARGET, &["ran_on", "retained_bytes"]],
        decode: warmup,
    },
    ActionSpec {
        name: "move",
        required: &["kernel", "device"],
        optional: &[],
        produces: &[TARGET, &["lands_on", "retained_bytes"]],
        decode: move_weights,
    },
    ActionSpec {
        name: "select",
        required: &["method", "bits", "device"],
        optional: &[],
        produces: &[TARGET, &["selected"]],
        decode: select,
    },
    ActionSpec {
        name: "lock",
        required: &["scope"],
        optional: &["mode"],
        produces: &[TARGET, &["covers"]],
        decode: lock,
    },
    ActionSpec {
        name: "set_device",
        required: &["ordinal"],
        optional: &[],
        produces: &[],
        decode: set_device,
    },
    ActionSpec {
        name: "discover",
        required: &[],
        optional: &[],
        produces: &[&["vendor", "archs", "torch_device_count", "runtime_devices"]],
        decode: discover,
    },
    ActionSpec {
        name: "default_device",
        required: &[],
        optional: &[],
        produces: &[TARGET],
        decode: default_device,
    },
];

/// One step being decoded.
struct StepInput<'a> {
    source: &'a Source<'a>,
    catalog: &'a Catalog,
    number: usize,
    spec: &'a ActionSpec,
    step: &'a Spanned<StepFields>,
    /// The error kind the step expects, if any: a bad name is then allowed when it is that error.
    expected_error: Option<&'a str>,
}

impl StepInput<'_> {
    fn fields(&self) -> &StepFields {
        self.step.get_ref()
    }

    fn missing(&self, key: &str) -> LoadError {
        self.source.error(
            self.step.span(),
            format!(
                "run step {} ({}): expected `{key}`",
                self.number, self.spec.name
            ),
        )
    }

    fn selector(
        &self,
        value: Option<&Spanned<SelectorValue>>,
        key: &str,
    ) -> Result<Selector, LoadError> {
        let value = value.ok_or_else(|| self.missing(key))?;
        let selector = match value.get_ref() {
            SelectorValue::Int(n) => Selector::Ordinal(*n),
            SelectorValue::Text(text) => Selector::Text(text.clone()),
        };
        if self.expected_error != Some("unknown-selector") {
            check_spelling(&selector).map_err(|e| {
                let hint = match value.get_ref() {
                    SelectorValue::Text(text) => hints::selector(text),
                    SelectorValue::Int(_) => None,
                };
                self.source
                    .error_with_help(value.span(), e.to_string(), hint)
            })?;
        }
        Ok(selector)
    }

    fn device(&self) -> Result<Selector, LoadError> {
        self.selector(self.fields().device.as_ref(), "device")
    }

    fn kernel(&self) -> Result<String, LoadError> {
        let value = self
            .fields()
            .kernel
            .as_ref()
            .ok_or_else(|| self.missing("kernel"))?;
        let name = value.get_ref();
        if self.expected_error != Some("unknown-kernel") {
            if let Err(error) = self.catalog.get(name) {
                let help = match &error {
                    DispatchError::UnknownKernel { suggestion, .. } => {
                        suggestion.as_ref().map(|s| format!("did you mean {s}?"))
                    }
                    _ => None,
                };
                return Err(self
                    .source
                    .error_with_help(value.span(), error.to_string(), help));
            }
        }
        Ok(name.clone())
    }
}

fn normalize(input: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::Normalize(input.device()?))
}

fn resolve(input: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::Resolve(input.device()?))
}

fn validate(input: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::Validate {
        kernel: input.kernel()?,
        device: input.device()?,
    })
}

fn warmup(input: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::Warmup {
        kernel: input.kernel()?,
        device: input.device()?,
    })
}

fn move_weights(input: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::Move {
        kernel: input.kernel()?,
        device: input.device()?,
    })
}

fn select(input: &StepInput) -> Result<Action, LoadError> {
    let fields = input.fields();
    let method_field = fields
        .method
        .as_ref()
        .ok_or_else(|| input.missing("method"))?;
    let method = Method::named(method_field.get_ref());
    if !input.catalog.has_method(&method) {
        let mut names: Vec<&str> = input
            .catalog
            .iter()
            .map(|k| k.spec().method.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        return Err(input.source.error_with_help(
            method_field.span(),
            format!(
                "select by method `{}`: expected one of the catalog's methods: {}",
                shown(method.as_str()),
                names.join(", ")
            ),
            did_you_mean(method.as_str(), names),
        ));
    }
    Ok(Action::Select {
        method,
        bits: fields.bits.ok_or_else(|| input.missing("bits"))?,
        device: input.device()?,
    })
}

fn lock(input: &StepInput) -> Result<Action, LoadError> {
    let fields = input.fields();
    let mode = match fields.mode.as_ref() {
        None => LockMode::Read,
        Some(mode) => match mode.get_ref().as_str() {
            "read" => LockMode::Read,
            "write" => LockMode::Write,
            other => {
                return Err(input.source.error(
                    mode.span(),
                    format!(
                        "take a lock in mode `{}`: expected `read` or `write`",
                        shown(other)
                    ),
                ));
            }
        },
    };
    Ok(Action::Lock {
        scope: input.selector(fields.scope.as_ref(), "scope")?,
        mode,
    })
}

fn set_device(input: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::SetDevice(
        input
            .fields()
            .ordinal
            .ok_or_else(|| input.missing("ordinal"))?,
    ))
}

fn discover(_: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::Discover)
}

fn default_device(_: &StepInput) -> Result<Action, LoadError> {
    Ok(Action::DefaultDevice)
}

/// The step keys a file gave, by name.
/// Each key a step may give, if given, with where (`bits` and `ordinal` keep no span).
fn given_keys(fields: &StepFields) -> [(&'static str, Option<Option<Range<usize>>>); 7] {
    [
        ("kernel", fields.kernel.as_ref().map(|k| Some(k.span()))),
        ("device", fields.device.as_ref().map(|d| Some(d.span()))),
        ("method", fields.method.as_ref().map(|m| Some(m.span()))),
        ("bits", fields.bits.map(|_| None)),
        ("scope", fields.scope.as_ref().map(|s| Some(s.span()))),
        ("mode", fields.mode.as_ref().map(|m| Some(m.span()))),
        ("ordinal", fields.ordinal.map(|_| None)),
    ]
}

fn list_or_nothing(keys: &[&str]) -> String {
    if keys.is_empty() {
        "no other key".into()
    } else {
        keys.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Decodes and checks one step.
pub(crate) fn load_step(
    source: &Source,
    catalog: &Catalog,
    number: usize,
    step: &Spanned<StepFields>,
    build: TorchBuild,
) -> Result<Step, LoadError> {
    let fields = step.get_ref();
    let name = fields.action.get_ref().as_str();
    let Some(spec) = ACTIONS.iter().find(|spec| spec.name == name) else {
        return Err(source.error_with_help(
            fields.action.span(),
            format!(
                "run step {number}: unknown action `{}`, expected one of {}",
                shown(name),
                Action::NAMES.join(", ")
            ),
            did_you_mean(name, Action::NAMES),
        ));
    };
    for (key, given) in given_keys(fields) {
        let present = given.is_some();
        let takes = spec.required.contains(&key) || spec.optional.contains(&key);
        if present && !takes {
            let mut takes: Vec<&str> = spec.required.to_vec();
            takes.extend(spec.optional);
            // At the key's value where it is known, so the line named is the key's, not the step's.
            return Err(source.error(
                given.flatten().unwrap_or_else(|| step.span()),
                format!(
                    "run step {number} ({name}): it does not use `{key}`; it takes {}",
                    list_or_nothing(&takes)
                ),
            ));
        }
        if !present && spec.required.contains(&key) {
            return Err(source.error(
                step.span(),
                format!("run step {number} ({name}): expected `{key}`"),
            ));
        }
    }
    if let Some((key, span)) = unproducible(&fields.expect, spec) {
        return Err(source.error(
            span.unwrap_or_else(|| step.span()),
            format!(
                "run step {number} ({name}): expect `{key}` can never be checked, a {name} step does not produce it; it can check {}",
                list_or_nothing(&spec.producible())
            ),
        ));
    }
    let mut expect = expectations(source, catalog, &fields.expect)?;
    warn_lone_refusal(source, &fields.expect, fields.when_refused.is_some());
    for (table, branch) in [
        (&fields.when_ok, Branch::Ok),
        (&fields.when_refused, Branch::Refused),
    ] {
        let Some(table) = table else { continue };
        if let Some((key, span)) = unproducible(table, spec) {
            return Err(source.error(
                span.unwrap_or_else(|| step.span()),
                format!(
                    "run step {number} ({name}): expect `{key}` can never be checked, a {name} step does not produce it; it can check {}",
                    list_or_nothing(&spec.producible())
                ),
            ));
        }
        let checked = branch_expectations(source, catalog, table, branch, step.span())?;
        match branch {
            Branch::Ok => expect.when_ok = Some(Box::new(checked)),
            Branch::Refused => expect.when_refused = Some(Box::new(checked)),
        }
    }
    if (expect.when_ok.is_some() || expect.when_refused.is_some())
        && fields.expect.ok.is_none()
        && fields.expect.error.is_none()
    {
        expect.ok = None;
    }
    let input = StepInput {
        source,
        catalog,
        number,
        spec,
        step,
        expected_error: expect.error.as_deref(),
    };
    let action = (spec.decode)(&input)?;
    let context = StepContext {
        action: Some(spec.name),
        build,
        explicit_ordinal: action.selector().is_some_and(levels::explicit_ordinal),
        expects_ok: None,
        policy_spelling: action
            .selector()
            .is_none_or(|s| policy_spelling(s, spec.name)),
    };
    levels::resolve_step(
        source,
        &mut expect,
        [
            (fields.expect.levels.as_ref(), fields.expect.trace.as_ref()),
            (
                fields.when_ok.as_ref().and_then(|t| t.levels.as_ref()),
                fields.when_ok.as_ref().and_then(|t| t.trace.as_ref()),
            ),
            (
                fields.when_refused.as_ref().and_then(|t| t.levels.as_ref()),
                fields.when_refused.as_ref().and_then(|t| t.trace.as_ref()),
            ),
        ],
        context,
        step.span(),
    )?;
    let repeat = match &fields.repeat {
        None => 1,
        Some(repeat) => u32::try_from(*repeat.get_ref())
            .ok()
            .filter(|n| (1..=Step::MAX_REPEAT).contains(n))
            .ok_or_else(|| {
                source.error(
                    repeat.span(),
                    format!(
                        "run step {number} ({name}) {} times: expected `repeat` from 1 to {}",
                        repeat.get_ref(),
                        Step::MAX_REPEAT
                    ),
                )
            })?,
    };
    Ok(Step {
        number,
        line: source.line_of(step.span().start),
        description: fields.description.clone(),
        action,
        repeat,
        expect,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_covers_every_action_in_order() {
        let names: Vec<&str> = ACTIONS.iter().map(|a| a.name).collect();
        assert_eq!(names, Action::NAMES);
    }
}
