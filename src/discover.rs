//! Discovering what the running build can use: the helper test suites use to decide what to run.
//!
//! HIP's `torch.cuda.is_available()` is true on AMD machines, so "cuda is available" is no evidence of
//! NVIDIA hardware: discovery reads the build's vendor and asks each GPU the question of its own vendor.

use serde::Serialize;

use crate::runtime::DriverError;
use crate::runtime::Runtime;
use crate::vocab::TorchBuild;
use crate::vocab::Vendor;

/// One GPU as discovery sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscoveredGpu {
    /// Its visible ordinal.
    pub ordinal: u32,
    /// The driver's name.
    pub name: String,
    /// `sm_90` or `gfx942:sramecc+:xnack-`.
    pub arch: String,
}

/// What the running build can use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Discovery {
    /// The running build.
    pub build: TorchBuild,
    /// The vendor of the usable GPUs, if torch counts any.
    pub vendor: Option<Vendor>,
    /// The usable GPUs: ordinals torch counts that the runtime also exposes, in ordinal order.
    pub gpus: Vec<DiscoveredGpu>,
    /// torch's view: what `torch.cuda.device_count()` returns.
    pub torch_device_count: u32,
    /// The runtime's view: every GPU the driver (or ROCm runtime) exposes, in its ordinal order.
    pub runtime_devices: Vec<DiscoveredGpu>,
}

/// Lists both views: torch's count, and each GPU the runtime exposes, asked the arch query of the build's
/// own vendor.
pub fn discover(runtime: &dyn Runtime) -> Result<Discovery, DriverError> {
    let build = runtime.build();
    if build == TorchBuild::Cpu {
        return Ok(Discovery {
            build,
            vendor: None,
            gpus: Vec::new(),
            torch_device_count: 0,
            runtime_devices: Vec::new(),
        });
    }
    let torch_device_count = runtime.torch_device_count()?;
    let driver_count = runtime.device_count()?;
    let query_vendor = build.vendor();
    let vendor = (torch_device_count > 0).then_some(query_vendor).flatten();
    let mut runtime_devices = Vec::new();
    for ordinal in 0..driver_count {
        let name = runtime.device_name(ordinal)?;
        let arch = if query_vendor == Some(Vendor::Amd) {
            runtime.amd_arch(ordinal)?
        } else {
            let cc = runtime.nvidia_capability(ordinal)?;
            format!("sm_{}{}", cc.major, cc.minor)
        };
        runtime_devices.push(DiscoveredGpu {
            ordinal,
            name,
            arch,
        });
    }
    let usable = torch_device_count.min(driver_count) as usize;
    Ok(Discovery {
        build,
        vendor,
        gpus: runtime_devices[..usable].to_vec(),
        torch_device_count,
        runtime_devices,
    })
}
