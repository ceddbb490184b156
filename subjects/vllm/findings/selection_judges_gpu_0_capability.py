"""vLLM 0.33.0's mixed-precision kernel selection judges the capability of device 0, whatever the current
device: `choose_mp_linear_kernel` calls `current_platform.get_device_capability()` with its default
`device_id=0`. A worker placed on cuda:1 of a mixed-arch box gets the kernel for cuda:0's GPU.

Scenario: mixed-hosts/nvidia_mixed_arch_selection_per_gpu.toml (its `selected` expectation is at the contract
level, which binds devsim's catalog, so the corpus does not count it against vLLM). Rule: policy:per-target-arch
(arch rules are judged on each selected target's own GPU; AGENTS.md rule 5). Code:
vllm/model_executor/kernels/linear/__init__.py, `choose_mp_linear_kernel`.
"""

from _setup import A100, H200, simulate, verdict
from devsim_subject_kit import Host

recorder = simulate(Host(torch="cuda", gpus=(A100, H200), visible=(0, 1)))
import torch
from vllm.model_executor.kernels.linear import choose_mp_linear_kernel
from vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel import (
        MPLinearLayerConfig,
)
from vllm.platforms import current_platform
from vllm.scalar_type import scalar_types

torch.cuda.set_device(1)  # as vLLM's worker for local rank 1 does (an H200, capability 9.0)
config = MPLinearLayerConfig((4096, 4096), (4096, 4096), scalar_types.uint4b8, torch.float16, 128, False)
chosen = choose_mp_linear_kernel(config)
judged, own = current_platform.get_device_capability(), current_platform.get_device_capability(1)
print(f"current device {torch.cuda.current_device()} (H200, {own}): vLLM chose {chosen.__name__}, judging {judged}")
verdict(chosen.__name__ == "MarlinLinearKernel" and (judged.major, judged.minor) == (8, 0),
        "vLLM selected for cuda:1 from cuda:0's (A100) capability; on the H200 alone it selects Machete")
