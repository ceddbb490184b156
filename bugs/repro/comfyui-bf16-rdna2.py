"""Comfy-Org/ComfyUI commit e2919d38: `model_management.should_use_bf16` chose bf16 on any GPU whose
`get_device_properties().major >= 8`, an NVIDIA compute-capability rule; on ROCm `major` is the gfx major
(10 for gfx1030), so RDNA2 cards, which lack bf16 support, were given bf16.

Observed: `should_use_bf16(get_torch_device())`, ComfyUI's own load device. Correct on a gfx1030: False; the
bug: True.
"""

from __future__ import annotations


def observe() -> object:
    import comfy.model_management as mm

    return mm.should_use_bf16(mm.get_torch_device())
