"""pytorch/ao PR #2225: float8 quantization configs defaulted to the OCP dtype `torch.float8_e4m3fn` on every
GPU, while an MI300 (gfx942) computes float8 in the fnuz variants (`torch.float8_e4m3fnuz`).

Observed: whether both default dtypes of `Float8DynamicActivationFloat8WeightConfig()` (built with no
arguments, as a user does) are `torch.float8_e4m3fnuz` on the host. Correct on an MI300: True; the bug: False
(they stay `torch.float8_e4m3fn`).
"""

from __future__ import annotations


def observe() -> object:
    import torch
    from torchao.quantization.quant_api import Float8DynamicActivationFloat8WeightConfig

    config = Float8DynamicActivationFloat8WeightConfig()
    return config.activation_dtype == torch.float8_e4m3fnuz and config.weight_dtype == torch.float8_e4m3fnuz
