//! The shared gates every kernel runs through, in order: family, bits, arch, then the extension load.
//!
//! Each gate records its outcome in the trace. The arch gate judges the selected target (the current
//! device only when the target is the family itself), asks NVIDIA questions only of NVIDIA targets and AMD
//! questions only of AMD targets. The extension is loaded only after every gate passed.

use std::borrow::Cow;
use std::fmt;

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::kernel::KernelSpec;
use crate::trace::{Gate, Text};
use crate::vocab::Target;
use crate::vocab::{Arch, ComputeCapability, Family};

/// Writes `items` separated by `separator`.
fn joined<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    items: &[T],
    separator: &str,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(separator)?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

/// The family gate's detail: `marlin declares cuda for rocm:1`.
#[derive(PartialEq)]
struct Declares {
    kernel: Cow<'static, str>,
    families: Cow<'static, [Family]>,
    target: Target,
}

impl fmt::Display for Declares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} declares ", self.kernel)?;
        joined(f, &self.families, ", ")?;
        write!(f, " for {}", self.target)
    }
}

/// The bits gate's detail: `marlin supports 4-bit, 8-bit`.
#[derive(PartialEq)]
struct Supports {
    kernel: Cow<'static, str>,
    bits: Cow<'static, [u32]>,
}

impl fmt::Display for Supports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} supports ", self.kernel)?;
        for (i, bits) in self.bits.iter().enumerate() {
            let separator = if i > 0 { ", " } else { "" };
            write!(f, "{separator}{bits}-bit")?;
        }
        Ok(())
    }
}

/// The arch a passing GPU reported: an NVIDIA capability (`sm_90`) or an AMD `gcnArchName`.
#[derive(PartialEq)]
enum Seen {
    Sm(ComputeCapability),
    Named(String),
}

/// The arch gate's detail when it passed: `marlin on cuda:1 (sm_90)`.
#[derive(PartialEq)]
struct Passed {
    kernel: Cow<'static, str>,
    target: Target,
    arch: Seen,
}

impl fmt::Display for Passed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {} (", self.kernel, self.target)?;
        match &self.arch {
            Seen::Sm(cc) => write!(f, "sm_{}{}", cc.major, cc.minor)?,
            Seen::Named(name) => f.write_str(name)?,
        }
        f.write_str(")")
    }
}

/// Names separated by `, `, built in one string (a refusal is as common as a pass in a sweep).
fn joined_names<'a>(names: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut joined = String::with_capacity(names.clone().map(|name| name.len() + 2).sum());
    for (i, name) in names.enumerate() {
        if i > 0 {
            joined.push_str(", ");
        }
        joined.push_str(name);
    }
    joined
}

/// The families a gate judged, without copying the spec's own list (the usual case).
fn families_of(spec: &KernelSpec, families: &[Family]) -> Cow<'static, [Family]> {
    if std::ptr::eq(families, spec.families.as_ref()) {
        spec.families.clone()
    } else {
        Cow::Owned(families.to_vec())
    }
}

/// The family gate: the kernel must declare the normalized target's family.
pub fn family_gate(
    dispatch: &Dispatch,
    spec: &KernelSpec,
    families: &[Family],
    target: Target,
) -> Result<(), DispatchError> {
    let declared = families.contains(&Family::All) || families.contains(&target.family);
    dispatch.trace.gate(
        Gate::Family,
        declared,
        Text::typed(Declares {
            kernel: spec.name.clone(),
            families: families_of(spec, families),
            target,
        }),
    );
    if declared {
        return Ok(());
    }
    Err(DispatchError::UnsupportedFamily {
        kernel: spec.name.to_string(),
        target,
        declared: joined_names(families.iter().map(|f| f.as_str())),
        alternative: spec.alternative.as_ref().map(ToString::to_string),
    })
}

/// The bits gate: the kernel must support the requested width (skipped when no width is asked).
pub fn bits_gate(
    dispatch: &Dispatch,
    spec: &KernelSpec,
    bits: Option<u32>,
) -> Result<(), DispatchError> {
    let Some(bits) = bits else { return Ok(()) };
    let supported = spec.bits.contains(&bits);
    dispatch.trace.gate(
        Gate::Bits,
        supported,
        Text::typed(Supports {
            kernel: spec.name.clone(),
            bits: spec.bits.clone(),
        }),
    );
    if supported {
        return Ok(());
    }
    let widths: Vec<String> = spec.bits.iter().map(|b| format!("{b}-bit")).collect();
    Err(DispatchError::UnsupportedBits {
        kernel: spec.name.to_string(),
        bits,
        supported: widths.join(", "),
    })
}

/// The arch gate: judges the target's own GPU against the kernel's rule for that family.
pub fn arch_gate(
    dispatch: &Dispatch,
    spec: &KernelSpec,
    target: Target,
) -> Result<(), DispatchError> {
    let rt = dispatch.runtime;
    let nvidia_rule = spec.nvidia.is_some() || spec.smem_optin_min.is_some();
    let checks_family = match target.family {
        Family::Cuda => nvidia_rule,
        Family::Rocm => spec.amd_targets.is_some(),
        _ => false,
    };
    if !checks_family {
        return Ok(());
    }
    let ordinal = match target.ordinal {
        Some(ordinal) => ordinal,
        None => rt.get_device()?,
    };
    let refuse = |arch: String, rule: String| {
        dispatch.trace.gate(
            Gate::Arch,
            false,
            format!("{} on {target} ({arch}) needs {rule}", spec.name),
        );
        Err(DispatchError::UnsupportedArch {
            kernel: spec.name.to_string(),
            target,
            arch,
            rule,
            alternative: spec.alternative.as_ref().map(ToString::to_string),
        })
    };
    let arch = match target.family {
        Family::Cuda => {
            let cc = rt.nvidia_capability(ordinal)?;
            let arch = || format!("sm_{}{}", cc.major, cc.minor);
            if let Some(rule) = &spec.nvidia {
                if !rule.admits(cc) {
                    return refuse(arch(), rule.to_string());
                }
            }
            if let Some(min) = spec.smem_optin_min {
                let bytes = rt.smem_optin(ordinal)?;
                if bytes < min {
                    return refuse(
                        format!("{}, {bytes} bytes opt-in shared memory", arch()),
                        format!("opt-in shared memory >= {min} bytes"),
                    );
                }
            }
            Seen::Sm(cc)
        }
        _ => {
            let name = rt.amd_arch(ordinal)?;
            let targets = spec.amd_targets.as_deref().unwrap_or_default();
            let base = name
                .parse::<Arch>()
                .ok()
                .and_then(|arch| arch.gfx().map(|gfx| gfx.base.clone()))
                .unwrap_or_else(|| name.split(':').next().unwrap_or_default().to_string());
            if !targets.iter().any(|t| *t == base) {
                return refuse(name, targets.join(" or "));
            }
            Seen::Named(name)
        }
    };
    dispatch.trace.gate(
        Gate::Arch,
        true,
        Text::typed(Passed {
            kernel: spec.name.clone(),
            target,
            arch,
        }),
    );
    Ok(())
}

/// Loads the kernel's native extension, if it has one. Call only after every gate passed.
pub fn load_extension(dispatch: &Dispatch, spec: &KernelSpec) -> Result<(), DispatchError> {
    if let Some(extension) = &spec.extension {
        dispatch.runtime.load_extension(extension)?;
    }
    Ok(())
}

/// Every gate, in order, for an already-normalized target; then the extension load.
pub fn run_gates(
    dispatch: &Dispatch,
    spec: &KernelSpec,
    families: &[Family],
    target: Target,
    bits: Option<u32>,
) -> Result<(), DispatchError> {
    family_gate(dispatch, spec, families, target)?;
    bits_gate(dispatch, spec, bits)?;
    arch_gate(dispatch, spec, target)?;
    load_extension(dispatch, spec)?;
    Ok(())
}
