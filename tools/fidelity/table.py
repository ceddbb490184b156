"""Merge a project's own-suite runs into a fidelity table: per test, its outcome without devsim (JUnit XML of a
plain `pytest` run), on each simulated profile (`pytest --devsim-host ... --devsim-report`), and on a real GPU
where a run there was made (JUnit XML). Writes a TSV with one row per test and prints the summary by profile.

    python3 tools/fidelity/table.py --plain plain.xml --simulated report.json [--gpu gpu.xml] --out table.tsv
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SUFFIX = re.compile(r"-?devsim:[A-Za-z0-9_.-]+\]$")


def module_of(parts: list[str], modules: set[str]) -> int:
    """How many leading parts of a JUnit classname name the test file: the longest prefix that is one of
    `modules` (the files the simulated run collected, `tests/kernels/test_x.py`), else the first two."""
    for end in range(len(parts), 0, -1):
        if "/".join(parts[:end]) + ".py" in modules:
            return end
    return min(2, len(parts))


def junit_outcomes(path: Path, modules: set[str] | None = None) -> dict[str, str]:
    """Each test case of a JUnit file by pytest node id (`tests/test_x.py::Class::test[param]`); `modules` are
    the known test files, so a file below a subfolder (`tests/kernels/quantization/test_x.py`) is found."""
    outcomes: dict[str, str] = {}
    for case in ET.parse(path).iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "xfailed" if "xfail" in (child.get("type") or "") else "skipped"
        parts = (case.get("classname") or "").split(".")
        end = module_of(parts, modules or set())
        module = "/".join(parts[:end]) + ".py" if len(parts) >= 2 else parts[0]
        outcomes["::".join([module, *parts[end:], case.get("name") or ""])] = outcome
    return outcomes


def simulated_outcomes(path: Path) -> tuple[list[str], dict[str, dict[str, tuple[str, str]]]]:
    """The profiles of a --devsim-report and each test's (outcome, reason) per profile, ids without the suffix."""
    document = json.loads(path.read_text())
    by_test: dict[str, dict[str, tuple[str, str]]] = {}
    for test in document["tests"]:
        base = SUFFIX.sub("]", test["nodeid"]).replace("[]", "")
        reason = " ".join(str(test.get("reason", "")).split())[:160]
        by_test.setdefault(base, {})[test["profile"]] = (test["outcome"], reason)
    return list(document["profiles"]), by_test


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plain", type=Path, required=True, help="JUnit XML of the run without devsim")
    parser.add_argument("--simulated", type=Path, required=True, help="the --devsim-report JSON")
    parser.add_argument("--gpu", type=Path, help="JUnit XML of the run on a real GPU, if one was made")
    parser.add_argument("--out", type=Path, required=True, help="the TSV to write")
    args = parser.parse_args(argv)
    profiles, simulated = simulated_outcomes(args.simulated)
    modules = {test.split("::")[0] for test in simulated}
    plain = junit_outcomes(args.plain, modules)
    gpu = junit_outcomes(args.gpu, modules) if args.gpu else {}
    tests = sorted(set(plain) | set(simulated) | set(gpu))
    rows = ["\t".join(["test", "no devsim", "real GPU", *profiles, "reason (first simulated non-pass)"])]
    summary: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for test in tests:
        cells = [plain.get(test, "-"), gpu.get(test, "not run" if not args.gpu else "-")]
        reason = ""
        for profile in profiles:
            outcome, why = simulated.get(test, {}).get(profile, ("-", ""))
            cells.append(outcome)
            summary[profile][outcome] += 1
            if outcome not in ("passed", "-") and not reason:
                reason = why
        summary["no devsim"][cells[0]] += 1
        rows.append("\t".join([test, *cells, reason]))
    args.out.write_text("\n".join(rows) + "\n")
    for name, counts in summary.items():
        shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "-")
        print(f"{name}: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
