//! The torch build a process runs: CUDA, HIP (ROCm) or CPU-only.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::vocab::family::{Family, Vendor};

/// Which runtime the process's torch was built for. One per process, even on mixed-vendor hosts.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TorchBuild {
    /// A CUDA build: NVIDIA GPUs answer to `cuda`.
    Cuda,
    /// A HIP (ROCm) build: AMD GPUs answer to `cuda`.
    Hip,
    /// A CPU-only build.
    Cpu,
}

impl TorchBuild {
    /// The GPU family the build runs, if any.
    pub fn gpu_family(self) -> Option<Family> {
        match self {
            TorchBuild::Cuda => Some(Family::Cuda),
            TorchBuild::Hip => Some(Family::Rocm),
            TorchBuild::Cpu => None,
        }
    }

    /// The vendor whose GPUs the build can see.
    pub fn vendor(self) -> Option<Vendor> {
        self.gpu_family().and_then(Family::vendor)
    }
}

impl fmt::Display for TorchBuild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TorchBuild::Cuda => "cuda",
            TorchBuild::Hip => "hip",
            TorchBuild::Cpu => "cpu",
        })
    }
}
