//! What a kernel declaration may carry beyond its families: the project's own tolerances and arch rules,
//! each checked at the handshake so that a bad declaration is refused naming the kernel.

use std::collections::BTreeSet;

use crate::subject::protocol::{ArchDeclaration, KernelDeclaration};

/// The dtypes a declared tolerance may name.
const TOLERANCE_DTYPES: [&str; 3] = ["float16", "bfloat16", "float32"];

/// A kernel's declared tolerances: each for a known dtype, once, finite and non-negative, against a declared
/// kernel or `fp64_oracle`, and saying where the project states it.
pub(super) fn tolerances(
    declaration: &KernelDeclaration,
    kernels: &[String],
) -> Result<(), String> {
    let kernel = &declaration.name;
    let mut seen = BTreeSet::new();
    for tolerance in &declaration.tolerances {
        let dtype = &tolerance.dtype;
        if !TOLERANCE_DTYPES.contains(&dtype.as_str()) {
            return Err(format!(
                "kernel `{kernel}` declares a tolerance for dtype `{dtype}` (expected {})",
                TOLERANCE_DTYPES.join(", ")
            ));
        }
        if !seen.insert(dtype.as_str()) {
            return Err(format!(
                "kernel `{kernel}` declares its {dtype} tolerance twice"
            ));
        }
        if tolerance.source.trim().is_empty() {
            return Err(format!(
                "kernel `{kernel}` declares a {dtype} tolerance without a `source` (where the project states it: its file and test)"
            ));
        }
        for (name, value) in [("rtol", tolerance.rtol), ("atol", tolerance.atol)] {
            if !value.is_finite() || value < 0.0 {
                return Err(format!(
                    "kernel `{kernel}` declares a {dtype} `{name}` of {value} (expected a finite number >= 0)"
                ));
            }
        }
        let reference = &tolerance.reference;
        if reference != "fp64_oracle" && !kernels.contains(reference) {
            return Err(format!(
                "kernel `{kernel}` declares its {dtype} tolerance against `{reference}`, which is neither a declared kernel nor `fp64_oracle`"
            ));
        }
    }
    Ok(())
}

/// The compute capabilities an arch rule may name: sm_10 (1.0) up to sm_999, as major·10 + minor.
const CAPABILITIES: std::ops::RangeInclusive<u32> = 10..=999;

/// A kernel's declared arch rules: at least one rule, capabilities devsim can read (`80` is sm_80) with the
/// least no greater than the greatest, gfx base targets or family prefixes (`gfx942`, `gfx12`, no target
/// features) each once, a positive shared-memory need, and a `source` that says something where given.
pub(super) fn arch_rules(kernel: &str, rules: &ArchDeclaration) -> Result<(), String> {
    if rules.min_capability.is_none()
        && rules.max_capability.is_none()
        && rules.gfx.is_empty()
        && rules.min_smem_optin.is_none()
    {
        return Err(format!(
            "kernel `{kernel}` declares `arch` without a rule (expected `min_capability`, `max_capability`, `gfx` or `min_smem_optin`)"
        ));
    }
    for (name, value) in [
        ("min_capability", rules.min_capability),
        ("max_capability", rules.max_capability),
    ] {
        if let Some(value) = value.filter(|v| !CAPABILITIES.contains(v)) {
            return Err(format!(
                "kernel `{kernel}` declares an arch `{name}` of {value} (expected major·10 + minor, 10 to 999: 80 is sm_80)"
            ));
        }
    }
    if let (Some(least), Some(most)) = (rules.min_capability, rules.max_capability) {
        if least > most {
            return Err(format!(
                "kernel `{kernel}` declares an arch `min_capability` of {least} above its `max_capability` of {most}"
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for target in &rules.gfx {
        let well_formed = target.strip_prefix("gfx").is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        });
        if !well_formed {
            return Err(format!(
                "kernel `{kernel}` declares arch gfx `{target}` (expected a base target or family prefix such as `gfx942` or `gfx12`, without target features)"
            ));
        }
        if !seen.insert(target.as_str()) {
            return Err(format!(
                "kernel `{kernel}` declares arch gfx `{target}` twice"
            ));
        }
    }
    if rules.min_smem_optin == Some(0) {
        return Err(format!(
            "kernel `{kernel}` declares an arch `min_smem_optin` of 0 (expected bytes > 0, or no rule)"
        ));
    }
    if rules.source.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err(format!(
            "kernel `{kernel}` declares arch rules with an empty `source` (where the project declares them, or no `source`)"
        ));
    }
    Ok(())
}
