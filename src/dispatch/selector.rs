//! Device selectors, their normalization to a [`Target`], and the one boundary function that turns a
//! target into a torch device.
//!
//! Every spelling a user may write goes through [`normalize`]: on a HIP build each CUDA spelling (strings,
//! integers, `Family::Cuda`, torch-style `cuda` devices) becomes ROCM, and ROCM is never turned back into
//! CUDA. [`to_torch_device`] is the only place a target becomes a torch device; call it at execution
//! boundaries alone.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::dispatch::DispatchError;
use crate::vocab::TorchBuild;
use crate::vocab::{Family, Target, TorchDevice, TorchType};

/// What a user writes to ask for a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Selector {
    /// A bare ordinal: the `n`-th visible GPU of the running build.
    Ordinal(i64),
    /// A string: `"cuda"`, `"cuda:1"`, `"ROCM"`, `"hip:0"`, `"cpu"`, `"torch.device('cuda:1')"` ...
    Text(String),
    /// A family enum value (GPTQModel's `DEVICE.CUDA`).
    #[serde(skip)]
    Family(Family),
    /// A torch device object.
    #[serde(skip)]
    Torch(TorchDevice),
}

impl From<&str> for Selector {
    fn from(text: &str) -> Self {
        Selector::Text(text.to_string())
    }
}

impl From<i64> for Selector {
    fn from(ordinal: i64) -> Self {
        Selector::Ordinal(ordinal)
    }
}

impl From<Family> for Selector {
    fn from(family: Family) -> Self {
        Selector::Family(family)
    }
}

impl From<TorchDevice> for Selector {
    fn from(device: TorchDevice) -> Self {
        Selector::Torch(device)
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Ordinal(n) => write!(f, "{n}"),
            Selector::Text(text) => write!(f, "\"{text}\""),
            Selector::Family(family) => write!(f, "Family::{family:?}"),
            Selector::Torch(device) => write!(f, "torch.device(\"{device}\")"),
        }
    }
}

/// What a lock covers: one target, or every device of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every device the pool knows.
    All,
    /// One device, or every device of one family.
    Target(Target),
}

/// A selector as spelled, before the running build gives it meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelled {
    Cpu,
    Cuda,
    Rocm,
    Xpu,
    Mps,
    All,
    /// A bare integer: the running build's GPU family.
    Gpu,
}

/// Reads a selector's spelling: which family word, which ordinal. Knows nothing about the build.
fn spell(selector: &Selector) -> Result<(Spelled, Option<u32>), DispatchError> {
    match selector {
        Selector::Ordinal(n) => {
            let ordinal = u32::try_from(*n).map_err(|_| DispatchError::UnknownSelector {
                input: n.to_string(),
            })?;
            Ok((Spelled::Gpu, Some(ordinal)))
        }
        Selector::Family(family) => Ok((spelled_family(*family), None)),
        Selector::Torch(device) => {
            let spelled = match device.kind {
                TorchType::Cpu => Spelled::Cpu,
                TorchType::Cuda => Spelled::Cuda,
                TorchType::Xpu => Spelled::Xpu,
                TorchType::Mps => Spelled::Mps,
            };
            Ok((spelled, device.index))
        }
        Selector::Text(text) => spell_text(text),
    }
}

fn spelled_family(family: Family) -> Spelled {
    match family {
        Family::Cpu => Spelled::Cpu,
        Family::Cuda => Spelled::Cuda,
        Family::Rocm => Spelled::Rocm,
        Family::Xpu => Spelled::Xpu,
        Family::Mps => Spelled::Mps,
        Family::All => Spelled::All,
    }
}

/// Parses the string forms: `cuda`, `cuda:1`, `ROCM`, `hip:0`, `DEVICE.ROCM`, `"3"`,
/// `torch.device('cuda:1')`, `torch.device("cuda", 1)` and `device(type='cuda', index=1)`.
fn spell_text(text: &str) -> Result<(Spelled, Option<u32>), DispatchError> {
    spell_plain(text).map_or_else(|| spell_any(text), Ok)
}

/// [`spell_text`]'s general path: any spelling, wrappers and capitals included.
fn spell_any(text: &str) -> Result<(Spelled, Option<u32>), DispatchError> {
    let unknown = || DispatchError::UnknownSelector {
        input: text.to_string(),
    };
    // Borrowed unless the text has capitals or a torch wrapper: the common spellings allocate nothing.
    let trimmed = text.trim();
    let lower: Cow<str> = if trimmed.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(trimmed.to_ascii_lowercase())
    } else {
        Cow::Borrowed(trimmed)
    };
    let unwrapped = unwrap_torch_device(&lower).ok_or_else(unknown)?;
    let inner = unwrapped.strip_prefix("device.").unwrap_or(&unwrapped);
    if let Ok(n) = inner.parse::<u32>() {
        return Ok((Spelled::Gpu, Some(n)));
    }
    let (name, ordinal) = match inner.split_once(':') {
        Some((name, digits)) => {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(unknown());
            }
            (name, Some(digits.parse::<u32>().map_err(|_| unknown())?))
        }
        None => (inner, None),
    };
    let spelled = match name {
        "cpu" => Spelled::Cpu,
        "cuda" => Spelled::Cuda,
        "rocm" | "hip" => Spelled::Rocm,
        "xpu" => Spelled::Xpu,
        "mps" => Spelled::Mps,
        "all" if ordinal.is_none() => Spelled::All,
        _ => return Err(unknown()),
    };
    let ordinal = if spelled == Spelled::Cpu {
        None
    } else {
        ordinal
    };
    Ok((spelled, ordinal))
}

/// The usual spellings, read in one pass: a lowercase family word alone or with `:` and one to nine digits
/// (`cuda`, `cuda:1`, `hip:0`, `cpu`). `None` for any other text, which [`spell_any`] reads; where this
/// reads a spelling at all, it reads it as that does.
fn spell_plain(text: &str) -> Option<(Spelled, Option<u32>)> {
    let (name, digits) = match text.as_bytes().iter().position(|&b| b == b':') {
        Some(colon) => (&text[..colon], Some(&text.as_bytes()[colon + 1..])),
        None => (text, None),
    };
    let ordinal = match digits {
        None => None,
        Some(digits) if (1..=9).contains(&digits.len()) => {
            let mut n = 0u32;
            for &b in digits {
                if !b.is_ascii_digit() {
                    return None;
                }
                n = n * 10 + u32::from(b - b'0');
            }
            Some(n)
        }
        Some(_) => return None,
    };
    let spelled = match name {
        "cpu" => return Some((Spelled::Cpu, None)),
        "cuda" => Spelled::Cuda,
        "rocm" | "hip" => Spelled::Rocm,
        "xpu" => Spelled::Xpu,
        "mps" => Spelled::Mps,
        "all" if ordinal.is_none() => Spelled::All,
        _ => return None,
    };
    Some((spelled, ordinal))
}

/// Strips the torch-style wrappers and returns `name[:index]`; `None` when a wrapper is malformed.
fn unwrap_torch_device(lower: &str) -> Option<Cow<'_, str>> {
    let args = if let Some(rest) = lower.strip_prefix("torch.device(") {
        rest.strip_suffix(')')?
    } else if let Some(rest) = lower.strip_prefix("device(") {
        rest.strip_suffix(')')?
    } else {
        return Some(Cow::Borrowed(lower));
    };
    let mut name = None;
    let mut index = None;
    for (position, arg) in args.split(',').map(str::trim).enumerate() {
        let (key, value) = match arg.split_once('=') {
            Some((key, value)) => (Some(key.trim()), value.trim()),
            None => (None, arg),
        };
        let value = value.trim_matches(|c| c == '\'' || c == '"');
        match (key, position) {
            (Some("type"), _) | (None, 0) => name = Some(value.to_string()),
            (Some("index"), _) | (None, 1) => index = Some(value.to_string()),
            _ => return None,
        }
    }
    let name = name?;
    Some(Cow::Owned(match index {
        Some(index) if index != "none" => format!("{name}:{index}"),
        _ => name,
    }))
}

/// Normalizes a selector for the running build.
///
/// `visible_count` is asked only for GPU families, so CPU requests make no runtime call. Errors:
/// `unknown-selector` for spellings devsim does not know, `family-not-present` for a family the build has
/// none of, `no-such-device` for an ordinal past the visible count.
pub fn normalize(
    selector: &Selector,
    build: TorchBuild,
    visible_count: impl FnOnce() -> Result<u32, DispatchError>,
) -> Result<Target, DispatchError> {
    match normalize_scope(selector, build, visible_count)? {
        Scope::Target(target) => Ok(target),
        Scope::All => Err(DispatchError::UnknownSelector {
            input: format!("{selector} (a lock scope, not a device)"),
        }),
    }
}

/// Like [`normalize`], but also accepts `all`, which only lock scopes may name.
pub fn normalize_scope(
    selector: &Selector,
    build: TorchBuild,
    visible_count: impl FnOnce() -> Result<u32, DispatchError>,
) -> Result<Scope, DispatchError> {
    let (spelled, ordinal) = spell(selector)?;
    let gpu_family = build.gpu_family();
    let family = match spelled {
        Spelled::All => return Ok(Scope::All),
        Spelled::Cpu => return Ok(Scope::Target(Target::family(Family::Cpu))),
        Spelled::Xpu => Family::Xpu,
        Spelled::Mps => Family::Mps,
        Spelled::Rocm => Family::Rocm,
        Spelled::Cuda | Spelled::Gpu => match gpu_family {
            Some(family) => family,
            None => Family::Cuda,
        },
    };
    // torch's `cuda` namespace answers on CUDA and HIP builds alike; only a HIP build has AMD GPUs.
    let present = match family {
        Family::Cuda => matches!(build, TorchBuild::Cuda | TorchBuild::Hip),
        Family::Rocm => build == TorchBuild::Hip,
        _ => false,
    };
    if !present {
        return Err(DispatchError::FamilyNotPresent { family, build });
    }
    let count = visible_count()?;
    if count == 0 {
        return Err(DispatchError::FamilyNotPresent { family, build });
    }
    if let Some(ordinal) = ordinal {
        if ordinal >= count {
            return Err(DispatchError::NoSuchDevice {
                target: Target::device(family, ordinal),
                visible: count,
            });
        }
    }
    Ok(Scope::Target(Target { family, ordinal }))
}

/// The one boundary function: the torch device a target is handed to torch as.
///
/// A family target stays indexless (torch then uses the current device); an explicit ordinal is kept as
/// written. ROCM becomes torch type `cuda` here and only here.
pub fn to_torch_device(target: &Target) -> TorchDevice {
    let kind = match target.family {
        Family::Cpu | Family::All => return TorchDevice::CPU,
        Family::Cuda | Family::Rocm => TorchType::Cuda,
        Family::Xpu => TorchType::Xpu,
        Family::Mps => TorchType::Mps,
    };
    TorchDevice {
        kind,
        index: target.ordinal,
    }
}

/// Checks a selector's spelling without knowing the build: `unknown-selector` for words devsim does not
/// know. Used by the scenario loader to refuse typos at load time.
pub fn check_spelling(selector: &Selector) -> Result<(), DispatchError> {
    spell(selector).map(|_| ())
}

/// How a selector was written, in the forms a subject outside devsim rebuilds in its own language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WrittenForm {
    /// A plain string, passed on as written (even when devsim does not know the spelling).
    Text(String),
    /// An integer ordinal.
    Ordinal(i64),
    /// A family enum value (`DEVICE.ROCM`).
    FamilyEnum(Family),
    /// A torch device object: `torch.device(type, index)`.
    TorchDevice(TorchDevice),
}

/// The form a selector was written in: `DEVICE.ROCM` is a family enum, `torch.device('cuda:1')`,
/// `torch.device("cuda", 1)` and `device(type='cuda', index=1)` are torch devices, every other string
/// (malformed wrappers included) is a plain string.
pub(crate) fn written_form(selector: &Selector) -> WrittenForm {
    match selector {
        Selector::Ordinal(n) => WrittenForm::Ordinal(*n),
        Selector::Family(family) => WrittenForm::FamilyEnum(*family),
        Selector::Torch(device) => WrittenForm::TorchDevice(*device),
        Selector::Text(text) => {
            let lower = text.trim().to_ascii_lowercase();
            if lower.starts_with("torch.device(") || lower.starts_with("device(") {
                let device = unwrap_torch_device(&lower).and_then(|inner| inner.parse().ok());
                if let Some(device) = device {
                    return WrittenForm::TorchDevice(device);
                }
            } else if let Some(name) = lower.strip_prefix("device.") {
                if let Some(family) = Family::EVERY.into_iter().find(|f| f.as_str() == name) {
                    return WrittenForm::FamilyEnum(family);
                }
            }
            WrittenForm::Text(text.clone())
        }
    }
}

#[cfg(test)]
mod spell_tests {
    use super::*;

    #[test]
    fn the_plain_reading_agrees_with_the_general_one() {
        let mut read = 0;
        for name in [
            "cpu", "cuda", "rocm", "hip", "xpu", "mps", "all", "gpu", "CUDA", " cuda", "cuda ",
            "3", "",
        ] {
            for suffix in [
                "",
                ":",
                ":0",
                ":1",
                ":0001",
                ":123456789",
                ":1234567890",
                ":99999999999",
                ":x",
                ":1:2",
                ":-1",
                ": 1",
            ] {
                let text = format!("{name}{suffix}");
                if let Some(plain) = spell_plain(&text) {
                    read += 1;
                    assert_eq!(spell_any(&text).ok(), Some(plain), "{text:?}");
                }
            }
        }
        assert!(read > 30, "the usual spellings take the plain reading");
    }
}

#[cfg(test)]
mod written_form_tests {
    use super::*;

    #[test]
    fn each_text_spelling_keeps_the_form_it_was_written_in() {
        let cases = [
            ("cuda:1", WrittenForm::Text("cuda:1".into())),
            ("gpu", WrittenForm::Text("gpu".into())),
            ("DEVICE.ROCM", WrittenForm::FamilyEnum(Family::Rocm)),
            ("DEVICE.GPU", WrittenForm::Text("DEVICE.GPU".into())),
            (
                "torch.device('cuda:1')",
                WrittenForm::TorchDevice(TorchDevice::cuda(1)),
            ),
            (
                "torch.device(\"cuda\", 0)",
                WrittenForm::TorchDevice(TorchDevice::cuda(0)),
            ),
            (
                "device(type='cuda', index=1)",
                WrittenForm::TorchDevice(TorchDevice::cuda(1)),
            ),
            (
                "torch.device('cuda')",
                WrittenForm::TorchDevice(TorchDevice {
                    kind: TorchType::Cuda,
                    index: None,
                }),
            ),
            (
                "torch.device(cuda:1",
                WrittenForm::Text("torch.device(cuda:1".into()),
            ),
            (
                "torch.device('rocm')",
                WrittenForm::Text("torch.device('rocm')".into()),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(written_form(&Selector::from(text)), expected, "{text}");
        }
        assert_eq!(written_form(&Selector::Ordinal(1)), WrittenForm::Ordinal(1));
    }
}
