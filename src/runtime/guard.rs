//! Entering a device's context and restoring the caller's, also on error or panic: one guard for the
//! simulated and live runtimes alike.

use crate::runtime::DriverError;
use crate::runtime::Runtime;

/// Whatever has a current device a guard can switch: a [`Runtime`] (dispatch code's view) or, inside the
/// live runtime, the driver itself.
pub trait CurrentDevice {
    /// The calling thread's current device.
    fn current_device(&self) -> Result<u32, DriverError>;
    /// Makes `ordinal` the calling thread's current device.
    fn make_current(&self, ordinal: u32) -> Result<(), DriverError>;
}

impl CurrentDevice for dyn Runtime + '_ {
    fn current_device(&self) -> Result<u32, DriverError> {
        self.get_device()
    }
    fn make_current(&self, ordinal: u32) -> Result<(), DriverError> {
        self.set_device(ordinal)
    }
}

/// Holds a device current for a scope and restores the caller's current device when dropped.
#[must_use = "dropping the guard restores the previous device at once"]
pub struct DeviceGuard<'a, D: CurrentDevice + ?Sized = dyn Runtime + 'a> {
    device: &'a D,
    previous: Option<u32>,
}

impl<'a, D: CurrentDevice + ?Sized> DeviceGuard<'a, D> {
    /// Makes `ordinal` current if it is not already; remembers what to restore.
    pub fn enter(device: &'a D, ordinal: u32) -> Result<Self, DriverError> {
        let current = device.current_device()?;
        if current == ordinal {
            return Ok(Self {
                device,
                previous: None,
            });
        }
        device.make_current(ordinal)?;
        Ok(Self {
            device,
            previous: Some(current),
        })
    }

    /// Restores the caller's device now, reporting a failure (named as the restore it was) instead of
    /// swallowing it.
    pub fn restore(mut self) -> Result<(), DriverError> {
        match self.previous.take() {
            Some(previous) => self
                .device
                .make_current(previous)
                .map_err(|error| DriverError {
                    call: format!("restore current device {previous} ({})", error.call),
                    ..error
                }),
            None => Ok(()),
        }
    }

    /// Runs `work` inside the guard's scope and restores afterwards. A failed restore fails the call even
    /// when `work` succeeded (the caller would go on with the wrong device current); `work`'s own error
    /// wins when both fail; on a panic the restore still happens, from the drop.
    pub fn scope<T>(
        device: &'a D,
        ordinal: u32,
        work: impl FnOnce() -> Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        let guard = Self::enter(device, ordinal)?;
        let result = work();
        let restored = guard.restore();
        let value = result?;
        restored?;
        Ok(value)
    }
}

impl<D: CurrentDevice + ?Sized> Drop for DeviceGuard<'_, D> {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            // Best effort on the error and panic paths; the normal path calls `restore`.
            let _ = self.device.make_current(previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A current device that refuses to make `refused` current.
    struct Device {
        current: Mutex<u32>,
        refused: Option<u32>,
    }

    impl CurrentDevice for Device {
        fn current_device(&self) -> Result<u32, DriverError> {
            Ok(*self.current.lock().unwrap_or_else(|e| e.into_inner()))
        }
        fn make_current(&self, ordinal: u32) -> Result<(), DriverError> {
            if self.refused == Some(ordinal) {
                return Err(DriverError {
                    call: "set_device".into(),
                    code: 101,
                    message: "refused".into(),
                });
            }
            *self.current.lock().unwrap_or_else(|e| e.into_inner()) = ordinal;
            Ok(())
        }
    }

    fn device(refused: Option<u32>) -> Device {
        Device {
            current: Mutex::new(0),
            refused,
        }
    }

    #[test]
    fn a_panic_inside_the_scope_still_restores_the_callers_device() {
        let device = device(None);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            DeviceGuard::scope(&device, 1, || -> Result<(), DriverError> {
                panic!("work panicked on GPU 1")
            })
        }));
        assert!(outcome.is_err());
        assert_eq!(device.current_device(), Ok(0));
    }

    #[test]
    fn a_failed_restore_fails_a_scope_whose_work_succeeded() {
        let device = device(Some(0));
        let error = DeviceGuard::scope(&device, 1, || Ok(7)).expect_err("restoring 0 fails");
        assert_eq!(error.call, "restore current device 0 (set_device)");
        assert_eq!(device.current_device(), Ok(1));
    }

    #[test]
    fn no_switch_is_made_or_undone_when_the_device_is_already_current() {
        let device = device(Some(0));
        assert_eq!(DeviceGuard::scope(&device, 0, || Ok(7)), Ok(7));
    }
}
