"""Comfy-Org/ComfyUI PR #9754: with the VAE on the CPU (`--cpu-vae`) on an AMD host, `vae_dtype` calls
`amd_min_version(device)` with the CPU device, which hands it to `torch.cuda.get_device_properties`: torch
refuses a CPU device there, and loading any VAE crashed.

Observed: ComfyUI's VAE dtype for its own VAE device with `--cpu-vae` set, for a VAE that works in bf16 or fp32
(`comfy.sd.VAE` passes its `working_dtypes`, `[torch.bfloat16, torch.float32]`). Correct: a dtype
(`torch.float32`: the CPU gets no bf16 from `should_use_bf16`); the bug: the GPU property query raises.
"""

from __future__ import annotations


def observe() -> object:
    import comfy.model_management as mm
    import torch
    from comfy.cli_args import args

    args.cpu_vae = True  # the user's --cpu-vae
    device = mm.vae_device()
    assert device.type == "cpu", f"--cpu-vae must put the VAE on the CPU, got {device}"
    return str(mm.vae_dtype(device, [torch.bfloat16, torch.float32]))
