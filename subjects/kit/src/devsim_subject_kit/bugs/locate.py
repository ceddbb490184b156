"""The line of a key in a TOML text (tomllib gives values, never positions): for errors that name the line."""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')\s*(\.\s*[A-Za-z0-9_\-]+\s*)*=")


class Lines:
    """Where each table and key of a TOML text starts: `find(("trigger", 1), "script")` is the line of the second
    `[[trigger]]`'s `script` key (1-based), falling back to its table's header line, then to line 1."""

    def __init__(self, text: str) -> None:
        self._tables: dict[tuple[str | int, ...], int] = {(): 1}
        self._keys: dict[tuple[tuple[str | int, ...], str], int] = {}
        counts: dict[str, int] = {}
        table: tuple[str | int, ...] = ()
        for number, line in enumerate(text.splitlines(), 1):
            header = _HEADER.match(line)
            if header and not _KEY.match(line):
                name = header.group(2).strip().strip("\"'")
                if header.group(1) == "[[":
                    counts[name] = counts.get(name, -1) + 1
                    table = (name, counts[name])
                else:
                    table = tuple(name.split("."))
                self._tables.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key:
                self._keys.setdefault((table, key.group(1).strip("\"'")), number)

    def find(self, table: tuple[str | int, ...] = (), key: str | None = None) -> int:
        """The line of `key` in `table` (or of the table's header when `key` is None or absent)."""
        if key is not None and (table, key) in self._keys:
            return self._keys[(table, key)]
        for sub in ((*table, key), (*table, key, 0)) if key is not None else ():
            if sub in self._tables:  # the key is a table of its own: `[fixd]`, `[[triggers]]`
                return self._tables[sub]
        if table in self._tables:
            return self._tables[table]
        if len(table) > 1 and table[:-1] in self._tables:
            return self._tables[table[:-1]]
        if table and ((), str(table[0])) in self._keys:
            return self._keys[((), str(table[0]))]  # an inline table: `install = { ... }`
        return 1
