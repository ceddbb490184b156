//! The runtime's view: which physical GPU each ordinal is, as the CUDA driver or the ROCm runtime exposes it.
//!
//! Sources:
//! - CUDA driver: `CUDA_VISIBLE_DEVICES` as documented in the CUDA C++ Programming Guide ("CUDA Environment
//!   Variables"): indices or `GPU-` UUIDs (unique prefixes allowed), enumerated in the order written, the list
//!   ending at the first invalid entry. NVIDIA publishes no parser; devsim reads entries the way PyTorch
//!   mirrors the driver (`strtoul`-like numbers, a repeated device hides every device), with C's ASCII
//!   digits and spaces. devsim models no MIG instances, so a `MIG-` mask exposes nothing.
//! - ROCm runtime (ROCr), `ROCR_VISIBLE_DEVICES`: `RvdFilter` in ROCR-Runtime
//!   `src/core/runtime/amd_filter_device.cpp`. An empty value exposes no GPU; tokens are upper-cased and
//!   trimmed; only the first N tokens (N GPUs) are read; a token starting with `G` is a UUID prefix of
//!   `GPU-<16 hex digits>` (5 to 20 characters, unique), any other is `strtol(token, 0)` (hex, octal,
//!   decimal) that must use the whole token; an invalid, out-of-range or repeated token ends the list.
//!   ROCr throws `std::out_of_range` on an empty token (`",0"`); devsim ends the list there.
//! - HIP runtime (CLR), over what ROCr left: `Device::init` in ROCm/clr `rocclr/device/rocm/rocdevice.cpp`.
//!   `HIP_VISIBLE_DEVICES`, or `CUDA_VISIBLE_DEVICES` when HIP's is unset or empty, each entry an exact
//!   decimal index (`str == std::to_string(atoi(str))`) below ROCr's count, or an entry containing `GPU-` that
//!   a device's `GPU-<uuid>` contains; the list ends at the first invalid entry and repeats are skipped.

use std::collections::{BTreeMap, HashSet};

use super::torch::{parse_ids, sorted_uuids, transform, unique_prefix};
use crate::vocab::TorchBuild;

/// C's `isspace` in the "C" locale.
const C_SPACE: [char; 6] = [' ', '\t', '\n', '\u{b}', '\u{c}', '\r'];

/// The physical indices the runtime exposes, in its ordinal order.
pub(super) fn runtime_gpus(
    build: TorchBuild,
    env: &BTreeMap<String, String>,
    uuids: &[String],
) -> Vec<usize> {
    let all = || (0..uuids.len()).collect();
    let cuda = env.get("CUDA_VISIBLE_DEVICES");
    match build {
        TorchBuild::Cpu => Vec::new(),
        TorchBuild::Cuda => cuda.map_or_else(all, |value| cuda_driver(value, uuids)),
        TorchBuild::Hip => {
            let agents = env
                .get("ROCR_VISIBLE_DEVICES")
                .map_or_else(all, |value| rocr(value, uuids));
            let hip = env.get("HIP_VISIBLE_DEVICES");
            let ordinals = [hip, cuda]
                .into_iter()
                .flatten()
                .find(|value| !value.is_empty());
            match ordinals {
                Some(value) => hip_runtime(value, &agents, uuids),
                None => agents,
            }
        }
    }
}

/// A C `strtoul` prefix: optional sign and ASCII digits after C spaces; `None` when no digit follows or the
/// number is negative, else the canonical digits.
fn c_number(entry: &str) -> Option<String> {
    let text = entry.trim_start_matches(C_SPACE);
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let digits = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    if digits.is_empty() {
        return None;
    }
    let canonical = digits.trim_start_matches('0');
    let canonical = if canonical.is_empty() { "0" } else { canonical };
    (!negative || canonical == "0").then(|| canonical.to_string())
}

/// `CUDA_VISIBLE_DEVICES` on the CUDA driver.
fn cuda_driver(value: &str, uuids: &[String]) -> Vec<usize> {
    for prefix in ["GPU-", "MIG-"] {
        if value.starts_with(prefix) {
            return transform(&parse_ids(value, prefix), uuids, false);
        }
    }
    let mut seen = HashSet::new();
    let mut ordinals = Vec::new();
    for entry in value.split(',') {
        let Some(ordinal) = c_number(entry) else {
            break;
        };
        if !seen.insert(ordinal.clone()) {
            return Vec::new();
        }
        ordinals.push(ordinal);
    }
    ordinals
        .iter()
        .map_while(|ordinal| ordinal.parse::<usize>().ok().filter(|n| *n < uuids.len()))
        .collect()
}

/// Why the runtime refuses to start at all under `env`, if it does: the CUDA driver's `cuInit` answers
/// `CUDA_ERROR_INVALID_DEVICE` when `CUDA_VISIBLE_DEVICES` repeats an ordinal (seen on an H200 with
/// `0,0`). Torch's view is unchanged (PyTorch's own parser empties the list), and so is the runtime's
/// ordinal list (no GPU): only a live driver, or a fake, needs to know that init itself fails.
pub(super) fn rejection(build: TorchBuild, env: &BTreeMap<String, String>) -> Option<String> {
    let value = env.get("CUDA_VISIBLE_DEVICES")?;
    if build != TorchBuild::Cuda {
        return None;
    }
    // A UUID mask (`GPU-…`, `MIG-…`) is not a number: its first entry ends the check below.
    let mut seen = HashSet::new();
    for entry in value.split(',') {
        let ordinal = c_number(entry)?;
        if !seen.insert(ordinal.clone()) {
            return Some(format!(
                "CUDA_VISIBLE_DEVICES={value:?} repeats ordinal {ordinal}: the CUDA driver's cuInit answers CUDA_ERROR_INVALID_DEVICE"
            ));
        }
    }
    None
}

/// `strtol(token, &end, 0)` with `*end == '\0'` required, truncated to `int32_t` as ROCr stores it.
fn strtol_base0(token: &str) -> Option<i32> {
    let (negative, rest) = match token.as_bytes().first() {
        Some(b'-') => (true, &token[1..]),
        Some(b'+') => (false, &token[1..]),
        _ => (false, token),
    };
    let (radix, digits) = if let Some(hex) = rest.strip_prefix("0X").or(rest.strip_prefix("0x")) {
        if hex.bytes().next().is_some_and(|b| b.is_ascii_hexdigit()) {
            (16, hex)
        } else {
            // strtol reads the "0" and stops at the "X": the token is not used up.
            return None;
        }
    } else if rest.starts_with('0') {
        (8, rest)
    } else {
        (10, rest)
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i128 = 0;
    for c in digits.chars() {
        let digit = c.to_digit(radix)?;
        value = (value * i128::from(radix) + i128::from(digit)).min(i128::from(i64::MAX) + 1);
    }
    let long = if negative {
        i64::try_from(-value).unwrap_or(i64::MIN)
    } else {
        i64::try_from(value).unwrap_or(i64::MAX)
    };
    // A `long` stored into `int32_t`: the low 32 bits.
    Some(long as i32)
}

/// `ROCR_VISIBLE_DEVICES` on ROCr: physical indices in the order the tokens name them.
fn rocr(value: &str, uuids: &[String]) -> Vec<usize> {
    if value.is_empty() {
        return Vec::new();
    }
    let mut tokens: Vec<&str> = value.split(',').collect();
    if tokens.last() == Some(&"") {
        tokens.pop();
    }
    let rocr_uuids: Vec<String> = uuids
        .iter()
        .map(|uuid| format!("GPU-{}", uuid.to_ascii_uppercase()))
        .collect();
    let sorted = sorted_uuids(&rocr_uuids);
    let mut seen = HashSet::new();
    let mut chosen = Vec::new();
    for token in tokens.into_iter().take(uuids.len()) {
        let token = token.to_ascii_uppercase();
        let token = token.trim_matches(C_SPACE);
        let index = if token.is_empty() {
            None
        } else if token.starts_with('G') {
            (5..=20)
                .contains(&token.len())
                .then(|| unique_prefix(&sorted, token))
                .flatten()
        } else {
            strtol_base0(token).and_then(|index| usize::try_from(index).ok())
        };
        let Some(index) = index.filter(|index| *index < uuids.len()) else {
            break;
        };
        if !seen.insert(index) {
            break;
        }
        chosen.push(index);
    }
    chosen
}

/// Whether `entry` is exactly `std::to_string(atoi(entry))` for a non-negative value.
fn canonical_index(entry: &str) -> Option<usize> {
    let digits_only = !entry.is_empty() && entry.bytes().all(|b| b.is_ascii_digit());
    let canonical = entry == "0" || !entry.starts_with('0');
    (digits_only && canonical)
        .then(|| entry.parse::<i32>().ok())
        .flatten()
        .and_then(|index| usize::try_from(index).ok())
}

/// `HIP_VISIBLE_DEVICES` (or `CUDA_VISIBLE_DEVICES`) on CLR, choosing among ROCr's `agents`.
fn hip_runtime(value: &str, agents: &[usize], uuids: &[String]) -> Vec<usize> {
    let agent_uuids: Vec<String> = agents
        .iter()
        .map(|physical| format!("GPU-{}", uuids[*physical].to_ascii_lowercase()))
        .collect();
    let mut seen = HashSet::new();
    let mut chosen = Vec::new();
    for entry in value.split(',') {
        let index = if entry.contains("GPU-") {
            // CLR rewrites the entry to the matching device's index; an unmatched one stays invalid.
            agent_uuids.iter().position(|uuid| uuid.contains(entry))
        } else {
            canonical_index(entry)
        };
        let Some(index) = index.filter(|index| *index < agents.len()) else {
            break;
        };
        if seen.insert(index) {
            chosen.push(agents[index]);
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visible::test_support::{amd_serials, env};
    use rstest::rstest;

    #[rstest]
    #[case::no_mask(&[], 3, &[0, 1, 2])]
    #[case::rocr_reorders(&[("ROCR_VISIBLE_DEVICES", "2,0")], 3, &[2, 0])]
    #[case::rocr_word_exposes_nothing(&[("ROCR_VISIBLE_DEVICES", "a")], 3, &[])]
    #[case::rocr_empty_exposes_nothing(&[("ROCR_VISIBLE_DEVICES", "")], 3, &[])]
    #[case::rocr_repeat_ends_the_list(&[("ROCR_VISIBLE_DEVICES", "1,1,0")], 3, &[1])]
    #[case::rocr_reads_hex_and_octal(&[("ROCR_VISIBLE_DEVICES", "0x2,01")], 3, &[2, 1])]
    #[case::rocr_reads_n_tokens_only(&[("ROCR_VISIBLE_DEVICES", "0,1,x")], 2, &[0, 1])]
    #[case::rocr_trailing_comma(&[("ROCR_VISIBLE_DEVICES", "1,")], 2, &[1])]
    #[case::rocr_index_past_the_end_stops(&[("ROCR_VISIBLE_DEVICES", "1,2")], 2, &[1])]
    #[case::rocr_plus_sign(&[("ROCR_VISIBLE_DEVICES", "+1")], 2, &[1])]
    #[case::rocr_uuid_prefix(&[("ROCR_VISIBLE_DEVICES", "gpu-000000000000abc1")], 2, &[1])]
    #[case::rocr_uuid_too_short(&[("ROCR_VISIBLE_DEVICES", "GPU-")], 2, &[])]
    #[case::hip_over_rocr(&[("ROCR_VISIBLE_DEVICES", "2,3"), ("HIP_VISIBLE_DEVICES", "1")], 4, &[3])]
    #[case::hip_past_rocr_ends(&[("ROCR_VISIBLE_DEVICES", "2"), ("HIP_VISIBLE_DEVICES", "0,1")], 4, &[2])]
    #[case::hip_repeat_is_skipped(&[("HIP_VISIBLE_DEVICES", "1,1,0")], 2, &[1, 0])]
    #[case::hip_needs_exact_decimals(&[("HIP_VISIBLE_DEVICES", "1,+0")], 2, &[1])]
    #[case::hip_empty_falls_back_to_cuda(&[("HIP_VISIBLE_DEVICES", ""), ("CUDA_VISIBLE_DEVICES", "1")], 2, &[1])]
    #[case::hip_uuid_substring(&[("HIP_VISIBLE_DEVICES", "GPU-000000000000abc1")], 2, &[1])]
    fn applies_rocm_rules(
        #[case] vars: &[(&str, &str)],
        #[case] gpus: usize,
        #[case] expected: &[usize],
    ) {
        assert_eq!(
            runtime_gpus(TorchBuild::Hip, &env(vars), &amd_serials(0xabc0, gpus)),
            expected
        );
    }

    #[rstest]
    #[case::reorder("1,0", 2, &[1, 0])]
    #[case::past_the_end_stops("1,5,0", 2, &[1])]
    #[case::hidden("", 2, &[])]
    #[case::repeat_hides_all("0,1,0", 2, &[])]
    #[case::strtoul_prefix("1gpu", 2, &[1])]
    #[case::plus_sign("+1", 2, &[1])]
    #[case::minus_zero_is_zero("-0,1", 2, &[0, 1])]
    #[case::negative_stops("0,-1,1", 2, &[0])]
    #[case::first_past_the_end_stops("1,2", 2, &[1])]
    #[case::uuid_prefix("GPU-0000000000000001", 2, &[1])]
    #[case::no_mig_instances("MIG-0", 2, &[])]
    fn applies_cuda_rules(#[case] mask: &str, #[case] gpus: usize, #[case] expected: &[usize]) {
        let uuids: Vec<String> = (0..gpus).map(|i| format!("GPU-{i:016x}")).collect();
        let vars = env(&[("CUDA_VISIBLE_DEVICES", mask)]);
        assert_eq!(runtime_gpus(TorchBuild::Cuda, &vars, &uuids), expected);
    }

    #[rstest]
    #[case::repeat("0,0", true)]
    #[case::repeat_after_others("1,0,01", true)]
    #[case::reorder("1,0", false)]
    #[case::repeat_after_the_end("0,x,0", false)]
    #[case::uuids("GPU-0,GPU-0", false)]
    fn a_repeated_ordinal_makes_cuinit_fail(#[case] mask: &str, #[case] rejected: bool) {
        let vars = env(&[("CUDA_VISIBLE_DEVICES", mask)]);
        assert_eq!(rejection(TorchBuild::Cuda, &vars).is_some(), rejected);
        assert_eq!(rejection(TorchBuild::Hip, &vars), None);
    }

    #[rstest]
    #[case::overflow_to_long_max("99999999999999999999", Some(-1))]
    #[case::long_min_truncates_to_zero("-99999999999999999999", Some(0))]
    #[case::two_to_the_32_is_zero("4294967296", Some(0))]
    #[case::negative("-1", Some(-1))]
    #[case::plus("+7", Some(7))]
    #[case::trailing_garbage("1A", None)]
    #[case::bare_hex_prefix("0X", None)]
    #[case::octal_eight("08", None)]
    fn reads_tokens_like_strtol(#[case] token: &str, #[case] expected: Option<i32>) {
        assert_eq!(strtol_base0(token), expected);
    }
}
