"""`python -m devsim_subject_kit.bugs run [CASE_OR_DIR ...]`: the command line; arguments to `runner` calls.

Exit status: 0 when every case ran without an error and no scored case is a false alarm; 1 otherwise (a bad
case file, a failed install, a trigger's error, a false alarm); 2 for a usage error. Cases `--index-only`
leaves out are `not run` and do not change the status.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ..profiles import ProfileError, find_devsim
from .markdown import page, render
from .report import document, table, write_json, write_junit
from .runner import CaseResult, Options, discover, progress, read_rules, run_cases
from .trigger import sanitizer_available


def repository_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` with `inventory/rules.toml` (this repository's root)."""
    for folder in (start, *start.parents):
        if (folder / "inventory" / "rules.toml").is_file():
            return folder
    return None


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    main = argparse.ArgumentParser(prog="python -m devsim_subject_kit.bugs",
                                   description="Run real device-dispatch bugs, buggy and fixed, on simulated hosts.")
    commands = main.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run cases and say which bugs are reproduced, caught, falsely alarmed")
    run.add_argument("targets", nargs="*", type=Path, metavar="CASE_OR_DIR",
                     help="case files or folders of them (default: bugs/ of the repository)")
    run.add_argument("--mirrors", type=Path, default=None,
                     help="folder of bare git mirrors, DIR/owner+name/repo (needed by git installs)")
    run.add_argument("--cache", type=Path, default=None, help="install cache (default: target/bugs-cache)")
    run.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    run.add_argument("--json", type=Path, default=None, help="write the JSON results here")
    run.add_argument("--junit", type=Path, default=None, help="write JUnit XML here")
    run.add_argument("--only", action="append", default=[], metavar="ID", help="only the case ID (repeatable)")
    run.add_argument("--index-only", action="store_true",
                     help="run only cases whose sides install from the package index; the others are not run")
    run.add_argument("--timeout", type=float, default=300.0, help="seconds per trigger (default 300)")
    run.add_argument("--devsim", default=None, help="the devsim binary (default: $DEVSIM, then PATH)")
    run.add_argument("--against", type=Path, default=None, metavar="RESULTS",
                     help="a committed results file: fail when a case that ran here is reproduced, caught or a "
                          "false alarm where RESULTS says otherwise (or RESULTS lacks it)")
    run.add_argument("--rules", type=Path, default=None, help="the policy's rules (default: inventory/rules.toml)")
    markdown = commands.add_parser("markdown", help="render the results page (docs/real-bugs.md) from a results file")
    markdown.add_argument("results", type=Path, help="a results file of `run --json`")
    markdown.add_argument("--page", type=Path, default=None,
                          help="the page: its hand-written head is kept and the rest regenerated in place")
    markdown.add_argument("--check", action="store_true", help="with --page: fail if the page differs, write nothing")
    return main


def render_page(args: argparse.Namespace) -> int:
    """`markdown`: print the generated part, or regenerate (or check) a page's."""
    try:
        document = json.loads(args.results.read_text(encoding="utf-8"))
        head = args.page.read_text(encoding="utf-8") if args.page else ""
        text = page(head, document) if args.page else render(document)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"error: cannot render {args.results}: {exc}\n")
        return 2
    if args.page is None:
        sys.stdout.write(text)
        return 0
    if args.check:
        if head != text:
            sys.stderr.write(f"error: {args.page} differs from what {args.results} gives; run without --check\n")
            return 1
        return 0
    args.page.write_text(text, encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; its exit status."""
    args = parser().parse_args(argv)
    if args.command == "markdown":
        return render_page(args)
    root = repository_root(Path.cwd()) or repository_root(Path(__file__).resolve().parent)
    rules = args.rules or (root / "inventory" / "rules.toml" if root else None)
    if rules is None or not rules.is_file():
        sys.stderr.write("error: inventory/rules.toml not found: run from the repository or give --rules\n")
        return 2
    if args.jobs < 1 or args.timeout <= 0:
        sys.stderr.write("error: --jobs must be at least 1 and --timeout positive\n")
        return 2
    try:
        devsim = find_devsim(args.devsim)
    except ProfileError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    targets = args.targets or ([root / "bugs"] if root else [])
    missing = [str(t) for t in targets if not t.exists()]
    if missing or not targets:
        sys.stderr.write(f"error: no such case file or folder: {', '.join(missing) or 'bugs/'}\n")
        return 2
    paths = [p for p in discover(targets) if not args.only or p.stem in args.only]
    unknown = sorted(set(args.only) - {p.stem for p in paths})
    if unknown:
        sys.stderr.write(f"error: --only names no case: {', '.join(unknown)}\n")
        return 2
    cache = args.cache or (root / "target" / "bugs-cache" if root else Path("bugs-cache"))
    options = Options(cache=cache.resolve(), mirrors=args.mirrors.resolve() if args.mirrors else None, devsim=devsim,
                      rules=read_rules(rules), jobs=args.jobs, timeout=args.timeout, index_only=args.index_only)
    results = run_cases(paths, options, progress)
    print(table(results))
    if args.json:
        write_json(results, sanitizer_available(), args.json)
    if args.junit:
        write_junit(results, args.junit)
    drift = _drift(results, args.against) if args.against else []
    for line in drift:
        sys.stderr.write(f"error: {line}\n")
    return 1 if drift or any(_bad(r, args.index_only) for r in results) else 0


#: The verdicts `--against` compares.
VERDICTS = ("reproduced", "caught", "false_alarm")


def _drift(results: Sequence[CaseResult], against: Path) -> list[str]:
    """Each case that ran whose verdicts differ from the committed results file's."""
    try:
        committed = {c["id"]: c for c in json.loads(against.read_text(encoding="utf-8"))["cases"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"cannot read the committed results {against}: {exc}"]
    lines = []
    for entry in document(results, False)["cases"]:
        if entry["not_run"] is not None or entry["error"]:
            continue
        before = committed.get(entry["id"])
        if before is None:
            lines.append(f"{entry['id']}: not in {against}; run the whole benchmark and commit its results")
            continue
        changed = [f"{k} {before.get(k)} -> {entry[k]}" for k in VERDICTS if bool(before.get(k)) != entry[k]]
        if changed:
            lines.append(f"{entry['id']}: differs from {against}: " + ", ".join(changed))
    return lines


def _bad(result: CaseResult, index_only: bool) -> bool:
    if result.error:
        return True
    if result.not_run:
        return not (index_only and result.not_run.startswith("--index-only"))
    verdict = result.verdict
    assert verdict is not None
    control = bool(result.case and result.case.control)
    return bool(verdict.errors) or (verdict.false_alarm and not control)
