//! devsim: a test harness for cross-vendor GPU device dispatch.
//!
//! PyTorch shows AMD GPUs through its `cuda` namespace on HIP builds. devsim models device families,
//! normalizes runtime aliases in one place, simulates CUDA, HIP and CPU-only hosts with a runtime that
//! records every call, and runs kernel contracts and scenario files against it, so dispatch bugs show up
//! without the hardware.

pub mod cli;
pub mod discover;
pub mod dispatch;
pub mod host;
pub mod kernel;
pub mod matrix;
pub mod mutants;
pub mod output;
pub mod pool;
pub mod report;
pub mod runtime;
pub mod scenario;
pub mod trace;
pub mod visible;
pub mod vocab;

pub use dispatch::Dispatch;
pub use dispatch::DispatchError;
pub use dispatch::selector::{Selector, normalize, to_torch_device};
pub use host::{HostError, HostSpec};
pub use kernel::{Catalog, Kernel, KernelSpec};
pub use runtime::DriverError;
pub use runtime::{Recorder, Runtime, SimRuntime};
pub use trace::{Call, Trace};
pub use vocab::{Arch, ComputeCapability, Family, Target, TorchBuild, TorchDevice, Vendor};
