"""The kit checks messages against the committed schema, and its copy of that schema is the committed one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from devsim_subject_kit import protocol
from devsim_subject_kit.protocol import (
    ProtocolError,
    check_step,
    negotiate,
    schema,
    violation,
)

REPO = Path(__file__).resolve().parents[3]


def test_the_kits_schema_is_the_committed_one():
    committed = json.loads((REPO / "docs/schema/subject-protocol.schema.json").read_text())
    assert schema() == committed, (
        "subjects/kit/src/devsim_subject_kit/subject-protocol.schema.json differs from "
        "docs/schema/subject-protocol.schema.json: copy it over"
    )


MESSAGES = [
    ({"type": "hello", "protocol": 2, "devsim": "0.2.0"}, "ToSubject", None),
    ({"type": "hello", "protocol": -1, "devsim": "0.2.0"}, "ToSubject", "-1 is less than the minimum of 0"),
    ({"type": "step", "scenario": "a", "number": 1, "action": "warmup", "kernel": "k",
      "device": {"form": "string", "written": "cuda:1"}}, "ToSubject", None),
    ({"type": "step", "scenario": "a", "number": 1, "action": "warmup", "kernel": "k",
      "device": {"form": "string", "written": "cuda:1"}, "extra": 1}, "ToSubject", "'extra' was unexpected"),
    ({"type": "step", "scenario": "a", "number": 1, "action": "warmup",
      "device": {"form": "string", "written": "cuda:1"}}, "ToSubject", "breaks the protocol"),
    ({"type": "step", "scenario": "a", "number": 1, "action": "discover", "kernel": "k"}, "ToSubject",
     "'kernel' was unexpected"),
    ({"type": "done", "scenario": "a"}, "FromSubject", None),
    ({"type": "done"}, "FromSubject", "'scenario' is a required property"),
    ({"type": "observed", "scenario": "a", "number": 1, "ok": True, "ran_on": 1, "current_after": 0,
      "trace": [{"event": "nvidia_capability", "device": 1, "detail": "get_device_properties().major"}]},
     "FromSubject", None),
    ({"type": "observed", "scenario": "a", "number": 1, "ok": True, "trace": [], "ran_on": "gpu"},
     "FromSubject", "ran_on"),
    ({"type": "observed", "scenario": "a", "number": 1, "ok": True, "trace": [{"device": 1}]},
     "FromSubject", "'event' is a required property"),
    ({"type": "shout"}, "FromSubject", "breaks the protocol"),
    ("not an object", "FromSubject", "breaks the protocol"),
]


@pytest.fixture(params=["jsonschema-rs first", "jsonschema alone"])
def validators(request, monkeypatch):
    """Every check runs both ways: jsonschema-rs answering first (as installed by the `fast` extra), and
    jsonschema alone (where that extra is absent)."""
    if request.param == "jsonschema alone":
        monkeypatch.setattr(protocol, "_compiled", lambda direction: None)
    else:
        pytest.importorskip("jsonschema_rs")
    return request.param


@pytest.mark.parametrize(("msg", "direction", "wanted"), MESSAGES)
def test_violations_name_the_field(validators, msg, direction, wanted):
    problem = violation(msg, direction)
    if wanted is None:
        assert problem is None
    else:
        assert problem is not None and wanted in problem, problem


@pytest.mark.parametrize(("msg", "direction", "wanted"), MESSAGES)
def test_jsonschema_rs_accepts_exactly_what_jsonschema_accepts(msg, direction, wanted):
    """A message jsonschema-rs accepts is never checked again, so it must refuse whatever the reference refuses."""
    pytest.importorskip("jsonschema_rs")
    compiled = protocol._compiled(direction)
    assert compiled is not None and compiled(msg) is (wanted is None)
    assert protocol._validator(direction).is_valid(msg) is (wanted is None)


@pytest.mark.parametrize(
    ("step", "wanted"),
    [
        ({"scenario": "a", "number": 1, "action": "validate", "device": {"written": "cuda", "form": "string"}},
         "without 'kernel'"),
        ({"scenario": "a", "number": 1, "action": "resolve", "device": {"form": "string"}}, "without 'written'"),
        ({"scenario": "a", "number": 1, "action": "lock", "scope": {"form": "family_enum", "family": "amd"},
          "mode": "read"}, "unknown family 'amd'"),
    ],
)
def test_steps_devsim_could_not_send_are_protocol_errors(step, wanted):
    with pytest.raises(ProtocolError, match=wanted):
        check_step(step)


def test_step_fields_come_from_the_schema():
    """Every action the schema's step message has, with the fields its branch requires: a lock's `mode` too."""
    assert set(protocol.STEP_FIELDS) == {
        "normalize", "resolve", "validate", "warmup", "move", "select", "lock", "set_device", "discover",
        "default_device",
    }
    assert protocol.STEP_FIELDS["lock"] == ("scope", "mode")
    assert protocol.STEP_FIELDS["discover"] == protocol.STEP_FIELDS["default_device"] == ()
    assert protocol.SELECTOR_KEYS == ("device", "scope")
    assert protocol.SELECTOR_FIELDS["family_enum"] == ("family",)
    assert "all" in protocol.SELECTOR_FAMILIES and "all" not in protocol.FAMILIES
    assert "gate:family" in protocol.EVENTS and len(protocol.EVENTS) == len(set(protocol.EVENTS)) == 20
    assert "unsupported-arch" in protocol.ERROR_KINDS and len(protocol.ERROR_KINDS) == 10
    with pytest.raises(ProtocolError, match="a lock step without 'mode'"):
        check_step({"scenario": "a", "number": 1, "action": "lock", "scope": {"form": "ordinal", "written": 0}})


def test_negotiation_caps_at_the_kits_version():
    assert negotiate(1) == 1 and negotiate(7) == 2
    for offered in (0, True, "2", None):
        with pytest.raises(Exception, match="this subject speaks 1 to 2"):
            negotiate(offered)
