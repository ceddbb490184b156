//! The shared gates every kernel runs through, in order: family, bits, arch, then the extension load.
//!
//! Each gate records its outcome in the trace. The arch gate judges the selected target (the current
//! device only when the target is the family itself), asks NVIDIA questions only of NVIDIA targets and AMD
//! questions only of AMD targets. The extension is loaded only after every gate passed.

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::kernel::KernelSpec;
use crate::trace::Gate;
use crate::vocab::Target;
use crate::vocab::{Arch, Family};

/// The family gate: the kernel must declare the normalized target's family.
pub fn family_gate(
    dispatch: &Dispatch,
    spec: &KernelSpec,
    families: &[Family],
    target: Target,
) -> Result<(), DispatchError> {
    let declared = families.contains(&Family::All) || families.contains(&target.family);
    let names: Vec<&str> = families.iter().map(|f| f.as_str()).collect();
    dispatch.trace.gate(
        Gate::Family,
        declared,
        format!("{} declares {} for {target}", spec.name, names.join(", ")),
    );
    if declared {
        return Ok(());
    }
    Err(DispatchError::UnsupportedFamily {
        kernel: spec.name.to_string(),
        target,
        declared: names.join(", "),
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
    let widths: Vec<String> = spec.bits.iter().map(|b| format!("{b}-bit")).collect();
    dispatch.trace.gate(
        Gate::Bits,
        supported,
        format!("{} supports {}", spec.name, widths.join(", ")),
    );
    if supported {
        return Ok(());
    }
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
            let arch = format!("sm_{}{}", cc.major, cc.minor);
            if let Some(rule) = &spec.nvidia {
                if !rule.admits(cc) {
                    return refuse(arch, rule.to_string());
                }
            }
            if let Some(min) = spec.smem_optin_min {
                let bytes = rt.smem_optin(ordinal)?;
                if bytes < min {
                    return refuse(
                        format!("{arch}, {bytes} bytes opt-in shared memory"),
                        format!("opt-in shared memory >= {min} bytes"),
                    );
                }
            }
            arch
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
            name
        }
    };
    dispatch.trace.gate(
        Gate::Arch,
        true,
        format!("{} on {target} ({arch})", spec.name),
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
