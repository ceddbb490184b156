"""The hooks of a session child (`session`): ids, the per-test timeout, what needs a real GPU, the report.

- Each test's node id gets the profile among its parameters (`test_x[devsim:r9700x2]`, `test_y[1-devsim:h200]`),
  so the runs of one suite on several profiles have distinct ids in every report.
- A test phase (setup, call, teardown) that runs longer than `--devsim-timeout` seconds fails, its report
  showing where every thread stood: the main thread is interrupted by SIGALRM (the failure's traceback is where
  it stood; the message adds the other threads' stacks). Should the main thread not get back to Python (a native call that never returns) or a test run in
  another thread, faulthandler dumps every thread's stack to the real stderr 30 seconds later and ends the
  process, so a session never hangs.
- A failure that only a real GPU would have avoided is a skip that names what it needed (`needs_real_gpu`):
  a call into a stand-in native library (`SimulatedNativeCall`), a native op with no CPU kernel, a Triton
  launch, or device memory (torch's "no driver" errors); on a host without a GPU runtime only the first.
  Everything else fails as it is.
- The report (`--devsim-report`) gets one entry per test: node id, profile, outcome, duration, reason. Each
  entry reaches the parent as its test ends (`stream`), with the collected ids first and each test's start, so
  a child that dies loses nothing and names the test it died in; a fresh child is told the tests already run
  (`SessionSpec.skip`) and deselects them.
- A GPU-only call (`gpuonly`) or a thread ending with an error only a real GPU would have avoided (`threads`),
  in any thread, makes the running test a skip that names it.
"""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Generator, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import pytest

from .host import Host
from .nativelibs import SimulatedNativeCall
from .session import SessionHost, describe
from .stream import ResultStream

#: Seconds between the SIGALRM failure and the faulthandler backstop that ends the process.
BACKSTOP_GRACE = 30.0

# torch's errors for device memory or a kernel on a GPU that this machine does not have
_NO_DEVICE = ("Found no NVIDIA driver", "CUDA driver version is insufficient", "no CUDA-capable device is detected",
              "No HIP GPUs are available", "no ROCm-capable device is detected", "Torch not compiled with CUDA enabled")
_NO_KERNEL = re.compile(r"Could not run '([^']+)' with arguments from the '(\w+)' backend")
_AVAILABLE = re.compile(r"only available for these backends: \[([^\]]*)\]")


def needs_real_gpu(exc: BaseException | None, host: Host) -> str | None:
    """The skip reason when `exc` (or an exception it was raised from) is something only a real GPU runs.

    On a CPU host (no GPU runtime) only the kit's own `SimulatedNativeCall` counts: there, a native op, a Triton
    launch or device memory fails as it would on a real CPU-only machine."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc)
        first = (text.strip().splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, SimulatedNativeCall):
            return f"needs a real GPU: {first}"
        if host.has_gpu_runtime:
            gpu_only = _gpu_only_op(text)
            if gpu_only:
                return f"needs a real GPU: the native op {gpu_only}"
            if _raised_in(exc, "triton"):
                return f"needs a real GPU: a Triton launch ({type(exc).__name__}: {first})"
            if any(known in text for known in _NO_DEVICE):
                return f"needs a real GPU: device memory or a kernel on the GPU ({type(exc).__name__}: {first})"
        exc = exc.__cause__ or exc.__context__
    return None


def _gpu_only_op(text: str) -> str | None:
    """`OP has no CPU kernel (CUDA only)` when torch's dispatcher error says a GPU backend has the op's only kernel."""
    match = _NO_KERNEL.search(text)
    if match is None:
        return None
    available = _AVAILABLE.search(text)
    backends = {b.strip() for b in available.group(1).split(",")} if available else set()
    gpus = [b for b in ("CUDA", "HIP") if b in backends or match.group(2) == b]
    if not gpus or "CPU" in backends:
        return None
    return f"{match.group(1)} has no CPU kernel ({'/'.join(gpus)} only)"


def _raised_in(exc: BaseException, package: str) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__", ""))
        if name == package or name.startswith(package + "."):
            return True
        tb = tb.tb_next
    return False


def with_profile(nodeid: str, profile: str) -> str:
    """`nodeid` with the profile among its parameters: `t[devsim:h200]`, `t[1-devsim:h200]`."""
    if nodeid.endswith("]") and "[" in nodeid.rpartition("::")[2]:
        return f"{nodeid[:-1]}-devsim:{profile}]"
    return f"{nodeid}[devsim:{profile}]"


def _rename(item: pytest.Item, nodeid: str) -> None:
    """Give `item` another node id (pytest has no public way to)."""
    if hasattr(item, "_id"):  # pytest >= 9.1 keeps a structured node id
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(nodeid)
    else:
        setattr(item, "_nodeid", nodeid)  # noqa: B010 - a private attribute of older pytest


def thread_stacks(but: int | None = None) -> str:
    """Every thread's Python stack but thread `but`'s, most recent call last."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        if ident != but:
            parts.append(f"Thread {names.get(ident, ident)}:\n" + "".join(traceback.format_stack(frame)))
    return "\n".join(parts)


class SessionChild:
    """The plugin object a session child registers (`pytest_plugin` does, when `session.boot` installed a host)."""

    def __init__(self, session_host: SessionHost, real_stderr: TextIO | None) -> None:
        self.session_host = session_host
        self.profile = session_host.spec.profile
        self.timeout = session_host.spec.timeout
        self.real_stderr = real_stderr
        self.results: dict[str, dict[str, Any]] = {}
        self.stream = ResultStream(None)
        self.running: str | None = None  # the test whose protocol runs now (in the controller)
        self.refused: dict[str, str] = {}  # node id -> the first GPU-only call it made
        session_host.torch_host.on_refusal = self._refuse
        if session_host.threads is not None:
            session_host.threads.on_exception = self._thread_raised

    # -- header and ids

    def pytest_report_header(self) -> str:
        host = describe(self.session_host.host)
        return f"devsim: simulated host {self.profile} ({host}); per-test timeout {self.timeout:g}s"

    def pytest_configure(self, config: pytest.Config) -> None:
        # only the process that reports (not an xdist worker) streams its results to the parent
        if not hasattr(config, "workerinput"):
            self.stream = ResultStream(self.session_host.spec.report)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        for item in items:
            _rename(item, with_profile(item.nodeid, self.profile))
        worker = getattr(config, "workerinput", {}).get("workerid")
        if worker in (None, "gw0"):
            ResultStream(self.session_host.spec.report).write("collected", nodeids=[i.nodeid for i in items])
        done = _done(self.session_host.spec.skip)
        if done:  # a fresh child after one died: the tests the earlier ones ran are not run again
            kept = [i for i in items if i.nodeid not in done]
            config.hook.pytest_deselected(items=[i for i in items if i.nodeid in done])
            items[:] = kept

    # -- the timeout

    @contextmanager
    def _deadline(self, item: pytest.Item, when: str) -> Iterator[None]:
        if self.timeout <= 0:
            yield
            return
        faulthandler.dump_traceback_later(self.timeout + BACKSTOP_GRACE, exit=True,
                                          file=self.real_stderr or sys.__stderr__ or 2)
        main = threading.current_thread() is threading.main_thread()
        previous: Any = None
        if main:
            def expire(signum: int, frame: FrameType | None) -> None:
                others = thread_stacks(but=threading.get_ident())
                pytest.fail(
                    f"devsim: {item.nodeid} ({when}) ran past --devsim-timeout {self.timeout:g}s on simulated host "
                    f"{self.profile}; the traceback is where the test stood"
                    + (f"; the other threads stood at:\n{others}" if others else ""),
                    pytrace=True,
                )

            previous = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            yield
        finally:
            if main:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            faulthandler.cancel_dump_traceback_later()

    @contextmanager
    def _phase(self, item: pytest.Item, when: str) -> Iterator[None]:
        """One test phase on the host: under its deadline and, on a host with GPUs, with tensors placed on them
        CPU-backed (`CpuBackedGpus`), the mode left when the phase ends however it ends."""
        with self._deadline(item, when), self._tensors_on_gpus():
            yield

    def _tensors_on_gpus(self) -> AbstractContextManager[object]:
        if not self.session_host.host.has_gpu_runtime:
            return nullcontext()
        # torch is imported by now: the host patched it
        from .cpubacked import CpuBackedGpus

        return CpuBackedGpus()  # type: ignore[no-untyped-call]  # torch's mode is untyped

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._phase(item, "setup"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._phase(item, "call"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._phase(item, "teardown"):
            return (yield)

    # -- what needs a real GPU

    def _refuse(self, reason: str) -> None:
        """A GPU-only call was refused, in any thread: the running test becomes a skip that names it. The event
        is streamed at once, so the parent names it even if the process dies over it (a thread pool that aborts
        when a worker raises)."""
        running = self.running
        if running is not None and running not in self.refused:
            self.refused[running] = reason
            self.stream.write("refused", nodeid=running, reason=reason)

    def _thread_raised(self, exc: BaseException) -> None:
        """A thread ended with `exc`: one only a real GPU would have avoided is refused for the running test."""
        reason = needs_real_gpu(exc, self.session_host.host)
        if reason is not None:
            self._refuse(reason)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
            None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when not in ("setup", "call") or report.skipped:
            return report
        reason = self.refused.get(item.nodeid)
        if reason is None and call.excinfo is not None and report.failed:
            reason = needs_real_gpu(call.excinfo.value, self.session_host.host)
        if reason is not None:  # a GPU-only call refused in any thread: the outcome is not the GPU's
            report.outcome = "skipped"
            report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {reason}")
        return report

    # -- the report

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.running = nodeid
        self.stream.write("start", nodeid=nodeid)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.running == nodeid:
            self.running = None
        entry = self.results.get(nodeid)
        if entry is not None:
            self.stream.write("result", nodeid=nodeid, entry=entry)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.results.setdefault(report.nodeid, {"nodeid": report.nodeid, "profile": self.profile,
                                                        "outcome": "passed", "duration": 0.0})
        entry["duration"] = round(entry["duration"] + report.duration, 6)
        if entry["outcome"] in ("failed", "error"):
            return
        xfail = hasattr(report, "wasxfail")
        if report.failed:
            entry["outcome"] = "failed" if report.when == "call" else "error"
            crash = getattr(report.longrepr, "reprcrash", None)
            lines = report.longreprtext.splitlines()
            entry["reason"] = str(getattr(crash, "message", "") or (lines[-1] if lines else ""))
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "xfailed" if xfail else "skipped"
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else getattr(report, "wasxfail", "")
            entry["reason"] = str(reason).removeprefix("Skipped: ")
        elif report.when == "call" and report.passed and xfail:
            entry["outcome"] = "xpassed"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.stream.write("finished")


def _done(path: str | None) -> set[str]:
    """The node ids listed in `path`, one a line (none without a file)."""
    return set(Path(path).read_text(encoding="utf-8").splitlines()) if path else set()


def dup_stderr() -> TextIO | None:
    """A file on this process's stderr as it is now, before pytest captures file descriptor 2."""
    try:
        return os.fdopen(os.dup(2), "w")
    except OSError:
        return None
