//! What devsim's two fake GPU drivers share: the host profile, the simulated runtime behind them,
//! the device-pointer bookkeeping and the FFI guard.
//!
//! The fakes (`devsim-fake-cuda` builds `libcuda.so.1`, `devsim-fake-hip` builds `libamdhip64.so`)
//! export the driver symbols devsim's live runtime resolves. Each answers from the host profile named
//! by [`HOST_VARIABLE`], through a [`SimRuntime`]: the same per-thread current device, memory
//! bookkeeping and fault injection the simulated runs use. Each cdylib links its own copy of this
//! crate, so each has its own [`Fake`].
//!
//! Nothing here panics on input: a bad profile or a bad pointer is an error code, and every exported
//! function runs inside [`guard`], so a panic becomes an error code instead of unwinding into C.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use devsim::runtime::{Buffer, FaultInjector, LaunchOn};
use devsim::scenario::load_profile;
use devsim::visible::VISIBLE_DEVICE_VARIABLES;
use devsim::vocab::{TorchDevice, TorchType};
use devsim::{DriverError, Runtime, SimRuntime, TorchBuild};

/// The environment variable naming the host profile (a devsim `scenarios/hosts/*.toml` file) a
/// fake answers from.
pub const HOST_VARIABLE: &str = "DEVSIM_FAKE_HOST";

use devsim_sys::{cuda, hip};

/// "invalid value" (`CUDA_ERROR_INVALID_VALUE`, `hipErrorInvalidValue`): a null out-pointer, a
/// freed or unknown device pointer, a copy past the end of an allocation.
pub const INVALID_VALUE: c_int = cuda::CUDA_ERROR_INVALID_VALUE;
/// "out of memory" (`CUDA_ERROR_OUT_OF_MEMORY`, `hipErrorOutOfMemory`).
pub const OUT_OF_MEMORY: c_int = cuda::CUDA_ERROR_OUT_OF_MEMORY;
/// "no device" (`CUDA_ERROR_NO_DEVICE`, `hipErrorNoDevice`).
pub const NO_DEVICE: c_int = cuda::CUDA_ERROR_NO_DEVICE;
/// "invalid device" (`CUDA_ERROR_INVALID_DEVICE`, `hipErrorInvalidDevice`).
pub const INVALID_DEVICE: c_int = cuda::CUDA_ERROR_INVALID_DEVICE;
/// "unknown error" (`CUDA_ERROR_UNKNOWN`, `hipErrorUnknown`): what a caught panic returns.
pub const UNKNOWN: c_int = cuda::CUDA_ERROR_UNKNOWN;

// The codes above are shared only because the two APIs number them alike; checked, not assumed.
const _: () = assert!(INVALID_VALUE == hip::hipErrorInvalidValue);
const _: () = assert!(OUT_OF_MEMORY == hip::hipErrorOutOfMemory);
const _: () = assert!(NO_DEVICE == hip::hipErrorNoDevice);
const _: () = assert!(INVALID_DEVICE == hip::hipErrorInvalidDevice);
const _: () = assert!(UNKNOWN == hip::hipErrorUnknown);

/// The page in which fake device memory is counted (as real drivers count it): 2 MiB.
pub const PAGE_BYTES: usize = 2 << 20;
/// Each fake GPU's memory: 80 GiB.
pub const TOTAL_BYTES: usize = 80 << 30;

/// The largest single allocation, in bytes. Fake device memory is host memory, and a request the
/// host cannot satisfy would abort the process, so anything larger is `OUT_OF_MEMORY`.
pub const MAX_ALLOCATION: usize = 1 << 30;

/// One fake driver's state: the simulated runtime over the profile, and the live allocations.
pub struct Fake {
    runtime: FaultInjector<SimRuntime>,
    /// How many GPUs the process sees after the visible-device variables.
    visible: u32,
    /// The UUID of each visible GPU, by ordinal, as the profile writes it.
    uuids: Vec<String>,
    /// Why the driver refuses to initialise under this process's variables (a repeated CUDA
    /// ordinal), as devsim's model predicts the real one does.
    rejected: Option<String>,
    /// Live allocations by device address (the runtime's buffer handle).
    buffers: Mutex<HashMap<u64, Buffer>>,
}

/// The fake of this library, loaded on first use; `Err` says why it has no devices.
static FAKE: OnceLock<Result<Fake, String>> = OnceLock::new();

/// The fake for `build`, loading the profile on the first call. `Err` carries why the profile could
/// not be used (unset variable, unreadable or invalid profile, a profile for another build); the
/// reason is printed to stderr once, prefixed with `library`.
pub fn fake(build: TorchBuild, library: &str) -> Result<&'static Fake, &'static str> {
    FAKE.get_or_init(|| {
        let loaded = Fake::load(build);
        if let Err(reason) = &loaded {
            // Not `eprintln!`, which panics when stderr is closed.
            let _ = writeln!(
                std::io::stderr(),
                "devsim fake {library}: no devices: {reason}"
            );
        }
        loaded
    })
    .as_ref()
    .map_err(String::as_str)
}

impl Fake {
    /// Loads the profile named by [`HOST_VARIABLE`] for a `build` driver and applies this process's
    /// visible-device variables to it, as the real driver applies them to the real machine.
    pub fn load(build: TorchBuild) -> Result<Self, String> {
        let path = std::env::var_os(HOST_VARIABLE)
            .filter(|path| !path.is_empty())
            .ok_or_else(|| format!("{HOST_VARIABLE} is not set"))?;
        let mut host = load_profile(Path::new(&path))
            .map_err(|error| format!("{HOST_VARIABLE}={}: {error}", Path::new(&path).display()))?;
        if host.torch != build {
            return Err(format!(
                "{HOST_VARIABLE}={}: a {} host; this library drives {build} GPUs",
                Path::new(&path).display(),
                host.torch
            ));
        }
        // The profile is the machine; what the process sees is the driver's business. The profile's
        // own `env` (a scenario's mask) is replaced by this process's variables, and every thread
        // starts on device 0, as with a real driver.
        host.env = visible_variables();
        host.current = 0;
        let rejected = devsim::visible::runtime_rejects(host.torch, &host.env);
        let visible = host.visible().map_err(|error| error.to_string())?;
        let uuids = visible
            .iter()
            .filter_map(|physical| host.gpus.get(*physical))
            .map(|gpu| gpu.uuid.clone())
            .collect();
        let visible = u32::try_from(visible.len()).unwrap_or(u32::MAX);
        let faults = host.faults.clone();
        let runtime = SimRuntime::new(host).map_err(|error| error.to_string())?;
        // The profile's own `[[fault]]` tables fire at the C ABI, around the simulated machine.
        let runtime = FaultInjector::new(runtime, faults);
        Ok(Self {
            runtime,
            visible,
            uuids,
            rejected,
            buffers: Mutex::new(HashMap::new()),
        })
    }

    /// The simulated runtime: device queries, the current device, faults.
    pub fn runtime(&self) -> &FaultInjector<SimRuntime> {
        &self.runtime
    }

    /// How many GPUs the process sees.
    pub fn visible(&self) -> u32 {
        self.visible
    }

    /// Why the driver refuses to initialise, if it does (`cuInit` answers `INVALID_DEVICE`).
    pub fn rejected(&self) -> Option<&str> {
        self.rejected.as_deref()
    }

    /// The profile's UUID of the GPU at a visible ordinal.
    pub fn uuid(&self, ordinal: u32) -> Result<&str, c_int> {
        usize::try_from(ordinal)
            .ok()
            .and_then(|index| self.uuids.get(index))
            .map(String::as_str)
            .ok_or(INVALID_DEVICE)
    }

    /// `dev` as a visible ordinal, or `INVALID_DEVICE` when it names no visible GPU.
    pub fn ordinal(&self, dev: c_int) -> Result<u32, c_int> {
        u32::try_from(dev)
            .ok()
            .filter(|ordinal| *ordinal < self.visible)
            .ok_or(INVALID_DEVICE)
    }

    fn buffers(&self) -> MutexGuard<'_, HashMap<u64, Buffer>> {
        self.buffers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live allocation at exactly `ptr`, or `INVALID_VALUE` (freed or never allocated).
    fn buffer(&self, ptr: u64) -> Result<Buffer, c_int> {
        self.buffers().get(&ptr).cloned().ok_or(INVALID_VALUE)
    }

    /// Allocates `bytes` on the calling thread's current device; the address is the runtime's handle.
    pub fn alloc(&self, bytes: usize) -> Result<u64, c_int> {
        if bytes > MAX_ALLOCATION {
            return Err(OUT_OF_MEMORY);
        }
        let current = TorchDevice {
            kind: TorchType::Cuda,
            index: None,
        };
        let buffer = self.runtime.alloc(current, bytes).map_err(code)?;
        let ptr = buffer.handle;
        self.buffers().insert(ptr, buffer);
        Ok(ptr)
    }

    /// `(free, total)` device memory of the calling thread's current device, as a driver reports it:
    /// every live allocation there counted in whole pages of [`PAGE_BYTES`], out of [`TOTAL_BYTES`].
    pub fn mem_info(&self) -> Result<(usize, usize), c_int> {
        let current = self.runtime.get_device().map_err(code)?;
        let used: usize = self
            .buffers()
            .values()
            .filter(|buffer| buffer.place == devsim::runtime::Place::Gpu(current))
            .map(|buffer| buffer.bytes.max(1).next_multiple_of(PAGE_BYTES))
            .sum();
        Ok((TOTAL_BYTES.saturating_sub(used), TOTAL_BYTES))
    }

    /// Frees the allocation at `ptr`; a freed or unknown address is `INVALID_VALUE`.
    pub fn free(&self, ptr: u64) -> Result<(), c_int> {
        let buffer = self.buffer(ptr)?;
        self.runtime.free(&buffer).map_err(code)?;
        self.buffers().remove(&ptr);
        Ok(())
    }

    /// Writes `data` at the start of the allocation at `ptr`.
    pub fn copy_in(&self, ptr: u64, data: &[u8]) -> Result<(), c_int> {
        let buffer = self.buffer(ptr)?;
        if data.len() > buffer.bytes {
            return Err(INVALID_VALUE);
        }
        self.runtime.copy_in(&buffer, data).map_err(code)
    }

    /// Reads the first `len` bytes of the allocation at `ptr`.
    pub fn copy_out(&self, ptr: u64, len: usize) -> Result<Vec<u8>, c_int> {
        let buffer = self.buffer(ptr)?;
        if len > buffer.bytes {
            return Err(INVALID_VALUE);
        }
        let mut data = self.runtime.copy_out(&buffer).map_err(code)?;
        data.truncate(len);
        Ok(data)
    }

    /// Whether `ptr` is the address of a live allocation.
    pub fn is_device(&self, ptr: u64) -> bool {
        self.buffers().contains_key(&ptr)
    }

    /// Fills the first `len` bytes at `ptr` with `value`: the device work of a driver-only launch.
    /// It is a `launch` on the current device (where launch faults fire), then the write (a `copy`
    /// to the runtime's bookkeeping).
    pub fn memset(&self, ptr: u64, value: u8, len: usize) -> Result<(), c_int> {
        let buffer = self.buffer(ptr)?;
        if len > buffer.bytes {
            return Err(INVALID_VALUE);
        }
        self.runtime
            .launch(LaunchOn::CurrentDevice, "memset")
            .map_err(code)?;
        self.runtime
            .copy_in(&buffer, &vec![value; len])
            .map_err(code)
    }
}

/// This process's visible-device variables (only the three the drivers read; non-UTF-8 values are
/// ignored).
fn visible_variables() -> BTreeMap<String, String> {
    VISIBLE_DEVICE_VARIABLES
        .iter()
        .filter_map(|name| {
            std::env::var(name)
                .ok()
                .map(|value| ((*name).to_string(), value))
        })
        .collect()
}

/// The C error code of a runtime error: the simulated runtime already numbers its errors as CUDA
/// and HIP do (1, 2, 100, 101, 719, 801, 999 ...). Zero, which would read as success, becomes
/// `UNKNOWN`.
pub fn code(error: DriverError) -> c_int {
    if error.code == 0 { UNKNOWN } else { error.code }
}

/// The 16 bytes of a profile UUID: its 32 hex digits (dashes and a `GPU-` prefix skipped), as the
/// CUDA driver stores an NVIDIA UUID; `None` when it does not have exactly 32.
pub fn uuid_bytes(uuid: &str) -> Option<[u8; 16]> {
    let digits: Vec<u8> = uuid
        .strip_prefix("GPU-")
        .unwrap_or(uuid)
        .chars()
        .filter(|c| *c != '-')
        .map(|c| c.to_digit(16).and_then(|d| u8::try_from(d).ok()))
        .collect::<Option<_>>()?;
    if digits.len() != 32 {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks(2)) {
        *byte = pair[0] * 16 + pair[1];
    }
    Some(bytes)
}

/// `0` for `Ok`, the error code for `Err`.
pub fn status(result: Result<(), c_int>) -> c_int {
    match result {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// Runs the body of an exported function: a panic inside becomes `on_panic` instead of unwinding
/// into the C caller (which would abort the process).
pub fn guard<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}

/// Stores `value` through a C out-pointer; `INVALID_VALUE` when the pointer is null.
///
/// # Safety
///
/// `out` is null or valid for writing one `T` (the C API's contract for an out-parameter).
pub unsafe fn put<T>(out: *mut T, value: T) -> Result<(), c_int> {
    if out.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null, and the caller guarantees it is valid for one write of `T`.
    unsafe { out.write(value) };
    Ok(())
}

/// Copies `text` into a C `char` buffer of `len` bytes, truncated to `len - 1` bytes and always
/// NUL-terminated, as `cuDeviceGetName` and `hipDeviceGetName` do.
///
/// # Safety
///
/// `dst` is null or valid for writing `len` bytes.
pub unsafe fn put_c_string(dst: *mut c_char, len: c_int, text: &str) -> Result<(), c_int> {
    let Some(len) = usize::try_from(len).ok().filter(|len| *len > 0) else {
        return Err(INVALID_VALUE);
    };
    if dst.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null and, by the caller's contract, valid for `len` writable bytes.
    let buffer = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
    write_c_string(buffer, text);
    Ok(())
}

/// Copies `text` into `buffer`, truncated to leave room for the NUL, which is always written.
pub fn write_c_string(buffer: &mut [u8], text: &str) {
    let Some(room) = buffer.len().checked_sub(1) else {
        return;
    };
    let n = text.len().min(room);
    buffer[..n].copy_from_slice(&text.as_bytes()[..n]);
    buffer[n] = 0;
}

/// A host buffer handed in by C as `(pointer, length)`, as a slice; empty for a zero length.
/// `INVALID_VALUE` for a null pointer with a non-zero length.
///
/// # Safety
///
/// `ptr` is null or valid for reading `len` bytes for the returned lifetime.
pub unsafe fn host_bytes<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8], c_int> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null and, by the caller's contract, valid for `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Copies `data` into a host buffer handed in by C; `INVALID_VALUE` for a null pointer with data.
///
/// # Safety
///
/// `dst` is null or valid for writing `data.len()` bytes, and does not overlap `data`.
pub unsafe fn put_host_bytes(dst: *mut u8, data: &[u8]) -> Result<(), c_int> {
    if data.is_empty() {
        return Ok(());
    }
    if dst.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null, valid for `data.len()` writes by the caller's contract, and `data` is a
    // separate allocation (the runtime's copy of device memory).
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings_are_truncated_and_terminated() {
        let mut buffer = [0xffu8; 4];
        write_c_string(&mut buffer, "gfx1201");
        assert_eq!(&buffer, b"gfx\0");
        let mut buffer = [0xffu8; 8];
        write_c_string(&mut buffer, "ab");
        assert_eq!(&buffer[..3], b"ab\0");
        write_c_string(&mut [], "ignored");
    }

    #[test]
    fn profile_uuids_become_sixteen_bytes() {
        let bytes = uuid_bytes("GPU-00000001-0000-4000-8000-0000000000ff").expect("32 digits");
        assert_eq!(bytes[3], 1);
        assert_eq!(bytes[6], 0x40);
        assert_eq!(bytes[15], 0xff);
        assert_eq!(uuid_bytes("GPU-00000001-0000-4000-8000-devsim000000"), None);
        assert_eq!(uuid_bytes("GPU-0001"), None);
    }

    #[test]
    fn a_panic_becomes_the_error_code() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let answer = guard(UNKNOWN, || -> c_int { panic!("inside the fake") });
        std::panic::set_hook(previous);
        assert_eq!(answer, UNKNOWN);
    }

    #[test]
    fn null_out_pointers_are_invalid_values() {
        // SAFETY: a null pointer is allowed and answered with an error.
        let result = unsafe { put::<c_int>(std::ptr::null_mut(), 1) };
        assert_eq!(result, Err(INVALID_VALUE));
        // SAFETY: as above.
        let result = unsafe { host_bytes(std::ptr::null(), 4) };
        assert_eq!(result, Err(INVALID_VALUE));
    }
}
