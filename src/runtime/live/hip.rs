//! The HIP runtime API (`libamdhip64.so`, ROCm 6 and later), in two of cudarc's three layers.
//!
//! [`HipApi`] is the raw layer: the C functions as resolved from the library. [`HipDriver`] is the
//! `Result` layer: each method makes one or two runtime calls and turns a failing `hipError_t` into
//! a [`DriverError`] carrying the C function's name, the code and HIP's own `NAME: description`
//! message. The safe layer is the live [`Runtime`](crate::runtime::Runtime) built on top of this one.
//!
//! A missing library or symbol is a [`LibraryError`], never a panic.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::mem::ManuallyDrop;

use libloading::Library;

use super::library::{DriverLoadError, LibraryError, c_string, open_first, resolve};
use crate::runtime::DriverError;

/// The library's usual name, used in errors.
pub const HIP_LIBRARY: &str = "libamdhip64.so";

/// Where the HIP runtime is looked for, in order: the loader's own search, then ROCm's default
/// install folder. Fixed: nothing here comes from input.
pub const HIP_CANDIDATES: [&str; 6] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "/opt/rocm/lib/libamdhip64.so",
    "/opt/rocm/lib/libamdhip64.so.7",
    "/opt/rocm/lib/libamdhip64.so.6",
];

/// `hipError_t`, HIP's status code (a C enum, `int`-sized).
pub type HipError = c_int;

// Every number this module passes to or expects from HIP. Sources: `hip/hip_runtime_api.h` and
// `hip/driver_types.h` of ROCm 6/7 (ROCm/HIP, ROCm/clr), cross-checked against the `static_assert`
// tables and generated bindings that other projects keep of the same enums.
/// `hipSuccess` (`hipError_t`).
const HIP_SUCCESS: HipError = 0;
/// `hipErrorNoDevice` (`hipError_t`): what `hipGetDeviceCount` answers when there is no GPU.
const HIP_ERROR_NO_DEVICE: HipError = 100;
/// `hipErrorInvalidDevice` (`hipError_t`), reported for an ordinal that does not fit a C int.
const HIP_ERROR_INVALID_DEVICE: HipError = 101;
/// `hipErrorInvalidValue` (`hipError_t`), reported for a device address that does not fit a pointer.
const HIP_ERROR_INVALID_VALUE: HipError = 1;
/// `hipDeviceAttributeComputeCapabilityMajor` (`hipDeviceAttribute_t`, ROCm 6 renumbering).
const ATTR_COMPUTE_CAPABILITY_MAJOR: c_int = 23;
/// `hipDeviceAttributeComputeCapabilityMinor` (`hipDeviceAttribute_t`, ROCm 6 renumbering).
const ATTR_COMPUTE_CAPABILITY_MINOR: c_int = 61;
/// `hipDeviceAttributeSharedMemPerBlockOptin` (`hipDeviceAttribute_t`, ROCm 6 renumbering).
const ATTR_SHARED_MEM_PER_BLOCK_OPTIN: c_int = 75;
/// `hipMemcpyHostToDevice` (`hipMemcpyKind`).
const MEMCPY_HOST_TO_DEVICE: c_int = 1;
/// `hipMemcpyDeviceToHost` (`hipMemcpyKind`).
const MEMCPY_DEVICE_TO_HOST: c_int = 2;
/// Buffer for `hipDeviceGetName`; `hipDeviceProp_tR0600::name` is `char[256]`.
const NAME_BUFFER_BYTES: usize = 256;
/// Bytes reserved for a `hipDeviceProp_tR0600`. The struct is 1472 bytes on x86-64 Linux; the
/// buffer is generous so a runtime that writes a slightly larger struct cannot overrun it.
const PROP_BUFFER_BYTES: usize = 4096;
/// Offset of `hipDeviceProp_tR0600::gcnArchName` (`char[256]`) on x86-64 Linux. It follows
/// `int reserved[63]; int hipReserved[32];` at the end of the CUDA-compatible fields. LLVM's
/// `clang/tools/offload-arch/AMDGPUArchByHIP.cpp` declares the struct as `char padding[1160];
/// char gcnArchName[256]; ...` (1472 bytes); recomputed here with `offsetof` on the full field list
/// of `hip_runtime_api.h` (ROCm 6), which also gives 1160 and 1472.
const PROP_GCN_ARCH_NAME_OFFSET: usize = 1160;
/// Length of `hipDeviceProp_tR0600::gcnArchName`.
const PROP_GCN_ARCH_NAME_BYTES: usize = 256;

/// The raw layer: HIP's C functions, resolved once, with their real signatures.
///
/// Calling any of them is `unsafe`: the caller upholds the C API's contract.
#[allow(non_snake_case)]
pub struct HipApi {
    /// Never unloaded: after `hipInit` the runtime runs threads inside the library's code, so
    /// `dlclose` could unmap code that is still running. Each load leaks one `dlopen` reference.
    _library: ManuallyDrop<Library>,
    /// The candidate that opened.
    path: String,
    /// `hipError_t hipInit(unsigned int flags)`.
    pub hipInit: unsafe extern "C" fn(c_uint) -> HipError,
    /// `hipError_t hipDriverGetVersion(int *driverVersion)`.
    pub hipDriverGetVersion: unsafe extern "C" fn(*mut c_int) -> HipError,
    /// `hipError_t hipGetDeviceCount(int *count)`.
    pub hipGetDeviceCount: unsafe extern "C" fn(*mut c_int) -> HipError,
    /// `hipError_t hipGetDevice(int *deviceId)`.
    pub hipGetDevice: unsafe extern "C" fn(*mut c_int) -> HipError,
    /// `hipError_t hipSetDevice(int deviceId)`.
    pub hipSetDevice: unsafe extern "C" fn(c_int) -> HipError,
    /// `hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device)`.
    pub hipDeviceGetName: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipError,
    /// `hipError_t hipDeviceGetAttribute(int *pi, hipDeviceAttribute_t attr, int deviceId)`.
    pub hipDeviceGetAttribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> HipError,
    /// `hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600 *prop, int deviceId)`.
    pub hipGetDevicePropertiesR0600: unsafe extern "C" fn(*mut c_void, c_int) -> HipError,
    /// `hipError_t hipMalloc(void **ptr, size_t size)`.
    pub hipMalloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> HipError,
    /// `hipError_t hipFree(void *ptr)`.
    pub hipFree: unsafe extern "C" fn(*mut c_void) -> HipError,
    /// `hipError_t hipMemcpy(void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind)`.
    pub hipMemcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> HipError,
    /// `hipError_t hipMemset(void *dst, int value, size_t sizeBytes)`.
    pub hipMemset: unsafe extern "C" fn(*mut c_void, c_int, usize) -> HipError,
    /// `hipError_t hipDeviceSynchronize(void)`.
    pub hipDeviceSynchronize: unsafe extern "C" fn() -> HipError,
    /// `const char *hipGetErrorName(hipError_t hip_error)`.
    pub hipGetErrorName: unsafe extern "C" fn(HipError) -> *const c_char,
    /// `const char *hipGetErrorString(hipError_t hipError)`.
    pub hipGetErrorString: unsafe extern "C" fn(HipError) -> *const c_char,
}

impl HipApi {
    /// Opens the first of [`HIP_CANDIDATES`] that loads and resolves every symbol. Calls nothing.
    pub fn load() -> Result<Self, LibraryError> {
        let (library, path) = open_first(HIP_LIBRARY, &HIP_CANDIDATES)?;
        let lib = &library;
        let p = path.as_str();
        // SAFETY: each type below is the symbol's C signature from `hip_runtime_api.h` (documented
        // on the field; C enums are `int`), and the library is never unloaded.
        unsafe {
            Ok(Self {
                hipInit: resolve(lib, p, "hipInit")?,
                hipDriverGetVersion: resolve(lib, p, "hipDriverGetVersion")?,
                hipGetDeviceCount: resolve(lib, p, "hipGetDeviceCount")?,
                hipGetDevice: resolve(lib, p, "hipGetDevice")?,
                hipSetDevice: resolve(lib, p, "hipSetDevice")?,
                hipDeviceGetName: resolve(lib, p, "hipDeviceGetName")?,
                hipDeviceGetAttribute: resolve(lib, p, "hipDeviceGetAttribute")?,
                hipGetDevicePropertiesR0600: resolve(lib, p, "hipGetDevicePropertiesR0600")?,
                hipMalloc: resolve(lib, p, "hipMalloc")?,
                hipFree: resolve(lib, p, "hipFree")?,
                hipMemcpy: resolve(lib, p, "hipMemcpy")?,
                hipMemset: resolve(lib, p, "hipMemset")?,
                hipDeviceSynchronize: resolve(lib, p, "hipDeviceSynchronize")?,
                hipGetErrorName: resolve(lib, p, "hipGetErrorName")?,
                hipGetErrorString: resolve(lib, p, "hipGetErrorString")?,
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

/// A zeroed, 8-byte-aligned buffer that `hipGetDevicePropertiesR0600` fills.
#[repr(C, align(8))]
struct PropBuffer([u8; PROP_BUFFER_BYTES]);

/// The `Result` layer over the HIP runtime API.
///
/// `Send + Sync` (automatically): the HIP runtime is thread-safe and this struct holds only the
/// library and function pointers. The current device is HIP's per-thread state:
/// [`HipDriver::set_device`] and the calls that use it act on the calling thread.
pub struct HipDriver {
    api: HipApi,
}

impl HipDriver {
    /// Opens the runtime, resolves every symbol and calls `hipInit(0)`.
    pub fn load() -> Result<Self, DriverLoadError> {
        let driver = Self {
            api: HipApi::load()?,
        };
        // SAFETY: `hipInit` takes flags by value; 0 is the only valid value.
        let code = unsafe { (driver.api.hipInit)(0) };
        driver
            .check("hipInit", code)
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
    pub fn api(&self) -> &HipApi {
        &self.api
    }

    /// The HIP driver version (`hipDriverGetVersion`).
    pub fn version(&self) -> Result<i32, DriverError> {
        let mut version: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { (self.api.hipDriverGetVersion)(&mut version) };
        self.check("hipDriverGetVersion", code)?;
        Ok(version)
    }

    /// How many HIP devices the process sees (`hipGetDeviceCount`). HIP answers
    /// `hipErrorNoDevice` when there are none; that reads as 0, as CUDA's count does.
    pub fn device_count(&self) -> Result<u32, DriverError> {
        let mut count: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { (self.api.hipGetDeviceCount)(&mut count) };
        if code == HIP_ERROR_NO_DEVICE {
            return Ok(0);
        }
        self.check("hipGetDeviceCount", code)?;
        Ok(u32::try_from(count).unwrap_or(0))
    }

    /// A device's marketing name, e.g. `AMD Instinct MI300X` (`hipDeviceGetName`).
    ///
    /// HIP's `hipDevice_t` for an ordinal is the ordinal itself (`hipDeviceGet` stores it
    /// unchanged), so the ordinal is passed directly.
    pub fn name(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.index("hipDeviceGetName", ordinal)?;
        let mut buffer = [0u8; NAME_BUFFER_BYTES];
        let len = c_int::try_from(buffer.len() - 1).unwrap_or(c_int::MAX);
        // SAFETY: the buffer is writable for `len + 1` bytes and zeroed, so it stays NUL-terminated
        // even if the runtime fills all `len` bytes.
        let code = unsafe { (self.api.hipDeviceGetName)(buffer.as_mut_ptr().cast(), len, device) };
        self.check("hipDeviceGetName", code)?;
        Ok(c_string(&buffer))
    }

    /// A device's full `gcnArchName`, e.g. `gfx942:sramecc+:xnack-`
    /// (`hipGetDevicePropertiesR0600`).
    pub fn gcn_arch_name(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.index("hipGetDevicePropertiesR0600", ordinal)?;
        let mut props = Box::new(PropBuffer([0u8; PROP_BUFFER_BYTES]));
        // SAFETY: the buffer is 8-byte aligned, zeroed and larger than `hipDeviceProp_tR0600`
        // (1472 bytes), so the runtime writes only inside it.
        let code =
            unsafe { (self.api.hipGetDevicePropertiesR0600)(props.0.as_mut_ptr().cast(), device) };
        self.check("hipGetDevicePropertiesR0600", code)?;
        let field = &props.0
            [PROP_GCN_ARCH_NAME_OFFSET..PROP_GCN_ARCH_NAME_OFFSET + PROP_GCN_ARCH_NAME_BYTES];
        Ok(c_string(field))
    }

    /// A device's CUDA-style compute capability as `(major, minor)`; HIP derives it from the gfx
    /// version, e.g. `(9, 4)` for gfx942 (`hipDeviceGetAttribute`).
    pub fn capability(&self, ordinal: u32) -> Result<(u32, u32), DriverError> {
        let major = self.attribute(ordinal, ATTR_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(ordinal, ATTR_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major, minor))
    }

    /// A device's opt-in shared (LDS) memory per block, in bytes (`hipDeviceGetAttribute`).
    pub fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.attribute(ordinal, ATTR_SHARED_MEM_PER_BLOCK_OPTIN)
    }

    /// The calling thread's current device (`hipGetDevice`). HIP always has one (device 0 until
    /// [`HipDriver::set_device`]), so this is `Some` whenever the call succeeds.
    pub fn current_device(&self) -> Result<Option<u32>, DriverError> {
        let mut device: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { (self.api.hipGetDevice)(&mut device) };
        self.check("hipGetDevice", code)?;
        Ok(u32::try_from(device).ok())
    }

    /// Makes `ordinal` the calling thread's current device (`hipSetDevice`).
    pub fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        let device = self.index("hipSetDevice", ordinal)?;
        // SAFETY: takes the ordinal by value; the runtime validates it.
        let code = unsafe { (self.api.hipSetDevice)(device) };
        self.check("hipSetDevice", code)
    }

    /// Allocates `bytes` of device memory on the calling thread's current device (`hipMalloc`).
    pub fn alloc(&self, bytes: usize) -> Result<u64, DriverError> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: the out-pointer is a live, writable `void *`.
        let code = unsafe { (self.api.hipMalloc)(&mut ptr, bytes) };
        self.check("hipMalloc", code)?;
        Ok(ptr.expose_provenance() as u64)
    }

    /// Frees memory returned by [`HipDriver::alloc`] (`hipFree`).
    pub fn free(&self, ptr: u64) -> Result<(), DriverError> {
        let device_ptr = self.pointer("hipFree", ptr)?;
        // SAFETY: the runtime validates the address and reports an unknown one as an error; no
        // host memory is touched.
        let code = unsafe { (self.api.hipFree)(device_ptr) };
        self.check("hipFree", code)
    }

    /// Copies `data` to device address `ptr` (`hipMemcpy`, host to device).
    pub fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError> {
        let dst = self.pointer("hipMemcpy", ptr)?;
        // SAFETY: the source is `data.len()` readable host bytes and the kind says the destination
        // is device memory, which the runtime validates.
        let code = unsafe {
            (self.api.hipMemcpy)(dst, data.as_ptr().cast(), data.len(), MEMCPY_HOST_TO_DEVICE)
        };
        self.check("hipMemcpy", code)
    }

    /// Copies `len` bytes from device address `ptr` to the host (`hipMemcpy`, device to host).
    pub fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let src = self.pointer("hipMemcpy", ptr)?;
        let mut data = vec![0u8; len];
        // SAFETY: the destination is `len` writable host bytes and the kind says the source is
        // device memory, which the runtime validates.
        let code = unsafe {
            (self.api.hipMemcpy)(data.as_mut_ptr().cast(), src, len, MEMCPY_DEVICE_TO_HOST)
        };
        self.check("hipMemcpy", code)?;
        Ok(data)
    }

    /// Sets `len` bytes at device address `ptr` to `value` (`hipMemset`).
    pub fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), DriverError> {
        let dst = self.pointer("hipMemset", ptr)?;
        // SAFETY: `dst` is a device address, which the runtime validates; only device memory is
        // written.
        let code = unsafe { (self.api.hipMemset)(dst, c_int::from(value), len) };
        self.check("hipMemset", code)
    }

    /// Waits for all work on the calling thread's current device (`hipDeviceSynchronize`).
    pub fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: takes no arguments.
        let code = unsafe { (self.api.hipDeviceSynchronize)() };
        self.check("hipDeviceSynchronize", code)
    }

    /// An ordinal as HIP's `int` device id, or `hipErrorInvalidDevice` for `call`.
    fn index(&self, call: &str, ordinal: u32) -> Result<c_int, DriverError> {
        c_int::try_from(ordinal).map_err(|_| {
            let mut error = self.error(call, HIP_ERROR_INVALID_DEVICE);
            error.message = format!("{} (ordinal {ordinal} does not fit a C int)", error.message);
            error
        })
    }

    /// A device address as a pointer, or `hipErrorInvalidValue` for `call` if it does not fit one.
    fn pointer(&self, call: &str, ptr: u64) -> Result<*mut c_void, DriverError> {
        let address = usize::try_from(ptr).map_err(|_| {
            let mut error = self.error(call, HIP_ERROR_INVALID_VALUE);
            error.message = format!(
                "{} (address {ptr:#x} does not fit a pointer)",
                error.message
            );
            error
        })?;
        Ok(std::ptr::with_exposed_provenance_mut(address))
    }

    /// An integer device attribute (`hipDeviceGetAttribute`); a negative answer reads as 0.
    fn attribute(&self, ordinal: u32, attribute: c_int) -> Result<u32, DriverError> {
        let device = self.index("hipDeviceGetAttribute", ordinal)?;
        let mut value: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { (self.api.hipDeviceGetAttribute)(&mut value, attribute, device) };
        self.check("hipDeviceGetAttribute", code)?;
        Ok(u32::try_from(value).unwrap_or(0))
    }

    /// `Ok` for `hipSuccess`, else the call's [`DriverError`].
    fn check(&self, call: &str, code: HipError) -> Result<(), DriverError> {
        if code == HIP_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, code))
        }
    }

    /// A [`DriverError`] with HIP's own `NAME: description`, or `hipError_t N` when HIP answers
    /// nothing.
    fn error(&self, call: &str, code: HipError) -> DriverError {
        let name = describe(self.api.hipGetErrorName, code);
        let text = describe(self.api.hipGetErrorString, code);
        let message = match (name, text) {
            (Some(name), Some(text)) => format!("{name}: {text}"),
            (Some(name), None) => name,
            _ => format!("hipError_t {code}"),
        };
        DriverError {
            call: call.to_owned(),
            code,
            message,
        }
    }
}

/// Calls `hipGetErrorName` or `hipGetErrorString`; `None` if it answers NULL.
fn describe(
    getter: unsafe extern "C" fn(HipError) -> *const c_char,
    code: HipError,
) -> Option<String> {
    // SAFETY: takes the code by value; any value is accepted (unknown ones get a generic text).
    let text = unsafe { getter(code) };
    if text.is_null() {
        return None;
    }
    // SAFETY: HIP returns a static NUL-terminated string.
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}
