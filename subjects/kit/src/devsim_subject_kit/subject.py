"""A subject on the kit: `Adapter`, what the kit's server needs of one, and `Subject`, the base every project adapter
builds on.

`Subject` owns the step loop: its action registry (`@action("validate")` on a method), the checks every step gets,
the trace capture, and the protocol answers for a step that cannot be observed (`Unsupported`) and for the
project's refusal (`Refused`). It also owns the per-scenario life the adapters share (entering a host, remembering
the project's state for the reuse check) and the protocol 2 handshake built from the registry. An adapter registers
its actions and overrides the hooks it needs (`begin`, `perform`, `refusal`, `observed_error`, `finish`,
`entered`, `contract`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from .host import Host
from .protocol import ProtocolError, check_step
from .recorder import Recorder
from .state import ProjectState

#: An action's method: `(self, msg, obs)`, filling `obs` with what it observed.
F = TypeVar("F", bound=Callable[..., Any])
#: A bound action: `(msg, obs)`.
Handler = Callable[[dict[str, Any], dict[str, Any]], None]

_ACTION = "__devsim_action__"


def reuse_enabled() -> bool:
    """Whether children are reused across scenarios of one host (DEVSIM_SUBJECT_REUSE=0: never)."""
    return os.environ.get("DEVSIM_SUBJECT_REUSE", "1") != "0"


class TorchHost(Protocol):
    """A simulated (`SimulatedTorch`) or wrapped (`LiveTorch`) torch host."""

    host: Host

    def count(self) -> int:
        """The GPUs torch sees, not recorded."""
        ...

    def current(self) -> int:
        """The calling thread's current device, not recorded."""
        ...

    def enter(self, host: Host) -> str | None:
        """Become `host` (simulated) or check the machine is it (live); a reason when it cannot."""
        ...

    def leave(self) -> None:
        """A scenario ended: undo what entering it changed on the machine."""
        ...


class Adapter(Protocol):
    """What the server drives: created and loaded once, after `hello`, then driven scenario by scenario.

    Simulated runs fork one child per scenario from the loaded process (`enter` and `step` run in the child);
    live runs call everything in the one process. `Subject` implements it."""

    torch_host: Any

    def handshake(self, protocol: int) -> dict[str, Any]:
        """The answer to hello for the negotiated protocol version."""
        ...

    def enter(self, host: Host) -> str | None:
        """Become `host` (simulated) or check the machine is it (live); a reason when it cannot."""
        ...

    def step(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Perform one step: an `observed` or `unsupported` answer."""
        ...

    def reusable(self) -> bool:
        """After a scenario's end (simulated): whether the next scenario of the same host may run here."""
        ...


def action(name: str) -> Callable[[F], F]:
    """Register the decorated method as the handler of the protocol action `name`: `(self, msg, obs)`."""

    def mark(method: F) -> F:
        setattr(method, _ACTION, name)
        return method

    return mark


class Unsupported(Exception):
    """The step cannot be observed on this subject: answered `unsupported` with the reason.

    `trace=None` (the default) sends no trace. A list (empty or not) sends the events the step recorded before it
    stopped, followed by `trace` (events recorded elsewhere, e.g. by a simulated forward's own recorder), when
    there are any: devsim judges the scenario's `never` rules on them."""

    def __init__(self, reason: str, trace: Sequence[dict[str, Any]] | None = None) -> None:
        super().__init__(reason)
        self.trace = None if trace is None else list(trace)


class Refused(Exception):
    """The project refused the step: an `observed` answer with `ok: false` and `error` (`Subject.refusal`).

    `kind` is devsim's error kind where the adapter knows it; `error` is the project's own exception behind the
    refusal, for an adapter that classifies it (`Refused.of`)."""

    def __init__(self, message: str, kind: str | None = None, error: BaseException | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.error = error

    @classmethod
    def of(cls, error: BaseException) -> Refused:
        """The project's own exception as a refusal, worded as it is."""
        return cls(str(error), error=error)


class Subject:
    """The base of a project adapter: the step loop, the action registry and the per-scenario life.

    A subclass sets `project` (its name in answers), `name` and `version` (the handshake's), `torch_host` (in its
    `load`) and, where the project has import-time state, `state`; it registers its actions with `@action`."""

    #: The project's name in the reason given for an action the subject lacks.
    project: ClassVar[str] = "this"
    #: Registered actions, in registration order (base classes first): action name -> method name.
    registry: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                name = getattr(value, _ACTION, None)
                if isinstance(name, str):
                    found[name] = attr
        cls.registry = found

    def __init__(self) -> None:
        self.recorder = Recorder()
        self.torch_host: Any = None
        self.state: ProjectState | None = None
        self.live = False  # the real torch on the real machine, not a simulated host
        self.name = "subject"
        self.version = "unknown"

    # -- the handshake

    def actions(self) -> list[str]:
        """The registered actions, as the handshake lists them."""
        return list(self.registry)

    def handshake(self, protocol: int) -> dict[str, Any]:
        """The answer to hello: protocol 2 only (a protocol 1 subject declares no contract); `contract` gives it."""
        if protocol < 2:
            raise ProtocolError(f"the {self.project} subject speaks protocol 2 only")
        return self.contract()

    def contract(self) -> dict[str, Any]:
        """The protocol 2 handshake (`handshake_answer` builds it); each adapter declares its own."""
        raise NotImplementedError(f"the {self.project} subject declares no contract")

    def handshake_answer(
        self, kernels: list[Any], events: list[str], observes: dict[str, Any], packages: list[str]
    ) -> dict[str, Any]:
        """A protocol 2 handshake: the subject's own messages, judged on policy and contract, its registered
        actions; the kit traces each step inside `packages` and says which of their functions decided what."""
        return {
            "type": "handshake",
            "protocol": 2,
            "subject": {"name": self.name, "version": self.version},
            "actions": self.actions(),
            "kernels": kernels,
            "events": events,
            "messages": "own",
            "levels": ["policy", "contract"],
            "observes": observes,
            "packages": packages,
        }

    # -- per scenario

    def enter(self, host: Host) -> str | None:
        """Become `host` (the torch host's `enter`; a reason when it cannot), then `entered`; simulated, with reuse
        on, the project's state is remembered for the reuse check."""
        reason: str | None = self.torch_host.enter(host)
        if reason is not None:
            return reason
        self.entered(host)
        if self.state is not None and not self.live and reuse_enabled():
            self.state.remember()
        return None

    def entered(self, host: Host) -> None:
        """Hook: the host is entered; set what the project reads of it (its constants, caches, environment)."""

    def reusable(self) -> bool:
        """After a scenario's end (simulated): whether the next scenario of the same host may run in this child.
        By default only when the project's state is what it was when the scenario began."""
        return self.state is not None and self.state.unchanged()

    # -- the step loop

    def step(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Perform one step: its registered action, traced; an `observed` or `unsupported` answer."""
        check_step(msg)
        head = {"scenario": msg["scenario"], "number": msg["number"]}
        method = self.registry.get(msg["action"])
        if method is None:
            reason = f"the {self.project} subject has no action {msg['action']!r}"
            return {"type": "unsupported", **head, "reason": reason}
        handler: Handler = getattr(self, method)
        self.begin(msg)
        obs: dict[str, Any] = {}
        with self.recorder.capture() as trace:
            try:
                self.perform(msg, handler, obs)
                ok = True
            except Unsupported as exc:
                answer: dict[str, Any] = {"type": "unsupported", **head, "reason": str(exc)}
                if exc.trace is not None:
                    stopped = [*trace, *exc.trace]
                    if stopped:  # what the project did before the step could go no further: `never` rules bind
                        answer["trace"] = stopped
                return answer
            except Refused as exc:
                ok = False
                obs["error"] = self.refusal(exc)
            except ProtocolError:
                raise
            except Exception as exc:
                error = self.observed_error(exc)
                if error is None:
                    raise
                ok = False
                obs["error"] = error
        self.finish(ok, obs)
        return {"type": "observed", **head, "ok": ok, **obs, "trace": trace}

    def begin(self, msg: dict[str, Any]) -> None:
        """Hook: before a registered action runs (outside the trace); check the step, reset per-step state."""

    def perform(self, msg: dict[str, Any], handler: Handler, obs: dict[str, Any]) -> None:
        """Run the action inside the trace. An override may repeat it or turn the project's own exceptions into
        `Unsupported` or `Refused`."""
        handler(msg, obs)

    def refusal(self, exc: Refused) -> dict[str, Any]:
        """The observed `error` of a refusal: its kind and message."""
        return {"kind": exc.kind, "message": str(exc)}

    def observed_error(self, exc: Exception) -> dict[str, Any] | None:
        """Hook: the observed `error` for another exception the action raised, or None to let it through (a bug of
        the subject: the child prints the traceback and exits non-zero). By default every one goes through."""
        return None

    def finish(self, ok: bool, obs: dict[str, Any]) -> None:
        """Hook: after the action (outside the trace), add the fields every step of this subject reports."""

    def report_current(self, obs: dict[str, Any]) -> None:
        """`current_after`, torch's current device after the step, on a GPU build with a visible GPU."""
        if self.torch_host.host.has_gpu_runtime and self.torch_host.count() > 0:
            obs["current_after"] = self.torch_host.current()
