"""vLLM's declared kernels, read from vLLM itself: `_POSSIBLE_KERNELS`, the per-platform lists that
`choose_mp_linear_kernel` picks from, say which families each mixed-precision linear kernel serves.

The map from vLLM's kernel classes to devsim catalog names is this adapter's data (`KERNELS`); the families are
never typed here. vLLM classes with no devsim counterpart are listed in `UNMAPPED`, each with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from devsim_subject_kit import Unsupported

#: PlatformEnum member names -> devsim families.
FAMILY_OF_PLATFORM_ENUM = {"CUDA": "cuda", "ROCM": "rocm", "XPU": "xpu", "CPU": "cpu"}


@dataclass(frozen=True)
class Kernel:
    """A devsim catalog kernel and the vLLM class and quantization method that implement it."""

    name: str
    vllm_class: str
    method: str


#: devsim name -> vLLM class and method (AWQ is the same classes with zero points).
KERNELS = (
    Kernel("gptq_marlin", "MarlinLinearKernel", "gptq"),
    Kernel("awq_marlin", "MarlinLinearKernel", "awq"),
    Kernel("gptq_machete", "MacheteLinearKernel", "gptq"),
    Kernel("awq_machete", "MacheteLinearKernel", "awq"),
    Kernel("gptq_exllama_v2", "ExllamaLinearKernel", "gptq"),
    Kernel("gptq_triton", "TritonW4A16LinearKernel", "gptq"),
    Kernel("awq_gemm_triton", "TritonW4A16LinearKernel", "awq"),
)

#: vLLM's mixed-precision kernels devsim's catalog has no name for.
UNMAPPED = {
    "CutlassW4A8LinearKernel": "4-bit weights with FP8 activations (W4A8); devsim's w4a_fp8 is GPTQModel's own",
    "ConchLinearKernel": "the conch-triton-kernels package's GEMM; no devsim counterpart",
    "HummingLinearKernel": "humming-kernels' GEMM; no devsim counterpart",
    "RDNA3W4A16LinearKernel": "an RDNA3-only W4A16 kernel; no devsim counterpart",
    "RDNAHybridW4A16LinearKernel": "an RDNA hybrid W4A16 kernel; no devsim counterpart",
    "XPUW4A8IntLinearKernel": "Intel XPU W4A8; no devsim counterpart",
    "XPUwNa16LinearKernel": "Intel XPU WNA16; no devsim counterpart",
    "Dynamic4bitLinearKernel": "a CPU dynamic 4-bit kernel; no devsim counterpart",
    "ZentorchWNA16LinearKernel": "AMD Zen CPU (zentorch); no devsim counterpart",
    "CPUWNA16LinearKernel": "vLLM's CPU WNA16 kernel; no devsim counterpart",
}


@dataclass(frozen=True)
class Declaration:
    """Which families vLLM lists each kernel class for, read from `_POSSIBLE_KERNELS`, and each class's arch rules
    as vLLM declares them (`arch_of_class`, the handshake's `arch`)."""

    families_of_class: dict[str, tuple[str, ...]]
    source: str
    arch_of_class: dict[str, dict[str, Any]] = field(default_factory=dict)

    def kernel(self, name: str) -> Kernel | None:
        """The mapped kernel named `name` in devsim's catalog."""
        return next((k for k in KERNELS if k.name == name), None)

    def devsim_name(self, vllm_class: str, method: str) -> str | None:
        """The devsim name of `vllm_class` for `method` (None when devsim has none)."""
        return next((k.name for k in KERNELS if k.vllm_class == vllm_class and k.method == method), None)

    def handshake_kernels(self) -> list[dict[str, Any]]:
        """The handshake's `kernels`: each mapped kernel with the families vLLM lists its class for."""
        out = []
        for k in KERNELS:
            kernel: dict[str, Any] = {"name": k.name, "families": list(self.families_of_class.get(k.vllm_class, ())),
                                      "methods": [k.method], "source": f"{self.source}: {k.vllm_class}"}
            arch = self.arch_of_class.get(k.vllm_class)
            if arch is not None:
                kernel["arch"] = dict(arch)
            out.append(kernel)
        return out

    @staticmethod
    def all_classes(selection: Any) -> list[str]:
        """Every kernel class any platform lists (what `VLLM_DISABLED_KERNELS` turns off by name)."""
        return sorted({cls.__name__ for kernels in selection._POSSIBLE_KERNELS.values() for cls in kernels})

    @staticmethod
    def platform_kernels(selection: Any, platform: Any) -> list[str]:
        """The kernel classes `choose_mp_linear_kernel` considers on `platform`, in vLLM's order."""
        return [cls.__name__ for cls in selection._POSSIBLE_KERNELS.get(platform._enum, [])]

    @staticmethod
    def config(selection: Any, method: str, bits: int) -> Any:
        """A linear layer of `method` with `bits`-bit weights, as vLLM's GPTQ and AWQ loaders describe it:
        GPTQ symmetric `uint{b}b{2^(b-1)}`, AWQ `uint{b}` with zero points; fp16, group size 128, 4096x4096."""
        import torch
        from vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel import (
            MPLinearLayerConfig,
        )
        from vllm.scalar_type import scalar_types

        if method not in ("gptq", "awq"):
            raise Unsupported(f"vLLM's mixed-precision selection has no method {method!r} (gptq and awq here)")
        type_name = f"uint{bits}b{2 ** (bits - 1)}" if method == "gptq" else f"uint{bits}"
        weight_type = getattr(scalar_types, type_name, None)
        if weight_type is None:
            raise Unsupported(f"vLLM has no {bits}-bit {method} weight type ({type_name})")
        return MPLinearLayerConfig(full_weight_shape=(4096, 4096), partition_weight_shape=(4096, 4096),
                                   weight_type=weight_type, act_type=torch.float16, group_size=128,
                                   zero_points=method == "awq")


def arch_rules(cls: Any) -> dict[str, Any] | None:
    """A kernel class's arch rules as vLLM declares them: `get_min_capability()`, the least compute capability
    `choose_mp_linear_kernel` admits it for (major * 10 + minor, as devsim's `min_capability`). vLLM compares it
    with the capability it reads on every platform; devsim's `min_capability` binds NVIDIA GPUs only, so on AMD
    this declares nothing. None where vLLM declares no least capability (0, or below any GPU's)."""
    least = int(cls.get_min_capability())
    if least < 10:  # below sm_10: every GPU is admitted, so vLLM declares no arch rule
        return None
    method = getattr(cls.get_min_capability, "__func__", cls.get_min_capability)
    owner = next((base for base in cls.__mro__ if "get_min_capability" in vars(base)), cls)
    where = f"{owner.__module__}:{method.__qualname__}"
    return {"min_capability": least, "source": where}


def read(selection: Any) -> Declaration:
    """The families of each kernel class, from the imported selection module's `_POSSIBLE_KERNELS`, and the arch
    rules each class declares (`arch_rules`)."""
    families: dict[str, set[str]] = {}
    arch: dict[str, dict[str, Any]] = {}
    for platform, kernels in selection._POSSIBLE_KERNELS.items():
        family = FAMILY_OF_PLATFORM_ENUM.get(platform.name)
        for cls in kernels:
            found = families.setdefault(cls.__name__, set())
            if family is not None:
                found.add(family)
            rules = arch_rules(cls)
            if rules is not None:
                arch[cls.__name__] = rules
    return Declaration(
        families_of_class={name: tuple(sorted(f)) for name, f in families.items()},
        source=f"{selection.__name__}._POSSIBLE_KERNELS",
        arch_of_class=arch,
    )
