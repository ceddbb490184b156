"""The sanitizer of one process: its flag table, its mode and the checks it installed over a simulated torch."""

from __future__ import annotations

from typing import Any

from ..host import Host
from ..patches import Patches
from .flags import MODES, FlagTable
from .suppress import Suppressions


class Sanitizer:
    """Installs every check over `torch_host` (a `SimulatedTorch` already installed); `uninstall` undoes them.

    Nothing of the sanitizer runs before `install`: with the option off, no patch exists and nothing costs."""

    def __init__(self, torch_host: Any, mode: str = "report", suppressions: Suppressions | None = None,
                 profile: str = "") -> None:
        if mode not in MODES:
            raise ValueError(f"the sanitizer's mode is one of {', '.join(MODES)}, not {mode!r}")
        self.torch_host = torch_host
        self.mode = mode
        self.profile = profile
        self.table = FlagTable(suppressions.covers if suppressions is not None else (lambda r, f, fn: False))
        self.patches = Patches()

    def host(self) -> Host:
        """The simulated host now (it may be reconfigured)."""
        host: Host = self.torch_host.host
        return host

    def current(self) -> int:
        """The calling thread's current device, unrecorded."""
        return int(self.torch_host.current())

    def install(self) -> Sanitizer:
        """Install every check (idempotent)."""
        if self.patches:
            return self
        from . import masks, placement, queries, threadctx, vendor

        # `vendor` wraps outside `queries`: its capability values are made for the project frame that asked
        for check in (queries, vendor, placement, threadctx, masks):
            check.install(self)
        return self

    def uninstall(self) -> None:
        """Undo every check's patches."""
        self.patches.undo()
