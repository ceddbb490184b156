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
    let written;
    let text = match selector {
        // Only a string starting like a wrapper can be written as an enum or a torch device: any other is
        // judged as written, without building its written form.
        Selector::Text(text) if !maybe_wrapped(text) => text.as_str(),
        _ => {
            written = written_form(selector);
            match &written {
                WrittenForm::Ordinal(n) => return *n >= 0,
                WrittenForm::FamilyEnum(_) | WrittenForm::TorchDevice(_) => return true,
                WrittenForm::Text(text) => text.as_str(),
            }
        }
    };
    let (kind, index) = match text.split_once(':') {
        Some((kind, index)) => (kind, Some(index)),
        None => (text, None),
    };
    let index_ok = index.is_none_or(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
    let torch_type = ["cuda", "cpu", "xpu", "mps"];
    if action == "lock" {
        return index_ok && torch_type.contains(&kind);
    }
    let named = |word: &str| kind.eq_ignore_ascii_case(word);
    index_ok && (torch_type.into_iter().any(named) || (named("rocm") && index.is_none()))
}

/// Whether a string may be written as a family enum (`DEVICE.ROCM`) or a torch device
/// (`torch.device('cuda:1')`, `device(type='cuda')`): it starts, in any case, as those do.
fn maybe_wrapped(text: &str) -> bool {
    let starts = |prefix: &str| {
        text.trim()
            .as_bytes()
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
    };
    starts("torch.device(") || starts("device")
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

    /// The judgement built from the written form alone, as it was before the fast path.
    fn from_written_form(selector: &Selector, action: &str) -> bool {
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

    #[test]
    fn strings_judged_without_their_written_form_are_judged_the_same() {
        let texts = [
            "cuda",
            "CUDA:1",
            " cuda ",
            "Rocm",
            "rocm:0",
            "XPU",
            "mps:x",
            "hip",
            "device",
            "Device.ROCM",
            " DEVICE.cuda",
            "device.gpu",
            "device(type='cuda', index=1)",
            "DEVICE(type='cpu')",
            "torch.device('cuda:1')",
            "TORCH.DEVICE(\"cuda\", 0)",
            "torch.device(cuda:1",
            "torch.dev",
            "devicex",
            "",
            ":",
            "cpu:",
            "é",
            "devicé",
        ];
        for text in texts {
            for action in ["validate", "lock", "normalize"] {
                let selector = Selector::from(text);
                assert_eq!(
                    policy_spelling(&selector, action),
                    from_written_form(&selector, action),
                    "{text:?} in {action}"
                );
            }
        }
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
