"""The pytest plugin, run on inner test files by pytest's own pytester (each in a subprocess)."""

from __future__ import annotations

import os
from importlib.metadata import entry_points

import pytest
from conftest import SRC, devsim_binary

pytest.importorskip("torch")
DEVSIM = devsim_binary()
needs_devsim = pytest.mark.skipif(DEVSIM is None, reason="no devsim binary: cargo build, or set DEVSIM")


# Installed, the kit registers the plugin through its pytest11 entry point; from the source tree it is named.
INSTALLED = any(e.name == "devsim" for e in entry_points(group="pytest11"))
LOAD = [] if INSTALLED else ["-p", "devsim_subject_kit.pytest_plugin"]


def run(pytester: pytest.Pytester, source: str, *args: str, devsim: str | None = DEVSIM) -> pytest.RunResult:
    pytester.makepyfile(test_inner=source)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    extra = [f"--devsim={devsim}"] if devsim else []
    return pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider", "-rs", *extra, *args)


@needs_devsim
def test_each_profile_runs_in_its_own_forked_child_on_its_host(pytester):
    result = run(pytester, """
import os, pytest, torch

@pytest.mark.devsim_host("r9700x2", "h200x2", "cpu")
def test_host(devsim_host):
    if devsim_host.profile == "r9700x2":
        assert torch.version.hip is not None and torch.cuda.device_count() == 2
        assert torch.cuda.get_device_properties(1).gcnArchName == "gfx1201"
        assert devsim_host.events("amd_arch") == [{"event": "amd_arch", "device": 1,
                                                   "detail": "get_device_properties().gcnArchName"}]
    elif devsim_host.profile == "h200x2":
        assert torch.version.cuda is not None and torch.cuda.get_device_capability(0) == (9, 0)
    else:
        assert not torch.cuda.is_available()
    torch.cuda.set_device = None  # whatever a test does stays in its child

def test_parent_torch_untouched():
    assert torch.cuda.set_device is not None and torch.cuda.device_count() == 0
""")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*4 passed*"])


@needs_devsim
def test_import_time_constants_follow_the_simulated_host(pytester):
    """The seed's trap: a module caches `IS_ROCM` at import; monkeypatching torch.version.hip afterwards misses
    it, while the plugin re-imports the module on the simulated host."""
    pytester.makepyfile(rocmflag="import torch\nIS_ROCM = torch.version.hip is not None\n")
    result = run(pytester, """
import pytest, torch
import rocmflag  # imported at collection, on this machine's torch

def test_monkeypatch_misses_the_import_time_constant(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "7.1")
    assert rocmflag.IS_ROCM is False  # the seed's trap: the constant was computed at import

@pytest.mark.devsim_host("r9700x2", reimport=["rocmflag"])
def test_plugin_reimports(devsim_host):
    import rocmflag as fresh
    assert fresh.IS_ROCM is True
""")
    result.assert_outcomes(passed=2)


@needs_devsim
def test_an_unknown_profile_is_a_usage_error_listing_the_profiles(pytester):
    result = run(pytester, """
import pytest

@pytest.mark.devsim_host("r9700")
def test_x(devsim_host):
    pass
""")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown devsim host profile r9700; the profiles are: a100, amd_mixed*r9700x2*"])


def test_without_devsim_the_test_is_skipped_with_the_reason(pytester):
    result = run(pytester, """
import pytest

@pytest.mark.devsim_host("r9700x2")
def test_x(devsim_host):
    raise AssertionError("must not run")
""", devsim="/nonexistent/devsim")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*devsim not found ('/nonexistent/devsim')*"])


@needs_devsim
def test_a_failure_and_a_crash_in_the_child_are_reported_as_failures(pytester):
    result = run(pytester, """
import os, pytest

@pytest.mark.devsim_host("cpu")
def test_fails(devsim_host):
    assert devsim_host.profile == "h200"

@pytest.mark.devsim_host("cpu")
def test_crashes(devsim_host):
    os._exit(9)
""")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*assert 'cpu' == 'h200'*", "*died (exit 9) before reporting*"])


@needs_devsim
def test_a_marked_test_must_take_the_fixture(pytester):
    result = run(pytester, """
import pytest

@pytest.mark.devsim_host("cpu")
def test_x():
    pass
""")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*marked devsim_host but does not take the devsim_host fixture*"])


@needs_devsim
def test_a_projects_own_host_profiles_come_from_the_devsim_hosts_folders(pytester):
    pytester.makeini("[pytest]\ndevsim_hosts = hosts\n")
    pytester.mkdir("hosts")
    (pytester.path / "hosts" / "one_mi300x.toml").write_text('torch = "hip"\ngpus = ["gfx942:sramecc+:xnack-"]\n')
    result = run(pytester, """
import pytest, torch

@pytest.mark.devsim_host("one_mi300x", "r9700x2")
def test_x(devsim_host):
    archs = [torch.cuda.get_device_properties(i).gcnArchName for i in range(torch.cuda.device_count())]
    assert archs == (["gfx942:sramecc+:xnack-"] if devsim_host.profile == "one_mi300x" else ["gfx1201"] * 2)
""")
    result.assert_outcomes(passed=2)
