//! An `observed` answer read into what the judge compares: the observation and its trace, with every field
//! checked against the protocol (events the handshake declared, devsim's error kinds), the opposite of
//! `encode`.

use crate::dispatch::DispatchError;
use crate::output::NumericsOutput;
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::subject::protocol::{
    DecidedBy, ErrorKind, KernelDeclaration, ObservedMessage, TraceEvent,
};
use crate::trace::{Entry, Event};

mod invalid;

pub use invalid::Invalid;

/// Turns an `observed` message into what expectations are compared with, and its trace into entries.
/// Events must be devsim names declared in the handshake; error kinds must be devsim's; every `decided_by`
/// must name a module inside the handshake's `packages` and a file that exists.
pub fn observed(
    message: &ObservedMessage,
    declared: &[String],
    packages: &[String],
) -> Result<(Observed, Vec<Entry>), Invalid> {
    for (field, place) in &message.decided_by {
        decided_by(field, place, packages)?;
    }
    undecided(message)?;
    let error = match (message.ok, &message.error) {
        (true, None) => None,
        (true, Some(_)) => return Err(Invalid::OkWithError),
        (false, None) => Some(ErrorOutput {
            kind: "(unclassified)".into(),
            message: "(no message)".into(),
        }),
        (false, Some(error)) => {
            let kind = match &error.kind {
                Some(ErrorKind::Other(kind)) => {
                    return Err(Invalid::UnknownErrorKind {
                        kind: kind.clone(),
                        known: DispatchError::KINDS.join(", "),
                    });
                }
                Some(kind) => kind.to_string(),
                None => "(unclassified)".into(),
            };
            Some(ErrorOutput {
                kind,
                message: error.message.clone(),
            })
        }
    };
    let entries = trace(&message.trace, declared)?;
    let observed = Observed {
        error,
        family: message.family.clone(),
        ordinal: message.ordinal.flatten(),
        torch_device: message.torch_device.clone(),
        ran_on: message.ran_on,
        lands_on: message.lands_on,
        current_after: message.current_after,
        selected: message.selected.clone(),
        covers: message.covers.clone(),
        vendor: message.vendor.clone(),
        archs: message.archs.clone(),
        torch_device_count: message.torch_device_count,
        runtime_devices: message.runtime_devices.clone(),
        retained_bytes: message.retained_bytes,
        numerics: message.numerics.clone(),
        decided_by: message.decided_by.clone(),
    };
    Ok((observed, entries))
}

/// A reported trace as entries: every event one of devsim's and declared in the handshake.
pub fn trace(events: &[TraceEvent], declared: &[String]) -> Result<Vec<Entry>, Invalid> {
    let mut entries = Vec::with_capacity(events.len());
    for event in events {
        let parsed: Event = event
            .event
            .as_str()
            .parse()
            .map_err(|name| Invalid::UnknownEvent {
                event: name,
                known: crate::trace::event_names().join(", "),
            })?;
        if !declared.iter().any(|name| name == event.event.as_str()) {
            return Err(Invalid::UndeclaredEvent {
                event: event.event.to_string(),
            });
        }
        entries.push(Entry::Reported {
            event: parsed,
            device: event.device.map(|d| d.to_string()),
            detail: event.detail.clone(),
        });
    }
    Ok(entries)
}

/// The `decided_by` of a step that stopped (`unsupported` with its trace so far): each key names an event of
/// that trace (`trace.<event>`) and a frame of the project under test, as an `observed` answer's would.
pub fn stopped_decided_by(
    decided: &std::collections::BTreeMap<String, DecidedBy>,
    events: &[TraceEvent],
    packages: &[String],
) -> Result<(), Invalid> {
    for (field, place) in decided {
        let recorded = field
            .strip_prefix("trace.")
            .is_some_and(|name| events.iter().any(|e| e.event.as_str() == name));
        if !recorded {
            return Err(Invalid::DecidedNoStoppedEvent {
                field: field.clone(),
            });
        }
        decided_by(field, place, packages)?;
    }
    Ok(())
}

/// A live forward's numerics must be judged by what the handshake declared for the step's kernel and the
/// forward's dtype: the project's tolerance against its reference where it states one, else not judged
/// (`not_judged`, the errors reported) or, from a subject that does not say so, the seed's
/// `rtol = atol = 2e-3` against the FP64 oracle. A subject that applies any other has not judged the project
/// by the project's own contract, so its answer is refused.
pub fn numerics(
    numerics: Option<&NumericsOutput>,
    kernel: Option<&str>,
    declared: &[KernelDeclaration],
) -> Result<(), Invalid> {
    let Some(numerics) = numerics else {
        return Ok(());
    };
    let kernel = kernel.unwrap_or("(no kernel)");
    let dtype = numerics.dtype();
    let stated = declared
        .iter()
        .find(|d| d.name == kernel)
        .and_then(|d| d.tolerances.iter().find(|t| t.dtype == dtype));
    let applied = match &numerics.not_judged {
        Some(why) => format!("nothing (not judged: {why})"),
        None => format!(
            "rtol = {}, atol = {} against {}",
            numerics.rtol,
            numerics.atol,
            numerics.reference.as_deref().unwrap_or("fp64_oracle")
        ),
    };
    match stated {
        Some(t) => {
            let reference = (t.reference != "fp64_oracle").then_some(t.reference.as_str());
            let agrees = numerics.not_judged.is_none()
                && numerics.rtol == t.rtol
                && numerics.atol == t.atol
                && numerics.reference.as_deref() == reference
                && numerics.tolerance_source.as_deref() == Some(t.source.as_str())
                && (reference.is_none() || numerics.reference_max_abs_error.is_some());
            if !agrees {
                return Err(Invalid::NumericsNotDeclared {
                    kernel: kernel.to_string(),
                    dtype: dtype.to_string(),
                    applied,
                    declared: format!(
                        "rtol = {}, atol = {} against {}, from {}",
                        t.rtol, t.atol, t.reference, t.source
                    ),
                });
            }
        }
        // the project states none: the subject may leave the forward unjudged (errors reported), never invent one
        None if numerics.not_judged.is_some() => {}
        None => {
            let seed = NumericsOutput::SEED_TOLERANCE;
            // a reference kernel may still be compared with (both errors reported), but not judged against
            let agrees = numerics.rtol == seed
                && numerics.atol == seed
                && numerics.tolerance_source.is_none();
            if !agrees {
                return Err(Invalid::NumericsNotSeed {
                    kernel: kernel.to_string(),
                    dtype: dtype.to_string(),
                    applied,
                    seed,
                });
            }
        }
    }
    Ok(())
}

/// Whether `module` is `package` or one of its submodules.
fn inside(module: &str, package: &str) -> bool {
    module
        .strip_prefix(package)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The observation fields of an answer other than `ok`, each with whether the answer reports it.
pub fn reported_fields(message: &ObservedMessage) -> [(&'static str, bool); 13] {
    [
        ("family", message.family.is_some()),
        ("ordinal", message.ordinal.is_some()),
        ("torch_device", message.torch_device.is_some()),
        ("ran_on", message.ran_on.is_some()),
        ("lands_on", message.lands_on.is_some()),
        ("current_after", message.current_after.is_some()),
        ("selected", message.selected.is_some()),
        ("covers", message.covers.is_some()),
        ("vendor", message.vendor.is_some()),
        ("archs", message.archs.is_some()),
        ("torch_device_count", message.torch_device_count.is_some()),
        ("runtime_devices", message.runtime_devices.is_some()),
        ("retained_bytes", message.retained_bytes.is_some()),
    ]
}

/// An `undecided` entry names an observation field (`ok` or one of [`reported_fields`]) with a reason; a
/// field other than `ok` is then absent from the answer, and no field is both undecided and placed.
fn undecided(message: &ObservedMessage) -> Result<(), Invalid> {
    let fields = reported_fields(message);
    for (field, why) in &message.undecided {
        if why.trim().is_empty() {
            return Err(Invalid::UndecidedWithoutReason {
                field: field.clone(),
            });
        }
        if message.decided_by.contains_key(field) {
            return Err(Invalid::UndecidedAndDecided {
                field: field.clone(),
            });
        }
        if field == "ok" {
            continue;
        }
        match fields.iter().find(|(name, _)| name == field) {
            None => {
                let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
                return Err(Invalid::UndecidedUnknownField {
                    field: field.clone(),
                    fields: names.join(", "),
                });
            }
            Some((_, true)) => {
                return Err(Invalid::UndecidedButReported {
                    field: field.clone(),
                });
            }
            Some((_, false)) => {}
        }
    }
    Ok(())
}

/// A `decided_by` entry must name a frame of the project under test: a module under a declared package,
/// a function, a line, and a file that exists.
fn decided_by(field: &str, place: &DecidedBy, packages: &[String]) -> Result<(), Invalid> {
    if packages.is_empty() {
        return Err(Invalid::DecidedWithoutPackages {
            field: field.to_string(),
        });
    }
    if !packages.iter().any(|p| inside(&place.module, p)) {
        return Err(Invalid::DecidedOutsidePackages {
            field: field.to_string(),
            module: place.module.clone(),
            packages: packages.join(", "),
        });
    }
    if place.function.is_empty() || place.line == 0 {
        return Err(Invalid::DecidedNowhere {
            field: field.to_string(),
            module: place.module.clone(),
        });
    }
    if !std::path::Path::new(&place.file).is_file() {
        return Err(Invalid::DecidedInMissingFile {
            field: field.to_string(),
            file: place.file.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
