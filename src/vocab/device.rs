//! Targets and torch devices: what dispatch resolves a selector to, and what a torch boundary receives.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::vocab::family::Family;

/// A normalized selector: a family plus an optional ordinal. No ordinal means "the current device".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Target {
    /// The family, already normalized for the running build (ROCM on HIP, never CUDA there).
    pub family: Family,
    /// The explicit ordinal as written, or `None` for the family's current device.
    pub ordinal: Option<u32>,
}

impl Target {
    /// A family target: the current device of the family.
    pub const fn family(family: Family) -> Self {
        Self {
            family,
            ordinal: None,
        }
    }

    /// An explicit device of the family.
    pub const fn device(family: Family, ordinal: u32) -> Self {
        Self {
            family,
            ordinal: Some(ordinal),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ordinal {
            Some(n) => write!(f, "{}:{n}", self.family),
            None => write!(f, "{}", self.family),
        }
    }
}

/// The device types torch knows. ROCM has none of its own: HIP builds use `cuda`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TorchType {
    /// `cpu`
    Cpu,
    /// `cuda` (NVIDIA on CUDA builds, AMD on HIP builds)
    Cuda,
    /// `xpu`
    Xpu,
    /// `mps`
    Mps,
}

/// What a boundary call receives: a torch device type plus an optional index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TorchDevice {
    /// The torch device type.
    pub kind: TorchType,
    /// The index, or `None` for the current device of that type.
    pub index: Option<u32>,
}

impl TorchDevice {
    /// `cpu`
    pub const CPU: TorchDevice = TorchDevice {
        kind: TorchType::Cpu,
        index: None,
    };

    /// `cuda:N`
    pub const fn cuda(index: u32) -> Self {
        Self {
            kind: TorchType::Cuda,
            index: Some(index),
        }
    }
}

impl fmt::Display for TorchDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            TorchType::Cpu => "cpu",
            TorchType::Cuda => "cuda",
            TorchType::Xpu => "xpu",
            TorchType::Mps => "mps",
        };
        match self.index {
            Some(index) => write!(f, "{kind}:{index}"),
            None => f.write_str(kind),
        }
    }
}

impl Serialize for TorchDevice {
    /// Torch's own spelling: `cuda:1`, `cuda`, `cpu`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A string that is not one of torch's own device spellings.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("parse torch device `{input}`: expected cpu, cuda, cuda:N, xpu[:N] or mps")]
pub struct TorchDeviceError {
    /// What was written.
    pub input: String,
}

impl std::str::FromStr for TorchDevice {
    type Err = TorchDeviceError;

    /// Parses `cpu`, `cuda`, `cuda:1`, `xpu:0`, `mps` (torch's own spellings only).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || TorchDeviceError {
            input: text.to_string(),
        };
        let (kind, index) = match text.split_once(':') {
            Some((kind, index)) => (kind, Some(index.parse().map_err(|_| unknown())?)),
            None => (text, None),
        };
        let kind = match kind {
            "cpu" => TorchType::Cpu,
            "cuda" => TorchType::Cuda,
            "xpu" => TorchType::Xpu,
            "mps" => TorchType::Mps,
            _ => return Err(unknown()),
        };
        Ok(TorchDevice { kind, index })
    }
}
