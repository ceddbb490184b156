"""The run's outputs: a human table, a JSON results file (`document`) and JUnit (one testcase per case, trigger,
side and host)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from .observe import BEHAVES, ERROR, FAILED, MISBEHAVES, HostOutcome
from .runner import CaseResult

#: The results document's format version.
RESULTS_FORMAT = 1


def document(results: Sequence[CaseResult], sanitizer: bool) -> dict[str, Any]:
    """The JSON results: a summary and, per case, the verdict booleans, why it did not run, and per side,
    trigger and host the outcome, time and evidence."""
    cases = [_case(r) for r in results]
    scored = [c for c in cases if not c["control"] and c["not_run"] is None]
    summary = {
        "cases": len(cases), "scored": len(scored),
        "reproduced": sum(c["reproduced"] for c in scored), "caught": sum(c["caught"] for c in scored),
        "false_alarms": sum(c["false_alarm"] for c in scored),
        "controls": sum(c["control"] for c in cases),
        "not_run": sum(c["not_run"] is not None for c in cases),
        "errors": sum(bool(c["error"] or c["errors"]) for c in cases),
        "seconds": round(sum(r.seconds for r in results), 3),
    }
    return {"format": RESULTS_FORMAT, "sanitizer": sanitizer, "summary": summary, "cases": cases}


def _case(result: CaseResult) -> dict[str, Any]:
    case, verdict = result.case, result.verdict
    entry: dict[str, Any] = {
        "id": result.id, "file": str(result.path), "title": case.title if case else None,
        "repository": case.repository if case else None, "report": case.report if case else None,
        "rule": case.rule if case else None, "control": bool(case and case.control),
        "install": case.install.source if case else None,
        "reproduced": bool(verdict and verdict.reproduced), "caught": bool(verdict and verdict.caught),
        "false_alarm": bool(verdict and verdict.false_alarm), "not_run": result.not_run, "error": result.error,
        "by": verdict.by if verdict else [], "errors": verdict.errors if verdict else [],
        "fixed_flags": verdict.fixed_flags if verdict else [],
        "sanitizer_on_repro": verdict.sanitizer_on_repro if verdict else [],
        "seconds": result.seconds, "sides": {},
    }
    if case is None:
        return entry
    for side in case.sides:
        triggers = []
        for trigger in case.triggers:
            seconds = next((s.seconds for s in result.sessions if s.side == side.name and s.trigger == trigger.index),
                           None)
            hosts = {h: _host(o) for h in trigger.hosts if (o := result.results.get((side.name, trigger.index, h)))}
            if hosts:
                triggers.append({"trigger": trigger.label, "kind": trigger.kind, "line": trigger.line,
                                 "seconds": seconds, "hosts": hosts})
        entry["sides"][side.name] = {"commit": side.commit, "release": side.release, "triggers": triggers}
    return entry


def _host(outcome: HostOutcome) -> dict[str, Any]:
    return {"outcome": outcome.outcome, "error": outcome.error, "observation": outcome.observation,
            "failing": outcome.failing, "passed": len(outcome.passing), "skipped": outcome.skipped,
            "flags": outcome.flags,
            "trace": outcome.trace}


def write_json(results: Sequence[CaseResult], sanitizer: bool, path: Path) -> None:
    """Write the results document to `path`."""
    path.write_text(json.dumps(document(results, sanitizer), indent=2, default=str) + "\n", encoding="utf-8")


def table(results: Sequence[CaseResult]) -> str:
    """The human table: per case reproduced, caught, false alarm, by which trigger, time; then the summary."""
    rows = [("case", "reproduced", "caught", "false alarm", "time", "by / why")]
    for result in results:
        verdict, case = result.verdict, result.case
        if verdict is None:
            rows.append((result.id, "-", "-", "-", f"{result.seconds:.1f}s", f"not run: {result.not_run}"
                         + (f" ({result.error})" if result.error else "")))
            continue
        control = bool(case and case.control)
        by = "; ".join(verdict.by) or "-"
        if verdict.errors:
            by += f"; {len(verdict.errors)} error(s): " + "; ".join(verdict.errors)
        rows.append((result.id + (" (control)" if control else ""), _yes(verdict.reproduced),
                     ("flagged" if verdict.caught else "no") if control else _yes(verdict.caught),
                     "-" if control else _yes(verdict.false_alarm), f"{result.seconds:.1f}s", by))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5] for row in rows]
    summary = document(results, False)["summary"]
    lines.append(f"{summary['scored']} scored case(s): {summary['reproduced']} reproduced, {summary['caught']} "
                 f"caught, {summary['false_alarms']} false alarm(s); {summary['controls']} control(s); "
                 f"{summary['not_run']} not run; {summary['errors']} with errors")
    return "\n".join(lines)


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def write_junit(results: Sequence[CaseResult], path: Path) -> None:
    """JUnit: a suite per case, a testcase per trigger, side and host. A harness error is an error; a repro that
    does not misbehave on buggy or misbehaves on fixed, or a flag of the case's rule on fixed, is a failure; a
    case not run is skipped."""
    root = ElementTree.Element("testsuites", name="devsim real bugs")
    for result in results:
        suite = ElementTree.SubElement(root, "testsuite", name=result.id, time=f"{result.seconds:.3f}")
        case = result.case
        if case is None or result.verdict is None:
            testcase = ElementTree.SubElement(suite, "testcase", classname=result.id, name="case")
            if result.error:
                ElementTree.SubElement(testcase, "error", message=result.error)
            else:
                ElementTree.SubElement(testcase, "skipped", message=f"not run: {result.not_run}")
            continue
        for (side, index, host), outcome in sorted(result.results.items()):
            trigger = case.triggers[index]
            seconds = next((s.seconds for s in result.sessions if s.side == side and s.trigger == index), 0.0)
            testcase = ElementTree.SubElement(suite, "testcase", classname=result.id,
                                              name=f"{side}:{trigger.label}[{host}]", time=f"{seconds:.3f}")
            problem = _problem(case.control, side, trigger.kind, outcome, case.rule)
            if outcome.outcome == ERROR:
                ElementTree.SubElement(testcase, "error", message=str(outcome.error))
            elif problem:
                ElementTree.SubElement(testcase, "failure", message=problem)
            out = ElementTree.SubElement(testcase, "system-out")
            out.text = json.dumps(_host(outcome), indent=1, default=str)
    tree = ElementTree.ElementTree(root)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def _problem(control: bool, side: str, kind: str, outcome: HostOutcome, rule: str) -> str | None:
    if control:
        return None
    if kind == "repro" and side == "buggy" and outcome.outcome == BEHAVES:
        return "not reproduced: the repro behaves on the buggy side"
    if kind == "repro" and side == "fixed" and outcome.outcome == MISBEHAVES:
        return "false alarm: the repro misbehaves on the fixed side"
    flagged = [f for f in outcome.flags if f.get("rule") == rule and f.get("own")]
    if side == "fixed" and flagged:
        return f"false alarm: the sanitizer flags {rule} at {flagged[0].get('path')}:{flagged[0].get('line')}"
    if side == "fixed" and kind == "import" and outcome.outcome == FAILED:
        return f"an import fails on the fixed side: {', '.join(outcome.failing)}"
    return None
