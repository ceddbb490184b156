"""devsim_subject_kit.repro: a generated reproduction's replay and check against a scripted fake subject."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from devsim_subject_kit import repro

# A subject that answers from a table: ANSWERS maps a step number to its `observed` fields (or "unsupported"),
# HANDSHAKE adds to its handshake; CRASH makes it exit at the first step.
FAKE = textwrap.dedent(
    """
    import json, os, sys
    answers = json.loads(os.environ["FAKE_ANSWERS"])
    extra = json.loads(os.environ.get("FAKE_HANDSHAKE", "{}"))
    for line in sys.stdin:
        message = json.loads(line)
        kind = message["type"]
        if kind == "hello":
            out = {"type": "handshake", "protocol": 2, "subject": {"name": "fake", "version": "1"},
                   "actions": ["resolve"], "kernels": [], "events": ["nvidia_capability"], **extra}
        elif kind == "scenario":
            out = {"type": "ready", "scenario": message["name"]}
        elif kind == "step":
            if os.environ.get("FAKE_CRASH"):
                sys.exit(3)
            answer = answers[str(message["number"])]
            if answer == "unsupported":
                out = {"type": "unsupported", "scenario": message["scenario"], "number": message["number"],
                       "reason": "needs a GPU"}
            else:
                out = {"type": "observed", "scenario": message["scenario"], "number": message["number"],
                       "trace": [], **answer}
        else:
            out = {"type": "done", "scenario": message["scenario"]}
        print(json.dumps(out), flush=True)
    """
)

MESSAGES = [
    {"type": "hello", "protocol": 2, "devsim": "0"},
    {"type": "scenario", "name": "s.toml", "host": {}},
    {"type": "step", "scenario": "s.toml", "number": 1, "action": "resolve"},
    {"type": "step", "scenario": "s.toml", "number": 2, "action": "resolve"},
    {"type": "end", "scenario": "s.toml"},
]


def run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    check: dict[str, Any],
    answers: dict[str, Any],
    handshake: dict[str, Any] | None = None,
) -> int:
    fake = tmp_path / "fake.py"
    fake.write_text(FAKE)
    monkeypatch.setenv("FAKE_ANSWERS", json.dumps(answers))
    monkeypatch.setenv("FAKE_HANDSHAKE", json.dumps(handshake or {}))
    data = {
        "format": repro.FORMAT,
        "finding": "[policy:x] decided by p:f:1",
        "scenario": "s.toml",
        "expected": "x",
        "subject": {"command": [sys.executable, str(fake)]},
        "messages": MESSAGES,
        "check": check,
    }
    return repro.main(data, str(tmp_path / "script.py"), [])


FIELD = {"kind": "field", "step": 2, "branch": None, "key": "torch_device", "expected": "cuda"}
OK_ANSWER = {"ok": True}


def test_a_check_that_still_fails_exits_1_and_one_that_holds_exits_0(tmp_path, monkeypatch, capsys):
    decided = {"torch_device": {"module": "p.h", "function": "canon", "line": 7, "file": "/p/h.py"}}
    answers = {"1": OK_ANSWER, "2": {"ok": True, "torch_device": "cuda:0", "decided_by": decided}}
    assert run(tmp_path, monkeypatch, FIELD, answers) == repro.FAILS
    assert "decided by p.h:canon:7" in capsys.readouterr().out
    answers["2"] = {"ok": True, "torch_device": "cuda"}
    assert run(tmp_path, monkeypatch, FIELD, answers) == repro.HOLDS


def test_nothing_judged_is_exit_2_never_0(tmp_path, monkeypatch):
    absent = {"1": OK_ANSWER, "2": {"ok": True}}
    assert run(tmp_path, monkeypatch, FIELD, absent) == repro.CANNOT
    unsupported = {"1": OK_ANSWER, "2": "unsupported"}
    assert run(tmp_path, monkeypatch, FIELD, unsupported) == repro.CANNOT
    monkeypatch.setenv("FAKE_CRASH", "1")
    assert run(tmp_path, monkeypatch, FIELD, {"1": OK_ANSWER, "2": OK_ANSWER}) == repro.CANNOT


def test_a_field_the_project_decides_nothing_about_is_not_judged(tmp_path, monkeypatch):
    answers = {"1": OK_ANSWER, "2": {"ok": True, "undecided": {"torch_device": "plain torch"}}}
    assert run(tmp_path, monkeypatch, FIELD, answers) == repro.CANNOT


def test_trace_rules_count_the_step_or_the_whole_scenario(tmp_path, monkeypatch):
    probe = {"ok": True, "trace": [{"event": "nvidia_capability", "device": 0}]}
    answers = {"1": probe, "2": probe}
    never = {"kind": "trace", "scope": "scenario", "step": None, "branch": None, "rule": "never",
             "event": "nvidia_capability", "count": 0}
    assert run(tmp_path, monkeypatch, never, answers) == repro.FAILS
    twice = {**never, "rule": "count", "count": 2}
    assert run(tmp_path, monkeypatch, twice, answers) == repro.HOLDS
    once_in_step = {**never, "scope": "step", "step": 2, "rule": "once", "count": 1}
    assert run(tmp_path, monkeypatch, once_in_step, answers) == repro.HOLDS
    unrecorded = {**never, "event": "amd_arch"}
    assert run(tmp_path, monkeypatch, unrecorded, answers) == repro.CANNOT


def test_a_kernel_admitted_outside_its_declared_families_reads_the_handshake(tmp_path, monkeypatch):
    check = {"kind": "declared", "step": 2, "branch": None, "key": "ok", "kernel": "k", "family": "rocm"}
    answers = {"1": OK_ANSWER, "2": OK_ANSWER}
    undeclared = {"kernels": [{"name": "k", "families": ["cuda"]}]}
    assert run(tmp_path, monkeypatch, check, answers, undeclared) == repro.FAILS
    declared = {"kernels": [{"name": "k", "families": ["cuda", "rocm"]}]}
    assert run(tmp_path, monkeypatch, check, answers, declared) == repro.HOLDS
    refused = {"1": OK_ANSWER, "2": {"ok": False, "error": {"kind": "unsupported-family", "message": "no"}}}
    assert run(tmp_path, monkeypatch, check, refused, undeclared) == repro.HOLDS


def test_a_refusal_the_projects_own_arch_rule_admits_fails_while_it_stands(tmp_path, monkeypatch):
    check = {"kind": "not_refused_as", "step": 2, "branch": None, "key": "error", "refusal": "unsupported-arch",
             "why": "no unsupported-arch refusal (the target satisfies the declared rule)"}
    refused = {"1": OK_ANSWER, "2": {"ok": False, "error": {"kind": "unsupported-arch", "message": "cc 80"}}}
    assert run(tmp_path, monkeypatch, check, refused) == repro.FAILS
    assert run(tmp_path, monkeypatch, check, {"1": OK_ANSWER, "2": OK_ANSWER}) == repro.HOLDS
    other = {"1": OK_ANSWER, "2": {"ok": False, "error": {"kind": "unsupported-family", "message": "no"}}}
    assert run(tmp_path, monkeypatch, check, other) == repro.HOLDS


def test_a_conditional_check_whose_branch_no_longer_applies_holds(tmp_path, monkeypatch):
    check = {**FIELD, "branch": "when_ok"}
    refused = {"1": OK_ANSWER, "2": {"ok": False, "error": {"kind": "no-such-device", "message": "x"}}}
    assert run(tmp_path, monkeypatch, check, refused) == repro.HOLDS


def test_a_subject_file_starts_as_devsim_starts_it(tmp_path):
    (tmp_path / "src").mkdir()
    subject = tmp_path / "p.toml"
    subject.write_text('name = "p"\ncommand = ["python3", "-m", "p"]\nsource = "src"\nenv = { PYTHONPATH = "a:b" }\n'
                       "step_timeout_s = 5\n")
    launch = repro.launch_from_file(subject)
    assert launch.argv == ["python3", "-m", "p"]
    assert launch.cwd == tmp_path.resolve()
    assert launch.env["PYTHONPATH"] == f"{(tmp_path / 'src').resolve()}:a:b"
    assert launch.env[repro.SOURCE_VARIABLE] == str((tmp_path / "src").resolve())
    assert launch.step_timeout == 5.0
