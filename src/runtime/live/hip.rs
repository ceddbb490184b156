//! The HIP runtime API (`libamdhip64.so`, ROCm 6 and later), in two of cudarc's three layers over
//! `devsim-sys`.
//!
//! [`HipApi`] is the raw layer: a symbol table ([`HipSymbols`], each symbol named once) of the C
//! functions as resolved from the library, each typed by its `devsim_sys::hip::fns` declaration.
//! [`HipDriver`] is the `Result` layer and implements [`GpuDriver`] itself: each method makes one or
//! two runtime calls and turns a failing `hipError_t` into a [`DriverError`] with `.result()` (shared
//! plumbing in `status`). The safe layer is the live [`Runtime`](crate::runtime::Runtime) on top.
//!
//! Every candidate is tried until one resolves every symbol and reports ROCm 6 or newer
//! (`hipRuntimeGetVersion`); an older runtime is refused with its path and version, since ROCm 6
//! renumbered the device attributes and introduced `hipDeviceProp_tR0600`.
//!
//! A missing library or symbol is a [`LibraryError`], never a panic.

use std::ffi::{c_int, c_void};

use devsim_sys::hip as sys;
use libloading::Library;

use super::driver::GpuDriver;
use super::library::{DriverLoadError, LibraryError, c_string, open_each, resolve, resolved_path};
use super::status::{self, Describe};
use super::symbols::{call, symbol_table};
use crate::runtime::DriverError;
use crate::vocab::TorchBuild;

/// The library's usual name, used in errors.
pub const HIP_LIBRARY: &str = sys::LIBRARY;

/// Where the HIP runtime is looked for, in order: the versioned names through the loader's own
/// search, the unversioned development name, then ROCm's default install folder, and last ROCm 5's
/// name (only so that an old ROCm is refused by name and version rather than reported missing).
/// Fixed: nothing here comes from input.
pub const HIP_CANDIDATES: [&str; 7] = [
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so",
    "/opt/rocm/lib/libamdhip64.so.7",
    "/opt/rocm/lib/libamdhip64.so.6",
    "/opt/rocm/lib/libamdhip64.so",
    "libamdhip64.so.5",
];

symbol_table! {
    /// HIP's C functions, resolved once by name, each typed by its `devsim_sys::hip::fns` declaration.
    pub struct HipSymbols in sys {
        hipInit,
        hipRuntimeGetVersion,
        hipDriverGetVersion,
        hipGetDeviceCount,
        hipGetDevice,
        hipSetDevice,
        hipDeviceGetName,
        hipDeviceGetUuid,
        hipDeviceGetAttribute,
        hipGetDevicePropertiesR0600,
        hipMalloc,
        hipFree,
        hipMemcpy,
        hipMemset,
        hipMemGetInfo,
        hipDeviceSynchronize,
        hipGetErrorName,
        hipGetErrorString,
    }
}

/// The raw layer: HIP's symbol table ([`HipSymbols`], which it dereferences to) and the library it
/// came from.
///
/// Calling any of the functions is `unsafe`: the caller upholds the C API's contract. The library is
/// never unloaded (see [`super::library::Opened`]).
pub struct HipApi {
    /// The candidate that opened.
    candidate: String,
    /// The file the loader mapped for it.
    path: String,
    /// Whether it is one of devsim's fake drivers (it exports [`super::library::FAKE_MARKER`]).
    fake: bool,
    /// `hipRuntimeGetVersion`'s answer (`HIP_VERSION`: major * 10^7 + minor * 10^5 + patch).
    version: c_int,
    symbols: HipSymbols,
}

impl std::ops::Deref for HipApi {
    type Target = HipSymbols;

    fn deref(&self) -> &HipSymbols {
        &self.symbols
    }
}

impl HipApi {
    /// Opens the first of [`HIP_CANDIDATES`] that loads, reports ROCm 6 or newer and resolves every
    /// symbol. Calls only `hipRuntimeGetVersion`.
    pub fn load() -> Result<Self, LibraryError> {
        Self::load_from(&HIP_CANDIDATES)
    }

    /// [`HipApi::load`] over other fixed candidates (tests pin one installed library this way).
    /// Like [`HIP_CANDIDATES`], they must be fixed names, never input.
    pub fn load_from(candidates: &[&'static str]) -> Result<Self, LibraryError> {
        Ok(open_each(HIP_LIBRARY, candidates, Self::accept)?.api)
    }

    /// Checks the version first (an old runtime lacks ROCm 6 symbols, and its refusal should say
    /// why), then resolves the whole table.
    fn accept(lib: &Library, p: &str) -> Result<Self, String> {
        // The one symbol looked up ahead of the table: the version decides whether the rest is read.
        // SAFETY: `hipError_t hipRuntimeGetVersion(int *)`, as `devsim-sys` declares it; the
        // library is never unloaded.
        let get_version: sys::fns::hipRuntimeGetVersion =
            unsafe { resolve(lib, p, "hipRuntimeGetVersion") }.map_err(|e| e.to_string())?;
        let path = resolved_path(get_version as usize).unwrap_or_else(|| p.to_owned());
        let mut version: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let code = unsafe { get_version(&mut version) };
        if code != sys::hipSuccess {
            return Err(format!(
                "read the HIP version of {path}: hipRuntimeGetVersion answered hipError_t {code}"
            ));
        }
        let (major, minor) = sys::version_parts(version);
        if major < sys::MIN_MAJOR {
            return Err(format!(
                "ROCm 6.0 or newer is needed; found HIP {major}.{minor} at {path}"
            ));
        }
        // SAFETY: `devsim-sys` declares each symbol's C signature from `hip_runtime_api.h`, and the
        // library is never unloaded.
        let symbols = unsafe { HipSymbols::resolve(lib, p) }
            .map_err(|error| format!("{error} (HIP {major}.{minor})"))?;
        Ok(Self {
            candidate: p.to_owned(),
            path,
            fake: super::library::is_fake(lib),
            version,
            symbols,
        })
    }

    /// The file the loader mapped (e.g. `/opt/rocm/lib/libamdhip64.so.6`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether it is one of devsim's fake drivers, never a real GPU.
    pub fn is_fake(&self) -> bool {
        self.fake
    }

    /// The candidate that opened, as written in [`HIP_CANDIDATES`].
    pub fn candidate(&self) -> &str {
        &self.candidate
    }

    /// The runtime's `(major, minor)` HIP version.
    pub fn version(&self) -> (i32, i32) {
        sys::version_parts(self.version)
    }
}

/// The `Result` layer over the HIP runtime API.
///
/// `Send + Sync` (automatically): the HIP runtime is thread-safe and this struct holds only the
/// library and function pointers. The current device is HIP's per-thread state:
/// [`HipDriver::set_device`] and the calls that use it act on the calling thread.
pub struct HipDriver {
    api: HipApi,
}

impl Describe for HipDriver {
    const STATUS_TYPE: &'static str = "hipError_t";
    const SUCCESS: i32 = sys::hipSuccess;

    fn name(&self, code: i32) -> Option<String> {
        // SAFETY: takes the code by value; HIP returns a static NUL-terminated string (or NULL).
        unsafe { status::c_text((self.api.hipGetErrorName)(code)) }
    }

    fn text(&self, code: i32) -> Option<String> {
        // SAFETY: as for `name`.
        unsafe { status::c_text((self.api.hipGetErrorString)(code)) }
    }
}

impl HipDriver {
    /// Opens the runtime, resolves every symbol and calls `hipInit(0)`.
    pub fn load() -> Result<Self, DriverLoadError> {
        let driver = Self {
            api: HipApi::load()?,
        };
        // SAFETY: `hipInit` takes flags by value; 0 is the only valid value.
        let init = unsafe { call!(&driver, hipInit(0)) }.result();
        init.map_err(|source| DriverLoadError::Driver {
            library: driver.api.path.clone(),
            source,
        })?;
        Ok(driver)
    }

    /// The raw layer, for calls this layer does not wrap.
    pub fn api(&self) -> &HipApi {
        &self.api
    }

    /// The HIP driver version (`hipDriverGetVersion`).
    pub fn version(&self) -> Result<i32, DriverError> {
        let mut version: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        unsafe { call!(self, hipDriverGetVersion(&mut version)) }.result()?;
        Ok(version)
    }

    /// An ordinal as HIP's `int` device id, or `hipErrorInvalidDevice` for `call`.
    fn index(&self, call: &str, ordinal: u32) -> Result<c_int, DriverError> {
        c_int::try_from(ordinal).map_err(|_| {
            status::refused(
                self,
                call,
                sys::hipErrorInvalidDevice,
                format!("ordinal {ordinal} does not fit a C int"),
            )
        })
    }

    /// A device address as a pointer, or `hipErrorInvalidValue` for `call` if it does not fit one.
    fn pointer(&self, call: &str, ptr: u64) -> Result<*mut c_void, DriverError> {
        let address = usize::try_from(ptr).map_err(|_| {
            status::refused(
                self,
                call,
                sys::hipErrorInvalidValue,
                format!("address {ptr:#x} does not fit a pointer"),
            )
        })?;
        Ok(std::ptr::with_exposed_provenance_mut(address))
    }

    /// An integer device attribute (`hipDeviceGetAttribute`); a negative answer reads as 0.
    fn attribute(&self, ordinal: u32, attribute: c_int) -> Result<u32, DriverError> {
        let device = self.index("hipDeviceGetAttribute", ordinal)?;
        let mut value: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        unsafe { call!(self, hipDeviceGetAttribute(&mut value, attribute, device)) }.result()?;
        Ok(u32::try_from(value).unwrap_or(0))
    }
}

/// The `Result` layer is the live runtime's [`GpuDriver`]: each method makes one or a few runtime
/// calls. HIP's `hipDevice_t` for an ordinal is the ordinal itself (`hipDeviceGet` stores it
/// unchanged), so ordinals are passed directly.
impl GpuDriver for HipDriver {
    fn build(&self) -> TorchBuild {
        TorchBuild::Hip
    }

    fn path(&self) -> &str {
        self.api.path()
    }

    fn is_fake(&self) -> bool {
        self.api.is_fake()
    }

    /// How many HIP devices the process sees (`hipGetDeviceCount`). HIP answers
    /// `hipErrorNoDevice` when there are none; that reads as 0, as CUDA's count does.
    fn device_count(&self) -> Result<u32, DriverError> {
        let mut count: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        let status = unsafe { call!(self, hipGetDeviceCount(&mut count)) };
        if status.code() == sys::hipErrorNoDevice {
            return Ok(0);
        }
        status.result()?;
        Ok(u32::try_from(count).unwrap_or(0))
    }

    /// A device's marketing name, e.g. `AMD Instinct MI300X` (`hipDeviceGetName`).
    fn name(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.index("hipDeviceGetName", ordinal)?;
        let mut buffer = [0u8; sys::NAME_BYTES];
        let len = c_int::try_from(buffer.len() - 1).unwrap_or(c_int::MAX);
        // SAFETY: the buffer is writable for `len + 1` bytes and zeroed, so it stays NUL-terminated
        // even if the runtime fills all `len` bytes.
        unsafe {
            call!(
                self,
                hipDeviceGetName(buffer.as_mut_ptr().cast(), len, device)
            )
        }
        .result()?;
        Ok(c_string(&buffer))
    }

    /// A device's UUID as ROCr shows it after `GPU-`: the ASIC serial, 16 hex digits
    /// (`hipDeviceGetUuid`, whose 16 bytes are those characters).
    fn uuid(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.index("hipDeviceGetUuid", ordinal)?;
        let mut uuid = sys::hipUUID { bytes: [0; 16] };
        // SAFETY: the out-pointer is a live, writable `hipUUID`.
        unsafe { call!(self, hipDeviceGetUuid(&mut uuid, device)) }.result()?;
        let bytes = uuid.bytes.map(|c| c.to_ne_bytes()[0]);
        Ok(c_string(&bytes))
    }

    /// A device's CUDA-style compute capability as `(major, minor)`; HIP derives it from the gfx
    /// version, e.g. `(9, 4)` for gfx942 (`hipDeviceGetAttribute`).
    fn capability(&self, ordinal: u32) -> Result<(u32, u32), DriverError> {
        let major = self.attribute(ordinal, sys::hipDeviceAttributeComputeCapabilityMajor)?;
        let minor = self.attribute(ordinal, sys::hipDeviceAttributeComputeCapabilityMinor)?;
        Ok((major, minor))
    }

    /// A device's full `gcnArchName`, e.g. `gfx942:sramecc+:xnack-`
    /// (`hipGetDevicePropertiesR0600`).
    fn gcn_arch_name(&self, ordinal: u32) -> Result<String, DriverError> {
        let device = self.index("hipGetDevicePropertiesR0600", ordinal)?;
        let mut props = Box::new(sys::hipDeviceProp_tR0600::zeroed());
        // SAFETY: `props` is a zeroed `hipDeviceProp_tR0600` with the ROCm 6 layout (pinned by
        // `devsim-sys`'s tests), and the runtime was checked to be ROCm 6 or newer at load.
        unsafe { call!(self, hipGetDevicePropertiesR0600(&mut *props, device)) }.result()?;
        let bytes = props.gcnArchName.map(|c| c.to_ne_bytes()[0]);
        Ok(c_string(&bytes))
    }

    /// A device's opt-in shared (LDS) memory per block, in bytes (`hipDeviceGetAttribute`).
    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.attribute(ordinal, sys::hipDeviceAttributeSharedMemPerBlockOptin)
    }

    /// The calling thread's current device (`hipGetDevice`): HIP always has one (device 0 until
    /// [`GpuDriver::set_device`]); an answer that is not an ordinal reads as 0.
    fn current_device(&self) -> Result<u32, DriverError> {
        let mut device: c_int = 0;
        // SAFETY: the out-pointer is a live, writable `int`.
        unsafe { call!(self, hipGetDevice(&mut device)) }.result()?;
        Ok(u32::try_from(device).unwrap_or(0))
    }

    /// Makes `ordinal` the calling thread's current device (`hipSetDevice`).
    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        let device = self.index("hipSetDevice", ordinal)?;
        // SAFETY: takes the ordinal by value; the runtime validates it.
        unsafe { call!(self, hipSetDevice(device)) }.result()
    }

    /// Allocates `bytes` of device memory on the calling thread's current device (`hipMalloc`).
    fn alloc(&self, bytes: usize) -> Result<u64, DriverError> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: the out-pointer is a live, writable `void *`.
        unsafe { call!(self, hipMalloc(&mut ptr, bytes)) }.result()?;
        Ok(ptr.expose_provenance() as u64)
    }

    /// Frees memory returned by [`GpuDriver::alloc`] (`hipFree`).
    fn free(&self, ptr: u64) -> Result<(), DriverError> {
        let device_ptr = self.pointer("hipFree", ptr)?;
        // SAFETY: the runtime validates the address and reports an unknown one as an error; no
        // host memory is touched.
        unsafe { call!(self, hipFree(device_ptr)) }.result()
    }

    /// Copies `data` to device address `ptr` (`hipMemcpy`, host to device).
    fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError> {
        let dst = self.pointer("hipMemcpy", ptr)?;
        let (src, len) = (data.as_ptr().cast(), data.len());
        // SAFETY: the source is `data.len()` readable host bytes and the kind says the destination
        // is device memory, which the runtime validates.
        unsafe { call!(self, hipMemcpy(dst, src, len, sys::hipMemcpyHostToDevice)) }.result()
    }

    /// Copies `len` bytes from device address `ptr` to the host (`hipMemcpy`, device to host).
    fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let src = self.pointer("hipMemcpy", ptr)?;
        let mut data = vec![0u8; len];
        let dst = data.as_mut_ptr().cast();
        // SAFETY: the destination is `len` writable host bytes and the kind says the source is
        // device memory, which the runtime validates.
        unsafe { call!(self, hipMemcpy(dst, src, len, sys::hipMemcpyDeviceToHost)) }.result()?;
        Ok(data)
    }

    /// Sets `len` bytes at device address `ptr` to `value` (`hipMemset`).
    fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), DriverError> {
        let dst = self.pointer("hipMemset", ptr)?;
        // SAFETY: `dst` is a device address, which the runtime validates; only device memory is
        // written.
        unsafe { call!(self, hipMemset(dst, c_int::from(value), len)) }.result()
    }

    /// Waits for all work on the calling thread's current device (`hipDeviceSynchronize`).
    fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: takes no arguments.
        unsafe { call!(self, hipDeviceSynchronize()) }.result()
    }

    /// Device memory in use on the current device, in bytes: total minus free (`hipMemGetInfo`).
    fn memory_in_use(&self) -> Result<u64, DriverError> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both out-pointers are live, writable `size_t`s.
        unsafe { call!(self, hipMemGetInfo(&mut free, &mut total)) }.result()?;
        Ok(total.saturating_sub(free) as u64)
    }
}
