"""The sanitizer's hooks in a session child: which test runs, the stream of flags, and `error` mode.

Each process (the session child, or each pytest-xdist worker) streams its flags to the parent as increments:
after each test, the sites hit since the last one (and, at the session's end, those hit outside any test, at
collection or import). In `error` mode a test phase during which a flag was raised (in any thread) fails,
naming each rule and site.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from ..stream import ResultStream
from .core import Sanitizer


class SanitizerPlugin:
    """Registered beside `SessionChild` when the session child runs sanitized."""

    def __init__(self, sanitizer: Sanitizer, report: str | None) -> None:
        self.sanitizer = sanitizer
        self.stream = ResultStream(report)

    def _flush(self) -> None:
        flags = self.sanitizer.table.drain(self.sanitizer.profile)
        if flags:
            self.stream.write("sanitizer", flags=flags)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._flush()  # what collection or an earlier teardown raised outside a test
        self.sanitizer.table.test = nodeid
        self.sanitizer.table.take_test()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.sanitizer.table.test = None
        self._flush()

    def pytest_sessionfinish(self) -> None:
        self._flush()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
            None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if self.sanitizer.mode != "error":
            return report
        flags = self.sanitizer.table.take_test()
        if flags and report.passed:
            sites = list(dict.fromkeys(f"{f.rule} at {f.file}:{f.line} ({f.function}): {f.message}" for f in flags))
            report.outcome = "failed"
            report.longrepr = "devsim sanitizer (--devsim-sanitize=error) flagged this test:\n" + "\n".join(
                f"  {s}" for s in sites)
        return report
