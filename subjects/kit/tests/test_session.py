"""`pytest --devsim-host`: a whole session on simulated hosts, run on inner suites in pytest subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from fnmatch import fnmatch
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import SRC, devsim_binary
from devsim_subject_kit import Host
from devsim_subject_kit.nativelibs import SimulatedNativeCall
from devsim_subject_kit.patches import TorchOwner
from devsim_subject_kit.session import SessionSpec, boot, child_args, worst
from devsim_subject_kit.sessionchild import needs_real_gpu, with_profile
from devsim_subject_kit.shims import write_shims
from devsim_subject_kit.testing import CPU, H200X2, R9700X2
from test_pytest_plugin import LOAD

torch = pytest.importorskip("torch")
DEVSIM = devsim_binary()
needs_devsim = pytest.mark.skipif(DEVSIM is None, reason="no devsim binary: cargo build, or set DEVSIM")
OWN_SUITE = Path(__file__).parent / "fixtures" / "own_suite"


def session(pytester: pytest.Pytester, *args: str, load: tuple[str, ...] = tuple(LOAD)) -> pytest.RunResult:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    return pytester.runpytest_subprocess(*load, "-p", "no:cacheprovider", "-rs", f"--devsim={DEVSIM}", *args)


def leftovers(root: Path | None = None) -> set[str]:
    """The session scratch folders under `root` (default: the temporary folder)."""
    return {p.name for p in (root or Path(tempfile.gettempdir())).glob("devsim-session-*")}


@needs_devsim
def test_an_unmodified_suite_runs_whole_on_each_profile(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPTQModel-style suite (fixtures/own_suite) computes IS_ROCM at import, starts a thread at import and
    has `addopts = -s -v`; one invocation runs it on a HIP and a CUDA host."""
    shutil.copytree(OWN_SUITE, pytester.path, dirs_exist_ok=True)
    # a temporary folder of its own: sessions other tests run at the same time (pytest-xdist) leave theirs
    # in the shared one while they run
    scratch = tmp_path_factory.mktemp("session-tmp")
    monkeypatch.setenv("TMPDIR", str(scratch))
    result = session(pytester, "--devsim-host", "r9700x2,h200", "--devsim-report", "report.json")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([
        "devsim: session 1 of 2 on simulated host r9700x2 (torch=hip, gfx1201, gfx1201)",
        "*OWN_SUITE IS_ROCM=True HAS_CUDA=True COUNT=2 ARCHS=gfx1201,gfx1201*",
        "*test_flush_thread_started_at_import_runs[[]devsim:r9700x2[]] PASSED*",
        "*OWN_SUITE TOOL nvidia-smi exit=9*",
        "*OWN_SUITE TOOL rocminfo exit=0 *Name:*gfx1201*Marketing Name:*AMD Radeon AI PRO R9700*",
        # decided and documented: a Python subprocess that does not load the plugin imports the real torch
        "*OWN_SUITE SUBPROCESS IS_ROCM=False*",
        "*SKIPPED*needs a real GPU*",
        "devsim: session 2 of 2 on simulated host h200 (torch=cuda, sm_90)",
        "*OWN_SUITE IS_ROCM=False HAS_CUDA=True COUNT=1 ARCHS=sm_90*",
        "*OWN_SUITE TOOL nvidia-smi exit=0 NVIDIA H200, 9.0*",
        "*OWN_SUITE TOOL rocminfo exit=1*",
        "devsim: sessions done (r9700x2: exit 0, h200: exit 0)",
    ])
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["profiles"] == ["r9700x2", "h200"] and report["exit_codes"] == {"r9700x2": 0, "h200": 0}
    outcomes = {(t["nodeid"], t["profile"]): t["outcome"] for t in report["tests"]}
    assert outcomes[("tests/test_device.py::test_constants[devsim:h200]", "h200")] == "passed"
    assert outcomes[("tests/test_device.py::test_tensors_on_the_gpu_hold_values[devsim:r9700x2]", "r9700x2")] == \
        "passed", "tensors on a simulated GPU are CPU-backed"
    assert len(outcomes) == 12 and list(outcomes.values()).count("skipped") == 2
    skipped = [t for t in report["tests"] if t["outcome"] == "skipped"]
    assert all(t["reason"] == "needs a real GPU: the native op own_suite::gemm has no CPU kernel (CUDA only)"
               for t in skipped), skipped
    assert leftovers(scratch) == set()  # the tool shims' folders are gone


@needs_devsim
def test_xdist_workers_come_up_on_the_simulated_host(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_inner="""
import json, os, torch
IS_ROCM = torch.version.hip is not None
PROFILE = json.loads(os.environ["DEVSIM_SESSION"])["profile"]

def test_a():
    assert os.environ["PYTEST_XDIST_WORKER"] and IS_ROCM is (PROFILE == "r9700x2")

def test_b(devsim_host, devsim_trace):
    assert devsim_host.profile == PROFILE and torch.cuda.device_count() == len(devsim_host.host.visible_gpus())
    assert devsim_trace == [{"event": "device_count"}]
""")
    result = session(pytester, "-n", "2", "--devsim-host", "r9700x2,h200", "--devsim-report", "report.json")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    report = json.loads((pytester.path / "report.json").read_text())
    assert sorted((t["nodeid"], t["outcome"]) for t in report["tests"]) == [
        ("test_inner.py::test_a[devsim:h200]", "passed"), ("test_inner.py::test_a[devsim:r9700x2]", "passed"),
        ("test_inner.py::test_b[devsim:h200]", "passed"), ("test_inner.py::test_b[devsim:r9700x2]", "passed"),
    ]


@needs_devsim
def test_an_unknown_profile_is_a_usage_error_listing_the_profiles(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="def test_x():\n    raise AssertionError('must not run')\n")
    result = session(pytester, "--devsim-host", "h200,r9700")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--devsim-host: unknown devsim host profile r9700; the profiles are: a100, *r9700x2*"])
    result = session(pytester, "--devsim-host", ",")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--devsim-host ',' names no profile*"])


@needs_devsim
def test_the_profiles_may_come_from_the_environment(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_inner="import torch\ndef test_x():\n    assert torch.version.hip is None\n")
    monkeypatch.setenv("DEVSIM_HOST", "cpu,h200")
    result = session(pytester, "--junitxml", "junit.xml")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["devsim: session 1 of 2 on simulated host cpu*", "*1 passed*",
                                 "devsim: session 2 of 2 on simulated host h200*", "*1 passed*"])
    # one JUnit file for the whole run: each session's suite, named with its profile
    suites = ElementTree.parse(pytester.path / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["pytest[devsim:cpu]", "pytest[devsim:h200]"]
    assert [c.get("name") for s in suites for c in s.iter("testcase")] == ["test_x[devsim:cpu]", "test_x[devsim:h200]"]


@needs_devsim
def test_a_test_past_the_timeout_fails_with_where_it_stood(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="""
import time

def wait_forever():
    time.sleep(120)

def test_slow():
    wait_forever()
""")
    result = session(pytester, "--devsim-host", "cpu", "--devsim-timeout", "1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*in wait_forever*",
        "*time.sleep(120)*",
        "*test_inner.py::test_slow[[]devsim:cpu[]] (call) ran past --devsim-timeout 1s on simulated host cpu; the*",
        "*1 failed*",
    ])


@needs_devsim
def test_x_stops_at_the_first_failing_profile(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ndevsim_host = r9700x2,h200\n")  # the profiles from the ini option
    pytester.makepyfile(test_inner="import torch\ndef test_x():\n    assert torch.version.hip is None\n")
    result = session(pytester, "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["devsim: sessions done (r9700x2: exit 1); not run after that: h200"])


@needs_devsim
def test_the_report_gives_a_failed_tests_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="import torch\ndef test_x():\n    assert torch.version.hip is None, 'a HIP build'\n")
    result = session(pytester, "--devsim-host", "r9700x2", "--devsim-report", "report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    [test] = json.loads((pytester.path / "report.json").read_text())["tests"]
    assert test["outcome"] == "failed"
    assert test["reason"].startswith("AssertionError: a HIP build")


@needs_devsim
def test_torch_imported_before_the_plugin_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(torchfirst="import torch\n", test_inner="def test_x():\n    pass\n")
    result = session(pytester, "--devsim-host", "r9700x2", load=("-p", "torchfirst", *LOAD))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*devsim session on host r9700x2: the module 'torch' (*) was imported before the devsim plugin could patch*"]
    )


@needs_devsim
@pytest.mark.parametrize(("fake_torch", "says"), [
    ("raise ImportError('broken torch build')", "the simulated host patches torch, which does not import: broken torch"),
    ("version = None", "the kit cannot drive this torch: "),
])
def test_a_torch_the_kit_cannot_drive_is_a_usage_error(pytester: pytest.Pytester, fake_torch: str, says: str) -> None:
    pytester.mkpydir("torch").joinpath("__init__.py").write_text(fake_torch + "\n")  # first on the children's path
    pytester.makepyfile(test_inner="def test_x():\n    raise AssertionError('must not run')\n")
    result = session(pytester, "--devsim-host", "r9700x2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*devsim session on host r9700x2: {says}*"])


@needs_devsim
def test_the_plugin_loaded_from_a_conftest_refuses_instead_of_running_on_this_host(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["devsim_subject_kit.pytest_plugin"]\n')
    pytester.makepyfile(test_inner="def test_x():\n    raise AssertionError('must not run')\n")
    result = session(pytester, "--devsim-host", "r9700x2", load=("-p", "no:devsim"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--devsim-host (or devsim_host, $DEVSIM_HOST) needs the devsim plugin loaded before*"])


@needs_devsim
def test_a_marked_test_in_a_session_runs_on_its_markers_profiles(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="""
import pytest, torch

@pytest.mark.devsim_host("h200x2")
def test_marked(devsim_host):
    assert torch.version.cuda is not None and torch.cuda.device_count() == 2

def test_session_host(devsim_host):
    assert devsim_host.profile == "r9700x2" and torch.version.hip is not None
""")
    result = session(pytester, "--devsim-host", "r9700x2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*2 passed*"])


@needs_devsim
def test_nvml_and_amdsmi_answer_from_each_sessions_host(pytester: pytest.Pytester) -> None:
    """vLLM detects its platform through a vendored pynvml and amdsmi, not torch: both answer from the host."""
    pytester.mkpydir("vendored")
    pytester.path.joinpath("vendored", "pynvml.py").write_text(
        "class NVMLError(Exception):\n    def __init__(self, value):\n        self.value = value\n"
        "NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_NOT_FOUND, NVML_ERROR_INVALID_ARGUMENT = 12, 6, 2\n"
        "def nvmlInit():\n    raise AssertionError('the real library was called')\n"
    )
    pytester.makepyfile(test_inner="""
import amdsmi, torch
from vendored import pynvml

def platform():
    try:
        pynvml.nvmlInit()
        return "cuda"
    except pynvml.NVMLError:
        pass
    try:
        amdsmi.amdsmi_init()
        return "rocm" if amdsmi.amdsmi_get_processor_handles() else "cpu"
    except amdsmi.AmdSmiException:
        return "cpu"

def test_platform(devsim_host):
    assert platform() == {"h200": "cuda", "r9700x2": "rocm"}[devsim_host.profile]
""")
    result = session(pytester, "--devsim-host", "h200,r9700x2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*session 1 of 2 on simulated host h200*", "*1 passed*",
                                 "*session 2 of 2 on simulated host r9700x2*", "*1 passed*"])


@needs_devsim
def test_a_triton_launch_is_a_skip_that_names_it(pytester: pytest.Pytester) -> None:
    pytest.importorskip("triton")
    pytester.makepyfile(test_inner="""
import torch, triton
import triton.language as tl

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)

def test_launch():
    add_one[(1,)](torch.zeros(8), 8, BLOCK=8)
""")
    result = session(pytester, "--devsim-host", "h200")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_inner.py:*: needs a real GPU: a Triton launch (*"])


# -- the tool shims, the verdicts and the pieces, without a session


@pytest.mark.parametrize(("host", "command", "code", "out"), [
    (R9700X2, ["rocminfo"], 0, "*Name:                    gfx1201*"),
    (R9700X2, ["rocminfo"], 0, "*Marketing Name:          AMD Radeon AI PRO R9700*"),
    (R9700X2, ["nvidia-smi", "-L"], 9, "NVIDIA-SMI has failed*"),
    (R9700X2, ["amd-smi", "list"], 0, "GPU: 1"),
    (R9700X2, ["rocm-smi", "--showproductname"], 0, "GPU[[]0[]]*GFX Version:*gfx1201"),
    (H200X2, ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"], 0, "NVIDIA H200, 9.0"),
    (H200X2, ["nvidia-smi", "--query-gpu=index,memory.total", "--format=csv,nounits"], 0, "1, 81559"),
    (H200X2, ["nvidia-smi", "-L"], 0, "GPU 1: NVIDIA H200 (UUID: GPU-sm_90-NVIDIA H200)"),
    (H200X2, ["rocminfo"], 1, "ROCk module is NOT loaded*"),
    (CPU, ["amd-smi", "list"], 1, ""),
])
def test_the_device_tools_answer_from_the_host(tmp_path: Path, host: dict, command: list[str], code: int,
                                               out: str) -> None:
    write_shims(tmp_path, Host.from_message(host), "test")
    done = subprocess.run([str(tmp_path / command[0]), *command[1:]], capture_output=True, text=True, check=False)
    assert done.returncode == code, done.stderr
    if out:
        assert any(fnmatch(line, out) for line in done.stdout.splitlines()), done.stdout


@pytest.mark.parametrize("command", [["nvidia-smi", "--query-gpu=power.draw", "--format=csv"],
                                     ["nvidia-smi", "-q"], ["rocminfo", "--help"], ["amd-smi", "metric"]])
def test_a_query_the_shims_do_not_simulate_says_so(tmp_path: Path, command: list[str]) -> None:
    write_shims(tmp_path, Host.from_message(H200X2), "h200x2")
    done = subprocess.run([str(tmp_path / command[0]), *command[1:]], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "devsim's simulation of host profile h200x2" in done.stderr


def test_what_needs_a_real_gpu_is_named() -> None:
    gpu_host, cpu_host = Host.from_message(R9700X2), Host.from_message(CPU)
    native = SimulatedNativeCall("libgptq.so: gemm() is native code, which a simulated host never runs")
    assert needs_real_gpu(native, gpu_host) == "needs a real GPU: " + str(native)
    no_kernel = NotImplementedError("Could not run 'gptq::gemm' with arguments from the 'CUDA' backend. This ...")
    assert needs_real_gpu(no_kernel, gpu_host) == "needs a real GPU: the native op gptq::gemm has no CPU kernel (CUDA only)"
    lib = torch.library.Library("devsim_session_test", "DEF")  # an extension op with a CUDA kernel only
    lib.define("gemm(Tensor x) -> Tensor")
    lib.impl("gemm", lambda x: x, "CUDA")
    with pytest.raises(NotImplementedError) as cuda_only:
        torch.ops.devsim_session_test.gemm(torch.zeros(2))
    assert needs_real_gpu(cuda_only.value, gpu_host) == (
        "needs a real GPU: the native op devsim_session_test::gemm has no CPU kernel (CUDA only)")
    assert needs_real_gpu(cuda_only.value, cpu_host) is None  # a CPU-only machine fails the same way
    lib._destroy()
    try:
        try:
            raise RuntimeError("Found no NVIDIA driver on your system.")
        except RuntimeError as inner:
            raise ValueError("loading the weights failed") from inner
    except ValueError as outer:
        assert needs_real_gpu(outer, gpu_host) == ("needs a real GPU: device memory or a kernel on the GPU "
                                                   "(RuntimeError: Found no NVIDIA driver on your system.)")
    # a CPU build's own refusal is what a CPU host does, not something a GPU would avoid
    assert needs_real_gpu(AssertionError("Torch not compiled with CUDA enabled"), cpu_host) is None
    assert needs_real_gpu(AssertionError("1 != 2"), gpu_host) is None


def test_the_pieces() -> None:
    assert worst([0, 5, 1]) == 1 and worst([5, 5]) == 5 and worst([0, 4, 1]) == 4 and worst([-9, 1]) == 3
    assert worst([]) == 4
    assert with_profile("t.py::test_x", "h200") == "t.py::test_x[devsim:h200]"
    assert with_profile("t.py::C::test_x[1-a]", "h200") == "t.py::C::test_x[1-a-devsim:h200]"
    assert with_profile("t[1].py::test_x", "h200") == "t[1].py::test_x[devsim:h200]"
    assert child_args(["-v", "--devsim-host", "a,b", "--devsim-host=c", "-x"]) == ["-v", "-x"]


def test_boot_installs_nothing_outside_a_session_and_refuses_a_bad_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert boot({}) is None
    assert "DEVSIM_SESSION is not a devsim session" in str(boot({"DEVSIM_SESSION": "{"}))
    monkeypatch.setattr(TorchOwner, "installed", None)  # torch is imported here, and not by the kit
    spec = SessionSpec(profile="r9700x2", host=R9700X2)
    problem = str(boot({"DEVSIM_SESSION": spec.to_env()}))
    assert problem.startswith("devsim session on host r9700x2: the module 'torch' (")
    assert "was imported before the devsim plugin could patch it" in problem
