"""pytorch/ao `torchao/utils.py::is_Navi4` (open, a control): `if "gfx1200" or "gfx1201" in archName` is
always true (a non-empty string literal), so every ROCm GPU is called Navi4.

Observed: `is_Navi4()` on the host. Correct on an MI300X (gfx942): False; the bug: True.
"""

from __future__ import annotations


def observe() -> object:
    from torchao.utils import is_Navi4

    return is_Navi4()
