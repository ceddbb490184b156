//! A downstream crate's kernels, tested with devsim.
//!
//! - [`tiny_gemm`]: a pure contract (data only): NVIDIA sm_80 and newer, with a native extension.
//! - [`TinyRepack`]: a kernel with behaviour: it repacks its weights on the device, inside the target's
//!   context, at warmup and after a move.
//! - [`TinyLeak`]: a kernel that leaks on purpose (2 MiB of device memory per repack), so that a
//!   `retained_bytes` scenario can be seen to catch a leak, simulated and live.
//! - [`catalog`]: devsim's reference catalog plus these three.
//! - [`LaunchLog`]: a custom [`Runtime`] wrapper that remembers every kernel launched, to show that a
//!   scenario can run on any runtime the crate builds. It forwards every [`Runtime`] method, the defaulted
//!   `copy_out_matches` included, so the runtime it wraps answers as it would alone.
//!
//! The crate uses only devsim's documented public API (the API `cargo semver-checks` checks in CI, and
//! CHANGELOG.md's migration notes describe): no `#[doc(hidden)]` item.

use std::sync::Mutex;

use devsim::dispatch::{Dispatch, DispatchError};
use devsim::kernel::{Catalog, CatalogError, Kernel, KernelSpec, Method};
use devsim::runtime::{Buffer, ContextSwitch, DriverError, LaunchOn, Place, Runtime};
use devsim::vocab::{ComputeCapability, Family, TorchBuild, TorchDevice};

/// The quantization method these kernels implement: not one devsim knows.
pub fn tinyq() -> Method {
    Method::named("tinyq")
}

/// A pure contract: NVIDIA only, compute capability 8.0 or newer, a native extension, and
/// [`TinyRepack`] as the portable alternative.
pub fn tiny_gemm() -> KernelSpec {
    KernelSpec::new("tiny_gemm", tinyq(), vec![4], vec![Family::Cuda])
        .cc_at_least(8, 0)
        .extension("tiny_gemm_cuda")
        .priority(100)
        .alternative("tiny_repack")
}

/// A kernel that repacks its weights on the device, inside the target's context.
pub struct TinyRepack(KernelSpec);

impl TinyRepack {
    /// Its contract: CUDA and ROCm (MI300X and RDNA4 only), 4 and 8 bits, repacking on moves.
    pub fn new() -> Self {
        Self(
            KernelSpec::new(
                "tiny_repack",
                tinyq(),
                vec![4, 8],
                vec![Family::Cuda, Family::Rocm],
            )
            .amd_targets(["gfx942", "gfx1201"])
            .priority(50)
            .repacks(),
        )
    }
}

impl Default for TinyRepack {
    fn default() -> Self {
        Self::new()
    }
}

impl Kernel for TinyRepack {
    fn spec(&self) -> &KernelSpec {
        &self.0
    }

    /// Runs inside the target's context (devsim's warmup and move paths enter it): launch on the current
    /// device, which is the target.
    fn prepare_on_device(&self, dispatch: &Dispatch) -> Result<(), DispatchError> {
        dispatch
            .runtime
            .launch(LaunchOn::CurrentDevice, "tiny_repack_pack")?;
        Ok(())
    }
}

/// What [`TinyLeak`] leaks per repack: 2 MiB, the granularity at which drivers report device memory.
pub const LEAK_BYTES: usize = 2 << 20;

/// A kernel that leaks on purpose: every repack allocates [`LEAK_BYTES`] on the target and never frees
/// them (a "cache" that only grows). NVIDIA only, so its leak can be replayed on an NVIDIA GPU.
pub struct TinyLeak(KernelSpec);

impl TinyLeak {
    /// Its contract: CUDA, 4 bits, repacking on moves.
    pub fn new() -> Self {
        Self(KernelSpec::new("tiny_leak", tinyq(), vec![4], vec![Family::Cuda]).repacks())
    }
}

impl Default for TinyLeak {
    fn default() -> Self {
        Self::new()
    }
}

impl Kernel for TinyLeak {
    fn spec(&self) -> &KernelSpec {
        &self.0
    }

    /// Allocates on the current device (the target) and drops the buffer without freeing it.
    fn prepare_on_device(&self, dispatch: &Dispatch) -> Result<(), DispatchError> {
        let current = TorchDevice {
            kind: devsim::vocab::TorchType::Cuda,
            index: None,
        };
        dispatch.runtime.alloc(current, LEAK_BYTES)?;
        Ok(())
    }
}

/// devsim's reference catalog plus [`tiny_gemm`], [`TinyRepack`] and [`TinyLeak`].
pub fn catalog() -> Result<Catalog, CatalogError> {
    Catalog::reference_builder()
        .named("downstream-kernels")
        .with_spec(tiny_gemm())
        .with(TinyRepack::new())
        .with(TinyLeak::new())
        .build()
}

/// A runtime wrapper that remembers the name of every kernel launched through it.
pub struct LaunchLog<R> {
    inner: R,
    launched: Mutex<Vec<String>>,
}

impl<R: Runtime> LaunchLog<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            launched: Mutex::new(Vec::new()),
        }
    }

    /// The kernels launched so far, in order.
    pub fn launched(&self) -> Vec<String> {
        self.launched
            .lock()
            .map(|names| names.clone())
            .unwrap_or_default()
    }
}

impl<R: Runtime> Runtime for LaunchLog<R> {
    fn build(&self) -> TorchBuild {
        self.inner.build()
    }
    fn device_count(&self) -> Result<u32, DriverError> {
        self.inner.device_count()
    }
    fn torch_device_count(&self) -> Result<u32, DriverError> {
        self.inner.torch_device_count()
    }
    fn device_name(&self, ordinal: u32) -> Result<String, DriverError> {
        self.inner.device_name(ordinal)
    }
    fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError> {
        self.inner.nvidia_capability(ordinal)
    }
    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.inner.smem_optin(ordinal)
    }
    fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError> {
        self.inner.amd_arch(ordinal)
    }
    fn get_device(&self) -> Result<u32, DriverError> {
        self.inner.get_device()
    }
    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        self.inner.set_device(ordinal)
    }
    fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError> {
        self.inner.alloc(device, bytes)
    }
    fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError> {
        self.inner.copy_in(dst, data)
    }
    fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError> {
        self.inner.copy_out(src)
    }
    fn copy_out_matches(&self, src: &Buffer, expected: &[u8]) -> Result<bool, DriverError> {
        self.inner.copy_out_matches(src, expected)
    }
    fn free(&self, buffer: &Buffer) -> Result<(), DriverError> {
        self.inner.free(buffer)
    }
    fn launch(&self, on: LaunchOn, kernel: &str) -> Result<Place, DriverError> {
        if let Ok(mut names) = self.launched.lock() {
            names.push(kernel.to_string());
        }
        self.inner.launch(on, kernel)
    }
    fn synchronize(&self) -> Result<(), DriverError> {
        self.inner.synchronize()
    }
    fn load_extension(&self, name: &str) -> Result<(), DriverError> {
        self.inner.load_extension(name)
    }
    fn take_switches(&self) -> Vec<ContextSwitch> {
        self.inner.take_switches()
    }
    fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError> {
        self.inner.device_bytes_in_use()
    }
}
