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
        self.error_kind().as_str()
    }

    /// The kind as a value.
    pub fn error_kind(&self) -> ErrorKind {
        match self {
            DispatchError::UnknownSelector { .. } => ErrorKind::UnknownSelector,
            DispatchError::UnknownKernel { .. } => ErrorKind::UnknownKernel,
            DispatchError::UnknownArch(_) => ErrorKind::UnknownArch,
            DispatchError::NoSuchDevice { .. } => ErrorKind::NoSuchDevice,
            DispatchError::FamilyNotPresent { .. } => ErrorKind::FamilyNotPresent,
            DispatchError::UnsupportedFamily { .. } => ErrorKind::UnsupportedFamily,
            DispatchError::UnsupportedArch { .. } => ErrorKind::UnsupportedArch,
            DispatchError::UnsupportedBits { .. } => ErrorKind::UnsupportedBits,
            DispatchError::NoKernel { .. } => ErrorKind::NoKernel,
            DispatchError::Driver(_) => ErrorKind::DriverError,
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
}

/// Declares [`ErrorKind`] and [`DispatchError::KINDS`] from one list, so each kind's name is written once.
macro_rules! error_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// The stable kinds of [`DispatchError`], as scenario files and subject answers spell them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorKind {
            $($(#[$doc])* $variant,)*
        }

        impl ErrorKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant,)*];

            /// The kind's name (`unsupported-arch`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorKind::$variant => $name,)*
                }
            }
        }

        impl DispatchError {
            /// Every kind [`DispatchError::kind`] can return.
            pub const KINDS: [&'static str; [$($name),*].len()] = [$($name),*];
        }
    };
}

error_kinds! {
    /// A selector spelling devsim does not know.
    UnknownSelector = "unknown-selector",
    /// A kernel name that is not in the catalog.
    UnknownKernel = "unknown-kernel",
    /// An arch string devsim does not accept.
    UnknownArch = "unknown-arch",
    /// An ordinal past the visible device count.
    NoSuchDevice = "no-such-device",
    /// A family the running build has no devices of.
    FamilyNotPresent = "family-not-present",
    /// A kernel that does not declare the target's family.
    UnsupportedFamily = "unsupported-family",
    /// A kernel whose arch rule refuses the target's GPU.
    UnsupportedArch = "unsupported-arch",
    /// A bit width the kernel does not support.
    UnsupportedBits = "unsupported-bits",
    /// No kernel can be selected.
    NoKernel = "no-kernel",
    /// The GPU driver failed.
    DriverError = "driver-error",
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
