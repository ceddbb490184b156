//! A fake HIP runtime: `libamdhip64.so` exporting every HIP function devsim's live runtime resolves
//! (`src/runtime/live/hip.rs`), with the C signatures and error codes of `hip_runtime_api.h`
//! (ROCm 6/7), answering from the devsim host profile named by `DEVSIM_FAKE_HOST`.
//!
//! Behaviour, as the real runtime's:
//! - HIP initializes on first use; `hipInit(0)` is optional. Without a usable profile (missing,
//!   invalid, not a HIP host) every call answers `hipErrorNoDevice`. When the visible-device
//!   variables hide every GPU, `hipInit` succeeds and `hipGetDeviceCount` answers `hipErrorNoDevice`.
//! - Devices are the profile's GPUs after `ROCR_VISIBLE_DEVICES`, then `HIP_VISIBLE_DEVICES` (or
//!   `CUDA_VISIBLE_DEVICES`), with PyTorch's parsing rules as devsim models them.
//! - Each thread's current device starts at 0 and is changed by `hipSetDevice`.
//! - `hipGetDevicePropertiesR0600` fills `name`, `warpSize`, `major`, `minor` and `gcnArchName`
//!   (with the feature suffixes as the profile spells them) of a zeroed `hipDeviceProp_tR0600`.
//! - Memory is bookkept by devsim's simulated runtime: a freed or unknown address, or a copy past
//!   the end of an allocation, is `hipErrorInvalidValue`. `hipMemset` is the driver-only launch: a
//!   `launch` on the current device, then the write.
//! - Faults from the profile's `[[fault]]` tables fire on the matching calls.

use std::ffi::{c_char, c_int, c_uint, c_void};

use devsim::{Arch, Runtime, TorchBuild};
use devsim_fake_common::{
    Fake, INVALID_DEVICE, INVALID_VALUE, NO_DEVICE, UNKNOWN, code, fake, guard, host_bytes, put,
    put_c_string, put_host_bytes, status, write_c_string,
};

use devsim_sys::hip::{
    self as sys, hipDeviceAttributeComputeCapabilityMajor as ATTR_COMPUTE_CAPABILITY_MAJOR,
    hipDeviceAttributeComputeCapabilityMinor as ATTR_COMPUTE_CAPABILITY_MINOR,
    hipDeviceAttributeSharedMemPerBlockOptin as ATTR_SHARED_MEM_PER_BLOCK_OPTIN,
    hipDeviceProp_tR0600, hipError_t as HipError, hipErrorInvalidMemcpyDirection,
    hipMemcpyDefault as MEMCPY_DEFAULT, hipMemcpyDeviceToDevice as MEMCPY_DEVICE_TO_DEVICE,
    hipMemcpyDeviceToHost as MEMCPY_DEVICE_TO_HOST, hipMemcpyHostToDevice as MEMCPY_HOST_TO_DEVICE,
    hipMemcpyHostToHost as MEMCPY_HOST_TO_HOST,
};

// Every export has exactly the type devsim's client resolves it as (`devsim-sys`).
const _: sys::fns::hipInit = hipInit;
const _: sys::fns::hipRuntimeGetVersion = hipRuntimeGetVersion;
const _: sys::fns::hipDriverGetVersion = hipDriverGetVersion;
const _: sys::fns::hipGetDeviceCount = hipGetDeviceCount;
const _: sys::fns::hipGetDevice = hipGetDevice;
const _: sys::fns::hipSetDevice = hipSetDevice;
const _: sys::fns::hipDeviceGetName = hipDeviceGetName;
const _: sys::fns::hipDeviceGetUuid = hipDeviceGetUuid;
const _: sys::fns::hipDeviceGetAttribute = hipDeviceGetAttribute;
const _: sys::fns::hipGetDevicePropertiesR0600 = hipGetDevicePropertiesR0600;
const _: sys::fns::hipMalloc = hipMalloc;
const _: sys::fns::hipFree = hipFree;
const _: sys::fns::hipMemGetInfo = hipMemGetInfo;
const _: sys::fns::hipMemcpy = hipMemcpy;
const _: sys::fns::hipMemset = hipMemset;
const _: sys::fns::hipDeviceSynchronize = hipDeviceSynchronize;
const _: sys::fns::hipGetErrorName = hipGetErrorName;
const _: sys::fns::hipGetErrorString = hipGetErrorString;

/// What `hipRuntimeGetVersion` and `hipDriverGetVersion` answer (`HIP_VERSION` style: 6.4.0).
const RUNTIME_VERSION: c_int = 60_400_000;
/// This library's name in diagnostics.
const LIBRARY: &str = sys::LIBRARY;

/// Runs an exported call's body with the fake loaded (`hipErrorNoDevice` without a usable
/// profile), catching panics.
fn call(body: impl FnOnce(&Fake) -> Result<(), HipError>) -> HipError {
    guard(UNKNOWN, || match fake(TorchBuild::Hip, LIBRARY) {
        Ok(fake) => status(body(fake)),
        Err(_) => NO_DEVICE,
    })
}

/// AMD's wavefront size for a gfx target: 64 on GCN and CDNA (gfx9 and older), 32 on RDNA.
fn warp_size(arch: &str) -> c_int {
    match arch.parse::<Arch>() {
        Ok(arch)
            if arch
                .gfx()
                .is_some_and(|gfx| gfx.base.len() > "gfx999".len()) =>
        {
            32
        }
        _ => 64,
    }
}

/// `int devsim_fake_driver(void)`: the marker devsim looks for, so that this library is never taken for a
/// real driver (the run header says FAKE DRIVER and `--require-live` does not count its scenarios).
#[unsafe(no_mangle)]
pub extern "C" fn devsim_fake_driver() -> c_int {
    1
}

/// `hipError_t hipInit(unsigned int flags)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipInit(flags: c_uint) -> HipError {
    call(|_| {
        if flags == 0 {
            Ok(())
        } else {
            Err(INVALID_VALUE)
        }
    })
}

/// `hipError_t hipDriverGetVersion(int *driverVersion)`.
///
/// # Safety
///
/// `version` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDriverGetVersion(version: *mut c_int) -> HipError {
    // SAFETY: the caller passes a null or writable `int` pointer.
    guard(UNKNOWN, || status(unsafe { put(version, RUNTIME_VERSION) }))
}

/// `hipError_t hipRuntimeGetVersion(int *runtimeVersion)`: ROCm 6.4, so devsim accepts this runtime.
///
/// # Safety
///
/// `version` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipRuntimeGetVersion(version: *mut c_int) -> HipError {
    // SAFETY: the caller passes a null or writable `int` pointer.
    guard(UNKNOWN, || status(unsafe { put(version, RUNTIME_VERSION) }))
}

/// `hipError_t hipGetDeviceCount(int *count)`: `hipErrorNoDevice` (count 0) when no GPU is visible.
///
/// # Safety
///
/// `count` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> HipError {
    call(|fake| {
        let n = fake.runtime().device_count().map_err(code)?;
        // SAFETY: the caller passes a null or writable `int` pointer.
        unsafe { put(count, c_int::try_from(n).unwrap_or(c_int::MAX)) }?;
        if n == 0 { Err(NO_DEVICE) } else { Ok(()) }
    })
}

/// `hipError_t hipGetDevice(int *deviceId)`: the calling thread's current device.
///
/// # Safety
///
/// `device` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevice(device: *mut c_int) -> HipError {
    call(|fake| {
        let ordinal = fake.runtime().get_device().map_err(code)?;
        // SAFETY: the caller passes a null or writable `int` pointer.
        unsafe { put(device, c_int::try_from(ordinal).unwrap_or(c_int::MAX)) }
    })
}

/// `hipError_t hipSetDevice(int deviceId)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipSetDevice(device: c_int) -> HipError {
    call(|fake| {
        let ordinal = u32::try_from(device).map_err(|_| INVALID_DEVICE)?;
        fake.runtime().set_device(ordinal).map_err(code)
    })
}

/// `hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device)`.
///
/// # Safety
///
/// `name` is null or valid for writing `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetName(
    name: *mut c_char,
    len: c_int,
    device: c_int,
) -> HipError {
    call(|fake| {
        let ordinal = fake.ordinal(device)?;
        let text = fake.runtime().device_name(ordinal).map_err(code)?;
        // SAFETY: the caller passes a null pointer or `len` writable bytes.
        unsafe { put_c_string(name, len, &text) }
    })
}

/// `hipError_t hipDeviceGetUuid(hipUUID *uuid, hipDevice_t device)`: the first 16 characters of the
/// profile's UUID (its 16-hex-digit serial), as ROCm fills the bytes with the characters ROCr shows
/// after `GPU-`.
///
/// # Safety
///
/// `uuid` is null or valid for writing one `hipUUID`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetUuid(uuid: *mut sys::hipUUID, device: c_int) -> HipError {
    call(|fake| {
        let ordinal = fake.ordinal(device)?;
        let mut bytes = [0u8; 16];
        let text = fake.uuid(ordinal)?.as_bytes();
        let n = text.len().min(16);
        bytes[..n].copy_from_slice(&text[..n]);
        let value = sys::hipUUID {
            bytes: bytes.map(|b| c_char::from_ne_bytes([b])),
        };
        // SAFETY: the caller passes a null or writable `hipUUID` pointer.
        unsafe { put(uuid, value) }
    })
}

/// `hipError_t hipDeviceGetAttribute(int *pi, hipDeviceAttribute_t attr, int deviceId)`: compute
/// capability major (23) and minor (61) as HIP derives them from the gfx version, opt-in shared
/// memory per block (75). Any other attribute is `hipErrorInvalidValue`.
///
/// # Safety
///
/// `value` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    device: c_int,
) -> HipError {
    call(|fake| {
        let ordinal = fake.ordinal(device)?;
        let runtime = fake.runtime();
        let answer = match attribute {
            ATTR_COMPUTE_CAPABILITY_MAJOR => runtime
                .nvidia_capability(ordinal)
                .map(|cc| c_int::try_from(cc.major).unwrap_or(0)),
            ATTR_COMPUTE_CAPABILITY_MINOR => runtime
                .nvidia_capability(ordinal)
                .map(|cc| c_int::try_from(cc.minor).unwrap_or(0)),
            ATTR_SHARED_MEM_PER_BLOCK_OPTIN => runtime
                .smem_optin(ordinal)
                .map(|bytes| c_int::try_from(bytes).unwrap_or(c_int::MAX)),
            _ => return Err(INVALID_VALUE),
        }
        .map_err(code)?;
        // SAFETY: the caller passes a null or writable `int` pointer.
        unsafe { put(value, answer) }
    })
}

/// `hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600 *prop, int deviceId)`.
///
/// One runtime query, the arch (`amd_arch`, where its faults fire); the name and capability come
/// from the same profile GPU. The fields this fake does not model are zero.
///
/// # Safety
///
/// `prop` is null or valid for writing one `hipDeviceProp_tR0600` (1472 bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(
    prop: *mut hipDeviceProp_tR0600,
    device: c_int,
) -> HipError {
    call(|fake| {
        if prop.is_null() {
            return Err(INVALID_VALUE);
        }
        let ordinal = fake.ordinal(device)?;
        let runtime = fake.runtime();
        let arch = runtime.amd_arch(ordinal).map_err(code)?;
        let gpu = runtime
            .inner()
            .host()
            .visible_gpu(ordinal)
            .ok_or(INVALID_DEVICE)?;
        let mut props = hipDeviceProp_tR0600::zeroed();
        write_c_chars(&mut props.name, &gpu.name);
        write_c_chars(&mut props.gcnArchName, &arch);
        props.warpSize = warp_size(&arch);
        if let Some(cc) = gpu.arch.gfx().map(|gfx| gfx.hip_capability()) {
            props.major = c_int::try_from(cc.major).unwrap_or(0);
            props.minor = c_int::try_from(cc.minor).unwrap_or(0);
        }
        // SAFETY: `prop` is non-null and, by the caller's contract, valid for one write of the
        // struct.
        unsafe { prop.write(props) };
        Ok(())
    })
}

/// Copies `text` into a C `char` array, truncated and NUL-terminated.
fn write_c_chars(field: &mut [c_char], text: &str) {
    let mut bytes = vec![0u8; field.len()];
    write_c_string(&mut bytes, text);
    for (slot, byte) in field.iter_mut().zip(bytes) {
        *slot = c_char::from_ne_bytes([byte]);
    }
}

/// `hipError_t hipMalloc(void **ptr, size_t size)`: on the current device; zero bytes gives a null
/// pointer and `hipSuccess`, as HIP documents.
///
/// # Safety
///
/// `ptr` is null or valid for writing one `void *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> HipError {
    call(|fake| {
        if ptr.is_null() {
            return Err(INVALID_VALUE);
        }
        let address = if size == 0 {
            std::ptr::null_mut()
        } else {
            std::ptr::with_exposed_provenance_mut(
                usize::try_from(fake.alloc(size)?).map_err(|_| INVALID_VALUE)?,
            )
        };
        // SAFETY: the caller passes a writable `void *` pointer (checked non-null above).
        unsafe { put(ptr, address) }
    })
}

/// `hipError_t hipFree(void *ptr)`: null is ignored, as HIP documents.
#[unsafe(no_mangle)]
pub extern "C" fn hipFree(ptr: *mut c_void) -> HipError {
    call(|fake| {
        if ptr.is_null() {
            return Ok(());
        }
        fake.free(ptr.addr() as u64)
    })
}

/// `hipError_t hipMemcpy(void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind)`.
/// `hipMemcpyDefault` infers the direction from which addresses are allocations.
///
/// # Safety
///
/// Host-side pointers are null or valid for `size` bytes (readable for a source, writable for a
/// destination), as HIP requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    kind: c_int,
) -> HipError {
    call(|fake| {
        let (dst_address, src_address) = (dst.addr() as u64, src.addr() as u64);
        let kind = match kind {
            MEMCPY_DEFAULT => match (fake.is_device(dst_address), fake.is_device(src_address)) {
                (false, false) => MEMCPY_HOST_TO_HOST,
                (true, false) => MEMCPY_HOST_TO_DEVICE,
                (false, true) => MEMCPY_DEVICE_TO_HOST,
                (true, true) => MEMCPY_DEVICE_TO_DEVICE,
            },
            MEMCPY_HOST_TO_HOST..=MEMCPY_DEVICE_TO_DEVICE => kind,
            _ => return Err(hipErrorInvalidMemcpyDirection),
        };
        if size == 0 {
            return Ok(());
        }
        match kind {
            MEMCPY_HOST_TO_DEVICE => {
                // SAFETY: the caller passes a null pointer or `size` readable host bytes.
                let data = unsafe { host_bytes(src.cast(), size) }?;
                fake.copy_in(dst_address, data)
            }
            MEMCPY_DEVICE_TO_HOST => {
                let data = fake.copy_out(src_address, size)?;
                // SAFETY: the caller passes a null pointer or `size` writable host bytes.
                unsafe { put_host_bytes(dst.cast(), &data) }
            }
            MEMCPY_DEVICE_TO_DEVICE => {
                let data = fake.copy_out(src_address, size)?;
                fake.copy_in(dst_address, &data)
            }
            _ => {
                // SAFETY: the caller passes `size` readable bytes at `src`.
                let data = unsafe { host_bytes(src.cast(), size) }?.to_vec();
                // SAFETY: the caller passes `size` writable bytes at `dst`; `data` is a copy.
                unsafe { put_host_bytes(dst.cast(), &data) }
            }
        }
    })
}

/// `hipError_t hipMemset(void *dst, int value, size_t sizeBytes)`: the driver-only launch (a
/// `launch` on the current device, for faults) and the write of `value`'s low byte.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemset(dst: *mut c_void, value: c_int, size: usize) -> HipError {
    call(|fake| fake.memset(dst.addr() as u64, value.to_le_bytes()[0], size))
}

/// `hipError_t hipMemGetInfo(size_t *free, size_t *total)`: the current device, counted in 2 MiB pages.
///
/// # Safety
///
/// `free` and `total` are null or valid for writing one `size_t` each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> HipError {
    call(|fake| {
        let (available, all) = fake.mem_info()?;
        // SAFETY: the caller passes writable `size_t` pointers (`put` refuses null ones).
        unsafe { put(free, available) }?;
        // SAFETY: as above.
        unsafe { put(total, all) }
    })
}

/// `hipError_t hipDeviceSynchronize(void)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipDeviceSynchronize() -> HipError {
    call(|fake| fake.runtime().synchronize().map_err(code))
}

/// The name and description of a `hipError_t`, from the table `devsim-sys` shares; every other code
/// is `hipErrorUnknown`, as HIP answers.
fn describe(error: HipError) -> (*const c_char, *const c_char) {
    sys::ERRORS
        .iter()
        .find(|(code, _, _)| *code == error)
        .map_or(
            (c"hipErrorUnknown".as_ptr(), c"unknown error".as_ptr()),
            |(_, name, text)| (name.as_ptr(), text.as_ptr()),
        )
}

/// `const char *hipGetErrorName(hipError_t hip_error)`: a static string for every code
/// (`hipErrorUnknown` for codes HIP does not define).
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorName(error: HipError) -> *const c_char {
    guard(c"hipErrorUnknown".as_ptr(), || describe(error).0)
}

/// `const char *hipGetErrorString(hipError_t hipError)`: a static string for every code.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorString(error: HipError) -> *const c_char {
    guard(c"unknown error".as_ptr(), || describe(error).1)
}
