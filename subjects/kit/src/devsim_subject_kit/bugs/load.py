"""Reading a case file and checking it: every error names the file, the line and what was expected.

Case files are untrusted input: paths are relative and stay inside the project's tree or `bugs/` (no absolute
path, no `..`, no symlink out), the environment never names PATH, LD_* or PYTHON*, and commits are checked
against the local mirror when there is one.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .case import FORMAT, SIDES, Case, CaseError, Expectation, Install, Side, Trigger
from .locate import Lines

_TOP = {"format", "id", "title", "repository", "report", "rule", "hosts", "control", "notes", "buggy", "fixed",
        "install", "trigger"}
_SIDE = {"commit", "release"}
_INSTALL = {"from", "package", "paths", "pythonpath", "pip", "stubs", "env"}
_TRIGGER = {
    "repro": {"kind", "script", "hosts", "misbehaves", "behaves", "why"},
    "suite": {"kind", "tests", "args", "hosts", "why"},
    "import": {"kind", "modules", "hosts", "why"},
}
_EXPECT = ("returns", "raises", "device")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*(\[[A-Za-z0-9_,\-]+\])?==[A-Za-z0-9_.+!\-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_FORBIDDEN = re.compile(r"^(PATH|LD_.*|PYTHON.*)$")


@dataclass(frozen=True)
class Context:
    """What a case is checked against: the bugs folder, the policy's rule ids, the hosts, the mirrors."""

    bugs_dir: Path
    rules: frozenset[str]
    hosts: frozenset[str]
    mirrors: Path | None


def load_case(path: Path, context: Context) -> Case:
    """The case in `path`, checked; a CaseError names the file, the line and what was expected."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(path, 0, f"the case file cannot be read: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise CaseError(path, int(found.group(1)) if found else 0, f"not TOML: {exc}") from exc
    return _Reader(path, Lines(text), context).case(data)


class _Reader:
    """Checks one case document, with the lines of its keys for the errors."""

    def __init__(self, path: Path, lines: Lines, context: Context) -> None:
        self.path, self.lines, self.context = path, lines, context

    def fail(self, table: tuple[str | int, ...], key: str | None, message: str) -> CaseError:
        return CaseError(self.path, self.lines.find(table, key), message)

    def keys(self, data: dict[str, Any], allowed: set[str], table: tuple[str | int, ...], what: str) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail(table, key, f"unknown key {key!r} in {what}; expected one of: "
                                            + ", ".join(sorted(allowed)))

    def string(self, data: dict[str, Any], key: str, table: tuple[str | int, ...], *, required: bool = True,
               pattern: re.Pattern[str] | None = None, expected: str = "a string") -> str | None:
        if key not in data:
            if required:
                raise self.fail(table, None, f"missing {key!r}: expected {expected}")
            return None
        value = data[key]
        if not isinstance(value, str) or not value or (pattern is not None and not pattern.match(value)):
            raise self.fail(table, key, f"{key!r} is {value!r}: expected {expected}")
        return value

    def strings(self, data: dict[str, Any], key: str, table: tuple[str | int, ...], *, required: bool = False,
                pattern: re.Pattern[str] | None = None, expected: str = "a list of strings") -> tuple[str, ...]:
        if key not in data:
            if required:
                raise self.fail(table, None, f"missing {key!r}: expected {expected}")
            return ()
        value = data[key]
        if not isinstance(value, list) or (required and not value) or not all(
                isinstance(v, str) and v and (pattern is None or pattern.match(v)) for v in value):
            raise self.fail(table, key, f"{key!r} is {value!r}: expected {expected}")
        return tuple(value)

    def case(self, data: dict[str, Any]) -> Case:
        self.keys(data, _TOP, (), "the case")
        if data.get("format") != FORMAT:
            raise self.fail((), "format", f"'format' is {data.get('format')!r}: expected {FORMAT}")
        case_id = self.string(data, "id", (), pattern=_ID, expected="the file's stem (lowercase, digits, - _ .)")
        if case_id != self.path.stem:
            raise self.fail((), "id", f"'id' is {case_id!r}: expected the file's stem {self.path.stem!r}")
        repository = self.string(data, "repository", (), pattern=_REPO, expected="owner/name on GitHub")
        rule = self.string(data, "rule", (), expected="an id of inventory/rules.toml")
        if rule not in self.context.rules:
            raise self.fail((), "rule", f"'rule' is {rule!r}: expected an id of inventory/rules.toml ("
                                        + ", ".join(sorted(self.context.rules)) + ")")
        hosts = self.hosts(data, (), required=True)
        control = data.get("control", False)
        if not isinstance(control, bool):
            raise self.fail((), "control", f"'control' is {control!r}: expected true or false")
        sides = self.sides(data, control)
        install = self.install(data.get("install", {}), sides, repository or "")
        raw = data.get("trigger")
        if not isinstance(raw, list) or not raw:
            raise self.fail((), "trigger", "no [[trigger]]: expected at least one (repro, suite or import)")
        triggers = tuple(self.trigger(t, i, hosts) for i, t in enumerate(raw))
        return Case(path=self.path, id=case_id or "", title=self.string(data, "title", ()) or "",
                    repository=repository or "", report=self.string(data, "report", (), expected="a URL") or "",
                    rule=rule or "", hosts=hosts, control=control, sides=sides, install=install,
                    triggers=triggers, bugs_dir=self.context.bugs_dir,
                    notes=self.string(data, "notes", (), required=False))

    def hosts(self, data: dict[str, Any], table: tuple[str | int, ...], *, required: bool) -> tuple[str, ...]:
        hosts = self.strings(data, "hosts", table, required=required, expected="a list of host profile names")
        unknown = [h for h in hosts if h not in self.context.hosts]
        if unknown:
            raise self.fail(table, "hosts", f"unknown host {', '.join(unknown)}: expected a built-in profile "
                            "(devsim hosts) or bugs/hosts/<name>.toml; known: " + ", ".join(sorted(self.context.hosts)))
        return hosts

    def sides(self, data: dict[str, Any], control: bool) -> tuple[Side, ...]:
        names = ("buggy",) if control else SIDES
        if control and "fixed" in data:
            raise self.fail(("fixed",), None, "a control (control = true) has only [buggy] (today's code): "
                                              "expected no [fixed]")
        sides = []
        for name in names:
            side = data.get(name)
            if not isinstance(side, dict):
                raise self.fail((), None, f"missing [{name}]: expected a table with 'commit' (and 'release')")
            self.keys(side, _SIDE, (name,), f"[{name}]")
            commit = self.string(side, "commit", (name,), required=not control, pattern=_HEX40,
                                 expected="a full 40-hex commit (lowercase)")
            release = self.string(side, "release", (name,), required=False, expected="a release version")
            if commit is None and release is None:
                raise self.fail((name,), None, f"[{name}] names neither 'commit' nor 'release': expected one")
            if commit is not None:
                self.commit_exists(data, name, commit)
            sides.append(Side(name=name, commit=commit, release=release))
        return tuple(sides)

    def commit_exists(self, data: dict[str, Any], side: str, commit: str) -> None:
        mirror = self.mirror(str(data.get("repository", "")))
        if mirror is None:
            return  # no mirror here: checked when a git install needs it
        done = subprocess.run(["git", "--git-dir", str(mirror), "cat-file", "-e", f"{commit}^{{commit}}"],
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise self.fail((side,), "commit", f"commit {commit} does not exist in the mirror {mirror}: expected "
                                               "a commit of the project's history")

    def mirror(self, repository: str) -> Path | None:
        if self.context.mirrors is None or not _REPO.match(repository):
            return None
        path = self.context.mirrors / repository.replace("/", "+") / "repo"
        return path if path.is_dir() else None

    def install(self, data: Any, sides: tuple[Side, ...], repository: str) -> Install:
        table = ("install",)
        if not isinstance(data, dict):
            raise self.fail((), "install", "'install' is not a table: expected [install]")
        self.keys(data, _INSTALL, table, "[install]")
        source = self.string(data, "from", table, required=False, expected="index, git or auto") or "auto"
        if source not in ("index", "git", "auto"):
            raise self.fail(table, "from", f"'from' is {source!r}: expected index, git or auto")
        releases = all(s.release for s in sides)
        if source == "auto":
            source = "index" if releases else "git"
        if source == "index" and not releases:
            raise self.fail(table, "from", "installing from the index needs 'release' on every side")
        if source == "git" and not all(s.commit for s in sides):
            raise self.fail(table, "from", "installing from git needs 'commit' on every side")
        package = self.string(data, "package", table, required=source == "index",
                              expected="the distribution name on the package index")
        paths = self.strings(data, "paths", table, expected="a list of relative paths of the tree")
        pythonpath = self.strings(data, "pythonpath", table, expected="a list of relative folders of the tree")
        for key, values in (("paths", paths), ("pythonpath", pythonpath)):
            for value in values:
                self.relative(value, table, key)
        pip = self.strings(data, "pip", table, pattern=_PIN, expected="a list of pinned requirements (name==version)")
        stubs = self.strings(data, "stubs", table, pattern=_MODULE, expected="a list of module names")
        env = data.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise self.fail(table, "env", f"'env' is {env!r}: expected a table of strings")
        for name in env:
            if not _ENV_NAME.match(name) or _ENV_FORBIDDEN.match(name):
                raise self.fail(table, "env", f"env names {name!r}: expected a variable other than PATH, LD_* and "
                                              "PYTHON* (the runner sets those)")
        return Install(source=source, package=package, paths=paths, pythonpath=pythonpath or (".",), pip=pip,
                       stubs=stubs, env=dict(env))

    def relative(self, value: str, table: tuple[str | int, ...], key: str, inside: str = "the tree") -> PurePosixPath:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts or "\\" in value or value.startswith("~"):
            raise self.fail(table, key, f"{key} names {value!r}: expected a relative path inside {inside} "
                                        "(no absolute path, no '..')")
        return path

    def trigger(self, data: Any, index: int, hosts: tuple[str, ...]) -> Trigger:
        table: tuple[str | int, ...] = ("trigger", index)
        if not isinstance(data, dict):
            raise self.fail(table, None, "a [[trigger]] is not a table")
        kind = self.string(data, "kind", table, expected="repro, suite or import")
        if kind not in _TRIGGER:
            raise self.fail(table, "kind", f"'kind' is {kind!r}: expected repro, suite or import")
        self.keys(data, _TRIGGER[kind], table, f"a [[trigger]] of kind {kind}")
        line = self.lines.find(table)
        own = self.hosts(data, table, required=False) or hosts
        why = self.string(data, "why", table, required=False)
        if kind == "repro":
            script = self.string(data, "script", table, expected="a repro script relative to bugs/ (repro/<id>.py)")
            self.script(script or "", table)
            misbehaves = self.expectation(data, "misbehaves", table, required=True)
            behaves = self.expectation(data, "behaves", table, required=False)
            return Trigger(index=index, kind=kind, hosts=own, line=line, script=script, misbehaves=misbehaves,
                           behaves=behaves, why=why)
        if kind == "suite":
            tests = self.strings(data, "tests", table, required=True,
                                 expected="a non-empty list of the project's test files or node ids")
            for test in tests:
                self.relative(test.split("::", 1)[0], table, "tests")
            args = self.strings(data, "args", table, expected="a list of extra pytest arguments")
            return Trigger(index=index, kind=kind, hosts=own, line=line, tests=tests, args=args, why=why)
        modules = self.strings(data, "modules", table, required=True, pattern=_MODULE,
                               expected="a non-empty list of module names")
        return Trigger(index=index, kind=kind, hosts=own, line=line, modules=modules, why=why)

    def script(self, script: str, table: tuple[str | int, ...]) -> None:
        self.relative(script, table, "script", "bugs/")
        bugs = self.context.bugs_dir.resolve()
        target = (self.context.bugs_dir / script).resolve()
        if not target.is_relative_to(bugs):
            raise self.fail(table, "script", f"script {script!r} resolves outside bugs/ ({target}): expected a file "
                                             "inside it (no symlink out)")
        if not target.is_file() or target.suffix != ".py":
            raise self.fail(table, "script", f"script {script!r} is not a Python file in {self.context.bugs_dir}: "
                                             "expected bugs/repro/<id>.py defining observe()")

    def expectation(self, data: dict[str, Any], key: str, table: tuple[str | int, ...],
                    required: bool) -> Expectation | None:
        if key not in data:
            if required:
                raise self.fail(table, None, f"missing {key!r}: expected {{ returns = ... }}, {{ raises = ... }} or "
                                             "{ device = ... }")
            return None
        value = data[key]
        if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in _EXPECT:
            raise self.fail(table, key, f"{key!r} is {value!r}: expected exactly one of returns, raises, device")
        kind, expected = next(iter(value.items()))
        if kind == "raises" and not (expected is True or (isinstance(expected, str) and expected)):
            raise self.fail(table, key, f"{key}.raises is {expected!r}: expected an exception's type name "
                                        "('TypeError' or 'TypeError: text in the message') or true")
        if kind == "device" and not (isinstance(expected, str) and expected):
            raise self.fail(table, key, f"{key}.device is {expected!r}: expected a device string ('cuda:1', 'cpu')")
        return Expectation(kind=kind, value=expected)
