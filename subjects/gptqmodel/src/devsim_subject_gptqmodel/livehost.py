"""The live host: the real torch on the real machine, its device calls wrapped to record trace events.

Nothing here is simulated. Every wrapper calls torch's own function with the arguments it was given and returns
(or raises) exactly what torch did; it only records the devsim trace event the call stands for, while a step
runs and from the step's own thread (fakehost.Recorder). The scenario's host as devsim sent it is kept for the
subject's bookkeeping only (the machine satisfies it: devsim sends only such scenarios live).

Live scenarios run in the subject's own process, one after another (server.py): CUDA state does not survive a
fork. `LiveRuntime.enter` makes the scenario's current device current and `leave` restores the device that was
current before, also when a step failed; the restore is recorded as a `set_device` outside any step.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from .fakehost import MOVES, RECORDER, Host

_ORIGINAL: dict[str, Callable[..., Any]] = {}


def _ordinal(device: Any) -> int | None:
    """The ordinal torch itself resolves for a device argument (None: the current device)."""
    if device is None:
        return None
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        return device.index
    index = getattr(device, "idx", None)
    return index if isinstance(index, int) else None


class LiveRuntime:
    """The subject's view of the real runtime: the same questions fakehost.Runtime answers, asked of torch."""

    def __init__(self) -> None:
        self.host = Host()
        self._restore: int | None = None

    # -- unrecorded bookkeeping (the subject's, not the code under test's)

    def count(self) -> int:
        if not _ORIGINAL["is_available"]():
            return 0
        return int(_ORIGINAL["device_count"]())

    def current(self) -> int:
        return int(_ORIGINAL["current_device"]())

    def enter(self, host: Host) -> str | None:
        """A live scenario begins: check the machine is what devsim said, make the scenario's device current."""
        self.host = host
        wanted = len(host.visible_gpus())
        if host.torch == "hip" and torch.version.hip is None or host.torch == "cuda" and torch.version.cuda is None:
            return f"this torch is not a {host.torch} build (torch {torch.__version__})"
        have = self.count()
        if wanted != have:
            return f"torch sees {have} GPU(s), the scenario's host has {wanted}"
        self._restore = None
        if wanted:
            self._restore = self.current()
            if self._restore != host.current:
                _ORIGINAL["set_device"](host.current)
        return None

    def leave(self) -> None:
        """The scenario ended: the device current before it is current again."""
        if self._restore is not None and self.current() != self._restore:
            _ORIGINAL["set_device"](self._restore)
        self._restore = None

    def configure(self, host: Host) -> None:
        self.host = host


LIVE = LiveRuntime()


def _wrap(owner: Any, name: str, record: Callable[..., None]) -> None:
    """Replace owner.name by a function that records, then calls the original unchanged."""
    original = getattr(owner, name)
    _ORIGINAL.setdefault(name, original)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        record(result, *args, **kwargs)
        return result

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(original, "__name__", name)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    setattr(owner, name, wrapper)


class _RecordedProps:
    """Forwards every attribute of torch's device properties; reading an arch field is a recorded probe."""

    _PROBES: ClassVar[dict[str, str]] = {
        "major": "nvidia_capability",
        "minor": "nvidia_capability",
        "gcnArchName": "amd_arch",
        "shared_memory_per_block_optin": "smem_optin",
    }

    def __init__(self, props: Any, ordinal: int) -> None:
        object.__setattr__(self, "_props", props)
        object.__setattr__(self, "_ordinal", ordinal)

    def __getattr__(self, name: str) -> Any:
        event = self._PROBES.get(name)
        if event is not None:
            RECORDER.record(event, self._ordinal, f"get_device_properties().{name}")
        return getattr(self._props, name)

    def __repr__(self) -> str:
        return repr(self._props)


def install() -> LiveRuntime:
    """Wrap torch's device API once (before GPTQModel is imported, so bindings by name see the wrappers)."""
    if _ORIGINAL:
        return LIVE
    # torch.compile (GPTQModel's torch kernels compile their dequantization) costs tens of seconds per shape,
    # more than a step may take; eager execution computes the same result. DEVSIM_GPTQMODEL_COMPILE=1 keeps it.
    if os.environ.get("DEVSIM_GPTQMODEL_COMPILE") != "1":
        torch._dynamo.config.disable = True
    cuda = torch.cuda

    def current_or(device: Any) -> int:
        ordinal = _ordinal(device)
        return LIVE.current() if ordinal is None else ordinal

    _wrap(cuda, "is_available", lambda result: RECORDER.record("device_count", None, "is_available"))
    _wrap(cuda, "device_count", lambda result: RECORDER.record("device_count"))
    _wrap(cuda, "current_device", lambda result: RECORDER.record("get_device", int(result)))
    _wrap(cuda, "set_device", lambda result, device: RECORDER.record("set_device", current_or(device)))

    def exchanged(result: int, ordinal: int) -> None:
        if ordinal >= 0 and result != ordinal:
            RECORDER.record("set_device", ordinal)

    _wrap(cuda, "_exchange_device", exchanged)
    _wrap(cuda, "_maybe_exchange_device", exchanged)
    _wrap(
        cuda,
        "get_device_capability",
        lambda result, device=None: RECORDER.record("nvidia_capability", current_or(device), "get_device_capability"),
    )
    _wrap(cuda, "get_device_name", lambda result, device=None: RECORDER.record("device_name", current_or(device)))
    _wrap(cuda, "synchronize", lambda result, device=None: RECORDER.record("synchronize", current_or(device)))
    original_props = cuda.get_device_properties
    _ORIGINAL["get_device_properties"] = original_props

    def get_device_properties(device: Any = None) -> Any:
        return _RecordedProps(original_props(device), current_or(device))

    get_device_properties.__wrapped__ = original_props  # type: ignore[attr-defined]
    cuda.get_device_properties = get_device_properties
    _install_move_hook()
    return LIVE


def _install_move_hook() -> None:
    """While a move is captured, `Tensor.to` toward a GPU really moves; where the data landed is recorded."""
    original: Callable = torch.Tensor.to

    def to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        result = original(self, *args, **kwargs)
        if MOVES.active:
            device, _dtype, _non_blocking, _memory_format = torch._C._nn._parse_to(*args, **kwargs)
            if device is not None and device.type not in ("cpu", "meta"):
                landed: Any = result.device.index if result.device.type == "cuda" else result.device.type
                MOVES.landings.append((str(device), landed))
        return result

    to._devsim = True  # type: ignore[attr-defined]
    torch.Tensor.to = to  # type: ignore[method-assign,assignment]
