//! Entering a device's context and restoring the caller's, also on error or panic.

use crate::runtime::DriverError;
use crate::runtime::Runtime;

/// Holds a device current for a scope and restores the caller's current device when dropped.
#[must_use = "dropping the guard restores the previous device at once"]
pub struct DeviceGuard<'a> {
    runtime: &'a dyn Runtime,
    previous: Option<u32>,
}

impl<'a> DeviceGuard<'a> {
    /// Makes `ordinal` current if it is not already; remembers what to restore.
    pub fn enter(runtime: &'a dyn Runtime, ordinal: u32) -> Result<Self, DriverError> {
        let current = runtime.get_device()?;
        if current == ordinal {
            return Ok(Self {
                runtime,
                previous: None,
            });
        }
        runtime.set_device(ordinal)?;
        Ok(Self {
            runtime,
            previous: Some(current),
        })
    }

    /// Restores the caller's device now, reporting a failure instead of swallowing it.
    pub fn restore(mut self) -> Result<(), DriverError> {
        match self.previous.take() {
            Some(previous) => self.runtime.set_device(previous),
            None => Ok(()),
        }
    }
}

impl Drop for DeviceGuard<'_> {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            // Best effort on the error and panic paths; the normal path calls `restore`.
            let _ = self.runtime.set_device(previous);
        }
    }
}
