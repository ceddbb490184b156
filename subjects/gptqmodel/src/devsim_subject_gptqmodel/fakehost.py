"""A simulated torch host: patches torch's device API so that code under test sees the scenario's GPUs.

`install()` patches torch once (before GPTQModel is imported, so that `from torch.cuda import device`-style
bindings see the patched objects); `configure(host)` switches the simulated host at any time (the forked child
of each scenario calls it). Every patched runtime query is recorded as a devsim trace event while a step runs
(`Recorder.capture`), from the thread that runs the step only: GPTQModel's worker threads (the device thread
pool pins each worker with `set_device`) run asynchronously and would make traces nondeterministic.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

VISIBLE_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")

# What torch reports as its build versions; only None / not-None matters to the code under test.
HIP_VERSION = "7.1.25424"
CUDA_VERSION = "13.0"

# Opt-in shared memory per block when a scenario does not give one (devsim's host profiles omit it for AMD).
DEFAULT_SMEM_OPTIN = 65536


class SimulatedCudaError(RuntimeError):
    """The error torch raises for a bad ordinal (torch.AcceleratorError in recent torch is a RuntimeError)."""


@dataclass
class Gpu:
    arch: str
    name: str = ""
    smem_optin: int = DEFAULT_SMEM_OPTIN
    uuid: str = ""

    @property
    def is_nvidia(self) -> bool:
        return self.arch.startswith("sm_")

    @property
    def capability(self) -> tuple[int, int]:
        """(major, minor) as torch reports it: sm_XY -> (X, Y); gfxMMms -> (MM, m) as HIP's props do."""
        if self.is_nvidia:
            digits = self.arch[3:]
            return int(digits[:-1]), int(digits[-1])
        match = re.match(r"gfx([0-9a-f]+)", self.arch)
        if not match:
            return 0, 0
        digits = match.group(1)
        return int(digits[:-2]), int(digits[-2], 16)


@dataclass
class Host:
    torch: str = "cpu"  # "cuda" | "hip" | "cpu"
    gpus: list[Gpu] = field(default_factory=list)
    foreign_gpus: list[Gpu] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    visible: list[int] = field(default_factory=list)
    current: int = 0

    @classmethod
    def from_message(cls, host: dict) -> Host:
        def gpu(g: dict) -> Gpu:
            return Gpu(
                arch=g["arch"],
                name=g.get("name") or g["arch"],
                smem_optin=g.get("smem_optin") or DEFAULT_SMEM_OPTIN,
                uuid=g.get("uuid") or "",
            )

        return cls(
            torch=host["torch"],
            gpus=[gpu(g) for g in host.get("gpus", [])],
            foreign_gpus=[gpu(g) for g in host.get("foreign_gpus", [])],
            env=dict(host.get("env") or {}),
            visible=list(host.get("visible", range(len(host.get("gpus", []))))),
            current=int(host.get("current", 0)),
        )

    @property
    def has_gpu_runtime(self) -> bool:
        return self.torch in ("cuda", "hip")

    def visible_gpus(self) -> list[Gpu]:
        if not self.has_gpu_runtime:
            return []
        return [self.gpus[i] for i in self.visible]

    def signature(self) -> tuple:
        """What GPTQModel's import-time constants depend on."""
        return (self.torch, bool(self.visible_gpus()))


# ----------------------------------------------------------------------------------------------- recorder


class Recorder:
    """Collects trace events while a step runs, from the step's own thread only."""

    def __init__(self) -> None:
        self.events: list[dict] | None = None
        self.thread: int | None = None
        self.suspended = 0

    def record(self, event: str, device: int | None = None, detail: str | None = None) -> None:
        if self.events is None or self.suspended or threading.get_ident() != self.thread:
            return
        entry: dict[str, Any] = {"event": event}
        if device is not None:
            entry["device"] = device
        if detail is not None:
            entry["detail"] = detail
        self.events.append(entry)

    @contextlib.contextmanager
    def capture(self) -> Iterator[list[dict]]:
        events: list[dict] = []
        self.events, self.thread = events, threading.get_ident()
        try:
            yield events
        finally:
            self.events, self.thread = None, None

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Calls made by the subject itself (bookkeeping, not the code under test)."""
        self.suspended += 1
        try:
            yield
        finally:
            self.suspended -= 1


RECORDER = Recorder()


# ----------------------------------------------------------------------------------------------- the runtime


class _Props:
    """torch.cuda._CudaDeviceProperties look-alike; reading an arch field is a recorded probe."""

    def __init__(self, runtime: Runtime, ordinal: int, gpu: Gpu, amd: bool) -> None:
        self._runtime, self._ordinal, self._gpu, self._amd = runtime, ordinal, gpu, amd
        self.name = gpu.name
        self.multi_processor_count = 132 if not amd else 104
        self.total_memory = 80 * 1024**3
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.max_threads_per_multi_processor = 2048
        self.warp_size = 64 if amd and not gpu.arch.startswith("gfx1") else 32
        self.uuid = gpu.uuid
        self.L2_cache_size = 50 * 1024**2
        self.clock_rate = 1_980_000
        self.memory_clock_rate = 2_619_000
        self.memory_bus_width = 5120
        self.shared_memory_per_block = 49152
        self.shared_memory_per_multiprocessor = max(gpu.smem_optin, 65536)

    @property
    def major(self) -> int:
        self._runtime.rec("nvidia_capability", self._ordinal, "get_device_properties().major")
        return self._gpu.capability[0]

    @property
    def minor(self) -> int:
        self._runtime.rec("nvidia_capability", self._ordinal, "get_device_properties().minor")
        return self._gpu.capability[1]

    @property
    def gcnArchName(self) -> str:
        self._runtime.rec("amd_arch", self._ordinal, "get_device_properties().gcnArchName")
        # CUDA builds of torch answer gcnArchName with a fixed text, never an arch.
        return self._gpu.arch if self._amd else "NVIDIA"

    @property
    def shared_memory_per_block_optin(self) -> int:
        self._runtime.rec("smem_optin", self._ordinal, "get_device_properties().shared_memory_per_block_optin")
        return self._gpu.smem_optin

    def __repr__(self) -> str:
        return f"_CudaDeviceProperties(name='{self.name}', simulated=True)"


class Runtime:
    """The simulated device runtime behind the patched torch functions."""

    def __init__(self) -> None:
        self.host = Host()
        self._current: dict[int, int] = {}
        self._main_thread = threading.get_ident()

    # -- host switching

    def configure(self, host: Host) -> None:
        self.host = host
        self._current = {}
        self._main_thread = threading.get_ident()
        gpus = host.visible_gpus()
        if gpus:
            self._current[self._main_thread] = host.current
        torch.version.hip = HIP_VERSION if host.torch == "hip" else None
        torch.version.cuda = CUDA_VERSION if host.torch == "cuda" else None
        for name in VISIBLE_ENV:
            os.environ.pop(name, None)
        os.environ.update(host.env)

    # -- helpers

    def rec(self, event: str, device: int | None = None, detail: str | None = None) -> None:
        RECORDER.record(event, device, detail)

    @property
    def amd(self) -> bool:
        return self.host.torch == "hip"

    def count(self) -> int:
        return len(self.host.visible_gpus())

    def _require_runtime(self) -> None:
        if not self.host.has_gpu_runtime:
            raise AssertionError("Torch not compiled with CUDA enabled")
        if self.count() == 0:
            backend = "HIP" if self.amd else "CUDA"
            raise RuntimeError(f"No {backend} GPUs are available")

    def current(self) -> int:
        """The calling thread's current device, without recording (subject bookkeeping)."""
        return self._current.get(threading.get_ident(), 0)

    def index(self, device: Any, optional: bool) -> int:
        """torch.cuda._utils._get_device_index: an indexless device means the current device (a query)."""
        if isinstance(device, _DeviceContext):
            return device.idx
        if isinstance(device, str):
            device = torch.device(device)
        index: int | None
        if isinstance(device, torch.device):
            if device.type != "cuda":
                raise ValueError(f"Expected a cuda device, but got: {device}")
            index = device.index
        elif isinstance(device, int):
            index = device
        elif device is None:
            index = None
        else:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
        if index is None:
            if not optional:
                raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
            index = self.current_device()
        return index

    def _check(self, ordinal: int) -> None:
        if ordinal < 0 or ordinal >= self.count():
            raise SimulatedCudaError(
                ("HIP" if self.amd else "CUDA") + " error: invalid device ordinal"
            )

    # -- torch.cuda

    def is_available(self) -> bool:
        if not self.host.has_gpu_runtime:
            return False
        self.rec("device_count", None, "is_available")
        return self.count() > 0

    def device_count(self) -> int:
        if not self.host.has_gpu_runtime:
            return 0
        self.rec("device_count")
        return self.count()

    def current_device(self) -> int:
        self._require_runtime()
        ordinal = self.current()
        self.rec("get_device", ordinal)
        return ordinal

    def set_device(self, device: Any) -> None:
        self._require_runtime()
        ordinal = self.index(device, optional=False)
        if ordinal < 0:
            return
        self._check(ordinal)
        self.rec("set_device", ordinal)
        self._current[threading.get_ident()] = ordinal

    def exchange_device(self, ordinal: int) -> int:
        """torch.cuda._exchange_device: returns the previous device, switches only when different."""
        if ordinal < 0:
            return -1
        self._require_runtime()
        previous = self.current_device()
        if previous != ordinal:
            self._check(ordinal)
            self.rec("set_device", ordinal)
            self._current[threading.get_ident()] = ordinal
        return previous

    def maybe_exchange_device(self, ordinal: int) -> int:
        """torch.cuda._maybe_exchange_device: restores `ordinal` when it differs from the current device."""
        if ordinal < 0:
            return -1
        previous = self.current()
        if previous != ordinal:
            self._check(ordinal)
            self.rec("set_device", ordinal)
            self._current[threading.get_ident()] = ordinal
        return previous

    def get_device_properties(self, device: Any = None) -> _Props:
        self._require_runtime()
        ordinal = self.index(device, optional=True)
        if ordinal < 0 or ordinal >= self.count():
            raise AssertionError("Invalid device id")
        return _Props(self, ordinal, self.host.visible_gpus()[ordinal], self.amd)

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        self._require_runtime()
        ordinal = self.index(device, optional=True)
        if ordinal < 0 or ordinal >= self.count():
            raise AssertionError("Invalid device id")
        self.rec("nvidia_capability", ordinal, "get_device_capability")
        return self.host.visible_gpus()[ordinal].capability

    def get_device_name(self, device: Any = None) -> str:
        self._require_runtime()
        ordinal = self.index(device, optional=True)
        if ordinal < 0 or ordinal >= self.count():
            raise AssertionError("Invalid device id")
        self.rec("device_name", ordinal)
        return self.host.visible_gpus()[ordinal].name

    def synchronize(self, device: Any = None) -> None:
        self._require_runtime()
        ordinal = self.index(device, optional=True)
        self._check(ordinal)
        self.rec("synchronize", ordinal)

    # -- torch.accelerator

    def current_accelerator(self, check_available: bool = False) -> torch.device | None:
        if not self.host.has_gpu_runtime:
            return None
        if check_available and not self.is_available():
            return None
        return torch.device("cuda")

    def landing(self, device: torch.device) -> Any:
        """Where torch puts data asked for `device`: an indexless cuda device is the current device."""
        if device.type != "cuda":
            return device.type
        self._require_runtime()
        ordinal = device.index if device.index is not None else self.current_device()
        self._check(ordinal)
        return ordinal


RUNTIME = Runtime()


class _DeviceContext:
    """torch.cuda.device: enter switches to the device (if different), exit restores the previous one."""

    def __init__(self, device: Any) -> None:
        self.idx = RUNTIME.index(device, optional=True) if RUNTIME.host.has_gpu_runtime else -1
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = RUNTIME.exchange_device(self.idx)

    def __exit__(self, *exc: object) -> Literal[False]:
        self.idx = RUNTIME.maybe_exchange_device(self.prev_idx)
        return False


# ----------------------------------------------------------------------------------------------- install

_INSTALLED = False
_ORIGINAL: dict[str, Any] = {}


def _patch(owner: Any, name: str, value: Any) -> None:
    key = f"{getattr(owner, '__name__', owner)}.{name}"
    if key not in _ORIGINAL:
        _ORIGINAL[key] = getattr(owner, name, None)
    setattr(owner, name, value)


def install(host: Host | None = None) -> Runtime:
    """Patch torch (idempotent) and configure `host` (default: a CPU-only build)."""
    global _INSTALLED
    if not _INSTALLED:
        _install()
        _INSTALLED = True
    RUNTIME.configure(host or Host())
    return RUNTIME


def _install() -> None:
    cuda = torch.cuda
    r = RUNTIME
    _patch(cuda, "is_available", r.is_available)
    _patch(cuda, "device_count", r.device_count)
    _patch(cuda, "current_device", r.current_device)
    _patch(cuda, "set_device", r.set_device)
    _patch(cuda, "_exchange_device", r.exchange_device)
    _patch(cuda, "_maybe_exchange_device", r.maybe_exchange_device)
    _patch(cuda, "device", _DeviceContext)
    _patch(cuda, "get_device_properties", r.get_device_properties)
    _patch(cuda, "get_device_capability", r.get_device_capability)
    _patch(cuda, "get_device_name", r.get_device_name)
    _patch(cuda, "synchronize", r.synchronize)
    _patch(cuda, "is_initialized", lambda: r.host.has_gpu_runtime)
    _patch(cuda, "_is_compiled", lambda: r.host.has_gpu_runtime)
    _patch(cuda, "init", lambda: None)
    _patch(cuda, "_lazy_init", lambda: None)
    _patch(cuda, "empty_cache", lambda: None)
    # Other accelerators never exist on a simulated host.
    for name in ("xpu", "mps", "npu"):
        module = getattr(torch, name, None)
        if module is not None and hasattr(module, "is_available"):
            _patch(module, "is_available", lambda: False)
        if module is not None and hasattr(module, "device_count"):
            _patch(module, "device_count", lambda: 0)
    if hasattr(torch.backends, "mps"):
        _patch(torch.backends.mps, "is_available", lambda: False)
    acc = getattr(torch, "accelerator", None)
    if acc is not None:
        _patch(acc, "current_accelerator", r.current_accelerator)
        _patch(acc, "is_available", lambda: r.host.has_gpu_runtime and r.count() > 0)
        _patch(acc, "device_count", lambda: r.count() if r.host.has_gpu_runtime else 0)
        _patch(acc, "current_device_index", r.current_device)
        _patch(acc, "current_device_idx", r.current_device)
        _patch(acc, "set_device_index", r.set_device)
        _patch(acc, "set_device_idx", r.set_device)
        _patch(acc, "synchronize", r.synchronize)


# ----------------------------------------------------------------------------------------------- moves


class MoveCapture:
    """While active, `Tensor.to` toward a GPU records where the data would land instead of failing.

    The tensor stays on the CPU (there is no GPU); the landing ordinal follows torch: an explicit index is
    kept, an indexless "cuda" is the calling thread's current device.
    """

    def __init__(self) -> None:
        self.active = False
        self.landings: list[tuple[str, Any]] = []

    @contextlib.contextmanager
    def capture(self) -> Iterator[list[tuple[str, Any]]]:
        self.active, self.landings = True, []
        try:
            yield self.landings
        finally:
            self.active = False


MOVES = MoveCapture()


def install_move_hook() -> None:
    original: Callable = torch.Tensor.to

    def to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if not MOVES.active:
            return original(self, *args, **kwargs)
        device, dtype, _non_blocking, _memory_format = torch._C._nn._parse_to(*args, **kwargs)
        if device is None or device.type in ("cpu", "meta"):
            return original(self, *args, **kwargs)
        landed = RUNTIME.landing(device)
        MOVES.landings.append((str(device), landed))
        return self if dtype is None else original(self, dtype=dtype)

    if not getattr(torch.Tensor.to, "_devsim", False):
        to._devsim = True  # type: ignore[attr-defined]
        torch.Tensor.to = to  # type: ignore[method-assign,assignment]
