"""What the kit's server needs of a subject: the interface a project adapter implements."""

from __future__ import annotations

from typing import Any, Protocol

from .host import Host


class TorchHost(Protocol):
    """A simulated (`SimulatedTorch`) or wrapped (`LiveTorch`) torch host."""

    host: Host

    def count(self) -> int:
        """The GPUs torch sees, not recorded."""
        ...

    def current(self) -> int:
        """The calling thread's current device, not recorded."""
        ...

    def leave(self) -> None:
        """A scenario ended: undo what entering it changed on the machine."""
        ...


class Subject(Protocol):
    """A project adapter: created and loaded once, after `hello`, then driven scenario by scenario.

    Simulated runs fork one child per scenario from the loaded process (`enter` and `step` run in the child);
    live runs call everything in the one process."""

    torch_host: TorchHost

    def handshake(self, protocol: int) -> dict[str, Any]:
        """The answer to hello for the negotiated protocol version."""
        ...

    def enter(self, host: Host) -> str | None:
        """Become `host` (simulated) or check the machine is it (live); a reason when it cannot."""
        ...

    def step(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Perform one step: an `observed` or `unsupported` answer."""
        ...

    def reusable(self) -> bool:
        """After a scenario's end (simulated): whether the next scenario of the same host may run here."""
        ...
