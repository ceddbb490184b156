"""unsloth-zoo commit 1b90f79b: a CPU weight merged on cuda:0, not the current device.

`_merge_lora` (saving_utils.py, the GGUF/safetensors merge path) moves a base weight and its LoRA factors to the
accelerator before `addmm_`. A weight read from safetensors sits on the CPU (`W.device.index is None`); the buggy
version then picks ordinal 0 (`index ... else 0`), so a process whose current device is cuda:1 merges on cuda:0.
The fix moves to the indexless family device (`torch.device("cuda")`), i.e. the current device.

observe() makes cuda:1 current on a two-GPU host, merges a small CPU weight with CPU LoRA factors through the
project's `_merge_lora`, restores the current device and returns the device of the merged weight: `cuda:0` is
the misbehaviour, `cuda:1` the fix.
"""

from __future__ import annotations

from types import SimpleNamespace


def observe() -> object:
    import torch
    from unsloth_zoo.saving_utils import _merge_lora

    previous = torch.cuda.current_device()
    torch.cuda.set_device(1)
    try:
        weight = torch.zeros(4, 8)
        stats = SimpleNamespace(lora_A=torch.ones(2, 8), lora_B=torch.ones(4, 2), alpha=0.5)
        merged = _merge_lora(weight, stats, "model.layers.0.mlp.up_proj.weight")
    finally:
        torch.cuda.set_device(previous)
    return merged.device
