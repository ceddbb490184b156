"""A case's verdict from its triggers' outcomes (BUGS-SPEC): reproduced, caught, false alarm; controls reported.

- reproduced: a repro misbehaves on buggy and behaves on fixed, on the same host;
- caught (no code written for the case): on buggy and not on fixed, on the same host, a suite test fails
  (same node id passes on fixed), an import fails, or the sanitizer flags the case's rule in the project's code
  during a suite or import trigger; a flag during a repro is evidence only (`sanitizer_on_repro`);
- false alarm: on fixed, a repro misbehaves, the case's rule is flagged in the project's code (unless a human
  judged that site `real` in `bugs/verdicts.toml`: a violation the fix left), or a flag judged `false-alarm`;
  every flag on fixed is listed with its verdict (or `unjudged`);
- a control ([buggy] only) is reported as reproduced / flagged on today's code, never scored.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .case import Case
from .observe import BEHAVES, ERROR, FAILED, MISBEHAVES, PASSED, HostOutcome

#: (side, trigger index, host) -> that trigger's outcome there
Outcomes = dict[tuple[str, int, str], HostOutcome]


@dataclass(frozen=True)
class FlagVerdict:
    """A human's verdict on a sanitizer flag site (`bugs/verdicts.toml`)."""

    case: str | None
    rule: str
    file: str
    function: str | None
    verdict: str  # "real" | "false-alarm"
    reason: str


@dataclass
class Verdict:
    """What a case came to."""

    reproduced: bool = False
    caught: bool = False
    false_alarm: bool = False
    #: which trigger (and host, and signal) gave each verdict, e.g. `reproduced: repro#1 on r9700x2`
    by: list[str] = field(default_factory=list)
    #: every sanitizer flag on the fixed side, with its verdict
    fixed_flags: list[dict[str, Any]] = field(default_factory=list)
    #: sanitizer flags of the case's rule in the project's code during a repro on buggy (evidence, not caught)
    sanitizer_on_repro: list[dict[str, Any]] = field(default_factory=list)
    #: the triggers that were errors, with why
    errors: list[str] = field(default_factory=list)


def load_verdicts(path: Path) -> list[FlagVerdict]:
    """The human verdicts of `bugs/verdicts.toml` (none when the file is absent); a malformed one raises
    ValueError naming the file and entry."""
    if not path.is_file():
        return []
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    found = []
    for number, entry in enumerate(data.get("flag", []), 1):
        try:
            verdict = str(entry["verdict"])
            if verdict not in ("real", "false-alarm"):
                raise ValueError(f"verdict {verdict!r}: expected real or false-alarm")
            found.append(FlagVerdict(case=entry.get("case"), rule=str(entry["rule"]), file=str(entry["file"]),
                                     function=entry.get("function"), verdict=verdict, reason=str(entry["reason"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: [[flag]] number {number}: {exc} (expected rule, file, verdict, reason)") from exc
    return found


def judge(case: Case, results: Outcomes, verdicts: list[FlagVerdict]) -> Verdict:
    """The case's verdict from every trigger's outcome on each side and host."""
    verdict = Verdict()
    verdict.errors = [f"{side} {case.triggers[i].label} on {host}: {o.error}" for (side, i, host), o in
                      sorted(results.items()) if o.outcome == ERROR]
    for trigger in case.triggers:
        for host in trigger.hosts:
            buggy, fixed = results.get(("buggy", trigger.index, host)), results.get(("fixed", trigger.index, host))
            if buggy is None:
                continue
            where = f"{trigger.label} on {host}"
            if trigger.kind == "repro":
                verdict.sanitizer_on_repro += [f for f in buggy.flags if _case_rule(case, f)]
                if buggy.outcome == MISBEHAVES and (case.control or (fixed is not None and fixed.outcome == BEHAVES)):
                    verdict.reproduced = True
                    verdict.by.append(f"reproduced: {where}")
            else:
                _caught(case, verdict, where, buggy, fixed)
            if fixed is not None:
                _false_alarm(case, verdict, trigger.kind, where, fixed, verdicts)
    return verdict


def _caught(case: Case, verdict: Verdict, where: str, buggy: HostOutcome, fixed: HostOutcome | None) -> None:
    if buggy.outcome == ERROR or (not case.control and (fixed is None or fixed.outcome == ERROR)):
        return
    flagged = [f for f in buggy.flags if _case_rule(case, f)]
    fixed_flagged = [] if fixed is None else [f for f in fixed.flags if _case_rule(case, f)]
    if case.control:
        if buggy.outcome == FAILED:
            verdict.caught = True
            verdict.by.append(f"flagged: {where} fails ({', '.join(buggy.failing[:5])})")
        if flagged:
            verdict.caught = True
            verdict.by.append(f"flagged: {where} sanitizer {_site(flagged[0])}")
        return
    assert fixed is not None
    newly = [t for t in buggy.failing if _passes(t, fixed)]
    if buggy.outcome == FAILED and newly:
        verdict.caught = True
        verdict.by.append(f"caught: {where} fails on buggy, passes on fixed ({', '.join(newly[:5])})")
    if flagged and not fixed_flagged:
        verdict.caught = True
        verdict.by.append(f"caught: {where} sanitizer {_site(flagged[0])}")


def _passes(failing: str, fixed: HostOutcome) -> bool:
    if failing.startswith("collect:"):
        path = failing.removeprefix("collect:")
        return fixed.outcome == PASSED or any(p.split("::", 1)[0] == path for p in fixed.passing)
    return failing in fixed.passing


def _false_alarm(case: Case, verdict: Verdict, kind: str, where: str, fixed: HostOutcome,
                 verdicts: list[FlagVerdict]) -> None:
    if kind == "repro" and fixed.outcome == MISBEHAVES:
        verdict.false_alarm = True
        verdict.by.append(f"false alarm: {where} misbehaves on fixed")
    for flag in fixed.flags:
        if not flag.get("own"):
            continue  # not the project's own code (a dependency, a stub, the suite's own test files)
        judged = _judged(case, flag, verdicts)
        entry = {**flag, "trigger": where, "verdict": judged.verdict if judged else "unjudged",
                 "reason": judged.reason if judged else None}
        verdict.fixed_flags.append(entry)
        # the case's rule flagged on the fix is a false alarm unless a human judged the site a real violation
        # the fix left (then it is listed, a true finding); any flag judged `false-alarm` is one
        real = judged is not None and judged.verdict == "real"
        if (_case_rule(case, flag) and not real) or (judged is not None and judged.verdict == "false-alarm"):
            verdict.false_alarm = True
            verdict.by.append(f"false alarm: {where} sanitizer {_site(flag)} on fixed")


def _judged(case: Case, flag: dict[str, Any], verdicts: list[FlagVerdict]) -> FlagVerdict | None:
    for judged in verdicts:
        if judged.case not in (None, case.id) or judged.rule != flag.get("rule") or judged.file != flag.get("path"):
            continue
        if judged.function is None or judged.function == flag.get("function"):
            return judged
    return None


def _case_rule(case: Case, flag: dict[str, Any]) -> bool:
    return flag.get("rule") == case.rule and bool(flag.get("own"))


def _site(flag: dict[str, Any]) -> str:
    return f"{flag.get('rule')} at {flag.get('path')}:{flag.get('line')} in {flag.get('function')}"
