"""One profile's session (`session`): session children run until every test has run, a dead one replaced.

A session child streams each test's result as it ends (`stream`). When it dies before its session ends (an
`exit`, `os._exit`, a signal such as SIGKILL or SIGSEGV, an abort, or the timeout's backstop after a hang), the
test it was running is `crashed`, with the exit status or signal and the child's last output lines, and a fresh
child resumes the session from the next test (the tests already run are deselected), as pytest-xdist restarts a
crashed worker. A crashed test in which a GPU-only call was refused (`gpuonly`) is the named skip instead. After
`max_restarts` restarts the tests left are not run, and the parent says so. Every child's output is streamed to
this process's stdout and stderr as it comes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO
from xml.etree import ElementTree

import pytest

from .host import VISIBLE_ENV, Host
from .junitcases import junit_suite
from .session import SESSION_ENV, SessionSpec, junit_suites, say, worst
from .shims import write_shims
from .stream import StreamRead, read_stream

#: Restarts of a profile's session after a child died, when `--devsim-max-restarts` does not say.
DEFAULT_MAX_RESTARTS = 10
#: How many of a dead child's last output lines its crashed test keeps.
TAIL_LINES = 60
_TAIL_BYTES = 64 * 1024


@dataclass
class ProfileRun:
    """What one profile's session came to: its exit code, every test's report entry, the JUnit suites."""

    code: int = 0
    tests: list[dict[str, Any]] = field(default_factory=list)
    suites: list[ElementTree.Element] = field(default_factory=list)
    restarts: int = 0
    #: the tests never run because the restart limit was reached
    unrun: list[str] = field(default_factory=list)
    #: the sanitizer's flags as the children streamed them (increments, merged by `sanitize.merge`)
    sanitizer: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RunOptions:
    """How each profile's children run: pytest's arguments, its folder, the timeout and the limits."""

    args: Sequence[str]
    where: Path
    timeout: float
    junit: bool
    max_restarts: int = DEFAULT_MAX_RESTARTS
    stop_on_failure: bool = False
    #: the sanitizer's mode (None: off) and suppressions file
    sanitize: str | None = None
    suppressions: str | None = None


def run_profile(name: str, message: dict[str, Any], host: Host, options: RunOptions) -> ProfileRun:
    """Run the session on profile `name` until every test ran or the restart limit is reached."""
    run = ProfileRun()
    codes: list[int] = []
    done: list[str] = []
    collected: list[str] | None = None
    with tempfile.TemporaryDirectory(prefix="devsim-session-") as folder:
        scratch = Path(folder)
        write_shims(scratch / "bin", host, name)
        while True:
            read, code, tail = _run_child(name, message, scratch, options, run.restarts, done)
            collected = collected or read.collected
            run.tests += read.results
            run.sanitizer += read.sanitizer
            crashed = [] if read.finished else [crash_entry(n, name, t, read, code, tail)
                                                for n, t in read.running.items()]
            run.tests += crashed
            junit_file = scratch / f"junit-{run.restarts}.xml"
            if options.junit:
                got = junit_suites(junit_file, name)
                run.suites += got or [junit_suite(read.results + crashed, name)]
            if not crashed:
                codes.append(code if read.finished or code != 0 else int(pytest.ExitCode.INTERNAL_ERROR))
                if not read.finished and not 0 < code <= max(pytest.ExitCode):
                    say(f"devsim: the session child on {name} ended before its session did ({cause(code)})")
                break
            failed = any(c["outcome"] == "crashed" for c in crashed)
            codes.append(int(pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK))
            done += [str(t["nodeid"]) for t in read.results] + [str(c["nodeid"]) for c in crashed]
            left = [n for n in collected or [] if n not in set(done)]
            say(f"devsim: the session child on {name} died in {', '.join(c['nodeid'] for c in crashed)} "
                 f"({cause(code)}); {len(left)} test(s) left")
            if not left or code == pytest.ExitCode.INTERRUPTED or (options.stop_on_failure and failed):
                break
            if run.restarts >= options.max_restarts:
                run.unrun = left
                codes.append(int(pytest.ExitCode.TESTS_FAILED))
                say(f"devsim: the session on {name} reached the restart limit ({options.max_restarts}, "
                     f"--devsim-max-restarts): {len(left)} test(s) not run")
                break
            run.restarts += 1
            say(f"devsim: restart {run.restarts} of at most {options.max_restarts}: a fresh session child on "
                 f"{name} resumes from the next test")
    run.code = worst(codes)
    counts = Counter(str(t["outcome"]) for t in run.tests)
    outcomes = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no tests"
    say(f"devsim: {name}: {outcomes}; {run.restarts} restart(s)"
         + (f"; {len(run.unrun)} not run (restart limit)" if run.unrun else ""))
    return run


def _run_child(name: str, message: dict[str, Any], scratch: Path, options: RunOptions, attempt: int,
               done: list[str]) -> tuple[StreamRead, int, list[str]]:
    """One session child: its stream read back, its exit code and its last output lines."""
    skip = scratch / "done.txt"
    skip.write_text("".join(f"{n}\n" for n in done), encoding="utf-8")
    stream = scratch / f"stream-{attempt}.jsonl"
    spec = SessionSpec(profile=name, host=message, timeout=options.timeout, report=str(stream),
                       skip=str(skip) if done else None, sanitize=options.sanitize,
                       suppressions=options.suppressions)
    env = dict(os.environ, **{SESSION_ENV: spec.to_env()})
    # the session child runs with exactly the profile's visible-device variables: a process it starts with other
    # ones sees what those leave of the box (`childmasks`)
    for variable in VISIBLE_ENV:
        env.pop(variable, None)
    env.update({str(k): str(v) for k, v in (message.get("env") or {}).items()})
    env["PATH"] = os.pathsep.join([str(scratch / "bin"), env.get("PATH", "")])
    if sys.stdout.isatty():  # the child writes to a pipe: keep the terminal's colours and width
        env.setdefault("PY_COLORS", "1")
        env.setdefault("COLUMNS", str(shutil.get_terminal_size().columns))
    # each child writes its own JUnit file (the last --junitxml wins), merged into the one asked for
    junit = [f"--junitxml={scratch / f'junit-{attempt}.xml'}"] if options.junit else []
    code, tail = run_streamed([sys.executable, "-m", "pytest", *options.args, *junit], options.where, env)
    return read_stream(stream), code, tail


def run_streamed(command: list[str], where: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    """Run `command`, its stdout and stderr passed on as they come; its exit code (INTERRUPTED on Ctrl-C) and
    its last `TAIL_LINES` lines of output."""
    chunks: deque[bytes] = deque()  # the output of both streams in the order it came, the last _TAIL_BYTES
    lock = threading.Lock()
    state: dict[str, Any] = {"size": 0, "last": None, "open_line": False}

    def pump(source: BinaryIO, sink: Any) -> None:
        while data := os.read(source.fileno(), 65536):
            sink.write(data)
            sink.flush()
            with lock:
                if source is process.stdout:  # whether the child's stdout ends in the middle of a line
                    state["open_line"] = not data.endswith(b"\n")
                if state["last"] not in (None, source) and chunks and not chunks[-1].endswith(b"\n"):
                    data = b"\n" + data  # the other stream's line was cut: this one starts a line of its own
                state["last"] = source
                chunks.append(data)
                state["size"] += len(data)
                while state["size"] > _TAIL_BYTES and len(chunks) > 1:
                    state["size"] -= len(chunks.popleft())

    process = subprocess.Popen(command, cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None  # both are pipes
    pumps = [threading.Thread(target=pump, args=(pipe, _binary(sink)), daemon=True)
             for pipe, sink in ((process.stdout, sys.stdout), (process.stderr, sys.stderr))]
    for thread in pumps:
        thread.start()
    try:
        code = process.wait()
    except KeyboardInterrupt:  # the child got the same Ctrl-C
        process.wait()
        code = int(pytest.ExitCode.INTERRUPTED)
    for thread in pumps:  # a process the child left running may hold the pipes open: do not wait for it
        thread.join(timeout=2.0)
    with lock:
        text = b"".join(chunks).decode("utf-8", errors="replace")
    if state["open_line"]:  # the parent's next line starts a line of its own
        say("")
    return code, text.splitlines()[-TAIL_LINES:]


def _binary(stream: Any) -> Any:
    """The byte stream under a text stream (sys.stdout's buffer), or a writer that decodes into it."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return buffer

    class Decoding:
        def write(self, data: bytes) -> None:
            stream.write(data.decode("utf-8", errors="replace"))

        def flush(self) -> None:
            stream.flush()

    return Decoding()


def cause(code: int) -> str:
    """How a child ended: `exit status 3`, `signal 9 (SIGKILL)`."""
    if code < 0:
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def crash_entry(nodeid: str, profile: str, started: float, read: StreamRead, code: int,
                tail: list[str]) -> dict[str, Any]:
    """The report entry of a test its child died in: crashed, or the named skip of a GPU-only call it made."""
    died = f"the session child died while running it ({cause(code)})"
    if code == 1 and any(line.startswith("Timeout (") for line in tail):  # faulthandler's backstop (sessionchild)
        died = "the session child was ended after the test ran past --devsim-timeout and never got back to Python " \
               "(exit status 1)"
    refused = read.refused.get(nodeid)
    entry: dict[str, Any] = {"nodeid": nodeid, "profile": profile, "outcome": "crashed",
                             "duration": round(max(time.time() - started, 0.0), 6), "reason": died, "output": tail}
    if refused is not None:
        entry.update(outcome="skipped", reason=f"{refused}; {died}")
    return entry
