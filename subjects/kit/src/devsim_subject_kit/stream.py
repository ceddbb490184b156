"""A session child's results as they happen: one JSON line per event, appended to a file its parent reads.

The child (`sessionchild`) writes, flushed at once so that nothing written is lost if it dies right after:
`collected` (every test id, before any runs), `start` (a test begins), `refused` (a GPU-only call the test made,
from any thread), `result` (a test's report entry, when it ends), `sanitizer` (the dispatch sanitizer's flags
since its last such event, from the child and each xdist worker) and `finished` (the session ended normally).
The parent (`sessionrun`) reads them back when the child ends, however it ended: a test that started and has no
result is the one the child died in.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ResultStream:
    """The child's side: events appended to `path` (nothing is written without one). Each event opens, appends
    and closes the file, so no open file outlives a write (a forked child, a suite that turns ResourceWarning into
    an error) and two processes (an xdist worker's `collected`, the controller's results) may append to it."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        """Append one event, on disk before returning."""
        if self.path is None:
            return
        line = json.dumps({"event": event, "time": time.time(), **fields}) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(line)


@dataclass
class StreamRead:
    """What one session child's stream says."""

    collected: list[str] | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    #: tests that started and have no result yet: node id -> when they started
    running: dict[str, float] = field(default_factory=dict)
    #: the first GPU-only call each test made: node id -> skip reason
    refused: dict[str, str] = field(default_factory=dict)
    finished: bool = False
    #: the sanitizer's flags, as increments (`sanitize.flags.FlagTable.drain`)
    sanitizer: list[dict[str, Any]] = field(default_factory=list)


def read_stream(path: Path) -> StreamRead:
    """The events of `path`, in order (a missing file is an empty stream; a line cut off by the child's death is
    left out)."""
    read = StreamRead()
    if not path.is_file():
        return read
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        kind, nodeid = event.get("event"), str(event.get("nodeid", ""))
        if kind == "collected" and read.collected is None:
            read.collected = [str(n) for n in event.get("nodeids", [])]
        elif kind == "start":
            read.running[nodeid] = float(event.get("time", 0.0))
        elif kind == "refused":
            read.refused.setdefault(nodeid, str(event.get("reason", "")))
        elif kind == "result":
            read.running.pop(nodeid, None)
            read.results.append(dict(event["entry"]))
        elif kind == "finished":
            read.finished = True
        elif kind == "sanitizer":
            read.sanitizer += [dict(f) for f in event.get("flags", []) if isinstance(f, dict)]
    return read
