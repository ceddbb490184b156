"""The sanitizer's parts in-process: mask resolution, the version-text peek, merging, the checks over an installed
SimulatedTorch (this process's torch is patched, and restored after each test), and the simulated torch raising
what torch raises for a CPU device handed to a GPU query."""

from __future__ import annotations

import threading
import types
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from devsim_subject_kit import Host
from devsim_subject_kit.sanitize import Sanitizer, SuppressionError, load, merge
from devsim_subject_kit.sanitize.masks import child_gpus
from devsim_subject_kit.simtorch import SimulatedTorch
from devsim_subject_kit.testing import CPU, H200X2

R9700X2 = {"torch": "hip", "gpus": [{"arch": "gfx1201", "name": "AMD Radeon AI PRO R9700"},
                                    {"arch": "gfx1201", "name": "AMD Radeon AI PRO R9700"}]}


@pytest.fixture
def sanitized():
    runtime = SimulatedTorch()
    made: list[Sanitizer] = []

    def _on(host: dict[str, Any], **kwargs: Any) -> Sanitizer:
        runtime.install(Host.from_message(host))
        san = Sanitizer(runtime, **kwargs).install()
        made.append(san)
        return san

    yield _on
    for san in made:
        san.uninstall()
    runtime.uninstall()


def rules(san: Sanitizer) -> list[tuple[str, int]]:
    return sorted((f.rule, f.line) for f in san.table.flags.values())


@pytest.mark.parametrize(("host", "masks", "seen"), [
    (R9700X2, {"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "1"}, 0),  # stacked: ROCR leaves one, HIP 1 is past it
    (R9700X2, {"HIP_VISIBLE_DEVICES": "0", "ROCR_VISIBLE_DEVICES": "0"}, 1),
    (R9700X2, {"HIP_VISIBLE_DEVICES": "1"}, 1),
    (R9700X2, {"ROCR_VISIBLE_DEVICES": "1", "CUDA_VISIBLE_DEVICES": "0"}, 1),  # HIP reads CUDA_... when HIP_... is unset
    (R9700X2, {"HIP_VISIBLE_DEVICES": "2,0"}, 0),  # a list stops at its first invalid ordinal
    (R9700X2, {"HIP_VISIBLE_DEVICES": "GPU-abc"}, None),  # a UUID is not judged
    (H200X2, {"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "1"}, 2),  # a CUDA build reads CUDA_... only
    (H200X2, {"CUDA_VISIBLE_DEVICES": "1,0"}, 2),
])
def test_child_gpus_resolve_the_masks_as_the_runtimes_do(host: dict[str, Any], masks: dict[str, str],
                                                         seen: int | None) -> None:
    assert child_gpus(Host.from_message(host), masks) == seen


def test_merge_adds_counts_and_joins_tests_by_site() -> None:
    a = {"rule": "r", "profile": "p", "file": "/f.py", "line": 3, "function": "f", "count": 2, "message": "m",
         "stack": [], "tests": ["t1"]}
    b = {**a, "count": 1, "tests": ["t1", "t2"]}
    c = {**a, "profile": "q", "count": 1, "tests": []}
    assert merge([a, b, c]) == [{**a, "count": 3, "tests": ["t1", "t2"]}, c]


def test_capability_compared_on_an_amd_gpu_is_flagged_at_the_comparison(sanitized) -> None:
    san = sanitized(R9700X2)
    major, minor = torch.cuda.get_device_capability(0)
    line = _line() + 1
    decided = major * 10 + minor >= 80
    assert decided is True and isinstance(decided, bool)
    assert rules(san) == [("no-cross-vendor-probe", line)]
    torch.cuda.is_bf16_supported()  # torch's own comparisons of the capability are torch's, not the project's
    assert rules(san) == [("no-cross-vendor-probe", line)]


def test_capability_compared_on_nvidia_is_not_flagged(sanitized) -> None:
    san = sanitized(H200X2)
    assert torch.cuda.get_device_capability(0) >= (9, 0)
    assert torch.cuda.get_device_properties(1).major >= 9
    assert rules(san) == []


def test_version_text_is_flagged_only_where_it_is_used_as_text(sanitized) -> None:
    san = sanitized(R9700X2)
    assert torch.version.cuda is None  # reading to decide the vendor is right
    has_cuda = torch.version.cuda is not None
    assert not has_cuda and rules(san) == []
    line = _line() + 2
    with pytest.raises(AttributeError):
        torch.version.cuda.startswith("12")
    assert rules(san) == [("vendor-from-build", line)]


@pytest.mark.parametrize("query", ["get_device_properties", "get_device_capability", "mem_get_info"])
@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_a_cpu_device_handed_to_a_gpu_query_raises_as_torch_does_and_is_flagged(sanitized, query: str,
                                                                                device: Any) -> None:
    san = sanitized(R9700X2)
    line = _line() + 2
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        getattr(torch.cuda, query)(device)
    assert rules(san) == [("per-target-arch", line)]


def test_a_thread_that_enters_its_creators_device_is_not_flagged(sanitized) -> None:
    from devsim_subject_kit.cpubacked import CpuBackedGpus

    san = sanitized(R9700X2)
    made: list[Any] = []

    def good() -> None:
        with CpuBackedGpus(), torch.cuda.device(1):  # type: ignore[no-untyped-call]
            made.append(torch.ones(1).to("cuda").device)

    def bad() -> None:
        with CpuBackedGpus():  # type: ignore[no-untyped-call]
            made.append(torch.ones(1).to("cuda").device)

    with torch.cuda.device(1):
        for work in (good, bad):
            thread = threading.Thread(target=work)
            thread.start()
            thread.join()
    assert made == [torch.device("cuda", 1), torch.device("cuda", 0)]
    assert [f.rule for f in san.table.flags.values()] == ["target-context"]
    assert next(iter(san.table.flags.values())).function.endswith("bad")


def test_a_suppression_drops_the_flag_and_counts_it(sanitized, tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'[[suppress]]\nrule = "per-target-arch"\nfile = "{__file__}"\nreason = "a test of it"\n')
    san = sanitized(R9700X2, suppressions=load(path))
    with pytest.raises(ValueError):
        torch.cuda.get_device_properties("cpu")
    assert rules(san) == [] and san.table.suppressed_count == 1


def test_no_flag_without_a_gpu_runtime(sanitized) -> None:
    san = sanitized(CPU)
    with pytest.raises(AssertionError):
        torch.cuda.get_device_properties("cpu")
    assert rules(san) == []


def test_uninstall_restores_torch(sanitized) -> None:
    start = threading.Thread.start
    san = sanitized(R9700X2)
    assert torch.cuda.get_device_capability != san.torch_host.get_device_capability
    assert type(torch.version) is not types.ModuleType and threading.Thread.start is not start
    san.uninstall()
    # the simulated host's own patches are back; the sanitizer's are gone
    assert torch.cuda.get_device_capability == san.torch_host.get_device_capability
    assert type(torch.version) is types.ModuleType and threading.Thread.start is start
    assert torch.version.hip is not None and torch.version.cuda is None


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="report, error"):
        Sanitizer(object(), mode="loud")


def test_a_missing_suppressions_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(SuppressionError, match="read suppressions file .*missing.toml"):
        load(tmp_path / "missing.toml")


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno
