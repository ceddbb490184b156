"""Every thread of a session on the simulated host, not only the main one: `AllThreads`.

torch keeps its dispatch modes per thread, so `CpuBackedGpus` entered by the main thread does nothing for a thread
the project starts (at import, in a thread pool, in a fixture): such a thread put its tensors on this machine's
real GPU runtime ("Found no NVIDIA driver on your system"). The simulated device API (`SimulatedTorch`) is
process-wide and keeps a current device per thread (0 in a new thread, as CUDA and HIP start it); the mode has to
be entered in each thread. `AllThreads` wraps the start of every `threading.Thread` (thread pools and
`concurrent.futures` workers are such threads), so each runs its whole life under its own `CpuBackedGpus` on a
host with GPUs, and an exception that ends a thread is told to `on_exception` (an error only a real GPU would
have avoided makes the running test a named skip, even if nothing joins the thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from .patches import Patches


class AllThreads:
    """While installed, each thread started through `threading` runs under `mode()` (a fresh context per thread,
    entered before its `run` and left after it), and `on_exception` sees what its `run` raised."""

    def __init__(self, mode: Callable[[], AbstractContextManager[object]],
                 on_exception: Callable[[BaseException], None]) -> None:
        self.mode = mode
        self.on_exception = on_exception
        self._patches = Patches()

    def install(self) -> AllThreads:
        """Wrap `threading.Thread`'s start-up (idempotent)."""
        if self._patches:
            return self
        original: Callable[[threading.Thread], None] = getattr(threading.Thread, "_bootstrap_inner")  # noqa: B009
        mode, on_exception = self.mode, self.on_exception

        def bootstrap_inner(thread: threading.Thread) -> None:
            run = thread.run

            def watched() -> None:
                try:
                    run()
                except BaseException as exc:
                    on_exception(exc)
                    raise

            thread.run = watched  # type: ignore[method-assign]  # the instance's own, for this start only
            with _safe(mode):
                original(thread)

        self._patches.set(threading.Thread, "_bootstrap_inner", bootstrap_inner)
        return self

    def uninstall(self) -> None:
        """Threads started from now on start as `threading` starts them."""
        self._patches.undo()


def _safe(mode: Callable[[], AbstractContextManager[object]]) -> AbstractContextManager[Any]:
    """`mode()`, or nothing if making it fails (a thread always starts)."""
    try:
        return mode()
    except Exception:  # noqa: BLE001 - the thread runs without the mode rather than not at all
        return nullcontext()
