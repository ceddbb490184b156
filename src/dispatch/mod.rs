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
            selector: selector.clone(),
            outcome: outcome.map_err(DispatchError::kind),
        };
        self.trace
            .gate(Gate::Normalize, passed, Text::typed(detail));
    }
}

/// The normalize gate's detail: `"cuda:1" -> rocm:1`, `"all" -> all`, `"tpu": unknown-selector`.
#[derive(PartialEq)]
struct Normalized {
    selector: Selector,
    outcome: Result<Scope, &'static str>,
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
