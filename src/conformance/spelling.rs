//! Which selector spellings the policy speaks about.
//!
//! The seed's normalization covers torch's own spellings (`cuda`, `cuda:N`, `cpu`, integers,
//! `torch.device`), the family enums, and the family's own name (`rocm`, `ROCM`). devsim's reference model
//! also reads `hip:N`, `rocm:N`, `torch.device('cuda:1')` written as a string and other extensions: what
//! another implementation does with those is its own decision, so expectations on them are reference
//! details. Pool locks take only torch's spellings and the enums (the seed fixed locks on `DEVICE` enums).

use crate::dispatch::selector::{Selector, WrittenForm, written_form};

/// Whether the policy's normalization rules speak about `selector` in an `action` step.
pub fn policy_spelling(selector: &Selector, action: &str) -> bool {
    // The form the subject rebuilds: `DEVICE.ROCM` is sent as an enum, `torch.device('cuda:1')` as a torch
    // device, so only plain strings are judged by their spelling.
    let text = match written_form(selector) {
        WrittenForm::Ordinal(n) => return n >= 0,
        WrittenForm::FamilyEnum(_) | WrittenForm::TorchDevice(_) => return true,
        WrittenForm::Text(text) => text,
    };
    let (kind, index) = match text.split_once(':') {
        Some((kind, index)) => (kind, Some(index)),
        None => (text.as_str(), None),
    };
    let index_ok = index.is_none_or(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
    let torch_type = ["cuda", "cpu", "xpu", "mps"];
    if action == "lock" {
        return index_ok && torch_type.contains(&kind);
    }
    let kind = kind.to_ascii_lowercase();
    index_ok && (torch_type.contains(&kind.as_str()) || (kind == "rocm" && index.is_none()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_spellings_enums_and_family_names_are_the_policys() {
        for text in [
            "cuda", "cuda:1", "CUDA", "cpu", "cpu:0", "rocm", "ROCM", "xpu:0",
        ] {
            assert!(policy_spelling(&text.into(), "validate"), "{text}");
        }
        assert!(policy_spelling(&1.into(), "resolve"));
        assert!(
            policy_spelling(&"DEVICE.ROCM".into(), "lock"),
            "sent as the enum"
        );
        assert!(
            policy_spelling(&"torch.device('cuda:1')".into(), "validate"),
            "sent as a torch device"
        );
        for text in [
            "hip", "hip:1", "ROCM:0", "rocm:1", "cuda:x", "cuda:+1", "cuda:", "gpu",
        ] {
            assert!(!policy_spelling(&text.into(), "validate"), "{text}");
        }
        assert!(!policy_spelling(&(-1).into(), "normalize"));
    }

    #[test]
    fn locks_take_torch_spellings_only() {
        assert!(policy_spelling(&"cuda".into(), "lock"));
        assert!(policy_spelling(&"cuda:1".into(), "lock"));
        for text in ["rocm", "CUDA", "hip:0"] {
            assert!(!policy_spelling(&text.into(), "lock"), "{text}");
        }
    }
}
