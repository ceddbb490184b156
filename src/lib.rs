//! devsim: a test harness for cross-vendor GPU device dispatch.
//!
//! PyTorch shows AMD GPUs through its `cuda` namespace on HIP (ROCm) builds. Dispatch code that reads the
//! spelling "cuda" as "NVIDIA" lets NVIDIA-only kernels through on AMD machines, probes NVIDIA compute
//! capability on AMD GPUs, hides real ROCm support and sends family-wide moves to GPU 0. devsim makes those
//! bugs testable without the hardware: it simulates CUDA, HIP and CPU-only torch builds with a runtime that
//! records every call, and judges *subjects* — the dispatch code under test — against scenario files.
//!
//! # Judging your own kernels
//!
//! A kernel is a contract ([`KernelSpec`], pure data) or a type implementing [`Kernel`] when it has
//! behaviour of its own (repacking on the device, a vendor-specific launch). Add yours to the reference
//! catalog, or build a catalog of only your own; the catalog checks itself when it is built:
//!
//! ```
//! use devsim::kernel::{Catalog, KernelSpec, Method};
//! use devsim::vocab::Family;
//!
//! let my_gemm = KernelSpec::new("my_gemm", Method::named("myq"), vec![4], vec![Family::Cuda])
//!     .cc_at_least(8, 0)
//!     .extension("my_gemm_cuda")
//!     .alternative("gptq_torch");
//! let catalog = Catalog::reference_builder().with_spec(my_gemm).build()?;
//! assert!(catalog.get("my_gemm").is_ok());
//!
//! // Inconsistent data is refused, naming the kernel and the field.
//! let typo = KernelSpec::new("k", Method::Gptq, vec![4], vec![Family::Cuda]).alternative("gptq_troch");
//! let error = Catalog::reference_builder().with_spec(typo).build().err().expect("refused");
//! assert!(error.to_string().contains("did you mean gptq_torch?"));
//! # Ok::<(), devsim::kernel::CatalogError>(())
//! ```
//!
//! Then judge it: in code, on a simulated host, with every runtime call in the trace —
//!
//! ```
//! use devsim::dispatch::Dispatch;
//! use devsim::kernel::{Catalog, KernelSpec, Method};
//! use devsim::runtime::{Recorder, SimRuntime};
//! use devsim::vocab::{Family, TorchBuild};
//! use devsim::HostSpec;
//!
//! let my_gemm = KernelSpec::new("my_gemm", Method::named("myq"), vec![4], vec![Family::Cuda])
//!     .extension("my_gemm_cuda");
//! let catalog = Catalog::reference_builder().with_spec(my_gemm).build()?;
//!
//! // Two AMD GPUs behind a HIP build of torch: "cuda:1" means ROCm there.
//! let host = HostSpec::new(TorchBuild::Hip, &["gfx1201".parse()?, "gfx1201".parse()?]);
//! let runtime = Recorder::new(Box::new(SimRuntime::new(host)?));
//! let dispatch = Dispatch::new(&runtime, runtime.trace().clone());
//!
//! let refused = catalog.get("my_gemm")?.validate(&dispatch, &"cuda:1".into()).err().expect("refused");
//! assert_eq!(refused.kind(), "unsupported-family");
//! // Refused before its native extension loaded, and no NVIDIA question asked of an AMD GPU.
//! let trace = runtime.trace().entries();
//! assert_eq!(devsim::trace::count(&trace, "extension_load"), 0);
//! assert_eq!(devsim::trace::count(&trace, "nvidia_capability"), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! — or, better, in scenario files that contributors read and extend (`docs/scenario-format.md`), one test
//! each through [`harness::Harness`] in a `tests/*.rs` with `harness = false`, and from a devsim-compatible
//! binary of your own through [`cli::main`]. `examples/downstream` in the repository is a complete crate
//! doing all of this: two kernels, its own scenarios and host profile, a runtime wrapper, and its binary.
//!
//! Dispatch code in another language is judged over a JSON-lines protocol (`docs/subject-protocol.md`).
//!
//! # Layers
//!
//! Dependencies flow one way (a test fails on a cycle): [`vocab`] (vendors, families, archs, builds,
//! targets) ← [`trace`] ← [`visible`] ← [`host`] ← [`runtime`] ← [`dispatch`] (selectors, normalization,
//! errors) ← [`kernel`], [`pool`], [`discover`] ← [`scenario`] ← … ← [`reporter`] (human text, JSON,
//! JUnit) and the benchmarks ← [`harness`] and [`cli`], which parses arguments, calls the library, prints
//! and maps outcomes to exit codes. `child` (a child process spoken to in lines, with timeouts) depends on
//! nothing in devsim.

pub mod accept;
pub mod baseline;
#[cfg(feature = "cli")]
pub mod bench;
pub(crate) mod child;
#[cfg(feature = "cli")]
pub mod cli;
pub mod conformance;
pub mod contain;
pub mod discover;
pub mod dispatch;
pub mod findings;
#[cfg(feature = "harness")]
pub mod harness;
pub mod host;
pub mod kernel;
pub mod live_record;
pub(crate) mod parallel;
pub mod pool;
#[cfg(feature = "cli")]
pub mod probe;
pub mod replay;
/// One scenario's report for a terminal, at the path it had before [`reporter`]: `report::human` is
/// [`reporter::human::scenario`].
pub mod report {
    pub use crate::reporter::human::scenario as human;
}
pub mod reporter;
pub mod repro;
pub mod runner;
pub mod runtime;
pub mod scenario;
pub mod shown;
pub mod subject;
pub mod suite;
#[cfg(feature = "cli")]
pub(crate) mod sweep;
pub mod trace;
pub mod visible;
pub mod vocab;

pub use devsim_metadata::output;
pub use dispatch::Dispatch;
pub use dispatch::DispatchError;
pub use dispatch::selector::{Selector, normalize, to_torch_device};
pub use host::{HostError, HostSpec};
pub use kernel::{Catalog, Kernel, KernelSpec};
pub use runtime::DriverError;
pub use runtime::{Recorder, Runtime, SimRuntime};
pub use trace::{Call, Trace};
pub use vocab::{Arch, ComputeCapability, Family, Target, TorchBuild, TorchDevice, Vendor};
