"""Run cases: each loaded, both sides installed, every trigger run, judged; cases in parallel (a thread pool).
A case that is bad, fails to install, hangs or crashes is that case's error or `not run`, never the run's."""

from __future__ import annotations

import sys
import time
import tomllib
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..profiles import ProfileError, load_profiles
from .case import Case, CaseError, Trigger
from .install import Installed, InstallError, install_side, mirror_of
from .load import Context, load_case
from .observe import ERROR, HostOutcome, outcomes
from .trigger import run_trigger, sanitizer_available
from .verdict import FlagVerdict, Outcomes, Verdict, judge, load_verdicts


@dataclass(frozen=True)
class Options:
    """How the cases run."""

    cache: Path
    mirrors: Path | None
    devsim: str
    rules: frozenset[str]
    jobs: int = 2
    timeout: float = 300.0
    index_only: bool = False


@dataclass
class SessionTime:
    """How long one trigger's session took on one side (all its hosts)."""

    side: str
    trigger: int
    seconds: float


@dataclass
class CaseResult:
    """One case's run: its verdict, or why it did not run."""

    path: Path
    case: Case | None = None
    error: str | None = None
    not_run: str | None = None
    verdict: Verdict | None = None
    results: Outcomes = field(default_factory=dict)
    sessions: list[SessionTime] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def id(self) -> str:
        """The case's id (the file's stem when it did not load)."""
        return self.case.id if self.case else self.path.stem


def discover(targets: Sequence[Path]) -> list[Path]:
    """The case files named: a file as is, a folder's `*.toml` (not `verdicts.toml`, not its `hosts/`)."""
    found: list[Path] = []
    for target in targets:
        if target.is_dir():
            found += sorted(p for p in target.glob("*.toml") if p.name != "verdicts.toml")
        else:
            found.append(target)
    return list(dict.fromkeys(found))


def read_rules(path: Path) -> frozenset[str]:
    """The rule ids of `inventory/rules.toml`."""
    return frozenset(str(r["id"]) for r in tomllib.loads(path.read_text(encoding="utf-8")).get("rule", []))


def run_cases(paths: Sequence[Path], options: Options, report: Callable[[CaseResult], None] | None = None
              ) -> list[CaseResult]:
    """Run every case of `paths`, `options.jobs` at a time; results in the order of `paths`."""
    sanitizer_available()  # asked once, before the threads
    contexts: dict[Path, tuple[Context, list[FlagVerdict], str | None]] = {}
    for folder in {p.parent for p in paths}:
        contexts[folder] = _context(folder, options)

    def one(path: Path) -> CaseResult:
        context, verdicts, problem = contexts[path.parent]
        try:
            result = run_case(path, context, verdicts, problem, options)
        except Exception as exc:  # noqa: BLE001 - a case that breaks the runner is that case's error, not the run's
            where = traceback.format_exc().strip().splitlines()[-3:]
            result = CaseResult(path=path, error=f"the runner failed on this case: {exc!r} ({' | '.join(where)})",
                                not_run="the runner failed on this case")
        if report is not None:
            report(result)
        return result

    with ThreadPoolExecutor(max_workers=max(options.jobs, 1)) as pool:
        return list(pool.map(one, paths))


def _context(folder: Path, options: Options) -> tuple[Context, list[FlagVerdict], str | None]:
    """The hosts (built-in and `hosts/` of the case folder) and human verdicts a folder's cases are checked with."""
    hosts = {p.stem for p in (folder / "hosts").glob("*.toml")}
    problem = None
    try:
        hosts |= set(load_profiles(options.devsim))
    except ProfileError as exc:
        problem = f"devsim could not list its host profiles: {exc}"
    try:
        verdicts = load_verdicts(folder / "verdicts.toml")
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        verdicts, problem = [], f"{folder / 'verdicts.toml'}: {exc}"
    context = Context(bugs_dir=folder, rules=options.rules, hosts=frozenset(hosts), mirrors=options.mirrors)
    return context, verdicts, problem


def run_case(path: Path, context: Context, verdicts: list[FlagVerdict], problem: str | None,
             options: Options) -> CaseResult:
    """One case: loaded, installed side by side, every trigger run on its hosts, judged."""
    started = time.monotonic()
    result = CaseResult(path=path)
    try:
        result.case = case = load_case(path, context)
    except CaseError as exc:
        result.error = str(exc)
        result.not_run = "the case file is invalid"
        return result
    if problem:
        result.not_run = problem
    elif options.index_only and case.install.source != "index":
        result.not_run = "--index-only: this case installs from git"
    elif case.install.source == "git" and mirror_of(case, options.mirrors) is None:
        where = options.mirrors / case.mirror_name / "repo" if options.mirrors else "(no --mirrors given)"
        result.not_run = f"no mirror of {case.repository} at {where}: a git install needs one"
    if result.not_run:
        return result
    for side in case.sides:
        try:
            installed = install_side(case, side, options.cache, options.mirrors)
        except (InstallError, OSError) as exc:
            result.not_run = f"install of {side.name} failed: {exc}"
            result.seconds = round(time.monotonic() - started, 3)
            return result
        for trigger in case.triggers:
            work = installed.root.parent / "runs" / f"{side.name}-{trigger.index + 1}-{trigger.kind}"
            found = _run_one(case, trigger, installed, work, options)
            result.sessions.append(SessionTime(side.name, trigger.index, found[0]))
            for outcome in found[1]:
                result.results[(side.name, trigger.index, outcome.host)] = outcome
    result.verdict = judge(case, result.results, verdicts)
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _run_one(case: Case, trigger: Trigger, installed: Installed, work: Path,
             options: Options) -> tuple[float, list[HostOutcome]]:
    missing = _missing_tests(trigger, installed)
    if missing:
        why = f"the trigger names no test: {missing} is not in the side's tree (line {trigger.line} of {case.path})"
        return 0.0, [HostOutcome(ERROR, host, error=why) for host in trigger.hosts]
    try:
        session = run_trigger(case, trigger, installed, work, options.devsim, case.bugs_dir / "hosts", options.timeout)
    except OSError as exc:
        return 0.0, [HostOutcome(ERROR, host, error=f"the session could not start: {exc}") for host in trigger.hosts]
    return session.seconds, outcomes(trigger, session, installed.own)


def _missing_tests(trigger: Trigger, installed: Installed) -> str | None:
    """The first of a suite's tests whose file is not in the side's tree (or resolves out of it)."""
    root = installed.rootdir.resolve()
    for test in trigger.tests:
        relative = PurePosixPath(test.split("::", 1)[0])
        path = (root / relative).resolve()
        if not path.is_relative_to(root) or not path.exists():
            return test
    return None


def progress(result: CaseResult) -> None:
    """One line per finished case on stderr."""
    verdict = result.verdict
    if result.error or result.not_run:
        said = f"not run: {result.error or result.not_run}"
    else:
        assert verdict is not None
        said = ", ".join(f"{k}={v}" for k, v in (("reproduced", verdict.reproduced), ("caught", verdict.caught),
                                                   ("false_alarm", verdict.false_alarm)))
        said += f", {len(verdict.errors)} error(s)" if verdict.errors else ""
    sys.stderr.write(f"devsim bugs: {result.id}: {said} ({result.seconds:.1f} s)\n")
    sys.stderr.flush()
