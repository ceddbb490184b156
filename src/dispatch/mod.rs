//! The context every dispatch step runs in: a runtime and the trace that gates are recorded into.

mod error;
pub mod selector;

use crate::runtime::Runtime;
use std::fmt;

use crate::trace::{Gate, Text, Trace};
use crate::vocab::Target;
pub use error::{DispatchError, ErrorKind};
use selector::{Scope, Selector};

/// A runtime plus the trace gates are recorded into. Cheap to copy around by reference.
pub struct Dispatch<'a> {
    /// The runtime all hardware questions go to (usually a [`crate::Recorder`]).
    pub runtime: &'a dyn Runtime,
    /// Where gate outcomes are recorded, in order with the runtime's calls.
    pub trace: Trace,
}

impl<'a> Dispatch<'a> {
    /// A context over `runtime`, recording gates into `trace` (pass the recorder's trace to interleave).
    pub fn new(runtime: &'a dyn Runtime, trace: Trace) -> Self {
        Self { runtime, trace }
    }

    /// Normalizes a selector for the running build, recording the `gate:normalize` outcome.
    pub fn normalize(&self, selector: &Selector) -> Result<Target, DispatchError> {
        let result = selector::normalize(selector, self.runtime.build(), || {
            Ok(self.runtime.torch_device_count()?)
        });
        self.record_normalize(
            selector,
            result.as_ref().map(|target| Scope::Target(*target)),
        );
        result
    }

    /// Like [`Dispatch::normalize`], accepting `all` (lock scopes).
    pub fn normalize_scope(&self, selector: &Selector) -> Result<Scope, DispatchError> {
        let result = selector::normalize_scope(selector, self.runtime.build(), || {
            Ok(self.runtime.torch_device_count()?)
        });
        self.record_normalize(selector, result.as_ref().copied());
        result
    }

    /// The target when no device is asked for: the build's GPU family, indexless (torch's current device),
    /// when the build sees a GPU of it; else the CPU. On a HIP build that is ROCm, never CUDA.
    pub fn default_target(&self) -> Result<Target, DispatchError> {
        match self.runtime.build().gpu_family() {
            Some(family) if self.runtime.torch_device_count()? > 0 => Ok(Target::family(family)),
            _ => Ok(Target::family(crate::vocab::Family::Cpu)),
        }
    }

    fn record_normalize(&self, selector: &Selector, outcome: Result<Scope, &DispatchError>) {
        let passed = outcome.is_ok();
        let detail = Normalized {
            selector: Kept::of(selector),
            outcome: outcome.map_err(DispatchError::kind),
        };
        self.trace
            .gate(Gate::Normalize, passed, Text::typed(detail));
    }
}

/// The normalize gate's detail: `"cuda:1" -> rocm:1`, `"all" -> all`, `"tpu": unknown-selector`.
#[derive(PartialEq)]
struct Normalized {
    selector: Kept,
    outcome: Result<Scope, &'static str>,
}

/// A selector kept for a trace entry: a short string in place ([`Text::in_place`]: every usual spelling,
/// `torch.device('cuda:1')` included), so recording one allocates nothing beyond the entry; any other
/// selector as a copy.
#[derive(PartialEq)]
enum Kept {
    /// A string selector of at most [`Text::IN_PLACE_BYTES`] bytes.
    Short(Text),
    /// Any other selector.
    Other(Selector),
}

impl Kept {
    fn of(selector: &Selector) -> Self {
        match selector {
            Selector::Text(text) => {
                Text::in_place(text).map_or_else(|| Kept::Other(selector.clone()), Kept::Short)
            }
            other => Kept::Other(other.clone()),
        }
    }
}

impl fmt::Display for Kept {
    /// As the selector displays: a string in double quotes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kept::Short(text) => write!(f, "\"{text}\""),
            Kept::Other(selector) => selector.fmt(f),
        }
    }
}

impl fmt::Display for Normalized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let selector = &self.selector;
        match self.outcome {
            Ok(Scope::All) => write!(f, "{selector} -> all"),
            Ok(Scope::Target(target)) => write!(f, "{selector} -> {target}"),
            Err(kind) => write!(f, "{selector}: {kind}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_selector_displays_as_the_selector() {
        let long = "torch.device(type='cuda', index=1)";
        for selector in [
            Selector::from("cuda:1"),
            Selector::from(""),
            Selector::from("é:ü"),
            Selector::from("x".repeat(Text::IN_PLACE_BYTES).as_str()),
            Selector::from("x".repeat(Text::IN_PLACE_BYTES + 1).as_str()),
            Selector::from(long),
            Selector::Ordinal(-3),
            Selector::Family(crate::vocab::Family::Rocm),
        ] {
            assert_eq!(Kept::of(&selector).to_string(), selector.to_string());
        }
        assert!(matches!(Kept::of(&"cuda:1".into()), Kept::Short(text) if text == "cuda:1"));
        assert!(matches!(Kept::of(&long.into()), Kept::Other(_)));
    }
}
