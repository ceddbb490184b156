"""The README's live counts are generated from the committed live record (tools/findings.py), never typed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent.parent
TOOL = HERE / "tools" / "findings.py"


def findings() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gptqmodel_findings", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), "--check", *args], capture_output=True, text=True, check=False)


def test_the_readme_and_findings_md_are_what_the_committed_record_gives() -> None:
    ran = check()
    assert ran.returncode == 0, ran.stderr


def test_another_record_gives_other_counts_and_the_check_fails(tmp_path: Path) -> None:
    committed = (HERE / "live-record.toml").read_text()
    other = tmp_path / "live-record.toml"
    other.write_text(committed.replace('date = "2026-12-06"', 'date = "2026-12-07"'))
    ran = check("--live-record", str(other))
    assert ran.returncode == 1, ran.stderr
    assert "README.md differs" in ran.stderr and "findings.md differs" in ran.stderr


def test_a_record_with_counts_gives_them_all_and_a_fresh_one_its_confirmed_findings() -> None:
    tool = findings()
    record = {
        "format": 2,
        "subject": "gptqmodel",
        "version": "7.7.0",
        "devices": ["NVIDIA H100 80GB HBM3"],
        "date": "2026-12-07",
        "counts": {"passed": 24, "failed": 1, "not_applicable": 96, "skipped": 901, "set_aside": 1},
        "scenarios": {},
    }
    fresh = tool.live_counts(record, "`live-record.toml`", [], 12, 1)
    assert "24 passed, 1 failed, 96 not applicable, 901 skipped, 1 set aside." in fresh
    assert "marks 1 of its 12 findings *confirmed*" in fresh
    stale = tool.live_counts(record, "`live-record.toml`", ["the corpus changed since it was taken"], 12, 0)
    assert "**stale** and confirms nothing (the corpus changed since it was taken)" in stale
    assert stale.startswith(tool.BEGIN) and stale.endswith(tool.END)
