//! Visible-device variables, applied with PyTorch's rules.
//!
//! The parser matches `torch.cuda._parse_visible_devices` and its unit tests (`TestVisibleDeviceParses`):
//! strtoul-like ordinals (`1gpu2,2ampere` is `1,2`), a negative or non-numeric entry ends the list, a repeat
//! empties it, and `GPU-`/`MIG-` prefixed ids are matched against device UUIDs by prefix. On HIP builds
//! `ROCR_VISIBLE_DEVICES` is applied first, then `HIP_VISIBLE_DEVICES` (or, without it,
//! `CUDA_VISIBLE_DEVICES`) selects among what ROCR left.

use std::collections::{BTreeMap, HashSet};

use thiserror::Error;

use crate::vocab::TorchBuild;

/// The variables a host may set.
pub const VISIBLE_DEVICE_VARIABLES: [&str; 3] = [
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
];

/// One variable's value as PyTorch parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VisibleList {
    /// Device ordinals, in the order written.
    Ordinals(Vec<i64>),
    /// `GPU-…` or `MIG-…` ids, in the order written.
    Ids(Vec<String>),
}

/// PyTorch's `_strtoul`: the integer a string starts with (an optional sign, then digits), or -1.
fn strtoul(text: &str) -> i64 {
    let bytes = text.as_bytes();
    let mut end = 0;
    for (index, byte) in bytes.iter().enumerate() {
        if !(byte.is_ascii_digit() || (index == 0 && (*byte == b'+' || *byte == b'-'))) {
            break;
        }
        end = index + 1;
    }
    text[..end].parse().unwrap_or(-1)
}

/// Parses one visible-device variable the way `torch.cuda._parse_visible_devices` does.
pub fn parse_visible_devices(value: &str) -> VisibleList {
    for prefix in ["GPU-", "MIG-"] {
        if value.starts_with(prefix) {
            let mut ids: Vec<String> = Vec::new();
            let mut seen = HashSet::new();
            for element in value.split(',') {
                if !seen.insert(element) {
                    return VisibleList::Ids(Vec::new());
                }
                if !element.starts_with(prefix) {
                    break;
                }
                ids.push(element.to_string());
            }
            return VisibleList::Ids(ids);
        }
    }
    let mut ordinals = Vec::new();
    let mut seen = HashSet::new();
    for element in value.split(',') {
        let ordinal = strtoul(element.trim());
        if !seen.insert(ordinal) {
            return VisibleList::Ordinals(Vec::new());
        }
        if ordinal < 0 {
            break;
        }
        ordinals.push(ordinal);
    }
    VisibleList::Ordinals(ordinals)
}

/// Applies one parsed list to the devices still visible (`pool`, physical indices in visible order),
/// the way the driver and PyTorch's device count read it: the list stops at the first entry that names no
/// device, and ids match device UUIDs by unique prefix.
fn select(list: &VisibleList, pool: &[usize], uuids: &[String], build: TorchBuild) -> Vec<usize> {
    let mut chosen = Vec::new();
    match list {
        VisibleList::Ordinals(ordinals) => {
            for ordinal in ordinals {
                match usize::try_from(*ordinal).ok().and_then(|i| pool.get(i)) {
                    Some(physical) => chosen.push(*physical),
                    None => break,
                }
            }
        }
        VisibleList::Ids(ids) => {
            for id in ids {
                let candidate = if build == TorchBuild::Hip {
                    id.replacen("GPU-", "", 1)
                } else {
                    id.clone()
                };
                let matches: Vec<usize> = pool
                    .iter()
                    .copied()
                    .filter(|physical| uuids[*physical].starts_with(&candidate))
                    .collect();
                let [only] = matches.as_slice() else { break };
                if chosen.contains(only) {
                    return Vec::new();
                }
                chosen.push(*only);
            }
        }
    }
    chosen
}

fn entries(value: &str) -> usize {
    value.split(',').count()
}

/// The physical indices of the build's GPUs that torch sees, in torch's ordinal order.
///
/// `uuids` are the GPUs' ids (`GPU-…` on NVIDIA, bare hex on AMD), indexed by physical position.
pub fn visible_gpus(
    build: TorchBuild,
    env: &BTreeMap<String, String>,
    uuids: &[String],
) -> Result<Vec<usize>, VisibleError> {
    if let Some(key) = env
        .keys()
        .find(|key| !VISIBLE_DEVICE_VARIABLES.contains(&key.as_str()))
    {
        return Err(VisibleError::UnknownEnv { key: key.clone() });
    }
    let all: Vec<usize> = (0..uuids.len()).collect();
    let cuda = env.get("CUDA_VISIBLE_DEVICES");
    let visible = match build {
        TorchBuild::Cpu => return Ok(Vec::new()),
        TorchBuild::Cuda => match cuda {
            Some(value) => select(&parse_visible_devices(value), &all, uuids, build),
            None => all,
        },
        TorchBuild::Hip => {
            let rocr = env.get("ROCR_VISIBLE_DEVICES");
            let hip = env.get("HIP_VISIBLE_DEVICES");
            let pool = match rocr {
                Some(value) => select(&parse_visible_devices(value), &all, uuids, build),
                None => all,
            };
            if let (Some(rocr), Some(hip)) = (rocr, hip) {
                if entries(hip) > entries(rocr) {
                    return Err(VisibleError::HipMaskWiderThanRocr);
                }
            }
            match hip.or(if rocr.is_some() { None } else { cuda }) {
                Some(value) => select(&parse_visible_devices(value), &pool, uuids, build),
                None => pool,
            }
        }
    };
    Ok(visible)
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
    /// PyTorch's own check: HIP_VISIBLE_DEVICES may not list more devices than ROCR_VISIBLE_DEVICES.
    #[error(
        "apply visible devices: HIP_VISIBLE_DEVICES contains more devices than ROCR_VISIBLE_DEVICES"
    )]
    HipMaskWiderThanRocr,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn ordinals(value: &str) -> Vec<i64> {
        match parse_visible_devices(value) {
            VisibleList::Ordinals(list) => list,
            VisibleList::Ids(ids) => panic!("expected ordinals, got ids {ids:?}"),
        }
    }

    // PyTorch's own cases from test/test_cuda.py::TestVisibleDeviceParses::test_env_var_parsing.
    #[rstest]
    #[case::rest_of_the_string_is_ignored("1gpu2,2ampere", &[1, 2])]
    #[case::negatives_abort_parsing("0, 1, 2, -1, 3", &[0, 1, 2])]
    #[case::double_mention_returns_empty("0, 1, 2, 1", &[])]
    #[case::unary_pluses_and_minuses("2, +3, -0, 5", &[2, 3, 0, 5])]
    #[case::random_string_is_empty_set("one,two,3,4", &[])]
    #[case::random_string_is_separator("4,3,two,one", &[4, 3])]
    fn parses_ordinals_like_pytorch(#[case] value: &str, #[case] expected: &[i64]) {
        assert_eq!(ordinals(value), expected);
    }

    #[rstest]
    #[case::gpu_ids_are_parsed("GPU-9e8d35e3", &["GPU-9e8d35e3"])]
    #[case::ordinals_are_not_in_gpu_id_set("GPU-123, 2", &["GPU-123"])]
    #[case::mig_ids_are_parsed("MIG-89c850dc", &["MIG-89c850dc"])]
    fn parses_ids_like_pytorch(#[case] value: &str, #[case] expected: &[&str]) {
        assert_eq!(
            parse_visible_devices(value),
            VisibleList::Ids(expected.iter().map(|s| s.to_string()).collect())
        );
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn uuids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("GPU-{i:04x}aaaa")).collect()
    }

    #[rstest]
    #[case::no_mask(TorchBuild::Cuda, &[], 4, &[0, 1, 2, 3])]
    #[case::reorder(TorchBuild::Cuda, &[("CUDA_VISIBLE_DEVICES", "1,0")], 2, &[1, 0])]
    #[case::past_the_end_stops(TorchBuild::Cuda, &[("CUDA_VISIBLE_DEVICES", "1,5,0")], 2, &[1])]
    #[case::hidden(TorchBuild::Cuda, &[("CUDA_VISIBLE_DEVICES", "")], 2, &[])]
    #[case::hip_uses_hip_variable(TorchBuild::Hip, &[("HIP_VISIBLE_DEVICES", "1"), ("CUDA_VISIBLE_DEVICES", "0")], 2, &[1])]
    #[case::hip_falls_back_to_cuda_variable(TorchBuild::Hip, &[("CUDA_VISIBLE_DEVICES", "1")], 2, &[1])]
    #[case::rocr_first_then_hip(TorchBuild::Hip, &[("ROCR_VISIBLE_DEVICES", "2,3"), ("HIP_VISIBLE_DEVICES", "1")], 4, &[3])]
    #[case::rocr_alone(TorchBuild::Hip, &[("ROCR_VISIBLE_DEVICES", "3,1")], 4, &[3, 1])]
    #[case::rocr_ignores_cuda_variable(TorchBuild::Hip, &[("ROCR_VISIBLE_DEVICES", "1"), ("CUDA_VISIBLE_DEVICES", "5")], 2, &[1])]
    #[case::cuda_build_ignores_hip(TorchBuild::Cuda, &[("HIP_VISIBLE_DEVICES", "1")], 2, &[0, 1])]
    #[case::uuid_prefix(TorchBuild::Cuda, &[("CUDA_VISIBLE_DEVICES", "GPU-0001,GPU-0000")], 2, &[1, 0])]
    fn applies_masks_in_pytorch_order(
        #[case] build: TorchBuild,
        #[case] vars: &[(&str, &str)],
        #[case] gpus: usize,
        #[case] expected: &[usize],
    ) {
        assert_eq!(
            visible_gpus(build, &env(vars), &uuids(gpus)).expect("valid mask"),
            expected
        );
    }

    #[test]
    fn hip_mask_wider_than_rocr_is_refused_as_pytorch_does() {
        let vars = env(&[
            ("ROCR_VISIBLE_DEVICES", "0"),
            ("HIP_VISIBLE_DEVICES", "0,1"),
        ]);
        assert_eq!(
            visible_gpus(TorchBuild::Hip, &vars, &uuids(2)),
            Err(VisibleError::HipMaskWiderThanRocr)
        );
    }

    #[test]
    fn other_variables_are_refused() {
        let vars = env(&[("LD_PRELOAD", "/tmp/x.so")]);
        let error = visible_gpus(TorchBuild::Cuda, &vars, &uuids(1)).expect_err("refused");
        assert!(error.to_string().contains("LD_PRELOAD"));
    }
}
