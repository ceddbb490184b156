"""Trace events recorded while a step runs, from the step's own thread only."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from . import blame


class Recorder:
    """Collects trace events (`{"event", "device"?, "detail"?}`) while `capture` is active.

    Only the thread that entered `capture` records: worker threads of the code under test run asynchronously
    and would make traces nondeterministic. `quiet` suspends recording for the subject's own bookkeeping calls.
    """

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] | None = None
        self.thread: int | None = None
        self.suspended = 0

    @property
    def on_step_thread(self) -> bool:
        """Whether the calling thread is the one running the captured step."""
        return self.events is not None and threading.get_ident() == self.thread

    def record(self, event: str, device: int | None = None, detail: str | None = None) -> None:
        """Append one event, when a step is captured on this thread and recording is not suspended."""
        if self.events is None or self.suspended or threading.get_ident() != self.thread:
            return
        entry: dict[str, Any] = {"event": event}
        if device is not None:
            entry["device"] = device
        if detail is not None:
            entry["detail"] = detail
        self.events.append(entry)
        blame.event(event)

    @contextlib.contextmanager
    def capture(self) -> Iterator[list[dict[str, Any]]]:
        """Record the calling thread's events into the yielded list until the block ends."""
        events: list[dict[str, Any]] = []
        saved = self.events, self.thread
        self.events, self.thread = events, threading.get_ident()
        try:
            yield events
        finally:
            self.events, self.thread = saved

    @contextlib.contextmanager
    def undone_on_error(self) -> Iterator[None]:
        """Events recorded in the block are dropped when it raises: an attempt the subject retries another way
        must not leave its half of the trace behind."""
        mark = len(self.events) if self.events is not None else 0
        try:
            yield
        except BaseException:
            if self.events is not None:
                del self.events[mark:]
            raise

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Calls made by the subject itself (bookkeeping, not the code under test) are not recorded."""
        self.suspended += 1
        try:
            yield
        finally:
            self.suspended -= 1


class MoveCapture:
    """While active, the torch host records where each `Tensor.to` toward a GPU lands (`(asked, landed)`)."""

    def __init__(self) -> None:
        self.active = False
        self.landings: list[tuple[str, Any]] = []

    @contextlib.contextmanager
    def capture(self) -> Iterator[list[tuple[str, Any]]]:
        """Collect landings until the block ends."""
        self.active, self.landings = True, []
        try:
            yield self.landings
        finally:
            self.active = False
