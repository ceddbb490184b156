//! `devsim check|kernels|hosts --format json`: the scenarios that loaded, the catalog with its arch rules and
//! ROCm audit, and the host profiles.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::run::LoadErrorOutput;

/// `devsim check --format json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckOutput {
    /// [`VERSION`](super::VERSION).
    pub version: u32,
    /// Each scenario that loaded.
    pub scenarios: Vec<CheckedOutput>,
    /// Files that failed to load.
    pub load_errors: Vec<LoadErrorOutput>,
}

/// A scenario that loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckedOutput {
    /// The name: the path relative to the scenario root.
    pub name: String,
    /// The file.
    pub path: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// How many steps.
    pub steps: usize,
}

/// `devsim kernels --format json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelsOutput {
    /// [`VERSION`](super::VERSION).
    pub version: u32,
    /// The catalog, in catalog order.
    pub kernels: Vec<KernelOutput>,
}

/// One kernel's contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelOutput {
    /// The catalog key.
    pub name: String,
    /// The quantization method.
    pub method: String,
    /// Supported weight bit widths.
    pub bits: Vec<u32>,
    /// The declared families (`cuda`, `rocm`, `all` ...).
    pub families: Vec<String>,
    /// The arch rules.
    pub arch: ArchRulesOutput,
    /// The native extension loaded once every gate passed.
    pub extension: Option<String>,
    /// A Python-side requirement, informational.
    pub requires: Option<String>,
    /// Selection priority; higher wins.
    pub priority: u32,
    /// Whether automatic selection may pick it.
    pub selectable: bool,
    /// The portable kernel named when refusing.
    pub alternative: Option<String>,
    /// Whether moving weights repacks them on the device.
    pub repacks: bool,
    /// The audited ROCm decision, if audited.
    pub rocm_audit: Option<AuditOutput>,
}

/// A kernel's arch rules; absent rules admit every arch of the family.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchRulesOutput {
    /// The NVIDIA compute-capability rule.
    pub nvidia: Option<NvidiaRuleOutput>,
    /// Minimum opt-in shared memory per block on NVIDIA, bytes.
    pub smem_optin_min: Option<u32>,
    /// The AMD base targets accepted (`gfx942` ...).
    pub amd_targets: Option<Vec<String>>,
}

/// A compute capability, `9.0` as `{ "major": 9, "minor": 0 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityOutput {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

/// An NVIDIA compute-capability rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum NvidiaRuleOutput {
    /// `cc >= min`.
    AtLeast {
        /// The lowest capability accepted.
        min: CapabilityOutput,
    },
    /// `min <= cc < below`.
    Range {
        /// The lowest capability accepted.
        min: CapabilityOutput,
        /// The first capability refused.
        below: CapabilityOutput,
    },
    /// `cc` in a set.
    OneOf {
        /// The capabilities accepted.
        set: Vec<CapabilityOutput>,
    },
}

/// An audited ROCm decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditOutput {
    /// What was decided.
    pub decision: AuditDecision,
    /// Why.
    pub reason: String,
}

/// The three ROCm audit decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditDecision {
    /// Runs on AMD GPUs.
    Admitted,
    /// Never runs on AMD GPUs.
    Refused,
    /// Runs on the listed AMD targets only.
    RestrictedByArch,
}

/// `devsim hosts --format json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostsOutput {
    /// [`VERSION`](super::VERSION).
    pub version: u32,
    /// Each profile that loaded, by name.
    pub hosts: Vec<HostOutput>,
    /// Profiles that failed to load.
    pub load_errors: Vec<LoadErrorOutput>,
}

/// One host profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostOutput {
    /// The profile name.
    pub name: String,
    /// The torch build: `cuda`, `hip` or `cpu`.
    pub torch: String,
    /// GPUs of the build's vendor, in physical order.
    pub gpus: Vec<GpuOutput>,
    /// GPUs of another vendor: invisible to this build.
    pub foreign_gpus: Vec<GpuOutput>,
    /// The current device at start.
    pub current: u32,
    /// Visible-device variables.
    pub env: BTreeMap<String, String>,
    /// devsim's resolution of `env`, as the subject protocol sends it: ordinal `i` seen by torch is
    /// `gpus[visible[i]]`. Null when devsim cannot resolve them.
    pub visible: Option<Vec<usize>>,
    /// The GPU runtime version the build reports, when the profile gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    /// The archs the build was compiled for (`torch.cuda.get_arch_list()`), when the profile gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch_list: Option<Vec<String>>,
    /// Injected faults.
    pub faults: Vec<FaultOutput>,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuOutput {
    /// `sm_90`, `gfx1201` ...
    pub arch: String,
    /// The driver's name.
    pub name: String,
    /// Opt-in shared memory per block, bytes.
    pub smem_optin: u32,
    /// The driver's UUID.
    pub uuid: String,
    /// Total memory in MiB, when the profile gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u32>,
}

/// One injected fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultOutput {
    /// The call failed, or none for a lost device.
    pub call: Option<String>,
    /// Only on this visible ordinal.
    pub device: Option<u32>,
    /// Matching calls that succeed first.
    pub after: u32,
    /// The driver error code.
    pub code: i32,
    /// The driver message (empty: the build's default).
    pub message: String,
}
