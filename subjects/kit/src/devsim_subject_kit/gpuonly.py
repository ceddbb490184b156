"""GPU-only native calls a simulated host cannot run, refused in whichever thread makes them.

`torch.cuda._sleep` spins a GPU kernel; `current_stream`, `default_stream` and `set_stream` hand out the
runtime's stream handles. torch's own functions would reach this machine's real runtime ("CUDA driver version is
insufficient"), from a worker thread as much as from the main one. On a simulated host each raises
`GpuOnlyCall` instead, and first tells `on_refusal` (the session child marks the running test: it becomes a skip
that names the call, even when the caller catches the error or a thread pool ends the process over it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .nativelibs import SimulatedNativeCall

#: The `torch.cuda` functions a simulated host refuses.
GPU_ONLY = ("_sleep", "current_stream", "default_stream", "set_stream")


class GpuOnlyCall(SimulatedNativeCall):
    """A GPU-only native call on a simulated host (a `SimulatedNativeCall`: a test it fails is a named skip)."""


def refusing(name: str, before: Callable[[], None], on_refusal: Callable[[str], None],
             original: Callable[..., Any]) -> Callable[..., Any]:
    """`torch.cuda.<name>` refused: `before` raises as torch would on a host without the runtime; then
    `on_refusal` gets the skip reason and `GpuOnlyCall` is raised."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        before()
        message = f"torch.cuda.{name} is a GPU-only native call that the simulated host does not run"
        on_refusal(f"needs a real GPU: {message}")
        raise GpuOnlyCall(message)

    refused.__wrapped__ = original  # type: ignore[attr-defined]  # torch._dynamo reads it from patched functions
    refused.__name__ = name
    return refused
