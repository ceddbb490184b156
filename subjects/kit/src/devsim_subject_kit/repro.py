"""Standalone reproductions of devsim findings (docs/reproductions.md).

`devsim run --subject FILE --repro DIR` writes one script per distinct finding. Each script is data (the
protocol messages devsim sent the subject for the finding's first failing scenario, and the failing check)
and one call to `main`, which starts the subject as devsim does (from its subject file), replays the messages,
prints what the project did and where it decided it, and says whether the check still fails:

- exit 1: the check fails as devsim judged it (the bug is there);
- exit 0: the check holds (the bug is fixed);
- exit 2: nothing could be judged: the subject broke down, refused the host or step (`unsupported`), or no
  longer reports the field or event the check reads. Never 0.

The comparisons restate devsim's judge (`src/runner/expect.rs`, `src/subject/judge.rs`) for the checks devsim
generates scripts for; a check it cannot restate exactly (live numerics, retained memory, a breakdown of the
subject's process) gets no script, and devsim says why in its run report.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import IO, Any

#: The script format this module reads (`REPRO["format"]`).
FORMAT = 1
#: Exit statuses.
FAILS, HOLDS, CANNOT = 1, 0, 2

DEFAULT_STEP_TIMEOUT = 30.0
DEFAULT_START_TIMEOUT = 120.0
SOURCE_VARIABLE = "DEVSIM_SUBJECT_SRC"


class CannotReproduce(Exception):
    """Nothing could be judged: the subject broke down, refused, or did not observe what the check reads."""


@dataclass(frozen=True)
class Launch:
    """How to start the subject process, as devsim starts it from a subject file or a command."""

    argv: list[str]
    cwd: pathlib.Path | None
    env: dict[str, str]
    step_timeout: float = DEFAULT_STEP_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT


def launch_from_file(path: pathlib.Path, source: pathlib.Path | None = None) -> Launch:
    """A subject file read as devsim's `SubjectSpec::load` reads it: `cwd`, `source` relative to the file's
    folder (the default `cwd`); with a source tree, that tree first on `PYTHONPATH` and `DEVSIM_SUBJECT_SRC`."""
    import tomllib

    folder = path.resolve().parent
    spec = tomllib.loads(path.read_text(encoding="utf-8"))
    cwd = folder / spec["cwd"] if spec.get("cwd") else folder
    env = {str(k): str(v) for k, v in spec.get("env", {}).items()}
    tree = source.resolve() if source is not None else (folder / spec["source"] if spec.get("source") else None)
    if tree is not None:
        rest = env.get("PYTHONPATH") or os.environ.get("PYTHONPATH") or ""
        env["PYTHONPATH"] = f"{tree}:{rest}" if rest else str(tree)
        env[SOURCE_VARIABLE] = str(tree)
    return Launch(
        argv=[str(word) for word in spec["command"]],
        cwd=cwd,
        env=env,
        step_timeout=float(spec.get("step_timeout_s", DEFAULT_STEP_TIMEOUT)),
        start_timeout=float(spec.get("start_timeout_s", DEFAULT_START_TIMEOUT)),
    )


@dataclass
class Replay:
    """What the subject answered: its handshake and each step's `observed` by number."""

    handshake: dict[str, Any]
    observed: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: The step the subject could not finish (`unsupported`, with the events it recorded before it stopped).
    stopped: dict[str, Any] | None = None


class _Subject:
    """One subject process spoken to over JSON lines, with a timeout per answer."""

    def __init__(self, launch: Launch) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        try:
            self._process = subprocess.Popen(
                launch.argv,
                cwd=launch.cwd,
                env={**os.environ, **launch.env},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",
            )
        except OSError as error:
            raise CannotReproduce(f"could not start {launch.argv!r}: {error}") from error
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        for line in stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-4096:]

    def ask(self, message: dict[str, Any], timeout: float, expected: str) -> dict[str, Any]:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()
        except OSError as error:
            raise self._broke(expected, f"stopped reading its input ({error})") from error
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise self._broke(expected, f"no answer within {timeout:.1f} s") from None
        if line is None:
            raise self._broke(expected, "closed its output")
        try:
            answer: dict[str, Any] = json.loads(line)
        except ValueError:
            raise self._broke(expected, f"`{line.strip()[:300]}` is not a protocol message") from None
        return answer

    def _broke(self, expected: str, problem: str) -> CannotReproduce:
        tail = self.stderr_tail().strip()
        shown = "\n  ".join(tail.splitlines()) if tail else "(empty)"
        return CannotReproduce(f"expected {expected}, the subject {problem}; its stderr:\n  {shown}")

    def close(self) -> None:
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
            self._process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait()
        self._stderr.close()


def replay(launch: Launch, messages: list[dict[str, Any]]) -> Replay:
    """Sends `messages` (hello, scenario, steps, end) in order and collects the answers; a breakdown, an
    answer out of order or an `unsupported` raises `CannotReproduce`."""
    subject = _Subject(launch)
    try:
        result: Replay | None = None
        for message in messages:
            kind = message["type"]
            if kind == "hello":
                answer = subject.ask(message, launch.start_timeout, "a handshake")
                if answer.get("type") != "handshake":
                    raise CannotReproduce(f"expected a handshake, got {answer!r}")
                result = Replay(handshake=answer)
                continue
            if result is None:
                raise CannotReproduce("the messages do not start with hello")
            if kind == "scenario":
                answer = subject.ask(message, launch.step_timeout, f"`ready` for scenario {message['name']}")
                if answer.get("type") == "unsupported":
                    raise CannotReproduce(f"the subject does not simulate the host: {answer.get('reason')}")
                if answer.get("type") != "ready":
                    raise CannotReproduce(f"expected `ready`, got {answer!r}")
            elif kind == "step":
                if result.stopped is not None:
                    continue  # as devsim: no step after one the subject could not finish
                number = int(message["number"])
                answer = subject.ask(message, launch.step_timeout, f"`observed` for step {number}")
                if answer.get("type") == "unsupported" and answer.get("number") == number:
                    result.stopped = answer
                    continue
                if answer.get("type") != "observed" or answer.get("number") != number:
                    raise CannotReproduce(f"expected `observed` for step {number}, got {answer!r}")
                result.observed[number] = answer
            elif kind == "end":
                answer = subject.ask(message, launch.step_timeout, "`done`")
                if answer.get("type") != "done":
                    raise CannotReproduce(f"expected `done`, got {answer!r}")
        if result is None:
            raise CannotReproduce("no messages to replay")
        return result
    finally:
        subject.close()


# ------------------------------------------------------------------------------------------------ checks


@dataclass(frozen=True)
class Verdict:
    """Whether the check fails (the bug is there), what was observed, and where the project decided it."""

    fails: bool
    observed: str
    decided_by: str = "location unknown"
    note: str = ""


def _place(answer: dict[str, Any], fields: list[str]) -> str:
    decided = answer.get("decided_by") or {}
    for name in fields:
        place = decided.get(name)
        if place:
            return f"decided by {place['module']}:{place['function']}:{place['line']}"
    return "location unknown"


def _events(replayed: Replay, check: dict[str, Any]) -> list[str]:
    """The event names the check's trace rule counts: one step's trace, or every step's (scenario level)."""
    recorded = replayed.handshake.get("events") or []
    wanted = [check["event"]] if "event" in check else list(check["events"])
    for event in wanted:
        if event not in recorded:
            raise CannotReproduce(f"the subject no longer records {event}")
    answers = _answers(replayed) if check["scope"] == "scenario" else [_answer(replayed, check, stopped_too=True)]
    return [str(entry.get("event")) for answer in answers for entry in answer.get("trace") or []]


def _answer(replayed: Replay, check: dict[str, Any], stopped_too: bool = False) -> dict[str, Any]:
    """The step's `observed` answer, or (for a trace rule) the `unsupported` one of the step it stopped at."""
    number = int(check["step"])
    if number in replayed.observed:
        return replayed.observed[number]
    stopped = replayed.stopped
    if stopped is not None and stopped.get("number") == number:
        if stopped_too:
            return stopped
        raise CannotReproduce(f"the subject cannot perform step {number}: {stopped.get('reason')}")
    if stopped is not None:
        raise CannotReproduce(f"the subject stopped at step {stopped.get('number')}: {stopped.get('reason')}")
    raise CannotReproduce(f"step {number} was not answered")


def _answers(replayed: Replay) -> list[dict[str, Any]]:
    """Every step's answer in order, the one the subject stopped at last."""
    answers = [replayed.observed[n] for n in sorted(replayed.observed)]
    return answers + ([replayed.stopped] if replayed.stopped is not None else [])


def _declared(replayed: Replay, kernel: str) -> list[str] | None:
    for entry in replayed.handshake.get("kernels") or []:
        if isinstance(entry, dict) and entry.get("name") == kernel:
            return [str(f) for f in entry.get("families") or []]
    return None


def _shown(value: Any) -> str:
    return "(nothing)" if value is None else json.dumps(value)


def _summary(answer: dict[str, Any]) -> str:
    """An `observed` answer for people: its fields, the trace as event names, where each field was decided."""
    fields = {k: v for k, v in answer.items() if k not in ("type", "scenario", "number", "trace", "decided_by")}
    events = [str(entry.get("event")) for entry in answer.get("trace") or []]
    decided = {
        name: f"{place.get('module')}:{place.get('function')}:{place.get('line')}"
        for name, place in (answer.get("decided_by") or {}).items()
    }
    text = json.dumps(fields, sort_keys=True)
    if events:
        text += f"; trace: {', '.join(events)}"
    if decided:
        text += f"; decided by: {json.dumps(decided, sort_keys=True)}"
    return text


def judge(check: dict[str, Any], replayed: Replay) -> Verdict:
    """The check against the replayed answers, as devsim's judge compares it."""
    kind = check["kind"]
    if kind in ("trace", "order"):
        return _judge_trace(check, replayed)
    answer = _answer(replayed, check)
    refused = not answer.get("ok")
    error = answer.get("error") or {}
    undecided = answer.get("undecided") or {}
    for name in {check.get("key"), "ok"} & set(undecided):
        # devsim does not judge a field the subject says the project decides nothing about.
        raise CannotReproduce(f"the project decides no {name} on step {check['step']}: {undecided[name]}")
    if not _branch_applies(check, answer):
        return Verdict(False, "the conditional branch no longer applies", note="branch")
    if kind == "declared":
        return _judge_declared(check, replayed, answer)
    if kind == "not_refused_as":
        # rule per-target-arch: a refusal of this kind where the project's own arch rule admits the target
        refusal = str(check["refusal"])
        shown = f"false ({error.get('kind')}: {error.get('message')})" if refused else "true"
        return Verdict(refused and error.get("kind") == refusal, shown, _place(answer, ["error", "ok"]))
    key = check["key"]
    expected = check["expected"]
    if key == "ok":
        shown = "true" if not refused else f"false ({error.get('kind')}: {error.get('message')})"
        return Verdict(refused == bool(expected), shown, _place(answer, ["error", "ok"]))
    if key == "error":
        if not refused:
            return Verdict(False, "true (no error)", _place(answer, ["ok"]))
        return Verdict(error.get("kind") != expected, str(error.get("kind")), _place(answer, ["error", "ok"]))
    if key == "message":
        if not refused:
            return Verdict(False, "true (no error)", _place(answer, ["ok"]))
        message = str(error.get("message"))
        return Verdict(str(expected) not in message, message, _place(answer, ["error", "ok"]))
    if key not in answer:
        raise CannotReproduce(f"the subject no longer reports {key} on step {check['step']}")
    value = answer[key]
    place = _place(answer, [key])
    if key == "ordinal":
        if "family" not in answer:
            return Verdict(True, "(nothing)", place)
        return Verdict(value != expected, "none" if value is None else str(value), place)
    if key in ("ran_on", "lands_on"):
        shown = "(nothing)" if value is None else str(value)
        return Verdict(shown != expected, shown, place)
    if key == "covers":
        return Verdict(sorted(value or []) != sorted(expected), _shown(sorted(value or [])), place)
    return Verdict(value != expected, _shown(value), place)


def _judge_trace(check: dict[str, Any], replayed: Replay) -> Verdict:
    """A `never`/`once`/`count` or `order` rule over one step's trace or the whole scenario's."""
    if check["scope"] == "step":
        answers = [_answer(replayed, check, stopped_too=True)]
        if answers[0].get("type") == "observed" and not _branch_applies(check, answers[0]):
            return Verdict(False, "the conditional branch no longer applies", note="branch")
    else:
        answers = _answers(replayed)
    names = _events(replayed, check)
    if check["kind"] == "order":
        wanted = list(check["events"])
        position = 0
        for name in names:
            if position < len(wanted) and wanted[position] == name:
                position += 1
        return Verdict(position < len(wanted), ", ".join(names) or "(no events)")
    event = str(check["event"])
    seen = sum(1 for name in names if name == event)
    places = (_place(answer, [f"trace.{event}"]) for answer in answers)
    place = next((p for p in places if p != "location unknown"), "location unknown")
    return Verdict(seen != int(check["count"]), f"{event} x{seen}", place)


def _branch_applies(check: dict[str, Any], answer: dict[str, Any]) -> bool:
    branch = check.get("branch")
    refused = not answer.get("ok")
    return branch is None or (branch == "when_refused") == refused


def _judge_declared(check: dict[str, Any], replayed: Replay, answer: dict[str, Any]) -> Verdict:
    """Rule declared-families: the subject's own declarations (its handshake) against what the step did."""
    family = str(check["family"])
    key = check["key"]
    error = answer.get("error") or {}
    refused = not answer.get("ok")

    def declares(kernel: str) -> bool | None:
        families = _declared(replayed, kernel)
        return None if families is None else ("all" in families or family in families)

    if key == "selected":
        selected = answer.get("selected")
        if selected is None:
            # devsim's judge checks a selection against the declarations only when one was reported.
            shown = f"false ({error.get('kind')}: {error.get('message')})" if refused else "no kernel selected"
            return Verdict(False, shown, _place(answer, ["error", "ok"]))
        said = declares(str(selected))
        families = _declared(replayed, str(selected))
        return Verdict(said is False, f"{selected} (declares {', '.join(families or []) or 'no family'})",
                       _place(answer, ["selected"]))
    kernel = str(check["kernel"])
    said = declares(kernel)
    if said is None:
        raise CannotReproduce(f"the subject no longer declares {kernel}")
    if key == "ok":
        return Verdict(not refused and not said, "true" if not refused else f"false ({error.get('kind')})",
                       _place(answer, ["error", "ok"]))
    shown = f"{error.get('kind')}: {error.get('message')}" if refused else "true (no error)"
    return Verdict(refused and said and error.get("kind") == "unsupported-family", shown,
                   _place(answer, ["error", "ok"]))


# -------------------------------------------------------------------------------------------------- main


def _launch(repro: dict[str, Any], script: pathlib.Path, args: argparse.Namespace) -> Launch:
    subject = repro["subject"]
    source = pathlib.Path(args.subject_src) if args.subject_src else None
    if args.subject:
        return launch_from_file(pathlib.Path(args.subject), source)
    if "file" in subject:
        return launch_from_file(script.parent / subject["file"], source)
    env = {SOURCE_VARIABLE: str(source.resolve())} if source else {}
    return Launch(argv=list(subject["command"]), cwd=None, env=env)


def main(repro: dict[str, Any], script: str, argv: list[str] | None = None) -> int:
    """Runs one generated reproduction: 1 while the check fails, 0 once it holds, 2 if nothing could be judged."""
    parser = argparse.ArgumentParser(description=f"Reproduces devsim finding {repro.get('finding', '')}")
    parser.add_argument("--subject", help="another subject file to start (default: the one devsim ran)")
    parser.add_argument("--subject-src", help="judge the project's source tree at this folder (as devsim's flag)")
    args = parser.parse_args(argv)
    if repro.get("format") != FORMAT:
        print(f"repro: this kit reads format {FORMAT}, the script is format {repro.get('format')}", file=sys.stderr)
        return CANNOT
    check = repro["check"]
    print(f"finding: {repro['finding']}")
    print(f"scenario: {repro['scenario']} ({check.get('where', '')})")
    print(f"expected: {repro['expected']}")
    try:
        launch = _launch(repro, pathlib.Path(script).resolve(), args)
        replayed = replay(launch, repro["messages"])
        subject = replayed.handshake.get("subject") or {}
        print(f"subject: {subject.get('name')} {subject.get('version')}")
        for number in sorted(replayed.observed):
            print(f"step {number} answered: {_summary(replayed.observed[number])}")
        if replayed.stopped is not None:
            stopped = replayed.stopped
            events = ", ".join(str(e.get("event")) for e in stopped.get("trace") or []) or "no events"
            print(f"step {stopped.get('number')} answered unsupported: {stopped.get('reason')} (after {events})")
        verdict = judge(check, replayed)
    except CannotReproduce as error:
        print(f"could not reproduce: {error}")
        return CANNOT
    except (OSError, KeyError, ValueError, TypeError) as error:
        print(f"could not reproduce: {type(error).__name__}: {error}")
        return CANNOT
    print(f"observed: {verdict.observed} — {verdict.decided_by}")
    if verdict.note == "branch":
        print("holds: the step went the other way, so the failing conditional check no longer applies")
        return HOLDS
    if verdict.fails:
        print("FAILS: the finding is still there")
        return FAILS
    print("holds: the finding is fixed")
    return HOLDS
