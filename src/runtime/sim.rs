//! A simulated runtime over a [`HostSpec`]: torch's device count beside the runtime's own ordinals
//! (`crate::visible`), per-thread current device, real memory bookkeeping, HIP's
//! answers to NVIDIA queries on AMD GPUs. Faults are injected around it by [`crate::runtime::FaultInjector`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use crate::host::HostError;
use crate::host::{Gpu, HostSpec, driver_message};
use crate::runtime::DriverError;
use crate::runtime::{Buffer, LaunchOn, Place, Runtime};
use crate::trace::{Call, Text};
use crate::vocab::TorchBuild;
use crate::vocab::{Arch, ComputeCapability};
use crate::vocab::{TorchDevice, TorchType};

/// CUDA's and HIP's "invalid device" code.
const INVALID_DEVICE: i32 = 101;
/// "no device" code.
const NO_DEVICE: i32 = 100;
/// "not supported" code.
const NOT_SUPPORTED: i32 = 801;
/// "invalid value" code (a freed or unknown pointer).
const INVALID_VALUE: i32 = 1;

#[derive(Default)]
struct State {
    /// Each thread's current device, once it set one: a handful of threads at most, so a list.
    current: Vec<(ThreadId, u32)>,
    memory: HashMap<u64, (Place, Memory)>,
    next_handle: u64,
    /// The extensions loaded, sorted: a step loads one or two, so a sorted list, not a set; each name kept
    /// in place when short ([`Text::copy_of`]), so a load allocates only the list.
    extensions: Vec<Text>,
}

/// One allocation's bytes. A buffer is zeroed when allocated, but its bytes are stored only once something
/// is copied in: most buffers are filled whole at once, so zeroing them first was wasted work.
struct Memory {
    /// The allocation's size.
    len: usize,
    /// Its bytes once written (`len` of them); empty while it is still all zeros.
    written: Vec<u8>,
}

impl Memory {
    fn zeroed(len: usize) -> Self {
        Self {
            len,
            written: Vec::new(),
        }
    }

    /// Writes `data` at the start; `false` when it does not fit.
    fn write(&mut self, data: &[u8]) -> bool {
        if data.len() > self.len {
            return false;
        }
        if self.written.is_empty() {
            self.written.reserve_exact(self.len);
            self.written.extend_from_slice(data);
            self.written.resize(self.len, 0);
        } else {
            self.written[..data.len()].copy_from_slice(data);
        }
        true
    }

    /// Whether the bytes are exactly `expected`.
    fn matches(&self, expected: &[u8]) -> bool {
        if self.written.is_empty() {
            expected.len() == self.len && expected.iter().all(|b| *b == 0)
        } else {
            self.written == expected
        }
    }

    /// A copy of the bytes.
    fn bytes(&self) -> Vec<u8> {
        if self.written.is_empty() {
            vec![0; self.len]
        } else {
            self.written.clone()
        }
    }
}

/// What a simulated machine is, worked out once from its host: shared by every runtime over it.
struct Machine {
    host: HostSpec,
    /// torch's count (`torch.cuda.device_count()`), what dispatch code sees.
    torch_count: u32,
    /// The runtime's ordinals: the physical GPU at each.
    visible: Vec<usize>,
}

/// The simulated runtime. Cheap to build; one per scenario run.
pub struct SimRuntime {
    machine: Arc<Machine>,
    state: Mutex<State>,
}

impl SimRuntime {
    /// A runtime for `host`, which must validate.
    pub fn new(host: HostSpec) -> Result<Self, HostError> {
        host.validate()?;
        let visibility = host.visibility()?;
        let machine = Machine {
            host,
            torch_count: u32::try_from(visibility.torch_count).unwrap_or(u32::MAX),
            visible: visibility.runtime,
        };
        Ok(Self::on(Arc::new(machine)))
    }

    fn on(machine: Arc<Machine>) -> Self {
        let state = State {
            next_handle: 0x7f00_0000_0000,
            ..State::default()
        };
        Self {
            machine,
            state: Mutex::new(state),
        }
    }

    /// A runtime over the same host as it was built: no memory allocated, no extension loaded, every
    /// thread on the host's current device. The host is shared, not copied or checked again.
    pub fn fresh(&self) -> Self {
        Self::on(Arc::clone(&self.machine))
    }

    /// The host this runtime simulates.
    pub fn host(&self) -> &HostSpec {
        &self.machine.host
    }

    /// The extensions loaded so far.
    pub fn loaded_extensions(&self) -> Vec<String> {
        self.state()
            .extensions
            .iter()
            .map(|name| name.words().into_owned())
            .collect()
    }

    /// How many buffers are still allocated.
    pub fn live_buffers(&self) -> usize {
        self.state().memory.len()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, call: Call, code: i32, message: Option<&str>) -> DriverError {
        DriverError {
            call: call.as_str().to_string(),
            code,
            message: message
                .map(str::to_string)
                .unwrap_or_else(|| driver_message(self.machine.host.torch, code)),
        }
    }

    fn current(&self, state: &State) -> u32 {
        let me = thread::current().id();
        state
            .current
            .iter()
            .find(|(thread, _)| *thread == me)
            .map_or(self.machine.host.current, |(_, ordinal)| *ordinal)
    }

    fn visible_gpu(&self, call: Call, ordinal: u32) -> Result<&Gpu, DriverError> {
        if self.machine.visible.is_empty() {
            return Err(self.error(call, NO_DEVICE, None));
        }
        usize::try_from(ordinal)
            .ok()
            .and_then(|i| self.machine.visible.get(i))
            .and_then(|physical| self.machine.host.gpus.get(*physical))
            .ok_or_else(|| self.error(call, INVALID_DEVICE, None))
    }

    fn place_of(
        &self,
        state: &State,
        call: Call,
        device: TorchDevice,
    ) -> Result<Place, DriverError> {
        match device.kind {
            TorchType::Cpu => Ok(Place::Cpu),
            TorchType::Cuda => {
                let ordinal = device.index.unwrap_or_else(|| self.current(state));
                self.visible_gpu(call, ordinal)?;
                Ok(Place::Gpu(ordinal))
            }
            TorchType::Xpu | TorchType::Mps => Err(self.error(call, NOT_SUPPORTED, None)),
        }
    }
}

impl Runtime for SimRuntime {
    fn build(&self) -> TorchBuild {
        self.machine.host.torch
    }

    fn take_switches(&self) -> Vec<crate::runtime::ContextSwitch> {
        // The simulator switches contexts only when asked: there is nothing of its own to hand over.
        Vec::new()
    }

    fn device_count(&self) -> Result<u32, DriverError> {
        Ok(u32::try_from(self.machine.visible.len()).unwrap_or(u32::MAX))
    }

    fn torch_device_count(&self) -> Result<u32, DriverError> {
        Ok(self.machine.torch_count)
    }

    fn device_name(&self, ordinal: u32) -> Result<String, DriverError> {
        Ok(self.visible_gpu(Call::DeviceName, ordinal)?.name.clone())
    }

    fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError> {
        match &self.visible_gpu(Call::NvidiaCapability, ordinal)?.arch {
            Arch::Sm(cc) => Ok(*cc),
            // hipDeviceProp_t.major/minor: what HIP answers for an AMD GPU.
            Arch::Gfx(target) => Ok(target.hip_capability()),
        }
    }

    fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError> {
        Ok(self.visible_gpu(Call::SmemOptin, ordinal)?.smem_optin)
    }

    fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError> {
        match &self.visible_gpu(Call::AmdArch, ordinal)?.arch {
            Arch::Gfx(target) => Ok(target.to_string()),
            Arch::Sm(_) => Err(self.error(
                Call::AmdArch,
                NOT_SUPPORTED,
                Some("gcnArchName is a HIP property; the CUDA driver has none"),
            )),
        }
    }

    fn get_device(&self) -> Result<u32, DriverError> {
        let state = self.state();
        if self.machine.visible.is_empty() {
            return Err(self.error(Call::GetDevice, NO_DEVICE, None));
        }
        Ok(self.current(&state))
    }

    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        let mut state = self.state();
        self.visible_gpu(Call::SetDevice, ordinal)?;
        let me = thread::current().id();
        match state.current.iter_mut().find(|(thread, _)| *thread == me) {
            Some((_, current)) => *current = ordinal,
            None => state.current.push((me, ordinal)),
        }
        Ok(())
    }

    fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError> {
        let mut state = self.state();
        let place = self.place_of(&state, Call::Alloc, device)?;
        let handle = state.next_handle;
        state.next_handle += (bytes as u64).max(1).next_multiple_of(256);
        state.memory.insert(handle, (place, Memory::zeroed(bytes)));
        Ok(Buffer {
            place,
            handle,
            bytes,
        })
    }

    fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError> {
        let mut state = self.state();
        // Built only on failure: a copy that succeeds formats no message.
        let invalid = || self.error(Call::Copy, INVALID_VALUE, None);
        let (_, memory) = state.memory.get_mut(&dst.handle).ok_or_else(invalid)?;
        if !memory.write(data) {
            return Err(invalid());
        }
        Ok(())
    }

    fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError> {
        let state = self.state();
        state
            .memory
            .get(&src.handle)
            .map(|(_, memory)| memory.bytes())
            .ok_or_else(|| self.error(Call::Copy, INVALID_VALUE, None))
    }

    fn copy_out_matches(&self, src: &Buffer, expected: &[u8]) -> Result<bool, DriverError> {
        let state = self.state();
        state
            .memory
            .get(&src.handle)
            .map(|(_, memory)| memory.matches(expected))
            .ok_or_else(|| self.error(Call::Copy, INVALID_VALUE, None))
    }

    fn free(&self, buffer: &Buffer) -> Result<(), DriverError> {
        let mut state = self.state();
        state
            .memory
            .remove(&buffer.handle)
            .map(|_| ())
            .ok_or_else(|| self.error(Call::Free, INVALID_VALUE, None))
    }

    fn launch(&self, on: LaunchOn, _kernel: &str) -> Result<Place, DriverError> {
        let state = self.state();
        let place = match on {
            LaunchOn::Cpu => Place::Cpu,
            LaunchOn::CurrentDevice => {
                if self.machine.visible.is_empty() {
                    return Err(self.error(Call::Launch, NO_DEVICE, None));
                }
                Place::Gpu(self.current(&state))
            }
        };
        Ok(place)
    }

    fn synchronize(&self) -> Result<(), DriverError> {
        Ok(())
    }

    fn load_extension(&self, name: &str) -> Result<(), DriverError> {
        let mut state = self.state();
        let extensions = &mut state.extensions;
        if let Err(at) = extensions.binary_search_by(|loaded| loaded.words().as_ref().cmp(name)) {
            extensions.insert(at, Text::copy_of(name));
        }
        Ok(())
    }

    /// The allocation book's GPU buffers, byte for byte.
    fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError> {
        let state = self.state();
        let bytes = state
            .memory
            .values()
            .filter(|(place, _)| matches!(place, Place::Gpu(_)))
            .map(|(_, memory)| memory.len as u64)
            .sum();
        Ok(Some(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(torch: TorchBuild, archs: &[&str]) -> HostSpec {
        let archs: Vec<Arch> = archs.iter().map(|a| a.parse().expect("arch")).collect();
        HostSpec::new(torch, &archs)
    }

    #[test]
    fn each_thread_keeps_its_own_current_device() {
        let sim = SimRuntime::new(host(TorchBuild::Cuda, &["sm_90", "sm_90"])).expect("host");
        sim.set_device(1).expect("set");
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(sim.get_device().expect("get"), 0));
        });
        assert_eq!(sim.get_device().expect("get"), 1);
    }

    #[test]
    fn a_fresh_runtime_keeps_the_host_and_none_of_the_state() {
        let sim = SimRuntime::new(host(TorchBuild::Cuda, &["sm_90", "sm_90"])).expect("host");
        sim.set_device(1).expect("set");
        sim.alloc(TorchDevice::cuda(1), 16).expect("alloc");
        sim.load_extension("marlin").expect("load");
        let fresh = sim.fresh();
        assert_eq!(fresh.host(), sim.host());
        assert_eq!(fresh.get_device().expect("get"), 0);
        assert_eq!(fresh.live_buffers(), 0);
        assert!(fresh.loaded_extensions().is_empty());
        assert_eq!(
            sim.get_device().expect("get"),
            1,
            "the original keeps its own"
        );
        assert_eq!(sim.live_buffers(), 1);
    }

    #[test]
    fn loaded_extensions_are_listed_once_each_in_name_order() {
        let sim = SimRuntime::new(host(TorchBuild::Cuda, &["sm_90"])).expect("host");
        for name in ["marlin", "exllamav3", "marlin", "ggml", "exllamav3"] {
            sim.load_extension(name).expect("load");
        }
        assert_eq!(sim.loaded_extensions(), ["exllamav3", "ggml", "marlin"]);
    }

    #[test]
    fn hip_answers_capability_queries_with_gfx_numbers() {
        let sim = SimRuntime::new(host(TorchBuild::Hip, &["gfx942"])).expect("host");
        assert_eq!(
            sim.nvidia_capability(0).expect("cc"),
            ComputeCapability::new(9, 4)
        );
        assert_eq!(sim.amd_arch(0).expect("arch"), "gfx942");
    }

    #[test]
    fn cuda_has_no_gcn_arch_name() {
        let sim = SimRuntime::new(host(TorchBuild::Cuda, &["sm_90"])).expect("host");
        let error = sim.amd_arch(0).expect_err("no gcnArchName on CUDA");
        assert_eq!(error.code, NOT_SUPPORTED);
    }

    #[test]
    fn freed_memory_gives_the_driver_error() {
        let sim = SimRuntime::new(host(TorchBuild::Cuda, &["sm_90"])).expect("host");
        let buffer = sim.alloc(TorchDevice::cuda(0), 16).expect("alloc");
        sim.copy_in(&buffer, &[7; 16]).expect("copy");
        assert_eq!(sim.copy_out(&buffer).expect("copy back"), vec![7; 16]);
        assert!(sim.copy_out_matches(&buffer, &[7; 16]).expect("compare"));
        assert!(!sim.copy_out_matches(&buffer, &[7; 15]).expect("compare"));
        assert!(!sim.copy_out_matches(&buffer, &[8; 16]).expect("compare"));
        sim.free(&buffer).expect("free");
        assert_eq!(
            sim.copy_out(&buffer).expect_err("freed").code,
            INVALID_VALUE
        );
        assert_eq!(
            sim.copy_out_matches(&buffer, &[7; 16])
                .expect_err("freed")
                .code,
            INVALID_VALUE
        );
        assert_eq!(
            sim.free(&buffer).expect_err("double free").code,
            INVALID_VALUE
        );
    }

    #[test]
    fn memory_reads_zero_until_written_and_keeps_what_a_short_copy_left() {
        let sim = SimRuntime::new(host(TorchBuild::Cuda, &["sm_90"])).expect("host");
        let buffer = sim.alloc(TorchDevice::cuda(0), 8).expect("alloc");
        assert_eq!(sim.copy_out(&buffer).expect("copy back"), vec![0; 8]);
        assert!(sim.copy_out_matches(&buffer, &[0; 8]).expect("compare"));
        assert!(!sim.copy_out_matches(&buffer, &[0; 7]).expect("compare"));
        assert_eq!(sim.device_bytes_in_use().expect("in use"), Some(8));
        assert!(sim.copy_in(&buffer, &[1; 9]).is_err(), "too long");
        sim.copy_in(&buffer, &[2; 3]).expect("copy");
        assert_eq!(
            sim.copy_out(&buffer).expect("copy back"),
            [2, 2, 2, 0, 0, 0, 0, 0]
        );
        sim.copy_in(&buffer, &[5]).expect("copy");
        assert!(
            sim.copy_out_matches(&buffer, &[5, 2, 2, 0, 0, 0, 0, 0])
                .expect("compare")
        );
    }

    #[test]
    fn out_of_range_devices_are_invalid() {
        let sim = SimRuntime::new(host(TorchBuild::Cuda, &["sm_90"])).expect("host");
        assert_eq!(sim.set_device(1).expect_err("one gpu").code, INVALID_DEVICE);
        assert_eq!(
            sim.alloc(TorchDevice::cuda(3), 1)
                .expect_err("one gpu")
                .code,
            INVALID_DEVICE
        );
    }
}
