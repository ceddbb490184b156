"""A real-bug case, typed: its sides, how a side installs, and its triggers (loaded and checked by `load`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The case file format this runner reads.
FORMAT = 1
#: The sides of a case, in the order they run.
SIDES = ("buggy", "fixed")


class CaseError(Exception):
    """A case file that cannot be run as written: the file, the line (0 when unknown) and what was expected."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Side:
    """One side of a case: the commit in the project's history and, where one exists, the index release."""

    name: str
    commit: str | None
    release: str | None


@dataclass(frozen=True)
class Install:
    """How a side's tree is made: from the package index or a git mirror, plus extras, stubs and environment."""

    source: str  # "index" or "git", resolved from `from`
    package: str | None
    paths: tuple[str, ...]
    pythonpath: tuple[str, ...]
    pip: tuple[str, ...]
    stubs: tuple[str, ...]
    env: dict[str, str]


@dataclass(frozen=True)
class Expectation:
    """What an observation must show: exactly one of `returns`, `raises` or `device`."""

    kind: str  # "returns" | "raises" | "device"
    value: Any


@dataclass(frozen=True)
class Trigger:
    """One trigger of a case: a repro script, the project's own tests, or imports; on its hosts."""

    index: int
    kind: str  # "repro" | "suite" | "import"
    hosts: tuple[str, ...]
    line: int
    script: str | None = None
    misbehaves: Expectation | None = None
    behaves: Expectation | None = None
    why: str | None = None
    tests: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """`repro#1`: the kind and the trigger's position in the case file (from 1)."""
        return f"{self.kind}#{self.index + 1}"


@dataclass(frozen=True)
class Case:
    """A case file, checked: everything the runner needs to install both sides and run each trigger."""

    path: Path
    id: str
    title: str
    repository: str
    report: str
    rule: str
    hosts: tuple[str, ...]
    control: bool
    sides: tuple[Side, ...]
    install: Install
    triggers: tuple[Trigger, ...]
    bugs_dir: Path
    notes: str | None = None
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def mirror_name(self) -> str:
        """`owner+name`: the repository's folder under `--mirrors`, as the session tool `fetch` lays it out."""
        return self.repository.replace("/", "+")
