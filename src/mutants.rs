//! Deliberately wrong variants of the dispatch code, one per bug class of the seed.
//!
//! They exist so the test suite can prove that the scenario corpus catches each bug: a test switches one
//! variant on for the current thread, runs the corpus, and expects failures. Switching needs the cargo
//! feature `mutants`, which only the test suite enables; without it [`active`] is always `false` and the
//! shipped binary cannot behave wrongly on purpose.

use std::fmt;

/// One seed bug class, as a wrong variant of the dispatch code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutant {
    /// `Family::Cuda`, integer ordinals and torch `cuda` devices stay CUDA on a HIP build (family-gate leak).
    CudaSpellingIsNvidia,
    /// String selectors bypass normalization: `"cuda"` stays CUDA on a HIP build.
    StringSelectorsSkipNormalization,
    /// Early resolution: ROCM is stored as CUDA in configuration and selection.
    RocmStoredAsCuda,
    /// bitsandbytes declares no ROCM: its real ROCm support is hidden by the family gate.
    HiddenRocmSupport,
    /// Family targets resolve to ordinal 0 instead of the current device.
    FamilyMovesToGpuZero,
    /// Explicit ordinals are dropped at the torch boundary.
    ExplicitOrdinalDropped,
    /// The device pool refuses ROCM as an unknown device.
    PoolRejectsRocm,
    /// Arch rules are judged on the current GPU instead of the selected target.
    ArchJudgedOnCurrentGpu,
    /// Warmup launches in the caller's context instead of the target's.
    WarmupOutsideTargetContext,
    /// Warmup leaves the target's context current instead of restoring the caller's.
    CurrentDeviceNotRestored,
    /// A native extension is loaded before the gates run.
    ExtensionLoadedBeforeGates,
    /// The arch gate probes NVIDIA compute capability whatever the target's vendor.
    NvidiaProbeOnAmd,
    /// Discovery reads HIP's "cuda is available" as NVIDIA presence.
    HipCudaMeansNvidia,
}

impl Mutant {
    /// Every variant, in declaration order.
    pub const EVERY: [Mutant; 13] = [
        Mutant::CudaSpellingIsNvidia,
        Mutant::StringSelectorsSkipNormalization,
        Mutant::RocmStoredAsCuda,
        Mutant::HiddenRocmSupport,
        Mutant::FamilyMovesToGpuZero,
        Mutant::ExplicitOrdinalDropped,
        Mutant::PoolRejectsRocm,
        Mutant::ArchJudgedOnCurrentGpu,
        Mutant::WarmupOutsideTargetContext,
        Mutant::CurrentDeviceNotRestored,
        Mutant::ExtensionLoadedBeforeGates,
        Mutant::NvidiaProbeOnAmd,
        Mutant::HipCudaMeansNvidia,
    ];
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

#[cfg(feature = "mutants")]
thread_local! {
    static ACTIVE: std::cell::Cell<Option<Mutant>> = const { std::cell::Cell::new(None) };
}

/// Whether `mutant` is switched on for this thread. Always `false` without the `mutants` feature.
#[inline]
pub fn active(mutant: Mutant) -> bool {
    #[cfg(feature = "mutants")]
    {
        ACTIVE.with(|cell| cell.get() == Some(mutant))
    }
    #[cfg(not(feature = "mutants"))]
    {
        let _ = mutant;
        false
    }
}

/// Keeps a mutant switched on for this thread until dropped.
#[cfg(feature = "mutants")]
#[derive(Debug)]
pub struct MutantGuard {
    previous: Option<Mutant>,
}

/// Switches `mutant` on for this thread until the guard drops.
#[cfg(feature = "mutants")]
pub fn activate(mutant: Mutant) -> MutantGuard {
    let previous = ACTIVE.with(|cell| cell.replace(Some(mutant)));
    MutantGuard { previous }
}

#[cfg(feature = "mutants")]
impl Drop for MutantGuard {
    fn drop(&mut self) {
        ACTIVE.with(|cell| cell.set(self.previous));
    }
}
