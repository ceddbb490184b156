"""The protocol loop (docs/subject-protocol.md, versions 1 and 2).

The parent process owns stdin and the real stdout. It imports GPTQModel once, answers the handshake, and for
each scenario forks a child that becomes the scenario's host; the parent relays that scenario's steps to the
child over a pipe and writes the child's answers to stdout. Nothing a scenario does (current device, patched
constants, GPTQModel caches, thread pools) reaches the next one: a child is reused only for a later scenario of
the identical host, and only when, after its scenario, `Subject.reusable()` finds every snapshotted piece of state
as it was when the scenario began (otherwise it exits, as every child did before reuse existed).
DEVSIM_GPTQMODEL_REUSE=0 gives every scenario a fresh fork (tests/test_reuse.py compares the two).

stdout hygiene: before anything is imported, fd 1 is duplicated to a private descriptor used only for
protocol lines, and fd 1 itself is pointed at stderr, so banners, logs and prints from GPTQModel, torch or
anything else land on stderr.
"""

from __future__ import annotations

import gc
import io
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from typing import IO, Any

PROTOCOL = 2  # the highest version this subject speaks; hello's version picks the answer (negotiate)
MAX_LINE = 1 << 20
MAX_PARKED = 48  # idle children kept for reuse (one per host; the corpus has 33 hosts)


def log(message: str) -> None:
    print(f"devsim-subject: {message}", file=sys.stderr, flush=True)


class Fatal(Exception):
    """A condition that ends the subject with a non-zero status (message on stderr)."""


# ----------------------------------------------------------------------------------------------- I/O


def claim_stdout() -> IO[bytes]:
    """Keep the real stdout for protocol lines only; everything else written to fd 1 goes to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    # A buffered text stream on fd 1 (not write-through), so logbar does not wrap it in a queueing thread.
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    return protocol


class LineReader:
    """Unbuffered-enough line reader on a raw descriptor (a forked child must not inherit read-ahead)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self) -> bytes | None:
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                if self.buffer.strip():
                    line, self.buffer = self.buffer, b""
                    return line
                return None
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE and b"\n" not in self.buffer:
                raise Fatal("a line longer than 1 MiB arrived")
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line


def parse(line: bytes) -> dict:
    try:
        msg = json.loads(line)
    except json.JSONDecodeError as exc:
        raise Fatal(f"not a JSON line: {line[:200]!r} ({exc})") from exc
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise Fatal(f"not a protocol message (no type): {line[:200]!r}")
    return msg


def messages(reader: LineReader) -> Iterator[dict]:
    """Every protocol message until stdin closes (blank lines skipped)."""
    while True:
        line = reader.next()
        if line is None:
            return
        if line.strip():
            yield parse(line)


def encode(msg: dict) -> bytes:
    data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    if len(data) > MAX_LINE:
        raise Fatal(f"an answer longer than 1 MiB for {msg.get('type')}")
    return data


# ----------------------------------------------------------------------------------------------- parent


class Parent:
    def __init__(self, subject: Any, out: IO[bytes], reader: LineReader) -> None:
        self.subject = subject
        self.out = out
        self.reader = reader
        self.child: tuple[int, int, LineReader, str] | None = None  # pid, write fd, reader, scenario
        self.closed_scenario: str | None = None  # answered unsupported: its `end` still gets `done`
        self.exiting: list[tuple[int, float]] = []  # children told to stop, not yet reaped
        # children parked after `done`, by host: their reuse verdict is read when that host comes again
        self.parked: dict[str, tuple[int, int, LineReader]] = {}
        self.reuse = os.environ.get("DEVSIM_GPTQMODEL_REUSE", "1") != "0"
        self.host_key = ""

    def write(self, msg: dict) -> None:
        self.out.write(encode(msg))

    def serve(self) -> int:
        for msg in messages(self.reader):
            kind = msg["type"]
            if kind == "scenario":
                self.stop_child()
                self.start_scenario(msg)
            elif kind in ("step", "end"):
                self.relay(msg)
            else:
                raise Fatal(f"unknown message type {kind!r} in {json.dumps(msg)[:200]}")
        self.stop_child()
        for key in list(self.parked):
            self.stop_parked(key)
        self.reap(block=True)
        return 0

    def start_scenario(self, msg: dict) -> None:
        name = msg.get("name")
        if not isinstance(name, str) or not isinstance(msg.get("host"), dict):
            raise Fatal(f"a scenario message needs a name and a host: {json.dumps(msg)[:200]}")
        self.host_key = json.dumps(msg["host"], sort_keys=True)
        if self.reuse and self.resume_parked(msg, name):
            return
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(down_w)
            os.close(up_r)
            code = 0
            try:
                code = child_main(self.subject, name, msg, LineReader(down_r), up_w)
            except Exception as exc:  # noqa: BLE001 - every child failure ends the child with a status
                if type(exc).__name__ == "ProtocolError":
                    log(f"protocol error: {exc}")
                    code = 2
                else:  # a subject bug: traceback on stderr, non-zero exit
                    traceback.print_exc()
                    code = 3
            except BaseException:  # noqa: BLE001 - the child must reach os._exit
                traceback.print_exc()
                code = 3
            finally:
                sys.stderr.flush()
                os._exit(code)
        os.close(down_r)
        os.close(up_w)
        self.child = (pid, down_w, LineReader(up_r), name)
        self.begin(name)

    def begin(self, name: str) -> None:
        self.closed_scenario = None
        answer = self.from_child()
        self.write(answer)
        if answer["type"] == "unsupported":
            self.stop_child()
            self.closed_scenario = name

    def relay(self, msg: dict) -> None:
        name = msg.get("scenario")
        if self.child is None:
            if msg["type"] == "end" and name is not None and name == self.closed_scenario:
                self.closed_scenario = None
                self.write({"type": "done", "scenario": name})
                return
            raise Fatal(f"{msg['type']} for scenario {name!r} while no scenario is running")
        if name != self.child[3]:
            raise Fatal(f"{msg['type']} names scenario {name!r} but {self.child[3]!r} is running")
        os.write(self.child[1], encode(msg))
        answer = self.from_child()
        self.write(answer)
        if msg["type"] == "end":
            self.park_child()

    # -- reuse: a parked child answers one verdict line, then waits for a scenario of its host or for EOF

    def park_child(self) -> None:
        if not self.reuse or self.child is None:
            self.stop_child()
            return
        pid, down_w, reader, _ = self.child
        self.child = None
        old = self.parked.pop(self.host_key, None)
        self.parked[self.host_key] = (pid, down_w, reader)
        if old is not None:
            self.retire(*old)
        while len(self.parked) > MAX_PARKED:
            self.stop_parked(next(iter(self.parked)))

    def resume_parked(self, msg: dict, name: str) -> bool:
        parked = self.parked.pop(self.host_key, None)
        if parked is None:
            return False
        pid, down_w, reader = parked
        verdict = reader.next()
        if verdict is None or json.loads(verdict).get("reuse") is not True:
            self.retire(pid, down_w, reader)
            return False
        os.write(down_w, encode(msg))
        self.child = (pid, down_w, reader, name)
        self.begin(name)
        return True

    def stop_parked(self, key: str) -> None:
        self.retire(*self.parked.pop(key))

    def retire(self, pid: int, down_w: int, reader: LineReader) -> None:
        os.close(down_w)
        os.close(reader.fd)
        self.exiting.append((pid, time.monotonic()))
        self.reap(block=False)

    def from_child(self) -> dict:
        assert self.child is not None
        pid, _, reader, name = self.child
        line = reader.next()
        if line is None:
            _, status = os.waitpid(pid, 0)
            self.child = None
            raise Fatal(f"the child running scenario {name!r} died ({describe(status)}); see its traceback above")
        return json.loads(line)

    def stop_child(self) -> None:
        """End the running child: closing its pipe makes it exit (it is waiting for a step or has answered
        `done`). It is reaped later, so its exit (unmapping a large address space) overlaps the next fork."""
        if self.child is None:
            return
        pid, down_w, reader, _ = self.child
        self.child = None
        os.close(down_w)
        os.close(reader.fd)
        self.exiting.append((pid, time.monotonic()))
        self.reap(block=False)

    def reap(self, block: bool) -> None:
        """Collect exited children; one still running after its grace period is stuck in the code under test."""
        still = []
        for pid, since in self.exiting:
            try:
                finished, _status = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                continue
            if finished:
                continue
            if time.monotonic() - since > 5:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                continue
            still.append((pid, since))
        self.exiting = still


def describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"


# ----------------------------------------------------------------------------------------------- live


class LiveServer:
    """A live run (hello says `live`): scenarios run one after another in this process, on the real torch.

    No fork: CUDA state does not survive one. Each scenario's host is checked against the machine and its current
    device made current (`Subject.enter`); at `end` the device that was current before is current again, also
    after a step failed."""

    def __init__(self, subject: Any, out: IO[bytes], reader: LineReader) -> None:
        self.subject = subject
        self.out = out
        self.reader = reader
        self.scenario: str | None = None  # the running scenario, or one answered `unsupported` until its end

    def write(self, msg: dict) -> None:
        self.out.write(encode(msg))

    def serve(self) -> int:
        from .fakehost import Host
        from .subject import ProtocolError

        for msg in messages(self.reader):
            kind = msg["type"]
            name = msg.get("name") if kind == "scenario" else msg.get("scenario")
            if kind == "scenario":
                if not isinstance(name, str) or not isinstance(msg.get("host"), dict):
                    raise Fatal(f"a scenario message needs a name and a host: {json.dumps(msg)[:200]}")
                self.subject.runtime.leave()
                self.scenario = name
                try:
                    host = Host.from_message(msg["host"])
                except (KeyError, TypeError, ValueError) as exc:
                    self.write({"type": "unsupported", "scenario": name, "reason": f"cannot read the host: {exc!r}"})
                    continue
                reason = self.subject.enter(host)
                if reason is not None:
                    self.write({"type": "unsupported", "scenario": name, "reason": reason})
                else:
                    self.write({"type": "ready", "scenario": name})
            elif kind in ("step", "end"):
                if name != self.scenario:
                    raise Fatal(f"{kind} names scenario {name!r} but {self.scenario!r} is running")
                if kind == "end":
                    self.subject.runtime.leave()
                    self.scenario = None
                    self.write({"type": "done", "scenario": name})
                    continue
                try:
                    self.write(self.subject.step(msg))
                except ProtocolError as exc:
                    raise Fatal(f"protocol error: {exc}") from exc
            else:
                raise Fatal(f"unknown message type {kind!r} in {json.dumps(msg)[:200]}")
        self.subject.runtime.leave()
        return 0


# ----------------------------------------------------------------------------------------------- child


def child_main(subject: Any, name: str, scenario: dict, reader: LineReader, up: int) -> int:
    from .fakehost import Host
    from .subject import ProtocolError

    def send(msg: dict) -> None:
        os.write(up, encode(msg))

    reuse = os.environ.get("DEVSIM_GPTQMODEL_REUSE", "1") != "0"
    while True:
        try:
            host = Host.from_message(scenario["host"])
        except (KeyError, TypeError, ValueError) as exc:
            send({"type": "unsupported", "scenario": name, "reason": f"cannot read the host: {exc!r}"})
            return 0
        reason = subject.enter(host)
        if reason is not None:
            send({"type": "unsupported", "scenario": name, "reason": reason})
            return 0
        send({"type": "ready", "scenario": name})
        while True:
            line = reader.next()
            if line is None:
                return 0
            msg = json.loads(line)
            if msg["type"] == "end":
                send({"type": "done", "scenario": name})
                break
            send(subject.step(msg))
        if not reuse:
            return 0
        # parked by the parent: say whether the next scenario of this host may run here, then wait for it
        reusable = subject.reusable()
        try:
            send({"type": "verdict", "reuse": reusable})
        except BrokenPipeError:  # the parent retired this child without reading its verdict
            return 0
        if not reusable:
            return 0
        line = reader.next()
        if line is None:
            return 0
        msg = json.loads(line)
        if msg.get("type") != "scenario" or json.dumps(msg.get("host"), sort_keys=True) != json.dumps(
            scenario["host"], sort_keys=True
        ):
            raise ProtocolError(f"a parked child got {str(msg)[:200]}, not a scenario of its host")
        name, scenario = msg["name"], msg


# ----------------------------------------------------------------------------------------------- main


def prepare_environment() -> None:
    """Before any import: quiet, single-threaded, deterministic library behaviour."""
    env = os.environ
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    env["BUILD_CUDA_EXT"] = "0"
    env["TERM"] = "dumb"  # logbar: headless, no progress-refresh thread
    env["NO_COLOR"] = "1"
    env.pop("PYTEST_CURRENT_TEST", None)  # logbar keeps its UI threads under pytest
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_OFFLINE", "1")


def negotiate(offered: Any) -> int:
    """The highest protocol version both sides speak: hello's version, capped at ours. devsim refuses a
    version it did not offer, so a version below 1 (or not an integer) ends the subject."""
    if isinstance(offered, bool) or not isinstance(offered, int) or offered < 1:
        raise Fatal(f"hello offers protocol {offered!r}; this subject speaks 1 to {PROTOCOL}")
    return min(offered, PROTOCOL)


def main() -> int:
    prepare_environment()
    out = claim_stdout()
    reader = LineReader(0)
    try:
        line = reader.next()
        while line is not None and not line.strip():
            line = reader.next()
        if line is None:
            return 0
        hello = parse(line)
        if hello["type"] != "hello":
            raise Fatal(f"expected hello, got {hello['type']!r}")
        protocol = negotiate(hello.get("protocol"))
        live = hello.get("live") is True and protocol >= 2

        from .subject import Subject

        subject = Subject()
        subject.load(live=live)
        if live:
            sys.stdout.flush()
            out.write(encode(subject.handshake(protocol)))
            return LiveServer(subject, out, reader).serve()
        gc.collect()
        gc.freeze()  # children inherit these objects; a frozen heap keeps their GC from touching (copying) it
        sys.stdout.flush()
        out.write(encode(subject.handshake(protocol)))
        return Parent(subject, out, reader).serve()
    except Fatal as exc:
        log(str(exc))
        return 2
    except BrokenPipeError:
        return 0
    except BaseException:  # noqa: BLE001 - a subject bug: traceback, non-zero exit
        traceback.print_exc()
        return 3
