//! A loaded scenario as protocol messages: the resolved host and each step with its selectors in the
//! structured form the subject rebuilds.

use crate::dispatch::selector::{Selector, WrittenForm, written_form};
use crate::host::{Gpu, HostError, HostSpec};
use crate::scenario::model::{Action, Step};
use crate::subject::protocol::{
    Build, DeviceType, FamilyName, GpuMessage, HostMessage, SelectorMessage, StepMessage,
};
use crate::vocab::{Family, TorchBuild, TorchType};

fn gpu(gpu: &Gpu) -> GpuMessage {
    GpuMessage {
        arch: gpu.arch.to_string(),
        name: gpu.name.clone(),
        smem_optin: gpu.smem_optin,
        uuid: gpu.uuid.clone(),
        memory_mib: gpu.memory_mib,
    }
}

/// The host as the subject receives it: GPUs, the visible-device resolution, the current device.
pub fn host(host: &HostSpec) -> Result<HostMessage, HostError> {
    Ok(HostMessage {
        torch: match host.torch {
            TorchBuild::Cuda => Build::Cuda,
            TorchBuild::Hip => Build::Hip,
            TorchBuild::Cpu => Build::Cpu,
        },
        gpus: host.gpus.iter().map(gpu).collect(),
        foreign_gpus: host.foreign_gpus.iter().map(gpu).collect(),
        env: host.env.clone(),
        visible: host.visible()?,
        current: host.current,
        runtime_version: host.runtime_version.clone(),
        arch_list: host.arch_list.clone(),
    })
}

/// A selector in the form it was written.
pub fn selector(selector: &Selector) -> SelectorMessage {
    match written_form(selector) {
        WrittenForm::Text(written) => SelectorMessage::String { written },
        WrittenForm::Ordinal(written) => SelectorMessage::Ordinal { written },
        WrittenForm::FamilyEnum(family) => SelectorMessage::FamilyEnum {
            family: family_name(family),
        },
        WrittenForm::TorchDevice(device) => SelectorMessage::TorchDevice {
            device_type: match device.kind {
                TorchType::Cpu => DeviceType::Cpu,
                TorchType::Cuda => DeviceType::Cuda,
                TorchType::Xpu => DeviceType::Xpu,
                TorchType::Mps => DeviceType::Mps,
            },
            index: device.index,
        },
    }
}

/// A family as the protocol spells it.
fn family_name(family: Family) -> FamilyName {
    match family {
        Family::Cpu => FamilyName::Cpu,
        Family::Cuda => FamilyName::Cuda,
        Family::Rocm => FamilyName::Rocm,
        Family::Xpu => FamilyName::Xpu,
        Family::Mps => FamilyName::Mps,
        Family::All => FamilyName::All,
    }
}

/// One step of scenario `scenario`.
pub fn step(scenario: &str, step: &Step) -> StepMessage {
    let scenario = scenario.to_string();
    let number = step.number;
    let repeat = None;
    match &step.action {
        Action::Normalize(device) => StepMessage::Normalize {
            scenario,
            number,
            device: selector(device),
            repeat,
        },
        Action::Resolve(device) => StepMessage::Resolve {
            scenario,
            number,
            device: selector(device),
            repeat,
        },
        Action::Validate { kernel, device } => StepMessage::Validate {
            scenario,
            number,
            kernel: kernel.clone(),
            device: selector(device),
            repeat,
        },
        Action::Warmup { kernel, device } => StepMessage::Warmup {
            scenario,
            number,
            kernel: kernel.clone(),
            device: selector(device),
            repeat,
        },
        Action::Move { kernel, device } => StepMessage::Move {
            scenario,
            number,
            kernel: kernel.clone(),
            device: selector(device),
            repeat,
        },
        Action::Select {
            method,
            bits,
            device,
        } => StepMessage::Select {
            scenario,
            number,
            method: method.to_string(),
            bits: *bits,
            device: selector(device),
            repeat,
        },
        Action::Lock { scope, mode } => StepMessage::Lock {
            scenario,
            number,
            scope: selector(scope),
            mode: *mode,
            repeat,
        },
        Action::SetDevice(ordinal) => StepMessage::SetDevice {
            scenario,
            number,
            ordinal: *ordinal,
            repeat,
        },
        Action::Discover => StepMessage::Discover {
            scenario,
            number,
            repeat,
        },
        Action::DefaultDevice => StepMessage::DefaultDevice {
            scenario,
            number,
            repeat,
        },
    }
}

/// The kernel a step names, if any.
pub fn kernel_of(step: &Step) -> Option<&str> {
    step.action.kernel()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_message_carries_arch_list_and_memory_only_when_given() {
        let mut spec = HostSpec::new(TorchBuild::Hip, &["gfx1030".parse().expect("arch")]);
        let plain = serde_json::to_value(host(&spec).expect("encodes")).expect("json");
        assert!(plain.get("arch_list").is_none() && plain["gpus"][0].get("memory_mib").is_none());
        spec.arch_list = Some(vec!["gfx1030".into()]);
        spec.gpus[0].memory_mib = Some(16368);
        let sent = host(&spec).expect("encodes");
        assert_eq!(sent.arch_list, Some(vec!["gfx1030".to_string()]));
        assert_eq!(sent.gpus[0].memory_mib, Some(16368));
    }
}
