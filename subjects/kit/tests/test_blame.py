"""The kit's tracer (devsim_subject_kit.blame) on a toy project package: which of its functions decided a value."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from devsim_subject_kit import blame
from devsim_subject_kit.recorder import Recorder
from devsim_subject_kit.server import answer_step, declared_packages

TOY_PACKAGE = {
    "__init__.py": "",
    "devices.py": '''
        class Device:
            def __init__(self, kind, index):
                self.kind, self.index = kind, index


        def make(kind, index=None):
            return Device(kind, index)


        def resolve(kind):
            return make(kind, 0)


        def family(kind):
            value = make(kind)
            return value


        def check(kind):
            if kind == "rocm":
                raise NotImplementedError(f"refuses {kind}")


        def gate(kind):
            check(kind)
            return True, None


        def probe(recorder):
            recorder.record("nvidia_capability", 0)


        def probe_each(recorder):
            return [recorder.record("amd_arch", i) for i in range(2)]


        def classify(kind):
            return kind.upper()


        def pick(kind):
            family = classify(kind)
            return [family]


        def validate(kind):
            try:
                gate(kind)
            except NotImplementedError as exc:
                return False, type(exc)(str(exc))
            return True, None
    ''',
}
OUTSIDE = '''
    import toyproject.devices as devices


    def wrapped(kind):
        return devices.resolve(kind)
'''


def line_of(module: ModuleType, text: str) -> int:
    """The 1-based line of `module`'s source holding `text`."""
    lines = Path(module.__file__ or "").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[tuple[ModuleType, ModuleType]]:
    package = tmp_path / "toyproject"
    package.mkdir()
    for name, source in TOY_PACKAGE.items():
        (package / name).write_text(textwrap.dedent(source))
    (tmp_path / "toyadapter.py").write_text(textwrap.dedent(OUTSIDE))
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("toyproject.devices"), importlib.import_module("toyadapter")
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("toyproject.devices", "toyproject", "toyadapter"):
            sys.modules.pop(name, None)


def place(module: ModuleType, function: str, text: str) -> dict[str, Any]:
    return {"module": module.__name__, "function": function, "line": line_of(module, text),
            "file": module.__file__}


def test_a_value_is_placed_where_it_was_made(toy: tuple[ModuleType, ModuleType]) -> None:
    devices, _ = toy
    with blame.Tracer(["toyproject"]) as tracer:
        resolved = devices.resolve("cuda")
        family = devices.family("cuda")
    # resolve returns make's object from its return line: make made it
    assert tracer.place(resolved) == place(devices, "make", "return Device(kind, index)")
    # family got it on an earlier line and returned it: the heuristic stops at family
    assert tracer.place(family) == place(devices, "family", "return value")


def test_a_refusal_is_placed_at_the_innermost_raise(toy: tuple[ModuleType, ModuleType]) -> None:
    devices, _ = toy
    with blame.Tracer(["toyproject"]) as tracer:
        with pytest.raises(NotImplementedError) as raised:
            devices.gate("rocm")
        ok, copy = devices.validate("rocm")
    where = place(devices, "check", "raise NotImplementedError")
    assert tracer.place(raised.value) == where
    assert not ok and copy is not raised.value
    # a fresh copy handed back stands for the latest raise of its type and message
    assert tracer.place(copy) == where


def test_the_answer_names_each_noted_field_and_a_failed_verdict(toy: tuple[ModuleType, ModuleType]) -> None:
    devices, adapter = toy
    with blame.Tracer(["toyproject"]) as tracer:
        blame.observed("torch_device", adapter.wrapped("cuda"))
        blame.observed("family", object())  # not the project's: left out
        _, error = devices.validate("rocm")
    answer = {"ok": False, "torch_device": "cuda:0", "family": "cuda",
              "error": {"kind": None, "message": str(error)}}
    decided = tracer.decisions(answer)
    assert decided == {"torch_device": place(devices, "make", "return Device(kind, index)"),
                       "ok": place(devices, "check", "raise NotImplementedError")}
    # a field the answer does not carry is not placed
    assert "torch_device" not in tracer.decisions({"ok": True})


def test_only_the_projects_frames_are_followed(toy: tuple[ModuleType, ModuleType]) -> None:
    _, adapter = toy
    with blame.Tracer(["toyproject"]) as tracer:
        adapter.wrapped("cuda")
    assert [node.code.co_name for node in tracer.top] == ["resolve"]
    assert tracer.files[adapter.__file__] is False  # the adapter's file: its frames get no events past the call
    devices = sys.modules["toyproject.devices"]
    assert tracer.files[devices.__file__] is True


def test_a_parent_classifies_the_loaded_files_for_its_childrens_tracers(
    toy: tuple[ModuleType, ModuleType],
) -> None:
    devices, adapter = toy
    blame.prepare(["toyproject"])
    files = blame._FILES[blame.package_roots(["toyproject"])]
    assert files[devices.__file__] is True and files[adapter.__file__] is False
    assert blame.Tracer(["toyproject"]).files is files  # a later tracer (a forked child's) reads the same table


def test_nothing_is_placed_under_another_tracer_or_outside_a_step(toy: tuple[ModuleType, ModuleType]) -> None:
    devices, _ = toy
    previous = sys.gettrace()
    sys.settrace(lambda *args: None)
    try:
        with blame.Tracer(["toyproject"]) as tracer:
            value = devices.resolve("cuda")
    finally:
        sys.settrace(previous)
    assert not tracer.enabled and tracer.place(value) is None and tracer.decisions({"ok": True}) == {}
    blame.observed("family", value)  # no step traced: nothing happens
    assert blame.package_roots(["no_such_package_anywhere"]) == ()


class Adapter:
    """A subject whose step reads a resolved device from the toy project."""

    def __init__(self, devices: ModuleType) -> None:
        self.devices = devices

    def step(self, msg: dict[str, Any]) -> dict[str, Any]:
        device = self.devices.resolve("cuda")
        blame.observed("torch_device", device)
        return {"type": "observed", "scenario": msg["scenario"], "number": msg["number"], "ok": True,
                "torch_device": f"{device.kind}:{device.index}", "trace": []}


def test_the_server_adds_decided_by_for_a_subject_that_declares_packages(
    toy: tuple[ModuleType, ModuleType],
) -> None:
    devices, _ = toy
    msg = {"scenario": "s", "number": 1}
    assert declared_packages({"packages": ["toyproject"]}) == ["toyproject"]
    answer = answer_step(Adapter(devices), msg, declared_packages({"packages": ["toyproject"]}))
    assert answer["decided_by"] == {"torch_device": place(devices, "make", "return Device(kind, index)")}
    assert "decided_by" not in answer_step(Adapter(devices), msg, declared_packages({}))


def test_a_trace_event_is_placed_at_the_project_call_that_made_it(toy: tuple[ModuleType, ModuleType]) -> None:
    devices, _ = toy
    recorder = Recorder()
    with recorder.capture() as trace, blame.Tracer(["toyproject"]) as tracer:
        devices.probe(recorder)
        devices.probe(recorder)  # the first of a name is the one placed
        devices.probe_each(recorder)
    assert trace[:2] == [{"event": "nvidia_capability", "device": 0}] * 2
    decided = tracer.decisions({"ok": True, "trace": trace})
    assert decided == {
        "trace.nvidia_capability": place(devices, "probe", 'recorder.record("nvidia_capability"'),
        # made inside a comprehension: placed at the function that holds it
        "trace.amd_arch": place(devices, "probe_each", 'recorder.record("amd_arch"'),
    }
    # an event the answer does not carry (dropped by the adapter) is not placed
    assert tracer.decisions({"ok": True, "trace": []}) == {}


def test_blame_can_be_turned_off(toy: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    devices, _ = toy
    monkeypatch.setenv("DEVSIM_SUBJECT_BLAME", "0")
    assert "decided_by" not in answer_step(Adapter(devices), {"scenario": "s", "number": 1}, ["toyproject"])


def test_the_trace_keeps_no_value_alive(toy: tuple[ModuleType, ModuleType]) -> None:
    """A value the adapter drops is freed during the step (a live step measures the memory still held)."""
    import gc
    import weakref

    devices, _ = toy
    with blame.Tracer(["toyproject"]) as tracer:
        dropped = weakref.ref(devices.resolve("cuda"))
        gc.collect()
        assert dropped() is None
        kept = devices.resolve("rocm")
    assert tracer.place(kept) == place(devices, "make", "return Device(kind, index)")


def test_a_value_a_hook_reads_is_placed_at_the_call_that_just_returned_it(
    toy: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An adapter's wrapper around a project function the project itself calls (GPTQModel's `_device_family`
    inside `select_quant_linear`): the value is placed where that call decided it, not left unknown."""
    devices, _ = toy
    original = devices.classify
    seen: list[dict[str, Any] | None] = []

    def hooked(kind: str) -> str:
        family = original(kind)
        seen.append(blame.just_returned(family))
        return str(family)

    monkeypatch.setattr(devices, "classify", hooked)
    with blame.Tracer(["toyproject"]) as tracer:
        devices.pick("rocm")
        blame.observed_at("family", seen[0])
        blame.observed_at("ordinal", None)  # nothing placed: nothing said
    assert seen == [place(devices, "classify", "return kind.upper()")]
    assert tracer.decisions({"ok": True, "family": "ROCM", "ordinal": None}) == {"family": seen[0]}
    assert tracer.decisions({"ok": True}) == {}  # a field the answer does not carry is not placed
    assert blame.just_returned("ROCM") is None  # outside a traced step


class Stopping:
    """A subject whose step probes the GPU through the toy project, then cannot go on."""

    def __init__(self, devices: ModuleType) -> None:
        self.devices = devices

    def step(self, msg: dict[str, Any]) -> dict[str, Any]:
        recorder = Recorder()
        with recorder.capture() as trace:
            self.devices.probe(recorder)
        return {"type": "unsupported", "scenario": msg["scenario"], "number": msg["number"],
                "reason": "needs a real GPU", "trace": trace}


def test_a_stopped_steps_events_are_placed(toy: tuple[ModuleType, ModuleType]) -> None:
    devices, _ = toy
    answer = answer_step(Stopping(devices), {"scenario": "s", "number": 1}, ["toyproject"])
    assert answer["decided_by"] == {
        "trace.nvidia_capability": place(devices, "probe", 'recorder.record("nvidia_capability"'),
    }


def test_a_value_read_through_a_recorded_query_is_placed_where_the_query_was_made(
    toy: tuple[ModuleType, ModuleType],
) -> None:
    devices, _ = toy
    recorder = Recorder()
    with recorder.capture(), blame.Tracer(["toyproject"]) as tracer:
        devices.probe_each(recorder)
        blame.observed_event("archs", "amd_arch")
        blame.observed_event("vendor", "nvidia_capability")  # no such event this step: not placed
    assert tracer.decisions({"ok": True, "archs": ["gfx942"], "vendor": "amd"}) == {
        "archs": place(devices, "probe_each", 'recorder.record("amd_arch"'),
    }
