"""Shared by the reproductions: a simulated host below and above torch, as the subject builds it.

torch is patched by the kit's SimulatedTorch; NVML (vLLM's vendored pynvml) and amdsmi are the kit's fakes;
vLLM's CUDA platform module gets devsim's fake libcuda.so.1 (scripts/build-fake-drivers). Nothing of devsim's
judging runs: each script prints what vLLM does and exits 1 when the finding shows."""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

from devsim_subject_kit import Host, Recorder
from devsim_subject_kit.host import Gpu
from devsim_subject_kit.lowlevel import Amdsmi, Nvml
from devsim_subject_kit.simtorch import SimulatedTorch

REPO = Path(__file__).resolve().parents[3]
MI300X = Gpu("gfx942:sramecc+:xnack-", "AMD Instinct MI300X", uuid="GPU-5f0b1e2d7c3a4b69")
R9700 = Gpu("gfx1201", "AMD Radeon AI PRO R9700", uuid="GPU-8d2e4a6b1c9f0e37")
A100 = Gpu("sm_80", "NVIDIA A100-SXM4-80GB", 166912, "GPU-1b2c3d4e-0000-4000-8000-00000000a100")
H200 = Gpu("sm_90", "NVIDIA H200", 232448, "GPU-9e8d7c6b-0000-4000-8000-00000000h200")


def simulate(host: Host) -> Recorder:
    """Make this process `host` for vLLM: call before importing vLLM."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    library = os.environ.get("DEVSIM_FAKE_LIBCUDA") or str(REPO / "target/fake-drivers/cuda/libcuda.so.1")
    ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
    recorder = Recorder()
    torch_host = SimulatedTorch(recorder).install(host)
    Amdsmi(lambda: torch_host.host, recorder).install()
    from vllm.third_party import pynvml

    Nvml(lambda: torch_host.host, recorder).install(pynvml)
    return recorder


def platform() -> Any:
    """vLLM's current_platform, detected on the simulated host."""
    from vllm.platforms import current_platform

    return current_platform


def verdict(shown: bool, what: str) -> None:
    """Print the outcome and exit: 1 when the finding shows (the bug is there), 0 when it does not."""
    print(("FINDING: " if shown else "not shown: ") + what)
    sys.exit(1 if shown else 0)
