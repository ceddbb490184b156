//! The vocabulary every layer speaks: vendors, families, archs, torch builds, targets and torch devices.
//!
//! This module depends on nothing else in devsim; everything else may depend on it.

mod build;
mod device;
mod family;

pub use build::TorchBuild;
pub use device::{Target, TorchDevice, TorchDeviceError, TorchType};
pub use family::{
    Arch, ArchError, ComputeCapability, Family, KNOWN_GFX, KNOWN_SM, Vendor, accepted_archs,
};
