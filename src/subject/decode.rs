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

/// A live forward's numerics must be judged by what the handshake declared for the step's kernel and the
/// forward's dtype: the project's tolerance against its reference where it states one, else the seed's
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
    let applied = format!(
        "rtol = {}, atol = {} against {}",
        numerics.rtol,
        numerics.atol,
        numerics.reference.as_deref().unwrap_or("fp64_oracle")
    );
    match stated {
        Some(t) => {
            let reference = (t.reference != "fp64_oracle").then_some(t.reference.as_str());
            let agrees = numerics.rtol == t.rtol
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
                observed(&answer(module, file), &[], packages)
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(problem.to_string())
            );
        }
    }

    #[test]
    fn the_protocols_error_kinds_are_devsims() {
        let known = ErrorKind::KNOWN;
        let wire: Vec<&str> = known.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(wire, DispatchError::KINDS);
    }

    #[test]
    fn the_protocols_events_are_devsims() {
        let known = crate::subject::protocol::EventName::KNOWN;
        let wire: Vec<&str> = known.iter().map(|event| event.as_str()).collect();
        assert_eq!(wire, crate::trace::event_names());
    }

    #[test]
    fn undecided_names_an_unreported_field_with_a_reason() {
        let read = |json: &str| {
            let message: ObservedMessage = serde_json::from_str(json).expect("an answer");
            observed(&message, &[], &[])
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let head = r#""scenario": "s", "number": 1, "ok": true, "trace": []"#;
        assert_eq!(
            read(&format!(
                r#"{{{head}, "undecided": {{"ok": "no gate", "selected": "by backend alone"}}}}"#
            )),
            Ok(())
        );
        for (undecided, problem) in [
            (r#"{"ok": " "}"#, "`undecided.ok` gives no reason"),
            (
                r#"{"colour": "why"}"#,
                "`undecided.colour` names no observation field (ok, family, ordinal, torch_device, ran_on, lands_on, current_after, selected, covers, vendor, archs, torch_device_count, runtime_devices, retained_bytes)",
            ),
        ] {
            assert_eq!(
                read(&format!(r#"{{{head}, "undecided": {undecided}}}"#)),
                Err(problem.to_string())
            );
        }
        assert_eq!(
            read(&format!(
                r#"{{{head}, "family": "cuda", "undecided": {{"family": "why"}}}}"#
            )),
            Err("`undecided.family` names a field the answer reports: an undecided field is left out".into())
        );
        let mut placed = answer("gptqmodel.a", file!());
        placed.family = None;
        placed.undecided.insert("family".into(), "why".into());
        assert_eq!(
            observed(&placed, &[], &["gptqmodel".to_string()])
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(
                "`undecided.family` contradicts `decided_by.family`: a field is decided or not"
                    .into()
            )
        );
    }

    /// A float16 forward of `gptq_marlin`, judged at `rtol`/`atol` against `reference` (from `source`).
    fn forward(
        rtol: f64,
        atol: f64,
        reference: Option<&str>,
        source: Option<&str>,
    ) -> NumericsOutput {
        NumericsOutput {
            max_abs_error: 1.2e-3,
            rtol,
            atol,
            within: true,
            shape: None,
            dtype: None,
            reference: reference.map(Into::into),
            reference_max_abs_error: reference.map(|_| 4e-4),
            tolerance_source: source.map(Into::into),
        }
    }

    #[test]
    fn numerics_are_judged_by_the_declared_tolerance_or_else_the_seeds() {
        let declared: Vec<KernelDeclaration> = serde_json::from_str(
            r#"[{"name": "gptq_torch", "families": ["all"]},
                {"name": "gptq_marlin", "families": ["cuda"], "tolerances": [
                  {"dtype": "float16", "rtol": 0.15, "atol": 0.001, "reference": "gptq_torch", "source": "t.py::T"}]}]"#,
        )
        .expect("declarations");
        let project = forward(0.15, 0.001, Some("gptq_torch"), Some("t.py::T"));
        let seed = forward(2e-3, 2e-3, None, None);
        let compared = forward(2e-3, 2e-3, Some("gptq_torch"), None);
        assert_eq!(
            numerics(Some(&compared), Some("gptq_triton"), &declared),
            Ok(()),
            "compared with the reference, judged by the seed's tolerance"
        );
        assert_eq!(numerics(None, Some("gptq_marlin"), &declared), Ok(()));
        assert_eq!(
            numerics(Some(&project), Some("gptq_marlin"), &declared),
            Ok(())
        );
        assert_eq!(numerics(Some(&seed), Some("gptq_torch"), &declared), Ok(()));
        let mut bfloat16 = seed.clone();
        bfloat16.dtype = Some("bfloat16".into());
        assert_eq!(
            numerics(Some(&bfloat16), Some("gptq_marlin"), &declared),
            Ok(()),
            "no bfloat16 tolerance declared: the seed's"
        );
        for (numbers, kernel, problem) in [
            (
                &seed,
                "gptq_marlin",
                "`numerics` of gptq_marlin in float16 were judged at rtol = 0.002, atol = 0.002 against fp64_oracle, not by the tolerance the handshake declares (rtol = 0.15, atol = 0.001 against gptq_torch, from t.py::T)",
            ),
            (
                &forward(0.15, 0.01, Some("gptq_torch"), Some("t.py::T")),
                "gptq_marlin",
                "not by the tolerance the handshake declares",
            ),
            (
                &forward(0.15, 0.001, Some("gptq_torch"), Some("t.py::T")),
                "gptq_torch",
                "but the handshake declares no tolerance for it (then the seed's rtol = atol = 0.002 against the FP64 oracle applies)",
            ),
        ] {
            let refused = numerics(Some(numbers), Some(kernel), &declared)
                .expect_err(problem)
                .to_string();
            assert!(refused.contains(problem), "{refused}");
        }
        let mut no_reference_error = project.clone();
        no_reference_error.reference_max_abs_error = None;
        assert!(numerics(Some(&no_reference_error), Some("gptq_marlin"), &declared).is_err());
    }
}
