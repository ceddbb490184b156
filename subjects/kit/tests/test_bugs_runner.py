"""The real-bug runner (`python -m devsim_subject_kit.bugs run`) on a fake project with a real bug's shape: a git
mirror with a buggy and a fixed commit, a case file with a repro, a suite and an import trigger, pytest sessions
on a case-local simulated RDNA2 host."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from bugs_fake import Fake, case_text, make_fake, make_wheels
from conftest import REPO, devsim_binary
from devsim_subject_kit.bugs.cli import main
from devsim_subject_kit.bugs.install import STAMP, install_side
from devsim_subject_kit.bugs.load import Context, load_case
from devsim_subject_kit.bugs.runner import read_rules

pytest.importorskip("torch")
DEVSIM = devsim_binary()
pytestmark = pytest.mark.skipif(DEVSIM is None, reason="no devsim binary: cargo build, or set DEVSIM")


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path)


def run(fake: Fake, *args: str) -> tuple[int, dict[str, object]]:
    out = fake.bugs.parent / "results.json"
    code = main(["run", str(fake.bugs), "--mirrors", str(fake.mirrors), "--cache", str(fake.bugs.parent / "cache"),
                 "--devsim", str(DEVSIM), "--json", str(out), *args])
    return code, json.loads(out.read_text())


def test_a_fake_bug_is_reproduced_and_caught_by_its_suite_with_no_false_alarm(fake: Fake) -> None:
    (fake.bugs / "fastdtype-bf16.toml").write_text(case_text(fake))
    junit = fake.bugs.parent / "results.xml"
    code, document = run(fake, "--junit", str(junit))
    assert code == 0, document
    [case] = document["cases"]  # type: ignore[misc]
    assert (case["reproduced"], case["caught"], case["false_alarm"], case["not_run"]) == (True, True, False, None)
    sides = {name: {t["trigger"]: t["hosts"]["rdna2"] for t in side["triggers"]} for name, side in case["sides"].items()}
    assert sides["buggy"]["repro#1"]["outcome"] == "misbehaves"
    assert sides["buggy"]["repro#1"]["observation"]["returned"] == "bfloat16"
    assert "nvidia_capability device=0 get_device_capability" in sides["buggy"]["repro#1"]["trace"]
    assert sides["fixed"]["repro#1"]["outcome"] == "behaves"
    assert sides["buggy"]["suite#2"]["failing"] == ["tests/test_dtype.py::test_pick_dtype_matches_the_gpu[devsim:rdna2]"]
    assert (sides["fixed"]["suite#2"]["outcome"], sides["fixed"]["suite#2"]["passed"]) == ("passed", 2)
    # the import trigger imports the project and a lenient stub's submodule on both sides: no catch, no alarm
    assert [sides[s]["import#3"]["outcome"] for s in ("buggy", "fixed")] == ["passed", "passed"]
    # the suite catches it twice: its own test fails, and the sanitizer flags the capability comparison
    assert case["by"] == [
        "reproduced: repro#1 on rdna2",
        ("caught: suite#2 on rdna2 fails on buggy, passes on fixed "
        "(tests/test_dtype.py::test_pick_dtype_matches_the_gpu[devsim:rdna2])"),
        "caught: suite#2 on rdna2 sanitizer no-cross-vendor-probe at fastdtype/__init__.py:5 in pick_dtype",
    ]
    testcases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    assert sorted(t.get("name") for t in testcases) == sorted(
        f"{s}:{t}[rdna2]" for s in ("buggy", "fixed") for t in ("repro#1", "suite#2", "import#3"))
    assert not [t for t in testcases if t.find("failure") is not None or t.find("error") is not None]


def test_a_repro_that_misbehaves_on_the_fixed_side_is_a_false_alarm(fake: Fake) -> None:
    """A repro whose `misbehaves` is what the fixed side also returns on an NVIDIA host: a false alarm, exit 1."""
    text = case_text(fake).replace('hosts = ["rdna2"]', 'hosts = ["h200"]')
    text = text[:text.index("[[trigger]]\nkind = \"suite\"")]  # the repro only
    (fake.bugs / "fastdtype-bf16.toml").write_text(text)
    code, document = run(fake)
    [case] = document["cases"]  # type: ignore[misc]
    assert code == 1
    assert (case["reproduced"], case["false_alarm"]) == (False, True)
    assert case["by"] == ["false alarm: repro#1 on h200 misbehaves on fixed"]


def test_a_hanging_trigger_and_a_bad_case_are_their_cases_errors_and_the_run_goes_on(fake: Fake) -> None:
    hang = f'''format = 1
id = "hangs"
title = "a repro that never returns"
repository = "acme/fastdtype"
report = "https://example.invalid/1"
rule = "no-cross-vendor-probe"
hosts = ["rdna2"]
control = true

[buggy]
commit = "{fake.buggy}"

[install]
from = "git"
paths = ["fastdtype"]

[[trigger]]
kind = "repro"
script = "repro/hang.py"
misbehaves = {{ returns = true }}
'''
    (fake.bugs / "hangs.toml").write_text(hang)
    (fake.bugs / "typo.toml").write_text(case_text(fake, "typo").replace("[install]\n", "[install]\nfrom_ = 1\n"))
    code, document = run(fake, "--timeout", "8")
    assert code == 1
    by_id = {c["id"]: c for c in document["cases"]}  # type: ignore[attr-defined]
    [error] = by_id["hangs"]["errors"]
    assert error.startswith("buggy repro#1 on rdna2: timed out after"), error
    assert by_id["hangs"]["not_run"] is None and by_id["hangs"]["reproduced"] is False
    typo = fake.bugs / "typo.toml"
    line = case_text(fake, "typo").splitlines().index("[install]") + 2
    assert by_id["typo"]["error"].startswith(f"{typo}:{line}: unknown key 'from_' in [install]")
    assert by_id["typo"]["not_run"] == "the case file is invalid"


def test_index_only_leaves_git_cases_not_run_with_why(fake: Fake) -> None:
    (fake.bugs / "fastdtype-bf16.toml").write_text(case_text(fake))
    code, document = run(fake, "--index-only")
    assert code == 0
    [case] = document["cases"]  # type: ignore[misc]
    assert case["not_run"] == "--index-only: this case installs from git"
    assert not (fake.bugs.parent / "cache").exists(), "nothing was installed"


def test_an_installed_side_is_reused_from_the_cache(fake: Fake, tmp_path: Path) -> None:
    (fake.bugs / "fastdtype-bf16.toml").write_text(case_text(fake))
    context = Context(bugs_dir=fake.bugs, rules=read_rules(REPO / "inventory" / "rules.toml"),
                      hosts=frozenset({"rdna2"}), mirrors=fake.mirrors)
    case = load_case(fake.bugs / "fastdtype-bf16.toml", context)
    cache = tmp_path / "cache"
    first = install_side(case, case.sides[0], cache, fake.mirrors)
    assert (first.root / STAMP).is_file()
    assert "get_device_capability(d)[0] >= 8" in (first.root / "tree" / "fastdtype" / "__init__.py").read_text()
    assert not (first.root / "tree" / "README.md").exists(), "only the listed paths are exported"
    # no mirror now: a second install of the same side must not need one
    again = install_side(case, case.sides[0], cache, tmp_path / "no-mirrors")
    assert again == first


def test_an_index_case_installs_each_release_and_runs_under_index_only(
        fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case with a release on both sides installs from the package index (here pip's own configuration points
    it at a local folder of the fake project's wheels: no network in tests) and runs under --index-only."""
    make_wheels(tmp_path / "wheels")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    text = case_text(fake).replace(f'commit = "{fake.buggy}"', f'commit = "{fake.buggy}"\nrelease = "1.0"')
    text = text.replace(f'commit = "{fake.fixed}"', f'commit = "{fake.fixed}"\nrelease = "1.1"')
    text = text.replace('from = "git"\npaths = ["fastdtype", "tests"]\n', 'package = "fastdtype"\n')
    text = text[:text.index("[[trigger]]\nkind = \"suite\"")]  # the wheels hold no tests: the repro only
    (fake.bugs / "fastdtype-bf16.toml").write_text(text)
    code, document = run(fake, "--index-only")
    [case] = document["cases"]  # type: ignore[misc]
    assert code == 0, case
    assert (case["install"], case["reproduced"], case["false_alarm"]) == ("index", True, False)
    site = next((fake.bugs.parent / "cache" / "fastdtype-bf16").glob("fixed-*")) / "site"
    assert "gcnArchName" in (site / "fastdtype" / "__init__.py").read_text()


def test_a_case_that_breaks_the_runner_is_that_cases_error(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    from devsim_subject_kit.bugs import runner

    def broken(*args: object) -> None:
        raise RuntimeError("an unforeseen failure")

    monkeypatch.setattr(runner, "install_side", broken)
    (fake.bugs / "fastdtype-bf16.toml").write_text(case_text(fake))
    code, document = run(fake)
    [case] = document["cases"]  # type: ignore[misc]
    assert code == 1
    assert case["error"].startswith("the runner failed on this case: RuntimeError('an unforeseen failure')")
    assert case["not_run"] == "the runner failed on this case"
