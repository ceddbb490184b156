"""pytorch/ao `torchao/utils.py::is_MI300` (open, a control): it reads `get_device_properties(0)` for the
whole box, so on a mixed AMD box the current GPU's float8 flavour is decided by GPU 0.

Observed: whether torchao's float8 default (`torchao.float8.config.e4m3_dtype`, chosen at import through
`is_MI300()`) is the fnuz variant, in a process whose current GPU is an R9700 (gfx1201) next to an MI300X
(gfx942) as GPU 0. torchao's own docstring (`Float8TypeConfig`): MI300 uses the fnuz variants, MI350/Navi4 the
OCP ones. Correct for the current gfx1201: False (e4m3fn); the bug: True (fnuz, GPU 0's choice).
"""

from __future__ import annotations


def observe() -> object:
    import torch
    from torchao.float8.config import e4m3_dtype

    assert torch.cuda.current_device() == 1, "the host must make GPU 1 (the gfx1201) current"
    return e4m3_dtype == torch.float8_e4m3fnuz
