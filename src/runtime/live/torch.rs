//! Real tensors through `tch` (cargo feature `torch`): weights moved to a device and read back, and a
//! small real computation checked against the CPU result. tch has no current-device API, so the caller
//! passes the place explicitly (read from the driver).

use tch::{Device, Kind, Tensor};

use crate::runtime::DriverError;
use crate::runtime::Place;
use crate::vocab::TorchBuild;

fn tch_error(call: &str, error: tch::TchError) -> DriverError {
    DriverError {
        call: format!("tch {call}"),
        code: -1,
        // torch appends a C++ backtrace; its first line says what went wrong.
        message: error
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

fn device(place: Place) -> Device {
    match place {
        Place::Cpu => Device::Cpu,
        Place::Gpu(n) => Device::Cuda(n as usize),
    }
}

/// Where a tensor lives, read from the tensor itself.
pub fn place_of(tensor: &Tensor) -> Place {
    match tensor.device() {
        Device::Cuda(n) => Place::Gpu(n as u32),
        _ => Place::Cpu,
    }
}

/// The build of the libtorch this process loaded, read from the loaded libraries (`libtorch_hip.so` or
/// `libtorch_cuda.so`), after asking torch whether CUDA is available so it initializes.
pub fn loaded_build() -> TorchBuild {
    // Asking initializes torch's CUDA/HIP hooks; the answer itself depends on the GPUs, not the build.
    let _ = tch::Cuda::is_available();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    if maps.contains("libtorch_hip.so") {
        TorchBuild::Hip
    } else if maps.contains("libtorch_cuda.so") {
        TorchBuild::Cuda
    } else {
        TorchBuild::Cpu
    }
}

/// Whether torch itself drives the GPUs a driver reports: the same build and the same device count.
/// (A fake driver answers devsim's calls but not the CUDA runtime's, so torch sees no GPU through it.)
pub fn drives(build: TorchBuild, gpus: usize) -> bool {
    loaded_build() == build && gpus > 0 && device_count() as usize == gpus
}

/// How many GPUs torch sees.
pub fn device_count() -> u32 {
    u32::try_from(tch::Cuda::device_count()).unwrap_or(0)
}

/// Creates `data` on the CPU and moves it to `place`.
pub fn upload(data: &[u8], place: Place) -> Result<Tensor, DriverError> {
    let cpu = Tensor::f_from_slice(data).map_err(|e| tch_error("from_slice", e))?;
    cpu.f_to(device(place)).map_err(|e| tch_error("to", e))
}

/// Copies host data into an existing tensor (wherever it lives).
pub fn fill(tensor: &mut Tensor, data: &[u8]) -> Result<(), DriverError> {
    let source = Tensor::f_from_slice(data).map_err(|e| tch_error("from_slice", e))?;
    tensor.f_copy_(&source).map_err(|e| tch_error("copy_", e))
}

/// Reads a tensor back to the host.
pub fn download(tensor: &Tensor) -> Result<Vec<u8>, DriverError> {
    let cpu = tensor.f_to(Device::Cpu).map_err(|e| tch_error("to", e))?;
    let mut out = vec![0u8; cpu.numel()];
    cpu.f_copy_data_u8(&mut out, cpu.numel())
        .map_err(|e| tch_error("copy_data", e))?;
    Ok(out)
}

/// Multiplies a small matrix by itself on `place` and compares with the CPU result; returns where the
/// result tensor lives.
pub fn compute(place: Place) -> Result<Place, DriverError> {
    let values: Vec<f32> = (0..64).map(|i| (i % 7) as f32).collect();
    let x = Tensor::f_from_slice(&values)
        .and_then(|t| t.f_reshape([8, 8]))
        .map_err(|e| tch_error("reshape", e))?;
    let expected = x.f_matmul(&x).map_err(|e| tch_error("matmul", e))?;
    let on_target = x.f_to(device(place)).map_err(|e| tch_error("to", e))?;
    let result = on_target
        .f_matmul(&on_target)
        .map_err(|e| tch_error("matmul", e))?;
    let ran_on = place_of(&result);
    let back = result.f_to(Device::Cpu).map_err(|e| tch_error("to", e))?;
    let same = back
        .f_to_kind(Kind::Float)
        .and_then(|b| b.f_equal(&expected))
        .map_err(|e| tch_error("equal", e))?;
    if !same {
        return Err(DriverError {
            call: "tch matmul".into(),
            code: -1,
            message: format!("the result on {ran_on} differs from the CPU result"),
        });
    }
    Ok(ran_on)
}
