//! What CUDA and HIP share in turning a status code into a `Result`: a [`DriverStatus`] with `.result()`,
//! the driver's own `NAME: description` lookup, and the fallback when the driver cannot describe a
//! code. The two differ only in how they describe a code ([`Describe`]).

use std::ffi::{CStr, c_char};

use crate::runtime::DriverError;

/// How a driver names and describes its status codes: the one place CUDA and HIP differ here.
pub(crate) trait Describe {
    /// The C type of the status, used when the driver cannot describe a code (`CUresult 12`).
    const STATUS_TYPE: &'static str;
    /// The code for success (0 for both).
    const SUCCESS: i32;
    /// The code's name (`CUDA_ERROR_INVALID_DEVICE`), if the driver knows it.
    fn name(&self, code: i32) -> Option<String>;
    /// The code's description (`invalid device ordinal`), if the driver knows it.
    fn text(&self, code: i32) -> Option<String>;
}

/// A status code one driver call returned, named by its call: [`DriverStatus::result`] turns it into a
/// `Result`, as cudarc's `CUresult::result()` does, describing a failure through the driver itself.
#[must_use = "a status may be an error: turn it into a `Result` with `.result()`"]
pub(crate) struct DriverStatus<'d, D: Describe> {
    driver: &'d D,
    call: &'static str,
    code: i32,
}

impl<'d, D: Describe> DriverStatus<'d, D> {
    /// What `call` returned on `driver`.
    pub(crate) fn new(driver: &'d D, call: &'static str, code: i32) -> Self {
        Self { driver, call, code }
    }

    /// The raw code, for the few calls that read a failure as an answer (HIP's "no device" count).
    pub(crate) fn code(&self) -> i32 {
        self.code
    }

    /// `Ok` for success, else the call's [`DriverError`] with the driver's own `NAME: description`.
    pub(crate) fn result(self) -> Result<(), DriverError> {
        if self.code == D::SUCCESS {
            Ok(())
        } else {
            Err(error(self.driver, self.call, self.code))
        }
    }
}

/// A [`DriverError`] with the driver's own `NAME: description`, or `STATUS_TYPE N` when the driver
/// cannot describe the code.
pub(crate) fn error<D: Describe>(driver: &D, call: &str, code: i32) -> DriverError {
    let message = match (driver.name(code), driver.text(code)) {
        (Some(name), Some(text)) => format!("{name}: {text}"),
        (Some(name), None) => name,
        _ => format!("{} {code}", D::STATUS_TYPE),
    };
    DriverError {
        call: call.to_owned(),
        code,
        message,
    }
}

/// The call's error for `code`, with a note on why devsim produced it itself (an ordinal that does
/// not fit a C int, an address that does not fit a pointer).
pub(crate) fn refused(driver: &impl Describe, call: &str, code: i32, note: String) -> DriverError {
    let mut error = error(driver, call, code);
    error.message = format!("{} ({note})", error.message);
    error
}

/// A C string the driver returned, lossily decoded; `None` for NULL.
///
/// # Safety
///
/// `text` is NULL or points at a NUL-terminated string that outlives the call.
pub(crate) unsafe fn c_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null, and the caller guarantees a live NUL-terminated string.
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}
