"""The live host: the real torch on the real machine, its device calls wrapped to record trace events.

Nothing here is simulated. Every wrapper calls torch's own function with the arguments it was given and returns
(or raises) exactly what torch did; it only records the devsim trace event the call stands for, while a step
is captured on `self.recorder`. The scenario's host as devsim sent it is kept for the subject's bookkeeping
only (the machine satisfies it: devsim sends only such scenarios live).

Live scenarios run in the subject's own process, one after another (server.LiveServer): CUDA state does not
survive a fork. `enter` makes the scenario's current device current and `leave` restores the device that was
current before, also when a step failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch

from .host import Host
from .patches import Patches, TorchOwner
from .recorder import MoveCapture, Recorder


def torch_ordinal(device: Any) -> int | None:
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


class _RecordedProps:
    """Forwards every attribute of torch's device properties; reading an arch field is a recorded probe."""

    _PROBES: ClassVar[dict[str, str]] = {
        "major": "nvidia_capability",
        "minor": "nvidia_capability",
        "gcnArchName": "amd_arch",
        "shared_memory_per_block_optin": "smem_optin",
    }

    def __init__(self, props: Any, ordinal: int, recorder: Recorder) -> None:
        object.__setattr__(self, "_props", props)
        object.__setattr__(self, "_ordinal", ordinal)
        object.__setattr__(self, "_recorder", recorder)

    def __getattr__(self, name: str) -> Any:
        event = self._PROBES.get(name)
        if event is not None:
            self._recorder.record(event, self._ordinal, f"get_device_properties().{name}")
        return getattr(self._props, name)

    def __repr__(self) -> str:
        return repr(self._props)


class LiveTorch:
    """The subject's view of the real runtime: the same questions SimulatedTorch answers, asked of torch."""

    #: What the kit calls this mode in reasons and reports.
    mode = "live"

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder = recorder or Recorder()
        self.moves = MoveCapture()
        self.host = Host(live=True)
        self._restore: int | None = None
        self._original: dict[str, Callable[..., Any]] = {}
        self._patches = Patches()

    # -- unrecorded bookkeeping (the subject's, not the code under test's)

    def count(self) -> int:
        """The GPUs torch really sees (not recorded)."""
        if not self._call("is_available"):
            return 0
        return int(self._call("device_count"))

    def current(self) -> int:
        """The real current device (not recorded)."""
        return int(self._call("current_device"))

    def _call(self, name: str, *args: Any) -> Any:
        function = self._original.get(name) or getattr(torch.cuda, name)
        return function(*args)

    def enter(self, host: Host) -> str | None:
        """A live scenario begins: check the machine is what devsim said, make the scenario's device current."""
        self.host = host
        wanted = len(host.visible_gpus())
        if host.is_rocm and torch.version.hip is None or host.torch == "cuda" and torch.version.cuda is None:
            return f"this torch is not a {host.torch} build (torch {torch.__version__})"
        have = self.count()
        if wanted != have:
            return f"torch sees {have} GPU(s), the scenario's host has {wanted}"
        self._restore = None
        if wanted:
            self._restore = self.current()
            if self._restore != host.current:
                self._call("set_device", host.current)
        return None

    def leave(self) -> None:
        """The scenario ended: the device current before it is current again."""
        if self._restore is not None and self.current() != self._restore:
            self._call("set_device", self._restore)
        self._restore = None

    def configure(self, host: Host) -> None:
        """Keep `host` for bookkeeping (the machine is not changed)."""
        self.host = host

    # -- wrapping

    def install(self, host: Host | None = None) -> LiveTorch:
        """Wrap torch's device API once (before the project is imported, so bindings by name see the wrappers)."""
        if self._patches:
            return self
        TorchOwner.claim(self)
        cuda, rec = torch.cuda, self.recorder

        def current_or(device: Any) -> int:
            ordinal = torch_ordinal(device)
            return self.current() if ordinal is None else ordinal

        self._wrap(cuda, "is_available", lambda result: rec.record("device_count", None, "is_available"))
        self._wrap(cuda, "device_count", lambda result: rec.record("device_count"))
        self._wrap(cuda, "current_device", lambda result: rec.record("get_device", int(result)))
        self._wrap(cuda, "set_device", lambda result, device: rec.record("set_device", current_or(device)))

        def exchanged(result: int, ordinal: int) -> None:
            if ordinal >= 0 and result != ordinal:
                rec.record("set_device", ordinal)

        self._wrap(cuda, "_exchange_device", exchanged)
        self._wrap(cuda, "_maybe_exchange_device", exchanged)
        self._wrap(
            cuda,
            "get_device_capability",
            lambda result, device=None: rec.record("nvidia_capability", current_or(device), "get_device_capability"),
        )
        self._wrap(cuda, "get_device_name", lambda result, device=None: rec.record("device_name", current_or(device)))
        self._wrap(cuda, "synchronize", lambda result, device=None: rec.record("synchronize", current_or(device)))
        original_props = cuda.get_device_properties
        self._original["get_device_properties"] = original_props

        def get_device_properties(device: Any = None) -> Any:
            return _RecordedProps(original_props(device), current_or(device), rec)

        get_device_properties.__wrapped__ = original_props  # type: ignore[attr-defined]
        self._patches.set(cuda, "get_device_properties", get_device_properties)
        self._wrap_moves()
        if host is not None:
            self.configure(host)
        return self

    def uninstall(self) -> None:
        """Put torch's own functions back."""
        self._patches.undo()
        self._original.clear()
        TorchOwner.release(self)

    def _wrap(self, owner: Any, name: str, record: Callable[..., None]) -> None:
        """Replace owner.name by a function that calls the original unchanged, then records."""
        original = getattr(owner, name)
        self._original.setdefault(name, original)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            record(result, *args, **kwargs)
            return result

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(original, "__name__", name)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        self._patches.set(owner, name, wrapper)

    def _wrap_moves(self) -> None:
        """While a move is captured, `Tensor.to` toward a GPU really moves; where the data landed is recorded."""
        original: Callable[..., torch.Tensor] = torch.Tensor.to
        moves = self.moves

        def to(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            result = original(tensor, *args, **kwargs)
            if moves.active:
                device, _dtype, _non_blocking, _memory_format = torch._C._nn._parse_to(*args, **kwargs)
                if device is not None and device.type == "cuda" and result.device.type in ("cuda", "cpu"):
                    landed: Any = result.device.index if result.device.type == "cuda" else "cpu"
                    moves.landings.append((str(device), landed))
            return result

        to.__wrapped__ = original  # type: ignore[attr-defined]
        self._patches.set(torch.Tensor, "to", to)
