"""The kit checks messages against the committed schema, and its copy of that schema is the committed one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


@pytest.mark.parametrize(
    ("msg", "direction", "wanted"),
    [
        ({"type": "hello", "protocol": 2, "devsim": "0.2.0"}, "ToSubject", None),
        ({"type": "hello", "protocol": -1, "devsim": "0.2.0"}, "ToSubject", "-1 is less than the minimum of 0"),
        ({"type": "done", "scenario": "a"}, "FromSubject", None),
        ({"type": "done"}, "FromSubject", "'scenario' is a required property"),
        ({"type": "observed", "scenario": "a", "number": 1, "ok": True, "trace": [], "ran_on": "gpu"},
         "FromSubject", "ran_on"),
        ({"type": "shout"}, "FromSubject", "breaks the protocol"),
    ],
)
def test_violations_name_the_field(msg, direction, wanted):
    problem = violation(msg, direction)
    if wanted is None:
        assert problem is None
    else:
        assert problem is not None and wanted in problem, problem


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


def test_negotiation_caps_at_the_kits_version():
    assert negotiate(1) == 1 and negotiate(7) == 2
    for offered in (0, True, "2", None):
        with pytest.raises(Exception, match="this subject speaks 1 to 2"):
            negotiate(offered)
