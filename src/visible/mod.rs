//! Visible-device variables, and the two views of a host they produce.
//!
//! - **torch's view** ([`torch`]): the count `torch.cuda.device_count()` returns, following PyTorch
//!   [`TORCH_VERSION`]'s own code. Dispatch code sees this number: normalization and validation accept an
//!   ordinal below it.
//! - **the runtime's view** (`driver`): which physical GPU each ordinal is, as the CUDA driver, or ROCr then
//!   HIP, expose it. Execution (set_device, alloc, launch, name and arch queries) goes there.
//!
//! The two differ on HIP builds where PyTorch counts ROCR_VISIBLE_DEVICES' entries instead of parsing them;
//! then torch may count an ordinal the runtime lacks, and the first call on it is a driver error.
//! `docs/visible-devices.md` shows one example of each view.

mod driver;
mod pychars;
pub mod torch;

use std::collections::BTreeMap;

use serde::Serialize;
use thiserror::Error;

use crate::vocab::TorchBuild;

pub use torch::TORCH_VERSION;

/// The variables a host may set.
pub const VISIBLE_DEVICE_VARIABLES: [&str; 3] = [
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
];

/// Both views of one host's GPUs after its visible-device variables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Visibility {
    /// torch's view: what `torch.cuda.device_count()` returns, so ordinals `0..torch_count` normalize.
    pub torch_count: usize,
    /// The runtime's view: the physical index of the GPU at each runtime ordinal.
    pub runtime: Vec<usize>,
}

/// Applies `env` to a box with GPUs `uuids` (indexed by physical position: `GPU-…` on NVIDIA, the bare
/// 16-hex-digit serial on AMD) on `build`.
pub fn visibility(
    build: TorchBuild,
    env: &BTreeMap<String, String>,
    uuids: &[String],
) -> Result<Visibility, VisibleError> {
    if let Some(key) = env
        .keys()
        .find(|key| !VISIBLE_DEVICE_VARIABLES.contains(&key.as_str()))
    {
        return Err(VisibleError::UnknownEnv { key: key.clone() });
    }
    let runtime = driver::runtime_gpus(build, env, uuids);
    let torch_count = torch::device_count(build, env, uuids, runtime.len())?;
    Ok(Visibility {
        torch_count,
        runtime,
    })
}

/// The runtime's view alone: the physical index of the GPU at each ordinal the CUDA driver, or ROCr
/// then HIP, expose under `env` (even where torch's own parser raises).
pub fn runtime_view(
    build: TorchBuild,
    env: &BTreeMap<String, String>,
    uuids: &[String],
) -> Vec<usize> {
    driver::runtime_gpus(build, env, uuids)
}

/// Why the runtime of `build` refuses to initialise at all under `env` (its init call fails), if it
/// does; see `docs/visible-devices.md`. The two views still apply: such a process sees no GPU.
pub fn runtime_rejects(build: TorchBuild, env: &BTreeMap<String, String>) -> Option<String> {
    driver::rejection(build, env)
}

/// Visible-device variables that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VisibleError {
    /// An `env` key that is not a visible-device variable.
    #[error(
        "set environment variable `{key}`: a host may set only CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES"
    )]
    UnknownEnv {
        /// The key written.
        key: String,
    },
    /// PyTorch's own check (`_parse_visible_devices` raises `RuntimeError`): HIP_VISIBLE_DEVICES may not
    /// have more entries than ROCR_VISIBLE_DEVICES.
    #[error(
        "apply visible devices: HIP_VISIBLE_DEVICES contains more devices than ROCR_VISIBLE_DEVICES (torch 2.11.0 raises RuntimeError)"
    )]
    HipMaskWiderThanRocr,
    /// An entry PyTorch's `int()` refuses (`_parse_visible_devices` raises `ValueError`).
    #[error(
        "parse {variable} entry `{entry}`: expected an optional sign followed by decimal digits (torch 2.11.0 raises ValueError on a lone sign or a non-decimal digit)"
    )]
    NotAnInteger {
        /// The variable torch parsed.
        variable: &'static str,
        /// The entry as written.
        entry: String,
    },
}

impl VisibleError {
    /// A short stable name for tools (`unknown-env`, `hip-wider-than-rocr`, `not-an-integer`).
    pub fn kind(&self) -> &'static str {
        match self {
            VisibleError::UnknownEnv { .. } => "unknown-env",
            VisibleError::HipMaskWiderThanRocr => "hip-wider-than-rocr",
            VisibleError::NotAnInteger { .. } => "not-an-integer",
        }
    }
}

/// Helpers the unit tests of both views share.
#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::BTreeMap;

    /// Visible-device variables from `(name, value)` pairs.
    pub(crate) fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// `n` AMD serials (16 hex digits, as `hipDeviceGetUuid` answers), counting up from `first`.
    pub(crate) fn amd_serials(first: usize, n: usize) -> Vec<String> {
        (first..first + n).map(|i| format!("{i:016x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visible::test_support::{amd_serials, env};

    #[test]
    fn errors_have_stable_kinds_for_tools() {
        let unknown = VisibleError::UnknownEnv { key: "X".into() };
        assert_eq!(unknown.kind(), "unknown-env");
        assert_eq!(
            VisibleError::HipMaskWiderThanRocr.kind(),
            "hip-wider-than-rocr"
        );
        let sign = VisibleError::NotAnInteger {
            variable: "CUDA_VISIBLE_DEVICES",
            entry: "-".into(),
        };
        assert_eq!(sign.kind(), "not-an-integer");
    }

    #[test]
    fn torch_counts_rocr_entries_the_runtime_refuses() {
        let vars = env(&[
            ("ROCR_VISIBLE_DEVICES", "a"),
            ("CUDA_VISIBLE_DEVICES", "a,1gpu,0"),
        ]);
        let seen = visibility(TorchBuild::Hip, &vars, &amd_serials(0, 3)).expect("valid");
        assert_eq!(
            seen,
            Visibility {
                torch_count: 1,
                runtime: vec![]
            }
        );
    }

    #[test]
    fn the_runtime_view_answers_where_torch_raises() {
        // HIP wider than ROCr: torch raises, the ROCm runtime still exposes ROCr's GPUs, HIP's order over them.
        let vars = env(&[
            ("ROCR_VISIBLE_DEVICES", "2,0"),
            ("HIP_VISIBLE_DEVICES", "1,0,0"),
        ]);
        let serials = amd_serials(0, 3);
        assert_eq!(
            visibility(TorchBuild::Hip, &vars, &serials),
            Err(VisibleError::HipMaskWiderThanRocr)
        );
        assert_eq!(runtime_view(TorchBuild::Hip, &vars, &serials), [0, 2]);
        // Where torch does not raise, the runtime view is the one `visibility` reports.
        let vars = env(&[("CUDA_VISIBLE_DEVICES", "2,0")]);
        let seen = visibility(TorchBuild::Cuda, &vars, &serials).expect("valid");
        assert_eq!(seen.runtime, [2, 0]);
        assert_eq!(
            runtime_view(TorchBuild::Cuda, &vars, &serials),
            seen.runtime
        );
    }

    #[test]
    fn other_variables_are_refused() {
        let vars = env(&[("LD_PRELOAD", "/tmp/x.so")]);
        let error = visibility(TorchBuild::Cuda, &vars, &amd_serials(0, 1)).expect_err("refused");
        assert!(error.to_string().contains("LD_PRELOAD"));
    }

    #[test]
    fn a_mask_of_two_hundred_thousand_entries_gives_the_right_views() {
        // Linearity is measured by `devsim bench` (the `mask:` line), never by a clock in a unit test.
        let mask: Vec<String> = (0..200_000).map(|i| i.to_string()).collect();
        let vars = env(&[("CUDA_VISIBLE_DEVICES", &mask.join(","))]);
        let seen = visibility(TorchBuild::Cuda, &vars, &amd_serials(0, 4)).expect("valid");
        assert_eq!(seen.torch_count, 4);
        assert_eq!(seen.runtime, [0, 1, 2, 3]);
    }
}
