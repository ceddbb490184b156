//! The fakes' C ABI called directly: each answers with the real driver's codes (invalid values, devices
//! and contexts, out of memory, double frees), its error names and strings, and per-thread current devices.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::Path;
use std::process::Command;

use devsim_sys::cuda;
use libloading::Library;

use crate::common::{Fake, profile_path, text};

/// Runs this trial again in a child process with `fake`'s library and `profile` named in its
/// environment (the child calls the C ABI directly), and checks the child passed.
fn abi_check(fake: Fake, profile: &str) {
    let path = fake.library();
    let output = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "abi::the_fakes_answer_with_the_drivers_error_codes",
            "--exact",
            "--nocapture",
        ])
        .args(["--test-threads", "1"])
        .env("DEVSIM_FAKE_ABI_LIBRARY", &path)
        .env("DEVSIM_FAKE_HOST", profile_path(profile))
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("HIP_VISIBLE_DEVICES")
        .env_remove("ROCR_VISIBLE_DEVICES")
        .output()
        .expect("run the ABI child");
    let stdout = text(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{}: the ABI checks failed:\n{stdout}\n{}",
        path.display(),
        text(&output.stderr)
    );
}

/// In the parent: runs this trial again as a child per fake. In the child (`DEVSIM_FAKE_ABI_LIBRARY`
/// set): calls the fake's C ABI directly (the fake reads its profile from the environment at first
/// use, which a test must not set in its own process).
pub fn the_fakes_answer_with_the_drivers_error_codes() {
    let Some(path) = std::env::var_os("DEVSIM_FAKE_ABI_LIBRARY") else {
        abi_check(Fake::Cuda, "h200x2");
        abi_check(Fake::HipOnly, "amd_mixed");
        return;
    };
    // SAFETY: the library is one of this workspace's fakes, built by scripts/build-fake-drivers;
    // its initializers are Rust's own.
    let library = unsafe { libloading::Library::new(&path) }.expect("open the fake");
    // Never unloaded, as devsim never unloads a driver: the fake's thread-local destructors run
    // from its own code when this thread exits.
    let library = std::mem::ManuallyDrop::new(library);
    if Path::new(&path).ends_with(cuda::LIBRARY) {
        cuda_abi(&library);
    } else {
        hip_abi(&library);
    }
}

/// Resolves `name` as a function pointer of type `T`.
///
/// # Safety
///
/// `T` is the symbol's C signature.
unsafe fn get<T: Copy>(library: &Library, name: &str) -> T {
    // SAFETY: the caller guarantees the type; the library outlives every call in this module.
    *unsafe { library.get::<T>(name.as_bytes()) }.unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn c_text(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// A C string returned by the library.
///
/// # Safety
///
/// `text` is a NUL-terminated string that lives as long as the library.
unsafe fn static_text(text: *const c_char) -> String {
    assert!(!text.is_null());
    // SAFETY: non-null, and the fake returns static NUL-terminated strings.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// The CUDA fake over `h200x2`.
fn cuda_abi(library: &Library) {
    // SAFETY: every type below is the C signature in `cuda.h` (and devsim's `cuda.rs`); every
    // pointer passed is a live local of the right type and size.
    unsafe {
        let init: devsim_sys::cuda::fns::cuInit = get(library, "cuInit");
        let count: devsim_sys::cuda::fns::cuDeviceGetCount = get(library, "cuDeviceGetCount");
        let device_get: devsim_sys::cuda::fns::cuDeviceGet = get(library, "cuDeviceGet");
        let name: devsim_sys::cuda::fns::cuDeviceGetName = get(library, "cuDeviceGetName");
        let attribute: devsim_sys::cuda::fns::cuDeviceGetAttribute =
            get(library, "cuDeviceGetAttribute");
        let retain: devsim_sys::cuda::fns::cuDevicePrimaryCtxRetain =
            get(library, "cuDevicePrimaryCtxRetain");
        let get_current: devsim_sys::cuda::fns::cuCtxGetCurrent = get(library, "cuCtxGetCurrent");
        let set_current: devsim_sys::cuda::fns::cuCtxSetCurrent = get(library, "cuCtxSetCurrent");
        let ctx_device: devsim_sys::cuda::fns::cuCtxGetDevice = get(library, "cuCtxGetDevice");
        let alloc: devsim_sys::cuda::fns::cuMemAlloc_v2 = get(library, "cuMemAlloc_v2");
        let free: devsim_sys::cuda::fns::cuMemFree_v2 = get(library, "cuMemFree_v2");
        let htod: devsim_sys::cuda::fns::cuMemcpyHtoD_v2 = get(library, "cuMemcpyHtoD_v2");
        let dtoh: devsim_sys::cuda::fns::cuMemcpyDtoH_v2 = get(library, "cuMemcpyDtoH_v2");
        let memset: devsim_sys::cuda::fns::cuMemsetD8_v2 = get(library, "cuMemsetD8_v2");
        let synchronize: devsim_sys::cuda::fns::cuCtxSynchronize = get(library, "cuCtxSynchronize");
        let error_name: devsim_sys::cuda::fns::cuGetErrorName = get(library, "cuGetErrorName");
        let error_string: devsim_sys::cuda::fns::cuGetErrorString =
            get(library, "cuGetErrorString");
        let version: devsim_sys::cuda::fns::cuDriverGetVersion = get(library, "cuDriverGetVersion");

        let mut n: c_int = -1;
        assert_eq!(version(&mut n), 0);
        assert!(n >= 12000, "{n}");
        assert_eq!(count(&mut n), 3, "CUDA_ERROR_NOT_INITIALIZED before cuInit");
        assert_eq!(init(1), 1, "flags must be 0");
        assert_eq!(init(0), 0);
        assert_eq!(count(&mut n), 0);
        assert_eq!(n, 2);
        assert_eq!(count(std::ptr::null_mut()), 1);

        let mut dev: c_int = -1;
        assert_eq!(device_get(&mut dev, 2), 101);
        assert_eq!(device_get(&mut dev, -1), 101);
        assert_eq!(device_get(&mut dev, 1), 0);
        assert_eq!(dev, 1);
        let mut buffer = [0xffu8; 64];
        assert_eq!(name(buffer.as_mut_ptr().cast(), 64, 1), 0);
        assert_eq!(c_text(&buffer), "NVIDIA H200");
        assert_eq!(name(buffer.as_mut_ptr().cast(), 4, 1), 0);
        assert_eq!(c_text(&buffer), "NVI");
        assert_eq!(name(buffer.as_mut_ptr().cast(), 64, 7), 101);
        for (attr, want) in [(75, 9), (76, 0), (97, 232_448)] {
            let mut value: c_int = -1;
            assert_eq!(attribute(&mut value, attr, 0), 0);
            assert_eq!(value, want, "attribute {attr}");
        }
        assert_eq!(attribute(&mut n, 1, 0), 1, "unmodelled attribute");

        let mut context: *mut c_void = std::ptr::dangling_mut();
        assert_eq!(get_current(&mut context), 0);
        assert!(
            context.is_null(),
            "no context is current before cuCtxSetCurrent"
        );
        let mut ptr: u64 = 0;
        assert_eq!(alloc(&mut ptr, 16), 201, "CUDA_ERROR_INVALID_CONTEXT");
        assert_eq!(ctx_device(&mut dev), 201);
        assert_eq!(synchronize(), 201);
        assert_eq!(set_current(std::ptr::without_provenance_mut(0x1000)), 201);
        assert_eq!(retain(&mut context, 1), 0);
        assert!(!context.is_null());
        assert_eq!(set_current(context), 0);
        let mut current: *mut c_void = std::ptr::null_mut();
        assert_eq!(get_current(&mut current), 0);
        assert_eq!(current, context);
        assert_eq!(ctx_device(&mut dev), 0);
        assert_eq!(dev, 1);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut other: *mut c_void = std::ptr::dangling_mut();
                assert_eq!(get_current(&mut other), 0);
                assert!(other.is_null(), "the context is per thread");
            });
        });

        assert_eq!(alloc(&mut ptr, 0), 1);
        assert_eq!(alloc(&mut ptr, 1 << 40), 2, "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(alloc(&mut ptr, 16), 0);
        let data: Vec<u8> = (0..16).collect();
        assert_eq!(htod(ptr, data.as_ptr().cast(), 16), 0);
        let mut back = [0u8; 16];
        assert_eq!(dtoh(back.as_mut_ptr().cast(), ptr, 16), 0);
        assert_eq!(back.as_slice(), data.as_slice());
        assert_eq!(htod(ptr, [0u8; 17].as_ptr().cast(), 17), 1, "past the end");
        assert_eq!(memset(ptr, 0x5a, 8), 0);
        assert_eq!(synchronize(), 0);
        assert_eq!(dtoh(back.as_mut_ptr().cast(), ptr, 16), 0);
        assert_eq!(&back[..8], &[0x5a; 8]);
        assert_eq!(&back[8..], &data[8..]);
        assert_eq!(free(ptr), 0);
        assert_eq!(free(ptr), 1, "double free");
        assert_eq!(dtoh(back.as_mut_ptr().cast(), ptr, 16), 1, "freed pointer");
        assert_eq!(memset(ptr + 1, 0, 1), 1, "unknown pointer");

        let mut text: *const c_char = std::ptr::null();
        for (code, want) in [
            (0, "CUDA_SUCCESS"),
            (1, "CUDA_ERROR_INVALID_VALUE"),
            (101, "CUDA_ERROR_INVALID_DEVICE"),
            (201, "CUDA_ERROR_INVALID_CONTEXT"),
            (719, "CUDA_ERROR_LAUNCH_FAILED"),
            (999, "CUDA_ERROR_UNKNOWN"),
        ] {
            assert_eq!(error_name(code, &mut text), 0);
            assert_eq!(static_text(text), want);
        }
        assert_eq!(error_string(100, &mut text), 0);
        assert_eq!(static_text(text), "no CUDA-capable device is detected");
        assert_eq!(error_name(12_345, &mut text), 1);
        assert!(text.is_null());
    }
}

/// The HIP fake over `amd_mixed`.
fn hip_abi(library: &Library) {
    // SAFETY: every type below is the C signature in `hip_runtime_api.h` (and devsim's
    // `hip.rs`); every pointer passed is a live local of the right type and size.
    unsafe {
        let init: devsim_sys::hip::fns::hipInit = get(library, "hipInit");
        let count: devsim_sys::hip::fns::hipGetDeviceCount = get(library, "hipGetDeviceCount");
        let get_device: devsim_sys::hip::fns::hipGetDevice = get(library, "hipGetDevice");
        let set_device: devsim_sys::hip::fns::hipSetDevice = get(library, "hipSetDevice");
        let attribute: devsim_sys::hip::fns::hipDeviceGetAttribute =
            get(library, "hipDeviceGetAttribute");
        let properties: devsim_sys::hip::fns::hipGetDevicePropertiesR0600 =
            get(library, "hipGetDevicePropertiesR0600");
        let malloc: devsim_sys::hip::fns::hipMalloc = get(library, "hipMalloc");
        let free: devsim_sys::hip::fns::hipFree = get(library, "hipFree");
        let memcpy: devsim_sys::hip::fns::hipMemcpy = get(library, "hipMemcpy");
        let memset: devsim_sys::hip::fns::hipMemset = get(library, "hipMemset");
        let error_name: devsim_sys::hip::fns::hipGetErrorName = get(library, "hipGetErrorName");
        let error_string: devsim_sys::hip::fns::hipGetErrorString =
            get(library, "hipGetErrorString");

        let mut n: c_int = -1;
        assert_eq!(count(&mut n), 0, "HIP initializes on first use");
        assert_eq!(n, 2);
        assert_eq!(init(0), 0);
        assert_eq!(get_device(&mut n), 0);
        assert_eq!(n, 0);
        assert_eq!(set_device(2), 101);
        assert_eq!(set_device(-1), 101);
        assert_eq!(set_device(1), 0);
        assert_eq!(get_device(&mut n), 0);
        assert_eq!(n, 1);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut other: c_int = -1;
                assert_eq!(get_device(&mut other), 0);
                assert_eq!(other, 0, "the current device is per thread");
            });
        });

        #[repr(C, align(8))]
        struct Props([u8; 4096]);
        let mut props = Box::new(Props([0xff; 4096]));
        let int_at = |props: &Props, offset: usize| {
            c_int::from_ne_bytes(props.0[offset..offset + 4].try_into().expect("4 bytes"))
        };
        assert_eq!(properties(props.0.as_mut_ptr().cast(), 0), 0);
        assert_eq!(c_text(&props.0[..256]), "AMD Instinct MI300X");
        assert_eq!(c_text(&props.0[1160..1416]), "gfx942:sramecc+:xnack-");
        assert_eq!((int_at(&props, 360), int_at(&props, 364)), (9, 4));
        assert_eq!(int_at(&props, 308), 64, "wavefront 64 on CDNA");
        assert_eq!(props.0[1471], 0, "the struct is zeroed");
        assert_eq!(
            props.0[1472], 0xff,
            "nothing past sizeof(hipDeviceProp_tR0600)"
        );
        assert_eq!(properties(props.0.as_mut_ptr().cast(), 1), 0);
        assert_eq!(c_text(&props.0[1160..1416]), "gfx1201");
        assert_eq!((int_at(&props, 360), int_at(&props, 364)), (12, 0));
        assert_eq!(int_at(&props, 308), 32, "wavefront 32 on RDNA");
        assert_eq!(properties(props.0.as_mut_ptr().cast(), 2), 101);
        assert_eq!(properties(std::ptr::null_mut(), 0), 1);
        for (attr, want) in [(23, 12), (61, 0), (75, 65_536)] {
            let mut value: c_int = -1;
            assert_eq!(attribute(&mut value, attr, 1), 0);
            assert_eq!(value, want, "attribute {attr}");
        }

        let mut ptr: *mut c_void = std::ptr::dangling_mut();
        assert_eq!(malloc(&mut ptr, 0), 0);
        assert!(ptr.is_null(), "hipMalloc of 0 bytes gives null");
        assert_eq!(free(std::ptr::null_mut()), 0, "hipFree(NULL) is a no-op");
        assert_eq!(malloc(&mut ptr, 16), 0);
        let data: Vec<u8> = (0..16).collect();
        assert_eq!(memcpy(ptr, data.as_ptr().cast(), 16, 1), 0);
        let mut back = [0u8; 16];
        assert_eq!(memcpy(back.as_mut_ptr().cast(), ptr, 16, 2), 0);
        assert_eq!(back.as_slice(), data.as_slice());
        assert_eq!(
            memcpy(back.as_mut_ptr().cast(), ptr, 16, 4),
            0,
            "default kind"
        );
        assert_eq!(memcpy(back.as_mut_ptr().cast(), ptr, 16, 9), 21);
        assert_eq!(
            memcpy(back.as_mut_ptr().cast(), ptr, 17, 2),
            1,
            "past the end"
        );
        assert_eq!(memset(ptr, 0x15a, 16), 0);
        assert_eq!(memcpy(back.as_mut_ptr().cast(), ptr, 16, 2), 0);
        assert_eq!(back, [0x5a; 16], "hipMemset writes the value's low byte");
        assert_eq!(free(ptr), 0);
        assert_eq!(free(ptr), 1, "double free");
        assert_eq!(
            memcpy(back.as_mut_ptr().cast(), ptr, 16, 2),
            1,
            "freed pointer"
        );

        for (code, want) in [
            (0, "hipSuccess"),
            (1, "hipErrorInvalidValue"),
            (100, "hipErrorNoDevice"),
            (101, "hipErrorInvalidDevice"),
            (719, "hipErrorLaunchFailure"),
            (999, "hipErrorUnknown"),
            (12_345, "hipErrorUnknown"),
        ] {
            assert_eq!(static_text(error_name(code)), want);
        }
        assert_eq!(static_text(error_string(101)), "invalid device ordinal");
    }
}
