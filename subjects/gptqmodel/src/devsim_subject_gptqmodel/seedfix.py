"""The seed-fix overlay: GPTQModel 7.7.0 with the fixes the seed pull request describes (DEVSIM_GPTQMODEL_OVERLAY=seedfix).

The seed (/work/shared/seed, "keep ROCm explicit end-to-end") describes what its fix changes; this module
replaces the matching 7.7.0 functions with versions written from that description, never from GPTQModel code of
a later release. `Subject.load()` calls `apply()` after GPTQModel is imported and before the subject's own hooks
wrap anything, so the subject observes the overlay exactly as it observes GPTQModel (subjects/gptqmodel-seedfix.toml
runs it as its own subject). What it changes, by the seed's wording:

1. `normalize_device()` maps cuda / cuda:N / integer ordinals (an int, or a string of decimal digits such as
   "0") / torch.device("cuda", N) / DEVICE.CUDA to DEVICE.ROCM on a HIP build; DEVICE.ROCM stays explicit (never
   stored as CUDA).
2. `as_torch_device()` (new, in gptqmodel.models._const): every public device value is normalized first (the
   overlay's normalize_device), then resolved at the torch boundary: family enums and indexless spellings
   indexless (DEVICE.ROCM / "ROCM" / "cuda" -> torch.device("cuda"), so a family move lands on the current
   device), an explicit ordinal kept as written ("ROCM:0" -> cuda:0, 1 -> cuda:1; torch judges its spelling, so
   "cuda:x" is torch's own error), a torch.device as it is; DEVICE.to_torch_device() keeps its 7.7.0 behaviour.
3. Kernel family normalization (`importer._device_family` and BaseQuantLinear.validate_device): torch.device
   ("cuda:N"), DEVICE.CUDA and string selectors become DEVICE.ROCM on HIP, so CUDA-only kernels (TritonV2,
   W4A-FP8, W4A-NVFP4, ...) fail the family gate on ROCm.
4. No NVIDIA compute-capability probe for an AMD request, wherever GPTQModel reads one for a device:
   `importer._device_capability` (the validation cache key) answers None; the forward-time readers the
   simulated warmups reach leave it out too: `quantization.dtype._advertised_linear_dtypes_for_device` gives
   the portable dtypes it gives every non-CUDA device, and the AWQ Triton scheduler's device identity
   (`_device_identity_cached`) holds no capability.
5. DeviceThreadPool accepts DEVICE enums: DEVICE.ROCM (and DEVICE.CUDA) -> the runtime's cuda family, covering
   every GPU; DEVICE.ALL -> every device.
6. BitsAndBytesLinear declares DEVICE.ROCM.
7. EXL3 / FP4 wrappers get explicit declarations (SUPPORTS_DEVICES and a validate_device classmethod): native
   EXL3 (ExllamaV3Linear) NVIDIA-only, its gate run where its inner module is first built (post_init or the first
   forward), before the extension loads, refusing HIP and naming EXL3_TORCH; portable EXL3
   (ExllamaV3TorchLinear) DEVICE.ALL; source FP4 (TorchFP4Linear) CPU / NVIDIA.
8. `auto_select_device()` retains DEVICE.ROCM on ROCm: with no device asked for, a HIP build's default is
   DEVICE.ROCM where 7.7.0 picks DEVICE.CUDA.

Each replacement is one unit (`UNITS`); DEVSIM_GPTQMODEL_OVERLAY_REVERT=<unit> leaves exactly that one at 7.7.0,
so tools/reverts.py can show which scenarios catch each fix on its own.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any

NAME = "seedfix"
ENV = "DEVSIM_GPTQMODEL_OVERLAY"
REVERT_ENV = "DEVSIM_GPTQMODEL_OVERLAY_REVERT"


# The overlays: this one, and a second variant of the same fixes with other valid choices (seedfix2.py)
VARIANTS = (NAME, "seedfix2")


def variant() -> str | None:
    """The overlay the environment asks for, or None; another value is an error (a typo must not pass as 7.7.0)."""
    value = os.environ.get(ENV, "")
    if value in ("", "none"):
        reverted()  # a revert without the overlay is refused too
        return None
    if value not in VARIANTS:
        raise RuntimeError(f"{ENV}={value!r}: the overlays are {', '.join(VARIANTS)}")
    return value


def requested() -> bool:
    """Whether the environment asks for an overlay (`variant`)."""
    return variant() is not None


def units() -> dict[str, Callable[[], None]]:
    """The units of the overlay asked for: this module's, or the second variant's (same names)."""
    if variant() == "seedfix2":
        from . import seedfix2

        return seedfix2.UNITS
    return UNITS


def _is_rocm() -> bool:
    """GPTQModel's own HIP flag, read at call time (the subject re-sets it for each simulated host)."""
    from gptqmodel.utils import rocm

    return bool(rocm.IS_ROCM)


def _rebind(original: Any, replacement: Any) -> None:
    """Replace `original` wherever a GPTQModel module bound it by name (`from ._const import normalize_device`)."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("gptqmodel") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, replacement)


def _family(device: Any) -> Any:
    """The kernel family of a selector: ROCm explicit on HIP for every spelling torch's cuda namespace allows."""
    import torch
    from gptqmodel.models._const import DEVICE

    if isinstance(device, DEVICE):
        return DEVICE.ROCM if device == DEVICE.CUDA and _is_rocm() else device
    if isinstance(device, str):
        text = device.strip().lower()
        if text == DEVICE.ROCM.value:
            return DEVICE.ROCM
        device = torch.device(text)
    if isinstance(device, int) and not isinstance(device, bool):
        device = torch.device("cuda", device)
    device = torch.device(device)
    if device.type == "cuda" and _is_rocm():
        return DEVICE.ROCM
    try:
        return DEVICE(device.type)
    except ValueError as exc:
        raise ValueError(f"Unsupported selector device family `{device.type}`") from exc


_ORDINAL = re.compile(r"[0-9]+")  # an ordinal written as a string ("0"); a sign is no ordinal (torch refuses it)
_original_normalize: Callable[[Any], Any] | None = None  # 7.7.0's normalize_device, set by apply()


def normalize_device(type_value: Any) -> Any:
    """7.7.0's normalize_device with ROCm kept explicit: cuda / cuda:N / ordinals / torch.device("cuda", N) /
    DEVICE.CUDA -> DEVICE.ROCM on a HIP build. An ordinal written as a string is read as the ordinal."""
    from gptqmodel.models._const import DEVICE

    assert _original_normalize is not None, "seedfix.apply() installs normalize_device"
    if isinstance(type_value, str) and not isinstance(type_value, DEVICE) and _ORDINAL.fullmatch(type_value.strip()):
        type_value = int(type_value.strip())
    family = _original_normalize(type_value)
    if family == DEVICE.CUDA and _is_rocm():
        return DEVICE.ROCM
    return family


def as_torch_device(device: Any) -> Any:
    """Resolve a target to a torch.device at an execution boundary. The value is normalized first (the family
    normalize_device gives it); a family target resolves indexless (the current device of its runtime), an
    explicit ordinal is kept as written."""
    import torch
    from gptqmodel.models import _const
    from gptqmodel.models._const import DEVICE

    if isinstance(device, torch.device):
        return device
    family = _const.normalize_device(device)  # the installed one: 7.7.0's when that unit is reverted
    if family == DEVICE.ALL:
        raise ValueError("'all' is not a valid concrete device")
    runtime = family.type  # DEVICE.ROCM.type is "cuda"
    if isinstance(device, DEVICE):
        return torch.device(runtime)  # no index: the current device
    if isinstance(device, int) and not isinstance(device, bool):
        return torch.device(runtime, device)
    text = str(device).strip()
    if _ORDINAL.fullmatch(text):
        return torch.device(runtime, int(text))
    _, colon, index = text.partition(":")
    if not colon:
        return torch.device(runtime)
    return torch.device(f"{runtime}:{index.strip()}")  # torch judges the ordinal's spelling ("cuda:x", "cuda:+1")


def _unit_normalize_device() -> None:
    _rebind(_original_normalize, normalize_device)


def _unit_as_torch_device() -> None:
    from gptqmodel.models import _const

    _const.as_torch_device = as_torch_device  # type: ignore[attr-defined]


def _unit_device_family() -> None:
    from gptqmodel.utils import importer

    original_family = importer._device_family

    def device_family(device: Any) -> Any:
        return _family(device)

    _rebind(original_family, device_family)


def _unit_validate_device() -> None:
    from gptqmodel.nn_modules.qlinear import BaseQuantLinear

    def validate_device(cls: Any, device: Any) -> None:
        try:
            family = _family(device)
        except (RuntimeError, ValueError):
            family = device  # not a selector family (e.g. meta): the declaration check below refuses it
        if family not in cls.SUPPORTS_DEVICES:
            raise NotImplementedError(f"{cls} only supports `{cls.SUPPORTS_DEVICES}`: actual device = `{device}`")

    BaseQuantLinear.validate_device = classmethod(validate_device)  # type: ignore[assignment]


def _unit_device_capability() -> None:
    from gptqmodel.utils import importer

    original_capability = importer._device_capability

    def device_capability(device: Any) -> Any:
        if _is_rocm():
            return None  # an AMD request: no NVIDIA compute-capability query
        return original_capability(device)

    _rebind(original_capability, device_capability)


def _unit_advertised_dtypes() -> None:
    """Item 4 for a reader a forward reaches: the dtypes advertised for an AMD request, without a capability."""
    import torch
    from gptqmodel.quantization import dtype

    original_advertised = dtype._advertised_linear_dtypes_for_device

    def advertised_linear_dtypes_for_device(device: Any) -> Any:
        if _is_rocm():
            return None, frozenset({torch.float16, torch.float32, torch.bfloat16})
        return original_advertised(device)

    _rebind(original_advertised, advertised_linear_dtypes_for_device)


def _unit_device_identity() -> None:
    """Item 4 for the AWQ Triton scheduler a forward reaches: its device identity holds no capability on AMD."""
    from functools import lru_cache

    import torch
    from gptqmodel.quantization.awq.modules.triton import scheduler

    original_identity = scheduler._device_identity_cached

    @lru_cache(maxsize=16)
    def device_identity_cached(device_type: str, index: int | None) -> tuple[Any, ...]:
        if not _is_rocm():
            return original_identity.__wrapped__(device_type, index)  # cached here, cleared with this cache
        name = sm_count = total_memory = None
        if device_type == "cuda" and torch.cuda.is_available():
            # as 7.7.0's own: "a mocked or unavailable runtime is unverified by design"
            with contextlib.suppress(Exception):
                name = torch.cuda.get_device_name(index)
                props = torch.cuda.get_device_properties(index)
                sm_count = int(getattr(props, "multi_processor_count", 0))
                total_memory = int(getattr(props, "total_memory", 0))
        return (device_type, index, name, None, sm_count, total_memory)

    _rebind(original_identity, device_identity_cached)


def _runtime_family(value: Any) -> Any:
    """A DEVICE enum as DeviceThreadPool's keys know it: DEVICE.ROCM / DEVICE.CUDA -> "cuda", DEVICE.ALL -> "all"."""
    from gptqmodel.models._const import DEVICE

    if isinstance(value, DEVICE):
        return "all" if value == DEVICE.ALL else value.type  # DEVICE.ROCM.type is "cuda"
    return value


def _unit_pool_read_lock() -> None:
    from gptqmodel.utils.threadx import DeviceThreadPool

    original_read = DeviceThreadPool.read_lock

    def read_lock(self: Any, device: Any) -> Any:
        return original_read(self, _runtime_family(device))

    DeviceThreadPool.read_lock = read_lock  # type: ignore[method-assign]


def _unit_pool_scope() -> None:
    from gptqmodel.utils.threadx import DeviceThreadPool

    original_scope = DeviceThreadPool._normalize_scope_to_keys

    def normalize_scope_to_keys(self: Any, scope: Any) -> Any:
        return original_scope(self, [_runtime_family(s) for s in scope])

    DeviceThreadPool._normalize_scope_to_keys = normalize_scope_to_keys  # type: ignore[method-assign]


def _unit_bitsandbytes() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.qlinear.bitsandbytes import BitsAndBytesLinear

    if DEVICE.ROCM not in BitsAndBytesLinear.SUPPORTS_DEVICES:
        BitsAndBytesLinear.SUPPORTS_DEVICES = [*BitsAndBytesLinear.SUPPORTS_DEVICES, DEVICE.ROCM]


def _family_gate(cls: Any, device: Any) -> None:
    """An explicit declaration's gate: the selector's family (ROCm explicit on HIP) against SUPPORTS_DEVICES."""
    from gptqmodel.models._const import DEVICE

    family = _family(device)
    if DEVICE.ALL in cls.SUPPORTS_DEVICES or family in cls.SUPPORTS_DEVICES:
        return
    raise NotImplementedError(f"{cls} only supports `{cls.SUPPORTS_DEVICES}`: actual device = `{device}`")


def _declare(cls: Any, devices: list[Any], gate: Callable[[Any, Any], None]) -> None:
    cls.SUPPORTS_DEVICES = devices
    cls.validate_device = classmethod(gate)


def _unit_exl3_native() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.exllamav3 import ExllamaV3Linear

    def exl3_native_gate(cls: Any, device: Any) -> None:
        # before any extension import: the native EXL3 kernels are CUDA (NVIDIA) only
        if _family(device) == DEVICE.ROCM:
            raise NotImplementedError(
                "Native EXL3 (ExllamaV3Linear) is not supported on ROCm: it declares NVIDIA CUDA only. "
                "Use BACKEND.EXL3_TORCH (ExllamaV3TorchLinear), the portable EXL3 kernel."
            )
        _family_gate(cls, device)

    _declare(ExllamaV3Linear, [DEVICE.CUDA], exl3_native_gate)
    original_ensure_inner = ExllamaV3Linear._ensure_inner

    def ensure_inner(self: Any) -> Any:
        # the first forward (and post_init) builds the inner LinearEXL3, whose module imports the extension:
        # the declaration's gate runs first, on the device the module's tensors are on
        trellis = getattr(self, "trellis", None)
        if trellis is not None and trellis.device.type != "meta":
            type(self).validate_device(trellis.device)
        return original_ensure_inner(self)

    ExllamaV3Linear._ensure_inner = ensure_inner


def _unit_exl3_torch() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.exllamav3_torch import ExllamaV3TorchLinear

    _declare(ExllamaV3TorchLinear, [DEVICE.ALL], _family_gate)


def _unit_fp4() -> None:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.qlinear.fp4 import TorchFP4Linear

    _declare(TorchFP4Linear, [DEVICE.CPU, DEVICE.CUDA], _family_gate)


def _unit_auto_select_device() -> None:
    """The seed: "auto_select_device() and the loader now retain DEVICE.ROCM on ROCm". With no device asked
    for, 7.7.0 picks DEVICE.CUDA whenever torch's cuda namespace is available, HIP builds included; the
    overlay picks DEVICE.ROCM there. Every other answer is 7.7.0's."""
    from gptqmodel.models._const import DEVICE
    from gptqmodel.utils import importer

    original_auto = importer.auto_select_device

    def auto_select_device(device: Any, backend: Any) -> Any:
        chosen = original_auto(device, backend)
        if device is None and chosen == DEVICE.CUDA and _is_rocm():
            return DEVICE.ROCM
        return chosen

    _rebind(original_auto, auto_select_device)


# One unit per replaced GPTQModel function or declaration, named as the README's revert table names it;
# DEVSIM_GPTQMODEL_OVERLAY_REVERT=<name> leaves exactly that one at 7.7.0 (tools/reverts.py runs each).
UNITS: dict[str, Callable[[], None]] = {
    "normalize_device": _unit_normalize_device,
    "as_torch_device": _unit_as_torch_device,
    "importer._device_family": _unit_device_family,
    "BaseQuantLinear.validate_device": _unit_validate_device,
    "importer._device_capability": _unit_device_capability,
    "dtype._advertised_linear_dtypes_for_device": _unit_advertised_dtypes,
    "scheduler._device_identity_cached": _unit_device_identity,
    "DeviceThreadPool.read_lock": _unit_pool_read_lock,
    "DeviceThreadPool._normalize_scope_to_keys": _unit_pool_scope,
    "BitsAndBytesLinear.SUPPORTS_DEVICES": _unit_bitsandbytes,
    "ExllamaV3Linear.validate_device": _unit_exl3_native,
    "ExllamaV3TorchLinear.validate_device": _unit_exl3_torch,
    "TorchFP4Linear.validate_device": _unit_fp4,
    "importer.auto_select_device": _unit_auto_select_device,
}


def reverted() -> str | None:
    """The unit DEVSIM_GPTQMODEL_OVERLAY_REVERT leaves at 7.7.0, if any. An unknown name is an error listing the
    valid ones (a typo must never pass as a revert), and so is a revert without the overlay."""
    value = os.environ.get(REVERT_ENV, "")
    if not value:
        return None
    if value not in UNITS:
        raise RuntimeError(f"{REVERT_ENV}={value!r} names no unit of the overlay; one of: {', '.join(UNITS)}")
    if os.environ.get(ENV, "") not in VARIANTS:
        raise RuntimeError(
            f"{REVERT_ENV}={value!r} reverts a unit of an overlay, but {ENV} is none of {', '.join(VARIANTS)}"
        )
    return value


def apply() -> None:
    """Install the overlay into the imported GPTQModel (call it once a process), every unit but the reverted one."""
    from gptqmodel.models import _const

    global _original_normalize
    skip = reverted()
    _original_normalize = _const.normalize_device
    for name, unit in units().items():
        if name != skip:
            unit()
