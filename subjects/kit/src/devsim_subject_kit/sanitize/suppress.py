"""Suppressions: known flags a project accepts, each with its reason, as sanitizers' suppression files have.

    [[suppress]]
    rule = "family-move-current"          # a rule id the sanitizer reports (required)
    file = "*/myproj/loader.py"           # glob on the flag's absolute file (default "*")
    function = "Loader.pin_to_first_gpu"  # glob on the function's qualified name (default "*")
    reason = "the loader pins shards to GPU 0 by design"   # required

A malformed file is a `SuppressionError` naming the file and the line of the entry at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from .flags import RULES

_KEYS = {"rule", "file", "function", "reason"}


class SuppressionError(ValueError):
    """A suppressions file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Suppression:
    """One `[[suppress]]` entry."""

    rule: str
    file: str
    function: str
    reason: str

    def covers(self, rule: str, file: str, function: str) -> bool:
        """Whether this entry suppresses a flag of `rule` at `file` in `function`."""
        return rule == self.rule and fnmatchcase(file, self.file) and fnmatchcase(function, self.function)


class Suppressions:
    """The entries of one file; `covers` is the table's suppressor."""

    def __init__(self, entries: list[Suppression]) -> None:
        self.entries = entries

    def covers(self, rule: str, file: str, function: str) -> bool:
        """Whether any entry suppresses this flag."""
        return any(e.covers(rule, file, function) for e in self.entries)


def load(path: str | Path) -> Suppressions:
    """Read a suppressions file; a bad one raises SuppressionError naming `path` and the line."""
    import tomllib  # Python 3.11 (the kit's other TOML reader, `repro`, imports it where it reads)

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuppressionError(f"read suppressions file {path}: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        line = found.group(1) if found else "?"
        raise SuppressionError(f"parse suppressions file {path}:{line}: {exc}") from exc
    lines = [n for n, t in enumerate(text.splitlines(), 1) if t.strip().replace(" ", "") == "[[suppress]]"]
    unknown_top = sorted(set(data) - {"suppress"})
    if unknown_top:
        raise SuppressionError(f"read suppressions file {path}: unknown key(s) {', '.join(unknown_top)}; "
                               "entries are [[suppress]] tables")
    raw = data.get("suppress", [])
    if not isinstance(raw, list):
        raise SuppressionError(f"read suppressions file {path}: `suppress` must be [[suppress]] tables")
    entries = []
    for number, entry in enumerate(raw):
        at = f"{path}:{lines[number] if number < len(lines) else '?'}"
        extra = sorted(set(entry) - _KEYS)
        if extra:
            raise SuppressionError(f"read suppression at {at}: unknown key(s) {', '.join(extra)} "
                                   f"(known: {', '.join(sorted(_KEYS))})")
        for key in ("rule", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise SuppressionError(f"read suppression at {at}: `{key}` is required (a non-empty string)")
        for key in ("file", "function"):
            if key in entry and not isinstance(entry[key], str):
                raise SuppressionError(f"read suppression at {at}: `{key}` must be a string (a glob)")
        if entry["rule"] not in RULES:
            raise SuppressionError(f"read suppression at {at}: unknown rule {entry['rule']!r}; the sanitizer's "
                                   f"rules are {', '.join(RULES)}")
        entries.append(Suppression(rule=entry["rule"], file=entry.get("file", "*"),
                                   function=entry.get("function", "*"), reason=entry["reason"]))
    return Suppressions(entries)
