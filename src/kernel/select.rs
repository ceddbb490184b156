//! Automatic selection: the highest-priority kernel of a method and bit width that passes every gate.

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::dispatch::selector::Selector;
use crate::kernel::{Catalog, Kernel, Method};
use crate::vocab::Target;

/// The kernel selection picked.
pub struct Selected<'c> {
    /// The kernel.
    pub kernel: &'c dyn Kernel,
    /// The normalized target it was validated for.
    pub target: Target,
}

/// The selectable candidates for a method, best first: priority descending, then name ascending.
pub fn candidates<'c>(catalog: &'c Catalog, method: &Method) -> Vec<&'c dyn Kernel> {
    let mut candidates: Vec<&dyn Kernel> = catalog
        .iter()
        .filter(|k| k.spec().selectable && &k.spec().method == method)
        .collect();
    candidates.sort_by(|a, b| {
        b.spec()
            .priority
            .cmp(&a.spec().priority)
            .then_with(|| a.spec().name.cmp(&b.spec().name))
    });
    candidates
}

/// Normalizes once, then tries each candidate in order; the first that passes every gate wins.
/// When none does, the error lists every candidate with why it was refused.
pub fn select<'c>(
    dispatch: &Dispatch,
    catalog: &'c Catalog,
    method: &Method,
    bits: u32,
    selector: &Selector,
) -> Result<Selected<'c>, DispatchError> {
    let target = dispatch.normalize(selector)?;
    let mut refusals = Vec::new();
    for kernel in candidates(catalog, method) {
        match kernel.validate_target(dispatch, target, Some(bits)) {
            Ok(()) => return Ok(Selected { kernel, target }),
            Err(DispatchError::Driver(error)) => return Err(DispatchError::Driver(error)),
            Err(refusal) => refusals.push((kernel.spec().name.to_string(), refusal.to_string())),
        }
    }
    Err(DispatchError::NoKernel {
        method: method.to_string(),
        bits,
        target,
        refusals,
    })
}
