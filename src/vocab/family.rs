//! Vendors, device families and GPU architectures.
//!
//! A *family* is what a kernel declares and what dispatch reasons in. An *arch* is one GPU's
//! architecture: an NVIDIA compute capability (`sm_90`) or an AMD target (`gfx942`, with optional
//! feature suffixes such as `:sramecc+:xnack-`, kept apart from the base target that rules compare).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use thiserror::Error;

/// Who made a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    /// NVIDIA: CUDA builds of torch.
    Nvidia,
    /// AMD: HIP (ROCm) builds of torch.
    Amd,
    /// Intel: XPU builds.
    Intel,
    /// Apple: MPS.
    Apple,
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
            Vendor::Intel => "intel",
            Vendor::Apple => "apple",
        })
    }
}

/// What a kernel declares and dispatch reasons in. `All` only appears in declarations and lock scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// The host CPU.
    Cpu,
    /// NVIDIA GPUs (never AMD, whatever torch calls them).
    Cuda,
    /// AMD GPUs, which a HIP build of torch exposes through its `cuda` namespace.
    Rocm,
    /// Intel GPUs.
    Xpu,
    /// Apple GPUs.
    Mps,
    /// Every family: a declaration that admits anything, or a lock over every device.
    All,
}

impl Family {
    /// Every family, in a fixed order.
    pub const EVERY: [Family; 6] = [
        Family::Cpu,
        Family::Cuda,
        Family::Rocm,
        Family::Xpu,
        Family::Mps,
        Family::All,
    ];

    /// The GPU vendor behind the family, if it is a single-vendor GPU family.
    pub fn vendor(self) -> Option<Vendor> {
        match self {
            Family::Cuda => Some(Vendor::Nvidia),
            Family::Rocm => Some(Vendor::Amd),
            Family::Xpu => Some(Vendor::Intel),
            Family::Mps => Some(Vendor::Apple),
            Family::Cpu | Family::All => None,
        }
    }

    /// The lowercase name used in scenario files and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Cpu => "cpu",
            Family::Cuda => "cuda",
            Family::Rocm => "rocm",
            Family::Xpu => "xpu",
            Family::Mps => "mps",
            Family::All => "all",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An NVIDIA compute capability such as 9.0 (`sm_90`); ordered by major, then minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ComputeCapability {
    /// The major version (9 for sm_90).
    pub major: u32,
    /// The minor version (0 for sm_90).
    pub minor: u32,
}

impl ComputeCapability {
    /// A capability from its two numbers.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// NVIDIA architectures devsim knows, as `sm_` suffixes.
pub const KNOWN_SM: &[&str] = &[
    "50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86", "87", "89", "90", "100",
    "101", "103", "110", "120", "121",
];

/// AMD base targets devsim knows (LLVM AMDGPU processor names).
pub const KNOWN_GFX: &[&str] = &[
    "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950",
    "gfx1010", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200",
    "gfx1201",
];

/// One AMD feature flag of a target id, e.g. `xnack-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GfxFeature {
    /// The feature name (`sramecc`, `xnack`).
    pub name: String,
    /// `+` (on) or `-` (off).
    pub enabled: bool,
}

/// An AMD target id: a base processor plus optional feature flags.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GfxTarget {
    /// The base processor that arch rules compare, e.g. `gfx90a`.
    pub base: String,
    /// Feature suffixes in written order.
    pub features: Vec<GfxFeature>,
}

impl GfxTarget {
    /// The numbers HIP reports as `major`/`minor` for this target (`gfx942` → 9.4, `gfx1201` → 12.0,
    /// `gfx90a` → 9.0): what an NVIDIA capability query on an AMD GPU answers.
    pub fn hip_capability(&self) -> ComputeCapability {
        let digits = &self.base[3..];
        let (major, rest) = digits.split_at(digits.len() - 2);
        let major = major.parse().unwrap_or(0);
        let minor = rest[..1].parse().unwrap_or(0);
        ComputeCapability::new(major, minor)
    }
}

impl fmt::Display for GfxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)?;
        for feature in &self.features {
            write!(
                f,
                ":{}{}",
                feature.name,
                if feature.enabled { '+' } else { '-' }
            )?;
        }
        Ok(())
    }
}

/// One GPU's architecture.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    /// An NVIDIA GPU of this compute capability.
    Sm(ComputeCapability),
    /// An AMD GPU of this target.
    Gfx(GfxTarget),
}

impl Arch {
    /// The vendor whose GPUs carry this arch.
    pub fn vendor(&self) -> Vendor {
        match self {
            Arch::Sm(_) => Vendor::Nvidia,
            Arch::Gfx(_) => Vendor::Amd,
        }
    }

    /// The family dispatch uses for a GPU of this arch.
    pub fn family(&self) -> Family {
        match self {
            Arch::Sm(_) => Family::Cuda,
            Arch::Gfx(_) => Family::Rocm,
        }
    }

    /// The compute capability when NVIDIA.
    pub fn capability(&self) -> Option<ComputeCapability> {
        match self {
            Arch::Sm(cc) => Some(*cc),
            Arch::Gfx(_) => None,
        }
    }

    /// The gfx target when AMD.
    pub fn gfx(&self) -> Option<&GfxTarget> {
        match self {
            Arch::Gfx(target) => Some(target),
            Arch::Sm(_) => None,
        }
    }

    /// A plausible marketing name, used when a profile gives none.
    pub fn default_name(&self) -> String {
        match self {
            Arch::Sm(cc) => match (cc.major, cc.minor) {
                (8, 0) => "NVIDIA A100-SXM4-80GB".into(),
                (8, 6) => "NVIDIA GeForce RTX 3090".into(),
                (8, 9) => "NVIDIA GeForce RTX 4090".into(),
                (9, 0) => "NVIDIA H200".into(),
                (10, 0) => "NVIDIA B200".into(),
                (12, 0) => "NVIDIA GeForce RTX 5090".into(),
                _ => format!("NVIDIA GPU sm_{}{}", cc.major, cc.minor),
            },
            Arch::Gfx(target) => match target.base.as_str() {
                "gfx942" => "AMD Instinct MI300X".into(),
                "gfx90a" => "AMD Instinct MI250X".into(),
                "gfx950" => "AMD Instinct MI355X".into(),
                "gfx1100" => "AMD Radeon RX 7900 XTX".into(),
                "gfx1201" => "AMD Radeon AI PRO R9700".into(),
                "gfx1200" => "AMD Radeon RX 9060 XT".into(),
                base => format!("AMD GPU {base}"),
            },
        }
    }

    /// Opt-in shared memory per block in bytes, as the real parts report it, when a profile gives none.
    pub fn default_smem_optin(&self) -> u32 {
        match self {
            Arch::Sm(cc) => match (cc.major, cc.minor) {
                (8, 0) | (8, 7) => 166_912,
                (8, 6) | (8, 9) => 101_376,
                (9, 0) | (10, _) | (11, _) => 232_448,
                (12, _) => 101_376,
                (7, 0) | (7, 2) => 98_304,
                (7, 5) => 65_536,
                _ => 49_152,
            },
            Arch::Gfx(_) => 65_536,
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arch::Sm(cc) => write!(f, "sm_{}{}", cc.major, cc.minor),
            Arch::Gfx(target) => target.fmt(f),
        }
    }
}

impl FromStr for Arch {
    type Err = ArchError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || ArchError::Unknown {
            input: text.to_string(),
        };
        let lower = text.trim().to_ascii_lowercase();
        if let Some(digits) = lower.strip_prefix("sm_") {
            if !KNOWN_SM.contains(&digits) {
                return Err(unknown());
            }
            let (major, minor) = digits.split_at(digits.len() - 1);
            let major = major.parse().map_err(|_| unknown())?;
            let minor = minor.parse().map_err(|_| unknown())?;
            return Ok(Arch::Sm(ComputeCapability::new(major, minor)));
        }
        if lower.starts_with("gfx") {
            let mut parts = lower.split(':');
            let base = parts.next().unwrap_or_default();
            if !KNOWN_GFX.contains(&base) {
                return Err(unknown());
            }
            let mut features = Vec::new();
            for part in parts {
                let (name, enabled) = match part.as_bytes().last() {
                    Some(b'+') => (&part[..part.len() - 1], true),
                    Some(b'-') => (&part[..part.len() - 1], false),
                    _ => return Err(unknown()),
                };
                if !matches!(name, "sramecc" | "xnack") {
                    return Err(unknown());
                }
                features.push(GfxFeature {
                    name: name.to_string(),
                    enabled,
                });
            }
            return Ok(Arch::Gfx(GfxTarget {
                base: base.to_string(),
                features,
            }));
        }
        Err(unknown())
    }
}

impl Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The list of accepted arch spellings, for error messages.
pub fn accepted_archs() -> String {
    let sm: Vec<String> = KNOWN_SM.iter().map(|d| format!("sm_{d}")).collect();
    format!(
        "{} or {} (optionally with :sramecc± / :xnack± suffixes)",
        sm.join(", "),
        KNOWN_GFX.join(", ")
    )
}

/// An arch string devsim does not accept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArchError {
    /// Not an `sm_XY` capability or `gfxNNNN` target devsim knows.
    #[error("parse arch `{input}`: expected {}", accepted_archs())]
    Unknown {
        /// What was written.
        input: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    // The CUDA programming guide's maximum opt-in shared memory per block, per compute capability.
    #[rstest]
    #[case::v100("sm_70", 98_304)]
    #[case::t4("sm_75", 65_536)]
    #[case::a100("sm_80", 166_912)]
    #[case::a10("sm_86", 101_376)]
    #[case::orin("sm_87", 166_912)]
    #[case::rtx4090("sm_89", 101_376)]
    #[case::h200("sm_90", 232_448)]
    #[case::b200("sm_100", 232_448)]
    #[case::rtx5090("sm_120", 101_376)]
    #[case::pascal("sm_61", 49_152)]
    #[case::amd("gfx942", 65_536)]
    fn default_opt_in_shared_memory_is_what_the_part_reports(
        #[case] arch: &str,
        #[case] bytes: u32,
    ) {
        let arch: Arch = arch.parse().expect("a known arch");
        assert_eq!(arch.default_smem_optin(), bytes);
    }

    #[rstest]
    #[case("sm_90", "sm_90")]
    #[case("SM_80", "sm_80")]
    #[case("sm_100", "sm_100")]
    #[case("gfx942", "gfx942")]
    #[case("gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack-")]
    fn arch_round_trips(#[case] input: &str, #[case] shown: &str) {
        let arch: Arch = input.parse().expect("valid arch");
        assert_eq!(arch.to_string(), shown);
    }

    #[test]
    fn gfx_features_are_kept_apart_from_the_base_target() {
        let arch: Arch = "gfx90a:sramecc+:xnack-".parse().expect("valid arch");
        let gfx = arch.gfx().expect("amd arch");
        assert_eq!(gfx.base, "gfx90a");
        assert_eq!(gfx.features.len(), 2);
        assert!(gfx.features[0].enabled && !gfx.features[1].enabled);
    }

    #[rstest]
    #[case("sm_9")]
    #[case("sm_99")]
    #[case("gfx9999")]
    #[case("gfx90a:turbo+")]
    #[case("gfx942:xnack")]
    #[case("ampere")]
    #[case("")]
    fn unknown_archs_are_refused_with_the_accepted_list(#[case] input: &str) {
        let error = input.parse::<Arch>().expect_err("must be refused");
        let message = error.to_string();
        assert!(message.contains(&format!("`{input}`")), "{message}");
        assert!(
            message.contains("sm_90") && message.contains("gfx1201"),
            "{message}"
        );
    }

    #[test]
    fn compute_capabilities_order_by_major_then_minor() {
        let parse = |s: &str| {
            s.parse::<Arch>()
                .expect("arch")
                .capability()
                .expect("nvidia")
        };
        assert!(parse("sm_75") < parse("sm_80"));
        assert!(parse("sm_89") < parse("sm_90"));
        assert!(parse("sm_90") < parse("sm_100"));
        assert_eq!(parse("sm_120"), ComputeCapability::new(12, 0));
    }

    #[rstest]
    #[case("gfx942", 9, 4)]
    #[case("gfx90a", 9, 0)]
    #[case("gfx1201", 12, 0)]
    #[case("gfx1030", 10, 3)]
    fn hip_reports_gfx_derived_capabilities(
        #[case] arch: &str,
        #[case] major: u32,
        #[case] minor: u32,
    ) {
        let arch: Arch = arch.parse().expect("arch");
        assert_eq!(
            arch.gfx().expect("amd").hip_capability(),
            ComputeCapability::new(major, minor)
        );
    }
}
