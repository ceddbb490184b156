"""vLLM 0.33.0 turns each CUDA_VISIBLE_DEVICES entry into a physical index with NVML, which finds whole UUIDs
only; torch (and the CUDA runtime) accept a unique UUID prefix. So a mask torch runs under makes vLLM's
capability query raise.

Scenario: visible-devices/range_looking_mask_keeps_first_ordinal.toml and the UUID-prefix live scenarios (set
aside: discovery raises before any arch is reported). Rule: policy:visible-devices (torch's device count and
ordinals follow the masks; AGENTS.md rule 4). Code: vllm/platforms/cuda.py,
`NvmlCudaPlatform.device_control_id_to_physical_device_id` (`nvmlDeviceGetHandleByUUID`).
"""

from _setup import A100, H200, platform, simulate, verdict
from devsim_subject_kit import Host

prefix = H200.uuid[:12]  # unique on this box: torch's cuda:0 is the H200
simulate(Host(torch="cuda", gpus=(A100, H200), env=(("CUDA_VISIBLE_DEVICES", prefix),), visible=(1,)))
try:
    print(f"CUDA_VISIBLE_DEVICES={prefix}: vLLM's capability of cuda:0: {platform().get_device_capability(0)}")
    verdict(False, "vLLM read the capability")
except Exception as exc:  # noqa: BLE001 - whatever vLLM raises is what is shown
    print(f"vLLM raised {type(exc).__name__}: {exc}")
    verdict(type(exc).__name__ == "NVMLError_NotFound", "vLLM cannot read a device torch sees")
