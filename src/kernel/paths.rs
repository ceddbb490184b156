//! The default validate, warmup and move paths.

use serde::Serialize;

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::dispatch::selector::{Selector, to_torch_device};
use crate::kernel::{Kernel, gpu_ordinal};
use crate::runtime::DriverError;
use crate::runtime::{DeviceGuard, LaunchOn, Place};
use crate::vocab::{Target, TorchDevice, TorchType};

/// A kernel accepted a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Validated {
    /// The normalized target.
    pub target: Target,
    /// Where it resolves at the torch boundary.
    pub torch_device: TorchDevice,
}

/// A warmup ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warmed {
    /// What validation accepted.
    #[serde(flatten)]
    pub validated: Validated,
    /// Where the warmup kernel ran.
    pub ran_on: Place,
}

/// Weights were moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moved {
    /// What validation accepted.
    #[serde(flatten)]
    pub validated: Validated,
    /// Where the data ended.
    pub lands_on: Place,
}

/// How many bytes a kernel's test weights hold.
const WEIGHT_BYTES: usize = 4096;
/// The period of the weights' byte pattern.
const WEIGHT_PERIOD: usize = 251;

/// The bytes a kernel's test weights hold: deterministic, kernel-specific. Byte `i` is the name's seed plus
/// `i % 251`, laid down one period at a time.
fn weights(name: &str) -> Vec<u8> {
    let seed = name
        .bytes()
        .fold(17u8, |acc, b| acc.wrapping_mul(31).wrapping_add(b));
    let period: [u8; WEIGHT_PERIOD] = std::array::from_fn(|i| seed.wrapping_add(i as u8));
    let mut data = Vec::with_capacity(WEIGHT_BYTES);
    while data.len() < WEIGHT_BYTES {
        let take = (WEIGHT_BYTES - data.len()).min(WEIGHT_PERIOD);
        data.extend_from_slice(&period[..take]);
    }
    data
}

pub(super) fn validate<K: Kernel + ?Sized>(
    kernel: &K,
    dispatch: &Dispatch,
    selector: &Selector,
) -> Result<Validated, DispatchError> {
    // Normalization and the gates record a handful of entries in a row (the recorder's calls among them):
    // holding the trace once spares each its lock.
    let _held = dispatch.trace.hold();
    let target = dispatch.normalize(selector)?;
    kernel.validate_target(dispatch, target, None)?;
    Ok(Validated {
        target,
        torch_device: to_torch_device(&target),
    })
}

/// Enters the context of a GPU torch device with an explicit index; `None` for CPU and indexless devices,
/// which already run in the current context.
fn enter<'a>(
    dispatch: &Dispatch<'a>,
    device: TorchDevice,
) -> Result<Option<DeviceGuard<'a>>, DriverError> {
    match (device.kind, device.index) {
        (TorchType::Cpu, _) | (_, None) => Ok(None),
        (_, Some(ordinal)) => DeviceGuard::enter(dispatch.runtime, ordinal).map(Some),
    }
}

fn restore(guard: Option<DeviceGuard>) -> Result<(), DriverError> {
    guard.map(DeviceGuard::restore).transpose().map(|_| ())
}

pub(super) fn warmup<K: Kernel + ?Sized>(
    kernel: &K,
    dispatch: &Dispatch,
    selector: &Selector,
) -> Result<Warmed, DispatchError> {
    let validated = kernel.validate(dispatch, selector)?;
    let device = validated.torch_device;
    let rt = dispatch.runtime;
    let on = if device.kind == TorchType::Cpu {
        LaunchOn::Cpu
    } else {
        LaunchOn::CurrentDevice
    };
    let guard = enter(dispatch, device)?;
    // On error the guard's drop restores the caller's device.
    if on == LaunchOn::CurrentDevice {
        kernel.prepare_on_device(dispatch)?;
    }
    let ran_on = rt.launch(on, &kernel.launch_name(validated.target))?;
    if on == LaunchOn::CurrentDevice {
        rt.synchronize()?;
    }
    restore(guard)?;
    Ok(Warmed { validated, ran_on })
}

pub(super) fn move_weights<K: Kernel + ?Sized>(
    kernel: &K,
    dispatch: &Dispatch,
    selector: &Selector,
) -> Result<Moved, DispatchError> {
    let validated = kernel.validate(dispatch, selector)?;
    let rt = dispatch.runtime;
    let data = weights(&kernel.spec().name);
    let buffer = rt.alloc(validated.torch_device, data.len())?;
    let result = (|| -> Result<(), DispatchError> {
        rt.copy_in(&buffer, &data)?;
        if let Some(ordinal) = gpu_ordinal(buffer.place) {
            if kernel.spec().repacks {
                let guard = DeviceGuard::enter(rt, ordinal)?;
                kernel.prepare_on_device(dispatch)?;
                guard.restore()?;
            }
        }
        if !rt.copy_out_matches(&buffer, &data)? {
            return Err(DriverError {
                call: "copy".into(),
                code: -1,
                message: "weights read back differ from what was written".into(),
            }
            .into());
        }
        Ok(())
    })();
    let freed = rt.free(&buffer);
    result?;
    freed?;
    Ok(Moved {
        validated,
        lands_on: buffer.place,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_the_seed_plus_the_index_modulo_251() {
        for name in ["gptq_marlin", "awq_allspark", ""] {
            let seed = name
                .bytes()
                .fold(17u8, |acc, b| acc.wrapping_mul(31).wrapping_add(b));
            let expected: Vec<u8> = (0..4096u32)
                .map(|i| seed.wrapping_add((i % 251) as u8))
                .collect();
            assert_eq!(weights(name), expected, "{name}");
        }
    }
}
