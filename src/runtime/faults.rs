//! Fault injection as a decorator over any runtime, simulated or live: a host's `[[host.fault]]` tables
//! make chosen calls fail with the build's driver error, between real calls on real hardware.

use std::sync::{Mutex, MutexGuard};

use crate::host::{Fault, driver_message};
use crate::runtime::DriverError;
use crate::runtime::{Buffer, ContextSwitch, LaunchOn, Place, Runtime};
use crate::trace::Call;
use crate::vocab::ComputeCapability;
use crate::vocab::TorchBuild;
use crate::vocab::{TorchDevice, TorchType};

/// Wraps a runtime and fails the calls a host's faults name.
///
/// Each fault counts the calls that match it (its `call`, or every device-scoped call when it names none;
/// its `device`, or any device); once `after` of them have gone through, every further matching call fails
/// with the fault's code and message (the build's name for the code when the message is empty) without
/// reaching the wrapped runtime. Only calls made through the injector count: questions asked of the wrapped
/// runtime directly (the runner's own reads of the current device) neither count nor fail.
pub struct FaultInjector<R> {
    inner: R,
    faults: Vec<Fault>,
    hits: Mutex<Vec<u32>>,
}

impl<R: Runtime> FaultInjector<R> {
    /// Wraps `inner`, injecting `faults`.
    pub fn new(inner: R, faults: Vec<Fault>) -> Self {
        let hits = Mutex::new(vec![0; faults.len()]);
        Self {
            inner,
            faults,
            hits,
        }
    }

    /// The wrapped runtime.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    fn hits(&self) -> MutexGuard<'_, Vec<u32>> {
        // Counters are plain integers: a panic elsewhere cannot leave them half-written.
        self.hits.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `call` on `device` against every matching fault; the first fault past its threshold fails it.
    fn check(&self, call: Call, device: Option<u32>) -> Result<(), DriverError> {
        if self.faults.is_empty() {
            return Ok(());
        }
        let mut hits = self.hits();
        for (fault, hit) in self.faults.iter().zip(hits.iter_mut()) {
            let call_matches = match fault.call {
                Some(wanted) => wanted == call,
                None => call.is_device_scoped(),
            };
            let device_matches = fault.device.is_none() || fault.device == device;
            if !(call_matches && device_matches) {
                continue;
            }
            if *hit >= fault.after {
                return Err(DriverError {
                    call: call.as_str().to_string(),
                    code: fault.code,
                    message: if fault.message.is_empty() {
                        driver_message(self.inner.build(), fault.code)
                    } else {
                        fault.message.clone()
                    },
                });
            }
            *hit += 1;
        }
        Ok(())
    }

    /// The device a call on the current device concerns, read from the wrapped runtime (not counted).
    fn current(&self) -> Option<u32> {
        if self.faults.is_empty() {
            return None;
        }
        self.inner.get_device().ok()
    }

    fn device_of(place: Place) -> Option<u32> {
        match place {
            Place::Gpu(n) => Some(n),
            Place::Cpu => None,
        }
    }
}

impl<R: Runtime> Runtime for FaultInjector<R> {
    fn build(&self) -> TorchBuild {
        self.inner.build()
    }

    fn device_count(&self) -> Result<u32, DriverError> {
        self.check(Call::DriverDeviceCount, None)?;
        self.inner.device_count()
    }

    fn torch_device_count(&self) -> Result<u32, DriverError> {
        self.check(Call::DeviceCount, None)?;
        self.inner.torch_device_count()
    }

    fn device_name(&self, ordinal: u32) -> Result<String, DriverError> {
        self.check(Call::DeviceName, Some(ordinal))?;
        self.inner.device_name(ordinal)
    }

    fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError> {
        self.check(Call::NvidiaCapability, Some(ordinal))?;
        self.inner.nvidia_capability(ordinal)
    }

    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.check(Call::SmemOptin, Some(ordinal))?;
        self.inner.smem_optin(ordinal)
    }

    fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError> {
        self.check(Call::AmdArch, Some(ordinal))?;
        self.inner.amd_arch(ordinal)
    }

    fn get_device(&self) -> Result<u32, DriverError> {
        self.check(Call::GetDevice, None)?;
        self.inner.get_device()
    }

    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        self.check(Call::SetDevice, Some(ordinal))?;
        self.inner.set_device(ordinal)
    }

    fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError> {
        let on = match device.kind {
            TorchType::Cuda => device.index.or_else(|| self.current()),
            TorchType::Cpu | TorchType::Xpu | TorchType::Mps => None,
        };
        self.check(Call::Alloc, on)?;
        self.inner.alloc(device, bytes)
    }

    fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError> {
        self.check(Call::Copy, Self::device_of(dst.place))?;
        self.inner.copy_in(dst, data)
    }

    fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError> {
        self.check(Call::Copy, Self::device_of(src.place))?;
        self.inner.copy_out(src)
    }

    fn copy_out_matches(&self, src: &Buffer, expected: &[u8]) -> Result<bool, DriverError> {
        self.check(Call::Copy, Self::device_of(src.place))?;
        self.inner.copy_out_matches(src, expected)
    }

    fn free(&self, buffer: &Buffer) -> Result<(), DriverError> {
        self.check(Call::Free, Self::device_of(buffer.place))?;
        self.inner.free(buffer)
    }

    fn launch(&self, on: LaunchOn, kernel: &str) -> Result<Place, DriverError> {
        let device = match on {
            LaunchOn::Cpu => None,
            LaunchOn::CurrentDevice => self.current(),
        };
        self.check(Call::Launch, device)?;
        self.inner.launch(on, kernel)
    }

    fn synchronize(&self) -> Result<(), DriverError> {
        self.check(Call::Synchronize, self.current())?;
        self.inner.synchronize()
    }

    fn load_extension(&self, name: &str) -> Result<(), DriverError> {
        self.check(Call::ExtensionLoad, None)?;
        self.inner.load_extension(name)
    }

    fn take_switches(&self) -> Vec<ContextSwitch> {
        self.inner.take_switches()
    }

    fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError> {
        self.inner.device_bytes_in_use()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A runtime that is not the simulator: two GPUs, every call succeeds and is counted.
    #[derive(Default)]
    struct Scripted {
        current: Mutex<u32>,
        launches: Mutex<u32>,
    }

    impl Runtime for Scripted {
        fn build(&self) -> TorchBuild {
            TorchBuild::Hip
        }
        fn device_count(&self) -> Result<u32, DriverError> {
            Ok(2)
        }
        fn torch_device_count(&self) -> Result<u32, DriverError> {
            Ok(2)
        }
        fn take_switches(&self) -> Vec<crate::runtime::ContextSwitch> {
            Vec::new()
        }
        fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError> {
            Ok(None)
        }
        fn device_name(&self, _: u32) -> Result<String, DriverError> {
            Ok("scripted".into())
        }
        fn nvidia_capability(&self, _: u32) -> Result<ComputeCapability, DriverError> {
            Ok(ComputeCapability::new(9, 4))
        }
        fn smem_optin(&self, _: u32) -> Result<u32, DriverError> {
            Ok(65_536)
        }
        fn amd_arch(&self, _: u32) -> Result<String, DriverError> {
            Ok("gfx942".into())
        }
        fn get_device(&self) -> Result<u32, DriverError> {
            Ok(*self.current.lock().expect("current"))
        }
        fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
            *self.current.lock().expect("current") = ordinal;
            Ok(())
        }
        fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError> {
            let place = match device.index {
                Some(n) => Place::Gpu(n),
                None => Place::Gpu(self.get_device()?),
            };
            Ok(Buffer {
                place,
                handle: 1,
                bytes,
            })
        }
        fn copy_in(&self, _: &Buffer, _: &[u8]) -> Result<(), DriverError> {
            Ok(())
        }
        fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError> {
            Ok(vec![0; src.bytes])
        }
        fn free(&self, _: &Buffer) -> Result<(), DriverError> {
            Ok(())
        }
        fn launch(&self, _: LaunchOn, _: &str) -> Result<Place, DriverError> {
            *self.launches.lock().expect("launches") += 1;
            Ok(Place::Gpu(self.get_device()?))
        }
        fn synchronize(&self) -> Result<(), DriverError> {
            Ok(())
        }
        fn load_extension(&self, _: &str) -> Result<(), DriverError> {
            Ok(())
        }
    }

    fn fault(call: Option<Call>, device: Option<u32>, after: u32, code: i32) -> Fault {
        Fault {
            call,
            device,
            after,
            code,
            message: String::new(),
        }
    }

    #[test]
    fn a_fault_fires_after_its_threshold_on_its_device_only_and_never_reaches_the_runtime() {
        let scripted = Arc::new(Scripted::default());
        let faulty = FaultInjector::new(
            Arc::clone(&scripted),
            vec![fault(Some(Call::Launch), Some(1), 1, 719)],
        );
        faulty
            .launch(LaunchOn::CurrentDevice, "k")
            .expect("GPU 0 is untouched");
        faulty.set_device(1).expect("set");
        faulty
            .launch(LaunchOn::CurrentDevice, "k")
            .expect("the first launch on GPU 1 passes");
        let error = faulty
            .launch(LaunchOn::CurrentDevice, "k")
            .expect_err("the second launch on GPU 1 fails");
        assert_eq!(error.call, "launch");
        assert_eq!(error.code, 719);
        assert_eq!(error.message, "hipErrorLaunchFailure");
        assert_eq!(*scripted.launches.lock().expect("launches"), 2);
    }

    #[test]
    fn a_lost_device_fails_every_device_scoped_call_on_it_but_not_process_wide_ones() {
        let faulty = FaultInjector::new(Scripted::default(), vec![fault(None, Some(1), 0, 999)]);
        assert!(faulty.amd_arch(0).is_ok());
        assert!(faulty.amd_arch(1).is_err());
        assert!(faulty.device_name(1).is_err());
        assert!(faulty.alloc(TorchDevice::cuda(1), 8).is_err());
        assert!(faulty.set_device(1).is_err());
        assert_eq!(faulty.device_count(), Ok(2));
        assert_eq!(faulty.get_device(), Ok(0));
    }

    #[test]
    fn an_indexless_allocation_counts_on_the_current_device_and_a_fault_message_wins() {
        let mut oom = fault(Some(Call::Alloc), Some(1), 0, 2);
        oom.message = "scripted out of memory".into();
        let faulty = FaultInjector::new(Scripted::default(), vec![oom]);
        faulty
            .alloc(
                TorchDevice {
                    kind: TorchType::Cuda,
                    index: None,
                },
                8,
            )
            .expect("GPU 0 is current");
        faulty.set_device(1).expect("set");
        let error = faulty
            .alloc(
                TorchDevice {
                    kind: TorchType::Cuda,
                    index: None,
                },
                8,
            )
            .expect_err("GPU 1 is current now");
        assert_eq!(
            error.to_string(),
            "alloc: scripted out of memory (driver code 2)"
        );
    }
}
