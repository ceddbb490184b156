//! The runtime layer's error: a driver call that failed, with the driver's own code and message.

use thiserror::Error;

/// A runtime call that failed, with the driver's own code and message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{call}: {message} (driver code {code})")]
pub struct DriverError {
    /// The runtime call (`set_device`, `cuDeviceGetAttribute` ...).
    pub call: String,
    /// The driver's numeric error code.
    pub code: i32,
    /// The driver's own message, e.g. `CUDA_ERROR_INVALID_DEVICE: invalid device ordinal`.
    pub message: String,
}
