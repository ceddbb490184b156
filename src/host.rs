//! The simulated machine: which torch build runs, which GPUs are in the box, which of them the build sees,
//! the thread's starting current device, and the faults to inject.

use std::collections::BTreeMap;

use serde::Serialize;

use thiserror::Error;

use crate::trace::Call;
pub use crate::visible::Visibility;
use crate::visible::{VisibleError, visibility};
use crate::vocab::{Arch, TorchBuild, Vendor};

/// One GPU in the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gpu {
    /// Its architecture.
    pub arch: Arch,
    /// The name the driver reports.
    pub name: String,
    /// Opt-in shared memory per block, in bytes.
    pub smem_optin: u32,
    /// The GPU's UUID, matched by visible-device ids: `GPU-…` on NVIDIA (as NVML reports it), the 16-hex-digit
    /// ASIC serial on AMD (amdsmi's `asic_serial` without `0x`; ROCr and HIP show it as `GPU-<serial>`).
    pub uuid: String,
    /// Total memory in MiB (`total_memory`, `mem_get_info`), when the profile gives it; None: the subject's
    /// default.
    pub memory_mib: Option<u32>,
}

impl Gpu {
    /// A GPU with the arch's default name and shared memory; `physical` seeds its UUID.
    pub fn new(arch: Arch, physical: usize) -> Self {
        let uuid = match arch.vendor() {
            Vendor::Nvidia => format!("GPU-{physical:08x}-0000-4000-8000-000000000000"),
            _ => format!("{physical:016x}"),
        };
        Self {
            name: arch.default_name(),
            smem_optin: arch.default_smem_optin(),
            arch,
            uuid,
            memory_mib: None,
        }
    }
}

/// A runtime call made to fail: after `after` successful calls of that kind (on `device`, if given),
/// every further one returns the driver error `code`. A fault with no `call` fails every call on
/// `device`: a lost device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fault {
    /// The call to fail, or `None` for every device-scoped call (a lost device).
    pub call: Option<Call>,
    /// Only calls on this visible ordinal, or any device when `None`.
    pub device: Option<u32>,
    /// How many matching calls succeed before the fault fires.
    pub after: u32,
    /// The driver's error code.
    pub code: i32,
    /// The driver's message; a default for the build and code when empty.
    pub message: String,
}

/// A whole simulated machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostSpec {
    /// The profile name, or `inline`.
    pub name: String,
    /// The torch build the process runs.
    pub torch: TorchBuild,
    /// GPUs of the build's vendor, in physical order.
    pub gpus: Vec<Gpu>,
    /// GPUs of another vendor in the same box: invisible to this build.
    pub foreign_gpus: Vec<Gpu>,
    /// The thread's current device (a visible ordinal) when a scenario starts.
    pub current: u32,
    /// Visible-device variables.
    pub env: BTreeMap<String, String>,
    /// The GPU runtime's version the build reports (`torch.version.hip` / `torch.version.cuda`), when the
    /// scenario depends on it: `6.4.43482`, `13.0`. None: the subject's default for the build.
    pub runtime_version: Option<String>,
    /// The archs the build was compiled for (`torch.cuda.get_arch_list()`), when the profile gives them:
    /// `sm_90`, `compute_120` on CUDA, `gfx942` on HIP. None: the subject's default for the build.
    pub arch_list: Option<Vec<String>>,
    /// Faults to inject.
    pub faults: Vec<Fault>,
}

impl HostSpec {
    /// A host with `torch` and GPUs of the given archs, every default else.
    pub fn new(torch: TorchBuild, archs: &[Arch]) -> Self {
        Self {
            name: "inline".into(),
            torch,
            gpus: archs
                .iter()
                .enumerate()
                .map(|(i, arch)| Gpu::new(arch.clone(), i))
                .collect(),
            foreign_gpus: Vec::new(),
            current: 0,
            env: BTreeMap::new(),
            runtime_version: None,
            arch_list: None,
            faults: Vec::new(),
        }
    }

    /// Both views of the GPUs after the visible-device variables: torch's count and the runtime's ordinals.
    pub fn visibility(&self) -> Result<Visibility, HostError> {
        let uuids: Vec<String> = self.gpus.iter().map(|gpu| gpu.uuid.clone()).collect();
        Ok(visibility(self.torch, &self.env, &uuids)?)
    }

    /// The physical indices the runtime (CUDA driver, or ROCr then HIP) exposes, in ordinal order.
    pub fn visible(&self) -> Result<Vec<usize>, HostError> {
        Ok(self.visibility()?.runtime)
    }

    /// Why live replay cannot reproduce this host, if torch's count and the runtime's differ under its
    /// visible-device variables: live runtimes read the driver's count for both.
    pub fn views_differ(&self) -> Option<String> {
        let seen = self.visibility().ok()?;
        (seen.torch_count != seen.runtime.len()).then(|| {
            format!(
                "views differ: torch counts {} device(s), the runtime exposes {}; live runtimes read only the driver's count",
                seen.torch_count,
                seen.runtime.len()
            )
        })
    }

    /// The GPU the runtime calls `ordinal`, if it exposes one.
    pub fn visible_gpu(&self, ordinal: u32) -> Option<&Gpu> {
        let visible = self.visible().ok()?;
        let physical = *visible.get(usize::try_from(ordinal).ok()?)?;
        self.gpus.get(physical)
    }

    /// Checks the host can be simulated: GPUs of the right vendor, a known mask, a current device in range.
    pub fn validate(&self) -> Result<(), HostError> {
        let expected = match self.torch {
            TorchBuild::Cuda => "sm_* archs",
            TorchBuild::Hip => "gfx* archs",
            TorchBuild::Cpu => "none: a CPU build sees no GPU",
        };
        for (index, gpu) in self.gpus.iter().enumerate() {
            if Some(gpu.arch.vendor()) != self.torch.vendor() {
                return Err(HostError::WrongVendor {
                    index,
                    arch: gpu.arch.to_string(),
                    build: self.torch,
                    expected,
                });
            }
        }
        if let Some(version) = &self.runtime_version {
            if self.torch == TorchBuild::Cpu || !runtime_version_ok(self.torch, version) {
                return Err(HostError::RuntimeVersion {
                    version: version.clone(),
                    build: self.torch,
                });
            }
        }
        if let Some(archs) = &self.arch_list {
            if let Some(arch) = archs.iter().find(|arch| !build_arch_ok(self.torch, arch)) {
                return Err(HostError::ArchList {
                    arch: arch.clone(),
                    build: self.torch,
                });
            }
        }
        let visible = u32::try_from(self.visible()?.len()).unwrap_or(u32::MAX);
        let current_ok = self.current < visible || (visible == 0 && self.current == 0);
        if !current_ok {
            return Err(HostError::CurrentOutOfRange {
                current: self.current,
                visible,
            });
        }
        Ok(())
    }

    /// Every vendor with a GPU in the box, this build's and foreign ones.
    pub fn vendors_in_box(&self) -> Vec<Vendor> {
        let mut vendors: Vec<Vendor> = self
            .gpus
            .iter()
            .chain(&self.foreign_gpus)
            .map(|gpu| gpu.arch.vendor())
            .collect();
        vendors.sort();
        vendors.dedup();
        vendors
    }
}

/// Whether `version` reads as the build's runtime version: dotted digits (`13.0`, `6.4.43482`), and on HIP
/// optionally the `-<git hash>` that ROCm's HIP version carries (`6.4.43482-0f2d60242`, as torch 2.8.0+rocm6.4
/// reports `torch.version.hip`).
fn runtime_version_ok(build: TorchBuild, version: &str) -> bool {
    let (numbers, hash) = match version.split_once('-') {
        Some((numbers, hash)) if build == TorchBuild::Hip => (numbers, Some(hash)),
        _ => (version, None),
    };
    let dotted = numbers.split('.').count() >= 2
        && numbers
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    let hash_ok =
        hash.is_none_or(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric()));
    dotted && hash_ok
}

/// Whether `arch` is an entry `torch.cuda.get_arch_list()` can hold on `build`: `sm_XY` or `compute_XY` (a PTX
/// entry, as `12.0+PTX` builds list it) on CUDA, a gfx base target on HIP.
fn build_arch_ok(build: TorchBuild, arch: &str) -> bool {
    match build {
        TorchBuild::Cuda => {
            let digits = arch
                .strip_prefix("sm_")
                .or_else(|| arch.strip_prefix("compute_"));
            digits.is_some_and(|d| {
                let d = d
                    .strip_suffix('a')
                    .or_else(|| d.strip_suffix('f'))
                    .unwrap_or(d);
                d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit())
            })
        }
        TorchBuild::Hip => arch.strip_prefix("gfx").is_some_and(|d| {
            d.len() >= 3
                && d.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }),
        TorchBuild::Cpu => false,
    }
}

/// The message a driver of `build` gives for `code`, for faults that name none.
pub fn driver_message(build: TorchBuild, code: i32) -> String {
    let (cuda, hip) = match code {
        1 => ("CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidValue"),
        2 => ("CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory"),
        3 => ("CUDA_ERROR_NOT_INITIALIZED", "hipErrorNotInitialized"),
        100 => ("CUDA_ERROR_NO_DEVICE", "hipErrorNoDevice"),
        101 => ("CUDA_ERROR_INVALID_DEVICE", "hipErrorInvalidDevice"),
        200 => ("CUDA_ERROR_INVALID_IMAGE", "hipErrorInvalidImage"),
        400 => ("CUDA_ERROR_INVALID_HANDLE", "hipErrorInvalidHandle"),
        700 => ("CUDA_ERROR_ILLEGAL_ADDRESS", "hipErrorIllegalAddress"),
        719 => ("CUDA_ERROR_LAUNCH_FAILED", "hipErrorLaunchFailure"),
        801 => ("CUDA_ERROR_NOT_SUPPORTED", "hipErrorNotSupported"),
        _ => ("CUDA_ERROR_UNKNOWN", "hipErrorUnknown"),
    };
    match build {
        TorchBuild::Hip => hip.to_string(),
        _ => cuda.to_string(),
    }
}

/// A host description that cannot be simulated as written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostError {
    /// A GPU listed under `gpus` is not of the build's vendor (or the build has no GPUs).
    #[error(
        "place GPU {index} ({arch}) on a {build} build: `gpus` lists GPUs of the build's vendor ({expected}); put other GPUs under `foreign_gpus`"
    )]
    WrongVendor {
        /// Position in `gpus`.
        index: usize,
        /// Its arch.
        arch: String,
        /// The build.
        build: TorchBuild,
        /// What the build accepts, in words.
        expected: &'static str,
    },
    /// `current` names a device past the visible count.
    #[error("make device {current} current: only {visible} device(s) are visible")]
    CurrentOutOfRange {
        /// The requested current device.
        current: u32,
        /// How many are visible.
        visible: u32,
    },
    /// `runtime_version` on a CPU build, or not a dotted version.
    #[error(
        "give the {build} build runtime version `{version}`: expected dotted digits such as `6.4.43482` or `6.4.43482-0f2d60242` (HIP) or `13.0` (CUDA), on a cuda or hip build"
    )]
    RuntimeVersion {
        /// The version written.
        version: String,
        /// The build.
        build: TorchBuild,
    },
    /// An `arch_list` entry the build cannot list, or an `arch_list` on a CPU build.
    #[error(
        "list arch `{arch}` in the {build} build's arch_list: expected `sm_XY` or `compute_XY` (cuda) or a gfx target such as `gfx942` (hip), on a cuda or hip build"
    )]
    ArchList {
        /// The entry written.
        arch: String,
        /// The build.
        build: TorchBuild,
    },
    /// The visible-device variables cannot be applied.
    #[error(transparent)]
    Visible(#[from] VisibleError),
    /// A profile that names itself in a cycle or a missing profile.
    #[error("find host profile `{name}`: expected one of {available}")]
    UnknownProfile {
        /// The profile named.
        name: String,
        /// The profiles that exist.
        available: String,
    },
    /// A fault names a call that does not exist.
    #[error("inject a fault into `{call}`: expected one of {expected}")]
    UnknownCall {
        /// The call named.
        call: String,
        /// The runtime calls that exist.
        expected: String,
    },
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::cuda(TorchBuild::Cuda, "13.0", true)]
    #[case::hip_dotted(TorchBuild::Hip, "6.4.43482", true)]
    #[case::hip_with_hash(TorchBuild::Hip, "6.4.43482-0f2d60242", true)]
    #[case::hip_rocm_sdk(TorchBuild::Hip, "7.1.52802-561cc400e1", true)]
    #[case::hash_on_cuda(TorchBuild::Cuda, "12.8-abc", false)]
    #[case::empty_hash(TorchBuild::Hip, "6.4.43482-", false)]
    #[case::hash_with_symbols(TorchBuild::Hip, "6.4.43482-0f2d/60", false)]
    #[case::one_number(TorchBuild::Hip, "6", false)]
    #[case::word(TorchBuild::Hip, "rocm-6", false)]
    fn runtime_versions_read_as_the_build_reports_them(
        #[case] build: TorchBuild,
        #[case] version: &str,
        #[case] ok: bool,
    ) {
        assert_eq!(runtime_version_ok(build, version), ok, "{version}");
    }

    #[rstest]
    #[case::sm(TorchBuild::Cuda, "sm_90", true)]
    #[case::sm_arch_specific(TorchBuild::Cuda, "sm_90a", true)]
    #[case::ptx(TorchBuild::Cuda, "compute_120", true)]
    #[case::gfx_on_cuda(TorchBuild::Cuda, "gfx942", false)]
    #[case::gfx(TorchBuild::Hip, "gfx942", true)]
    #[case::gfx_letter(TorchBuild::Hip, "gfx90a", true)]
    #[case::gfx_with_features(TorchBuild::Hip, "gfx942:sramecc+", false)]
    #[case::sm_on_hip(TorchBuild::Hip, "sm_90", false)]
    #[case::cpu(TorchBuild::Cpu, "gfx942", false)]
    fn arch_list_entries_match_the_build(
        #[case] build: TorchBuild,
        #[case] arch: &str,
        #[case] ok: bool,
    ) {
        assert_eq!(build_arch_ok(build, arch), ok, "{arch}");
    }

    #[test]
    fn a_host_with_an_arch_list_of_another_vendor_is_refused() {
        let mut host = HostSpec::new(TorchBuild::Hip, &["gfx1030".parse().expect("arch")]);
        host.arch_list = Some(vec!["gfx1030".into(), "sm_90".into()]);
        assert_eq!(
            host.validate(),
            Err(HostError::ArchList {
                arch: "sm_90".into(),
                build: TorchBuild::Hip
            })
        );
        host.arch_list = Some(vec!["gfx1100".into()]);
        assert_eq!(host.validate(), Ok(()), "a sparse list is a real build");
    }
}
