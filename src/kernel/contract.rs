//! A kernel's device contract: the data a contributor fills in, in a few lines.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

use crate::vocab::{ComputeCapability, Family};

/// A quantization method, the key automatic selection picks by. The methods the reference catalog knows are
/// typed; a downstream crate's own method is [`Method::Custom`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// GPTQ.
    Gptq,
    /// AWQ.
    Awq,
    /// QQQ.
    Qqq,
    /// ParoQuant.
    Paroquant,
    /// FP8.
    Fp8,
    /// W4A (FP8 or NVFP4 activations).
    W4a,
    /// bitsandbytes NF4/FP4/INT8.
    Bitsandbytes,
    /// GGUF.
    Gguf,
    /// VPTQ.
    Vptq,
    /// EXL3.
    Exl3,
    /// Source-FP4 loading.
    Fp4,
    /// Quantized embeddings.
    Embedding,
    /// A method the reference catalog does not know, by its lowercase name.
    Custom(Cow<'static, str>),
}

impl Method {
    /// Every method the reference catalog knows, in a fixed order.
    pub const KNOWN: [Method; 12] = [
        Method::Gptq,
        Method::Awq,
        Method::Qqq,
        Method::Paroquant,
        Method::Fp8,
        Method::W4a,
        Method::Bitsandbytes,
        Method::Gguf,
        Method::Vptq,
        Method::Exl3,
        Method::Fp4,
        Method::Embedding,
    ];

    /// The lowercase name used in scenario files.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Gptq => "gptq",
            Method::Awq => "awq",
            Method::Qqq => "qqq",
            Method::Paroquant => "paroquant",
            Method::Fp8 => "fp8",
            Method::W4a => "w4a",
            Method::Bitsandbytes => "bitsandbytes",
            Method::Gguf => "gguf",
            Method::Vptq => "vptq",
            Method::Exl3 => "exl3",
            Method::Fp4 => "fp4",
            Method::Embedding => "embedding",
            Method::Custom(name) => name,
        }
    }

    /// The known method of that name (any case), or a [`Method::Custom`] one.
    pub fn named(name: &str) -> Method {
        name.parse()
            .unwrap_or_else(|_| Method::Custom(Cow::Owned(name.to_ascii_lowercase())))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Method {
    /// The lowercase name.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::str::FromStr for Method {
    type Err = String;

    /// A known method by name (any case); anything else comes back as the error.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Method::KNOWN
            .into_iter()
            .find(|method| method.as_str() == name.to_ascii_lowercase())
            .ok_or_else(|| name.to_string())
    }
}

/// Which NVIDIA compute capabilities a kernel runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum NvidiaRule {
    /// `cc >= min`.
    AtLeast {
        /// The lowest capability accepted.
        min: ComputeCapability,
    },
    /// `min <= cc < below`.
    Range {
        /// The lowest capability accepted.
        min: ComputeCapability,
        /// The first capability refused.
        below: ComputeCapability,
    },
    /// `cc` in a set.
    OneOf {
        /// The capabilities accepted.
        set: Cow<'static, [ComputeCapability]>,
    },
}

impl NvidiaRule {
    /// Whether `cc` passes.
    pub fn admits(&self, cc: ComputeCapability) -> bool {
        match self {
            NvidiaRule::AtLeast { min } => cc >= *min,
            NvidiaRule::Range { min, below } => cc >= *min && cc < *below,
            NvidiaRule::OneOf { set } => set.contains(&cc),
        }
    }
}

impl fmt::Display for NvidiaRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NvidiaRule::AtLeast { min } => write!(f, "compute capability >= {min}"),
            NvidiaRule::Range { min, below } => {
                write!(f, "compute capability >= {min} and < {below}")
            }
            NvidiaRule::OneOf { set } => {
                let set: Vec<String> = set.iter().map(ToString::to_string).collect();
                write!(f, "compute capability in {{{}}}", set.join(", "))
            }
        }
    }
}

/// A kernel's declared device contract. Built with [`KernelSpec::new`] and the builder methods; every text
/// and list is owned or `'static` ([`Cow`]), so a spec can be built at run time (from a file) as well as in
/// code. The catalog checks a spec's consistency when it is built ([`crate::kernel::CatalogError`]).
#[derive(Debug, Clone, Serialize)]
pub struct KernelSpec {
    /// The catalog key.
    pub name: Cow<'static, str>,
    /// The quantization method.
    pub method: Method,
    /// Supported weight bit widths.
    pub bits: Cow<'static, [u32]>,
    /// The families the kernel declares; `All` admits every family.
    pub families: Cow<'static, [Family]>,
    /// NVIDIA compute-capability rule, if any.
    pub nvidia: Option<NvidiaRule>,
    /// Minimum opt-in shared memory per block on NVIDIA, in bytes.
    pub smem_optin_min: Option<u32>,
    /// AMD base targets accepted (`gfx1201` ...), if restricted.
    pub amd_targets: Option<Vec<Cow<'static, str>>>,
    /// The native extension loaded once every gate passed.
    pub extension: Option<Cow<'static, str>>,
    /// A Python-side requirement (triton, bitblas, mlx ...), informational.
    pub requires: Option<Cow<'static, str>>,
    /// Selection priority; higher wins.
    pub priority: u32,
    /// Whether automatic selection may pick it (explicit-only kernels are reachable by name alone).
    pub selectable: bool,
    /// The portable kernel to name when refusing.
    pub alternative: Option<Cow<'static, str>>,
    /// Whether moving weights repacks them on the device: only then does a move call
    /// [`crate::Kernel::prepare_on_device`] (inside the target's context) after the copy.
    pub repacks: bool,
}

impl KernelSpec {
    /// A contract with a name, method, bit widths and families; the rest by builder methods.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        method: Method,
        bits: impl Into<Cow<'static, [u32]>>,
        families: impl Into<Cow<'static, [Family]>>,
    ) -> Self {
        Self {
            name: name.into(),
            method,
            bits: bits.into(),
            families: families.into(),
            nvidia: None,
            smem_optin_min: None,
            amd_targets: None,
            extension: None,
            requires: None,
            priority: 0,
            selectable: true,
            alternative: None,
            repacks: false,
        }
    }

    /// NVIDIA `cc >= major.minor`.
    pub fn cc_at_least(mut self, major: u32, minor: u32) -> Self {
        self.nvidia = Some(NvidiaRule::AtLeast {
            min: ComputeCapability::new(major, minor),
        });
        self
    }

    /// NVIDIA `min <= cc < below`.
    pub fn cc_range(mut self, min: (u32, u32), below: (u32, u32)) -> Self {
        self.nvidia = Some(NvidiaRule::Range {
            min: ComputeCapability::new(min.0, min.1),
            below: ComputeCapability::new(below.0, below.1),
        });
        self
    }

    /// NVIDIA `cc` in a set.
    pub fn cc_one_of(mut self, set: impl Into<Cow<'static, [ComputeCapability]>>) -> Self {
        self.nvidia = Some(NvidiaRule::OneOf { set: set.into() });
        self
    }

    /// Minimum opt-in shared memory per block on NVIDIA.
    pub fn smem_optin_at_least(mut self, bytes: u32) -> Self {
        self.smem_optin_min = Some(bytes);
        self
    }

    /// AMD base targets accepted (`gfx1200`, `gfx1201` ...).
    pub fn amd_targets<T: Into<Cow<'static, str>>>(
        mut self,
        targets: impl IntoIterator<Item = T>,
    ) -> Self {
        self.amd_targets = Some(targets.into_iter().map(Into::into).collect());
        self
    }

    /// The native extension to load after the gates.
    pub fn extension(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.extension = Some(name.into());
        self
    }

    /// A Python-side requirement.
    pub fn requires(mut self, package: impl Into<Cow<'static, str>>) -> Self {
        self.requires = Some(package.into());
        self
    }

    /// Selection priority.
    pub fn priority(mut self, priority: u32) -> Self {
        self.priority = priority;
        self
    }

    /// Reachable by name only.
    pub fn explicit_only(mut self) -> Self {
        self.selectable = false;
        self.priority = 0;
        self
    }

    /// The portable kernel to suggest on refusal.
    pub fn alternative(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.alternative = Some(name.into());
        self
    }

    /// Weights are repacked on the device after a move.
    pub fn repacks(mut self) -> Self {
        self.repacks = true;
        self
    }

    /// Whether the declaration admits `family` (directly or through `All`).
    pub fn declares(&self, family: Family) -> bool {
        self.families.contains(&Family::All) || self.families.contains(&family)
    }

    /// The declared families in words: `cuda, rocm`.
    pub fn families_text(&self) -> String {
        let names: Vec<&str> = self.families.iter().map(|f| f.as_str()).collect();
        names.join(", ")
    }

    /// The arch rule in words, for `devsim kernels`.
    pub fn arch_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(rule) = &self.nvidia {
            parts.push(format!("cuda: {rule}"));
        }
        if let Some(bytes) = self.smem_optin_min {
            parts.push(format!("cuda: opt-in shared memory >= {bytes} bytes"));
        }
        if let Some(targets) = &self.amd_targets {
            parts.push(format!("rocm: {}", targets.join(" or ")));
        }
        parts.join("; ")
    }
}
