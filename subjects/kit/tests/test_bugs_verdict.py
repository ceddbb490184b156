"""Verdicts of the real-bug runner (BUGS-SPEC) from triggers' outcomes, one row per situation: what counts as
reproduced, caught (suite, import, sanitizer) and false alarm, for a scored case and a control."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from devsim_subject_kit.bugs.case import Case, Expectation, Install, Side, Trigger
from devsim_subject_kit.bugs.observe import HostOutcome, outcomes
from devsim_subject_kit.bugs.trigger import Session
from devsim_subject_kit.bugs.verdict import FlagVerdict, Outcomes, judge, load_verdicts

RULE = "no-cross-vendor-probe"
TRIGGERS = (
    Trigger(0, "repro", ("h",), 1, script="repro/x.py", misbehaves=Expectation("returns", True)),
    Trigger(1, "suite", ("h",), 2, tests=("tests/test_x.py",)),
    Trigger(2, "import", ("h",), 3, modules=("pkg",)),
)


def case(control: bool = False) -> Case:
    sides = (Side("buggy", "a" * 40, None),) + (() if control else (Side("fixed", "b" * 40, None),))
    return Case(path=Path("bugs/x.toml"), id="x", title="t", repository="o/n", report="r", rule=RULE, hosts=("h",),
                control=control, sides=sides, install=Install("git", None, (), (".",), (), (), {}), triggers=TRIGGERS,
                bugs_dir=Path("bugs"))


def flag(rule: str = RULE, own: bool = True, path: str = "pkg/x.py") -> dict[str, Any]:
    return {"rule": rule, "profile": "h", "file": f"/cache/tree/{path}", "line": 5, "function": "pick", "path": path,
            "own": own}


def o(outcome: str, failing: tuple[str, ...] = (), passing: tuple[str, ...] = (),
      flags: tuple[dict[str, Any], ...] = ()) -> HostOutcome:
    return HostOutcome(outcome, "h", error="boom" if outcome == "error" else None, failing=list(failing),
                       passing=list(passing), flags=list(flags))


T = "tests/test_x.py::test_a[devsim:h]"
JUDGED_FALSE = FlagVerdict(None, "vendor-from-build", "pkg/x.py", "pick", "false-alarm", "the string is a constant")
JUDGED_REAL = FlagVerdict("x", "vendor-from-build", "pkg/x.py", None, "real", "a second probe the fix left")

# (situation, {(side, trigger index): outcome}, human verdicts, (reproduced, caught, false alarm), verdict.by)
ROWS: list[tuple[str, dict[tuple[str, int], HostOutcome], list[FlagVerdict], tuple[bool, bool, bool], list[str]]] = [
    ("repro misbehaves on buggy only", {("buggy", 0): o("misbehaves"), ("fixed", 0): o("behaves")}, [],
     (True, False, False), ["reproduced: repro#1 on h"]),
    ("repro misbehaves on both", {("buggy", 0): o("misbehaves"), ("fixed", 0): o("misbehaves")}, [],
     (False, False, True), ["false alarm: repro#1 on h misbehaves on fixed"]),
    ("repro errs on fixed", {("buggy", 0): o("misbehaves"), ("fixed", 0): o("error")}, [], (False, False, False), []),
    ("a suite test fails on buggy, passes on fixed", {("buggy", 1): o("failed", (T,)), ("fixed", 1): o("passed", (), (T,))},
     [], (False, True, False), [f"caught: suite#2 on h fails on buggy, passes on fixed ({T})"]),
    ("a suite test fails on both", {("buggy", 1): o("failed", (T,)), ("fixed", 1): o("failed", (T,))}, [],
     (False, False, False), []),
    ("a suite file fails to collect on buggy", {("buggy", 1): o("failed", ("collect:tests/test_x.py",)),
                                                ("fixed", 1): o("passed", (), (T,))},
     [], (False, True, False), ["caught: suite#2 on h fails on buggy, passes on fixed (collect:tests/test_x.py)"]),
    ("a suite errs on buggy", {("buggy", 1): o("error"), ("fixed", 1): o("passed", (), (T,))}, [],
     (False, False, False), []),
    ("an import fails on buggy only", {("buggy", 2): o("failed", ("m[pkg]",)), ("fixed", 2): o("passed", (), ("m[pkg]",))},
     [], (False, True, False), ["caught: import#3 on h fails on buggy, passes on fixed (m[pkg])"]),
    ("the sanitizer flags the rule in a suite on buggy only", {("buggy", 1): o("passed", flags=(flag(),)),
                                                               ("fixed", 1): o("passed")},
     [], (False, True, False), [f"caught: suite#2 on h sanitizer {RULE} at pkg/x.py:5 in pick"]),
    ("the sanitizer flags the rule during a repro only", {("buggy", 0): o("behaves", flags=(flag(),)),
                                                          ("fixed", 0): o("behaves")},
     [], (False, False, False), []),
    ("a flag of another rule on buggy is no catch", {("buggy", 2): o("passed", flags=(flag("vendor-from-build"),)),
                                                     ("fixed", 2): o("passed")}, [], (False, False, False), []),
    ("the rule flagged on fixed", {("buggy", 2): o("passed", flags=(flag(),)), ("fixed", 2): o("passed", flags=(flag(),))},
     [], (False, False, True), [f"false alarm: import#3 on h sanitizer {RULE} at pkg/x.py:5 in pick on fixed"]),
    ("a flag on fixed judged a false alarm", {("buggy", 2): o("passed"),
                                              ("fixed", 2): o("passed", flags=(flag("vendor-from-build"),))},
     [JUDGED_FALSE], (False, False, True),
     ["false alarm: import#3 on h sanitizer vendor-from-build at pkg/x.py:5 in pick on fixed"]),
    ("a flag on fixed judged real", {("buggy", 2): o("passed"),
                                     ("fixed", 2): o("passed", flags=(flag("vendor-from-build"),))},
     [JUDGED_REAL], (False, False, False), []),
    ("the rule flagged on fixed at a site judged real", {("buggy", 2): o("passed"), ("fixed", 2): o("passed", flags=(flag(),))},
     [FlagVerdict("x", RULE, "pkg/x.py", "pick", "real", "the fix left a second probe")], (False, False, False), []),
    ("a flag in a dependency on fixed", {("buggy", 2): o("passed"), ("fixed", 2): o("passed", flags=(flag(own=False),))},
     [], (False, False, False), []),
]


@pytest.mark.parametrize(("given", "verdicts", "expected", "by"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_case_is_judged_as_the_spec_says(given: dict[tuple[str, int], HostOutcome], verdicts: list[FlagVerdict],
                                           expected: tuple[bool, bool, bool], by: list[str]) -> None:
    results: Outcomes = {(side, index, "h"): outcome for (side, index), outcome in given.items()}
    verdict = judge(case(), results, verdicts)
    assert (verdict.reproduced, verdict.caught, verdict.false_alarm) == expected
    assert verdict.by == by
    assert [e.split(":")[0] for e in verdict.errors] == [
        f"{side} {TRIGGERS[i].label} on h" for (side, i), out in sorted(given.items()) if out.outcome == "error"]


def test_every_flag_on_fixed_is_listed_with_its_verdict() -> None:
    fixed = o("passed", flags=(flag("vendor-from-build"), flag("target-context"), flag(own=False)))
    verdict = judge(case(), {("buggy", 2, "h"): o("passed"), ("fixed", 2, "h"): fixed}, [JUDGED_REAL])
    assert [(f["rule"], f["verdict"], f["reason"]) for f in verdict.fixed_flags] == [
        ("vendor-from-build", "real", "a second probe the fix left"), ("target-context", "unjudged", None)]


def test_a_repro_flag_is_evidence_not_a_catch() -> None:
    verdict = judge(case(), {("buggy", 0, "h"): o("misbehaves", flags=(flag(),)), ("fixed", 0, "h"): o("behaves")}, [])
    assert verdict.caught is False and [f["path"] for f in verdict.sanitizer_on_repro] == ["pkg/x.py"]


def test_a_control_is_reported_on_its_buggy_side_only() -> None:
    results: Outcomes = {("buggy", 0, "h"): o("misbehaves"), ("buggy", 1, "h"): o("failed", (T,)),
                         ("buggy", 2, "h"): o("passed", flags=(flag(),))}
    verdict = judge(case(control=True), results, [])
    assert (verdict.reproduced, verdict.caught, verdict.false_alarm) == (True, True, False)
    assert verdict.by == ["reproduced: repro#1 on h", f"flagged: suite#2 on h fails ({T})",
                          f"flagged: import#3 on h sanitizer {RULE} at pkg/x.py:5 in pick"]


def test_a_malformed_human_verdict_names_the_file_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.toml"
    path.write_text('[[flag]]\nrule = "vendor-from-build"\nfile = "a.py"\nverdict = "real"\nreason = "x"\n'
                    '[[flag]]\nrule = "vendor-from-build"\nfile = "a.py"\nverdict = "maybe"\nreason = "x"\n')
    with pytest.raises(ValueError, match=r"verdicts.toml: \[\[flag\]\] number 2: verdict 'maybe': expected real"):
        load_verdicts(path)


def test_a_session_report_gives_each_host_its_tests_and_the_projects_own_flags(tmp_path: Path) -> None:
    """From a `--devsim-report` with a `sanitizer` key: a host's tests and flags; a flag in the tree is the
    project's own, one in the suite's own test file or a conftest is not, one outside the tree is not."""
    tree = tmp_path / "tree"

    def site(path: str, profile: str = "h") -> dict[str, Any]:
        return {"rule": RULE, "profile": profile, "file": str(tree / path), "line": 1, "function": "f"}

    report = {"exit_codes": {"h": 1, "g": 0}, "tests": [
        {"nodeid": T, "profile": "h", "outcome": "failed"}, {"nodeid": "tests/test_x.py::b", "profile": "h",
                                                            "outcome": "passed"},
        {"nodeid": T, "profile": "g", "outcome": "passed"}],
        "sanitizer": [site("pkg/x.py"), site("tests/test_x.py"), site("tests/conftest.py"), site("pkg/x.py", "g"),
                      {**site("x"), "file": str(tmp_path / "elsewhere.py")}]}
    trigger = Trigger(1, "suite", ("h", "g"), 2, tests=("tests/test_x.py",))
    session = Session(code=1, seconds=1.0, report=report, junit=tmp_path / "none.xml")
    h, g = outcomes(trigger, session, (tree,))
    assert (h.outcome, h.failing, h.passing) == ("failed", [T], ["tests/test_x.py::b"])
    assert [(f["path"], f["own"]) for f in h.flags] == [
        ("pkg/x.py", True), ("tests/test_x.py", False), ("tests/conftest.py", False), (None, False)]
    assert (g.outcome, g.passing, [f["path"] for f in g.flags]) == ("passed", [T], ["pkg/x.py"])


def test_a_session_that_timed_out_or_wrote_no_report_is_an_error(tmp_path: Path) -> None:
    trigger = TRIGGERS[2]
    hung = Session(code=None, seconds=5.0, report=None, junit=tmp_path / "j.xml", tail=["..."], timed_out=True)
    broken = Session(code=4, seconds=1.0, report=None, junit=tmp_path / "j.xml", tail=["ERROR: usage"])
    empty = Session(code=5, seconds=1.0, report={"exit_codes": {"h": 5}, "tests": []}, junit=tmp_path / "j.xml")
    [first], [second], [third] = (outcomes(trigger, s, (tmp_path,)) for s in (hung, broken, empty))
    assert (first.outcome, str(first.error).split(";")[0]) == ("error", "timed out after 5 s (the process group was killed)")
    assert second.outcome == "error" and str(second.error).startswith("the session wrote no report (exit 4)")
    assert third.outcome == "error" and str(third.error).startswith("the trigger ran no test")


def test_a_suite_whose_every_test_skipped_is_skipped_not_passed(tmp_path: Path) -> None:
    report = {"exit_codes": {"h": 0}, "tests": [{"nodeid": T, "profile": "h", "outcome": "skipped"}]}
    [outcome] = outcomes(TRIGGERS[1], Session(code=0, seconds=1.0, report=report, junit=tmp_path / "j.xml"),
                         (tmp_path,))
    assert (outcome.outcome, outcome.skipped, outcome.passing) == ("skipped", 1, [])
