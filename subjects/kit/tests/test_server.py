"""The kit's protocol loop, driven like devsim drives a subject (devsim_subject_kit.testing.Driver)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from devsim_subject_kit.offline import NO_CACHE
from devsim_subject_kit.testing import AMD_MIXED, CPU, H200X2, Driver, ProtocolViolation

TOY = str(Path(__file__).resolve().parent / "toy_subject.py")


def toy(**env: str) -> Driver:
    return Driver("", {**os.environ, **env}, command=[sys.executable, TOY])


def test_a_scenario_runs_on_its_own_simulated_host():
    driver = toy()
    assert driver.hello(protocol=2)["protocol"] == 2
    first = driver.scenario(AMD_MIXED, [{"action": "discover"}, {"action": "set_device", "ordinal": 1}])
    assert first["answers"][0]["torch_device_count"] == 2
    assert first["answers"][1]["current_after"] == 1
    assert first["answers"][1]["trace"] == [{"event": "set_device", "device": 1}]
    cpu = driver.step(CPU, {"action": "discover"})
    assert cpu["torch_device_count"] == 0 and cpu["trace"] == []
    assert driver.close() == 0


def test_state_never_reaches_the_next_scenario():
    """Each scenario's child starts from the parent's state: the step counter is 1 every time, also when a child
    is reused for the same host (its state was unchanged) and when reuse is off."""
    for reuse in ("1", "0"):
        driver = toy(DEVSIM_SUBJECT_REUSE=reuse)
        driver.hello(protocol=2)
        seen = [driver.step(H200X2, {"action": "discover"})["archs"] for _ in range(3)]
        assert driver.close() == 0
        assert seen[0] == ["1"], seen
        # reused: the counter is module state the step changed, so the child retires and the next one is fresh
        assert seen == [["1"]] * 3, (reuse, seen)


def test_an_unsupported_host_is_answered_and_its_end_closed():
    driver = toy()
    driver.hello(protocol=2)
    result = driver.scenario({**CPU, "torch": "cuda", "gpus": [AMD_MIXED["gpus"][0]], "visible": [0]}, [])
    assert result["start"]["type"] == "unsupported" and "cannot drive gfx942" in result["start"]["reason"]
    driver.send({"type": "end", "scenario": result["start"]["scenario"]})
    assert driver.read()["type"] == "done"
    assert driver.close() == 0


def test_a_simulated_subject_has_no_network_and_no_user_cache():
    driver = toy(TOY_MODE="reach-out")
    driver.hello(protocol=2)
    (seen,) = driver.step(CPU, {"action": "discover"})["archs"]
    assert driver.close() == 0
    assert seen == "[Errno 101] a simulated host has no network (devsim); cache " + NO_CACHE, seen


def test_prints_from_the_code_under_test_go_to_stderr():
    driver = toy(TOY_MODE="print")
    driver.hello(protocol=2)
    assert driver.step(CPU, {"action": "discover"})["ok"] is True
    assert driver.close() == 0
    assert "chatty library output" in driver.stderr_text()


def test_a_child_that_dies_ends_the_subject_with_a_reason():
    driver = toy(TOY_MODE="crash")
    driver.hello(protocol=2)
    with pytest.raises(ProtocolViolation, match="closed stdout"):
        driver.step(CPU, {"action": "discover"})
    assert driver.close() == 2
    assert "died (exit status 7)" in driver.stderr_text()


def test_an_answer_the_schema_refuses_is_never_written():
    driver = toy(TOY_MODE="bad-answer")
    driver.hello(protocol=2)
    with pytest.raises(ProtocolViolation, match="closed stdout"):
        driver.step(CPU, {"action": "discover"})
    assert driver.close() == 2
    assert "the subject wrote an invalid answer" in driver.stderr_text()
    assert "'yes' is not of type 'boolean'" in driver.stderr_text()


@pytest.mark.parametrize(
    ("line", "wanted"),
    [
        (b"not json\n", "not a JSON line"),
        (b'{"type": "hello", "protocol": 2}\n', "'devsim' is a required property"),
        (b'{"type": "hello", "protocol": 2, "devsim": "0", "extra": 1}\n', "Additional properties"),
        (b'{"type": "scenario", "name": "x"}\n', "a scenario message breaks the protocol: 'host' is a required"),
        (json.dumps({"type": "scenario", "name": "x", "host": CPU}).encode() + b"\n", "expected hello, got 'scenario'"),
    ],
)
def test_bad_input_from_devsim_ends_the_subject_naming_the_problem(line, wanted):
    driver = toy()
    driver.send_raw(line)
    assert driver.close() == 2
    assert wanted in driver.stderr_text(), driver.stderr_text()


def test_each_scenario_starts_with_the_heap_collected_and_frozen():
    """A child collects a scenario's garbage before its reuse verdict (its finalizers run then, not during the
    next scenario's steps) and freezes what the next scenario finds, so a collection the code under test makes
    in a step traverses only what the scenario allocated."""
    driver = toy(TOY_MODE="gc")
    driver.hello(protocol=2)
    seen = [driver.step(H200X2, {"action": "discover"})["archs"] for _ in range(3)]
    assert driver.close() == 0
    assert [s[0] for s in seen] == ["finalized 0", "finalized 1", "finalized 2"], seen
    # what `enter` made for the scenario is frozen, so a collection in a step does not traverse it
    assert [s[1] for s in seen] == ["entered collectable False"] * 3, seen
