//! The CUDA driver API (`libcuda.so.1`), in two of cudarc's three layers.
//!
//! [`CudaApi`] is the raw layer: the C functions as resolved from the library. [`CudaDriver`] is the
//! `Result` layer: each method makes one or two driver calls and turns a failing `CUresult` into a
//! [`DriverError`] carrying the C function's name, the code and the driver's own
//! `NAME: description` message. The safe layer is the live [`Runtime`](crate::runtime::Runtime)
//! built on top of this one.
//!
//! A missing library or symbol is a [`LibraryError`], never a panic.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::mem::ManuallyDrop;
use std::sync::{Mutex, PoisonError};

use libloading::Library;

use super::library::{DriverLoadError, LibraryError, c_string, open_first, resolve};
use crate::runtime::DriverError;

/// The library's usual name, used in errors.
pub const CUDA_LIBRARY: &str = "libcuda.so.1";

/// Where the CUDA driver is looked for, in order: the loader's own search, then the folders the
/// NVIDIA packages and container toolkit install into. Fixed: nothing here comes from input.
pub const CUDA_CANDIDATES: [&str; 5] = [
    "libcuda.so.1",
    "libcuda.so",
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
];

/// `CUresult`, the driver API's status code (`cuda.h`: `typedef enum cudaError_enum CUresult`).
pub type CUresult = c_int;
/// `CUdevice`, a device handle (`cuda.h`: `typedef int CUdevice_v1`).
pub type CUdevice = c_int;
/// `CUcontext`, an opaque context handle (`cuda.h`: `typedef struct CUctx_st *CUcontext`).
pub type CUcontext = *mut c_void;
/// `CUdeviceptr`, a device address (`cuda.h`: `typedef unsigned long long CUdeviceptr_v2` on 64-bit).
pub type CUdeviceptr = u64;

// Every number this module passes to or expects from the driver, from `cuda.h` (CUDA 12/13).
/// `CUDA_SUCCESS` (`cudaError_enum`).
const CUDA_SUCCESS: CUresult = 0;
/// `CUDA_ERROR_INVALID_DEVICE` (`cudaError_enum`), reported for an ordinal that does not fit a C int.
const CUDA_ERROR_INVALID_DEVICE: CUresult = 101;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` (`CUdevice_attribute`).
const ATTR_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR` (`CUdevice_attribute`).
const ATTR_COMPUTE_CAPABILITY_MINOR: c_int = 76;
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN` (`CUdevice_attribute`).
const ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
/// Buffer for `cuDeviceGetName`; CUDA's own `cudaDeviceProp::name` is `char[256]`.
const NAME_BUFFER_BYTES: usize = 256;

/// The raw layer: the driver's C functions, resolved once, with their real signatures.
///
/// Calling any of them is `unsafe`: the caller upholds the C API's contract.
#[allow(non_snake_case)]
pub struct CudaApi {
    /// Never unloaded: after `cuInit` the driver runs threads inside the library's code, so
    /// `dlclose` could unmap code that is still running (cudarc keeps it in a static for the same
    /// reason). Each load leaks one `dlopen` reference.
    _library: ManuallyDrop<Library>,
    /// The candidate that opened.
    path: String,
    /// `CUresult cuInit(unsigned int Flags)`.
    pub cuInit: unsafe extern "C" fn(c_uint) -> CUresult,
    /// `CUresult cuDriverGetVersion(int *driverVersion)`.
    pub cuDriverGetVersion: unsafe extern "C" fn(*mut c_int) -> CUresult,
    /// `CUresult cuDeviceGetCount(int *count)`.
    pub cuDeviceGetCount: unsafe extern "C" fn(*mut c_int) -> CUresult,
    /// `CUresult cuDeviceGet(CUdevice *device, int ordinal)`.
    pub cuDeviceGet: unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
    /// `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`.
    pub cuDeviceGetName: unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> CUresult,
    /// `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`.
    pub cuDeviceGetAttribute: unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CUresult,
    /// `CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)`.
    pub cuDevicePrimaryCtxRetain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult,
    /// `CUresult cuCtxGetCurrent(CUcontext *pctx)`.
    pub cuCtxGetCurrent: unsafe extern "C" fn(*mut CUcontext) -> CUresult,
    /// `CUresult cuCtxSetCurrent(CUcontext ctx)`.
    pub cuCtxSetCurrent: unsafe extern "C" fn(CUcontext) -> CUresult,
    /// `CUresult cuCtxGetDevice(CUdevice *device)`.
    pub cuCtxGetDevice: unsafe extern "C" fn(*mut CUdevice) -> CUresult,
    /// `CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)`.
    pub cuMemAlloc_v2: unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CUresult,
    /// `CUresult cuMemFree_v2(CUdeviceptr dptr)`.
    pub cuMemFree_v2: unsafe extern "C" fn(CUdeviceptr) -> CUresult,
    /// `CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)`.
    pub cuMemcpyHtoD_v2: unsafe extern "C" fn(CUdeviceptr, *const c_void, usize) -> CUresult,
    /// `CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)`.
    pub cuMemcpyDtoH_v2: unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize) -> CUresult,
    /// `CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)`.
    pub cuMemsetD8_v2: unsafe extern "C" fn(CUdeviceptr, u8, usize) -> CUresult,
    /// `CUresult cuCtxSynchronize(void)`.
    pub cuCtxSynchronize: unsafe extern "C" fn() -> CUresult,
    /// `CUresult cuGetErrorName(CUresult error, const char **pStr)`.
    pub cuGetErrorName: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
    /// `CUresult cuGetErrorString(CUresult error, const char **pStr)`.
    pub cuGetErrorString: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
}

impl CudaApi {
    /// Opens the first of [`CUDA_CANDIDATES`] that loads and resolves every symbol. Calls nothing.
    pub fn load() -> Result<Self, LibraryError> {
        let (library, path) = open_first(CUDA_LIBRARY, &CUDA_CANDIDATES)?;
        let lib = &library;
        let p = path.as_str();
        // SAFETY: each type below is the symbol's C signature from `cuda.h` (documented on the
        // field), and the library is kept loaded for the life of the struct (it is never unloaded).
        unsafe {
            Ok(Self {
                cuInit: resolve(lib, p, "cuInit")?,
                cuDriverGetVersion: resolve(lib, p, "cuDriverGetVersion")?,
                cuDeviceGetCount: resolve(lib, p, "cuDeviceGetCount")?,
                cuDeviceGet: resolve(lib, p, "cuDeviceGet")?,
                cuDeviceGetName: resolve(lib, p, "cuDeviceGetName")?,
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
                cuCtxSynchronize: resolve(lib, p, "cuCtxSynchronize")?,
                cuGetErrorName: resolve(lib, p, "cuGetErrorName")?,
                cuGetErrorString: resolve(lib, p, "cuGetErrorString")?,
                path,
                _library: ManuallyDrop::new(library),
            })
        }
    }

    /// The candidate that opened.
    pub fn path(&self) -> &str {
        &self.path
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

impl CudaDriver {
    /// Opens the driver, resolves every symbol and calls `cuInit(0)`.
    pub fn load() -> Result<Self, DriverLoadError> {
        let api = CudaApi::load()?;
        let driver = Self {
            api,
            contexts: Mutex::new(HashMap::new()),
        };
        // SAFETY: `cuInit` takes flags by value; 0 is the only valid value.
        let code = unsafe { (driver.api.cuInit)(0) };
        driver
            .check("cuInit", code)
            .map_err(|source| DriverLoadError::Driver {
                library: driver.api.path.clone(),
                source,
            })?;
        Ok(driver)
    }

    /// The candidate library that opened.
    pub fn path(&self) -> &str {
        self.api.path()
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
        self.check("cuDriverGetVersion", code)?;
        Ok(version)
    }

    /// How many CUDA devices the process sees (`cuDeviceGetCount`).
    pub fn device_count(&self) -> Result<u32, DriverError> {
        let mut count: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { (self.api.cuDeviceGetCount)(&mut count) };
        self.check("cuDeviceGetCount", code)?;
        Ok(u32::try_from(count).unwrap_or(0))
    }

    /// A device's name, e.g. `NVIDIA H200` (`cuDeviceGetName`).
    pub fn name(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.device(ordinal)?;
        let mut buffer = [0u8; NAME_BUFFER_BYTES];
        let len = c_int::try_from(buffer.len() - 1).unwrap_or(c_int::MAX);
        // SAFETY: the buffer is writable for `len + 1` bytes and zeroed, so it stays NUL-terminated
        // even if the driver fills all `len` bytes.
        let code = unsafe { (self.api.cuDeviceGetName)(buffer.as_mut_ptr().cast(), len, device) };
        self.check("cuDeviceGetName", code)?;
        Ok(c_string(&buffer))
    }

    /// A device's compute capability as `(major, minor)`, e.g. `(9, 0)` (`cuDeviceGetAttribute`).
    pub fn compute_capability(&self, ordinal: u32) -> Result<(u32, u32), DriverError> {
        let major = self.attribute(ordinal, ATTR_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(ordinal, ATTR_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major, minor))
    }

    /// A device's opt-in shared memory per block, in bytes (`cuDeviceGetAttribute`).
    pub fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.attribute(ordinal, ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    }

    /// The ordinal of the calling thread's current context's device; `None` when no context is
    /// current (`cuCtxGetCurrent`, `cuCtxGetDevice`).
    pub fn current_device(&self) -> Result<Option<u32>, DriverError> {
        let mut context: CUcontext = std::ptr::null_mut();
        // SAFETY: the out-pointer is a live, writable `CUcontext`.
        let code = unsafe { (self.api.cuCtxGetCurrent)(&mut context) };
        self.check("cuCtxGetCurrent", code)?;
        if context.is_null() {
            return Ok(None);
        }
        let mut device: CUdevice = 0;
        // SAFETY: the out-pointer is a live, writable `CUdevice`; a context is current.
        let code = unsafe { (self.api.cuCtxGetDevice)(&mut device) };
        self.check("cuCtxGetDevice", code)?;
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
                self.check("cuDevicePrimaryCtxRetain", code)?;
                contexts.insert(ordinal, RetainedContext(context));
                context
            }
        };
        drop(contexts);
        // SAFETY: `context` is a primary context this driver retained and never released.
        let code = unsafe { (self.api.cuCtxSetCurrent)(context) };
        self.check("cuCtxSetCurrent", code)
    }

    /// Allocates `bytes` of device memory in the calling thread's current context (`cuMemAlloc_v2`).
    /// Without a current context the driver answers `CUDA_ERROR_INVALID_CONTEXT`.
    pub fn alloc(&self, bytes: usize) -> Result<u64, DriverError> {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: the out-pointer is a live, writable `CUdeviceptr`.
        let code = unsafe { (self.api.cuMemAlloc_v2)(&mut ptr, bytes) };
        self.check("cuMemAlloc_v2", code)?;
        Ok(ptr)
    }

    /// Frees memory returned by [`CudaDriver::alloc`] (`cuMemFree_v2`).
    pub fn free(&self, ptr: u64) -> Result<(), DriverError> {
        // SAFETY: the driver validates the address and reports an unknown one as an error; no host
        // memory is touched.
        let code = unsafe { (self.api.cuMemFree_v2)(ptr) };
        self.check("cuMemFree_v2", code)
    }

    /// Copies `data` to device address `ptr` (`cuMemcpyHtoD_v2`).
    pub fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError> {
        // SAFETY: the source is `data.len()` readable host bytes; the driver validates the device
        // range and reports a bad one as an error.
        let code = unsafe { (self.api.cuMemcpyHtoD_v2)(ptr, data.as_ptr().cast(), data.len()) };
        self.check("cuMemcpyHtoD_v2", code)
    }

    /// Copies `len` bytes from device address `ptr` to the host (`cuMemcpyDtoH_v2`).
    pub fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let mut data = vec![0u8; len];
        // SAFETY: the destination is `len` writable host bytes; the driver validates the device
        // range and reports a bad one as an error.
        let code = unsafe { (self.api.cuMemcpyDtoH_v2)(data.as_mut_ptr().cast(), ptr, len) };
        self.check("cuMemcpyDtoH_v2", code)?;
        Ok(data)
    }

    /// Sets `len` bytes at device address `ptr` to `value` (`cuMemsetD8_v2`).
    pub fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), DriverError> {
        // SAFETY: only device memory is written; the driver validates the range.
        let code = unsafe { (self.api.cuMemsetD8_v2)(ptr, value, len) };
        self.check("cuMemsetD8_v2", code)
    }

    /// Waits for all work in the calling thread's current context (`cuCtxSynchronize`).
    pub fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: takes no arguments; without a current context the driver reports an error.
        let code = unsafe { (self.api.cuCtxSynchronize)() };
        self.check("cuCtxSynchronize", code)
    }

    /// The `CUdevice` handle for an ordinal (`cuDeviceGet`).
    fn device(&self, ordinal: u32) -> Result<CUdevice, DriverError> {
        let Ok(index) = c_int::try_from(ordinal) else {
            let mut error = self.error("cuDeviceGet", CUDA_ERROR_INVALID_DEVICE);
            error.message = format!("{} (ordinal {ordinal} does not fit a C int)", error.message);
            return Err(error);
        };
        let mut device: CUdevice = 0;
        // SAFETY: the out-pointer is a live, writable `CUdevice`.
        let code = unsafe { (self.api.cuDeviceGet)(&mut device, index) };
        self.check("cuDeviceGet", code)?;
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
        self.check("cuDeviceGetAttribute", code)?;
        Ok(u32::try_from(value).unwrap_or(0))
    }

    /// `Ok` for `CUDA_SUCCESS`, else the call's [`DriverError`].
    fn check(&self, call: &str, code: CUresult) -> Result<(), DriverError> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, code))
        }
    }

    /// A [`DriverError`] with the driver's own `NAME: description`, or `CUresult N` when the driver
    /// cannot describe the code.
    fn error(&self, call: &str, code: CUresult) -> DriverError {
        let name = self.describe(self.api.cuGetErrorName, code);
        let text = self.describe(self.api.cuGetErrorString, code);
        let message = match (name, text) {
            (Some(name), Some(text)) => format!("{name}: {text}"),
            (Some(name), None) => name,
            _ => format!("CUresult {code}"),
        };
        DriverError {
            call: call.to_owned(),
            code,
            message,
        }
    }

    /// Calls `cuGetErrorName` or `cuGetErrorString`; `None` if it fails or answers nothing.
    fn describe(
        &self,
        getter: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
        code: CUresult,
    ) -> Option<String> {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the out-pointer is a live, writable `const char *`; an unknown code makes the
        // driver return `CUDA_ERROR_INVALID_VALUE` and leave it NULL.
        let status = unsafe { getter(code, &mut text) };
        if status != CUDA_SUCCESS || text.is_null() {
            return None;
        }
        // SAFETY: on success the driver points `text` at a static NUL-terminated string.
        Some(
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
        )
    }
}
