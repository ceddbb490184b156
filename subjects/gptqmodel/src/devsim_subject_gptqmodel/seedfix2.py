"""A second seed-fix variant (DEVSIM_GPTQMODEL_OVERLAY=seedfix2): the seed's fixes, with other valid choices.

devsim must judge a fix by what the project decides, never by the shape of the one overlay it was shaped on
(seedfix.py). This variant is written to differ from that overlay where the seed leaves the choice open:

1. The EXL3 and FP4 wrappers declare their families as data only (`SUPPORTS_DEVICES`): no `validate_device`
   classmethod is added to them. Native EXL3 refuses a HIP build inside the module itself, at `post_init` and
   at its first forward, before its inner LinearEXL3 (whose module imports the exllamav3 extension) is built,
   reading the build from `torch.version.hip` and naming BACKEND.EXL3_TORCH in its own wording.
2. `normalize_device()` decides the HIP build from `torch.version.hip`, not from GPTQModel's `IS_ROCM` flag, and
   maps every CUDA spelling (DEVICE.CUDA, "cuda", "cuda:N", ordinals, torch.device("cuda", N)) to DEVICE.ROCM
   there by parsing it with torch, rather than by wrapping 7.7.0's function.
3. The kernel family (`importer._device_family`): 7.7.0's reading of a selector, then this normalize_device.

Every other fix is seedfix.py's unit of the same name (the seed's wording leaves no other choice open to the
adapter's observations). Units are named as seedfix.UNITS names them, so DEVSIM_GPTQMODEL_OVERLAY_REVERT works
the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import seedfix

NAME = "seedfix2"
_EXL3_TORCH_ADVICE = (
    "ExllamaV3Linear cannot run on a ROCm (HIP) build: the exllamav3 extension is not supported on ROCm. "
    "Load the model with backend=BACKEND.EXL3_TORCH (ExllamaV3TorchLinear) instead."
)


def _hip_build() -> bool:
    import torch

    return getattr(torch.version, "hip", None) is not None


_original_normalize: Callable[[Any], Any] | None = None  # 7.7.0's, kept for what this fix leaves alone


def normalize_device(type_value: Any) -> Any:
    """A public device value as its family, ROCm explicit on a HIP build (decided by torch's own build flag):
    a family enum as itself, an ordinal (an int or a string of digits) as the build's GPU family, a string or
    torch.device by its device type, the index left to the torch boundary."""
    import torch
    from gptqmodel.models._const import DEVICE

    assert _original_normalize is not None, "_unit_normalize_device installs normalize_device"
    if isinstance(type_value, DEVICE):
        family = type_value
    elif isinstance(type_value, int):
        family = DEVICE.ROCM if _hip_build() else _original_normalize(type_value)
    elif isinstance(type_value, torch.device):
        family = DEVICE(type_value.type)
    elif isinstance(type_value, str):
        text = type_value.strip()
        if text.isdigit():
            return normalize_device(int(text))
        family = DEVICE(text.split(":")[0].strip().lower())
    else:
        raise ValueError(f"Invalid device type_value type: {type(type_value)}")  # noqa: TRY004 (as 7.7.0 raises)
    return DEVICE.ROCM if family == DEVICE.CUDA and _hip_build() else family


def _unit_normalize_device() -> None:
    from gptqmodel.models import _const

    global _original_normalize
    _original_normalize = _const.normalize_device
    seedfix._rebind(_original_normalize, normalize_device)


def _unit_device_family() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.utils import importer

    original_family = importer._device_family

    def device_family(device: Any) -> Any:
        # 7.7.0's reading of a selector (torch judges its spelling), then this fix's normalize_device, which
        # keeps ROCm explicit for DEVICE.CUDA too
        family = device if isinstance(device, DEVICE) else original_family(device)
        return normalize_device(family)

    seedfix._rebind(original_family, device_family)


def _unit_exl3_native() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.exllamav3 import ExllamaV3Linear

    ExllamaV3Linear.SUPPORTS_DEVICES = [DEVICE.CUDA]
    original_post_init = ExllamaV3Linear.post_init
    original_forward = ExllamaV3Linear.forward

    def refuse_hip() -> None:
        if _hip_build():
            raise NotImplementedError(_EXL3_TORCH_ADVICE)

    def post_init(self: Any) -> None:
        refuse_hip()
        original_post_init(self)

    def forward(self: Any, x: Any) -> Any:
        if self._inner is None:  # the first forward builds the inner module, importing the extension
            refuse_hip()
        return original_forward(self, x)

    ExllamaV3Linear.post_init = post_init
    ExllamaV3Linear.forward = forward


def _unit_exl3_torch() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.exllamav3_torch import ExllamaV3TorchLinear

    ExllamaV3TorchLinear.SUPPORTS_DEVICES = [DEVICE.ALL]


def _unit_fp4() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.qlinear.fp4 import TorchFP4Linear

    TorchFP4Linear.SUPPORTS_DEVICES = [DEVICE.CPU, DEVICE.CUDA]


# seedfix's units, with this variant's own where it chooses differently (same names: the revert table's)
UNITS: dict[str, Callable[[], None]] = {
    **seedfix.UNITS,
    "normalize_device": _unit_normalize_device,
    "importer._device_family": _unit_device_family,
    "ExllamaV3Linear.validate_device": _unit_exl3_native,
    "ExllamaV3TorchLinear.validate_device": _unit_exl3_torch,
    "TorchFP4Linear.validate_device": _unit_fp4,
}
