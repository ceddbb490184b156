"""A simulated torch host: torch's device API patched so that the code under test sees a scenario's GPUs.

`SimulatedTorch().install(host)` patches torch (before the project is imported, so that
`from torch.cuda import device`-style bindings see the patched objects); `configure(host)` switches the host at
any time (a forked child per scenario calls it); `uninstall()` restores torch. Every patched runtime query is
recorded as a devsim trace event on `self.recorder` while a step is captured. Nothing is module-global: each
object holds its own state, and at most one is installed at a time (torch's API is process-global).

Two ways to count devices (`counting`):
- `"simulated"` (the default): `torch.cuda.device_count` and `is_available` themselves answer the host.
- `"torch"`: torch's own Python counting runs, visible-device parsing, UUID matching and trimming included
  (`device_count`, `_device_count_nvml`, `_device_count_amdsmi`, `is_available`). Only what it asks below
  itself is answered: NVML's raw count and UUIDs, the `amdsmi` module (the kit's `Amdsmi`, on which torch's
  own amdsmi queries run) and the runtime's `torch._C._cuda_getDeviceCount`. Use it where the code under test
  relies on torch's own reading of the masks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, Literal

import torch

from .currentdevice import CurrentDevices
from .deferredcompile import deferred
from .gpuonly import GPU_ONLY, refusing
from .host import VISIBLE_ENV, Gpu, Host
from .patches import Patches, TorchOwner
from .recorder import MoveCapture, Recorder
from .simmemory import memory_patches


class SimulatedCudaError(RuntimeError):
    """The error torch raises for a bad ordinal (torch.AcceleratorError in recent torch is a RuntimeError)."""


class _Props:
    """torch.cuda._CudaDeviceProperties look-alike; reading an arch field is a recorded probe."""

    def __init__(self, runtime: SimulatedTorch, ordinal: int, gpu: Gpu, amd: bool) -> None:
        self._runtime, self._ordinal, self._gpu, self._amd = runtime, ordinal, gpu, amd
        self.name = gpu.name
        self.multi_processor_count = 132 if not amd else 104
        self.total_memory = gpu.total_memory
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

    def _probe(self, event: str, detail: str) -> None:
        """Record a property read as the code under test's probe; torch's own reads are not (see `_by_torch`)."""
        if not _by_torch(sys._getframe(2)):
            self._runtime.recorder.record(event, self._ordinal, detail)

    @property
    def major(self) -> int:
        self._probe("nvidia_capability", "get_device_properties().major")
        return self._gpu.capability[0]

    @property
    def minor(self) -> int:
        self._probe("nvidia_capability", "get_device_properties().minor")
        return self._gpu.capability[1]

    @property
    def gcnArchName(self) -> str:
        self._probe("amd_arch", "get_device_properties().gcnArchName")
        # HIP answers the ISA's target id (gfx942:sramecc+:xnack-); CUDA builds a fixed text, never an arch.
        return self._gpu.gcn_arch_name if self._amd else "NVIDIA"

    @property
    def shared_memory_per_block_optin(self) -> int:
        self._probe("smem_optin", "get_device_properties().shared_memory_per_block_optin")
        return self._gpu.smem_optin

    def __repr__(self) -> str:
        return f"_CudaDeviceProperties(name='{self.name}', simulated=True)"


class SimulatedTorch:
    """The simulated device runtime behind the patched torch functions (one host at a time)."""

    #: What the kit calls this mode in reasons and reports.
    mode = "simulated"

    def __init__(self, recorder: Recorder | None = None,
                 counting: Literal["simulated", "torch"] = "simulated") -> None:
        if counting not in ("simulated", "torch"):
            raise ValueError(f"counting is 'simulated' or 'torch', not {counting!r}")
        self.counting = counting
        self.recorder = recorder or Recorder()
        self.moves = MoveCapture()
        self.host = Host()
        self._current = CurrentDevices()
        self._patches = Patches()
        self._saved_env: dict[str, str | None] = {}
        self.device_context = self._device_context_class()
        #: Told the skip reason when a GPU-only native call is refused (`gpuonly`), in the thread that made it.
        self.on_refusal: Callable[[str], None] = lambda reason: None

    # -- installing and switching

    def install(self, host: Host | None = None) -> SimulatedTorch:
        """Patch torch (idempotent for this object) and configure `host` (default: a CPU-only build)."""
        if not self._patches:
            TorchOwner.claim(self)
            self._saved_env = {name: os.environ.get(name) for name in VISIBLE_ENV}
            self._saved_versions = (torch.version.hip, torch.version.cuda)
            self._patch_torch()
        self.configure(host or Host())
        return self

    def uninstall(self) -> None:
        """Restore torch's own functions, its versions and the visible-device variables."""
        if not self._patches:
            return
        self._patches.undo()
        torch.version.hip, torch.version.cuda = self._saved_versions
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        TorchOwner.release(self)

    def configure(self, host: Host) -> None:
        """Become `host`: torch's build versions, the visible-device variables, the calling thread's device."""
        self.host = host
        self._current.reset(host.current if host.visible_gpus() else 0)
        torch.version.hip = host.version if host.is_rocm else None
        torch.version.cuda = host.version if host.torch == "cuda" else None
        for name in VISIBLE_ENV:
            os.environ.pop(name, None)
        os.environ.update(host.environment())
        if self._patches:
            # one random generator per visible GPU, CPU-backed as the GPU's tensors are: torch.manual_seed seeds
            # every GPU's generator, and torch.cuda's RNG-state functions index them by ordinal
            torch.cuda.default_generators = tuple(  # type: ignore[assignment]
                torch.Generator() for _ in host.visible_gpus()
            ) if host.has_gpu_runtime else ()

    # -- the subject's unrecorded view

    @property
    def amd(self) -> bool:
        """Whether the host is a HIP build."""
        return self.host.is_rocm

    def count(self) -> int:
        """The number of GPUs torch sees (not recorded)."""
        return len(self.host.visible_gpus())

    def current(self) -> int:
        """The calling thread's current device, without recording (subject bookkeeping)."""
        return self._current.get()

    def enter(self, host: Host) -> str | None:
        """A scenario begins on `host`: None, or why this build cannot simulate it."""
        reason = host.unsupported()
        if reason is None:
            self.configure(host)
        return reason

    def leave(self) -> None:
        """A scenario ended (nothing to restore: the next scenario configures its own host)."""

    # -- torch.cuda

    def _require_runtime(self) -> None:
        if not self.host.has_gpu_runtime:
            raise AssertionError("Torch not compiled with CUDA enabled")
        if self.count() == 0:
            backend = "HIP" if self.amd else "CUDA"
            raise RuntimeError(f"No {backend} GPUs are available")

    def index(self, device: Any, optional: bool) -> int:
        """torch.cuda._utils._get_device_index: an indexless device means the current device (a query)."""
        if isinstance(device, self.device_context):
            return int(getattr(device, "idx"))  # noqa: B009 - the class is built at run time
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
            raise SimulatedCudaError(("HIP" if self.amd else "CUDA") + " error: invalid device ordinal")

    def is_available(self) -> bool:
        if not self.host.has_gpu_runtime:
            return False
        self.recorder.record("device_count", None, "is_available")
        return self.count() > 0

    def device_count(self) -> int:
        if not self.host.has_gpu_runtime:
            return 0
        self.recorder.record("device_count")
        return self.count()

    def current_device(self) -> int:
        self._require_runtime()
        ordinal = self.current()
        self.recorder.record("get_device", ordinal)
        return ordinal

    def set_device(self, device: Any) -> None:
        self._require_runtime()
        ordinal = self.index(device, optional=False)
        if ordinal < 0:
            return
        self._check(ordinal)
        self.recorder.record("set_device", ordinal)
        self._current.set(ordinal)

    def exchange_device(self, ordinal: int) -> int:
        """torch.cuda._exchange_device: returns the previous device, switches only when different."""
        if ordinal < 0:
            return -1
        self._require_runtime()
        previous = self.current_device()
        if previous != ordinal:
            self._check(ordinal)
            self.recorder.record("set_device", ordinal)
            self._current.set(ordinal)
        return previous

    def maybe_exchange_device(self, ordinal: int) -> int:
        """torch.cuda._maybe_exchange_device: restores `ordinal` when it differs from the current device."""
        if ordinal < 0:
            return -1
        previous = self.current()
        if previous != ordinal:
            self._check(ordinal)
            self.recorder.record("set_device", ordinal)
            self._current.set(ordinal)
        return previous

    def _visible(self, device: Any) -> tuple[int, Gpu]:
        self._require_runtime()
        ordinal = self.index(device, optional=True)
        if ordinal < 0 or ordinal >= self.count():
            raise AssertionError("Invalid device id")
        return ordinal, self.host.visible_gpus()[ordinal]

    def get_device_properties(self, device: Any = None) -> _Props:
        ordinal, gpu = self._visible(device)
        return _Props(self, ordinal, gpu, self.amd)

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        ordinal, gpu = self._visible(device)
        if not _by_torch(sys._getframe(1)):
            self.recorder.record("nvidia_capability", ordinal, "get_device_capability")
        return gpu.capability

    def get_device_name(self, device: Any = None) -> str:
        ordinal, gpu = self._visible(device)
        self.recorder.record("device_name", ordinal)
        return gpu.name

    def get_arch_list(self) -> list[str]:
        """torch.cuda.get_arch_list: the build's compiled archs, none when no GPU is available."""
        if not self.host.has_gpu_runtime or self.count() == 0:
            return []
        return self.host.build_arch_list

    def _memory_index(self, device: Any) -> int:
        self._require_runtime()
        return self.index(device, optional=True)

    def synchronize(self, device: Any = None) -> None:
        self._require_runtime()
        ordinal = self.index(device, optional=True)
        self._check(ordinal)
        self.recorder.record("synchronize", ordinal)

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

    # -- patching

    def _device_context_class(self) -> type:
        runtime = self

        class device:
            """torch.cuda.device: enter switches to the device (if different), exit restores the previous one."""

            def __init__(self, device: Any) -> None:
                self.idx = runtime.index(device, optional=True) if runtime.host.has_gpu_runtime else -1
                self.prev_idx = -1

            def __enter__(self) -> None:
                self.prev_idx = runtime.exchange_device(self.idx)

            def __exit__(self, *exc: object) -> Literal[False]:
                self.idx = runtime.maybe_exchange_device(self.prev_idx)
                return False

        return device

    def _counting_patches(self) -> dict[str, Any]:
        """torch.cuda's counting functions (simulated) or what torch's own counting asks below itself."""
        if self.counting == "simulated":
            return {
                "is_available": self.is_available,
                "device_count": self.device_count,
                # torch's own counting below the runtime (NVML, amdsmi), which projects call directly too
                "_device_count_nvml": lambda: self.count() if self.host.has_gpu_runtime else -1,
                "_device_count_amdsmi": lambda: self.count() if self.host.has_gpu_runtime else -1,
            }
        from .lowlevel import Amdsmi, nvidia_box_gpus

        amdsmi = Amdsmi(lambda: self.host, self.recorder)

        def nvml_count() -> int:
            self.recorder.record("device_count", None, "nvmlDeviceGetCount_v2")
            return len(nvidia_box_gpus(self.host)) or -1

        def nvml_uuids() -> list[str] | None:
            self.recorder.record("device_count", None, "nvmlDeviceGetCount_v2")
            gpus = nvidia_box_gpus(self.host)
            return [g.uuid for g in gpus] if gpus else None

        def runtime_count() -> int:
            self.recorder.record("device_count", None, "cudaGetDeviceCount")
            return self.count()

        self._patches.set(torch._C, "_cuda_getDeviceCount", runtime_count)
        return {"amdsmi": amdsmi.module, "_HAS_PYNVML": True, "_raw_device_count_nvml": nvml_count,
                "_raw_device_uuid_nvml": nvml_uuids, "_cached_device_count": None}

    def _patch_torch(self) -> None:
        p, cuda = self._patches, torch.cuda
        for name, value in {
            **self._counting_patches(),
            "current_device": self.current_device,
            "set_device": self.set_device,
            "_exchange_device": self.exchange_device,
            "_maybe_exchange_device": self.maybe_exchange_device,
            "device": self.device_context,
            "get_device_properties": self.get_device_properties,
            "get_device_capability": self.get_device_capability,
            "get_device_name": self.get_device_name,
            "get_arch_list": self.get_arch_list,
            "synchronize": self.synchronize,
            "is_initialized": lambda: self.host.has_gpu_runtime,
            "_is_compiled": lambda: self.host.has_gpu_runtime,
            "init": lambda: None,
            "_lazy_init": lambda: None,
            "empty_cache": lambda: None,
            "default_generators": (),  # set per host by configure
        }.items():
            p.set(cuda, name, value)
        for name in GPU_ONLY:
            if hasattr(cuda, name):
                p.set(cuda, name, refusing(name, self._require_runtime, lambda r: self.on_refusal(r), getattr(cuda, name)))
        # the allocator's statistics and mem_get_info; torch.cuda.memory bound is_initialized at its import
        memory = memory_patches(
            lambda: self.host.has_gpu_runtime, self._memory_index, self._check, self.current_device,
            lambda ordinal: self.host.visible_gpus()[ordinal].total_memory)
        memory["is_initialized"] = cuda.is_initialized
        for name, value in memory.items():
            p.set(cuda.memory, name, value)
            if name != "is_initialized" and hasattr(cuda, name):
                p.set(cuda, name, value)
        # torch.cuda.random bound these names at its import (`from . import current_device, ...`)
        for name in ("current_device", "device_count", "is_initialized", "_lazy_init"):
            if hasattr(cuda.random, name):
                p.set(cuda.random, name, getattr(cuda, name))
        # Other accelerators never exist on a simulated host.
        for name in ("xpu", "mps", "npu"):
            module = getattr(torch, name, None)
            if module is not None and hasattr(module, "is_available"):
                p.set(module, "is_available", _wrapped(lambda: False, module.is_available))
            if module is not None and hasattr(module, "device_count"):
                p.set(module, "device_count", _wrapped(lambda: 0, module.device_count))
        if hasattr(torch.backends, "mps"):
            p.set(torch.backends.mps, "is_available", _wrapped(lambda: False, torch.backends.mps.is_available))
        acc = getattr(torch, "accelerator", None)
        if acc is not None:
            for name, value in {
                "current_accelerator": self.current_accelerator,
                "is_available": lambda: self.host.has_gpu_runtime and self.count() > 0,
                "device_count": lambda: self.count() if self.host.has_gpu_runtime else 0,
                "current_device_index": self.current_device,
                "current_device_idx": self.current_device,
                "set_device_index": self.set_device,
                "set_device_idx": self.set_device,
                "synchronize": self.synchronize,
            }.items():
                p.set(acc, name, value)
        # nothing is compiled on a simulated host: building compiled wrappers waits until one is called to compile
        p.set(torch, "compile", deferred(torch.compile))
        self._patch_moves()

    def _patch_moves(self) -> None:
        """While `moves` captures, `Tensor.to` toward a GPU records where the data would land instead of failing.

        The tensor stays on the CPU (there is no GPU); the landing ordinal follows torch: an explicit index is
        kept, an indexless "cuda" is the calling thread's current device. Any other device goes to torch's own
        `to` (an accelerator a simulated host never has raises as torch raises)."""
        original: Callable[..., torch.Tensor] = torch.Tensor.to
        original_cuda: Callable[..., torch.Tensor] = torch.Tensor.cuda
        moves = self.moves

        def to(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            if not moves.active:
                if self.host.has_gpu_runtime:
                    args, kwargs = self._indexed(args, kwargs)
                return original(tensor, *args, **kwargs)
            device, dtype, _non_blocking, _memory_format = torch._C._nn._parse_to(*args, **kwargs)
            if device is None or device.type != "cuda":  # the CPU, or an accelerator the host lacks: torch's own
                return original(tensor, *args, **kwargs)
            moves.landings.append((str(device), self.landing(device)))
            return tensor if dtype is None else original(tensor, dtype=dtype)

        def cuda(tensor: torch.Tensor, device: Any = None, *args: Any, **kwargs: Any) -> torch.Tensor:
            if self.host.has_gpu_runtime and (device is None or _indexless_cuda(device)):
                device = self.current_device()
            return original_cuda(tensor, device, *args, **kwargs)

        to.__wrapped__ = original  # type: ignore[attr-defined]
        cuda.__wrapped__ = original_cuda  # type: ignore[attr-defined]
        self._patches.set(torch.Tensor, "to", to)
        self._patches.set(torch.Tensor, "cuda", cuda)

    def _indexed(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """`Tensor.to`'s arguments with an indexless "cuda" given the simulated current device's index, as torch
        gives it one (`cudaGetDevice`) before it moves anything: torch's own lookup would ask the real runtime."""
        if _indexless_cuda(kwargs.get("device")):
            return args, {**kwargs, "device": torch.device("cuda", self.current_device())}
        if args and _indexless_cuda(args[0]):
            return (torch.device("cuda", self.current_device()), *args[1:]), kwargs
        return args, kwargs


def _indexless_cuda(device: Any) -> bool:
    """Whether `device` (a `Tensor.to` or `Tensor.cuda` argument: a device, a string, a dtype, a tensor, an
    ordinal or None) names the CUDA device type without an index."""
    if isinstance(device, torch.device):
        return device.type == "cuda" and device.index is None
    return isinstance(device, str) and device.strip() == "cuda"


def _by_torch(frame: FrameType | None) -> bool:
    """Whether `frame` is torch's own code (a module of the torch package), not the code under test.

    Torch reads device properties for its own purposes (e.g. `torch.utils._triton.has_triton` checks
    `get_device_properties().major` when a compiled or Triton path is first considered, on ROCm builds too):
    such a read is torch's implementation, never a dispatch decision of the project, so it is not recorded."""
    if frame is None:
        return False
    name = str(frame.f_globals.get("__name__", ""))
    return name == "torch" or name.startswith("torch.")


def _wrapped(replacement: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    """`replacement` with `__wrapped__` set (torch's dynamo reads it from patched functions at import)."""
    replacement.__wrapped__ = original  # type: ignore[attr-defined]
    return replacement
