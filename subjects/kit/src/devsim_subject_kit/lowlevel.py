"""Fakes of the low-level queries below torch that projects make themselves (today: `rocminfo`).

`RocmInfo(host_of).install()` answers `subprocess.run(["rocminfo", ...])` from the simulated host: one GPU
agent per GPU of the build, in physical order (rocminfo lists ROCr's agents, which HIP_VISIBLE_DEVICES does not
narrow; ROCR_VISIBLE_DEVICES does). Any other command runs for real. A CUDA or CPU host has no rocminfo: the
call fails as `FileNotFoundError`, as on a machine without ROCm.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

from .host import Host
from .patches import Patches
from .recorder import Recorder


def rocminfo_text(host: Host) -> str:
    """rocminfo's agent listing for `host`'s GPUs (the fields projects parse: Name, Marketing Name, Device Type)."""
    cpu_agent = (
        "*******\nAgent 1\n*******\n  Name:                    CPU\n  Marketing Name:          CPU\n"
        "  Device Type:             CPU\n"
    )
    agents = [cpu_agent]
    gpus = list(host.gpus)
    mask = host.environment().get("ROCR_VISIBLE_DEVICES")
    if mask is not None:
        gpus = [host.gpus[int(i)] for i in mask.split(",") if i.strip().isdigit() and int(i) < len(host.gpus)]
    for number, gpu in enumerate(gpus, 2):
        agents.append(
            f"*******\nAgent {number}\n*******\n  Name:                    {gpu.base_arch}\n"
            f"  Uuid:                    {gpu.uuid}\n  Marketing Name:          {gpu.name}\n"
            "  Device Type:             GPU\n"
        )
    return "ROCk module is loaded\n=====================\nHSA Agents\n==========\n" + "".join(agents)


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
            text = rocminfo_text(host)
            out: Any = text if kwargs.get("text") or kwargs.get("universal_newlines") else text.encode()
            return subprocess.CompletedProcess(argv, 0, out if kwargs.get("capture_output") else None,
                                               "" if kwargs.get("text") else b"")

        self._patches.set(subprocess, "run", run)
        return self

    def uninstall(self) -> None:
        """Restore subprocess.run."""
        self._patches.undo()
