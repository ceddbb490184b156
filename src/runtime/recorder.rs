//! A runtime wrapper that records every call in a [`Trace`], and every context switch the runtime made
//! on its own inside a call.

use crate::runtime::DriverError;
use crate::runtime::{Buffer, ContextSwitch, LaunchOn, Place, Runtime};
use crate::trace::{Call, Entry, Text, Trace};
use crate::vocab::ComputeCapability;
use crate::vocab::TorchBuild;
use crate::vocab::TorchDevice;

/// Wraps any runtime and appends one trace entry per call, in order, with its outcome.
pub struct Recorder {
    inner: Box<dyn Runtime>,
    trace: Trace,
}

impl Recorder {
    /// Wraps `inner`, recording into a fresh trace.
    pub fn new(inner: Box<dyn Runtime>) -> Self {
        Self {
            inner,
            trace: Trace::new(),
        }
    }

    /// The wrapped runtime, for questions that must not appear in the trace.
    pub fn inner(&self) -> &dyn Runtime {
        self.inner.as_ref()
    }

    /// The trace being recorded.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    fn record<T>(
        &self,
        call: Call,
        device: Option<Text>,
        detail: Option<Text>,
        result: Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        self.trace.push(Entry::Call {
            call,
            device,
            detail,
            ok: result.is_ok(),
        });
        for switch in self.inner.take_switches() {
            self.trace.push(Entry::ContextSwitch {
                device: Text::number(switch.to),
                during: call,
                ok: switch.ok,
            });
        }
        result
    }
}

fn on(ordinal: u32) -> Option<Text> {
    Some(Text::number(ordinal))
}

fn at(place: Place) -> Option<Text> {
    Some(match place {
        Place::Cpu => Text::fixed("cpu"),
        Place::Gpu(ordinal) => Text::number(ordinal),
    })
}

impl Runtime for Recorder {
    fn build(&self) -> TorchBuild {
        self.inner.build()
    }

    fn device_count(&self) -> Result<u32, DriverError> {
        let count = self.inner.device_count();
        self.record(Call::DriverDeviceCount, None, None, count)
    }

    fn torch_device_count(&self) -> Result<u32, DriverError> {
        let count = self.inner.torch_device_count();
        self.record(Call::DeviceCount, None, None, count)
    }

    fn device_name(&self, ordinal: u32) -> Result<String, DriverError> {
        self.record(
            Call::DeviceName,
            on(ordinal),
            None,
            self.inner.device_name(ordinal),
        )
    }

    fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError> {
        let result = self.inner.nvidia_capability(ordinal);
        self.record(Call::NvidiaCapability, on(ordinal), None, result)
    }

    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.record(
            Call::SmemOptin,
            on(ordinal),
            None,
            self.inner.smem_optin(ordinal),
        )
    }

    fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError> {
        self.record(
            Call::AmdArch,
            on(ordinal),
            None,
            self.inner.amd_arch(ordinal),
        )
    }

    fn get_device(&self) -> Result<u32, DriverError> {
        self.record(Call::GetDevice, None, None, self.inner.get_device())
    }

    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        self.record(
            Call::SetDevice,
            on(ordinal),
            None,
            self.inner.set_device(ordinal),
        )
    }

    fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError> {
        let result = self.inner.alloc(device, bytes);
        let place = result.as_ref().ok().and_then(|b| at(b.place));
        let device = place.or_else(|| Some(device.to_string().into()));
        self.record(Call::Alloc, device, None, result)
    }

    fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError> {
        let result = self.inner.copy_in(dst, data);
        self.record(
            Call::Copy,
            at(dst.place),
            Some(Text::fixed("to device")),
            result,
        )
    }

    fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError> {
        let result = self.inner.copy_out(src);
        self.record(
            Call::Copy,
            at(src.place),
            Some(Text::fixed("to host")),
            result,
        )
    }

    fn copy_out_matches(&self, src: &Buffer, expected: &[u8]) -> Result<bool, DriverError> {
        let result = self.inner.copy_out_matches(src, expected);
        self.record(
            Call::Copy,
            at(src.place),
            Some(Text::fixed("to host")),
            result,
        )
    }

    fn free(&self, buffer: &Buffer) -> Result<(), DriverError> {
        self.record(Call::Free, at(buffer.place), None, self.inner.free(buffer))
    }

    fn launch(&self, on: LaunchOn, kernel: &str) -> Result<Place, DriverError> {
        let result = self.inner.launch(on, kernel);
        let device = result.as_ref().ok().and_then(|place| at(*place));
        self.record(Call::Launch, device, Some(Text::copy_of(kernel)), result)
    }

    fn synchronize(&self) -> Result<(), DriverError> {
        self.record(Call::Synchronize, None, None, self.inner.synchronize())
    }

    fn load_extension(&self, name: &str) -> Result<(), DriverError> {
        let result = self.inner.load_extension(name);
        self.record(Call::ExtensionLoad, None, Some(Text::copy_of(name)), result)
    }

    /// Switches are already in the trace: nothing is left to hand over.
    fn take_switches(&self) -> Vec<ContextSwitch> {
        Vec::new()
    }

    fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError> {
        self.inner.device_bytes_in_use()
    }
}
