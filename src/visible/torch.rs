//! torch's view: the device count `torch.cuda.device_count()` returns, following PyTorch 2.11.0's code.
//!
//! Each function here mirrors one in `torch/cuda/__init__.py` of torch 2.11.0:
//! [`parse_visible_devices`] is `_parse_visible_devices` (with its `_strtoul` and `parse_list_with_prefix`),
//! [`device_count`] is `device_count` over `_device_count_nvml` (CUDA builds) or `_device_count_amdsmi`
//! (HIP builds) when NVML or amdsmi answers, and `transform` is `_transform_uuid_to_ordinals`. Every mask
//! is parsed once, in time linear in its length: repeats are found with sets, UUID prefixes with a sorted
//! index. `tools/torch_visible/diff.py` checks this module against PyTorch itself.

use std::collections::{BTreeMap, HashSet};

use super::VisibleError;
use super::pychars::{DECIMAL_ZEROS, DIGIT_NOT_DECIMAL, SPACE};
use crate::vocab::TorchBuild;

/// The PyTorch release whose rules this module follows.
pub const TORCH_VERSION: &str = "2.11.0";

/// What `_parse_visible_devices` returns for one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TorchList {
    /// `list(range(n))`: 64 when no variable applies, ROCR_VISIBLE_DEVICES' entry count when only it is set.
    Range(usize),
    /// Non-negative ordinals in the order written, each as canonical ASCII decimal digits (Python integers
    /// have no bound, so `99999999999999999999` is an ordinal too).
    Ordinals(Vec<String>),
    /// `GPU-…` or `MIG-…` ids in the order written.
    Ids(Vec<String>),
}

/// An entry Python's `int()` refuses (`_strtoul` raises `ValueError` on it): a lone sign, or a digit that
/// is not decimal (`²`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnInteger {
    /// The entry as written.
    pub entry: String,
}

/// `str.strip()`.
fn py_strip(text: &str) -> &str {
    text.trim_matches(|c: char| SPACE.binary_search(&c).is_ok())
}

/// The value of a `str.isdecimal()` digit.
fn decimal_value(c: char) -> Option<u8> {
    if c.is_ascii_digit() {
        return Some(c as u8 - b'0');
    }
    let point = u32::from(c);
    let run = DECIMAL_ZEROS.partition_point(|zero| *zero <= point);
    let zero = *DECIMAL_ZEROS.get(run.checked_sub(1)?)?;
    u8::try_from(point - zero).ok().filter(|value| *value < 10)
}

/// `str.isdigit()`.
fn is_py_digit(c: char) -> bool {
    if decimal_value(c).is_some() {
        return true;
    }
    let point = u32::from(c);
    let range = DIGIT_NOT_DECIMAL.partition_point(|(start, _)| *start <= point);
    range
        .checked_sub(1)
        .is_some_and(|i| DIGIT_NOT_DECIMAL[i].1 >= point)
}

/// `_strtoul` on a stripped entry: `Ok(Some(digits))` for a non-negative integer (canonical ASCII digits),
/// `Ok(None)` for -1 or any negative, `Err` where `int()` raises.
fn strtoul(text: &str) -> Result<Option<String>, ()> {
    let mut end = text.len();
    for (index, (byte, c)) in text.char_indices().enumerate() {
        if !(is_py_digit(c) || (index == 0 && (c == '+' || c == '-'))) {
            end = byte;
            break;
        }
    }
    if end == 0 {
        return Ok(None);
    }
    let prefix = &text[..end];
    let (negative, digits) = match prefix.as_bytes()[0] {
        b'+' => (false, &prefix[1..]),
        b'-' => (true, &prefix[1..]),
        _ => (false, prefix),
    };
    if digits.is_empty() {
        return Err(());
    }
    let mut canonical = String::with_capacity(digits.len());
    for c in digits.chars() {
        let value = decimal_value(c).ok_or(())?;
        if !(canonical.is_empty() && value == 0) {
            canonical.push(char::from(b'0' + value));
        }
    }
    if canonical.is_empty() {
        canonical.push('0');
    }
    Ok((!negative || canonical == "0").then_some(canonical))
}

/// `parse_list_with_prefix`: ids up to the first entry without the prefix; a repeat empties the list.
pub(super) fn parse_ids(value: &str, prefix: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut ids = Vec::new();
    for element in value.split(',') {
        if !seen.insert(element) {
            return Vec::new();
        }
        if !element.starts_with(prefix) {
            break;
        }
        ids.push(element.to_string());
    }
    ids
}

/// One variable's value as `_parse_visible_devices` reads it once it has chosen the variable.
pub fn parse_list(value: &str) -> Result<TorchList, NotAnInteger> {
    for prefix in ["GPU-", "MIG-"] {
        if value.starts_with(prefix) {
            return Ok(TorchList::Ids(parse_ids(value, prefix)));
        }
    }
    let mut seen = HashSet::new();
    let mut ordinals = Vec::new();
    for element in value.split(',') {
        let parsed = strtoul(py_strip(element)).map_err(|()| NotAnInteger {
            entry: element.to_string(),
        })?;
        let Some(ordinal) = parsed else { break };
        if !seen.insert(ordinal.clone()) {
            return Ok(TorchList::Ordinals(Vec::new()));
        }
        ordinals.push(ordinal);
    }
    Ok(TorchList::Ordinals(ordinals))
}

fn entry_count(value: &str) -> usize {
    value.bytes().filter(|byte| *byte == b',').count() + 1
}

/// `_parse_visible_devices` on a build (`torch.version.hip` set on HIP builds) and its environment.
pub fn parse_visible_devices(
    build: TorchBuild,
    env: &BTreeMap<String, String>,
) -> Result<TorchList, VisibleError> {
    let mut var = env
        .get("CUDA_VISIBLE_DEVICES")
        .map(|value| ("CUDA_VISIBLE_DEVICES", value));
    if build == TorchBuild::Hip {
        let hip = env.get("HIP_VISIBLE_DEVICES");
        if let Some(rocr) = env.get("ROCR_VISIBLE_DEVICES") {
            let rocr_count = entry_count(rocr);
            let Some(hip) = hip else {
                return Ok(TorchList::Range(rocr_count));
            };
            if entry_count(hip) > rocr_count {
                return Err(VisibleError::HipMaskWiderThanRocr);
            }
            var = Some(("HIP_VISIBLE_DEVICES", hip));
        } else if let Some(hip) = hip {
            var = Some(("HIP_VISIBLE_DEVICES", hip));
        }
    }
    let Some((variable, value)) = var else {
        return Ok(TorchList::Range(64));
    };
    parse_list(value).map_err(|error| VisibleError::NotAnInteger {
        variable,
        entry: error.entry,
    })
}

/// The one device whose UUID starts with `candidate`, if exactly one does (`sorted`: UUIDs with their
/// positions, sorted by UUID, so every UUID with that prefix follows the candidate's insertion point).
pub(super) fn unique_prefix(sorted: &[(&str, usize)], candidate: &str) -> Option<usize> {
    let first = sorted.partition_point(|(uuid, _)| *uuid < candidate);
    let (uuid, index) = sorted.get(first)?;
    if !uuid.starts_with(candidate) {
        return None;
    }
    match sorted.get(first + 1) {
        Some((next, _)) if next.starts_with(candidate) => None,
        _ => Some(*index),
    }
}

/// UUIDs with their positions, sorted for [`unique_prefix`].
pub(super) fn sorted_uuids(uuids: &[String]) -> Vec<(&str, usize)> {
    let mut sorted: Vec<(&str, usize)> = uuids
        .iter()
        .enumerate()
        .map(|(index, uuid)| (uuid.as_str(), index))
        .collect();
    sorted.sort_unstable();
    sorted
}

/// `_transform_uuid_to_ordinals`: physical indices up to the first id that names no single device; a
/// device named twice empties the list. On HIP the first `GPU-` anywhere in an id is removed first.
pub(super) fn transform(ids: &[String], uuids: &[String], hip: bool) -> Vec<usize> {
    let sorted = sorted_uuids(uuids);
    let mut seen = HashSet::new();
    let mut chosen = Vec::new();
    for id in ids {
        let candidate = if hip {
            id.replacen("GPU-", "", 1)
        } else {
            id.clone()
        };
        let Some(index) = unique_prefix(&sorted, &candidate) else {
            break;
        };
        if !seen.insert(index) {
            return Vec::new();
        }
        chosen.push(index);
    }
    chosen
}

/// `torch.cuda.device_count()` on a host whose NVML (CUDA) or amdsmi (HIP) reports the GPUs `uuids`.
///
/// `runtime_count` is `torch._C._cuda_getDeviceCount()`, which torch falls back to where it skips NVML:
/// a CUDA mask of `MIG-` ids. On HIP the UUIDs are compared lower-cased, as `_raw_device_uuid_amdsmi`
/// returns them.
pub fn device_count(
    build: TorchBuild,
    env: &BTreeMap<String, String>,
    uuids: &[String],
    runtime_count: usize,
) -> Result<usize, VisibleError> {
    if build == TorchBuild::Cpu {
        return Ok(0);
    }
    let raw_count = uuids.len();
    let count = match parse_visible_devices(build, env)? {
        TorchList::Range(n) => n.min(raw_count),
        TorchList::Ordinals(ordinals) => ordinals
            .iter()
            .position(|ordinal| ordinal.parse::<usize>().map_or(true, |n| n >= raw_count))
            .unwrap_or(ordinals.len()),
        TorchList::Ids(ids) if ids.is_empty() => 0,
        TorchList::Ids(ids) if build == TorchBuild::Cuda && ids[0].starts_with("MIG-") => {
            runtime_count
        }
        TorchList::Ids(ids) if build == TorchBuild::Hip => {
            let lower: Vec<String> = uuids.iter().map(|uuid| uuid.to_lowercase()).collect();
            transform(&ids, &lower, true).len()
        }
        TorchList::Ids(ids) => transform(&ids, uuids, false).len(),
    };
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visible::test_support::{amd_serials, env};
    use rstest::rstest;

    fn ordinals(value: &str) -> Vec<String> {
        match parse_list(value) {
            Ok(TorchList::Ordinals(list)) => list,
            other => panic!("expected ordinals, got {other:?}"),
        }
    }

    // PyTorch's own cases from test/test_cuda.py::TestVisibleDeviceParses::test_env_var_parsing.
    #[rstest]
    #[case::rest_of_the_string_is_ignored("1gpu2,2ampere", &["1", "2"])]
    #[case::negatives_abort_parsing("0, 1, 2, -1, 3", &["0", "1", "2"])]
    #[case::double_mention_returns_empty("0, 1, 2, 1", &[])]
    #[case::unary_pluses_and_minuses("2, +3, -0, 5", &["2", "3", "0", "5"])]
    #[case::random_string_is_empty_set("one,two,3,4", &[])]
    #[case::random_string_is_separator("4,3,two,one", &["4", "3"])]
    // Edge cases of `_strtoul` and `str.strip()` found by the differential test.
    #[case::leading_zeros_repeat("05,5", &[])]
    #[case::minus_zero_repeats_zero("0,-0", &[])]
    #[case::unbounded_integers("99999999999999999999999,1", &["99999999999999999999999", "1"])]
    #[case::unicode_decimal_digits("\u{663},\u{ff11}", &["3", "1"])]
    #[case::python_strips_file_separators("\u{1c}2\u{1f}", &["2"])]
    #[case::empty_entry_ends("1,,2", &["1"])]
    fn parses_ordinals_like_pytorch(#[case] value: &str, #[case] expected: &[&str]) {
        assert_eq!(ordinals(value), expected);
    }

    #[rstest]
    #[case::lone_plus("0,+")]
    #[case::lone_minus("-")]
    #[case::sign_then_word("+gpu")]
    #[case::superscript_digit("\u{b2}")]
    fn entries_python_int_refuses(#[case] value: &str) {
        assert!(parse_list(value).is_err(), "{value:?} must not parse");
    }

    #[rstest]
    #[case::gpu_ids_are_parsed("GPU-9e8d35e3", &["GPU-9e8d35e3"])]
    #[case::ordinals_are_not_in_gpu_id_set("GPU-123, 2", &["GPU-123"])]
    #[case::mig_ids_are_parsed("MIG-89c850dc", &["MIG-89c850dc"])]
    #[case::repeated_id_is_empty("GPU-1,GPU-1", &[])]
    fn parses_ids_like_pytorch(#[case] value: &str, #[case] expected: &[&str]) {
        let expected = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(parse_list(value), Ok(TorchList::Ids(expected)));
    }

    // PyTorch's TestVisibleDeviceParses::test_partial_uuid_resolver.
    #[rstest]
    #[case::unique_prefix(&["GPU-9e8d35e3"], &[1])]
    #[case::order_kept(&["GPU-e4", "GPU-9e8d35e3"], &[2, 1])]
    #[case::short_prefixes(&["GPU-9e8d35e3", "GPU-1", "GPU-47"], &[1, 7, 5])]
    #[case::unknown_first_is_empty(&["GPU-123", "GPU-9e8d35e3"], &[])]
    #[case::unknown_stops(&["GPU-9e8d35e3", "GPU-123", "GPU-47"], &[1])]
    #[case::ambiguous_stops(&["GPU-9e8d35e3", "GPU-e", "GPU-47"], &[1])]
    #[case::same_device_twice_is_empty(&["GPU-9e8d35e3", "GPU-47", "GPU-9e8"], &[])]
    fn resolves_partial_uuids_like_pytorch(#[case] ids: &[&str], #[case] expected: &[usize]) {
        let uuids: Vec<String> = [
            "GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1",
            "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293",
            "GPU-e429a63e-c61c-4795-b757-5132caeb8e70",
            "GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98",
            "GPU-bbcd6503-5150-4e92-c266-97cc4390d04e",
            "GPU-472ea263-58d7-410d-cc82-f7fdece5bd28",
            "GPU-e56257c4-947f-6a5b-7ec9-0f45567ccf4e",
            "GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad",
        ]
        .map(String::from)
        .to_vec();
        let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        assert_eq!(transform(&ids, &uuids, false), expected);
    }

    // PyTorch counts ROCR_VISIBLE_DEVICES' entries and never parses them.
    #[rstest]
    #[case::one_entry_past_the_end(&[("ROCR_VISIBLE_DEVICES", "5")], 2, 1)]
    #[case::repeated_entries_count_twice(&[("ROCR_VISIBLE_DEVICES", "0,0")], 2, 2)]
    #[case::a_word_counts_one(&[("ROCR_VISIBLE_DEVICES", "a")], 2, 1)]
    #[case::empty_counts_one(&[("ROCR_VISIBLE_DEVICES", "")], 2, 1)]
    #[case::trimmed_to_the_machine(&[("ROCR_VISIBLE_DEVICES", "0,1,2")], 2, 2)]
    #[case::cuda_variable_ignored(&[("ROCR_VISIBLE_DEVICES", "a"), ("CUDA_VISIBLE_DEVICES", "a,1gpu,0")], 3, 1)]
    #[case::hip_trimmed_against_the_machine(&[("ROCR_VISIBLE_DEVICES", "2,3"), ("HIP_VISIBLE_DEVICES", "3")], 4, 1)]
    #[case::no_variable_is_sixty_four_at_most(&[], 70, 64)]
    fn counts_hip_devices_like_pytorch(
        #[case] vars: &[(&str, &str)],
        #[case] gpus: usize,
        #[case] expected: usize,
    ) {
        let count =
            device_count(TorchBuild::Hip, &env(vars), &amd_serials(0, gpus), 0).expect("valid");
        assert_eq!(count, expected);
    }

    #[test]
    fn hip_wider_than_rocr_raises_as_pytorch_does() {
        let vars = env(&[
            ("ROCR_VISIBLE_DEVICES", "0"),
            ("HIP_VISIBLE_DEVICES", "0,1"),
        ]);
        assert_eq!(
            device_count(TorchBuild::Hip, &vars, &amd_serials(0, 2), 0),
            Err(VisibleError::HipMaskWiderThanRocr)
        );
    }

    #[test]
    fn a_decimal_run_ends_after_its_nine() {
        // U+0660..U+0669 are Arabic-Indic digits; U+066A (the Arabic percent sign) right after them is not.
        assert_eq!(decimal_value('\u{669}'), Some(9));
        assert_eq!(decimal_value('\u{66a}'), None);
    }

    // UUID masks: NVML's UUIDs on CUDA, amdsmi's lower-cased serials on HIP (after one `GPU-` is dropped);
    // `runtime_count` (the driver's own count) only answers for MIG ids.
    #[rstest]
    #[case::cuda_prefix_picks_one(TorchBuild::Cuda, "GPU-0000000000000001", 1)]
    #[case::cuda_repeated_id_counts_none(
        TorchBuild::Cuda,
        "GPU-0000000000000001,GPU-0000000000000001",
        0
    )]
    #[case::hip_drops_the_gpu_prefix(TorchBuild::Hip, "GPU-0000000000000001", 1)]
    #[case::hip_repeated_id_counts_none(TorchBuild::Hip, "GPU-0,GPU-0", 0)]
    fn counts_uuid_masks_like_pytorch(
        #[case] build: TorchBuild,
        #[case] mask: &str,
        #[case] expected: usize,
    ) {
        let variable = if build == TorchBuild::Hip {
            "HIP_VISIBLE_DEVICES"
        } else {
            "CUDA_VISIBLE_DEVICES"
        };
        let serials = amd_serials(0, 2);
        let uuids: Vec<String> = if build == TorchBuild::Hip {
            serials
        } else {
            serials
                .iter()
                .map(|serial| format!("GPU-{serial}"))
                .collect()
        };
        let vars = env(&[(variable, mask)]);
        assert_eq!(device_count(build, &vars, &uuids, 5), Ok(expected));
    }

    #[test]
    fn a_cuda_mig_mask_is_the_drivers_count() {
        let vars = env(&[("CUDA_VISIBLE_DEVICES", "MIG-1")]);
        let uuids = vec!["GPU-1".to_string()];
        assert_eq!(device_count(TorchBuild::Cuda, &vars, &uuids, 7), Ok(7));
    }
}
