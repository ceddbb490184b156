//! One interface over the CUDA and HIP `Result` layers, so the live runtime treats both alike: each
//! layer implements [`GpuDriver`] itself (`cuda::CudaDriver`, `hip::HipDriver`).

use crate::runtime::DriverError;
use crate::runtime::live::cuda::CudaDriver;
use crate::runtime::live::hip::HipDriver;
use crate::runtime::live::library::DriverLoadError;
use crate::vocab::TorchBuild;

/// What the live runtime needs of a GPU driver.
pub trait GpuDriver: Send + Sync {
    /// The build whose GPUs this driver reaches.
    fn build(&self) -> TorchBuild;
    /// The library that opened.
    fn path(&self) -> &str;
    /// Whether it is one of devsim's fake drivers: its results are never live GPU results.
    fn is_fake(&self) -> bool;
    /// Visible devices.
    fn device_count(&self) -> Result<u32, DriverError>;
    /// A device's name.
    fn name(&self, ordinal: u32) -> Result<String, DriverError>;
    /// A device's UUID: `GPU-…` on NVIDIA, the 16-hex-digit serial on AMD (as host profiles write it).
    fn uuid(&self, ordinal: u32) -> Result<String, DriverError>;
    /// `major.minor` as the driver reports it (HIP: gfx-derived).
    fn capability(&self, ordinal: u32) -> Result<(u32, u32), DriverError>;
    /// `gcnArchName` (HIP only).
    fn gcn_arch_name(&self, ordinal: u32) -> Result<String, DriverError>;
    /// Opt-in shared memory per block.
    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError>;
    /// The calling thread's current device (0 when none was made current, as `cudaGetDevice` says).
    fn current_device(&self) -> Result<u32, DriverError>;
    /// Makes a device current for the calling thread.
    fn set_device(&self, ordinal: u32) -> Result<(), DriverError>;
    /// Allocates on the current device.
    fn alloc(&self, bytes: usize) -> Result<u64, DriverError>;
    /// Frees device memory.
    fn free(&self, ptr: u64) -> Result<(), DriverError>;
    /// Host to device.
    fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError>;
    /// Device to host.
    fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError>;
    /// Fills device memory: the device work a driver-only launch runs.
    fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), DriverError>;
    /// Waits for the current device.
    fn synchronize(&self) -> Result<(), DriverError>;
    /// Device memory in use on the current device, in bytes (the driver's total minus free).
    fn memory_in_use(&self) -> Result<u64, DriverError>;
}

/// The driver as the thing a [`crate::runtime::DeviceGuard`] switches (untraced: the live runtime's own
/// questions, such as reading every GPU's memory).
impl crate::runtime::CurrentDevice for dyn GpuDriver + '_ {
    fn current_device(&self) -> Result<u32, DriverError> {
        GpuDriver::current_device(self)
    }
    fn make_current(&self, ordinal: u32) -> Result<(), DriverError> {
        GpuDriver::set_device(self, ordinal)
    }
}

/// What loading the GPU drivers found.
pub enum DriverProbe {
    /// A driver that shows at least one GPU.
    Ready(Box<dyn GpuDriver>),
    /// A driver is present but shows no GPU: a visible-device mask hides them all, or the machine
    /// has none of its vendor.
    NoVisibleGpu {
        /// The build whose driver answered.
        build: TorchBuild,
        /// The driver's resolved path.
        library: String,
        /// What the driver said, e.g. `cuInit: CUDA_ERROR_NO_DEVICE: ...`.
        detail: String,
    },
    /// A driver is present but failed while devsim read the GPUs (count, name, capability, a lost
    /// device) or failed to initialize for another reason than "no device".
    Failing {
        /// The driver's resolved path.
        library: String,
        /// The failure.
        error: String,
        /// The build whose driver failed.
        build: TorchBuild,
        /// Whether the driver's init call itself failed (`cuInit`, `hipInit`): under a
        /// visible-device mask, the driver rejecting that mask.
        at_init: bool,
    },
    /// No driver library could be loaded; why, one per library.
    Absent(Vec<DriverLoadError>),
}

/// Loads one driver.
type Loader = fn() -> Result<Box<dyn GpuDriver>, DriverLoadError>;

/// Whether a driver error means "no device" (`CUDA_ERROR_NO_DEVICE`, `hipErrorNoDevice`).
fn is_no_device(error: &DriverError) -> bool {
    error.code == devsim_sys::cuda::CUDA_ERROR_NO_DEVICE
}

/// Loads the GPU drivers, CUDA then HIP, and keeps the first that shows a GPU. Otherwise a failing
/// driver is reported before a driver that shows no GPU (one whose init succeeded first), and that
/// before "no driver at all".
pub fn probe_gpu_driver() -> DriverProbe {
    let mut absent = Vec::new();
    let mut failing = None;
    let mut empty: Vec<(bool, DriverProbe)> = Vec::new();
    let loads: [(TorchBuild, Loader); 2] = [
        (TorchBuild::Cuda, || {
            CudaDriver::load().map(|d| Box::new(d) as Box<dyn GpuDriver>)
        }),
        (TorchBuild::Hip, || {
            HipDriver::load().map(|d| Box::new(d) as Box<dyn GpuDriver>)
        }),
    ];
    for (build, load) in loads {
        match load() {
            Ok(driver) => match driver.device_count() {
                Ok(0) => empty.push((
                    true,
                    DriverProbe::NoVisibleGpu {
                        build,
                        library: driver.path().to_string(),
                        detail: "0 devices".into(),
                    },
                )),
                Ok(_) => return DriverProbe::Ready(driver),
                Err(error) => {
                    failing.get_or_insert(DriverProbe::Failing {
                        library: driver.path().to_string(),
                        error: error.to_string(),
                        build,
                        at_init: false,
                    });
                }
            },
            Err(DriverLoadError::Driver { library, source }) if is_no_device(&source) => {
                empty.push((
                    false,
                    DriverProbe::NoVisibleGpu {
                        build,
                        library,
                        detail: source.to_string(),
                    },
                ));
            }
            Err(DriverLoadError::Driver { library, source }) => {
                failing.get_or_insert(DriverProbe::Failing {
                    library: library.clone(),
                    error: format!("initialize {library}: {source}"),
                    build,
                    at_init: true,
                });
            }
            Err(error) => absent.push(error),
        }
    }
    if let Some(failing) = failing {
        return failing;
    }
    // Prefer a driver that initialized and counted zero over one whose init said "no device".
    empty.sort_by_key(|(initialized, _)| !initialized);
    match empty.into_iter().next() {
        Some((_, probe)) => probe,
        None => DriverProbe::Absent(absent),
    }
}

/// The first GPU driver that shows a GPU; `Err` says, one line per driver, why there is none.
pub fn load_gpu_driver() -> Result<Box<dyn GpuDriver>, Vec<String>> {
    match probe_gpu_driver() {
        DriverProbe::Ready(driver) => Ok(driver),
        DriverProbe::NoVisibleGpu {
            library, detail, ..
        } => Err(vec![format!("{library} shows no GPU: {detail}")]),
        DriverProbe::Failing { library, error, .. } => {
            Err(vec![format!("{library} is present but failing: {error}")])
        }
        DriverProbe::Absent(errors) => Err(errors.iter().map(ToString::to_string).collect()),
    }
}
