"""What a trigger's session says, per host: a repro's observation judged against `misbehaves` / `behaves`, a
suite's or an import's failing tests, the sanitizer's flags in the project's own code; or why it is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree import ElementTree

from .case import Expectation, Trigger
from .trigger import Session

#: A repro's outcomes, a suite's or an import's, and a harness failure (never a misbehaviour).
MISBEHAVES, BEHAVES, FAILED, PASSED, ERROR = "misbehaves", "behaves", "failed", "passed", "error"
#: A suite or import whose every test skipped (nothing failed, nothing passed).
SKIPPED = "skipped"
_FAILING = {"failed", "error", "crashed"}
_TRACE_LINES = 40


@dataclass
class HostOutcome:
    """One trigger on one side and host: the outcome and its evidence."""

    outcome: str
    host: str
    error: str | None = None
    observation: dict[str, Any] | None = None
    failing: list[str] = field(default_factory=list)
    passing: list[str] = field(default_factory=list)
    skipped: int = 0
    flags: list[dict[str, Any]] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)


def matches(expectation: Expectation, observation: dict[str, Any]) -> bool:
    """Whether an observation shows `expectation`: the value returned (JSON-equal, or its repr when a string is
    expected), an exception (its type or a base's name, `Name: text` also needing text in the message; `true`:
    any), or the device (`str(result.device)`, else `str(result)`)."""
    raised = observation.get("raised")
    if expectation.kind == "raises":
        if raised is None:
            return False
        if expectation.value is True:
            return True
        name, _, text = str(expectation.value).partition(":")
        types = [str(t) for t in observation.get("raised_types", [])]
        return name.strip() in types and text.strip() in str(raised).partition(": ")[2]
    if raised is not None:
        return False
    if expectation.kind == "device":
        return bool(observation.get("device") == expectation.value)
    returned = observation.get("returned")
    if _same(returned, expectation.value):
        return True
    return isinstance(expectation.value, str) and bool(observation.get("returned_repr") == expectation.value)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else bool(a == b)


def judge_repro(trigger: Trigger, observation: dict[str, Any]) -> tuple[str, str | None]:
    """`misbehaves`, `behaves`, or `error` with why (an observation matching neither)."""
    assert trigger.misbehaves is not None
    if matches(trigger.misbehaves, observation):
        return MISBEHAVES, None
    if trigger.behaves is not None:
        if matches(trigger.behaves, observation):
            return BEHAVES, None
        return ERROR, f"the observation matches neither misbehaves nor behaves: {_brief(observation)}"
    if observation.get("raised") is not None and trigger.misbehaves.kind != "raises":
        return ERROR, f"observe() raised, which is neither misbehaviour nor behaviour: {observation['raised']}"
    return BEHAVES, None


def _brief(observation: dict[str, Any]) -> str:
    if observation.get("raised") is not None:
        return f"raised {observation['raised']}"
    return f"returned {observation.get('returned_repr')}, device {observation.get('device')}"


def outcomes(trigger: Trigger, session: Session, own: tuple[Path, ...]) -> list[HostOutcome]:
    """The trigger's outcome on each of its hosts."""
    return [_outcome(trigger, session, host, own) for host in trigger.hosts]


def _outcome(trigger: Trigger, session: Session, host: str, own: tuple[Path, ...]) -> HostOutcome:
    if session.timed_out:
        return HostOutcome(ERROR, host, error=f"timed out after {session.seconds:.0f} s (the process group was "
                                                 f"killed); last output: {_tail(session)}")
    report = session.report
    if report is None:
        return HostOutcome(ERROR, host, error=f"the session wrote no report (exit {session.code}): the host could "
                                               f"not start or pytest failed before it; last output: {_tail(session)}")
    code = report.get("exit_codes", {}).get(host)
    ran = [t for t in report.get("tests", []) if t.get("profile") == host]
    flags = [f for f in report.get("sanitizer", []) or [] if f.get("profile", host) == host]
    tests = {t.split("::", 1)[0] for t in trigger.tests}
    own_flags = []
    for flag in flags:
        path = own_path(str(flag.get("file", "")), own)
        # the project's code under judgement: its tree, not the test files a suite trigger runs (a test that
        # probes the GPU itself is no bug of the project's dispatch)
        mine = path is not None and path not in tests and PurePosixPath(path).name != "conftest.py"
        own_flags.append(dict(flag, path=path, own=mine))
    if code is None:
        return HostOutcome(ERROR, host, error=f"the session did not run on {host}: {_tail(session)}")
    failing = sorted(str(t["nodeid"]) for t in ran if t.get("outcome") in _FAILING)
    passing = sorted(str(t["nodeid"]) for t in ran if t.get("outcome") == "passed")
    failing += collection_errors(session.junit, host)
    skipped = sum(1 for t in ran if t.get("outcome") == "skipped")
    result = HostOutcome(PASSED, host, failing=failing, passing=passing, skipped=skipped, flags=own_flags)
    if trigger.kind == "repro":
        observation = session.observations.get(host)
        if observation is None:
            result.outcome, result.error = ERROR, (f"the generated repro test recorded no observation (exit {code}): "
                                                   f"{_tail(session)}")
            return result
        result.observation = {k: v for k, v in observation.items() if k != "trace"}
        result.trace = [_trace_line(e) for e in observation.get("trace", [])][:_TRACE_LINES]
        result.outcome, result.error = judge_repro(trigger, observation)
        return result
    if code in (0, 1) and (ran or failing):
        result.outcome = FAILED if failing else PASSED if passing or not skipped else SKIPPED
        return result
    if code == 2 and failing:  # a collection error of the project's file: the file fails on this host
        result.outcome = FAILED
        return result
    why = "the trigger ran no test" if code == 5 else f"pytest exited {code}"
    result.outcome, result.error = ERROR, f"{why}: {_tail(session)}"
    return result


def collection_errors(junit: Path, host: str) -> list[str]:
    """The project's test files that failed to collect on `host` (`collect:path`), from the session's JUnit."""
    if not junit.is_file():
        return []
    try:
        root = ElementTree.parse(junit).getroot()
    except ElementTree.ParseError:
        return []
    found = []
    for suite in root.iter("testsuite"):
        if not str(suite.get("name", "")).endswith(f"[devsim:{host}]"):
            continue
        for case in suite.iter("testcase"):
            error = case.find("error")
            if error is not None and "collection failure" in str(error.get("message", "")):
                found.append("collect:" + str(case.get("name", "")).replace(".", "/") + ".py")
    return found


def own_path(file: str, own: tuple[Path, ...]) -> str | None:
    """`file` relative to the project's own folder it is in (its tree or site), or None: not the project's."""
    try:
        path = Path(file).resolve()
    except (OSError, ValueError):
        return None
    for folder in own:
        if path.is_relative_to(folder.resolve()):
            return path.relative_to(folder.resolve()).as_posix()
    return None


def _trace_line(event: Any) -> str:
    if not isinstance(event, dict):
        return str(event)
    parts = [str(event.get("event"))]
    if event.get("device") is not None:
        parts.append(f"device={event['device']}")
    if event.get("detail") is not None:
        parts.append(json.dumps(event["detail"]) if not isinstance(event["detail"], str) else event["detail"])
    return " ".join(parts)


def _tail(session: Session) -> str:
    return " | ".join(line for line in session.tail[-8:] if line.strip()) or "(no output)"
