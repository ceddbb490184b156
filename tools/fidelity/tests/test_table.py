"""tools/fidelity/table.py: JUnit test cases map to the simulated run's node ids, nested test folders included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import table

JUNIT = """<testsuites><testsuite>
<testcase classname="tests.kernels.quantization.test_sel" name="test_a" />
<testcase classname="tests.kernels.quantization.test_sel.TestGroup" name="test_b[x]"><failure /></testcase>
<testcase classname="tests.test_top" name="test_c"><skipped type="pytest.skip" /></testcase>
</testsuite></testsuites>"""


def test_a_nested_test_file_keeps_its_folders(tmp_path: Path) -> None:
    (tmp_path / "plain.xml").write_text(JUNIT)
    modules = {"tests/kernels/quantization/test_sel.py", "tests/test_top.py"}
    assert table.junit_outcomes(tmp_path / "plain.xml", modules) == {
        "tests/kernels/quantization/test_sel.py::test_a": "passed",
        "tests/kernels/quantization/test_sel.py::TestGroup::test_b[x]": "failed",
        "tests/test_top.py::test_c": "skipped",
    }


def test_the_table_lines_up_plain_and_simulated_rows(tmp_path: Path) -> None:
    (tmp_path / "plain.xml").write_text(JUNIT)
    report = {"profiles": ["h200"], "tests": [
        {"nodeid": "tests/kernels/quantization/test_sel.py::test_a[devsim:h200]", "profile": "h200",
         "outcome": "passed"},
        {"nodeid": "tests/kernels/quantization/test_sel.py::TestGroup::test_b[x-devsim:h200]", "profile": "h200",
         "outcome": "skipped", "reason": "needs a real GPU"},
    ]}
    (tmp_path / "sim.json").write_text(json.dumps(report))
    out = tmp_path / "t.tsv"
    assert table.main(["--plain", str(tmp_path / "plain.xml"), "--simulated", str(tmp_path / "sim.json"),
                       "--out", str(out)]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()[1:]]
    assert rows == [
        ["tests/kernels/quantization/test_sel.py::TestGroup::test_b[x]", "failed", "not run", "skipped",
         "needs a real GPU"],
        ["tests/kernels/quantization/test_sel.py::test_a", "passed", "not run", "passed", ""],
        ["tests/test_top.py::test_c", "skipped", "not run", "-", ""],
    ]
