"""vLLM 0.33.0 reads the ROCm arch once, at import, from amdsmi's first handle (physical GPU 0), and answers it
for every device, visible or not.

Scenarios: mixed-hosts/amd_mixed_discover_lists_each_arch.toml, visible-devices/rocr_then_hip_mask_compose.toml,
visible-devices/hip_mask_as_wide_as_rocr_reorders.toml. Rule: policy:vendor-from-build (each usable GPU's own
arch; AGENTS.md rule 4) and policy:per-target-arch (rule 5). Code: vllm/platforms/rocm.py, `_GCN_ARCH =
_get_gcn_arch()` from `amdsmi_get_gpu_asic_info(handles[0])`; `RocmPlatform.get_device_capability(device_id)`
ignores `device_id`.
"""

from _setup import MI300X, R9700, platform, simulate, verdict
from devsim_subject_kit import Host

# An MI300X (gfx942) and an R9700 (gfx1201); HIP_VISIBLE_DEVICES=1 leaves only the R9700, as cuda:0.
simulate(Host(torch="hip", gpus=(MI300X, R9700), env=(("HIP_VISIBLE_DEVICES", "1"),), visible=(1,)))
cap = platform().get_device_capability(0)
print(f"vLLM's platform: {type(platform()).__name__}; capability of cuda:0 (an R9700, gfx1201 = 12.0): {cap}")
verdict((cap.major, cap.minor) == (9, 4), "vLLM answers the hidden MI300X's gfx942 (9.4) for the visible gfx1201")
