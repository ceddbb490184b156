use std::sync::Mutex;

use super::*;

/// Two GPUs; `set_device` back to GPU 0 fails once `refuse_restore` is set.
struct Scripted {
    current: Mutex<u32>,
    refuse_restore: bool,
}

fn fail(call: &str) -> DriverError {
    DriverError {
        call: call.into(),
        code: 999,
        message: "scripted failure".into(),
    }
}

impl GpuDriver for Scripted {
    fn build(&self) -> TorchBuild {
        TorchBuild::Cuda
    }
    fn path(&self) -> &str {
        "scripted"
    }
    fn is_fake(&self) -> bool {
        true
    }
    fn device_count(&self) -> Result<u32, DriverError> {
        Ok(2)
    }
    fn name(&self, _: u32) -> Result<String, DriverError> {
        Ok("scripted".into())
    }
    fn uuid(&self, ordinal: u32) -> Result<String, DriverError> {
        Ok(format!("GPU-{ordinal:08x}-0000-4000-8000-000000000000"))
    }
    fn capability(&self, _: u32) -> Result<(u32, u32), DriverError> {
        Ok((9, 0))
    }
    fn gcn_arch_name(&self, _: u32) -> Result<String, DriverError> {
        Err(fail("gcn_arch_name"))
    }
    fn smem_optin(&self, _: u32) -> Result<u32, DriverError> {
        Ok(232_448)
    }
    fn current_device(&self) -> Result<u32, DriverError> {
        self.current
            .lock()
            .map(|c| *c)
            .map_err(|_| fail("current_device"))
    }
    fn set_device(&self, ordinal: u32) -> Result<(), DriverError> {
        if self.refuse_restore && ordinal == 0 {
            return Err(fail("cuCtxSetCurrent"));
        }
        *self.current.lock().map_err(|_| fail("set_device"))? = ordinal;
        Ok(())
    }
    fn alloc(&self, _: usize) -> Result<u64, DriverError> {
        Ok(0x1000)
    }
    fn free(&self, _: u64) -> Result<(), DriverError> {
        Ok(())
    }
    fn copy_in(&self, _: u64, _: &[u8]) -> Result<(), DriverError> {
        Ok(())
    }
    fn copy_out(&self, _: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        Ok(vec![0; len])
    }
    fn memset(&self, _: u64, _: u8, _: usize) -> Result<(), DriverError> {
        Ok(())
    }
    fn synchronize(&self) -> Result<(), DriverError> {
        Ok(())
    }
    fn memory_in_use(&self) -> Result<u64, DriverError> {
        Ok(0)
    }
}

fn runtime(refuse_restore: bool) -> LiveRuntime {
    LiveRuntime::new(
        Arc::new(Scripted {
            current: Mutex::new(0),
            refuse_restore,
        }),
        false,
    )
}

#[test]
fn an_allocation_on_another_gpu_hands_the_callers_device_back() {
    let runtime = runtime(false);
    let buffer = runtime.alloc(TorchDevice::cuda(1), 16).expect("allocates");
    assert_eq!(buffer.place, Place::Gpu(1));
    assert_eq!(runtime.get_device(), Ok(0));
}

fn names(trace: &[crate::trace::Entry]) -> Vec<String> {
    trace.iter().map(ToString::to_string).collect()
}

#[test]
fn every_switch_the_runtime_makes_inside_a_call_is_in_the_trace() {
    let recorder = crate::runtime::Recorder::new(Box::new(runtime(false)));
    let buffer = recorder.alloc(TorchDevice::cuda(1), 16).expect("allocates");
    recorder.free(&buffer).expect("frees");
    let scratch = recorder.alloc(TorchDevice::cuda(0), 16).expect("allocates");
    recorder.free(&scratch).expect("frees");
    assert_eq!(
        names(&recorder.trace().entries()),
        [
            "alloc(1)",
            "context_switch(1, during alloc)",
            "context_switch(0, during alloc)",
            "free(1)",
            "context_switch(1, during free)",
            "context_switch(0, during free)",
            "alloc(0)",
            "free(0)",
        ]
    );
}

#[test]
fn a_failed_restore_is_in_the_trace_as_a_failed_switch_inside_a_failed_call() {
    let recorder = crate::runtime::Recorder::new(Box::new(runtime(true)));
    recorder
        .alloc(TorchDevice::cuda(1), 16)
        .expect_err("the restore to GPU 0 fails");
    assert_eq!(
        names(&recorder.trace().entries()),
        [
            "alloc(cuda:1) -> error",
            "context_switch(1, during alloc)",
            "context_switch(0, during alloc) -> error",
        ]
    );
}

#[test]
fn a_failed_restore_fails_the_call_instead_of_leaving_the_wrong_device_current() {
    let runtime = runtime(true);
    let error = runtime
        .alloc(TorchDevice::cuda(1), 16)
        .expect_err("the restore to GPU 0 fails");
    assert_eq!(error.call, "restore current device 0 (cuCtxSetCurrent)");
    assert_eq!(error.code, 999);
}
