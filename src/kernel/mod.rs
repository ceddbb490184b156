//! Kernel contracts and the paths every kernel has: validate, warmup and move.
//!
//! Most kernels are pure data ([`KernelSpec`]) behind [`SpecKernel`]. Kernels with behaviour beyond data
//! implement [`Kernel`] themselves, overriding only what differs; the default methods run the shared gates.

// Not part of the public API: the embedded inventory that `devsim coverage` reads; public only for
// devsim's own tests.
#[doc(hidden)]
pub mod audit;
mod builder;
pub(crate) mod catalog;
pub(crate) mod contract;
pub(crate) mod gate;
mod paths;
pub mod select;
mod special;

pub use builder::CatalogBuilder;
pub use catalog::{Catalog, CatalogError, UNNAMED_CATALOG, reference_specs};
pub use contract::{KernelSpec, Method, NvidiaRule};
pub use paths::{Moved, Validated, Warmed};
pub use special::{AllSpark, Bitsandbytes};

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::dispatch::selector::Selector;
use crate::runtime::Place;
use crate::vocab::Family;
use crate::vocab::Target;

/// A registered kernel: its contract plus its validate, warmup and move paths.
pub trait Kernel: Send + Sync {
    /// The declared contract.
    fn spec(&self) -> &KernelSpec;

    /// The families the family gate checks (the declaration, unless a kernel knows better).
    fn families(&self) -> &[Family] {
        &self.spec().families
    }

    /// Runs every gate for an already-normalized target, then loads the extension. From
    /// [`Kernel::validate`] it runs with the trace held by the calling thread ([`crate::Trace::hold`]):
    /// record from this thread, and never wait here on another thread that records into the same trace.
    fn validate_target(
        &self,
        dispatch: &Dispatch,
        target: Target,
        bits: Option<u32>,
    ) -> Result<(), DispatchError> {
        gate::run_gates(dispatch, self.spec(), self.families(), target, bits)
    }

    /// Normalizes the selector, then validates the target.
    fn validate(
        &self,
        dispatch: &Dispatch,
        selector: &Selector,
    ) -> Result<Validated, DispatchError> {
        paths::validate(self, dispatch, selector)
    }

    /// Work done on the device inside the target's context (repacking weights). Nothing by default.
    ///
    /// When it runs: at every warmup on a GPU target, before the warmup launch; after a move only when the
    /// spec declares [`KernelSpec::repacks`] (`.repacks()`) — a kernel that overrides this to repack must
    /// declare it, or its moves will not repack. It never runs for CPU targets.
    fn prepare_on_device(&self, _dispatch: &Dispatch) -> Result<(), DispatchError> {
        Ok(())
    }

    /// The name of the kernel launched at warmup.
    fn launch_name(&self, _target: Target) -> String {
        self.spec().name.to_string()
    }

    /// Validates, enters the target's context, launches, restores the caller's current device.
    fn warmup(&self, dispatch: &Dispatch, selector: &Selector) -> Result<Warmed, DispatchError> {
        paths::warmup(self, dispatch, selector)
    }

    /// Validates, resolves at the boundary and moves the kernel's weights there.
    fn move_weights(
        &self,
        dispatch: &Dispatch,
        selector: &Selector,
    ) -> Result<Moved, DispatchError> {
        paths::move_weights(self, dispatch, selector)
    }
}

/// A kernel that is nothing but its contract.
pub struct SpecKernel(pub KernelSpec);

impl Kernel for SpecKernel {
    fn spec(&self) -> &KernelSpec {
        &self.0
    }
}

/// The ordinal of a place, if a GPU.
pub(crate) fn gpu_ordinal(place: Place) -> Option<u32> {
    match place {
        Place::Gpu(n) => Some(n),
        Place::Cpu => None,
    }
}
