//! An `observed` answer read into what the judge compares: the observation and its trace, with every field
//! checked against the protocol (events the handshake declared, devsim's error kinds), the opposite of
//! `encode`.

use crate::dispatch::DispatchError;
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::subject::protocol::ObservedMessage;
use crate::trace::{Entry, Event};

/// An answer devsim cannot accept as an observation.
pub type Invalid = String;

/// Turns an `observed` message into what expectations are compared with, and its trace into entries.
/// Events must be devsim names declared in the handshake; error kinds must be devsim's.
pub fn observed(
    message: &ObservedMessage,
    declared: &[String],
) -> Result<(Observed, Vec<Entry>), Invalid> {
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
    };
    Ok((observed, entries))
}
