"""The real-bug results page is generated from the results file, and `--check` says when they disagree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from devsim_subject_kit.bugs.cli import main
from devsim_subject_kit.bugs.markdown import BEGIN, render

REPO = Path(__file__).resolve().parents[3]

DOCUMENT = {
    "format": 1, "sanitizer": True,
    "summary": {"cases": 2, "scored": 1, "reproduced": 1, "caught": 0, "false_alarms": 0, "controls": 1,
                "not_run": 0, "errors": 0, "seconds": 12.5},
    "cases": [
        {"id": "fake-bf16", "title": "bf16 on gfx1030", "repository": "o/fake", "report": "https://x/1",
         "rule": "no-cross-vendor-probe", "control": False, "install": "git", "reproduced": True, "caught": False,
         "false_alarm": False, "not_run": None, "error": None, "by": ["repro#1 on rdna2"], "errors": [],
         "fixed_flags": [], "sanitizer_on_repro": [], "seconds": 10.0,
         "sides": {"buggy": {"commit": "a" * 40, "release": None, "triggers": [
             {"trigger": "repro#1", "kind": "repro", "line": 9, "seconds": 4.0, "hosts": {"rdna2": {
                 "outcome": "misbehaves", "error": None, "observation": {"returned_repr": "True"},
                 "failing": [], "passed": 0, "skipped": 0, "flags": [], "trace": []}}}]}}},
        {"id": "fake-control", "title": "t", "repository": "o/fake", "report": "r", "rule": "per-target-arch",
         "control": True, "install": "index", "reproduced": True, "caught": False, "false_alarm": False,
         "not_run": None, "error": None, "by": [], "errors": [], "fixed_flags": [], "sanitizer_on_repro": [],
         "seconds": 2.5, "sides": {}},
    ],
}


def test_the_page_states_each_verdict_and_the_evidence() -> None:
    text = render(DOCUMENT)
    assert "**1 scored cases: 1 reproduced, 0 caught" in text
    assert "| `fake-bf16` | no-cross-vendor-probe | git | yes | no | no | no | repro#1 on rdna2 | 10 s |" in text
    assert "| `fake-control` (control) | per-target-arch | index | yes | not flagged | no | - |" in text
    assert "- buggy (aaaaaaaaaa) `repro#1` on `rdna2`: **misbehaves**: returned `True` (4 s)" in text


def test_check_fails_on_a_stale_page_and_regenerating_fixes_it(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(DOCUMENT))
    page = tmp_path / "page.md"
    page.write_text(f"# Head written by hand\n\n{BEGIN}\nstale figures\n")
    assert main(["markdown", str(results), "--page", str(page), "--check"]) == 1
    assert main(["markdown", str(results), "--page", str(page)]) == 0
    assert page.read_text().startswith("# Head written by hand\n\n" + BEGIN)
    assert main(["markdown", str(results), "--page", str(page), "--check"]) == 0


@pytest.mark.skipif(not (REPO / "docs" / "real-bugs.json").is_file(), reason="no committed results yet")
def test_the_committed_page_is_the_one_the_committed_results_give() -> None:
    assert main(["markdown", str(REPO / "docs" / "real-bugs.json"), "--page", str(REPO / "docs" / "real-bugs.md"),
                 "--check"]) == 0


def test_against_names_each_case_whose_verdict_moved_from_the_committed_results(tmp_path: Path) -> None:
    from devsim_subject_kit.bugs.cli import _drift
    from devsim_subject_kit.bugs.runner import CaseResult
    from devsim_subject_kit.bugs.verdict import Verdict

    committed = tmp_path / "results.json"
    committed.write_text(json.dumps(DOCUMENT))
    same = CaseResult(path=Path("bugs/fake-bf16.toml"), verdict=Verdict(reproduced=True))
    moved = CaseResult(path=Path("bugs/fake-control.toml"), verdict=Verdict(reproduced=False))
    new = CaseResult(path=Path("bugs/fake-new.toml"), verdict=Verdict(reproduced=True))
    unrun = CaseResult(path=Path("bugs/fake-gone.toml"), not_run="--index-only: installs from git")
    assert _drift([same, unrun], committed) == []
    assert _drift([same, moved, new], committed) == [
        f"fake-control: differs from {committed}: reproduced True -> False",
        f"fake-new: not in {committed}; run the whole benchmark and commit its results",
    ]
