//! The reference catalog: the kernels the seed audits, with their contracts (each one's audit record is a row of
//! `inventory/kernels.toml`).
//!
//! Priorities the reference gives are kept; the others are chosen here: allspark 70, awq_gemv_triton 35,
//! awq_bitblas 25, awq_llm 15,
//! qqq 100 / qqq_torch 90, paroquant_triton 40 / paroquant 20, fp8_torch 10, w4a_nvfp4 110 / w4a_fp8 100,
//! bitsandbytes 10, vptq_cuda 10, exl3_exllama_v3 100 / exl3_torch 10, mlx 60 (GPTQ and AWQ),
//! fp4_source 10. Explicit-only kernels have priority 0.

use crate::dispatch::DispatchError;
use crate::kernel::special::{AllSpark, Bitsandbytes};
use crate::kernel::{Kernel, KernelSpec, Method, NvidiaRule, SpecKernel};
use crate::vocab::{Arch, Vendor};

use crate::vocab::{ComputeCapability, Family};
use thiserror::Error;

use super::builder::CatalogBuilder;

use Family::{All, Cpu, Cuda, Mps, Rocm, Xpu};
use Method::*;

const GPTQ_BITS: &[u32] = &[2, 3, 4, 8];
const FOUR: &[u32] = &[4];
const EIGHT: &[u32] = &[8];
const FOUR_EIGHT: &[u32] = &[4, 8];
const GGUF_BITS: &[u32] = &[2, 3, 4, 5, 6, 8];
const EXL3_BITS: &[u32] = &[2, 3, 4, 5, 6, 8];
const SWORDFISH_CC: &[ComputeCapability] = &[
    ComputeCapability::new(10, 0),
    ComputeCapability::new(10, 3),
    ComputeCapability::new(11, 0),
];
const RDNA4: &[&str] = &["gfx1200", "gfx1201"];
const MACHETE_SMEM: u32 = 204_800;

/// Every contract of the reference catalog, in CATALOG.md's order: the declarations only. Some reference
/// kernels have behaviour beyond their contract (AllSpark repacks on the device, bitsandbytes picks a
/// per-vendor launch path), so a catalog rebuilt from these specs as plain `SpecKernel`s is *not* the
/// reference catalog: get that whole with [`Catalog::reference`] or [`Catalog::reference_builder`].
pub fn reference_specs() -> Vec<KernelSpec> {
    vec![
        KernelSpec::new("gptq_torch", Gptq, GPTQ_BITS, &[All]).priority(20),
        KernelSpec::new("gptq_torch_fused", Gptq, FOUR, &[Cpu, Xpu]).priority(50),
        KernelSpec::new("gptq_torch_aten", Gptq, FOUR, &[Cpu]).priority(110),
        KernelSpec::new("gptq_torch_int8", Gptq, EIGHT, &[Cpu]).explicit_only(),
        KernelSpec::new("gptq_triton", Gptq, &[2, 4, 8], &[Cuda])
            .requires("triton")
            .priority(40)
            .alternative("gptq_torch"),
        KernelSpec::new("gptq_exllama_v2", Gptq, FOUR, &[Cuda])
            .extension("exllamav2")
            .priority(80)
            .alternative("gptq_torch"),
        KernelSpec::new("gptq_marlin", Gptq, FOUR_EIGHT, &[Cuda])
            .cc_at_least(7, 5)
            .extension("marlin")
            .priority(90)
            .alternative("gptq_torch"),
        KernelSpec::new("gptq_machete", Gptq, FOUR_EIGHT, &[Cuda])
            .cc_one_of(vec![ComputeCapability::new(9, 0)])
            .smem_optin_at_least(MACHETE_SMEM)
            .extension("machete")
            .priority(100)
            .alternative("gptq_torch"),
        KernelSpec::new("gptq_swordfish", Gptq, FOUR, &[Cuda])
            .cc_one_of(SWORDFISH_CC)
            .extension("swordfish")
            .priority(101)
            .alternative("gptq_torch"),
        KernelSpec::new("gptq_bitblas", Gptq, &[1, 2, 4, 8], &[Cuda])
            .requires("bitblas")
            .priority(30)
            .alternative("gptq_torch"),
        KernelSpec::new("gptq_allspark", Gptq, FOUR_EIGHT, &[Cuda, Rocm])
            .cc_range((8, 0), (9, 0))
            .amd_targets(RDNA4.iter().copied())
            .extension("allspark")
            .priority(70)
            .alternative("gptq_torch")
            .repacks(),
        KernelSpec::new("awq_torch", Awq, FOUR, &[All]).priority(10),
        KernelSpec::new("awq_torch_fused", Awq, FOUR, &[Cpu, Xpu]).priority(20),
        KernelSpec::new("awq_torch_aten", Awq, FOUR, &[Cpu]).priority(110),
        KernelSpec::new("awq_torch_int8", Awq, EIGHT, &[Cpu]).explicit_only(),
        KernelSpec::new("awq_gemm", Awq, FOUR, &[Cuda])
            .extension("awq")
            .priority(60)
            .alternative("awq_gemm_triton"),
        KernelSpec::new("awq_gemv", Awq, FOUR, &[Cuda])
            .extension("awq")
            .priority(40)
            .alternative("awq_gemv_triton"),
        KernelSpec::new("awq_gemv_fast", Awq, FOUR, &[Cuda])
            .extension("awq")
            .priority(30)
            .alternative("awq_gemv_triton"),
        KernelSpec::new("awq_llm", Awq, FOUR, &[Cuda])
            .extension("awq")
            .priority(15)
            .alternative("awq_torch"),
        KernelSpec::new("awq_gemm_triton", Awq, FOUR, &[Cuda, Rocm])
            .requires("triton")
            .priority(50),
        KernelSpec::new("awq_gemv_triton", Awq, FOUR, &[Cuda, Rocm])
            .requires("triton")
            .priority(35),
        KernelSpec::new("awq_marlin", Awq, FOUR, &[Cuda])
            .cc_at_least(8, 0)
            .extension("marlin")
            .priority(90)
            .alternative("awq_torch"),
        KernelSpec::new("awq_machete", Awq, FOUR, &[Cuda])
            .cc_one_of(vec![ComputeCapability::new(9, 0)])
            .smem_optin_at_least(MACHETE_SMEM)
            .extension("machete")
            .priority(100)
            .alternative("awq_torch"),
        KernelSpec::new("awq_swordfish", Awq, FOUR, &[Cuda])
            .cc_one_of(SWORDFISH_CC)
            .extension("swordfish")
            .priority(101)
            .alternative("awq_torch"),
        KernelSpec::new("awq_bitblas", Awq, FOUR, &[Cuda])
            .requires("bitblas")
            .priority(25)
            .alternative("awq_torch"),
        KernelSpec::new("awq_exllama_v2", Awq, FOUR, &[Cuda])
            .extension("exllamav2_awq")
            .priority(80)
            .alternative("awq_torch"),
        KernelSpec::new("awq_allspark", Awq, FOUR_EIGHT, &[Cuda, Rocm])
            .cc_range((8, 0), (9, 0))
            .amd_targets(RDNA4.iter().copied())
            .extension("allspark")
            .priority(70)
            .alternative("awq_torch")
            .repacks(),
        KernelSpec::new("qqq", Qqq, FOUR, &[Cuda])
            .cc_at_least(8, 0)
            .extension("qqq")
            .priority(100)
            .alternative("qqq_torch"),
        KernelSpec::new("qqq_torch", Qqq, FOUR, &[All]).priority(90),
        KernelSpec::new("paroquant", Paroquant, FOUR, &[All]).priority(20),
        KernelSpec::new("paroquant_triton", Paroquant, FOUR, &[Cuda, Rocm])
            .requires("triton")
            .priority(40),
        KernelSpec::new("fp8_torch", Fp8, EIGHT, &[Cpu, Cuda, Rocm, Xpu, Mps]).priority(10),
        KernelSpec::new("w4a_fp8", W4a, FOUR, &[Cuda])
            .cc_at_least(8, 9)
            .extension("w4a")
            .priority(100),
        KernelSpec::new("w4a_nvfp4", W4a, FOUR, &[Cuda])
            .cc_at_least(10, 0)
            .extension("w4a")
            .priority(110),
        KernelSpec::new(
            "bitsandbytes",
            Method::Bitsandbytes,
            FOUR_EIGHT,
            &[Cpu, Cuda, Rocm],
        )
        .requires("bitsandbytes")
        .priority(10),
        KernelSpec::new("gguf_torch", Gguf, GGUF_BITS, &[All]).priority(15),
        KernelSpec::new("gguf_triton", Gguf, GGUF_BITS, &[Cuda, Rocm])
            .requires("triton")
            .priority(45),
        KernelSpec::new("gguf_cpp_cpu", Gguf, GGUF_BITS, &[Cpu])
            .extension("ggml")
            .priority(25),
        KernelSpec::new("gguf_cpp_cuda", Gguf, GGUF_BITS, &[Cuda])
            .extension("ggml")
            .priority(35)
            .alternative("gguf_triton"),
        KernelSpec::new("vptq_cuda", Vptq, &[2, 3, 4], &[Cuda])
            .extension("vptq")
            .priority(10),
        KernelSpec::new("mlx_gptq", Gptq, GPTQ_BITS, &[Mps])
            .requires("mlx")
            .priority(60),
        KernelSpec::new("mlx_awq", Awq, FOUR, &[Mps])
            .requires("mlx")
            .priority(60),
        KernelSpec::new("torch_quant_embedding", Embedding, FOUR_EIGHT, &[All]).explicit_only(),
        // Native EXL3 needs no code of its own: it declares CUDA only, so on HIP the shared family gate
        // refuses it before `extension_load`, and the refusal names exl3_torch.
        KernelSpec::new("exl3_exllama_v3", Exl3, EXL3_BITS, &[Cuda])
            .extension("exllamav3")
            .priority(100)
            .alternative("exl3_torch"),
        KernelSpec::new("exl3_torch", Exl3, EXL3_BITS, &[All]).priority(10),
        KernelSpec::new("fp4_source", Fp4, FOUR, &[Cpu, Cuda]).priority(10),
    ]
}

/// A set of registered kernels, looked up by name. Every catalog was checked when it was built: names are
/// unique, every `alternative` names a kernel of the catalog, every AMD target is a gfx target devsim
/// knows, compute-capability ranges are not empty, and every kernel declares bit widths and families.
pub struct Catalog {
    pub(super) name: String,
    pub(super) kernels: Vec<Box<dyn Kernel>>,
}

/// The name of a built catalog that was not named ([`CatalogBuilder::named`]).
pub const UNNAMED_CATALOG: &str = "catalog";

impl Catalog {
    /// The reference catalog, with the behaviour-carrying kernels ([`AllSpark`], [`Bitsandbytes`]) wired to
    /// their own types.
    pub fn reference() -> Self {
        let kernels = reference_kernels();
        // The reference data is checked by the test suite; a failure here is a bug in devsim itself.
        if let Err(error) = check(&kernels) {
            unreachable!("the reference catalog is inconsistent: {error}");
        }
        Self {
            name: "reference".into(),
            kernels,
        }
    }

    /// The catalog's name, as a subject names itself in reports and baselines: `reference` for devsim's
    /// reference catalog, what [`CatalogBuilder::named`] gave, or [`UNNAMED_CATALOG`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// An empty builder: a catalog of only the kernels you add.
    pub fn builder() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// A builder starting from the reference catalog: add, replace or remove kernels, then build. What it
    /// builds is a catalog of its own, not the reference: name it with [`CatalogBuilder::named`].
    pub fn reference_builder() -> CatalogBuilder {
        CatalogBuilder::from_kernels(reference_kernels())
    }

    /// Every kernel, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Kernel> {
        self.kernels.iter().map(|k| k.as_ref())
    }

    /// Every kernel name, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.iter().map(|k| k.spec().name.as_ref()).collect()
    }

    /// Whether some kernel of the catalog has this method (what `select` steps may ask for).
    pub fn has_method(&self, method: &Method) -> bool {
        self.iter().any(|k| &k.spec().method == method)
    }

    /// How many kernels are registered.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// Whether no kernel is registered.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// The kernel called `name`, or an `unknown-kernel` error naming the closest one.
    pub fn get(&self, name: &str) -> Result<&dyn Kernel, DispatchError> {
        self.iter()
            .find(|k| k.spec().name == name)
            .ok_or_else(|| DispatchError::UnknownKernel {
                name: name.to_string(),
                suggestion: closest(name, self.names()),
            })
    }
}

pub(super) fn reference_kernels() -> Vec<Box<dyn Kernel>> {
    reference_specs()
        .into_iter()
        .map(|spec| -> Box<dyn Kernel> {
            match spec.name.as_ref() {
                "gptq_allspark" | "awq_allspark" => Box::new(AllSpark(spec)),
                "bitsandbytes" => Box::new(Bitsandbytes(spec)),
                _ => Box::new(SpecKernel(spec)),
            }
        })
        .collect()
}

/// A catalog whose data is inconsistent, naming the kernel and the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CatalogError {
    /// Two kernels share a name.
    #[error("register kernel `{kernel}`: a kernel of that name is already in the catalog")]
    Duplicate {
        /// The name.
        kernel: String,
    },
    /// A replace or remove names a kernel the catalog does not have.
    #[error("{edit} kernel `{kernel}`: no kernel of that name is in the catalog")]
    NotPresent {
        /// The name.
        kernel: String,
        /// `replace` or `remove`.
        edit: &'static str,
    },
    /// A field that must not be empty is.
    #[error("register kernel `{kernel}`: `{field}` is empty")]
    Empty {
        /// The kernel.
        kernel: String,
        /// `name`, `bits` or `families`.
        field: &'static str,
    },
    /// `alternative` names no kernel of the catalog.
    #[error(
        "register kernel `{kernel}`: `alternative` names `{alternative}`, which is not in the catalog{}",
        suggestion.as_ref().map(|s| format!(" (did you mean {s}?)")).unwrap_or_default()
    )]
    UnknownAlternative {
        /// The kernel.
        kernel: String,
        /// The name it gives.
        alternative: String,
        /// The closest catalog name.
        suggestion: Option<String>,
    },
    /// An AMD target that is not a gfx target devsim knows.
    #[error("register kernel `{kernel}`: `amd_targets` lists `{target}`: {reason}")]
    UnknownAmdTarget {
        /// The kernel.
        kernel: String,
        /// The target written.
        target: String,
        /// Why it is refused.
        reason: String,
    },
    /// A compute-capability range that admits nothing.
    #[error(
        "register kernel `{kernel}`: `nvidia` range {min}..{below} admits no compute capability"
    )]
    EmptyRange {
        /// The kernel.
        kernel: String,
        /// The lowest capability.
        min: ComputeCapability,
        /// The first refused.
        below: ComputeCapability,
    },
}

/// Checks every rule a catalog keeps (see [`Catalog`]).
pub(super) fn check(kernels: &[Box<dyn Kernel>]) -> Result<(), CatalogError> {
    let names: Vec<&str> = kernels.iter().map(|k| k.spec().name.as_ref()).collect();
    for (index, kernel) in kernels.iter().enumerate() {
        let spec = kernel.spec();
        let name = spec.name.to_string();
        if names[..index].contains(&spec.name.as_ref()) {
            return Err(CatalogError::Duplicate { kernel: name });
        }
        for (field, empty) in [
            ("name", spec.name.is_empty()),
            ("bits", spec.bits.is_empty()),
            ("families", spec.families.is_empty()),
        ] {
            if empty {
                return Err(CatalogError::Empty {
                    kernel: name,
                    field,
                });
            }
        }
        if let Some(alternative) = &spec.alternative {
            if !names.contains(&alternative.as_ref()) {
                return Err(CatalogError::UnknownAlternative {
                    kernel: name,
                    alternative: alternative.to_string(),
                    suggestion: closest(alternative, names.iter().copied()),
                });
            }
        }
        for target in spec.amd_targets.iter().flatten() {
            let reason = match target.parse::<Arch>() {
                Ok(arch) if arch.vendor() != Vendor::Amd => {
                    Some("it is not an AMD target".to_string())
                }
                Ok(_) => None,
                Err(error) => Some(error.to_string()),
            };
            if let Some(reason) = reason {
                return Err(CatalogError::UnknownAmdTarget {
                    kernel: name,
                    target: target.to_string(),
                    reason,
                });
            }
        }
        if let Some(NvidiaRule::Range { min, below }) = &spec.nvidia {
            if min >= below {
                return Err(CatalogError::EmptyRange {
                    kernel: name,
                    min: *min,
                    below: *below,
                });
            }
        }
    }
    Ok(())
}

/// The longest name [`closest`] looks for a typo in: no name devsim knows is near this long, and the
/// search costs the product of the lengths compared.
pub const MAX_TYPO_CHARS: usize = 256;

/// The candidate closest to `input` by edit distance, if close enough to be a plausible typo.
///
/// Bounded by length: an input over [`MAX_TYPO_CHARS`] characters has no suggestion, and a candidate
/// whose length is ten times the input's or more (or a tenth or less) is skipped without being compared,
/// since it cannot score as a typo: a Jaro similarity is at most (shorter/longer + 2) / 3, and Jaro-Winkler
/// adds its prefix bonus only above 0.7, so a pair at ten times the length scores at most 0.7.
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let length = input.chars().take(MAX_TYPO_CHARS + 1).count();
    if length > MAX_TYPO_CHARS {
        return None;
    }
    candidates
        .into_iter()
        .filter(|c| {
            let other = c.chars().take(length.saturating_mul(10) + 1).count();
            other.min(length).saturating_mul(10) > other.max(length)
        })
        .map(|c| (strsim::jaro_winkler(input, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}
