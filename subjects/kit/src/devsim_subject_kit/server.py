"""The protocol loop (docs/subject-protocol.md, versions 1 and 2) for any subject built on the kit.

`serve(load)` answers `hello` by calling `load(live)` (which imports the project and returns an `Adapter`, usually
a kit `Subject`), then:
- simulated: the parent owns stdin and the real stdout and, for each scenario, forks a child that becomes the
  scenario's host; the parent relays that scenario's steps to the child over a pipe and writes the child's
  answers to stdout. Nothing a scenario does reaches the next one: a child is reused only for a later scenario
  of the identical host, and only when `Subject.reusable()` says every piece of state is as it was
  (DEVSIM_SUBJECT_REUSE=0 gives every scenario a fresh fork);
- live: scenarios run one after another in this process, on the real torch (CUDA does not survive a fork).

stdout hygiene: before anything is imported, fd 1 is duplicated to a private descriptor used only for
protocol lines, and fd 1 itself is pointed at stderr, so banners, logs and prints land on stderr. Every
message in either direction is checked against the committed schema.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from . import blame, hugepages, offline
from .host import Host, HostError
from .protocol import (
    Fatal,
    LineReader,
    ProtocolError,
    check_outgoing,
    claim_stdout,
    encode,
    log,
    messages,
    negotiate,
    parse,
)
from .subject import Adapter, reuse_enabled

#: Idle children kept for reuse (one per host; devsim's corpus has about 33 hosts).
MAX_PARKED = 48
#: Seconds a retired child may take to exit before it is killed.
EXIT_GRACE_S = 5


def host_key(host: Any) -> str:
    """Scenarios whose hosts have the same key may share a child."""
    return json.dumps(host, sort_keys=True)


class _Writer:
    def __init__(self, out: IO[bytes]) -> None:
        self.out = out

    def write(self, msg: dict[str, Any]) -> None:
        self.out.write(encode(check_outgoing(msg)))


class ForkServer(_Writer):
    """Simulated runs: one forked child per scenario (reused per host when the subject allows)."""

    def __init__(self, subject: Adapter, out: IO[bytes], reader: LineReader, packages: Sequence[str] = ()) -> None:
        super().__init__(out)
        self.subject = subject
        self.reader = reader
        self.packages = packages  # the handshake's project packages: steps are traced inside them
        self.child: tuple[int, int, LineReader, str] | None = None  # pid, write fd, reader, scenario
        self.closed_scenario: str | None = None  # answered unsupported: its `end` still gets `done`
        self.exiting: list[tuple[int, float]] = []  # children told to stop, not yet reaped
        # children parked after `done`, by host: their reuse verdict is read when that host comes again
        self.parked: dict[str, tuple[int, int, LineReader]] = {}
        self.reuse = reuse_enabled()
        if packages and blame_enabled():
            blame.prepare(packages)  # the project's files, classified once for every child's tracer
        self.host_key = ""
        self.counts = {"scenarios": 0, "forks": 0, "reused": 0}

    def serve(self) -> int:
        for msg in messages(self.reader):
            kind = msg["type"]
            if kind == "scenario":
                self.stop_child()
                self.start_scenario(msg)
            elif kind in ("step", "end"):
                self.relay(msg)
            else:
                raise Fatal(f"unexpected message type {kind!r} in {json.dumps(msg)[:200]}")
        self.stop_child()
        for key in list(self.parked):
            self.stop_parked(key)
        self.reap(block=True)
        c = self.counts
        log(f"{c['scenarios']} scenario(s): {c['forks']} forked child(ren), {c['reused']} run in a reused one")
        return 0

    def start_scenario(self, msg: dict[str, Any]) -> None:
        name = msg["name"]
        self.host_key = host_key(msg["host"])
        self.counts["scenarios"] += 1
        if self.reuse and self.resume_parked(msg, name):
            self.counts["reused"] += 1
            return
        self.counts["forks"] += 1
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(down_w)
            os.close(up_r)
            code = 0
            try:
                code = child_main(self.subject, name, msg, LineReader(down_r), up_w, self.packages)
            except ProtocolError as exc:
                log(f"protocol error: {exc}")
                code = 2
            except Fatal as exc:
                log(str(exc))
                code = 2
            except BaseException:  # noqa: BLE001 - a subject bug: traceback on stderr, the child must reach _exit
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

    def relay(self, msg: dict[str, Any]) -> None:
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

    def resume_parked(self, msg: dict[str, Any], name: str) -> bool:
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

    def from_child(self) -> dict[str, Any]:
        assert self.child is not None
        pid, _, reader, name = self.child
        line = reader.next()
        if line is None:
            _, status = os.waitpid(pid, 0)
            self.child = None
            raise Fatal(f"the child running scenario {name!r} died ({describe(status)}); see its traceback above")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop_child(self) -> None:
        """End the running child: closing its pipe makes it exit (it is waiting for a step or has answered
        `done`). It is reaped later, so its exit (unmapping a large address space) overlaps the next fork."""
        if self.child is None:
            return
        pid, down_w, reader, _ = self.child
        self.child = None
        self.retire(pid, down_w, reader)

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
            if time.monotonic() - since > EXIT_GRACE_S:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                continue
            still.append((pid, since))
        self.exiting = still


def describe(status: int) -> str:
    """A wait status in words."""
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"


def blame_enabled() -> bool:
    """Whether steps are traced for `decided_by` (DEVSIM_SUBJECT_BLAME=0: never, e.g. to time the tracing)."""
    return os.environ.get("DEVSIM_SUBJECT_BLAME", "1") != "0"


def answer_step(subject: Adapter, msg: dict[str, Any], packages: Sequence[str]) -> dict[str, Any]:
    """`subject.step(msg)`, traced inside the project's `packages` (the handshake's) so that an `observed` answer
    says which of the project's functions decided each field it can place (`decided_by`, kit.blame), and an
    `unsupported` one that carries the trace of a step that stopped says where each of its events was made."""
    if not packages or not blame_enabled():
        return subject.step(msg)
    with blame.Tracer(packages) as tracer:
        answer = subject.step(msg)
    if answer.get("type") == "observed":
        decided = tracer.decisions(answer)
        for field in answer.get("undecided", {}):  # where the project decided nothing, nothing is placed
            decided.pop(field, None)
        if decided:
            answer["decided_by"] = decided
    elif answer.get("type") == "unsupported" and answer.get("trace"):
        # a step that stopped: its events so far are placed, as an observed answer's would be
        events = {k: v for k, v in tracer.decisions(answer).items() if k.startswith("trace.")}
        if events:
            answer["decided_by"] = events
    return answer


def declared_packages(handshake: dict[str, Any]) -> list[str]:
    """The project packages a handshake names (protocol 2's `packages`)."""
    packages = handshake.get("packages")
    return [p for p in packages if isinstance(p, str)] if isinstance(packages, list) else []


def child_main(
    subject: Adapter, name: str, scenario: dict[str, Any], reader: LineReader, up: int, packages: Sequence[str] = ()
) -> int:
    """A forked child: become the scenario's host, answer its steps; parked, wait for the next of its host."""

    def send(msg: dict[str, Any]) -> None:
        os.write(up, encode(msg))

    reuse = reuse_enabled()
    while True:
        try:
            host = Host.from_message(scenario["host"])
        except HostError as exc:
            send({"type": "unsupported", "scenario": name, "reason": str(exc)})
            return 0
        reason = subject.enter(host)
        if reason is not None:
            send({"type": "unsupported", "scenario": name, "reason": reason})
            return 0
        # What the scenario finds (the parent's heap, the host entered, what earlier scenarios of this host left
        # alive; their garbage was collected before their verdicts) is frozen: a collection during the scenario,
        # which the code under test may make at every step (GPTQModel's post_init does), traverses only what the
        # scenario allocated.
        gc.freeze()
        send({"type": "ready", "scenario": name})
        while True:
            line = reader.next()
            if line is None:
                return 0
            msg = json.loads(line)
            if msg["type"] == "end":
                send({"type": "done", "scenario": name})
                break
            send(answer_step(subject, msg, packages))
        if not reuse:
            return 0
        # parked by the parent: say whether the next scenario of this host may run here, then wait for it. The
        # scenario's garbage is collected first, so that its finalizers (which may change the project's state)
        # run before the verdict, never during the next scenario
        gc.collect()
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
        if msg.get("type") != "scenario" or host_key(msg.get("host")) != host_key(scenario["host"]):
            raise ProtocolError(f"a parked child got {str(msg)[:200]}, not a scenario of its host")
        name, scenario = msg["name"], msg


class LiveServer(_Writer):
    """A live run (hello says `live`): scenarios run one after another in this process, on the real torch.

    Each scenario's host is checked against the machine and its current device made current
    (`Subject.enter`); at `end` the device that was current before is current again, also after a step failed."""

    def __init__(self, subject: Adapter, out: IO[bytes], reader: LineReader, packages: Sequence[str] = ()) -> None:
        super().__init__(out)
        self.subject = subject
        self.reader = reader
        self.packages = packages  # the handshake's project packages: steps are traced inside them
        self.scenario: str | None = None  # the running scenario, or one answered `unsupported` until its end

    def serve(self) -> int:
        leave = self.subject.torch_host.leave
        try:
            for msg in messages(self.reader):
                kind = msg["type"]
                if kind == "scenario":
                    leave()
                    self.scenario = msg["name"]
                    self.write(self._enter(msg))
                elif kind in ("step", "end"):
                    name = msg["scenario"]
                    if name != self.scenario:
                        raise Fatal(f"{kind} names scenario {name!r} but {self.scenario!r} is running")
                    if kind == "end":
                        leave()
                        self.scenario = None
                        self.write({"type": "done", "scenario": name})
                        continue
                    try:
                        self.write(answer_step(self.subject, msg, self.packages))
                    except ProtocolError as exc:
                        raise Fatal(f"protocol error: {exc}") from exc
                else:
                    raise Fatal(f"unexpected message type {kind!r} in {json.dumps(msg)[:200]}")
        finally:
            leave()
        return 0

    def _enter(self, msg: dict[str, Any]) -> dict[str, Any]:
        name = msg["name"]
        try:
            host = Host.from_message(msg["host"], live=True)
        except HostError as exc:
            return {"type": "unsupported", "scenario": name, "reason": str(exc)}
        reason = self.subject.enter(host)
        if reason is not None:
            return {"type": "unsupported", "scenario": name, "reason": reason}
        return {"type": "ready", "scenario": name}


#: Set before any import: quiet, single-threaded, deterministic library behaviour.
BASE_ENVIRONMENT = {
    "TERM": "dumb",
    "NO_COLOR": "1",
}
DEFAULT_ENVIRONMENT = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_OFFLINE": "1",
}


def prepare_environment(overrides: Mapping[str, str] = {}) -> None:
    """Before any import: the kit's fixed settings, defaults the caller did not set, then `overrides`."""
    env = os.environ
    env.update(BASE_ENVIRONMENT)
    for key, value in DEFAULT_ENVIRONMENT.items():
        env.setdefault(key, value)
    env.pop("PYTEST_CURRENT_TEST", None)  # some libraries keep UI threads under pytest
    env.update(overrides)


def serve(load: Callable[[bool], Adapter], environment: Mapping[str, str] = {}) -> int:
    """Run the protocol on stdin/stdout: `load(live)` imports the project and returns its adapter. The exit
    status: 0 when stdin closes, 2 on a protocol violation, 3 on a subject bug (traceback on stderr)."""
    prepare_environment(environment)
    out = claim_stdout()
    reader = LineReader(0)
    try:
        line = reader.next()
        while line is not None and not line.strip():
            line = reader.next()
        if line is None:
            return 0
        from .protocol import check_incoming

        hello = check_incoming(parse(line))
        if hello["type"] != "hello":
            raise Fatal(f"expected hello, got {hello['type']!r}")
        protocol = negotiate(hello.get("protocol"))
        live = hello.get("live") is True and protocol >= 2
        if not live:
            # code under test may reach further than the simulation expects (a kernel that fetches and builds its
            # extension on first use): on a simulated host that fails at once, without a download or a file written
            offline.isolate()
        # loading imports the project and its dependencies: objects that all survive, so the collections
        # the allocations would trigger on the way free nothing (about a seventh of GPTQModel's import time)
        gc.disable()
        try:
            subject = load(live)
        finally:
            gc.enable()
        writer = _Writer(out)
        if live:
            sys.stdout.flush()
            handshake = subject.handshake(protocol)
            writer.write(handshake)
            return LiveServer(subject, out, reader, declared_packages(handshake)).serve()
        gc.collect()
        gc.freeze()  # children inherit these objects; a frozen heap keeps their GC from touching (copying) it
        sys.stdout.flush()
        handshake = subject.handshake(protocol)
        server = ForkServer(subject, out, reader, declared_packages(handshake))
        # last before the handshake (the end of the start): what the parent holds from here on is what every fork copies
        hugepages.collapse_heap()
        writer.write(handshake)
        return server.serve()
    except Fatal as exc:
        log(str(exc))
        return 2
    except BrokenPipeError:
        return 0
    except BaseException:  # noqa: BLE001 - a subject bug: traceback, non-zero exit
        traceback.print_exc()
        return 3
