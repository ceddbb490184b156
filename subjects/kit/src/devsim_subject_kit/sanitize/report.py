"""The sanitizer's section of the terminal summary, after every profile's session."""

from __future__ import annotations

from typing import Any

#: Tests a flag's line lists at most.
TESTS_SHOWN = 3


def section(flags: list[dict[str, Any]], mode: str) -> list[str]:
    """The lines of the summary section for the merged flags of every profile."""
    if not flags:
        return [f"devsim sanitizer ({mode}): no flag"]
    lines = [f"devsim sanitizer ({mode}): {len(flags)} flag(s), by site"]
    for flag in flags:
        lines.append(f"  {flag['rule']} at {flag['file']}:{flag['line']} in {flag['function']} "
                     f"[{flag['profile']}] x{flag['count']}")
        lines.append(f"    {flag['message']}")
        tests = list(flag.get("tests", []))
        if tests:
            more = f" and {len(tests) - TESTS_SHOWN} more" if len(tests) > TESTS_SHOWN else ""
            lines.append(f"    tests: {', '.join(tests[:TESTS_SHOWN])}{more}")
    return lines
