//! The CUDA driver API (`libcuda.so.1`), in two of cudarc's three layers over `devsim-sys`.
//!
//! [`CudaApi`] is the raw layer: a symbol table ([`CudaSymbols`], each symbol named once) of the C
//! functions as resolved from the library, each typed by its `devsim_sys::cuda::fns` declaration.
//! [`CudaDriver`] is the `Result` layer and implements [`GpuDriver`] itself: each method makes one or
//! two driver calls and turns a failing `CUresult` into a [`DriverError`] with `.result()` (shared
//! plumbing in `status`). The safe layer is the live [`Runtime`](crate::runtime::Runtime) on top.
//!
//! A missing library or symbol is a [`LibraryError`], never a panic.

use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, PoisonError};

use devsim_sys::cuda as sys;
use devsim_sys::cuda::{CUcontext, CUdevice, CUdeviceptr, CUresult};

use super::driver::GpuDriver;
use super::library::{DriverLoadError, LibraryError, c_string, open_each, resolved_path};
use super::status::{self, Describe};
use super::symbols::{call, symbol_table};
use crate::runtime::DriverError;
use crate::vocab::TorchBuild;

/// The library's usual name, used in errors.
pub const CUDA_LIBRARY: &str = sys::LIBRARY;

/// Where the CUDA driver is looked for, in order: the loader's own search, then the folders the
/// NVIDIA packages and container toolkit install into. Fixed: nothing here comes from input.
pub const CUDA_CANDIDATES: [&str; 5] = [
    "libcuda.so.1",
    "libcuda.so",
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
];

symbol_table! {
    /// The driver's C functions, resolved once by name, each typed by its `devsim_sys::cuda::fns`
    /// declaration.
    pub struct CudaSymbols in sys {
        cuInit,
        cuDriverGetVersion,
        cuDeviceGetCount,
        cuDeviceGet,
        cuDeviceGetName,
        cuDeviceGetUuid_v2,
        cuDeviceGetAttribute,
        cuDevicePrimaryCtxRetain,
        cuCtxGetCurrent,
        cuCtxSetCurrent,
        cuCtxGetDevice,
        cuMemAlloc_v2,
        cuMemFree_v2,
        cuMemcpyHtoD_v2,
        cuMemcpyDtoH_v2,
        cuMemsetD8_v2,
        cuMemGetInfo_v2,
        cuCtxSynchronize,
        cuGetErrorName,
        cuGetErrorString,
    }
}

/// The raw layer: the driver's symbol table ([`CudaSymbols`], which it dereferences to) and the library
/// it came from.
///
/// Calling any of the functions is `unsafe`: the caller upholds the C API's contract. The library is
/// never unloaded (see [`super::library::Opened`]).
pub struct CudaApi {
    /// The candidate that opened.
    candidate: String,
    /// The file the loader mapped for it.
    path: String,
    /// Whether it is one of devsim's fake drivers (it exports [`super::library::FAKE_MARKER`]).
    fake: bool,
    symbols: CudaSymbols,
}

impl std::ops::Deref for CudaApi {
    type Target = CudaSymbols;

    fn deref(&self) -> &CudaSymbols {
        &self.symbols
    }
}

impl CudaApi {
    /// Opens the first of [`CUDA_CANDIDATES`] that loads and resolves every symbol. Calls nothing.
    pub fn load() -> Result<Self, LibraryError> {
        let opened = open_each(CUDA_LIBRARY, &CUDA_CANDIDATES, |lib, candidate| {
            // SAFETY: `devsim-sys` declares each symbol's C signature from `cuda.h`, and the library
            // is never unloaded.
            let symbols = unsafe { CudaSymbols::resolve(lib, candidate) };
            let symbols = symbols.map_err(|error| error.to_string())?;
            Ok(Self {
                candidate: candidate.to_owned(),
                path: resolved_path(symbols.cuInit as usize)
                    .unwrap_or_else(|| candidate.to_owned()),
                fake: super::library::is_fake(lib),
                symbols,
            })
        })?;
        Ok(opened.api)
    }

    /// The file the loader mapped (e.g. `/usr/lib/x86_64-linux-gnu/libcuda.so.1`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether it is one of devsim's fake drivers, never a real GPU.
    pub fn is_fake(&self) -> bool {
        self.fake
    }

    /// The candidate that opened, as written in [`CUDA_CANDIDATES`].
    pub fn candidate(&self) -> &str {
        &self.candidate
    }
}

/// A primary context this driver retained. Never released: torch shares the same primary context,
/// and the driver tears it down at process exit.
struct RetainedContext(CUcontext);

// SAFETY: a `CUcontext` is a handle the driver API accepts from any thread (the driver API is
// thread-safe; `cuCtxSetCurrent` exists to bind one context to several threads). The pointer is
// never dereferenced on the Rust side.
unsafe impl Send for RetainedContext {}

/// The `Result` layer over the CUDA driver API.
///
/// `Send + Sync`: the driver API is thread-safe, the function pointers are plain code addresses,
/// and the only mutable state, the retained primary contexts, sits behind a `Mutex`. The current
/// context is the driver's per-thread state: [`CudaDriver::set_device`] and the calls that use it
/// act on the calling thread, as `cudaSetDevice` does.
pub struct CudaDriver {
    api: CudaApi,
    /// The primary context retained for each ordinal, so each is retained once.
    contexts: Mutex<HashMap<u32, RetainedContext>>,
}

impl Describe for CudaDriver {
    const STATUS_TYPE: &'static str = "CUresult";
    const SUCCESS: i32 = sys::CUDA_SUCCESS;

    fn name(&self, code: i32) -> Option<String> {
        describe(self.api.cuGetErrorName, code)
    }

    fn text(&self, code: i32) -> Option<String> {
        describe(self.api.cuGetErrorString, code)
    }
}

/// Calls `cuGetErrorName` or `cuGetErrorString`; `None` if it fails or answers nothing.
fn describe(getter: sys::fns::cuGetErrorName, code: CUresult) -> Option<String> {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: the out-pointer is a live, writable `const char *`; an unknown code makes the
    // driver return `CUDA_ERROR_INVALID_VALUE` and leave it NULL.
    let status = unsafe { getter(code, &mut text) };
    if status != sys::CUDA_SUCCESS {
        return None;
    }
    // SAFETY: on success the driver points `text` at a static NUL-terminated string (or NULL).
    unsafe { status::c_text(text) }
}

impl CudaDriver {
    /// Opens the driver, resolves every symbol and calls `cuInit(0)`.
    pub fn load() -> Result<Self, DriverLoadError> {
        let driver = Self {
            api: CudaApi::load()?,
            contexts: Mutex::new(HashMap::new()),
        };
        // SAFETY: `cuInit` takes flags by value; 0 is the only valid value.
        let init = unsafe { call!(&driver, cuInit(0)) }.result();
        init.map_err(|source| DriverLoadError::Driver {
            library: driver.api.path.clone(),
            source,
        })?;
        Ok(driver)
    }

    /// The raw layer, for calls this layer does not wrap.
    pub fn api(&self) -> &CudaApi {
        &self.api
    }

    /// The driver's CUDA version, e.g. `13000` for CUDA 13.0 (`cuDriverGetVersion`).
    pub fn version(&self) -> Result<i32, DriverError> {
        let mut version: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        unsafe { call!(self, cuDriverGetVersion(&mut version)) }.result()?;
        Ok(version)
    }

    /// The ordinal of the calling thread's current context's device; `None` when no context is
    /// current (`cuCtxGetCurrent`, `cuCtxGetDevice`).
    pub fn context_device(&self) -> Result<Option<u32>, DriverError> {
        let mut context: CUcontext = std::ptr::null_mut();
        // SAFETY: the out-pointer is a live, writable `CUcontext`.
        unsafe { call!(self, cuCtxGetCurrent(&mut context)) }.result()?;
        if context.is_null() {
            return Ok(None);
        }
        let mut device: CUdevice = 0;
        // SAFETY: the out-pointer is a live, writable `CUdevice`; a context is current.
        unsafe { call!(self, cuCtxGetDevice(&mut device)) }.result()?;
        Ok(Some(self.ordinal_of(device)?))
    }

    /// The `CUdevice` handle for an ordinal (`cuDeviceGet`).
    fn device(&self, ordinal: u32) -> Result<CUdevice, DriverError> {
        let Ok(index) = c_int::try_from(ordinal) else {
            return Err(status::refused(
                self,
                "cuDeviceGet",
                sys::CUDA_ERROR_INVALID_DEVICE,
                format!("ordinal {ordinal} does not fit a C int"),
            ));
        };
        let mut device: CUdevice = 0;
        // SAFETY: the out-pointer is a live, writable `CUdevice`.
        unsafe { call!(self, cuDeviceGet(&mut device, index)) }.result()?;
        Ok(device)
    }

    /// The ordinal whose `cuDeviceGet` handle is `device`. The driver's handles equal the ordinals
    /// in practice, but the API does not promise it, so this looks the handle up and falls back to
    /// the handle itself.
    fn ordinal_of(&self, device: CUdevice) -> Result<u32, DriverError> {
        for ordinal in 0..self.device_count()? {
            if self.device(ordinal)? == device {
                return Ok(ordinal);
            }
        }
        Ok(u32::try_from(device).unwrap_or(0))
    }

    /// An integer device attribute (`cuDeviceGetAttribute`); a negative answer reads as 0.
    fn attribute(&self, ordinal: u32, attribute: c_int) -> Result<u32, DriverError> {
        let device = self.device(ordinal)?;
        let mut value: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`; `device` came from `cuDeviceGet`.
        unsafe { call!(self, cuDeviceGetAttribute(&mut value, attribute, device)) }.result()?;
        Ok(u32::try_from(value).unwrap_or(0))
    }
}

/// The `Result` layer is the live runtime's [`GpuDriver`]: each method makes one or a few driver calls.
impl GpuDriver for CudaDriver {
    fn build(&self) -> TorchBuild {
        TorchBuild::Cuda
    }

    fn path(&self) -> &str {
        self.api.path()
    }

    fn is_fake(&self) -> bool {
        self.api.is_fake()
    }

    /// How many CUDA devices the process sees (`cuDeviceGetCount`).
    fn device_count(&self) -> Result<u32, DriverError> {
        let mut count: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        unsafe { call!(self, cuDeviceGetCount(&mut count)) }.result()?;
        Ok(u32::try_from(count).unwrap_or(0))
    }

    /// A device's name, e.g. `NVIDIA H200` (`cuDeviceGetName`).
    fn name(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.device(ordinal)?;
        let mut buffer = [0u8; sys::NAME_BYTES];
        let len = c_int::try_from(buffer.len() - 1).unwrap_or(c_int::MAX);
        // SAFETY: the buffer is writable for `len + 1` bytes and zeroed, so it stays NUL-terminated
        // even if the driver fills all `len` bytes.
        unsafe {
            call!(
                self,
                cuDeviceGetName(buffer.as_mut_ptr().cast(), len, device)
            )
        }
        .result()?;
        Ok(c_string(&buffer))
    }

    /// A device's UUID as NVML and `CUDA_VISIBLE_DEVICES` spell it, e.g.
    /// `GPU-5e8a1c2d-0b3f-4a6e-9c7d-1f2e3d4c5b6a` (`cuDeviceGetUuid_v2`).
    fn uuid(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.device(ordinal)?;
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        // SAFETY: the out-pointer is a live, writable `CUuuid`; `device` came from `cuDeviceGet`.
        unsafe { call!(self, cuDeviceGetUuid_v2(&mut uuid, device)) }.result()?;
        Ok(nvidia_uuid(&uuid.bytes.map(|c| c.to_ne_bytes()[0])))
    }

    /// A device's compute capability as `(major, minor)`, e.g. `(9, 0)` (`cuDeviceGetAttribute`).
    fn capability(&self, ordinal: u32) -> Result<(u32, u32), DriverError> {
        let major = self.attribute(ordinal, sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(ordinal, sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major, minor))
    }

    /// CUDA has no `gcnArchName`: always `CUDA_ERROR_NOT_SUPPORTED`, without a driver call.
    fn gcn_arch_name(&self, _ordinal: u32) -> Result<String, DriverError> {
        Err(DriverError {
            call: "gcnArchName".into(),
            code: sys::CUDA_ERROR_NOT_SUPPORTED,
            message:
                "CUDA_ERROR_NOT_SUPPORTED: gcnArchName is a HIP property; the CUDA driver has none"
                    .into(),
        })
    }

    /// A device's opt-in shared memory per block, in bytes (`cuDeviceGetAttribute`).
    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.attribute(
            ordinal,
            sys::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )
    }

    /// The current context's device; with no context current, 0, as `cudaGetDevice` reports.
    fn current_device(&self) -> Result<u32, DriverError> {
        Ok(self.context_device()?.unwrap_or(0))
    }

    /// Retains `ordinal`'s primary context (once per ordinal) and makes it current on the calling
    /// thread, which is what `cudaSetDevice` does, so torch sees the same current device
    /// (`cuDeviceGet`, `cuDevicePrimaryCtxRetain`, `cuCtxSetCurrent`).
    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        let mut contexts = self.contexts.lock().unwrap_or_else(PoisonError::into_inner);
        let context = match contexts.get(&ordinal) {
            Some(retained) => retained.0,
            None => {
                let device = self.device(ordinal)?;
                let mut context: CUcontext = std::ptr::null_mut();
                // SAFETY: the out-pointer is a live, writable `CUcontext`; `device` came from
                // `cuDeviceGet`.
                unsafe { call!(self, cuDevicePrimaryCtxRetain(&mut context, device)) }.result()?;
                contexts.insert(ordinal, RetainedContext(context));
                context
            }
        };
        drop(contexts);
        // SAFETY: `context` is a primary context this driver retained and never released.
        unsafe { call!(self, cuCtxSetCurrent(context)) }.result()
    }

    /// Allocates `bytes` of device memory in the calling thread's current context (`cuMemAlloc_v2`).
    /// Without a current context the driver answers `CUDA_ERROR_INVALID_CONTEXT`.
    fn alloc(&self, bytes: usize) -> Result<u64, DriverError> {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: the out-pointer is a live, writable `CUdeviceptr`.
        unsafe { call!(self, cuMemAlloc_v2(&mut ptr, bytes)) }.result()?;
        Ok(ptr)
    }

    /// Frees memory returned by [`GpuDriver::alloc`] (`cuMemFree_v2`).
    fn free(&self, ptr: u64) -> Result<(), DriverError> {
        // SAFETY: the driver validates the address and reports an unknown one as an error; no host
        // memory is touched.
        unsafe { call!(self, cuMemFree_v2(ptr)) }.result()
    }

    /// Copies `data` to device address `ptr` (`cuMemcpyHtoD_v2`).
    fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError> {
        // SAFETY: the source is `data.len()` readable host bytes; the driver validates the device
        // range and reports a bad one as an error.
        unsafe { call!(self, cuMemcpyHtoD_v2(ptr, data.as_ptr().cast(), data.len())) }.result()
    }

    /// Copies `len` bytes from device address `ptr` to the host (`cuMemcpyDtoH_v2`).
    fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let mut data = vec![0u8; len];
        // SAFETY: the destination is `len` writable host bytes; the driver validates the device
        // range and reports a bad one as an error.
        unsafe { call!(self, cuMemcpyDtoH_v2(data.as_mut_ptr().cast(), ptr, len)) }.result()?;
        Ok(data)
    }

    /// Sets `len` bytes at device address `ptr` to `value` (`cuMemsetD8_v2`).
    fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), DriverError> {
        // SAFETY: only device memory is written; the driver validates the range.
        unsafe { call!(self, cuMemsetD8_v2(ptr, value, len)) }.result()
    }

    /// Waits for all work in the calling thread's current context (`cuCtxSynchronize`).
    fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: takes no arguments; without a current context the driver reports an error.
        unsafe { call!(self, cuCtxSynchronize()) }.result()
    }

    /// Device memory in use on the current context's device, in bytes: total minus free
    /// (`cuMemGetInfo_v2`).
    fn memory_in_use(&self) -> Result<u64, DriverError> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both out-pointers are live, writable `size_t`s.
        unsafe { call!(self, cuMemGetInfo_v2(&mut free, &mut total)) }.result()?;
        Ok(total.saturating_sub(free) as u64)
    }
}

/// 16 UUID bytes as NVIDIA spells them: `GPU-` and `8-4-4-4-12` lower-case hex digits.
pub fn nvidia_uuid(bytes: &[u8; 16]) -> String {
    let hex = |range: std::ops::Range<usize>| -> String {
        bytes[range].iter().map(|b| format!("{b:02x}")).collect()
    };
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

#[cfg(test)]
mod uuid_tests {
    use super::nvidia_uuid;

    #[test]
    fn uuids_read_as_nvml_spells_them() {
        let bytes: [u8; 16] = core::array::from_fn(|i| (i as u8) * 17);
        assert_eq!(
            nvidia_uuid(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }
}
