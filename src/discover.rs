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
    /// The vendor of the usable GPUs, if any are visible.
    pub vendor: Option<Vendor>,
    /// The visible GPUs, in ordinal order.
    pub gpus: Vec<DiscoveredGpu>,
}

/// Lists the visible GPUs with the arch query of the build's own vendor.
pub fn discover(runtime: &dyn Runtime) -> Result<Discovery, DriverError> {
    let build = runtime.build();
    if build == TorchBuild::Cpu {
        return Ok(Discovery {
            build,
            vendor: None,
            gpus: Vec::new(),
        });
    }
    let count = runtime.device_count()?;
    let vendor = match count {
        0 => None,
        _ => build.vendor(),
    };
    let mut gpus = Vec::new();
    for ordinal in 0..count {
        let name = runtime.device_name(ordinal)?;
        let arch = if vendor == Some(Vendor::Amd) {
            runtime.amd_arch(ordinal)?
        } else {
            let cc = runtime.nvidia_capability(ordinal)?;
            format!("sm_{}{}", cc.major, cc.minor)
        };
        gpus.push(DiscoveredGpu {
            ordinal,
            name,
            arch,
        });
    }
    Ok(Discovery {
        build,
        vendor,
        gpus,
    })
}
