"""Check `target-context`: a thread doing device work without a device context of its own while the thread that
started it was on another GPU.

A new thread starts on GPU 0 (CUDA and HIP keep the current device per thread). `Thread.start` notes the
starting thread's current GPU on the new thread; when that thread, never having set a device
(`set_device`, `torch.cuda.device(...)`), resolves its current GPU from a project frame (an indexless "cuda"
tensor or move, `current_device()`) and gets another GPU than its creator's, it is a flag: the worker's work
lands on GPU 0 while its caller works on GPU 1. A thread pool's worker notes the device of the thread that
submitted the work which started it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from .core import Sanitizer

_CREATOR = "_devsim_creator_device"


def check(san: Sanitizer, ordinal: int) -> None:
    """The calling thread resolved its current GPU (`ordinal`) for device work: a flag when it never chose a
    device and the thread that started it was on another."""
    thread = threading.current_thread()
    creator = getattr(thread, _CREATOR, None)
    if creator is not None and creator != ordinal and not san.torch_host._current.is_set():
        san.table.hit("target-context",
                      f"thread {thread.name!r} works on cuda:{ordinal} (a new thread's GPU) while the thread that "
                      f"started it was on cuda:{creator}: enter torch.cuda.device({creator}) (or pass the device) "
                      "in the thread", depth=2)


def install(san: Sanitizer) -> None:
    """Wrap `Thread.start` and the simulated host's current-device query."""
    start: Callable[[threading.Thread], None] = threading.Thread.start

    def started(thread: threading.Thread) -> None:
        if san.host().has_gpu_runtime:
            setattr(thread, _CREATOR, san.current())
        start(thread)

    current_device: Callable[[], int] = torch.cuda.current_device

    def checked_current_device() -> int:
        ordinal = current_device()
        check(san, ordinal)
        return ordinal

    checked_current_device.__wrapped__ = current_device  # type: ignore[attr-defined]
    san.patches.set(threading.Thread, "start", started)
    # torch.cuda's (what the CPU-backed tensors resolve an indexless "cuda" with), not the host's own method:
    # entering `torch.cuda.device(n)` asks the host for the current device, and that is the fix, not work
    san.patches.set(torch.cuda, "current_device", checked_current_device)
    for name in ("current_device_index", "current_device_idx"):
        accelerator: Any = getattr(torch, "accelerator", None)
        if accelerator is not None and hasattr(accelerator, name):
            san.patches.set(accelerator, name, checked_current_device)
