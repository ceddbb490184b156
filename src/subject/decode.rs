//! An `observed` answer read into what the judge compares: the observation and its trace, with every field
//! checked against the protocol (events the handshake declared, devsim's error kinds), the opposite of
//! `encode`.

use crate::dispatch::DispatchError;
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::subject::protocol::{DecidedBy, ObservedMessage};
use crate::trace::{Entry, Event};

/// An answer devsim cannot accept as an observation.
pub type Invalid = String;

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
    let error = match (message.ok, &message.error) {
        (true, None) => None,
        (true, Some(_)) => return Err("`ok` is true but an `error` is given".into()),
        (false, None) => Some(ErrorOutput {
            kind: "(unclassified)".into(),
            message: "(no message)".into(),
        }),
        (false, Some(error)) => {
            let kind = match &error.kind {
                Some(kind) if DispatchError::KINDS.contains(&kind.as_str()) => kind.clone(),
                Some(kind) => {
                    return Err(format!(
                        "error kind `{kind}` is not one of devsim's ({})",
                        DispatchError::KINDS.join(", ")
                    ));
                }
                None => "(unclassified)".into(),
            };
            Some(ErrorOutput {
                kind,
                message: error.message.clone(),
            })
        }
    };
    let mut entries = Vec::with_capacity(message.trace.len());
    for event in &message.trace {
        let parsed: Event = event.event.parse().map_err(|name| {
            format!(
                "trace event `{name}` is not one of devsim's ({})",
                crate::trace::event_names().join(", ")
            )
        })?;
        if !declared.contains(&event.event) {
            return Err(format!(
                "trace event `{}` was not declared in the handshake",
                event.event
            ));
        }
        entries.push(Entry::Reported {
            event: parsed,
            device: event.device.map(|d| d.to_string()),
            detail: event.detail.clone(),
        });
    }
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

/// Whether `module` is `package` or one of its submodules.
fn inside(module: &str, package: &str) -> bool {
    module
        .strip_prefix(package)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// A `decided_by` entry must name a frame of the project under test: a module under a declared package,
/// a function, a line, and a file that exists.
fn decided_by(field: &str, place: &DecidedBy, packages: &[String]) -> Result<(), Invalid> {
    if packages.is_empty() {
        return Err(format!(
            "`decided_by.{field}` is given but the handshake declares no `packages`"
        ));
    }
    if !packages.iter().any(|p| inside(&place.module, p)) {
        return Err(format!(
            "`decided_by.{field}` names module `{}`, outside the project's packages ({})",
            place.module,
            packages.join(", ")
        ));
    }
    if place.function.is_empty() || place.line == 0 {
        return Err(format!(
            "`decided_by.{field}` names no function or line in module `{}`",
            place.module
        ));
    }
    if !std::path::Path::new(&place.file).is_file() {
        return Err(format!(
            "`decided_by.{field}` names file `{}`, which does not exist",
            place.file
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(module: &str, file: &str) -> ObservedMessage {
        let mut message: ObservedMessage = serde_json::from_str(
            r#"{"scenario": "s", "number": 1, "ok": true, "family": "cuda", "trace": []}"#,
        )
        .expect("an answer");
        message.decided_by.insert(
            "family".into(),
            DecidedBy {
                module: module.into(),
                function: "normalize_device".into(),
                line: 7,
                file: file.into(),
            },
        );
        message
    }

    #[test]
    fn decided_by_must_name_an_existing_file_of_the_projects_packages() {
        let here = file!();
        let packages = ["gptqmodel".to_string()];
        let (read, _) =
            observed(&answer("gptqmodel.models._const", here), &[], &packages).expect("accepted");
        assert_eq!(read.decided_by["family"].function, "normalize_device");
        assert!(observed(&answer("gptqmodel", here), &[], &packages).is_ok());
        for (module, file, packages, problem) in [
            (
                "gptqmodelx.a",
                here,
                &packages[..],
                "`decided_by.family` names module `gptqmodelx.a`, outside the project's packages (gptqmodel)",
            ),
            (
                "gptqmodel.a",
                "/nonexistent.py",
                &packages[..],
                "`decided_by.family` names file `/nonexistent.py`, which does not exist",
            ),
            (
                "gptqmodel.a",
                here,
                &[][..],
                "`decided_by.family` is given but the handshake declares no `packages`",
            ),
        ] {
            assert_eq!(
                observed(&answer(module, file), &[], packages).map(|_| ()),
                Err(problem.to_string())
            );
        }
    }
}
