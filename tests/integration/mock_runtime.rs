//! Exact runtime calls, pinned with a mockall mock of the runtime trait.

use devsim::dispatch::Dispatch;
use devsim::dispatch::selector::Selector;
use devsim::kernel::{Catalog, Kernel};
use devsim::runtime::DriverError;
use devsim::runtime::{Buffer, ContextSwitch, LaunchOn, Place, Runtime};
use devsim::trace::Trace;
use devsim::vocab::TorchDevice;
use devsim::{ComputeCapability, TorchBuild};
use mockall::mock;
use mockall::predicate::eq;

mock! {
    pub Driver {}
    impl Runtime for Driver {
        fn build(&self) -> TorchBuild;
        fn device_count(&self) -> Result<u32, DriverError>;
        fn torch_device_count(&self) -> Result<u32, DriverError>;
        fn device_name(&self, ordinal: u32) -> Result<String, DriverError>;
        fn nvidia_capability(&self, ordinal: u32) -> Result<ComputeCapability, DriverError>;
        fn smem_optin(&self, ordinal: u32) -> Result<u32, DriverError>;
        fn amd_arch(&self, ordinal: u32) -> Result<String, DriverError>;
        fn get_device(&self) -> Result<u32, DriverError>;
        fn set_device(&self, ordinal: u32) -> Result<(), DriverError>;
        fn alloc(&self, device: TorchDevice, bytes: usize) -> Result<Buffer, DriverError>;
        fn copy_in(&self, dst: &Buffer, data: &[u8]) -> Result<(), DriverError>;
        fn copy_out(&self, src: &Buffer) -> Result<Vec<u8>, DriverError>;
        fn free(&self, buffer: &Buffer) -> Result<(), DriverError>;
        fn launch(&self, on: LaunchOn, kernel: &str) -> Result<Place, DriverError>;
        fn synchronize(&self) -> Result<(), DriverError>;
        fn load_extension(&self, name: &str) -> Result<(), DriverError>;
        fn take_switches(&self) -> Vec<ContextSwitch>;
        fn device_bytes_in_use(&self) -> Result<Option<u64>, DriverError>;
    }
}

/// Runs `path` on the reference catalog's kernel `name`, dispatching through `driver` with a fresh trace.
fn with_kernel<T>(
    driver: &MockDriver,
    name: &str,
    path: impl FnOnce(&dyn Kernel, &Dispatch) -> T,
) -> T {
    let catalog = Catalog::reference();
    let dispatch = Dispatch::new(driver, Trace::new());
    path(catalog.get(name).expect("a reference kernel"), &dispatch)
}

fn hip_with_two_gpus() -> MockDriver {
    let mut driver = MockDriver::new();
    driver.expect_build().return_const(TorchBuild::Hip);
    driver.expect_device_count().returning(|| Ok(2));
    driver.expect_torch_device_count().returning(|| Ok(2));
    driver
}

#[test]
fn validating_an_amd_target_asks_only_its_amd_arch() {
    let mut driver = hip_with_two_gpus();
    driver.expect_nvidia_capability().never();
    driver.expect_smem_optin().never();
    driver.expect_get_device().never();
    driver
        .expect_amd_arch()
        .with(eq(1))
        .times(1)
        .returning(|_| Ok("gfx1201".into()));
    driver
        .expect_load_extension()
        .with(eq("allspark"))
        .times(1)
        .returning(|_| Ok(()));
    with_kernel(&driver, "gptq_allspark", |kernel, dispatch| {
        kernel.validate(dispatch, &Selector::from("cuda:1"))
    })
    .expect("gfx1201 is accepted");
}

#[test]
fn a_cuda_only_kernel_on_hip_is_refused_without_any_device_query_or_load() {
    let mut driver = hip_with_two_gpus();
    driver.expect_nvidia_capability().never();
    driver.expect_amd_arch().never();
    driver.expect_load_extension().never();
    let error = with_kernel(&driver, "gptq_marlin", |kernel, dispatch| {
        kernel.validate(dispatch, &Selector::from("cuda"))
    })
    .expect_err("marlin is NVIDIA-only");
    assert_eq!(error.kind(), "unsupported-family");
}

#[test]
fn a_driver_error_during_the_arch_gate_is_reported_not_swallowed() {
    let mut driver = hip_with_two_gpus();
    driver.expect_amd_arch().returning(|_| {
        Err(DriverError {
            call: "hipGetDeviceProperties".into(),
            code: 101,
            message: "hipErrorInvalidDevice".into(),
        })
    });
    driver.expect_load_extension().never();
    let error = with_kernel(&driver, "awq_allspark", |kernel, dispatch| {
        kernel.validate(dispatch, &Selector::from("rocm:0"))
    })
    .expect_err("driver failed");
    assert_eq!(error.kind(), "driver-error");
    assert!(
        error.to_string().contains("hipErrorInvalidDevice"),
        "{error}"
    );
}

#[test]
fn a_warmup_whose_launch_fails_still_restores_the_callers_device() {
    let mut driver = MockDriver::new();
    driver.expect_build().return_const(TorchBuild::Cuda);
    driver.expect_device_count().returning(|| Ok(2));
    driver.expect_torch_device_count().returning(|| Ok(2));
    driver.expect_get_device().returning(|| Ok(0));
    let mut sequence = mockall::Sequence::new();
    driver
        .expect_set_device()
        .with(eq(1))
        .times(1)
        .in_sequence(&mut sequence)
        .returning(|_| Ok(()));
    driver
        .expect_launch()
        .times(1)
        .in_sequence(&mut sequence)
        .returning(|_, _| {
            Err(DriverError {
                call: "cuLaunchKernel".into(),
                code: 719,
                message: "CUDA_ERROR_LAUNCH_FAILED".into(),
            })
        });
    driver
        .expect_set_device()
        .with(eq(0))
        .times(1)
        .in_sequence(&mut sequence)
        .returning(|_| Ok(()));
    let error = with_kernel(&driver, "gptq_torch", |kernel, dispatch| {
        kernel.warmup(dispatch, &Selector::from("cuda:1"))
    })
    .expect_err("launch fails");
    assert_eq!(error.kind(), "driver-error");
}

#[test]
fn a_move_whose_weights_read_back_differently_fails_and_still_frees_the_buffer() {
    let mut driver = MockDriver::new();
    driver.expect_build().return_const(TorchBuild::Cpu);
    driver.expect_device_count().returning(|| Ok(0));
    driver.expect_torch_device_count().returning(|| Ok(0));
    driver.expect_load_extension().returning(|_| Ok(()));
    driver.expect_alloc().times(1).returning(|_, bytes| {
        Ok(Buffer {
            place: Place::Cpu,
            handle: 7,
            bytes,
        })
    });
    driver.expect_copy_in().times(1).returning(|_, _| Ok(()));
    driver
        .expect_copy_out()
        .times(1)
        .returning(|buffer| Ok(vec![0xA5; buffer.bytes]));
    driver
        .expect_free()
        .withf(|buffer| buffer.handle == 7)
        .times(1)
        .returning(|_| Ok(()));
    let error = with_kernel(&driver, "gptq_torch", |kernel, dispatch| {
        kernel.move_weights(dispatch, &Selector::from("cpu"))
    })
    .expect_err("the weights came back changed");
    assert_eq!(error.kind(), "driver-error");
    // devsim's own check, not a driver status: a negative code no driver uses.
    assert_eq!(
        error.to_string(),
        "call the runtime: copy: weights read back differ from what was written (driver code -1)"
    );
}
