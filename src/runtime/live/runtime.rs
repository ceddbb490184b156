//! [`LiveRuntime`]: the runtime trait over real drivers (and, with the `torch` feature, real tensors).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use crate::runtime::DriverError;
use crate::runtime::live::driver::GpuDriver;
use crate::runtime::{Buffer, ContextSwitch, CurrentDevice, DeviceGuard, LaunchOn, Place, Runtime};
use crate::vocab::TorchBuild;
use crate::vocab::{Arch, ComputeCapability};
use crate::vocab::{TorchDevice, TorchType};

/// "not supported" and "no device" codes, shared by CUDA and HIP.
const NOT_SUPPORTED: i32 = 801;
const NO_DEVICE: i32 = 100;
const INVALID_VALUE: i32 = 1;

enum Stored {
    Host(Vec<u8>),
    Device {
        ordinal: u32,
        ptr: u64,
    },
    #[cfg(feature = "torch")]
    Tensor(tch::Tensor),
}

/// The live runtime: a GPU driver (or none, for CPU-only scenarios) behind the runtime trait.
pub struct LiveRuntime {
    build: TorchBuild,
    driver: Option<Arc<dyn GpuDriver>>,
    /// Whether data and warmups go through tch (only read with the `torch` feature).
    #[cfg_attr(not(feature = "torch"), allow(dead_code))]
    tensors: bool,
    memory: Mutex<HashMap<u64, Stored>>,
    next_handle: AtomicU64,
    /// Context switches made inside calls, not yet handed to the recorder.
    switches: Mutex<Vec<(ThreadId, ContextSwitch)>>,
}

impl LiveRuntime {
    /// A runtime over `driver` for its build. With `tensors`, data moves and warmups go through tch.
    pub fn new(driver: Arc<dyn GpuDriver>, tensors: bool) -> Self {
        Self {
            build: driver.build(),
            driver: Some(driver),
            tensors,
            memory: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            switches: Mutex::new(Vec::new()),
        }
    }

    /// A CPU-only runtime: a CPU build with no GPU, whatever the machine has.
    pub fn cpu_only(tensors: bool) -> Self {
        Self {
            build: TorchBuild::Cpu,
            driver: None,
            tensors,
            memory: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            switches: Mutex::new(Vec::new()),
        }
    }

    /// A runtime of a GPU build whose driver shows no GPU (a mask hides them all): it counts zero
    /// devices, and every device call fails as on such a machine.
    pub fn without_gpus(build: TorchBuild) -> Self {
        Self {
            build,
            driver: None,
            tensors: false,
            memory: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            switches: Mutex::new(Vec::new()),
        }
    }

    fn memory(&self) -> MutexGuard<'_, HashMap<u64, Stored>> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn gpu(&self, call: &str) -> Result<&dyn GpuDriver, DriverError> {
        self.driver.as_deref().ok_or_else(|| DriverError {
            call: call.into(),
            code: NO_DEVICE,
            message: "no GPU driver: this runtime is CPU-only".into(),
        })
    }

    fn store(&self, stored: Stored) -> u64 {
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.memory().insert(handle, stored);
        handle
    }

    fn missing(call: &str) -> DriverError {
        DriverError {
            call: call.into(),
            code: INVALID_VALUE,
            message: "invalid buffer: freed or never allocated".into(),
        }
    }

    /// The ordinal an indexless GPU device means: the thread's current device.
    fn resolve(&self, device: TorchDevice) -> Result<Place, DriverError> {
        match device.kind {
            TorchType::Cpu => Ok(Place::Cpu),
            TorchType::Cuda => match device.index {
                Some(n) => Ok(Place::Gpu(n)),
                None => Ok(Place::Gpu(self.gpu("cudaGetDevice")?.current_device()?)),
            },
            TorchType::Xpu | TorchType::Mps => Err(DriverError {
                call: "alloc".into(),
                code: NOT_SUPPORTED,
                message: format!("{device} is not a device this runtime drives"),
            }),
        }
    }

    /// Runs `work` with `ordinal` current, restoring the previous device afterwards (the one
    /// [`DeviceGuard`]: a failed restore fails the call, a panic still restores). Every switch it makes is
    /// kept for [`Runtime::take_switches`], so the trace shows it.
    fn in_context<T>(
        &self,
        ordinal: u32,
        work: impl FnOnce(&dyn GpuDriver) -> Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        let driver = self.gpu("set_device")?;
        let switching = Switching {
            driver,
            switches: &self.switches,
        };
        DeviceGuard::scope(&switching, ordinal, || work(driver))
    }
}

/// The driver as a [`CurrentDevice`] that notes every switch it makes, with the calling thread.
struct Switching<'a> {
    driver: &'a dyn GpuDriver,
    switches: &'a Mutex<Vec<(ThreadId, ContextSwitch)>>,
}

impl CurrentDevice for Switching<'_> {
    fn current_device(&self) -> Result<u32, DriverError> {
        self.driver.current_device()
    }

    fn make_current(&self, ordinal: u32) -> Result<(), DriverError> {
        let result = self.driver.set_device(ordinal);
        let switch = ContextSwitch {
            to: ordinal,
            ok: result.is_ok(),
        };
        self.switches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((thread::current().id(), switch));
        result
    }
}

impl Runtime for LiveRuntime {
    fn build(&self) -> TorchBuild {
        self.build
    }

    fn torch_device_count(&self) -> Result<u32, DriverError> {
        // Live, the process's visible-device variables already narrowed the driver: both views agree.
        self.device_count()
    }

    fn device_count(&self) -> Result<u32, DriverError> {
        match &self.driver {
            Some(driver) => driver.device_count(),
            None => Ok(0),
        }
    }

    fn device_name(&self, ordinal: u32) -> Result<String, DriverError> {
        self.gpu("device_name")?.name(ordinal)
    }

    fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError> {
        let (major, minor) = self.gpu("nvidia_capability")?.capability(ordinal)?;
        Ok(ComputeCapability::new(major, minor))
    }

    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        self.gpu("smem_optin")?.smem_optin(ordinal)
    }

    fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError> {
        let name = self.gpu("amd_arch")?.gcn_arch_name(ordinal)?;
        // Keep the driver's spelling, but make sure it is one devsim can judge.
        name.parse::<Arch>().map_err(|error| DriverError {
            call: "gcnArchName".into(),
            code: -1,
            message: error.to_string(),
        })?;
        Ok(name)
    }

    fn get_device(&self) -> Result<u32, DriverError> {
        self.gpu("get_device")?.current_device()
    }

    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        self.gpu("set_device")?.set_device(ordinal)
    }

    fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError> {
        let place = self.resolve(device)?;
        #[cfg(feature = "torch")]
        if self.tensors {
            let tensor = crate::runtime::live::torch::upload(&vec![0u8; bytes], place)?;
            let place = crate::runtime::live::torch::place_of(&tensor);
            let handle = self.store(Stored::Tensor(tensor));
            return Ok(Buffer {
                place,
                handle,
                bytes,
            });
        }
        let stored = match place {
            Place::Cpu => Stored::Host(vec![0; bytes]),
            Place::Gpu(ordinal) => Stored::Device {
                ordinal,
                ptr: self.in_context(ordinal, |driver| driver.alloc(bytes))?,
            },
        };
        Ok(Buffer {
            place,
            handle: self.store(stored),
            bytes,
        })
    }

    fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError> {
        let mut memory = self.memory();
        match memory.get_mut(&dst.handle) {
            None => Err(Self::missing("copy")),
            Some(Stored::Host(bytes)) => {
                let n = data.len().min(bytes.len());
                bytes[..n].copy_from_slice(&data[..n]);
                Ok(())
            }
            Some(Stored::Device { ordinal, ptr }) => {
                let (ordinal, ptr) = (*ordinal, *ptr);
                drop(memory);
                self.in_context(ordinal, |driver| driver.copy_in(ptr, data))
            }
            #[cfg(feature = "torch")]
            Some(Stored::Tensor(tensor)) => crate::runtime::live::torch::fill(tensor, data),
        }
    }

    fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError> {
        let memory = self.memory();
        match memory.get(&src.handle) {
            None => Err(Self::missing("copy")),
            Some(Stored::Host(bytes)) => Ok(bytes.clone()),
            Some(Stored::Device { ordinal, ptr }) => {
                let (ordinal, ptr) = (*ordinal, *ptr);
                drop(memory);
                self.in_context(ordinal, |driver| driver.copy_out(ptr, src.bytes))
            }
            #[cfg(feature = "torch")]
            Some(Stored::Tensor(tensor)) => crate::runtime::live::torch::download(tensor),
        }
    }

    fn free(&self, buffer: &Buffer) -> Result<(), DriverError> {
        let stored = self.memory().remove(&buffer.handle);
        match stored {
            None => Err(Self::missing("free")),
            Some(Stored::Device { ordinal, ptr }) => {
                self.in_context(ordinal, |driver| driver.free(ptr))
            }
            Some(_) => Ok(()),
        }
    }

    fn launch(&self, on: LaunchOn, _kernel: &str) -> Result<Place, DriverError> {
        let place = match on {
            LaunchOn::Cpu => Place::Cpu,
            LaunchOn::CurrentDevice => Place::Gpu(self.gpu("launch")?.current_device()?),
        };
        #[cfg(feature = "torch")]
        if self.tensors {
            return crate::runtime::live::torch::compute(place);
        }
        match place {
            // Without tch there is no CPU kernel to run: the launch is the call itself.
            Place::Cpu => Ok(Place::Cpu),
            Place::Gpu(ordinal) => {
                // A real device operation in the current context: fill a scratch buffer and read it back.
                let driver = self.gpu("launch")?;
                let ptr = driver.alloc(256)?;
                let result = driver
                    .memset(ptr, 0x5a, 256)
                    .and_then(|()| driver.synchronize())
                    .and_then(|()| driver.copy_out(ptr, 256));
                let freed = driver.free(ptr);
                let bytes = result?;
                freed?;
                if bytes.iter().any(|b| *b != 0x5a) {
                    return Err(DriverError {
                        call: "memset".into(),
                        code: -1,
                        message: "device memory read back differs from what the device wrote"
                            .into(),
                    });
                }
                Ok(Place::Gpu(ordinal))
            }
        }
    }

    fn synchronize(&self) -> Result<(), DriverError> {
        match &self.driver {
            Some(driver) => driver.synchronize(),
            None => Ok(()),
        }
    }

    /// Live replay never loads real extensions: the call is recorded, and only the gates decide.
    fn load_extension(&self, _name: &str) -> Result<(), DriverError> {
        Ok(())
    }

    /// Driver API: the driver's memory info on every GPU (each made current in turn, untraced, the
    /// caller's device restored). With tch tensors: the bytes of the tensors this runtime still holds, since
    /// tch exposes none of torch's caching-allocator statistics and the driver would show the cache.
    fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError> {
        #[cfg(feature = "torch")]
        if self.tensors {
            let held = self
                .memory()
                .values()
                .filter_map(|stored| match stored {
                    Stored::Tensor(tensor) => {
                        let on_gpu = crate::runtime::live::torch::place_of(tensor) != Place::Cpu;
                        let bytes = tensor.numel() * tensor.kind().elt_size_in_bytes();
                        on_gpu.then_some(bytes as u64)
                    }
                    _ => None,
                })
                .sum();
            return Ok(Some(held));
        }
        let Some(driver) = self.driver.as_deref() else {
            return Ok(Some(0));
        };
        let mut total = 0;
        for ordinal in 0..driver.device_count()? {
            total += DeviceGuard::scope(driver, ordinal, || driver.memory_in_use())?;
        }
        Ok(Some(total))
    }

    fn take_switches(&self) -> Vec<ContextSwitch> {
        let me = thread::current().id();
        let mut switches = self.switches.lock().unwrap_or_else(|e| e.into_inner());
        let (mine, others) = switches.drain(..).partition(|(thread, _)| *thread == me);
        *switches = others;
        mine.into_iter().map(|(_, switch)| switch).collect()
    }
}

#[cfg(test)]
mod tests;
