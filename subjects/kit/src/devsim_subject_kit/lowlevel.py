"""Fakes of the low-level queries below torch that projects make themselves: `rocminfo`, NVML and amdsmi.

`RocmInfo(host_of).install()` answers `subprocess.run(["rocminfo", ...])` from the simulated host: one GPU
agent per GPU of the build, in physical order (rocminfo lists ROCr's agents, which HIP_VISIBLE_DEVICES does not
narrow; ROCR_VISIBLE_DEVICES does, the caller's own when devsim can be asked), so the first `Name: gfx` line is
device 0's, also on a mixed-arch box. Any other command runs for real. A CUDA or CPU host has no rocminfo: the
call fails as `FileNotFoundError`, as on a machine without ROCm.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any

from .host import Gpu, Host
from .patches import Patches
from .recorder import Recorder

_MISSING = object()


#: rocminfo's CPU agent (agent 1): a plausible CPU, not a measured one; projects parse the GPU agents.
ROCMINFO_CPU_AGENT = (
    "  Name:                    AMD EPYC 9654 96-Core Processor\n  Uuid:                    CPU-XX\n"
    "  Marketing Name:          AMD EPYC 9654 96-Core Processor\n  Vendor Name:             CPU\n"
    "  Device Type:             CPU\n"
)


def rocminfo_agent(gpu: Gpu) -> str:
    """One GPU agent's fields as rocminfo prints them: `Name:` is the base target (`gfx942`), `Uuid:` ROCr's
    `GPU-<serial>`, and the agent's ISA is named with its full target id (`amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`)."""
    uuid = gpu.uuid if gpu.uuid.startswith("GPU-") else f"GPU-{gpu.uuid}"
    return (
        f"  Name:                    {gpu.base_arch}\n  Uuid:                    {uuid}\n"
        f"  Marketing Name:          {gpu.name}\n  Vendor Name:             AMD\n"
        "  Device Type:             GPU\n  ISA Info:\n    ISA 1\n"
        f"      Name:                    amdgcn-amd-amdhsa--{gpu.gcn_arch_name}\n"
    )


def rocminfo_document(agents: list[str]) -> str:
    """rocminfo's output with the CPU agent first, then `agents` (GPU agents' fields) in the order ROCr lists them."""
    numbered = [f"*******\nAgent {n}\n*******\n{fields}" for n, fields in enumerate([ROCMINFO_CPU_AGENT, *agents], 1)]
    return ("ROCk module is loaded\n=====================\nHSA System Attributes\n=====================\n"
            "Runtime Version:         1.1\n\n==========\nHSA Agents\n==========\n" + "".join(numbered)
            + "*** Done ***\n")


def rocminfo_text(host: Host, listed: list[int] | None = None) -> str:
    """rocminfo's agent listing for `host`'s GPUs: `listed` (physical indices, as ROCr lists them under the
    process's ROCR_VISIBLE_DEVICES: `childmasks.rocr_view`), else the host's own ROCR_VISIBLE_DEVICES read as plain
    indices. HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES never narrow it: they act in HIP, above ROCr."""
    if listed is None:
        listed = list(range(len(host.gpus)))
        mask = host.environment().get("ROCR_VISIBLE_DEVICES")
        if mask is not None:
            listed = [int(i) for i in mask.split(",") if i.strip().isdigit() and int(i) < len(host.gpus)]
    return rocminfo_document([rocminfo_agent(host.gpus[i]) for i in listed])


class RocmInfo:
    """Answers `rocminfo` from the simulated host; records the call as a `device_count` query."""

    def __init__(self, host_of: Callable[[], Host], recorder: Recorder) -> None:
        self.host_of = host_of
        self.recorder = recorder
        self._patches = Patches()

    def install(self) -> RocmInfo:
        """Patch subprocess.run (idempotent)."""
        if self._patches:
            return self
        real_run = subprocess.run

        def run(args: Any, *rest: Any, **kwargs: Any) -> Any:
            argv = [args] if isinstance(args, str) else list(args) if isinstance(args, (list, tuple)) else []
            if not argv or str(argv[0]).rsplit("/", 1)[-1] != "rocminfo":
                return real_run(args, *rest, **kwargs)
            host = self.host_of()
            self.recorder.record("device_count", None, "rocminfo")
            if not host.is_rocm:
                raise FileNotFoundError(2, "No such file or directory", "rocminfo")
            text = rocminfo_text(host, self._listed(host, kwargs.get("env")))
            out: Any = text if kwargs.get("text") or kwargs.get("universal_newlines") else text.encode()
            return subprocess.CompletedProcess(argv, 0, out if kwargs.get("capture_output") else None,
                                               "" if kwargs.get("text") else b"")

        self._patches.set(subprocess, "run", run)
        return self

    @staticmethod
    def _listed(host: Host, env: Any) -> list[int] | None:
        """The GPUs ROCr lists for a rocminfo run with `env` (the caller's environment when None), where devsim
        can be asked ($DEVSIM): its ROCR_VISIBLE_DEVICES, not the profile's, is the one that applies."""
        environ = env if isinstance(env, dict) else os.environ
        devsim = os.environ.get("DEVSIM")
        if not devsim:
            return None
        from .childmasks import rocr_view

        return rocr_view(devsim, [g.uuid for g in host.gpus], environ)

    def uninstall(self) -> None:
        """Restore subprocess.run."""
        self._patches.undo()


# -- the vendor management libraries: NVML and amdsmi


def _box_gpus(host: Host, nvidia: bool) -> list[Gpu]:
    """The box's GPUs of one vendor in the management library's physical order: the build's own GPUs when they
    are that vendor's, else the foreign ones (a management library sees every GPU of its vendor in the box,
    whatever torch was built for, and ignores the visible-device variables)."""
    own = [g for g in host.gpus if g.is_nvidia == nvidia] if host.has_gpu_runtime else []
    return own + [g for g in host.foreign_gpus if g.is_nvidia == nvidia]


def nvidia_box_gpus(host: Host) -> list[Gpu]:
    """The NVIDIA GPUs NVML sees in `host`'s box, in physical order."""
    return _box_gpus(host, nvidia=True)


def amd_box_gpus(host: Host) -> list[Gpu]:
    """The AMD GPUs amdsmi (and amd-smi, rocm-smi) sees in `host`'s box, in physical order."""
    return _box_gpus(host, nvidia=False)


def _torch_ordinal(host: Host, gpu: Gpu) -> int | None:
    """The torch ordinal of a box GPU, when it is one of the build's own visible GPUs (None otherwise)."""
    for ordinal, physical in enumerate(host.visible if host.has_gpu_runtime else ()):
        if host.gpus[physical] is gpu:
            return ordinal
    return None


class Nvml:
    """NVML answered from the simulated host, on a pynvml-style module (`pynvml`, or a project's vendored copy).

    `install(module)` replaces the module's device functions; its own `NVMLError` classes are raised, so the
    project's `except` clauses see what the real library raises. A box without NVIDIA GPUs has no NVIDIA
    driver: `nvmlInit` raises `NVML_ERROR_LIBRARY_NOT_FOUND`. Handles are physical indexes (NVML ignores
    `CUDA_VISIBLE_DEVICES`); a UUID is found only whole, as NVML finds it. Reading a compute capability is
    recorded as `nvidia_capability` (with the torch ordinal when the GPU is a visible one of the build), a
    name as `device_name`, the count as `device_count`.
    """

    def __init__(self, host_of: Callable[[], Host], recorder: Recorder) -> None:
        self.host_of = host_of
        self.recorder = recorder
        self._patches = Patches()

    def install(self, module: Any) -> Nvml:
        """Patch `module`'s NVML functions (idempotent)."""
        if self._patches:
            return self
        error = module.NVMLError

        def gpus() -> list[Gpu]:
            found = _box_gpus(self.host_of(), nvidia=True)
            if not found:
                raise error(module.NVML_ERROR_LIBRARY_NOT_FOUND)
            return found

        def handle(index: Any) -> Gpu:
            found = gpus()
            if not isinstance(index, int) or not 0 <= index < len(found):
                raise error(module.NVML_ERROR_INVALID_ARGUMENT)
            return found[index]

        def gpu_of(value: Any) -> Gpu:
            if not isinstance(value, Gpu):
                raise error(module.NVML_ERROR_INVALID_ARGUMENT)
            return value

        def by_uuid(uuid: Any) -> Gpu:
            text = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
            for gpu in gpus():
                if gpu.uuid and gpu.uuid == text:
                    return gpu
            raise error(module.NVML_ERROR_NOT_FOUND)

        def count() -> int:
            self.recorder.record("device_count", None, "nvmlDeviceGetCount")
            return len(gpus())

        def capability(value: Any) -> tuple[int, int]:
            gpu = gpu_of(value)
            self.recorder.record("nvidia_capability", _torch_ordinal(self.host_of(), gpu),
                                 "nvmlDeviceGetCudaComputeCapability")
            return gpu.capability

        def name(value: Any) -> str:
            gpu = gpu_of(value)
            self.recorder.record("device_name", _torch_ordinal(self.host_of(), gpu), "nvmlDeviceGetName")
            return gpu.name

        def memory(value: Any) -> Any:
            gpu_of(value)
            total = 80 * 1024**3
            return types.SimpleNamespace(total=total, free=total, used=0)

        for attr, value in {
            "nvmlInit": lambda *flags: (gpus(), None)[1],
            "nvmlInitWithFlags": lambda *flags: (gpus(), None)[1],
            "nvmlShutdown": lambda: None,
            "nvmlDeviceGetCount": count,
            "nvmlDeviceGetHandleByIndex": handle,
            "nvmlDeviceGetHandleByUUID": by_uuid,
            "nvmlDeviceGetIndex": lambda value: next(i for i, g in enumerate(gpus()) if g is gpu_of(value)),
            "nvmlDeviceGetCudaComputeCapability": capability,
            "nvmlDeviceGetName": name,
            "nvmlDeviceGetUUID": lambda value: gpu_of(value).uuid,
            "nvmlDeviceGetMemoryInfo": memory,
            "nvmlSystemGetDriverVersion": lambda: "580.95.05",
        }.items():
            self._patches.set(module, attr, value)
        return self

    def uninstall(self) -> None:
        """Restore the module's functions."""
        self._patches.undo()


class AmdSmiException(Exception):
    """amdsmi's error type, raised by the fake as the real library raises its own (with its `err_code`)."""

    def __init__(self, message: str, err_code: int = 1) -> None:
        super().__init__(message)
        self.err_code = err_code


class _AsicInfo(dict[str, Any]):
    """amdsmi_get_gpu_asic_info's answer: reading `target_graphics_version` (the arch) is an `amd_arch` event."""

    def __init__(self, fields: dict[str, Any], on_arch: Callable[[], None]) -> None:
        super().__init__(fields)
        self._on_arch = on_arch

    def __getitem__(self, key: str) -> Any:
        if key == "target_graphics_version":
            self._on_arch()
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key == "target_graphics_version":
            self._on_arch()
        return super().get(key, default)


class Amdsmi:
    """A fake `amdsmi` module (AMD's management library) answering from the simulated host.

    `install()` puts it in `sys.modules` as `amdsmi`. Handles are the box's AMD GPUs in physical order (amdsmi
    ignores `HIP_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES` and `ROCR_VISIBLE_DEVICES`); a box without AMD GPUs
    has no amdgpu driver, and `amdsmi_init` raises. `amdsmi_get_gpu_asic_info` gives `target_graphics_version`
    (the arch without target features), `market_name`, `device_id` and `asic_serial` (`0x` and the GPU's
    serial); reading its arch is an `amd_arch` event (with the torch ordinal when the GPU is a visible one of
    the build).
    """

    def __init__(self, host_of: Callable[[], Host], recorder: Recorder) -> None:
        self.host_of = host_of
        self.recorder = recorder
        self.module = self._build()
        self._installed = False
        self._saved: Any = _MISSING  # what sys.modules held as amdsmi before install

    def _build(self) -> types.ModuleType:
        module = types.ModuleType("amdsmi", "devsim's fake amdsmi: AMD's management library on a simulated host")
        memory_type = types.SimpleNamespace(VRAM=0, VIS_VRAM=1, GTT=2)

        def gpus() -> list[Gpu]:
            found = _box_gpus(self.host_of(), nvidia=False)
            if not found:
                raise AmdSmiException("AMDSMI_STATUS_DRIVER_NOT_LOADED: the amdgpu driver is not loaded")
            return found

        def gpu_of(value: Any) -> Gpu:
            if not isinstance(value, Gpu) or value not in gpus():
                raise AmdSmiException("AMDSMI_STATUS_INVAL: not a processor handle")
            return value

        def handles() -> list[Gpu]:
            found = list(gpus())
            self.recorder.record("device_count", None, "amdsmi_get_processor_handles")
            return found

        def asic_info(value: Any) -> dict[str, Any]:
            gpu = gpu_of(value)
            ordinal = _torch_ordinal(self.host_of(), gpu)
            fields = {"market_name": gpu.name, "vendor_id": "0x1002", "vendor_name": "Advanced Micro Devices Inc.",
                      "device_id": "0x0000", "rev_id": "0x00", "asic_serial": "0x" + gpu.uuid,
                      "target_graphics_version": gpu.base_arch, "num_compute_units": 104}
            return _AsicInfo(fields, lambda: self.recorder.record("amd_arch", ordinal, "amdsmi_get_gpu_asic_info"))

        for name, value in {
            "AmdSmiException": AmdSmiException,
            "AmdSmiMemoryType": memory_type,
            "amdsmi_init": lambda *flags: (gpus(), None)[1],
            "amdsmi_shut_down": lambda: None,
            "amdsmi_get_processor_handles": handles,
            "amdsmi_get_gpu_asic_info": asic_info,
            "amdsmi_get_gpu_device_uuid": lambda value: gpu_of(value).uuid,
            "amdsmi_get_gpu_memory_total": lambda value, kind=0: (gpu_of(value), 192 * 1024**3)[1],
            "amdsmi_topo_get_link_type": lambda a, b: (gpu_of(a), gpu_of(b), {"hops": 1, "type": 2})[2],
            "amdsmi_topo_get_numa_node_number": lambda value: (gpu_of(value), 0)[1],
        }.items():
            setattr(module, name, value)
        return module

    def install(self) -> Amdsmi:
        """Make `import amdsmi` give the fake (idempotent)."""
        if not self._installed:
            self._saved = sys.modules.get("amdsmi", _MISSING)
            sys.modules["amdsmi"] = self.module
            self._installed = True
        return self

    def uninstall(self) -> None:
        """Put back whatever `amdsmi` was."""
        if not self._installed:
            return
        if sys.modules.get("amdsmi") is self.module:
            sys.modules.pop("amdsmi")
        if self._saved is not _MISSING:
            sys.modules["amdsmi"] = self._saved
        self._saved, self._installed = _MISSING, False
