//! The native driver layer: a missing library or symbol is a typed error naming what was tried, and a
//! driver that does load (on a GPU machine) answers real calls.

use devsim::runtime::live::cuda::{CUDA_CANDIDATES, CUDA_LIBRARY, CudaDriver};
use devsim::runtime::live::driver::GpuDriver;
use devsim::runtime::live::hip::{HIP_CANDIDATES, HIP_LIBRARY, HipApi, HipDriver};
use devsim::runtime::live::library::{DriverLoadError, LibraryError, open_first, resolve};

/// Asserts `error` is `NotAvailable` for `library`, listing each candidate once, in order.
fn check_not_available(error: &LibraryError, library: &str, candidates: &[&str]) {
    let LibraryError::NotAvailable {
        library: named,
        tried,
    } = error
    else {
        panic!("expected NotAvailable, got {error:?}");
    };
    assert_eq!(*named, library);
    assert_eq!(tried.len(), candidates.len(), "{tried:?}");
    for (entry, candidate) in tried.iter().zip(candidates) {
        let reason = entry
            .strip_prefix(&format!("{candidate}: "))
            .unwrap_or_else(|| panic!("`{entry}` does not start with `{candidate}: `"));
        assert!(!reason.is_empty(), "no dlopen error for {candidate}");
        assert!(
            !reason.starts_with(&format!("{candidate}:")),
            "path repeated: {entry}"
        );
    }
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("load {library}: not available (tried: ")),
        "{message}"
    );
    for candidate in candidates {
        assert!(
            message.contains(candidate),
            "{candidate} missing from: {message}"
        );
    }
}

/// Asserts a failed driver load is typed; where the library is absent, that it names every candidate.
fn check_load_error(error: &DriverLoadError, library: &str, candidates: &[&str], init_call: &str) {
    match error {
        DriverLoadError::Library(inner @ LibraryError::NotAvailable { .. }) => {
            println!("{library}: absent, as expected on a machine without it: {error}");
            check_not_available(inner, library, candidates);
            assert_eq!(error.to_string(), inner.to_string());
        }
        DriverLoadError::Library(LibraryError::MissingSymbol {
            library: path,
            symbol,
        }) => {
            println!("{library}: {path} opened but lacks {symbol}: {error}");
            assert!(candidates.contains(&path.as_str()), "{path}");
        }
        DriverLoadError::Driver {
            library: path,
            source,
        } => {
            println!("{library}: {path} opened but init failed: {error}");
            assert_eq!(source.call, init_call);
            assert_ne!(source.code, 0);
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("initialize {path}: {init_call}: "))
            );
        }
    }
}

#[test]
fn cuda_driver_loads_or_says_why_not() {
    let driver = match CudaDriver::load() {
        Ok(driver) => driver,
        Err(error) => return check_load_error(&error, CUDA_LIBRARY, &CUDA_CANDIDATES, "cuInit"),
    };
    let count = driver.device_count().expect("cuDeviceGetCount");
    let version = driver.version().expect("cuDriverGetVersion");
    println!(
        "{CUDA_LIBRARY}: loaded {} (version {version}), {count} device(s)",
        driver.path()
    );
    assert!(CUDA_CANDIDATES.contains(&driver.api().candidate()));
    assert!(version > 0);
    for ordinal in (0..count).rev() {
        driver.set_device(ordinal).expect("set_device");
        assert_eq!(driver.current_device().expect("current_device"), ordinal);
        let name = driver.name(ordinal).expect("name");
        let capability = driver.capability(ordinal).expect("capability");
        let smem = driver.smem_optin(ordinal).expect("smem_optin");
        println!(
            "  device {ordinal}: {name}, sm_{}{}, smem optin {smem}",
            capability.0, capability.1
        );
        assert!(!name.is_empty());
        assert!(capability.0 >= 3 && smem > 0);

        let ptr = driver.alloc(64).expect("alloc");
        let data: Vec<u8> = (0..64).collect();
        driver.copy_in(ptr, &data).expect("copy_in");
        assert_eq!(driver.copy_out(ptr, 64).expect("copy_out"), data);
        driver.memset(ptr + 8, 0xAB, 8).expect("memset");
        driver.synchronize().expect("synchronize");
        let after = driver.copy_out(ptr, 64).expect("copy_out");
        assert_eq!(&after[8..16], &[0xAB; 8]);
        assert_eq!(&after[16..], &data[16..]);
        driver.free(ptr).expect("free");
    }
    if count > 0 {
        let error = driver.name(count).expect_err("an ordinal past the count");
        println!("  past the count: {error}");
        assert_eq!(error.call, "cuDeviceGet");
        assert!(
            error.message.starts_with("CUDA_ERROR_INVALID_DEVICE: "),
            "{error}"
        );
    }
}

#[test]
fn hip_driver_loads_or_says_why_not() {
    let driver = match HipDriver::load() {
        Ok(driver) => driver,
        Err(error) => return check_load_error(&error, HIP_LIBRARY, &HIP_CANDIDATES, "hipInit"),
    };
    let count = driver.device_count().expect("hipGetDeviceCount");
    println!("{HIP_LIBRARY}: loaded {}, {count} device(s)", driver.path());
    assert!(HIP_CANDIDATES.contains(&driver.api().candidate()));
    for ordinal in (0..count).rev() {
        driver.set_device(ordinal).expect("set_device");
        assert_eq!(driver.current_device().expect("current_device"), ordinal);
        let arch = driver.gcn_arch_name(ordinal).expect("gcn_arch_name");
        let name = driver.name(ordinal).expect("name");
        let capability = driver.capability(ordinal).expect("capability");
        println!("  device {ordinal}: {name}, {arch}, capability {capability:?}");
        assert!(arch.starts_with("gfx"), "{arch}");

        let ptr = driver.alloc(64).expect("alloc");
        let data: Vec<u8> = (0..64).collect();
        driver.copy_in(ptr, &data).expect("copy_in");
        driver.memset(ptr, 0xCD, 4).expect("memset");
        driver.synchronize().expect("synchronize");
        let after = driver.copy_out(ptr, 64).expect("copy_out");
        assert_eq!(&after[..4], &[0xCD; 4]);
        assert_eq!(&after[4..], &data[4..]);
        driver.free(ptr).expect("free");
    }
}

#[test]
fn open_first_lists_every_candidate_it_tried() {
    let candidates = [
        "/nonexistent/devsim/libnothing.so",
        "libdevsim-no-such-library.so.9",
    ];
    let error = open_first("libnothing.so", &candidates).expect_err("nothing to open");
    check_not_available(&error, "libnothing.so", &candidates);
}

#[test]
fn open_first_returns_the_candidate_that_opened() {
    let candidates = ["libdevsim-no-such-library.so.9", "libc.so.6"];
    let (_library, path) = open_first("libc.so.6", &candidates).expect("libc opens");
    assert_eq!(path, "libc.so.6");
}

#[test]
fn a_missing_symbol_is_named() {
    let (library, path) = open_first("libc.so.6", &["libc.so.6"]).expect("libc opens");
    // SAFETY: the type is never used: the symbol does not exist in libc.
    let result = unsafe { resolve::<unsafe extern "C" fn() -> i32>(&library, &path, "cuInit") };
    let error = result.expect_err("libc has no cuInit");
    assert_eq!(
        error,
        LibraryError::MissingSymbol {
            library: "libc.so.6".into(),
            symbol: "cuInit"
        }
    );
    assert_eq!(error.to_string(), "find symbol `cuInit` in libc.so.6");
}

#[test]
fn a_present_symbol_resolves_to_the_function() {
    let (library, path) = open_first("libc.so.6", &["libc.so.6"]).expect("libc opens");
    // SAFETY: `pid_t getpid(void)`, and pid_t is a 32-bit int on Linux.
    let getpid = unsafe { resolve::<unsafe extern "C" fn() -> i32>(&library, &path, "getpid") }
        .expect("libc has getpid");
    // SAFETY: getpid takes nothing and cannot fail; `library` is still loaded.
    let pid = unsafe { getpid() };
    assert_eq!(u32::try_from(pid).ok(), Some(std::process::id()));
}

/// Debian 12's `libamdhip64-5` (HIP 5.2), which `.ci/run` installs.
const DEBIAN_HIP5: &str = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";

/// An old ROCm is refused by version, naming the path, and the next candidate is tried.
#[test]
fn rocm_older_than_6_is_refused_with_its_version_and_path() {
    if !std::path::Path::new(DEBIAN_HIP5).exists() {
        let reason = format!("{DEBIAN_HIP5} is absent (apt-get install libamdhip64-5)");
        assert!(
            std::env::var("CI").map_or(true, |ci| ci != "true"),
            "under CI the library must be installed: {reason}"
        );
        println!("skipped: {reason}");
        return;
    }
    let candidates = ["libamdhip64.so.5", "libdevsim-no-such-library.so.9"];
    let Err(error) = HipApi::load_from(&candidates) else {
        panic!("HIP 5.2 was accepted");
    };
    let LibraryError::NotAvailable { tried, .. } = &error else {
        panic!("expected NotAvailable, got {error:?}");
    };
    assert_eq!(
        tried.len(),
        2,
        "the later candidate is tried too: {tried:?}"
    );
    let refusal = &tried[0];
    assert!(
        refusal.starts_with("libamdhip64.so.5: ROCm 6.0 or newer is needed; found HIP 5.2 at /"),
        "{refusal}"
    );
    assert!(refusal.contains("libamdhip64.so.5"), "{refusal}");
    println!("{error}");
}
