//! The context every dispatch step runs in: a runtime and the trace that gates are recorded into.

mod error;
pub mod selector;

use crate::runtime::Runtime;
use crate::trace::{Gate, Trace};
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
        self.record_normalize(selector, result.as_ref().map(ToString::to_string));
        result
    }

    /// Like [`Dispatch::normalize`], accepting `all` (lock scopes).
    pub fn normalize_scope(&self, selector: &Selector) -> Result<Scope, DispatchError> {
        let result = selector::normalize_scope(selector, self.runtime.build(), || {
            Ok(self.runtime.torch_device_count()?)
        });
        self.record_normalize(
            selector,
            result.as_ref().map(|scope| match scope {
                Scope::All => "all".to_string(),
                Scope::Target(target) => target.to_string(),
            }),
        );
        result
    }

    fn record_normalize(&self, selector: &Selector, outcome: Result<String, &DispatchError>) {
        match outcome {
            Ok(target) => self
                .trace
                .gate(Gate::Normalize, true, format!("{selector} -> {target}")),
            Err(error) => self.trace.gate(
                Gate::Normalize,
                false,
                format!("{selector}: {}", error.kind()),
            ),
        }
    }
}
