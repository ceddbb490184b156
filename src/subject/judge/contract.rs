//! The checks a subject's own declarations imply, whatever the scenario says: its declared families
//! (`declared-families`), its declared arch rules on each target's own GPU (`per-target-arch`), and a live
//! forward's numerics against the tolerance it is judged by (the kernel's contract).

use std::collections::BTreeMap;

use super::{Judge, remember, undecided_reason};
use crate::conformance::{Conformance, Level, policy_spelling};
use crate::dispatch::DispatchError;
use crate::dispatch::selector::{Selector, normalize};
use crate::host::Gpu;
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::runner::expect::Mismatch;
use crate::scenario::model::{Action, Step};
use crate::subject::protocol::{ArchDeclaration, KernelDeclaration};
use crate::vocab::Family;

impl<'a> Judge<'a> {
    /// The checks the subject's own declarations imply for a kernel step (rule `declared-families`): a
    /// kernel refuses a family it does not declare, never refuses one it declares as `unsupported-family`,
    /// and selection never picks a kernel that does not declare the target's family. Where the project
    /// decided nothing (`undecided`: no gate on this path, a pick by backend alone) nothing is implied.
    pub(super) fn declared(
        &mut self,
        step: &Step,
        observed: &Observed,
        undecided: &BTreeMap<String, String>,
    ) -> Vec<Mismatch> {
        if !self.claims(Level::Contract) || self.capabilities.declared.is_empty() {
            return Vec::new();
        }
        let decided_field = if matches!(step.action, Action::Select { .. }) {
            "selected"
        } else {
            "ok"
        };
        if let Some(why) = undecided.get(decided_field) {
            remember(
                &mut self.not_applicable,
                format!("the project decides no {decided_field} on this step: {why}"),
                "declared-families.",
                decided_field,
            );
            return Vec::new();
        }
        let (kernel, device) = match &step.action {
            Action::Validate { kernel, device }
            | Action::Warmup { kernel, device }
            | Action::Move { kernel, device } => (Some(kernel.as_str()), device),
            Action::Select { device, .. } => (None, device),
            _ => return Vec::new(),
        };
        // What another spelling means is the subject's own decision, not the policy's.
        if !policy_spelling(device, step.action.name()) {
            return Vec::new();
        }
        let Some(family) = self.true_family(device) else {
            return Vec::new();
        };
        let rule = || Some(Conformance::policy("declared-families"));
        let mut out = Vec::new();
        match kernel {
            Some(kernel) => {
                let Some(declaration) = self.declaration(kernel) else {
                    return out;
                };
                self.policy_observed += 1;
                let declares = declares(declaration, family);
                match &observed.error {
                    None if !declares => out.push(Mismatch {
                        key: "ok".into(),
                        expected: format!(
                            "false (the subject's {kernel} declares {}; the target is {family})",
                            families(declaration)
                        ),
                        actual: "true".into(),
                        conformance: rule(),
                    }),
                    Some(ErrorOutput { kind, message })
                        if declares && kind == "unsupported-family" =>
                    {
                        out.push(Mismatch {
                            key: "error".into(),
                            expected: format!(
                                "no unsupported-family refusal (the subject's {kernel} declares {family})"
                            ),
                            actual: format!("{kind}: {message}"),
                            conformance: rule(),
                        });
                    }
                    _ => {}
                }
            }
            None => {
                if let Some(selected) = &observed.selected {
                    if let Some(declaration) = self.declaration(selected) {
                        self.policy_observed += 1;
                        if !declares(declaration, family) {
                            out.push(Mismatch {
                                key: "selected".into(),
                                expected: format!("a kernel the subject declares for {family}"),
                                actual: format!("{selected} (declares {})", families(declaration)),
                                conformance: rule(),
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// The checks the subject's own arch rules imply (rule `per-target-arch`, policy level, binding every
    /// subject that declares them), each on the target's own GPU: the selector's ordinal, or the current
    /// device for a family target. A kernel selected for a target, or validated for it, must admit that GPU
    /// by the rules the subject declares for it; a kernel whose declared rules admit that GPU must not refuse
    /// it as `unsupported-arch` (declared rules are the kernel's arch rules, as declared families are its
    /// families). A kernel without declared rules, a GPU no rule speaks about, and a spelling the policy does
    /// not give a meaning are not judged this way.
    pub(super) fn per_target_arch(
        &mut self,
        step: &Step,
        observed: &Observed,
        undecided: &BTreeMap<String, String>,
    ) -> Option<Mismatch> {
        let (kernel, device, key) = match (&step.action, &observed.error) {
            (Action::Validate { kernel, device }, None) => (kernel.as_str(), device, "ok"),
            (Action::Validate { kernel, device }, Some(error))
                if error.kind == "unsupported-arch" =>
            {
                (kernel.as_str(), device, "error")
            }
            (Action::Select { device, .. }, None) => {
                (observed.selected.as_deref()?, device, "selected")
            }
            _ => return None,
        };
        if undecided_reason(key, undecided).is_some()
            || !policy_spelling(device, step.action.name())
        {
            return None;
        }
        let declaration = self
            .capabilities
            .declared
            .iter()
            .find(|d| d.name == kernel)?;
        let rules = declaration.arch.as_ref()?;
        let count = self.visible_count;
        let target = normalize(device, self.build, || Ok::<u32, DispatchError>(count)).ok()?;
        if target.family != self.build.gpu_family()? {
            return None;
        }
        let ordinal = target.ordinal.unwrap_or(self.current);
        let gpu = self.gpus.get(usize::try_from(ordinal).ok()?)?;
        let verdict = broken_rule(rules, gpu)?;
        self.policy_observed += 1;
        let written = match target.ordinal {
            Some(n) => format!("GPU {n}"),
            None => format!("the current GPU {ordinal}"),
        };
        let source = rules
            .source
            .as_deref()
            .map(|s| format!("; {s}"))
            .unwrap_or_default();
        let arch = &gpu.arch;
        let (expected, actual) = match (key, verdict) {
            ("error", Ok(())) => (
                format!(
                    "no unsupported-arch refusal (the subject's {kernel} declares {}{source}, which the target, {written}, {arch}, satisfies)",
                    described(rules)
                ),
                observed
                    .error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.kind, e.message))
                    .unwrap_or_default(),
            ),
            ("ok", Err(broken)) => (
                format!(
                    "false (the subject's {kernel} declares {broken}{source}; the target, {written}, is {arch})"
                ),
                "true".to_string(),
            ),
            ("selected", Err(broken)) => (
                format!("a kernel whose declared arch rules admit the target, {written} ({arch})"),
                format!("{kernel} (declares {broken}{source})"),
            ),
            _ => return None,
        };
        Some(Mismatch {
            key: key.into(),
            expected,
            actual,
            conformance: Some(Conformance::policy("per-target-arch")),
        })
    }

    /// The subject's declaration of `kernel`, where it declares any family: a kernel that declares none (a
    /// class without a device declaration) has declared nothing to hold it to, so nothing is implied.
    fn declaration(&self, kernel: &str) -> Option<&'a KernelDeclaration> {
        self.capabilities
            .declared
            .iter()
            .find(|d| d.name == kernel && !d.families.is_empty())
    }

    /// The family the policy says the selector means on this host (`cuda` on a HIP build is ROCm).
    fn true_family(&self, device: &Selector) -> Option<Family> {
        let count = self.visible_count;
        normalize(device, self.build, || Ok::<u32, DispatchError>(count))
            .ok()
            .map(|target| target.family)
    }
}

/// A declaration's families in words: `cuda, rocm`, or `no family`.
fn families(declaration: &KernelDeclaration) -> String {
    if declaration.families.is_empty() {
        "no family".into()
    } else {
        declaration.families.join(", ")
    }
}

/// A kernel's declared arch rules in words: `min capability sm_90, gfx gfx11, gfx12`.
fn described(rules: &ArchDeclaration) -> String {
    let mut words = Vec::new();
    if let Some(least) = rules.min_capability {
        words.push(format!("min capability sm_{least}"));
    }
    if let Some(most) = rules.max_capability {
        words.push(format!("max capability sm_{most}"));
    }
    if !rules.gfx.is_empty() {
        words.push(format!("gfx {}", rules.gfx.join(", ")));
    }
    if let Some(least) = rules.min_smem_optin {
        words.push(format!("min shared memory {least} bytes"));
    }
    words.join(", ")
}

/// Whether `gpu` satisfies a kernel's declared arch rules: `None` when no rule speaks about it (a GPU of
/// another vendor than the rules name, and no shared-memory rule); else `Ok` or `Err` naming the rule it
/// breaks.
fn broken_rule(rules: &ArchDeclaration, gpu: &Gpu) -> Option<Result<(), String>> {
    let capability = |c: u32| format!("sm_{c}");
    let mut spoke = false;
    if let Some(have) = gpu.arch.capability() {
        let have = have.major * 10 + have.minor;
        if let Some(least) = rules.min_capability {
            spoke = true;
            if have < least {
                return Some(Err(format!("min capability {}", capability(least))));
            }
        }
        if let Some(most) = rules.max_capability {
            spoke = true;
            if have > most {
                return Some(Err(format!("max capability {}", capability(most))));
            }
        }
    }
    if let Some(target) = gpu.arch.gfx() {
        if !rules.gfx.is_empty() {
            spoke = true;
            if !rules
                .gfx
                .iter()
                .any(|g| target.base.starts_with(g.as_str()))
            {
                return Some(Err(format!("gfx {}", rules.gfx.join(", "))));
            }
        }
    }
    if let Some(least) = rules.min_smem_optin {
        spoke = true;
        if gpu.smem_optin < least {
            return Some(Err(format!(
                "min shared memory {least} bytes (the GPU opts in {})",
                gpu.smem_optin
            )));
        }
    }
    spoke.then_some(Ok(()))
}

fn declares(declaration: &KernelDeclaration, family: Family) -> bool {
    declaration
        .families
        .iter()
        .any(|f| f == "all" || f == family.as_str())
}

/// A live warmup's forward outside the tolerance it is judged by (the project's own against its reference
/// kernel, where the project states one; else the seed's against the FP64 oracle) is a failure of the
/// kernel's own contract (it computes the wrong result), whatever the scenario expects. Both errors are
/// named.
pub(super) fn numerics(observed: &Observed) -> Option<Mismatch> {
    let numerics = observed.numerics.as_ref()?;
    if numerics.not_judged.is_some() {
        return None;
    }
    let finite = numerics.max_abs_error.is_finite()
        && numerics.reference_max_abs_error.is_none_or(f64::is_finite);
    let dtype = numerics.dtype();
    let expected = match (&numerics.reference, &numerics.tolerance_source) {
        (Some(reference), Some(source)) => format!(
            "the {dtype} forward within atol + rtol·|reference| of {reference}'s output, the project's own tolerance (rtol = {}, atol = {}; {source})",
            numerics.rtol, numerics.atol
        ),
        (None, Some(source)) => format!(
            "the {dtype} forward within atol + rtol·|oracle| of the FP64 oracle ({}), the project's own tolerance (rtol = {}, atol = {}; {source})",
            oracle(numerics),
            numerics.rtol,
            numerics.atol
        ),
        _ => format!(
            "the {dtype} forward within atol + rtol·|oracle| of the FP64 oracle ({}; the seed's rtol = {}, atol = {}: the project states no tolerance for it)",
            oracle(numerics),
            numerics.rtol,
            numerics.atol
        ),
    };
    let against_reference = match (&numerics.reference, numerics.reference_max_abs_error) {
        (Some(reference), Some(error)) => format!("max |error| {error:e} against {reference}, "),
        _ => String::new(),
    };
    (!numerics.within || !finite).then(|| Mismatch {
        key: "numerics".into(),
        expected,
        actual: format!(
            "{against_reference}max |error| {:e} against the FP64 oracle{}",
            numerics.max_abs_error,
            numerics
                .shape
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        ),
        conformance: Some(Conformance::contract()),
    })
}

/// Why a live forward's numerics were set aside, with the errors measured: the subject did not judge them
/// because the project states no tolerance for the kernel (never a failure at a tolerance devsim invents).
pub(super) fn not_judged(observed: &Observed) -> Option<String> {
    let numerics = observed.numerics.as_ref()?;
    let why = numerics.not_judged.as_ref()?;
    let against_reference = match (&numerics.reference, numerics.reference_max_abs_error) {
        (Some(reference), Some(error)) => format!(", {error:e} against {reference}"),
        _ => String::new(),
    };
    Some(format!(
        "numerics not judged: {why} (max |error| {:e} against the FP64 oracle: {}{against_reference})",
        numerics.max_abs_error,
        oracle(numerics)
    ))
}

/// What the FP64 oracle modelled, in the subject's words or the default.
fn oracle(numerics: &crate::output::NumericsOutput) -> &str {
    numerics
        .oracle
        .as_deref()
        .unwrap_or("the input as given times the exact weight")
}
