//! A loaded scenario as protocol messages: the resolved host and each step with its selectors in the
//! structured form the subject rebuilds.

use crate::dispatch::selector::{Selector, WrittenForm, written_form};
use crate::host::{Gpu, HostError, HostSpec};
use crate::pool::LockMode;
use crate::scenario::model::{Action, Step};
use crate::subject::protocol::{GpuMessage, HostMessage, SelectorMessage, StepMessage};

fn gpu(gpu: &Gpu) -> GpuMessage {
    GpuMessage {
        arch: gpu.arch.to_string(),
        name: gpu.name.clone(),
        smem_optin: gpu.smem_optin,
        uuid: gpu.uuid.clone(),
    }
}

/// The host as the subject receives it: GPUs, the visible-device resolution, the current device.
pub fn host(host: &HostSpec) -> Result<HostMessage, HostError> {
    Ok(HostMessage {
        torch: host.torch.to_string(),
        gpus: host.gpus.iter().map(gpu).collect(),
        foreign_gpus: host.foreign_gpus.iter().map(gpu).collect(),
        env: host.env.clone(),
        visible: host.visible()?,
        current: host.current,
        runtime_version: host.runtime_version.clone(),
    })
}

/// A selector in the form it was written.
pub fn selector(selector: &Selector) -> SelectorMessage {
    match written_form(selector) {
        WrittenForm::Text(written) => SelectorMessage::String { written },
        WrittenForm::Ordinal(written) => SelectorMessage::Ordinal { written },
        WrittenForm::FamilyEnum(family) => SelectorMessage::FamilyEnum {
            family: family.to_string(),
        },
        WrittenForm::TorchDevice(device) => SelectorMessage::TorchDevice {
            device_type: device.to_string().split(':').next().unwrap_or("cpu").into(),
            index: device.index,
        },
    }
}

/// One step of scenario `scenario`.
pub fn step(scenario: &str, step: &Step) -> StepMessage {
    let mut message = StepMessage {
        scenario: scenario.to_string(),
        number: step.number,
        action: step.action.name().to_string(),
        kernel: None,
        device: None,
        method: None,
        bits: None,
        scope: None,
        mode: None,
        ordinal: None,
        repeat: None,
    };
    match &step.action {
        Action::Normalize(device) | Action::Resolve(device) => {
            message.device = Some(selector(device));
        }
        Action::Validate { kernel, device }
        | Action::Warmup { kernel, device }
        | Action::Move { kernel, device } => {
            message.kernel = Some(kernel.clone());
            message.device = Some(selector(device));
        }
        Action::Select {
            method,
            bits,
            device,
        } => {
            message.method = Some(method.to_string());
            message.bits = Some(*bits);
            message.device = Some(selector(device));
        }
        Action::Lock { scope, mode } => {
            message.scope = Some(selector(scope));
            message.mode = Some(
                match mode {
                    LockMode::Read => "read",
                    LockMode::Write => "write",
                }
                .into(),
            );
        }
        Action::SetDevice(ordinal) => message.ordinal = Some(*ordinal),
        Action::Discover | Action::DefaultDevice => {}
    }
    message
}

/// The kernel a step names, if any.
pub fn kernel_of(step: &Step) -> Option<&str> {
    step.action.kernel()
}
