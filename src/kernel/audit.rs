//! The ROCm audit: one recorded decision per registered kernel.
//!
//! Every kernel must appear here; the inventory test fails, naming the kernel, when one is missing or
//! when a decision disagrees with the kernel's contract.

use crate::kernel::KernelSpec;
use crate::vocab::Family;

/// What the audit decided about a kernel on ROCm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RocmDecision {
    /// Runs on AMD GPUs (declares ROCM or ALL, no AMD arch restriction).
    Admitted(&'static str),
    /// Never runs on AMD GPUs, for the reason given.
    Refused(&'static str),
    /// Runs on the listed AMD targets only.
    RestrictedByArch(&'static str),
}

use RocmDecision::{Admitted, Refused, RestrictedByArch};

/// The audited decision for each kernel of the reference catalog.
pub const ROCM_AUDIT: &[(&str, RocmDecision)] = &[
    (
        "gptq_torch",
        Admitted("portable torch kernel, declares ALL"),
    ),
    ("gptq_torch_fused", Refused("CPU/XPU-specific fused path")),
    ("gptq_torch_aten", Refused("CPU-only aten path")),
    ("gptq_torch_int8", Refused("CPU-only int8 path")),
    (
        "gptq_triton",
        Refused("ROCm path unvalidated; using Triton is no evidence of ROCm support"),
    ),
    ("gptq_exllama_v2", Refused("wrong results on ROCm")),
    ("gptq_marlin", Refused("NVIDIA-only CUDA extension")),
    ("gptq_machete", Refused("Hopper-only CUDA extension")),
    ("gptq_swordfish", Refused("Blackwell-only CUDA extension")),
    ("gptq_bitblas", Refused("NVIDIA-only BitBLAS")),
    (
        "gptq_allspark",
        RestrictedByArch("RDNA4 only: gfx1200, gfx1201, judged per target"),
    ),
    ("awq_torch", Admitted("portable torch kernel, declares ALL")),
    ("awq_torch_fused", Refused("CPU/XPU-specific fused path")),
    ("awq_torch_aten", Refused("CPU-only aten path")),
    ("awq_torch_int8", Refused("CPU-only int8 path")),
    ("awq_gemm", Refused("native AWQ CUDA extension")),
    ("awq_gemv", Refused("native AWQ CUDA extension")),
    ("awq_gemv_fast", Refused("native AWQ CUDA extension")),
    ("awq_llm", Refused("native AWQ CUDA extension")),
    ("awq_gemm_triton", Admitted("declares ROCM explicitly")),
    ("awq_gemv_triton", Admitted("declares ROCM explicitly")),
    ("awq_marlin", Refused("NVIDIA-only CUDA extension")),
    ("awq_machete", Refused("Hopper-only CUDA extension")),
    ("awq_swordfish", Refused("Blackwell-only CUDA extension")),
    ("awq_bitblas", Refused("NVIDIA-only BitBLAS")),
    ("awq_exllama_v2", Refused("NVIDIA-only CUDA extension")),
    (
        "awq_allspark",
        RestrictedByArch("RDNA4 only: gfx1200, gfx1201, judged per target"),
    ),
    ("qqq", Refused("NVIDIA-only CUDA extension")),
    ("qqq_torch", Admitted("portable torch kernel, declares ALL")),
    ("paroquant", Admitted("dense torch path, declares ALL")),
    ("paroquant_triton", Admitted("declares ROCM explicitly")),
    ("fp8_torch", Admitted("declares ROCM explicitly")),
    ("w4a_fp8", Refused("NVIDIA-only")),
    (
        "w4a_nvfp4",
        Refused("NVIDIA-only (NVFP4 is Blackwell hardware)"),
    ),
    (
        "bitsandbytes",
        Admitted("existing 4/8-bit paths run on ROCm; was hidden before the audit"),
    ),
    (
        "gguf_torch",
        Admitted("portable torch kernel, declares ALL"),
    ),
    ("gguf_triton", Admitted("declares ROCM explicitly")),
    ("gguf_cpp_cpu", Refused("CPU-only ggml path")),
    ("gguf_cpp_cuda", Refused("NVIDIA-only ggml CUDA path")),
    ("vptq_cuda", Refused("NVIDIA-only CUDA extension")),
    ("mlx_gptq", Refused("Apple MLX only; never placed on ROCm")),
    ("mlx_awq", Refused("Apple MLX only; never placed on ROCm")),
    (
        "torch_quant_embedding",
        Admitted("portable embedding kernel, declares ALL"),
    ),
    (
        "exl3_exllama_v3",
        Refused("CUDA-only extension; HIP requests refused before loading it, use exl3_torch"),
    ),
    ("exl3_torch", Admitted("portable EXL3, declares ALL")),
    (
        "fp4_source",
        Refused("declares CPU and CUDA, consistent with its dtype gate"),
    ),
];

/// The audit entry for `name`.
pub fn decision(name: &str) -> Option<RocmDecision> {
    ROCM_AUDIT
        .iter()
        .find(|(kernel, _)| *kernel == name)
        .map(|(_, decision)| *decision)
}

/// Why a decision disagrees with a contract, if it does.
pub fn contradiction(spec: &KernelSpec, decision: RocmDecision) -> Option<String> {
    let admits = spec.declares(Family::Rocm);
    let restricted = spec.amd_targets.is_some();
    match decision {
        Admitted(_) if !admits => {
            Some("audited as admitted but does not declare rocm or all".into())
        }
        Admitted(_) if restricted => Some("audited as admitted but restricts AMD archs".into()),
        Refused(_) if admits => Some("audited as refused but declares rocm or all".into()),
        RestrictedByArch(_) if !(admits && restricted) => {
            Some("audited as arch-restricted but declares no AMD target list".into())
        }
        _ => None,
    }
}
