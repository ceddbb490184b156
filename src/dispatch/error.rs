//! Why a dispatch step did not succeed. Messages are lowercase fragments that read well after "failed to";
//! every error carries a stable *kind* (`unknown-selector`, `unsupported-arch` ...) that scenario files match on.

use thiserror::Error;

use crate::runtime::DriverError;
use crate::vocab::{ArchError, Family, Target, TorchBuild};

/// Why a dispatch step (normalize, validate, warmup, move, select, lock) did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DispatchError {
    /// A selector spelling devsim does not know.
    #[error(
        "parse device selector `{input}`: expected cpu, cuda[:N], rocm[:N], hip[:N], xpu[:N], mps, a family name or an integer ordinal"
    )]
    UnknownSelector {
        /// What was written.
        input: String,
    },
    /// A kernel name that is not in the catalog.
    #[error("find kernel `{name}` in the catalog{}", suggestion_suffix(suggestion))]
    UnknownKernel {
        /// What was asked for.
        name: String,
        /// The closest catalog name, if any is close.
        suggestion: Option<String>,
    },
    /// An arch string devsim does not accept.
    #[error(transparent)]
    UnknownArch(#[from] ArchError),
    /// An ordinal past the visible device count.
    #[error("use device {target}: only {visible} visible device(s) (ordinals 0..{visible})")]
    NoSuchDevice {
        /// The target asked for.
        target: Target,
        /// How many devices the build sees.
        visible: u32,
    },
    /// A family the running build has no devices of.
    #[error("use family {family}: this {build} build of torch has no {family} device")]
    FamilyNotPresent {
        /// The family asked for.
        family: Family,
        /// The running build.
        build: TorchBuild,
    },
    /// The kernel does not declare the target's family.
    #[error(
        "run kernel {kernel} on {target}: it declares {declared}{}",
        alternative_suffix(alternative)
    )]
    UnsupportedFamily {
        /// The kernel refused.
        kernel: String,
        /// The normalized target.
        target: Target,
        /// The families the kernel declares, e.g. `cuda`.
        declared: String,
        /// A portable kernel to use instead.
        alternative: Option<String>,
    },
    /// The kernel's arch rule refuses the target's GPU.
    #[error(
        "run kernel {kernel} on {target} ({arch}): it requires {rule}{}",
        alternative_suffix(alternative)
    )]
    UnsupportedArch {
        /// The kernel refused.
        kernel: String,
        /// The normalized target.
        target: Target,
        /// The arch the target's GPU reported.
        arch: String,
        /// The rule it failed, in words.
        rule: String,
        /// A portable kernel to use instead.
        alternative: Option<String>,
    },
    /// A kernel does not support the requested bit width.
    #[error("run kernel {kernel} with {bits}-bit weights: it supports {supported}")]
    UnsupportedBits {
        /// The kernel refused.
        kernel: String,
        /// What was asked for.
        bits: u32,
        /// What it supports, in words.
        supported: String,
    },
    /// Automatic selection found no kernel passing every gate.
    #[error(
        "select a {method} kernel for {bits}-bit weights on {target}: {}",
        refusal_list(refusals)
    )]
    NoKernel {
        /// The quantization method.
        method: String,
        /// The bit width.
        bits: u32,
        /// The normalized target.
        target: Target,
        /// Each candidate, by priority, with why it was refused.
        refusals: Vec<(String, String)>,
    },
    /// A runtime call failed.
    #[error("call the runtime: {0}")]
    Driver(#[from] DriverError),
}

fn suggestion_suffix(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean {s}?)"))
        .unwrap_or_default()
}

fn alternative_suffix(alternative: &Option<String>) -> String {
    alternative
        .as_ref()
        .map(|s| format!("; use {s} instead"))
        .unwrap_or_default()
}

fn refusal_list(refusals: &[(String, String)]) -> String {
    if refusals.is_empty() {
        return "no kernel of that method and bit width is selectable".into();
    }
    refusals
        .iter()
        .map(|(name, why)| format!("{name} refused ({why})"))
        .collect::<Vec<_>>()
        .join("; ")
}

impl DispatchError {
    /// The stable kind that scenario files match on with `error = "..."`.
    pub fn kind(&self) -> &'static str {
        match self {
            DispatchError::UnknownSelector { .. } => "unknown-selector",
            DispatchError::UnknownKernel { .. } => "unknown-kernel",
            DispatchError::UnknownArch(_) => "unknown-arch",
            DispatchError::NoSuchDevice { .. } => "no-such-device",
            DispatchError::FamilyNotPresent { .. } => "family-not-present",
            DispatchError::UnsupportedFamily { .. } => "unsupported-family",
            DispatchError::UnsupportedArch { .. } => "unsupported-arch",
            DispatchError::UnsupportedBits { .. } => "unsupported-bits",
            DispatchError::NoKernel { .. } => "no-kernel",
            DispatchError::Driver(_) => "driver-error",
        }
    }

    /// The normalized target a refusal concerns, when normalization got that far.
    pub fn target(&self) -> Option<Target> {
        match self {
            DispatchError::NoSuchDevice { target, .. }
            | DispatchError::UnsupportedFamily { target, .. }
            | DispatchError::UnsupportedArch { target, .. }
            | DispatchError::NoKernel { target, .. } => Some(*target),
            _ => None,
        }
    }

    /// Every kind [`DispatchError::kind`] can return.
    pub const KINDS: [&'static str; 10] = [
        "unknown-selector",
        "unknown-kernel",
        "unknown-arch",
        "no-such-device",
        "family-not-present",
        "unsupported-family",
        "unsupported-arch",
        "unsupported-bits",
        "no-kernel",
        "driver-error",
    ];
}
