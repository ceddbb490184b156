"""Every Python module of the subjects (the kit, the adapters, their tests and tools) is at most 500 lines: one
longer is split by job, as devsim's own sources are (tests/integration/layering.rs)."""

from __future__ import annotations

from pathlib import Path

SUBJECTS = Path(__file__).resolve().parents[2]
LIMIT = 500


def test_no_python_module_of_the_subjects_is_over_500_lines() -> None:
    modules = [p for p in SUBJECTS.rglob("*.py") if not any(part.startswith(".") for part in p.parts)]
    assert len(modules) > 50, f"the modules were found: {len(modules)}"
    long = [f"{p.relative_to(SUBJECTS)} ({n} lines)" for p in modules if (n := len(p.read_text().splitlines())) > LIMIT]
    assert not long, f"split these by job: {long}"
