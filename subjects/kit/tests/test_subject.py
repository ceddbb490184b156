"""The kit's `Subject`: the step loop its adapters share (registry, `Unsupported`, `Refused`, hooks), its
handshake and its per-scenario life; and `Patches`, which the adapters' hooks go through."""

from __future__ import annotations

from typing import Any

import pytest
from devsim_subject_kit import ProtocolError, Refused, Subject, Unsupported, action
from devsim_subject_kit.patches import Patches
from devsim_subject_kit.subject import Handler


class _TorchHost:
    """A torch host on a GPU build with one GPU, current device 1, that enters every host but `"refused"`."""

    def __init__(self) -> None:
        self.host = _GpuHost()
        self.entered: list[Any] = []

    def count(self) -> int:
        return 1

    def current(self) -> int:
        return 1

    def enter(self, host: Any) -> str | None:
        self.entered.append(host)
        return "no such host" if host == "refused" else None


class _GpuHost:
    has_gpu_runtime = True


class Base(Subject):
    project = "toy"

    def __init__(self) -> None:
        super().__init__()
        self.torch_host = _TorchHost()
        self.name, self.version = "toy", "1"

    @action("discover")
    def do_discover(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        self.recorder.record("device_count")
        obs["vendor"] = "nvidia"

    @action("validate")
    def do_validate(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        self.recorder.record("nvidia_capability", 0)
        mode = msg["mode"]
        if mode == "unsupported":
            raise Unsupported("cannot be expressed")
        if mode == "unsupported-traced":
            raise Unsupported("stopped", trace=[{"event": "amd_arch", "device": 1}])
        if mode == "unsupported-empty":
            raise Unsupported("stopped", trace=[])
        if mode == "refused":
            raise Refused("no CUDA here", "unsupported-family")
        if mode == "error":
            raise ValueError("the project's own error")


class Derived(Base):
    """Registers one more action after its base's, and hooks into the loop."""

    project = "derived"

    def __init__(self) -> None:
        super().__init__()
        self.begun: list[int] = []

    @action("set_device")
    def do_set_device(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        obs["current_after"] = int(msg["ordinal"])

    def begin(self, msg: dict[str, Any]) -> None:
        self.begun.append(msg["number"])

    def perform(self, msg: dict[str, Any], handler: Handler, obs: dict[str, Any]) -> None:
        try:
            handler(msg, obs)
        except KeyError as exc:
            raise Unsupported(f"missing {exc}") from exc

    def refusal(self, exc: Refused) -> dict[str, Any]:
        return {"kind": "classified", "message": str(exc)}

    def observed_error(self, exc: Exception) -> dict[str, Any] | None:
        return {"kind": None, "message": str(exc)}

    def finish(self, ok: bool, obs: dict[str, Any]) -> None:
        self.report_current(obs)


def validate(mode: str, number: int = 1) -> dict[str, Any]:
    device = {"form": "string", "written": "cuda"}
    return {"type": "step", "scenario": "s", "number": number, "action": "validate", "kernel": "k", "device": device,
            "mode": mode}


def test_actions_register_in_definition_order_base_classes_first() -> None:
    assert Base.registry == {"discover": "do_discover", "validate": "do_validate"}
    assert Derived().actions() == ["discover", "validate", "set_device"]
    assert Subject.registry == {}


def test_an_action_is_observed_with_its_trace() -> None:
    answer = Base().step({"type": "step", "scenario": "s", "number": 3, "action": "discover"})
    assert answer == {"type": "observed", "scenario": "s", "number": 3, "ok": True, "vendor": "nvidia",
                      "trace": [{"event": "device_count"}]}


def test_an_unregistered_action_is_unsupported_naming_the_project() -> None:
    answer = Base().step({"type": "step", "scenario": "s", "number": 1, "action": "lock", "scope": {"form": "ordinal",
                          "written": 0}, "mode": "read"})
    assert answer == {"type": "unsupported", "scenario": "s", "number": 1,
                      "reason": "the toy subject has no action 'lock'"}


def test_unsupported_sends_a_trace_only_when_the_exception_asks_for_one() -> None:
    subject = Base()
    plain = subject.step(validate("unsupported"))
    assert plain == {"type": "unsupported", "scenario": "s", "number": 1, "reason": "cannot be expressed"}
    traced = subject.step(validate("unsupported-traced"))
    assert traced["trace"] == [{"event": "nvidia_capability", "device": 0}, {"event": "amd_arch", "device": 1}]
    assert subject.step(validate("unsupported-empty"))["trace"] == [{"event": "nvidia_capability", "device": 0}]


def test_a_refusal_is_an_observation_with_its_kind() -> None:
    answer = Base().step(validate("refused"))
    assert answer["ok"] is False
    assert answer["error"] == {"kind": "unsupported-family", "message": "no CUDA here"}
    assert answer["trace"] == [{"event": "nvidia_capability", "device": 0}]


def test_another_error_goes_through_unless_the_adapter_observes_it() -> None:
    with pytest.raises(ValueError, match="the project's own error"):
        Base().step(validate("error"))
    answer = Derived().step(validate("error"))
    assert answer["ok"] is False and answer["error"] == {"kind": None, "message": "the project's own error"}


def test_a_protocol_error_always_goes_through() -> None:
    with pytest.raises(ProtocolError):
        Derived().step({"type": "step", "scenario": "s", "number": 1})  # no action


def test_hooks_run_around_the_action() -> None:
    subject = Derived()
    answer = subject.step(validate("refused", number=7))
    assert subject.begun == [7]
    assert answer["error"] == {"kind": "classified", "message": "no CUDA here"}
    assert answer["current_after"] == 1  # finish: report_current on a GPU host with a GPU
    missing = subject.step({"type": "step", "scenario": "s", "number": 8, "action": "validate", "kernel": "k",
                            "device": {"form": "string", "written": "cuda"}})
    assert missing == {"type": "unsupported", "scenario": "s", "number": 8, "reason": "missing 'mode'"}


def test_the_handshake_lists_the_registered_actions() -> None:
    subject = Derived()
    with pytest.raises(ProtocolError, match="the derived subject speaks protocol 2 only"):
        subject.handshake(1)
    with pytest.raises(NotImplementedError):
        subject.handshake(2)
    answer = subject.handshake_answer([], ["device_count"], {"discover": ["ok"]}, ["toy"])
    assert answer["actions"] == ["discover", "validate", "set_device"]
    assert answer["subject"] == {"name": "toy", "version": "1"} and answer["packages"] == ["toy"]


def test_enter_becomes_the_host_then_calls_entered() -> None:
    seen: list[Any] = []

    class Entering(Base):
        def entered(self, host: Any) -> None:
            seen.append(host)

    subject = Entering()
    assert subject.enter("refused") == "no such host"  # type: ignore[arg-type]
    assert subject.enter("ok") is None  # type: ignore[arg-type]
    assert seen == ["ok"]
    assert subject.reusable() is False  # no project state: the kit cannot tell


def test_patches_give_a_class_back_what_it_held() -> None:
    class Parent:
        @classmethod
        def check(cls) -> str:
            return cls.__name__

    class Child(Parent):
        @classmethod
        def own(cls) -> str:
            return "own"

    patches = Patches()
    patches.set(Child, "check", classmethod(lambda cls: "patched"))
    patches.set(Child, "own", classmethod(lambda cls: "patched"))
    assert Child.check() == "patched" and Child.own() == "patched"
    patches.undo()
    assert "check" not in vars(Child) and Child.check() == "Child"  # inherited again, not a bound copy
    assert isinstance(vars(Child)["own"], classmethod) and Child.own() == "own"
