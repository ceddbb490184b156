"""The host a scenario runs on, as devsim sends it (`scenario.host`, docs/subject-protocol.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The visible-device variables torch builds read; a simulated host sets exactly the scenario's.
VISIBLE_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")

#: Opt-in shared memory per block when a host does not give one (devsim's profiles omit it for AMD).
DEFAULT_SMEM_OPTIN = 65536

#: The runtime versions a simulated build reports when the host names none.
DEFAULT_RUNTIME_VERSION = {"hip": "7.1.25424", "cuda": "13.0"}


class HostError(ValueError):
    """A host message this kit cannot read."""


@dataclass(frozen=True)
class Gpu:
    """One GPU: its arch (`sm_XY` or a gfx target), marketing name, opt-in shared memory and UUID."""

    arch: str
    name: str = ""
    smem_optin: int = DEFAULT_SMEM_OPTIN
    uuid: str = ""

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
    )
