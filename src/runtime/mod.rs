//! The one seam between dispatch and hardware.
//!
//! Dispatch code talks to a [`Runtime`] and nothing else. [`SimRuntime`] answers from a host profile;
//! the live runtime answers from real drivers. A [`Recorder`] wraps either and keeps the trace.

mod error;
mod faults;
mod guard;
// Not part of the public API: the CLI and the harness drive live replay; public only for devsim's own
// driver-loading tests.
#[doc(hidden)]
pub mod live;
mod recorder;
mod sim;

pub use error::DriverError;
pub use faults::FaultInjector;
pub use guard::{CurrentDevice, DeviceGuard};
pub use recorder::Recorder;
pub use sim::SimRuntime;

use crate::vocab::ComputeCapability;
use crate::vocab::TorchBuild;
use crate::vocab::TorchDevice;

pub use devsim_metadata::Place;

/// Memory a runtime handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    /// Where it lives.
    pub place: Place,
    /// The runtime's handle (a device pointer, or a key into the runtime's own table).
    pub handle: u64,
    /// Its size in bytes.
    pub bytes: usize,
}

/// Where a launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchOn {
    /// On the CPU.
    Cpu,
    /// On the thread's current GPU, as a raw kernel launch does.
    CurrentDevice,
}

/// A change of the current device that a runtime made on its own inside one call (the live runtime
/// enters a GPU's context to allocate, copy or free there), and whether the driver accepted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextSwitch {
    /// The device made current.
    pub to: u32,
    /// Whether the switch succeeded.
    pub ok: bool,
}

/// Everything dispatch may ask of hardware. Each method but [`Runtime::build`] is one traced call.
pub trait Runtime: Send + Sync {
    /// The torch build the process runs (process state, not a driver call: not traced).
    fn build(&self) -> TorchBuild;
    /// How many devices the driver itself enumerates (`cuDeviceGetCount` / `hipGetDeviceCount`): the
    /// ordinals execution calls may use.
    fn device_count(&self) -> Result<u32, DriverError>;
    /// How many devices torch reports (`torch.cuda.device_count()`): the count dispatch code sees, which can
    /// differ from the driver's under visible-device variables (see `crate::visible`). A runtime that
    /// cannot tell the two apart answers [`Runtime::device_count`]; a wrapper forwards it (no default, so a
    /// wrapper cannot silently change what it reports).
    fn torch_device_count(&self) -> Result<u32, DriverError>;
    /// A device's name.
    fn device_name(&self, ordinal: u32) -> Result<String, DriverError>;
    /// A device's NVIDIA compute capability. HIP answers it too, with gfx-derived numbers.
    fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError>;
    /// A device's opt-in shared memory per block, in bytes.
    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError>;
    /// A device's AMD `gcnArchName` (`gfx942:sramecc+:xnack-`). CUDA has no answer.
    fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError>;
    /// The calling thread's current device.
    fn get_device(&self) -> Result<u32, DriverError>;
    /// Makes `ordinal` the calling thread's current device.
    fn set_device(&self, ordinal: u32) -> Result<(), DriverError>;
    /// Allocates `bytes` on a torch device; an indexless GPU device means the current one.
    fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError>;
    /// Copies host data into a buffer.
    fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError>;
    /// Copies a buffer back to the host.
    fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError>;
    /// Copies a buffer back to the host and says whether it holds exactly `expected`: the same one call as
    /// [`Runtime::copy_out`]. The default copies out and compares; a runtime that can compare in place
    /// overrides it, and a wrapper forwards it to the runtime it wraps.
    fn copy_out_matches(&self, src: &Buffer, expected: &[u8]) -> Result<bool, DriverError> {
        Ok(self.copy_out(src)? == expected)
    }
    /// Frees a buffer.
    fn free(&self, buffer: &Buffer) -> Result<(), DriverError>;
    /// Launches a kernel and reports where it ran.
    fn launch(&self, on: LaunchOn, kernel: &str) -> Result<Place, DriverError>;
    /// Waits for the current device.
    fn synchronize(&self) -> Result<(), DriverError>;
    /// Loads a kernel's native extension.
    fn load_extension(&self, name: &str) -> Result<(), DriverError>;
    /// The context switches this runtime made on its own on the calling thread since last asked, in order,
    /// handed over once (the [`Recorder`] puts them in the trace after the call that made them). Not a call.
    /// Required, like every method: a wrapper that forgot it would drop switches from the trace.
    fn take_switches(&self) -> Vec<ContextSwitch>;
    /// Device memory in use, in bytes, summed over every visible GPU: what `retained_bytes` compares. Asked
    /// outside the trace (not a call, never faulted); `None` when the runtime cannot tell.
    fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError>;
}

/// A shared runtime is a runtime: a test keeps one handle on a wrapper while the runner owns another.
impl<R: Runtime + ?Sized> Runtime for std::sync::Arc<R> {
    fn build(&self) -> TorchBuild {
        (**self).build()
    }
    fn device_count(&self) -> Result<u32, DriverError> {
        (**self).device_count()
    }
    fn torch_device_count(&self) -> Result<u32, DriverError> {
        (**self).torch_device_count()
    }
    fn device_name(&self, ordinal: u32) -> Result<String, DriverError> {
        (**self).device_name(ordinal)
    }
    fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError> {
        (**self).nvidia_capability(ordinal)
    }
    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        (**self).smem_optin(ordinal)
    }
    fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError> {
        (**self).amd_arch(ordinal)
    }
    fn get_device(&self) -> Result<u32, DriverError> {
        (**self).get_device()
    }
    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        (**self).set_device(ordinal)
    }
    fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError> {
        (**self).alloc(device, bytes)
    }
    fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError> {
        (**self).copy_in(dst, data)
    }
    fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError> {
        (**self).copy_out(src)
    }
    fn copy_out_matches(&self, src: &Buffer, expected: &[u8]) -> Result<bool, DriverError> {
        (**self).copy_out_matches(src, expected)
    }
    fn free(&self, buffer: &Buffer) -> Result<(), DriverError> {
        (**self).free(buffer)
    }
    fn launch(&self, on: LaunchOn, kernel: &str) -> Result<Place, DriverError> {
        (**self).launch(on, kernel)
    }
    fn synchronize(&self) -> Result<(), DriverError> {
        (**self).synchronize()
    }
    fn load_extension(&self, name: &str) -> Result<(), DriverError> {
        (**self).load_extension(name)
    }
    fn take_switches(&self) -> Vec<ContextSwitch> {
        (**self).take_switches()
    }
    fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError> {
        (**self).device_bytes_in_use()
    }
}
