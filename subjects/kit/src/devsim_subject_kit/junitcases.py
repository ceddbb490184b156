"""A JUnit test suite made from report entries (`stream`): the part of a session whose child died before it
could write its own JUnit file, so that the merged file still has every test."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree

# outcome -> (the child element, its type) as pytest's junitxml writes them; passed and xpassed have none
_ELEMENTS = {"failed": ("failure", None), "crashed": ("failure", "devsim.crashed"), "error": ("error", None),
             "skipped": ("skipped", "pytest.skip"), "xfailed": ("skipped", "pytest.xfail")}


def names(nodeid: str) -> tuple[str, str]:
    """(classname, name) of a node id, as pytest's junitxml makes them: `tests/test_x.py::C::t[p]` is
    (`tests.test_x.C`, `t[p]`)."""
    parts = nodeid.split("::")
    parts[0] = re.sub(r"\.py$", "", parts[0].replace("/", "."))
    return ".".join(parts[:-1]), parts[-1]


def junit_suite(entries: Sequence[dict[str, Any]], profile: str) -> ElementTree.Element:
    """A `testsuite` named `pytest[devsim:PROFILE]` with one `testcase` per entry."""
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    suite = ElementTree.Element("testsuite", name=f"pytest[devsim:{profile}]")
    for entry in entries:
        classname, name = names(str(entry["nodeid"]))
        case = ElementTree.SubElement(suite, "testcase", classname=classname, name=name,
                                      time=f"{float(entry.get('duration', 0.0)):.3f}")
        element = _ELEMENTS.get(str(entry["outcome"]))
        if element is None:
            continue
        tag, kind = element
        child = ElementTree.SubElement(case, tag, message=str(entry.get("reason", "")))
        if kind:
            child.set("type", kind)
        if entry.get("output"):
            child.text = "\n".join(str(line) for line in entry["output"])
        counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[tag]] += 1
    suite.set("tests", str(len(entries)))
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", f"{sum(float(e.get('duration', 0.0)) for e in entries):.3f}")
    return suite
