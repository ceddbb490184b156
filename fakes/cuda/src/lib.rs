//! A fake CUDA driver: `libcuda.so.1` exporting every driver API function devsim's live runtime
//! resolves (`src/runtime/live/cuda.rs`), with the C signatures and error codes of `cuda.h`, answering
//! from the devsim host profile named by `DEVSIM_FAKE_HOST`.
//!
//! Behaviour, as the real driver's:
//! - `cuInit(0)` must come first; every other call but `cuDriverGetVersion`, `cuGetErrorName` and
//!   `cuGetErrorString` answers `CUDA_ERROR_NOT_INITIALIZED` before it. `cuInit` answers
//!   `CUDA_ERROR_NO_DEVICE` when the profile is missing, invalid, not a CUDA host, or
//!   `CUDA_VISIBLE_DEVICES` hides every GPU, and `CUDA_ERROR_INVALID_DEVICE` when it repeats an
//!   ordinal (as the real driver does; `devsim::visible::runtime_rejects`).
//! - Devices are the profile's GPUs after `CUDA_VISIBLE_DEVICES` (PyTorch's parsing rules, as
//!   devsim models them); `CUdevice` handles equal ordinals.
//! - Each thread has no current context until `cuCtxSetCurrent` binds a primary context retained
//!   with `cuDevicePrimaryCtxRetain`; calls that need one answer `CUDA_ERROR_INVALID_CONTEXT`.
//! - Memory is bookkept by devsim's simulated runtime: a freed or unknown address, or a copy past
//!   the end of an allocation, is `CUDA_ERROR_INVALID_VALUE`. `cuMemsetD8_v2` is the driver-only
//!   launch: a `launch` on the current device, then the write.
//! - Faults from the profile's `[[fault]]` tables fire on the matching calls.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use devsim::{Runtime, TorchBuild};
use devsim_fake_common::{
    Fake, INVALID_DEVICE, INVALID_VALUE, NO_DEVICE, UNKNOWN, code, fake, guard, host_bytes, put,
    put_c_string, put_host_bytes, status, uuid_bytes,
};

use devsim_sys::cuda::{
    self as sys, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as ATTR_COMPUTE_CAPABILITY_MAJOR,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as ATTR_COMPUTE_CAPABILITY_MINOR,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_NOT_INITIALIZED, CUDA_SUCCESS, CUcontext, CUdevice,
    CUdeviceptr, CUresult,
};

// Every export has exactly the type devsim's client resolves it as (`devsim-sys`).
const _: sys::fns::cuInit = cuInit;
const _: sys::fns::cuDriverGetVersion = cuDriverGetVersion;
const _: sys::fns::cuDeviceGetCount = cuDeviceGetCount;
const _: sys::fns::cuDeviceGet = cuDeviceGet;
const _: sys::fns::cuDeviceGetName = cuDeviceGetName;
const _: sys::fns::cuDeviceGetUuid_v2 = cuDeviceGetUuid_v2;
const _: sys::fns::cuDeviceGetAttribute = cuDeviceGetAttribute;
const _: sys::fns::cuDevicePrimaryCtxRetain = cuDevicePrimaryCtxRetain;
const _: sys::fns::cuCtxGetCurrent = cuCtxGetCurrent;
const _: sys::fns::cuCtxSetCurrent = cuCtxSetCurrent;
const _: sys::fns::cuCtxGetDevice = cuCtxGetDevice;
const _: sys::fns::cuMemAlloc_v2 = cuMemAlloc_v2;
const _: sys::fns::cuMemFree_v2 = cuMemFree_v2;
const _: sys::fns::cuMemGetInfo_v2 = cuMemGetInfo_v2;
const _: sys::fns::cuMemcpyHtoD_v2 = cuMemcpyHtoD_v2;
const _: sys::fns::cuMemcpyDtoH_v2 = cuMemcpyDtoH_v2;
const _: sys::fns::cuMemsetD8_v2 = cuMemsetD8_v2;
const _: sys::fns::cuCtxSynchronize = cuCtxSynchronize;
const _: sys::fns::cuGetErrorName = cuGetErrorName;
const _: sys::fns::cuGetErrorString = cuGetErrorString;

/// What `cuDriverGetVersion` answers: CUDA 12.8.
const DRIVER_VERSION: c_int = 12080;
/// This library's name in diagnostics.
const LIBRARY: &str = sys::LIBRARY;

/// Set by the first successful `cuInit`.
static INITIALIZED: AtomicBool = AtomicBool::new(false);
/// The ordinals whose primary context was retained.
static RETAINED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

thread_local! {
    /// The ordinal whose primary context is current on this thread, if any.
    static BOUND: Cell<Option<u32>> = const { Cell::new(None) };
}

/// A primary context's handle: the ordinal plus one, so it is never null. Never dereferenced.
fn context_handle(ordinal: u32) -> CUcontext {
    std::ptr::without_provenance_mut(ordinal as usize + 1)
}

/// The ordinal of a handle made by [`context_handle`] and retained, if it is one.
fn context_ordinal(context: CUcontext) -> Option<u32> {
    let ordinal = u32::try_from(context.addr().checked_sub(1)?).ok()?;
    let retained = RETAINED.lock().unwrap_or_else(PoisonError::into_inner);
    retained.contains(&ordinal).then_some(ordinal)
}

/// The thread's current context's ordinal, or `CUDA_ERROR_INVALID_CONTEXT`.
fn bound() -> Result<u32, CUresult> {
    BOUND.get().ok_or(CUDA_ERROR_INVALID_CONTEXT)
}

/// Runs an exported call's body after `cuInit`, catching panics.
fn call(body: impl FnOnce(&Fake) -> Result<(), CUresult>) -> CUresult {
    guard(UNKNOWN, || {
        if !INITIALIZED.load(Ordering::Acquire) {
            return CUDA_ERROR_NOT_INITIALIZED;
        }
        match fake(TorchBuild::Cuda, LIBRARY) {
            Ok(fake) => status(body(fake)),
            Err(_) => CUDA_ERROR_NOT_INITIALIZED,
        }
    })
}

/// `int devsim_fake_driver(void)`: the marker devsim looks for, so that this library is never taken for a
/// real driver (the run header says FAKE DRIVER and `--require-live` does not count its scenarios).
#[unsafe(no_mangle)]
pub extern "C" fn devsim_fake_driver() -> c_int {
    1
}

/// `CUresult cuInit(unsigned int Flags)`: loads the profile named by `DEVSIM_FAKE_HOST`.
#[unsafe(no_mangle)]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    guard(UNKNOWN, || {
        if flags != 0 {
            return INVALID_VALUE;
        }
        match fake(TorchBuild::Cuda, LIBRARY) {
            Ok(fake) if fake.rejected().is_some() => INVALID_DEVICE,
            Ok(fake) if fake.visible() > 0 => {
                INITIALIZED.store(true, Ordering::Release);
                CUDA_SUCCESS
            }
            _ => NO_DEVICE,
        }
    })
}

/// `CUresult cuDriverGetVersion(int *driverVersion)`. Needs no `cuInit`.
///
/// # Safety
///
/// `version` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    // SAFETY: the caller passes a null or writable `int` pointer.
    guard(UNKNOWN, || status(unsafe { put(version, DRIVER_VERSION) }))
}

/// `CUresult cuDeviceGetCount(int *count)`.
///
/// # Safety
///
/// `count` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    call(|fake| {
        let n = fake.runtime().device_count().map_err(code)?;
        // SAFETY: the caller passes a null or writable `int` pointer.
        unsafe { put(count, c_int::try_from(n).unwrap_or(c_int::MAX)) }
    })
}

/// `CUresult cuDeviceGet(CUdevice *device, int ordinal)`: the handle is the ordinal.
///
/// # Safety
///
/// `device` is null or valid for writing one `CUdevice`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CUresult {
    call(|fake| {
        fake.ordinal(ordinal)?;
        // SAFETY: the caller passes a null or writable `CUdevice` pointer.
        unsafe { put(device, ordinal) }
    })
}

/// `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`.
///
/// # Safety
///
/// `name` is null or valid for writing `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    call(|fake| {
        let ordinal = fake.ordinal(dev)?;
        let text = fake.runtime().device_name(ordinal).map_err(code)?;
        // SAFETY: the caller passes a null pointer or `len` writable bytes.
        unsafe { put_c_string(name, len, &text) }
    })
}

/// `CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)`: the profile's UUID as 16 bytes; a
/// profile UUID that is not 32 hex digits is `CUDA_ERROR_INVALID_VALUE` (no real driver has one).
///
/// # Safety
///
/// `uuid` is null or valid for writing one `CUuuid`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut sys::CUuuid, dev: CUdevice) -> CUresult {
    call(|fake| {
        let ordinal = fake.ordinal(dev)?;
        let bytes = uuid_bytes(fake.uuid(ordinal)?).ok_or(INVALID_VALUE)?;
        let value = sys::CUuuid {
            bytes: bytes.map(|b| c_char::from_ne_bytes([b])),
        };
        // SAFETY: the caller passes a null or writable `CUuuid` pointer.
        unsafe { put(uuid, value) }
    })
}

/// `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`: compute
/// capability major (75) and minor (76), and opt-in shared memory per block (97). Any other
/// attribute is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
///
/// `value` is null or valid for writing one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    dev: CUdevice,
) -> CUresult {
    call(|fake| {
        let ordinal = fake.ordinal(dev)?;
        let runtime = fake.runtime();
        let answer = match attribute {
            ATTR_COMPUTE_CAPABILITY_MAJOR => runtime.nvidia_capability(ordinal).map(|cc| cc.major),
            ATTR_COMPUTE_CAPABILITY_MINOR => runtime.nvidia_capability(ordinal).map(|cc| cc.minor),
            ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => runtime.smem_optin(ordinal),
            _ => return Err(INVALID_VALUE),
        }
        .map_err(code)?;
        // SAFETY: the caller passes a null or writable `int` pointer.
        unsafe { put(value, c_int::try_from(answer).unwrap_or(c_int::MAX)) }
    })
}

/// `CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)`: the handle is `dev + 1`.
///
/// # Safety
///
/// `context` is null or valid for writing one `CUcontext`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(
    context: *mut CUcontext,
    dev: CUdevice,
) -> CUresult {
    call(|fake| {
        let ordinal = fake.ordinal(dev)?;
        // SAFETY: the caller passes a null or writable `CUcontext` pointer.
        unsafe { put(context, context_handle(ordinal)) }?;
        RETAINED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ordinal);
        Ok(())
    })
}

/// `CUresult cuCtxGetCurrent(CUcontext *pctx)`: null when no context is current on this thread.
///
/// # Safety
///
/// `context` is null or valid for writing one `CUcontext`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(context: *mut CUcontext) -> CUresult {
    call(|_| {
        let handle = BOUND.get().map_or(std::ptr::null_mut(), context_handle);
        // SAFETY: the caller passes a null or writable `CUcontext` pointer.
        unsafe { put(context, handle) }
    })
}

/// `CUresult cuCtxSetCurrent(CUcontext ctx)`: binds a retained primary context to this thread
/// (making its device current), or unbinds with null.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetCurrent(context: CUcontext) -> CUresult {
    call(|fake| {
        if context.is_null() {
            BOUND.set(None);
            return Ok(());
        }
        let ordinal = context_ordinal(context).ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        fake.runtime().set_device(ordinal).map_err(code)?;
        BOUND.set(Some(ordinal));
        Ok(())
    })
}

/// `CUresult cuCtxGetDevice(CUdevice *device)`: the current context's device.
///
/// # Safety
///
/// `device` is null or valid for writing one `CUdevice`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CUresult {
    call(|fake| {
        bound()?;
        let ordinal = fake.runtime().get_device().map_err(code)?;
        // SAFETY: the caller passes a null or writable `CUdevice` pointer.
        unsafe { put(device, c_int::try_from(ordinal).unwrap_or(c_int::MAX)) }
    })
}

/// `CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)`: on the current context's device;
/// zero bytes is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
///
/// `ptr` is null or valid for writing one `CUdeviceptr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(ptr: *mut CUdeviceptr, bytes: usize) -> CUresult {
    call(|fake| {
        bound()?;
        if ptr.is_null() || bytes == 0 {
            return Err(INVALID_VALUE);
        }
        let address = fake.alloc(bytes)?;
        // SAFETY: the caller passes a writable `CUdeviceptr` pointer (checked non-null above).
        unsafe { put(ptr, address) }
    })
}

/// `CUresult cuMemGetInfo_v2(size_t *free, size_t *total)`: the current context's device, counted in
/// 2 MiB pages.
///
/// # Safety
///
/// `free` and `total` are null or valid for writing one `size_t` each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    call(|fake| {
        bound()?;
        let (available, all) = fake.mem_info()?;
        // SAFETY: the caller passes writable `size_t` pointers (`put` refuses null ones).
        unsafe { put(free, available) }?;
        // SAFETY: as above.
        unsafe { put(total, all) }
    })
}

/// `CUresult cuMemFree_v2(CUdeviceptr dptr)`.
#[unsafe(no_mangle)]
pub extern "C" fn cuMemFree_v2(ptr: CUdeviceptr) -> CUresult {
    call(|fake| {
        bound()?;
        fake.free(ptr)
    })
}

/// `CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)`.
///
/// # Safety
///
/// `src` is null or valid for reading `bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
) -> CUresult {
    call(|fake| {
        bound()?;
        // SAFETY: the caller passes a null pointer or `bytes` readable bytes.
        let data = unsafe { host_bytes(src.cast(), bytes) }?;
        fake.copy_in(dst, data)
    })
}

/// `CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)`.
///
/// # Safety
///
/// `dst` is null or valid for writing `bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    call(|fake| {
        bound()?;
        let data = fake.copy_out(src, bytes)?;
        // SAFETY: the caller passes a null pointer or `bytes` writable bytes.
        unsafe { put_host_bytes(dst.cast(), &data) }
    })
}

/// `CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)`: the driver-only
/// launch (a `launch` on the current device, for faults) and the write.
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, value: u8, count: usize) -> CUresult {
    call(|fake| {
        bound()?;
        fake.memset(dst, value, count)
    })
}

/// `CUresult cuCtxSynchronize(void)`.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    call(|fake| {
        bound()?;
        fake.runtime().synchronize().map_err(code)
    })
}

/// The name and description of a `CUresult`, from the table `devsim-sys` shares.
fn describe(error: CUresult) -> Option<(*const c_char, *const c_char)> {
    sys::ERRORS
        .iter()
        .find(|(code, _, _)| *code == error)
        .map(|(_, name, text)| (name.as_ptr(), text.as_ptr()))
}

/// Points `out` at the name or description of `error`; an unknown code is
/// `CUDA_ERROR_INVALID_VALUE` with `*out` set to null, as the real driver does.
///
/// # Safety
///
/// `out` is null or valid for writing one `const char *`.
unsafe fn error_text(
    error: CUresult,
    out: *mut *const c_char,
    pick: fn((*const c_char, *const c_char)) -> *const c_char,
) -> CUresult {
    guard(UNKNOWN, || {
        let text = describe(error).map(pick);
        // SAFETY: the caller passes a null or writable `const char *` pointer.
        let stored = unsafe { put(out, text.unwrap_or(std::ptr::null())) };
        match (stored, text) {
            (Ok(()), Some(_)) => CUDA_SUCCESS,
            (Err(code), _) => code,
            (Ok(()), None) => INVALID_VALUE,
        }
    })
}

/// `CUresult cuGetErrorName(CUresult error, const char **pStr)`. Needs no `cuInit`.
///
/// # Safety
///
/// `out` is null or valid for writing one `const char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, out: *mut *const c_char) -> CUresult {
    // SAFETY: forwarded from this function's own contract.
    unsafe { error_text(error, out, |(name, _)| name) }
}

/// `CUresult cuGetErrorString(CUresult error, const char **pStr)`. Needs no `cuInit`.
///
/// # Safety
///
/// `out` is null or valid for writing one `const char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, out: *mut *const c_char) -> CUresult {
    // SAFETY: forwarded from this function's own contract.
    unsafe { error_text(error, out, |(_, text)| text) }
}

// Symbols a project's own native extension links against (vLLM 0.33's `_C_stable_libtorch` needs these three
// to load, subjects/vllm). devsim's client never resolves them; the fake exports them so that such an
// extension loads, and answers every call `CUDA_ERROR_NOT_SUPPORTED`: the fake runs no project code.

/// `CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *)`:
/// not supported (the fake hands out no entry points).
#[unsafe(no_mangle)]
pub extern "C" fn cuGetProcAddress_v2(
    _symbol: *const c_char,
    _pfn: *mut *mut c_void,
    _version: c_int,
    _flags: u64,
    _status: *mut c_int,
) -> CUresult {
    sys::CUDA_ERROR_NOT_SUPPORTED
}

/// `CUresult cuPointerGetAttribute(void *, CUpointer_attribute, CUdeviceptr)`: not supported.
#[unsafe(no_mangle)]
pub extern "C" fn cuPointerGetAttribute(
    _data: *mut c_void,
    _attribute: c_int,
    _ptr: CUdeviceptr,
) -> CUresult {
    sys::CUDA_ERROR_NOT_SUPPORTED
}

/// `CUresult cuTensorMapEncodeTiled(CUtensorMap *, ...)` (ten arguments): not supported. The arguments are
/// never read, so none are declared: the C calling convention lets the callee ignore them.
#[unsafe(no_mangle)]
pub extern "C" fn cuTensorMapEncodeTiled() -> CUresult {
    sys::CUDA_ERROR_NOT_SUPPORTED
}
