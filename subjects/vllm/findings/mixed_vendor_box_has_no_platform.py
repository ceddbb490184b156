"""On a box with AMD and NVIDIA GPUs, vLLM 0.33.0 finds both platforms and starts on neither: it detects
platforms through each vendor's management library (amdsmi, NVML), never through the torch build.

Scenarios: mixed-hosts/cuda_build_on_mixed_vendor_box.toml (discover) and the mixed-vendor selection scenarios,
which are skipped with this reason. Rule: policy:vendor-from-build (the build's vendor decides what is usable;
AGENTS.md rule 4). Code: vllm/platforms/__init__.py, `resolve_current_platform_cls_qualname` raises when two
built-in plugins activate.
"""

from _setup import H200, R9700, platform, simulate, verdict
from devsim_subject_kit import Host

# A HIP build of torch with an R9700, on a box that also holds an H200 (its NVIDIA driver loaded).
simulate(Host(torch="hip", gpus=(R9700,), foreign_gpus=(H200,), visible=(0,)))
try:
    print(f"vLLM's platform: {type(platform()).__name__}")
    verdict(False, "vLLM picked one platform")
except RuntimeError as exc:
    print(f"vLLM: {exc}")
    verdict("Only one platform plugin" in str(exc), "vLLM cannot start on a HIP build in a mixed-vendor box")
