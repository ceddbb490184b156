//! The closed words of the protocol: torch builds, families, lock modes and devsim's error kinds, each an
//! enum spelled on the wire as before.
//!
//! Words devsim sends (builds, families, lock modes) are closed: devsim writes only what it knows, and a
//! subject reading them sees every value it may meet in the schema. Words a subject sends (error kinds, trace
//! events) keep an arm for any other spelling, so an answer or handshake naming one this devsim does not know
//! still reads and is refused by the judge with the word named (a handshake's with the nearest known one),
//! as before, rather than failing to parse.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The torch build a host runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Build {
    /// NVIDIA's CUDA build.
    Cuda,
    /// AMD's HIP build (AMD GPUs through torch's `cuda` namespace).
    Hip,
    /// A CPU-only build.
    Cpu,
}

/// An accelerator family: what kernels declare and family-enum selectors name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FamilyName {
    /// The host CPU.
    Cpu,
    /// NVIDIA GPUs.
    Cuda,
    /// AMD GPUs.
    Rocm,
    /// Intel GPUs.
    Xpu,
    /// Apple GPUs.
    Mps,
    /// Every family (lock scopes and declarations).
    All,
}

/// A torch device type, as `torch.device(device_type, index)` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceType {
    /// `cpu`.
    Cpu,
    /// `cuda` (NVIDIA on CUDA builds, AMD on HIP builds).
    Cuda,
    /// `xpu`.
    Xpu,
    /// `mps`.
    Mps,
}

/// Whether a lock shares its keys with other readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LockMode {
    /// Shared.
    Read,
    /// Exclusive.
    Write,
}

/// One of devsim's error kinds, as a subject classifies a refusal; any other spelling is kept as written
/// (`Other`) so that devsim can refuse it naming the kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// A selector spelling devsim does not know.
    UnknownSelector,
    /// A kernel name that is not in the catalog.
    UnknownKernel,
    /// An arch string devsim does not accept.
    UnknownArch,
    /// An ordinal past the visible device count.
    NoSuchDevice,
    /// A family no visible device belongs to.
    FamilyNotPresent,
    /// A kernel asked to run on a family it does not declare.
    UnsupportedFamily,
    /// A kernel asked to run on a GPU arch it does not admit.
    UnsupportedArch,
    /// A kernel asked for a bit width it does not serve.
    UnsupportedBits,
    /// No kernel serves the request.
    NoKernel,
    /// A driver call failed.
    DriverError,
    /// A kind this devsim does not know, as the subject wrote it (refused when judged).
    #[serde(untagged)]
    Other(String),
}

impl ErrorKind {
    /// Every kind devsim knows, in its order.
    pub const KNOWN: [ErrorKind; 10] = [
        ErrorKind::UnknownSelector,
        ErrorKind::UnknownKernel,
        ErrorKind::UnknownArch,
        ErrorKind::NoSuchDevice,
        ErrorKind::FamilyNotPresent,
        ErrorKind::UnsupportedFamily,
        ErrorKind::UnsupportedArch,
        ErrorKind::UnsupportedBits,
        ErrorKind::NoKernel,
        ErrorKind::DriverError,
    ];

    /// The kind as spelled on the wire (`unsupported-arch`).
    pub fn as_str(&self) -> &str {
        match self {
            ErrorKind::UnknownSelector => "unknown-selector",
            ErrorKind::UnknownKernel => "unknown-kernel",
            ErrorKind::UnknownArch => "unknown-arch",
            ErrorKind::NoSuchDevice => "no-such-device",
            ErrorKind::FamilyNotPresent => "family-not-present",
            ErrorKind::UnsupportedFamily => "unsupported-family",
            ErrorKind::UnsupportedArch => "unsupported-arch",
            ErrorKind::UnsupportedBits => "unsupported-bits",
            ErrorKind::NoKernel => "no-kernel",
            ErrorKind::DriverError => "driver-error",
            ErrorKind::Other(kind) => kind,
        }
    }
}

impl fmt::Display for ErrorKind {
    /// The kind as spelled on the wire.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A trace event's name, as scenario trace rules and subjects spell it; any other spelling is kept as written
/// (`Other`) so that devsim can refuse it naming the event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventName {
    /// How many devices torch reports.
    DeviceCount,
    /// How many devices the driver itself enumerates.
    DriverDeviceCount,
    /// A device's name.
    DeviceName,
    /// An NVIDIA compute-capability query.
    NvidiaCapability,
    /// An NVIDIA opt-in shared-memory-per-block query.
    SmemOptin,
    /// An AMD `gcnArchName` query.
    AmdArch,
    /// Read the thread's current device.
    GetDevice,
    /// Change the thread's current device.
    SetDevice,
    /// Allocate device memory.
    Alloc,
    /// Copy between host and device.
    Copy,
    /// Free device memory.
    Free,
    /// Launch work.
    Launch,
    /// Wait for the device.
    Synchronize,
    /// Load a kernel's native extension.
    ExtensionLoad,
    /// Take a device-pool lock.
    Lock,
    /// The selector-normalization gate.
    #[serde(rename = "gate:normalize")]
    GateNormalize,
    /// The declared-families gate.
    #[serde(rename = "gate:family")]
    GateFamily,
    /// The bit-width gate.
    #[serde(rename = "gate:bits")]
    GateBits,
    /// The arch gate.
    #[serde(rename = "gate:arch")]
    GateArch,
    /// A context switch the runtime made on its own inside a call.
    ContextSwitch,
    /// An event this devsim does not know, as the subject wrote it (refused when read).
    #[serde(untagged)]
    Other(String),
}

impl EventName {
    /// Every event devsim knows, in its order.
    pub const KNOWN: [EventName; 20] = [
        EventName::DeviceCount,
        EventName::DriverDeviceCount,
        EventName::DeviceName,
        EventName::NvidiaCapability,
        EventName::SmemOptin,
        EventName::AmdArch,
        EventName::GetDevice,
        EventName::SetDevice,
        EventName::Alloc,
        EventName::Copy,
        EventName::Free,
        EventName::Launch,
        EventName::Synchronize,
        EventName::ExtensionLoad,
        EventName::Lock,
        EventName::GateNormalize,
        EventName::GateFamily,
        EventName::GateBits,
        EventName::GateArch,
        EventName::ContextSwitch,
    ];

    /// The event as spelled on the wire (`gate:family`).
    pub fn as_str(&self) -> &str {
        match self {
            EventName::DeviceCount => "device_count",
            EventName::DriverDeviceCount => "driver_device_count",
            EventName::DeviceName => "device_name",
            EventName::NvidiaCapability => "nvidia_capability",
            EventName::SmemOptin => "smem_optin",
            EventName::AmdArch => "amd_arch",
            EventName::GetDevice => "get_device",
            EventName::SetDevice => "set_device",
            EventName::Alloc => "alloc",
            EventName::Copy => "copy",
            EventName::Free => "free",
            EventName::Launch => "launch",
            EventName::Synchronize => "synchronize",
            EventName::ExtensionLoad => "extension_load",
            EventName::Lock => "lock",
            EventName::GateNormalize => "gate:normalize",
            EventName::GateFamily => "gate:family",
            EventName::GateBits => "gate:bits",
            EventName::GateArch => "gate:arch",
            EventName::ContextSwitch => "context_switch",
            EventName::Other(name) => name,
        }
    }
}

impl fmt::Display for EventName {
    /// The event as spelled on the wire.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for EventName {
    /// The known event of that spelling, or `Other`.
    fn from(name: &str) -> Self {
        EventName::KNOWN
            .into_iter()
            .find(|event| event.as_str() == name)
            .unwrap_or_else(|| EventName::Other(name.to_string()))
    }
}

macro_rules! display_as_serde {
    ($($ty:ident { $($variant:ident = $name:literal),* })*) => {$(
        impl $ty {
            /// The word as spelled on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)*
                }
            }
        }

        impl fmt::Display for $ty {
            /// The word as spelled on the wire.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_serde! {
    Build { Cuda = "cuda", Hip = "hip", Cpu = "cpu" }
    FamilyName { Cpu = "cpu", Cuda = "cuda", Rocm = "rocm", Xpu = "xpu", Mps = "mps", All = "all" }
    DeviceType { Cpu = "cpu", Cuda = "cuda", Xpu = "xpu", Mps = "mps" }
    LockMode { Read = "read", Write = "write" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_and_print_as_their_wire_spelling() {
        for kind in ErrorKind::KNOWN {
            let json = serde_json::to_string(&kind).expect("a kind");
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<ErrorKind>(&json).ok(), Some(kind));
        }
        let other: ErrorKind = serde_json::from_str("\"out-of-memory\"").expect("any string");
        assert_eq!(other, ErrorKind::Other("out-of-memory".into()));
        assert_eq!(
            serde_json::to_string(&other).ok().as_deref(),
            Some("\"out-of-memory\"")
        );
        for family in ["cpu", "cuda", "rocm", "xpu", "mps", "all"] {
            let read: FamilyName = serde_json::from_str(&format!("\"{family}\"")).expect(family);
            assert_eq!(read.as_str(), family);
        }
        assert!(serde_json::from_str::<FamilyName>("\"gpu\"").is_err());
        for event in EventName::KNOWN {
            let json = serde_json::to_string(&event).expect("an event");
            assert_eq!(json, format!("\"{event}\""));
            assert_eq!(
                serde_json::from_str::<EventName>(&json).ok(),
                Some(event.clone())
            );
            assert_eq!(EventName::from(event.as_str()), event);
        }
        assert_eq!(
            serde_json::from_str::<EventName>("\"gate:colour\"").ok(),
            Some(EventName::Other("gate:colour".into()))
        );
        assert!(serde_json::from_str::<Build>("\"rocm\"").is_err());
        assert_eq!(LockMode::Write.to_string(), "write");
        assert_eq!(DeviceType::Cuda.to_string(), "cuda");
    }
}
