"""The host a scenario runs on, as devsim sends it (`scenario.host`, docs/subject-protocol.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The visible-device variables torch builds read; a simulated host sets exactly the scenario's.
VISIBLE_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")

#: Opt-in shared memory per block when a host does not give one (devsim's profiles omit it for AMD).
DEFAULT_SMEM_OPTIN = 65536

#: The runtime versions a simulated build reports when the host names none. A real HIP build reports its HIP
#: version with the git hash of the release (torch 2.8.0+rocm6.4: "6.4.43482-0f2d60242"); a host's
#: `runtime_version` may give one in that form.
DEFAULT_RUNTIME_VERSION = {"hip": "7.1.25424", "cuda": "13.0"}

#: Total memory per GPU when a host gives none (MiB): the kit's long-standing 80 GiB, not a measurement.
DEFAULT_MEMORY_MIB = 80 * 1024

#: The target features HIP appends to a base gfx target in `gcnArchName` when a host's arch names none: HIP
#: reports the ISA's target id (ROCm/clr rocm-6.2.2 hipamd/src/hip_device.cpp:506, `isa.targetId()`), which
#: carries each feature the ISA supports (rocclr/device/device.cpp's ISA table: sramecc on gfx906, gfx908,
#: gfx90a, gfx940-942; xnack on gfx900, gfx906-gfx942, gfx1010) with its state on the machine: SRAM ECC on as
#: Instinct parts ship, XNACK off unless HSA_XNACK=1. Seen on real parts: `gfx906:sramecc+:xnack-` (pytorch PR
#: #107477), `gfx942:sramecc+:xnack-` (MI300X, pytorch/ao PR #2853), `gfx950:sramecc+:xnack-` (pytorch PR
#: #178331), `gfx90a:sramecc+:xnack-`, `gfx908:sramecc+:xnack-`, `gfx900:xnack-` and `gfx1010:xnack-` (rocminfo
#: "ISA Info" lines in public reports). RDNA2 and later (gfx1030, gfx11xx, gfx12xx) support neither: bare name.
DEFAULT_TARGET_FEATURES = {
    "gfx900": ":xnack-",
    "gfx906": ":sramecc+:xnack-",
    "gfx908": ":sramecc+:xnack-",
    "gfx90a": ":sramecc+:xnack-",
    "gfx940": ":sramecc+:xnack-",
    "gfx941": ":sramecc+:xnack-",
    "gfx942": ":sramecc+:xnack-",
    "gfx950": ":sramecc+:xnack-",
    "gfx1010": ":xnack-",
}

#: `torch.cuda.get_arch_list()` when a host gives no `arch_list`: what PyTorch's release wheels are built for.
#: CUDA: TORCH_CUDA_ARCH_LIST "7.0;7.5;8.0;8.6;9.0;10.0;12.0" of the CUDA 12.8 wheels (pytorch
#: .ci/manywheel/build_cuda.sh). HIP: PYTORCH_ROCM_ARCH of the ROCm 7.1/7.2 wheels, "gfx900;gfx906;" before the
#: common list (pytorch .ci/docker/manywheel/build.sh at 027375bf). torch lists them as built, in that order.
DEFAULT_ARCH_LIST = {
    "cuda": ("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
    "hip": ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101",
            "gfx1102", "gfx1103", "gfx1200", "gfx1201", "gfx1150", "gfx1151"),
}


class HostError(ValueError):
    """A host message this kit cannot read."""


@dataclass(frozen=True)
class Gpu:
    """One GPU: its arch (`sm_XY` or a gfx target), marketing name, opt-in shared memory and UUID."""

    arch: str
    name: str = ""
    smem_optin: int = DEFAULT_SMEM_OPTIN
    uuid: str = ""
    memory_mib: int = DEFAULT_MEMORY_MIB

    @property
    def is_nvidia(self) -> bool:
        """Whether the arch is an NVIDIA compute capability."""
        return self.arch.startswith("sm_")

    @property
    def capability(self) -> tuple[int, int]:
        """(major, minor) as torch reports it: sm_XY -> (X, Y); gfxMMms -> (MM, m) as HIP's props do."""
        if self.is_nvidia:
            digits = self.arch[3:]
            return int(digits[:-1]), int(digits[-1])
        match = re.match(r"gfx([0-9a-f]+)", self.arch)
        if not match or len(match.group(1)) < 3:
            return 0, 0
        digits = match.group(1)
        return int(digits[:-2]), int(digits[-2], 16)

    @property
    def gcn_arch_name(self) -> str:
        """What a HIP build's `get_device_properties().gcnArchName` answers: the arch as the host wrote it when it
        names target features, else the base target with the features its ISA carries (`DEFAULT_TARGET_FEATURES`)."""
        if ":" in self.arch:
            return self.arch
        return self.arch + DEFAULT_TARGET_FEATURES.get(self.arch, "")

    @property
    def total_memory(self) -> int:
        """Total memory in bytes (`total_memory`, `mem_get_info`)."""
        return self.memory_mib * 1024 * 1024

    @property
    def base_arch(self) -> str:
        """The arch without target features (`gfx942:sramecc+:xnack-` -> `gfx942`)."""
        return self.arch.split(":", 1)[0]


@dataclass(frozen=True)
class Host:
    """A torch build (`cuda`, `hip` or `cpu`), its GPUs, the visible-device resolution and the current device."""

    torch: str = "cpu"
    gpus: tuple[Gpu, ...] = ()
    foreign_gpus: tuple[Gpu, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    visible: tuple[int, ...] = ()
    current: int = 0
    runtime_version: str | None = None
    arch_list: tuple[str, ...] | None = None
    live: bool = False

    @classmethod
    def from_message(cls, host: Any, live: bool = False) -> Host:
        """Read `scenario.host`; a malformed one raises HostError naming what is wrong."""
        if not isinstance(host, dict):
            raise HostError(f"a host is an object, got {type(host).__name__}")
        try:
            gpus = tuple(_gpu(g) for g in host.get("gpus", []))
            visible = tuple(int(i) for i in host.get("visible", range(len(gpus))))
            made = cls(
                torch=str(host["torch"]),
                gpus=gpus,
                foreign_gpus=tuple(_gpu(g) for g in host.get("foreign_gpus", [])),
                env=tuple(sorted((str(k), str(v)) for k, v in (host.get("env") or {}).items())),
                visible=visible,
                current=int(host.get("current", 0)),
                runtime_version=host.get("runtime_version"),
                arch_list=None if host.get("arch_list") is None else tuple(str(a) for a in host["arch_list"]),
                live=live,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HostError(f"cannot read the host: {exc!r}") from exc
        if made.torch not in ("cuda", "hip", "cpu"):
            raise HostError(f"unknown torch build {made.torch!r}")
        if any(i < 0 or i >= len(gpus) for i in visible):
            raise HostError(f"visible ordinals {list(visible)} outside the {len(gpus)} GPU(s)")
        return made

    @property
    def has_gpu_runtime(self) -> bool:
        """Whether torch is a GPU build (CUDA or HIP)."""
        return self.torch in ("cuda", "hip")

    @property
    def is_rocm(self) -> bool:
        """Whether torch is a HIP (ROCm) build."""
        return self.torch == "hip"

    @property
    def version(self) -> str | None:
        """What `torch.version.hip` / `torch.version.cuda` reports on this build (None on the other)."""
        if not self.has_gpu_runtime:
            return None
        return self.runtime_version or DEFAULT_RUNTIME_VERSION[self.torch]

    @property
    def build_arch_list(self) -> list[str]:
        """What `torch.cuda.get_arch_list()` lists on this build: the host's `arch_list`, else the release wheels'
        (`DEFAULT_ARCH_LIST`); a CPU build lists none."""
        if not self.has_gpu_runtime:
            return []
        return list(self.arch_list if self.arch_list is not None else DEFAULT_ARCH_LIST[self.torch])

    def visible_gpus(self) -> list[Gpu]:
        """The GPUs torch sees, by ordinal."""
        if not self.has_gpu_runtime:
            return []
        return [self.gpus[i] for i in self.visible]

    def environment(self) -> dict[str, str]:
        """The visible-device variables as the scenario wrote them."""
        return dict(self.env)

    def unsupported(self) -> str | None:
        """Why a simulated build cannot drive this host's visible GPUs (None: it can)."""
        for gpu in self.visible_gpus():
            if self.is_rocm and not gpu.arch.startswith("gfx"):
                return f"a HIP build cannot drive {gpu.arch}"
            if self.torch == "cuda" and not gpu.is_nvidia:
                return f"a CUDA build cannot drive {gpu.arch}"
        return None


def _gpu(g: Any) -> Gpu:
    if not isinstance(g, dict) or not isinstance(g.get("arch"), str):
        raise TypeError(f"a GPU needs an arch: {g!r}")
    return Gpu(
        arch=g["arch"],
        name=g.get("name") or g["arch"],
        smem_optin=int(g.get("smem_optin") or DEFAULT_SMEM_OPTIN),
        uuid=g.get("uuid") or "",
        memory_mib=int(g.get("memory_mib") or DEFAULT_MEMORY_MIB),
    )
