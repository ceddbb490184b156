//! devsim: a test harness for cross-vendor GPU device dispatch.
//!
//! PyTorch shows AMD GPUs through its `cuda` namespace on HIP builds. devsim models device families,
//! normalizes runtime aliases in one place, simulates CUDA, HIP and CPU-only hosts with a runtime that
//! records every call, and runs kernel contracts and scenario files against it, so dispatch bugs show up
//! without the hardware.

pub mod bench;
pub mod discover;
pub mod dispatch;
pub mod errors;
pub mod family;
pub mod host;
pub mod kernel;
pub mod matrix;
pub mod pool;
pub mod report;
pub mod runtime;
pub mod scenario;
pub mod selector;
pub mod trace;
pub mod visible;

pub use dispatch::Dispatch;
pub use errors::{DispatchError, DriverError, HostError};
pub use family::{Arch, ComputeCapability, Family, Vendor};
pub use host::{HostSpec, TorchBuild};
pub use kernel::{Catalog, Kernel, KernelSpec};
pub use runtime::{Recorder, Runtime, SimRuntime};
pub use selector::{Selector, Target, TorchDevice, normalize, to_torch_device};
pub use trace::{Call, Trace};
