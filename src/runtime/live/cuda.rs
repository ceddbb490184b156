//! The CUDA driver API (`libcuda.so.1`), in two of cudarc's three layers over `devsim-sys`.
//!
//! [`CudaApi`] is the raw layer: the C functions as resolved from the library, each typed by its
//! `devsim_sys::cuda::fns` declaration. [`CudaDriver`] is the `Result` layer: each method makes one or
//! two driver calls and turns a failing `CUresult` into a [`DriverError`] (shared plumbing in
//! `status`). The safe layer is the live [`Runtime`](crate::runtime::Runtime) on top.
//!
//! A missing library or symbol is a [`LibraryError`], never a panic.

use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, PoisonError};

use devsim_sys::cuda as sys;
use devsim_sys::cuda::{CUcontext, CUdevice, CUdeviceptr, CUresult};
use libloading::Library;

use super::library::{DriverLoadError, LibraryError, c_string, open_each, resolve, resolved_path};
use super::status::{self, Describe};
use crate::runtime::DriverError;

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

/// The raw layer: the driver's C functions, resolved once, with their `devsim-sys` types.
///
/// Calling any of them is `unsafe`: the caller upholds the C API's contract. The library is never
/// unloaded (see [`super::library::Opened`]).
#[allow(non_snake_case, missing_docs)]
pub struct CudaApi {
    /// The candidate that opened.
    candidate: String,
    /// The file the loader mapped for it.
    path: String,
    /// Whether it is one of devsim's fake drivers (it exports [`super::library::FAKE_MARKER`]).
    fake: bool,
    pub cuInit: sys::fns::cuInit,
    pub cuDriverGetVersion: sys::fns::cuDriverGetVersion,
    pub cuDeviceGetCount: sys::fns::cuDeviceGetCount,
    pub cuDeviceGet: sys::fns::cuDeviceGet,
    pub cuDeviceGetName: sys::fns::cuDeviceGetName,
    pub cuDeviceGetUuid_v2: sys::fns::cuDeviceGetUuid_v2,
    pub cuDeviceGetAttribute: sys::fns::cuDeviceGetAttribute,
    pub cuDevicePrimaryCtxRetain: sys::fns::cuDevicePrimaryCtxRetain,
    pub cuCtxGetCurrent: sys::fns::cuCtxGetCurrent,
    pub cuCtxSetCurrent: sys::fns::cuCtxSetCurrent,
    pub cuCtxGetDevice: sys::fns::cuCtxGetDevice,
    pub cuMemAlloc_v2: sys::fns::cuMemAlloc_v2,
    pub cuMemFree_v2: sys::fns::cuMemFree_v2,
    pub cuMemcpyHtoD_v2: sys::fns::cuMemcpyHtoD_v2,
    pub cuMemcpyDtoH_v2: sys::fns::cuMemcpyDtoH_v2,
    pub cuMemsetD8_v2: sys::fns::cuMemsetD8_v2,
    pub cuMemGetInfo_v2: sys::fns::cuMemGetInfo_v2,
    pub cuCtxSynchronize: sys::fns::cuCtxSynchronize,
    pub cuGetErrorName: sys::fns::cuGetErrorName,
    pub cuGetErrorString: sys::fns::cuGetErrorString,
}

impl CudaApi {
    /// Opens the first of [`CUDA_CANDIDATES`] that loads and resolves every symbol. Calls nothing.
    pub fn load() -> Result<Self, LibraryError> {
        let opened = open_each(CUDA_LIBRARY, &CUDA_CANDIDATES, |lib, candidate| {
            Self::resolve_all(lib, candidate).map_err(|error| error.to_string())
        })?;
        Ok(opened.api)
    }

    fn resolve_all(lib: &Library, p: &str) -> Result<Self, LibraryError> {
        // SAFETY: each type is the symbol's C signature from `cuda.h` as `devsim-sys` declares it,
        // and the library is never unloaded.
        unsafe {
            let init: sys::fns::cuInit = resolve(lib, p, "cuInit")?;
            Ok(Self {
                cuInit: init,
                cuDriverGetVersion: resolve(lib, p, "cuDriverGetVersion")?,
                cuDeviceGetCount: resolve(lib, p, "cuDeviceGetCount")?,
                cuDeviceGet: resolve(lib, p, "cuDeviceGet")?,
                cuDeviceGetName: resolve(lib, p, "cuDeviceGetName")?,
                cuDeviceGetUuid_v2: resolve(lib, p, "cuDeviceGetUuid_v2")?,
                cuDeviceGetAttribute: resolve(lib, p, "cuDeviceGetAttribute")?,
                cuDevicePrimaryCtxRetain: resolve(lib, p, "cuDevicePrimaryCtxRetain")?,
                cuCtxGetCurrent: resolve(lib, p, "cuCtxGetCurrent")?,
                cuCtxSetCurrent: resolve(lib, p, "cuCtxSetCurrent")?,
                cuCtxGetDevice: resolve(lib, p, "cuCtxGetDevice")?,
                cuMemAlloc_v2: resolve(lib, p, "cuMemAlloc_v2")?,
                cuMemFree_v2: resolve(lib, p, "cuMemFree_v2")?,
                cuMemcpyHtoD_v2: resolve(lib, p, "cuMemcpyHtoD_v2")?,
                cuMemcpyDtoH_v2: resolve(lib, p, "cuMemcpyDtoH_v2")?,
                cuMemsetD8_v2: resolve(lib, p, "cuMemsetD8_v2")?,
                cuMemGetInfo_v2: resolve(lib, p, "cuMemGetInfo_v2")?,
                cuCtxSynchronize: resolve(lib, p, "cuCtxSynchronize")?,
                cuGetErrorName: resolve(lib, p, "cuGetErrorName")?,
                cuGetErrorString: resolve(lib, p, "cuGetErrorString")?,
                candidate: p.to_owned(),
                path: resolved_path(init as usize).unwrap_or_else(|| p.to_owned()),
                fake: super::library::is_fake(lib),
            })
        }
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
fn describe(
    getter: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
    code: CUresult,
) -> Option<String> {
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
        let code = unsafe { (driver.api.cuInit)(0) };
        status::check(&driver, "cuInit", code).map_err(|source| DriverLoadError::Driver {
            library: driver.api.path.clone(),
            source,
        })?;
        Ok(driver)
    }

    /// The file the loader mapped.
    pub fn path(&self) -> &str {
        self.api.path()
    }

    /// Whether the library is one of devsim's fake drivers.
    pub fn is_fake(&self) -> bool {
        self.api.is_fake()
    }

    /// The raw layer, for calls this layer does not wrap.
    pub fn api(&self) -> &CudaApi {
        &self.api
    }

    /// The driver's CUDA version, e.g. `13000` for CUDA 13.0 (`cuDriverGetVersion`).
    pub fn version(&self) -> Result<i32, DriverError> {
        let mut version: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { (self.api.cuDriverGetVersion)(&mut version) };
        status::check(self, "cuDriverGetVersion", code)?;
        Ok(version)
    }

    /// How many CUDA devices the process sees (`cuDeviceGetCount`).
    pub fn device_count(&self) -> Result<u32, DriverError> {
        let mut count: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { (self.api.cuDeviceGetCount)(&mut count) };
        status::check(self, "cuDeviceGetCount", code)?;
        Ok(u32::try_from(count).unwrap_or(0))
    }

    /// A device's name, e.g. `NVIDIA H200` (`cuDeviceGetName`).
    pub fn name(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.device(ordinal)?;
        let mut buffer = [0u8; sys::NAME_BYTES];
        let len = c_int::try_from(buffer.len() - 1).unwrap_or(c_int::MAX);
        // SAFETY: the buffer is writable for `len + 1` bytes and zeroed, so it stays NUL-terminated
        // even if the driver fills all `len` bytes.
        let code = unsafe { (self.api.cuDeviceGetName)(buffer.as_mut_ptr().cast(), len, device) };
        status::check(self, "cuDeviceGetName", code)?;
        Ok(c_string(&buffer))
    }

    /// A device's UUID as NVML and `CUDA_VISIBLE_DEVICES` spell it, e.g.
    /// `GPU-5e8a1c2d-0b3f-4a6e-9c7d-1f2e3d4c5b6a` (`cuDeviceGetUuid_v2`).
    pub fn uuid(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.device(ordinal)?;
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        // SAFETY: the out-pointer is a live, writable `CUuuid`; `device` came from `cuDeviceGet`.
        let code = unsafe { (self.api.cuDeviceGetUuid_v2)(&mut uuid, device) };
        status::check(self, "cuDeviceGetUuid_v2", code)?;
        Ok(nvidia_uuid(&uuid.bytes.map(|c| c.to_ne_bytes()[0])))
    }

    /// A device's compute capability as `(major, minor)`, e.g. `(9, 0)` (`cuDeviceGetAttribute`).
    pub fn compute_capability(&self, ordinal: u32) -> Result<(u32, u32), DriverError> {
        let major = self.attribute(ordinal, sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(ordinal, sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major, minor))
    }

    /// A device's opt-in shared memory per block, in bytes (`cuDeviceGetAttribute`).
    pub fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.attribute(
            ordinal,
            sys::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )
    }

    /// The ordinal of the calling thread's current context's device; `None` when no context is
    /// current (`cuCtxGetCurrent`, `cuCtxGetDevice`).
    pub fn current_device(&self) -> Result<Option<u32>, DriverError> {
        let mut context: CUcontext = std::ptr::null_mut();
        // SAFETY: the out-pointer is a live, writable `CUcontext`.
        let code = unsafe { (self.api.cuCtxGetCurrent)(&mut context) };
        status::check(self, "cuCtxGetCurrent", code)?;
        if context.is_null() {
            return Ok(None);
        }
        let mut device: CUdevice = 0;
        // SAFETY: the out-pointer is a live, writable `CUdevice`; a context is current.
        let code = unsafe { (self.api.cuCtxGetDevice)(&mut device) };
        status::check(self, "cuCtxGetDevice", code)?;
        Ok(Some(self.ordinal_of(device)?))
    }

    /// Retains `ordinal`'s primary context (once per ordinal) and makes it current on the calling
    /// thread, which is what `cudaSetDevice` does, so torch sees the same current device
    /// (`cuDeviceGet`, `cuDevicePrimaryCtxRetain`, `cuCtxSetCurrent`).
    pub fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        let mut contexts = self.contexts.lock().unwrap_or_else(PoisonError::into_inner);
        let context = match contexts.get(&ordinal) {
            Some(retained) => retained.0,
            None => {
                let device = self.device(ordinal)?;
                let mut context: CUcontext = std::ptr::null_mut();
                // SAFETY: the out-pointer is a live, writable `CUcontext`; `device` came from
                // `cuDeviceGet`.
                let code = unsafe { (self.api.cuDevicePrimaryCtxRetain)(&mut context, device) };
                status::check(self, "cuDevicePrimaryCtxRetain", code)?;
                contexts.insert(ordinal, RetainedContext(context));
                context
            }
        };
        drop(contexts);
        // SAFETY: `context` is a primary context this driver retained and never released.
        let code = unsafe { (self.api.cuCtxSetCurrent)(context) };
        status::check(self, "cuCtxSetCurrent", code)
    }

    /// Allocates `bytes` of device memory in the calling thread's current context (`cuMemAlloc_v2`).
    /// Without a current context the driver answers `CUDA_ERROR_INVALID_CONTEXT`.
    pub fn alloc(&self, bytes: usize) -> Result<u64, DriverError> {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: the out-pointer is a live, writable `CUdeviceptr`.
        let code = unsafe { (self.api.cuMemAlloc_v2)(&mut ptr, bytes) };
        status::check(self, "cuMemAlloc_v2", code)?;
        Ok(ptr)
    }

    /// Frees memory returned by [`CudaDriver::alloc`] (`cuMemFree_v2`).
    pub fn free(&self, ptr: u64) -> Result<(), DriverError> {
        // SAFETY: the driver validates the address and reports an unknown one as an error; no host
        // memory is touched.
        let code = unsafe { (self.api.cuMemFree_v2)(ptr) };
        status::check(self, "cuMemFree_v2", code)
    }

    /// Copies `data` to device address `ptr` (`cuMemcpyHtoD_v2`).
    pub fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError> {
        // SAFETY: the source is `data.len()` readable host bytes; the driver validates the device
        // range and reports a bad one as an error.
        let code = unsafe { (self.api.cuMemcpyHtoD_v2)(ptr, data.as_ptr().cast(), data.len()) };
        status::check(self, "cuMemcpyHtoD_v2", code)
    }

    /// Copies `len` bytes from device address `ptr` to the host (`cuMemcpyDtoH_v2`).
    pub fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let mut data = vec![0u8; len];
        // SAFETY: the destination is `len` writable host bytes; the driver validates the device
        // range and reports a bad one as an error.
        let code = unsafe { (self.api.cuMemcpyDtoH_v2)(data.as_mut_ptr().cast(), ptr, len) };
        status::check(self, "cuMemcpyDtoH_v2", code)?;
        Ok(data)
    }

    /// Sets `len` bytes at device address `ptr` to `value` (`cuMemsetD8_v2`).
    pub fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), DriverError> {
        // SAFETY: only device memory is written; the driver validates the range.
        let code = unsafe { (self.api.cuMemsetD8_v2)(ptr, value, len) };
        status::check(self, "cuMemsetD8_v2", code)
    }

    /// Device memory in use on the current context's device, in bytes: total minus free
    /// (`cuMemGetInfo_v2`).
    pub fn memory_in_use(&self) -> Result<u64, DriverError> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both out-pointers are live, writable `size_t`s.
        let code = unsafe { (self.api.cuMemGetInfo_v2)(&mut free, &mut total) };
        status::check(self, "cuMemGetInfo_v2", code)?;
        Ok(total.saturating_sub(free) as u64)
    }

    /// Waits for all work in the calling thread's current context (`cuCtxSynchronize`).
    pub fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: takes no arguments; without a current context the driver reports an error.
        let code = unsafe { (self.api.cuCtxSynchronize)() };
        status::check(self, "cuCtxSynchronize", code)
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
        let code = unsafe { (self.api.cuDeviceGet)(&mut device, index) };
        status::check(self, "cuDeviceGet", code)?;
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
        let code = unsafe { (self.api.cuDeviceGetAttribute)(&mut value, attribute, device) };
        status::check(self, "cuDeviceGetAttribute", code)?;
        Ok(u32::try_from(value).unwrap_or(0))
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
