"""The sanitizer's flags: one record per site (rule, file, line), with a count and the tests that hit it.

`FlagTable.hit` is what every check calls: it finds the project's frame, drops the hit when a suppression
matches it, and counts it at its site. The table remembers which sites changed since it was last drained
(`drain`, the stream's events) and which flags the running test raised (`take_test`, error mode).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .frames import project_frame, short_stack, where

#: The rule ids (inventory/rules.toml) the sanitizer's checks report.
RULES = ("no-cross-vendor-probe", "vendor-from-build", "explicit-ordinal-kept", "family-move-current",
         "target-context", "visible-devices", "per-target-arch")
#: The modes of `--devsim-sanitize`.
MODES = ("report", "error")


@dataclass
class Flag:
    """One site's flag, in the shape of the report's `sanitizer` list (docs/sanitizer.md)."""

    rule: str
    file: str
    line: int
    function: str
    message: str
    stack: list[str]
    count: int = 0
    tests: list[str] = field(default_factory=list)

    def to_json(self, profile: str) -> dict[str, Any]:
        """The flag as the report holds it."""
        return {"rule": self.rule, "profile": profile, "file": self.file, "line": self.line,
                "function": self.function, "count": self.count, "message": self.message, "stack": self.stack,
                "tests": list(self.tests)}


Site = tuple[str, str, int]
#: Whether a suppression covers a hit: (rule, file, function) -> True to drop it.
Suppressor = Callable[[str, str, str], bool]


class FlagTable:
    """Every flag of this process, deduplicated by site."""

    def __init__(self, suppressed: Suppressor = lambda rule, file, function: False) -> None:
        self.flags: dict[Site, Flag] = {}
        self.suppressed = suppressed
        self.suppressed_count = 0
        #: the test running now (set by the plugin's hooks), None outside a test
        self.test: str | None = None
        self._changed: dict[Site, int] = {}  # site -> hits since the last drain
        self._new_tests: dict[Site, list[str]] = {}
        self._test_flags: list[Flag] = []
        self._lock = threading.RLock()
        self._busy = threading.local()

    def hit(self, rule: str, message: str, frame: FrameType | None = None, depth: int = 1) -> Flag | None:
        """Record one violation of `rule` at `frame` (default: the innermost project frame above the caller,
        `depth` frames up). A hit with no project frame on the stack, or one a suppression covers, is dropped."""
        if getattr(self._busy, "on", False):
            return None  # a check's own work tripped another check
        self._busy.on = True
        try:
            frame = frame if frame is not None else project_frame(depth)
            if frame is None:
                return None
            file, line, function = where(frame)
            if self.suppressed(rule, file, function):
                self.suppressed_count += 1
                return None
            site = (rule, file, line)
            with self._lock:
                flag = self.flags.get(site)
                if flag is None:
                    flag = self.flags[site] = Flag(rule, file, line, function, message, short_stack(frame))
                flag.count += 1
                self._changed[site] = self._changed.get(site, 0) + 1
                test = self.test
                if test is not None and test not in flag.tests:
                    flag.tests.append(test)
                    self._new_tests.setdefault(site, []).append(test)
                if test is not None:
                    self._test_flags.append(flag)
            return flag
        finally:
            self._busy.on = False

    def take_test(self) -> list[Flag]:
        """The flags raised since the last call (error mode fails the running test for them)."""
        with self._lock:
            taken, self._test_flags = self._test_flags, []
        return taken

    def drain(self, profile: str) -> list[dict[str, Any]]:
        """The sites hit since the last drain, as report entries whose `count` and `tests` are what is new."""
        with self._lock:
            changed, self._changed = self._changed, {}
            tests, self._new_tests = self._new_tests, {}
            out = []
            for site, count in changed.items():
                entry = self.flags[site].to_json(profile)
                entry["count"], entry["tests"] = count, tests.get(site, [])
                out.append(entry)
        return out


def merge(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Report entries (drained increments, from any number of processes) merged by (profile, rule, file, line):
    counts added, tests joined in order; sorted by profile, file, line."""
    merged: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for entry in entries:
        key = (str(entry["profile"]), str(entry["rule"]), str(entry["file"]), int(entry["line"]))
        have = merged.get(key)
        if have is None:
            merged[key] = {**entry, "tests": list(entry.get("tests", []))}
            continue
        have["count"] = int(have["count"]) + int(entry["count"])
        have["tests"] += [t for t in entry.get("tests", []) if t not in have["tests"]]
    return sorted(merged.values(), key=lambda e: (e["profile"], e["file"], e["line"], e["rule"]))
