//! Opening a native driver library and resolving its symbols, with typed errors instead of panics.
//!
//! Only fixed library names and well-known system folders are ever tried: each driver module passes a
//! constant candidate list (see [`super::cuda::CUDA_CANDIDATES`] and [`super::hip::HIP_CANDIDATES`]).
//! [`open_each`] tries every candidate until one opens *and* is accepted (every symbol resolves, the
//! version is supported); each refusal is kept, with its path and reason, for the error.
//! Nothing read from a scenario file, a host profile, an environment variable or any other input is
//! ever handed to `dlopen`, so a scenario cannot make devsim load arbitrary code. The dynamic loader's
//! own search (`LD_LIBRARY_PATH`, `ld.so.cache`) still applies to the bare names, as it does for any
//! program linked against these libraries.

use libloading::Library;
use thiserror::Error;

use crate::runtime::DriverError;

/// A native library that could not be opened, or lacks a symbol devsim needs.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LibraryError {
    /// No candidate could be opened.
    #[error("load {library}: not available (tried: {})", tried.join(", "))]
    NotAvailable {
        /// The library's usual name, e.g. `libcuda.so.1`.
        library: &'static str,
        /// Every candidate tried, in order, each as `path: dlopen error`.
        tried: Vec<String>,
    },
    /// The library opened but does not export a symbol.
    #[error("find symbol `{symbol}` in {library}")]
    MissingSymbol {
        /// The candidate that opened.
        library: String,
        /// The symbol looked up.
        symbol: &'static str,
    },
}

/// Why a driver could not be loaded: the library is missing or incomplete, or its init call failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DriverLoadError {
    /// The library could not be opened or lacks a symbol.
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// The library opened but its init call (`cuInit`, `hipInit`) failed.
    #[error("initialize {library}: {source}")]
    Driver {
        /// The candidate that opened.
        library: String,
        /// The init call's error.
        source: DriverError,
    },
}

/// Opens the first of `candidates` that `dlopen` accepts, returning it with the candidate that opened.
///
/// `library` names the library in errors. `candidates` must be fixed names or paths in well-known
/// system folders, never anything taken from input (see the module documentation). Every failure is
/// recorded as `candidate: dlopen error` in [`LibraryError::NotAvailable`].
pub fn open_first(
    library: &'static str,
    candidates: &[&str],
) -> Result<(Library, String), LibraryError> {
    let mut tried = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        // SAFETY: opening a library runs its initializers. Only the fixed driver names and system
        // folders listed by this crate's driver modules are passed here (module docs), so the code run
        // is the vendor's installed driver, which any CUDA or HIP program loads the same way.
        match unsafe { Library::new(candidate) } {
            Ok(lib) => return Ok((lib, candidate.to_owned())),
            Err(err) => tried.push(format!(
                "{candidate}: {}",
                strip_path(candidate, &err.to_string())
            )),
        }
    }
    Err(LibraryError::NotAvailable { library, tried })
}

/// A library that opened and was accepted: never unloaded (after init, a driver runs threads inside
/// its own code, so `dlclose` could unmap code that is still running; cudarc keeps it in a static for
/// the same reason). Each load leaks one `dlopen` reference.
pub struct Opened<T> {
    /// What the caller built from the library (its resolved function pointers).
    pub api: T,
    /// The candidate that opened, as written in the candidate list.
    pub candidate: String,
}

/// Opens each of `candidates` in turn and hands it to `accept`, which resolves what it needs (and
/// may call version queries); the first one accepted wins. A candidate that does not open, or that
/// `accept` refuses, is recorded as `candidate: reason` in [`LibraryError::NotAvailable`], and the
/// next is tried. Refused libraries stay loaded: `accept` may already have run their code.
///
/// `library` names the library in errors. `candidates` must be fixed names or paths in well-known
/// system folders, never anything taken from input (see the module documentation).
pub fn open_each<T>(
    library: &'static str,
    candidates: &[&str],
    mut accept: impl FnMut(&Library, &str) -> Result<T, String>,
) -> Result<Opened<T>, LibraryError> {
    let mut tried = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        let (opened, _) = match open_first(library, &[candidate]) {
            Ok(opened) => opened,
            Err(LibraryError::NotAvailable { tried: why, .. }) => {
                tried.extend(why);
                continue;
            }
            Err(other) => {
                tried.push(format!("{candidate}: {other}"));
                continue;
            }
        };
        let result = accept(&opened, candidate);
        // Kept loaded whether accepted or not (see above).
        std::mem::forget(opened);
        match result {
            Ok(api) => {
                return Ok(Opened {
                    api,
                    candidate: candidate.to_owned(),
                });
            }
            Err(reason) => tried.push(format!("{candidate}: {reason}")),
        }
    }
    Err(LibraryError::NotAvailable { library, tried })
}

/// The file the dynamic loader mapped for the object containing code `address` (a resolved
/// function's address), as `dladdr` reports it: the resolved path of a library opened by a bare name.
pub fn resolved_path(address: usize) -> Option<String> {
    let address = std::ptr::without_provenance::<std::ffi::c_void>(address);
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `dladdr` only reads `address` as a number and fills `info`, which is writable.
    let found = unsafe { libc::dladdr(address, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: `dladdr` succeeded, so `info` is initialized.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success `dli_fname` points at the loader's NUL-terminated path of the object.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = path.to_string_lossy().into_owned();
    // A relative name (possible when found through a relative `LD_LIBRARY_PATH`) is made absolute.
    Some(std::path::absolute(&path).map_or(path, |absolute| absolute.display().to_string()))
}

/// Resolves `symbol` in an opened library and copies out its value (for a function, its address).
///
/// `path` names the library in a [`LibraryError::MissingSymbol`] error.
///
/// # Safety
///
/// `T` must be the exact type of the symbol: for a function, an `unsafe extern "C" fn` pointer with
/// the C signature the library exports. The returned value must not be used after `library` is
/// unloaded.
pub unsafe fn resolve<T: Copy>(
    library: &Library,
    path: &str,
    symbol: &'static str,
) -> Result<T, LibraryError> {
    // SAFETY: the caller guarantees that `T` is the symbol's type. The value is copied out of the
    // `Symbol` guard; the caller keeps the library loaded while it is used.
    match unsafe { library.get::<T>(symbol.as_bytes()) } {
        Ok(found) => Ok(*found),
        Err(_) => Err(LibraryError::MissingSymbol {
            library: path.to_owned(),
            symbol,
        }),
    }
}

/// Drops the `path: ` prefix that `dlerror` already puts in front of its message, so the `tried`
/// entry does not repeat the path.
fn strip_path<'a>(path: &str, message: &'a str) -> &'a str {
    message
        .strip_prefix(path)
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
}

/// The text before the first NUL of a C `char` buffer (all of it if there is none), lossily decoded.
pub(crate) fn c_string(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// The symbol devsim's fake drivers export so that they are never taken for a real driver.
pub const FAKE_MARKER: &str = "devsim_fake_driver";

/// Whether `lib` exports [`FAKE_MARKER`]: one of devsim's fakes, not a GPU driver.
pub fn is_fake(lib: &Library) -> bool {
    // SAFETY: only the symbol's presence is read; it is never called.
    unsafe { lib.get::<unsafe extern "C" fn() -> i32>(FAKE_MARKER.as_bytes()) }.is_ok()
}
