//! One interface over the CUDA and HIP `Result` layers, so the live runtime treats both alike.

use crate::runtime::DriverError;
use crate::runtime::live::cuda::CudaDriver;
use crate::runtime::live::hip::HipDriver;
use crate::runtime::live::library::DriverLoadError;
use crate::vocab::TorchBuild;

/// CUDA's and HIP's "not supported" code.
const NOT_SUPPORTED: i32 = 801;

/// What the live runtime needs of a GPU driver.
pub trait GpuDriver: Send + Sync {
    /// The build whose GPUs this driver reaches.
    fn build(&self) -> TorchBuild;
    /// The library that opened.
    fn path(&self) -> &str;
    /// Visible devices.
    fn device_count(&self) -> Result<u32, DriverError>;
    /// A device's name.
    fn name(&self, ordinal: u32) -> Result<String, DriverError>;
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
}

/// Forwards the calls both `Result` layers share; `$capability` and `$arch` name what differs.
macro_rules! forward_gpu_driver {
    ($driver:ty, $build:expr, $capability:ident, $arch:expr) => {
        impl GpuDriver for $driver {
            fn build(&self) -> TorchBuild {
                $build
            }
            fn path(&self) -> &str {
                <$driver>::path(self)
            }
            fn device_count(&self) -> Result<u32, DriverError> {
                <$driver>::device_count(self)
            }
            fn name(&self, ordinal: u32) -> Result<String, DriverError> {
                <$driver>::name(self, ordinal)
            }
            fn capability(&self, ordinal: u32) -> Result<(u32, u32), DriverError> {
                self.$capability(ordinal)
            }
            fn gcn_arch_name(&self, ordinal: u32) -> Result<String, DriverError> {
                let arch: fn(&$driver, u32) -> Result<String, DriverError> = $arch;
                arch(self, ordinal)
            }
            fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
                <$driver>::smem_optin(self, ordinal)
            }
            fn current_device(&self) -> Result<u32, DriverError> {
                // With no context current, cudaGetDevice/hipGetDevice report device 0.
                Ok(<$driver>::current_device(self)?.unwrap_or(0))
            }
            fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
                <$driver>::set_device(self, ordinal)
            }
            fn alloc(&self, bytes: usize) -> Result<u64, DriverError> {
                <$driver>::alloc(self, bytes)
            }
            fn free(&self, ptr: u64) -> Result<(), DriverError> {
                <$driver>::free(self, ptr)
            }
            fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError> {
                <$driver>::copy_in(self, ptr, data)
            }
            fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError> {
                <$driver>::copy_out(self, ptr, len)
            }
            fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), DriverError> {
                <$driver>::memset(self, ptr, value, len)
            }
            fn synchronize(&self) -> Result<(), DriverError> {
                <$driver>::synchronize(self)
            }
        }
    };
}

forward_gpu_driver!(CudaDriver, TorchBuild::Cuda, compute_capability, |_, _| {
    Err(DriverError {
        call: "gcnArchName".into(),
        code: NOT_SUPPORTED,
        message:
            "CUDA_ERROR_NOT_SUPPORTED: gcnArchName is a HIP property; the CUDA driver has none"
                .into(),
    })
});
forward_gpu_driver!(HipDriver, TorchBuild::Hip, capability, |driver, ordinal| {
    driver.gcn_arch_name(ordinal)
});

/// Loads the first GPU driver present: CUDA, then HIP. `Err` lists why each was not available.
pub fn load_gpu_driver() -> Result<Box<dyn GpuDriver>, Vec<DriverLoadError>> {
    let cuda = match CudaDriver::load() {
        Ok(driver) => return Ok(Box::new(driver)),
        Err(error) => error,
    };
    let hip = match HipDriver::load() {
        Ok(driver) => return Ok(Box::new(driver)),
        Err(error) => error,
    };
    Err(vec![cuda, hip])
}
