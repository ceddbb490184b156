"""The dispatch sanitizer on its fixture suite (fixtures/sanitize_suite): every `# sanitize: RULE [@PROFILE]`
line of buggy/ is flagged, with its rule, file and line, on each profile it names and nothing else is; the
fixed twin is silent; `error` mode fails exactly the tests that raised a flag, naming the rule; a suppression
drops its flag; a bad suppressions file is a usage error naming its line; without the option the report has no
`sanitizer` key. Each run is a pytest subprocess of the copied suite."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import SRC, devsim_binary

pytest.importorskip("torch")
DEVSIM = devsim_binary()
pytestmark = pytest.mark.skipif(DEVSIM is None, reason="no devsim binary: cargo build, or set DEVSIM")

SUITE = Path(__file__).parent / "fixtures" / "sanitize_suite"
PROFILES = ("r9700x2", "h200x2")
ANNOTATION = re.compile(r"#\s*sanitize:\s*([\w-]+)(?:\s*@([\w]+))?")


def expected_flags() -> set[tuple[str, str, str, int]]:
    """(profile, rule, file relative to the suite, line) of every annotated line of buggy/."""
    out = set()
    for path in sorted((SUITE / "buggy").glob("*.py")):
        for number, text in enumerate(path.read_text().splitlines(), 1):
            found = ANNOTATION.search(text)
            if found:
                for profile in [found.group(2)] if found.group(2) else PROFILES:
                    out.add((profile, found.group(1), str(path.relative_to(SUITE)), number))
    return out


def run_suite(where: Path, variant: str, *args: str, profiles: str = ",".join(PROFILES),
              sanitize_env: str | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    if not (where / "pytest.ini").exists():
        shutil.copytree(SUITE, where, dirs_exist_ok=True)
    report = where / f"report-{variant}.json"
    report.unlink(missing_ok=True)
    env = dict(os.environ, SANITIZE_SUITE=variant,
               PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    env.pop("DEVSIM_SANITIZE", None)
    if sanitize_env is not None:
        env["DEVSIM_SANITIZE"] = sanitize_env
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--devsim={DEVSIM}", "--devsim-host", profiles,
         "--devsim-report", str(report), *args],
        check=False, cwd=where, env=env, capture_output=True, text=True, timeout=600,
    )
    return done, json.loads(report.read_text()) if report.is_file() else None


def sites(report: dict[str, Any], root: Path) -> set[tuple[str, str, str, int]]:
    return {(f["profile"], f["rule"], str(Path(f["file"]).relative_to(root)), f["line"]) for f in report["sanitizer"]}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sanitize-suite")


@pytest.fixture(scope="module")
def buggy(suite: Path) -> dict[str, Any]:
    done, report = run_suite(suite, "buggy", "--devsim-sanitize")
    assert done.returncode == 0 and report is not None, done.stdout + done.stderr
    return report


def test_every_annotated_line_of_buggy_is_flagged_and_nothing_else(buggy: dict[str, Any], suite: Path) -> None:
    expected = expected_flags()
    assert len(expected) == 14  # the annotations are read: one per check and profile it applies to
    assert sites(buggy, suite) == expected


def test_each_flag_has_the_contracts_shape(buggy: dict[str, Any], suite: Path) -> None:
    for flag in buggy["sanitizer"]:
        assert set(flag) == {"rule", "profile", "file", "line", "function", "count", "message", "stack", "tests"}
        assert Path(flag["file"]).is_absolute() and flag["count"] == 1 and flag["message"]
        assert flag["stack"][0] == f"{flag['file']}:{flag['line']} in {flag['function']}"
        assert len(flag["tests"]) == 1 and flag["tests"][0].startswith("tests/test_dispatch.py::test_")
        assert flag["tests"][0].endswith(f"[devsim:{flag['profile']}]")
    by_function = {f["function"]: f for f in buggy["sanitizer"] if f["profile"] == "r9700x2"}
    worker = "tests/test_dispatch.py::test_worker_makes_zeros[devsim:r9700x2]"
    assert by_function["in_worker.<locals>.work"]["tests"] == [worker]


def test_the_fixed_twin_is_silent(suite: Path) -> None:
    done, report = run_suite(suite, "fixed", "--devsim-sanitize")
    assert done.returncode == 0 and report is not None, done.stdout + done.stderr
    assert report["sanitizer"] == []
    assert "devsim sanitizer (report): no flag" in done.stdout


def test_error_mode_fails_the_tests_that_raised_a_flag_naming_the_rule(buggy: dict[str, Any], suite: Path) -> None:
    done, report = run_suite(suite, "buggy", "--devsim-sanitize=error", profiles="r9700x2")
    assert done.returncode == 1 and report is not None, done.stdout + done.stderr
    flagged = {t: f["rule"] for f in buggy["sanitizer"] if f["profile"] == "r9700x2" for t in f["tests"]}
    failed = {t["nodeid"]: t for t in report["tests"] if t["outcome"] == "failed"}
    assert set(failed) == set(flagged)
    assert {t["outcome"] for t in report["tests"] if t["nodeid"] not in failed} == {"passed"}
    for nodeid, entry in failed.items():
        assert flagged[nodeid] in entry["reason"], entry
    for rule in set(flagged.values()):
        assert f"  {rule} at " in done.stdout
    assert sites(report, suite) == {s for s in expected_flags() if s[0] == "r9700x2"}


def test_a_suppression_drops_its_flag_only(suite: Path) -> None:
    (suite / "suppress.toml").write_text(
        '[[suppress]]\nrule = "family-move-current"\nfile = "*/buggy/dispatch.py"\nfunction = "merge_on_gpu"\n'
        'reason = "the fixture pins merges to GPU 0"\n'
    )
    done, report = run_suite(suite, "buggy", "--devsim-sanitize", "--devsim-sanitize-suppressions", "suppress.toml",
                             profiles="r9700x2")
    assert done.returncode == 0 and report is not None, done.stdout + done.stderr
    expected = {s for s in expected_flags() if s[0] == "r9700x2" and s[1] != "family-move-current"}
    assert sites(report, suite) == expected


@pytest.mark.parametrize(("text", "says"), [
    ('[[suppress]]\nrule = "family-move-current"\n', "bad.toml:1: `reason` is required"),
    ('[[suppress]]\nrule = "x"\nreason = "r"\n\n[[suppress]]\nrule = "nope"\nreason = "r"\n', "bad.toml:1: unknown rule 'x'"),
    ('[[suppress]]\nrule = "target-context"\nreason = "r"\nfiles = "*"\n', "bad.toml:1: unknown key(s) files"),
    ('[[suppress]]\nrule = = "x"\n', "bad.toml:2:"),
])
def test_a_bad_suppressions_file_is_a_usage_error_naming_its_line(suite: Path, text: str, says: str) -> None:
    (suite / "bad.toml").write_text(text)
    done, report = run_suite(suite, "buggy", "--devsim-sanitize", "--devsim-sanitize-suppressions", "bad.toml",
                             profiles="r9700x2")
    assert done.returncode == 4 and report is None, done.stdout + done.stderr
    assert "--devsim-sanitize-suppressions: failed to " in done.stderr and says in done.stderr, done.stderr


def test_without_the_option_the_report_has_no_sanitizer_key(suite: Path) -> None:
    done, report = run_suite(suite, "buggy", "-k", "vae_dtype", profiles="r9700x2")
    assert done.returncode == 0 and report is not None, done.stdout + done.stderr
    assert "sanitizer" not in report and "devsim sanitizer" not in done.stdout


def test_flags_raised_in_xdist_workers_reach_the_report(suite: Path) -> None:
    pytest.importorskip("xdist")
    done, report = run_suite(suite, "buggy", "--devsim-sanitize", "-n", "2", profiles="r9700x2")
    assert done.returncode == 0 and report is not None, done.stdout + done.stderr
    assert sites(report, suite) == {s for s in expected_flags() if s[0] == "r9700x2"}
    assert all(f["count"] == 1 and len(f["tests"]) == 1 for f in report["sanitizer"])


def test_the_environment_variable_turns_it_on(suite: Path) -> None:
    done, report = run_suite(suite, "buggy", "-k", "vae_dtype", profiles="r9700x2", sanitize_env="error")
    assert done.returncode == 1 and report is not None, done.stdout + done.stderr
    assert [(f["rule"], f["function"]) for f in report["sanitizer"]] == [("per-target-arch", "vae_dtype")]
    assert [t["outcome"] for t in report["tests"]] == ["failed"]


def test_the_option_without_a_host_is_a_usage_error(suite: Path) -> None:
    shutil.copytree(SUITE, suite, dirs_exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    env.pop("DEVSIM_HOST", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--devsim-sanitize"],
                          check=False, cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 4 and "--devsim-sanitize needs --devsim-host" in done.stderr, done.stderr
