"""Each thread's current GPU on a simulated host, as the CUDA and HIP runtimes keep it: per thread, 0 at first."""

from __future__ import annotations

import threading


class _Slot(threading.local):
    """One thread's current device and the host generation it was set on."""

    generation = -1
    ordinal = 0


class CurrentDevices:
    """The current device of every thread. A thread that never set one is on device 0, as a new thread is on a
    real GPU host; `reset` (a new host) puts every thread back on 0 and the calling thread on `ordinal`.

    The state lives in a `threading.local`, so a thread that ended takes its device with it: a new thread that
    the system gives the same thread id starts at 0 too (a table keyed by `threading.get_ident` would hand it the
    old thread's device)."""

    def __init__(self) -> None:
        self._slot = _Slot()
        self._generation = 0

    def reset(self, ordinal: int = 0) -> None:
        """A new host: every thread back on device 0, the calling thread on `ordinal`."""
        self._generation += 1
        self.set(ordinal)

    def get(self) -> int:
        """The calling thread's current device."""
        slot = self._slot
        return slot.ordinal if slot.generation == self._generation else 0

    def is_set(self) -> bool:
        """Whether the calling thread chose its current device on this host (the thread that configured the
        host did)."""
        return self._slot.generation == self._generation

    def set(self, ordinal: int) -> None:
        """Make `ordinal` the calling thread's current device."""
        slot = self._slot
        slot.generation, slot.ordinal = self._generation, ordinal
