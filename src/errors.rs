//! Every error devsim reports, in one place.
//!
//! Messages are lowercase fragments that read well after "failed to". Dispatch errors carry a stable
//! *kind* (`unknown-selector`, `unsupported-arch` ...) that scenario files match on.

use std::path::PathBuf;

use thiserror::Error;

use crate::family::{Family, accepted_archs};
use crate::host::TorchBuild;
use crate::selector::Target;

/// An arch string devsim does not accept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArchError {
    /// Not an `sm_XY` capability or `gfxNNNN` target devsim knows.
    #[error("parse arch `{input}`: expected {}", accepted_archs())]
    Unknown {
        /// What was written.
        input: String,
    },
}

/// A runtime call that failed, with the driver's own code and message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{call}: {message} (driver code {code})")]
pub struct DriverError {
    /// The runtime call (`set_device`, `cuDeviceGetAttribute` ...).
    pub call: String,
    /// The driver's numeric error code.
    pub code: i32,
    /// The driver's own message, e.g. `CUDA_ERROR_INVALID_DEVICE: invalid device ordinal`.
    pub message: String,
}

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

/// A host description that cannot be simulated as written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostError {
    /// A GPU listed under `gpus` is not of the build's vendor (or the build has no GPUs).
    #[error(
        "place GPU {index} ({arch}) on a {build} build: `gpus` lists GPUs of the build's vendor ({expected}); put other GPUs under `foreign_gpus`"
    )]
    WrongVendor {
        /// Position in `gpus`.
        index: usize,
        /// Its arch.
        arch: String,
        /// The build.
        build: TorchBuild,
        /// What the build accepts, in words.
        expected: &'static str,
    },
    /// `current` names a device past the visible count.
    #[error("make device {current} current: only {visible} device(s) are visible")]
    CurrentOutOfRange {
        /// The requested current device.
        current: u32,
        /// How many are visible.
        visible: u32,
    },
    /// An `env` key that is not a visible-device variable.
    #[error(
        "set environment variable `{key}`: a host may set only CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES"
    )]
    UnknownEnv {
        /// The key written.
        key: String,
    },
    /// PyTorch's own check: HIP_VISIBLE_DEVICES may not list more devices than ROCR_VISIBLE_DEVICES.
    #[error(
        "apply visible devices: HIP_VISIBLE_DEVICES contains more devices than ROCR_VISIBLE_DEVICES"
    )]
    HipMaskWiderThanRocr,
    /// A profile that names itself in a cycle or a missing profile.
    #[error("find host profile `{name}`: expected one of {available}")]
    UnknownProfile {
        /// The profile named.
        name: String,
        /// The profiles that exist.
        available: String,
    },
    /// A fault names a call that does not exist.
    #[error("inject a fault into `{call}`: expected one of {expected}")]
    UnknownCall {
        /// The call named.
        call: String,
        /// The runtime calls that exist.
        expected: String,
    },
}

/// A scenario or host-profile file that cannot be loaded, located at `path:line:column`.
#[derive(Debug, Clone, Error)]
#[error("{}:{line}:{column}: {message}", path.display())]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was wrong and what was expected.
    pub message: String,
    /// A suggestion, such as the closest valid name.
    pub help: Option<String>,
    /// The offending text, for rendering (boxed: errors stay small on the happy path).
    pub snippet: Option<Box<Snippet>>,
}

/// The file text and byte range a [`LoadError`] points at.
#[derive(Debug, Clone)]
pub struct Snippet {
    /// The whole file, named by its path.
    pub source: miette::NamedSource<String>,
    /// The offending range.
    pub span: miette::SourceSpan,
}

impl LoadError {
    /// An error with no source snippet.
    pub fn new(
        path: impl Into<PathBuf>,
        line: usize,
        column: usize,
        message: impl Into<String>,
    ) -> Self {
        Self {
            path: path.into(),
            line,
            column,
            message: message.into(),
            help: None,
            snippet: None,
        }
    }
}

impl miette::Diagnostic for LoadError {
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.snippet
            .as_ref()
            .map(|snippet| &snippet.source as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let snippet = self.snippet.as_ref()?;
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(Some("here".into()), snippet.span),
        )))
    }
}

/// Why `devsim` as a whole could not do what it was asked.
#[derive(Debug, Error)]
pub enum CliError {
    /// A file or folder could not be read.
    #[error("read {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Files failed to load.
    #[error("load {count} file(s)")]
    Load {
        /// How many files failed.
        count: usize,
    },
    /// Scenarios failed.
    #[error("pass {failed} scenario(s)")]
    Failed {
        /// How many failed.
        failed: usize,
    },
    /// A host profile was invalid.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A profile file could not be loaded.
    #[error(transparent)]
    Profile(#[from] LoadError),
    /// A dispatch step outside a scenario failed (benchmarks).
    #[error(transparent)]
    Dispatch(#[from] DispatchError),
    /// JSON output could not be written.
    #[error("write json: {0}")]
    Json(#[from] serde_json::Error),
}
