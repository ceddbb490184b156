"""The host facts real-bug cases read, each as torch on that host reports it (sources in docs/host-facts.md):
capability and gcnArchName per gfx target, the build's arch list and versions, torch's error for a CPU device,
the memory API, rocminfo's agent order, and visible-device masks that stack in a child process."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from conftest import devsim_binary
from devsim_subject_kit import Host, Recorder
from devsim_subject_kit.childmasks import stacked_host
from devsim_subject_kit.host import DEFAULT_ARCH_LIST
from devsim_subject_kit.lowlevel import RocmInfo, rocminfo_text
from devsim_subject_kit.shims import write_shims
from devsim_subject_kit.simtorch import SimulatedTorch
from devsim_subject_kit.testing import CPU, H200X2, host

RUNTIME = SimulatedTorch()
needs_devsim = pytest.mark.skipif(devsim_binary() is None, reason="needs the devsim binary (cargo build)")


def amd(*archs: str, **fields: Any) -> dict[str, Any]:
    """A HIP host with one GPU per arch (UUIDs as devsim's defaults: the physical index in 16 hex digits)."""
    gpus = [{"arch": a, "name": f"GPU {a}", "uuid": f"{i:016x}", **fields} for i, a in enumerate(archs)]
    return host("hip", gpus)


@pytest.fixture
def become():
    def _become(message: dict[str, Any]) -> None:
        RUNTIME.install(Host.from_message(message))

    yield _become
    RUNTIME.uninstall()


# (base target, major, minor): hipDeviceProp_t major/minor are the ISA's version (ROCm/clr rocm-6.2.2
# hipamd/src/hip_device.cpp:473-474), listed per target in rocclr/device/device.cpp's ISA table.
CAPABILITY = [
    ("gfx900", 9, 0), ("gfx906", 9, 0), ("gfx908", 9, 0), ("gfx90a", 9, 0), ("gfx940", 9, 4), ("gfx941", 9, 4),
    ("gfx942", 9, 4), ("gfx1010", 10, 1), ("gfx1030", 10, 3), ("gfx1100", 11, 0), ("gfx1101", 11, 0),
    ("gfx1102", 11, 0), ("gfx1150", 11, 5), ("gfx1151", 11, 5), ("gfx1200", 12, 0), ("gfx1201", 12, 0),
]


@pytest.mark.parametrize(("arch", "major", "minor"), CAPABILITY)
def test_a_hip_build_reports_the_isa_version_as_the_capability(become, arch: str, major: int, minor: int) -> None:
    become(amd(arch))
    props = torch.cuda.get_device_properties(0)
    assert torch.cuda.get_device_capability(0) == (major, minor)
    assert (props.major, props.minor) == (major, minor)


# (arch as the host writes it, gcnArchName): HIP answers the ISA's target id.
GCN_ARCH_NAME = [
    ("gfx900", "gfx900:xnack-"), ("gfx906", "gfx906:sramecc+:xnack-"), ("gfx908", "gfx908:sramecc+:xnack-"),
    ("gfx90a", "gfx90a:sramecc+:xnack-"), ("gfx942", "gfx942:sramecc+:xnack-"), ("gfx950", "gfx950:sramecc+:xnack-"),
    ("gfx1010", "gfx1010:xnack-"), ("gfx1030", "gfx1030"), ("gfx1100", "gfx1100"), ("gfx1151", "gfx1151"),
    ("gfx1200", "gfx1200"), ("gfx1201", "gfx1201"),
    # a profile that names features keeps them: a Radeon VII runs gfx906 with ECC off
    ("gfx906:sramecc-:xnack-", "gfx906:sramecc-:xnack-"), ("gfx90a:sramecc+:xnack+", "gfx90a:sramecc+:xnack+"),
]


@pytest.mark.parametrize(("arch", "expected"), GCN_ARCH_NAME)
def test_gcn_arch_name_carries_the_targets_features(become, arch: str, expected: str) -> None:
    become(amd(arch))
    assert torch.cuda.get_device_properties(0).gcnArchName == expected
    assert torch.cuda.get_device_properties("cuda:0").gcnArchName.split(":")[0] == arch.split(":")[0]


def test_a_cuda_build_answers_gcn_arch_name_with_a_fixed_text(become) -> None:
    become(H200X2)
    assert torch.cuda.get_device_properties(1).gcnArchName == "NVIDIA"


@pytest.mark.parametrize(("message", "expected"), [
    (amd("gfx1030"), list(DEFAULT_ARCH_LIST["hip"])),
    (H200X2, ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]),
    ({**amd("gfx1030"), "arch_list": ["gfx1100"]}, ["gfx1100"]),  # sparse: the build lacks this GPU's arch
    ({**H200X2, "arch_list": ["sm_90", "compute_90"]}, ["sm_90", "compute_90"]),
    (CPU, []),
    ({**amd("gfx942", "gfx942"), "visible": []}, []),  # no GPU available: torch lists none
])
def test_the_arch_list_is_the_builds(become, message: dict[str, Any], expected: list[str]) -> None:
    become(message)
    assert torch.cuda.get_arch_list() == expected


def test_the_default_hip_arch_list_covers_the_release_wheels_targets() -> None:
    hip = DEFAULT_ARCH_LIST["hip"]
    assert {"gfx906", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1151", "gfx1201"} <= set(hip)
    assert len(set(hip)) == len(hip)


@pytest.mark.parametrize(("message", "hip", "cuda"), [
    ({**amd("gfx942"), "runtime_version": "6.4.43482-0f2d60242"}, "6.4.43482-0f2d60242", None),
    (amd("gfx942"), "7.1.25424", None),
    ({**H200X2, "runtime_version": "12.8"}, None, "12.8"),
    (CPU, None, None),
])
def test_the_build_reports_its_runtime_version(become, message: dict[str, Any], hip: str | None,
                                               cuda: str | None) -> None:
    become(message)
    assert (torch.version.hip, torch.version.cuda) == (hip, cuda)


CPU_QUERIES = [
    torch.cuda.get_device_properties, torch.cuda.get_device_capability, torch.cuda.get_device_name,
    torch.cuda.mem_get_info, torch.cuda.memory_stats, torch.cuda.memory_allocated, torch.cuda.memory_reserved,
    torch.cuda.max_memory_allocated,
]


@pytest.mark.parametrize("query", CPU_QUERIES, ids=lambda q: q.__name__)
@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")], ids=["str", "device"])
def test_a_cpu_device_in_a_gpu_query_raises_torchs_value_error(become, query: Any, device: Any) -> None:
    become(amd("gfx1030"))
    with pytest.raises(ValueError, match=r"^Expected a cuda device, but got: cpu$"):
        query(device)


def expected_stat_keys() -> set[str]:
    """The flat keys of a real allocator's statistics, from memory_stats' documented layout."""
    keys = {"num_alloc_retries", "num_ooms", "max_split_size", "num_sync_all_streams", "num_device_alloc",
            "num_device_free"}
    for array in ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                  "active_bytes", "inactive_split_bytes", "requested_bytes"):
        keys |= {f"{array}.{pool}.{field}" for pool in ("all", "small_pool", "large_pool")
                 for field in ("current", "peak", "allocated", "freed")}
    for single in ("oversize_allocations", "oversize_segments"):
        keys |= {f"{single}.{field}" for field in ("current", "peak", "allocated", "freed")}
    return keys


def test_memory_stats_have_a_real_allocators_keys_and_types(become) -> None:
    become(amd("gfx1030"))
    stats = torch.cuda.memory_stats(0)
    assert set(stats) == expected_stat_keys() and len(stats) == 122
    assert list(stats) == sorted(stats), "torch sorts the flattened keys"
    assert all(type(v) is int for v in stats.values())
    assert stats["reserved_bytes.all.current"] == 0 and stats["max_split_size"] == -1


def test_the_memory_api_answers_from_the_hosts_memory_consistently(become) -> None:
    become(amd("gfx942", "gfx1030", memory_mib=16368))
    total = 16368 * 1024 * 1024
    for device in (0, 1, "cuda:1", torch.device("cuda", 0)):
        free, size = torch.cuda.mem_get_info(device)
        stats = torch.cuda.memory_stats(device)
        assert size == total == torch.cuda.get_device_properties(device).total_memory
        assert free == size - stats["reserved_bytes.all.current"]
        assert torch.cuda.memory_allocated(device) == stats["allocated_bytes.all.current"] == 0
        assert torch.cuda.memory_reserved(device) == stats["reserved_bytes.all.current"]
        assert torch.cuda.max_memory_allocated(device) >= torch.cuda.memory_allocated(device)
    torch.cuda.set_device(1)
    assert torch.cuda.mem_get_info() == (total, total)
    torch.cuda.reset_peak_memory_stats()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.cuda.memory_stats(2)


def test_the_memory_api_on_a_cpu_build_is_torchs(become) -> None:
    become(CPU)
    assert torch.cuda.memory_stats() == {} and torch.cuda.memory_allocated() == 0
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.cuda.mem_get_info()


FIRST_GFX = re.compile(r"Name:\s+gfx([a-zA-Z\d]+)")  # how bitsandbytes' get_rocm_gpu_arch reads rocminfo


@pytest.mark.parametrize("archs", [("gfx942:sramecc+:xnack-", "gfx1201"), ("gfx1201", "gfx942"), ("gfx1030",)])
def test_rocminfo_lists_device_0_first_on_a_mixed_box(archs: tuple[str, ...]) -> None:
    text = rocminfo_text(Host.from_message(amd(*archs)))
    names = re.findall(r"^  Name:\s+(gfx\w+)$", text, re.MULTILINE)
    assert names == [a.split(":")[0] for a in archs]
    assert FIRST_GFX.search(text).group(1) == archs[0].split(":")[0][3:]  # type: ignore[union-attr]
    isas = re.findall(r"amdgcn-amd-amdhsa--(\S+)", text)
    assert isas == [Host.from_message(amd(a)).gpus[0].gcn_arch_name for a in archs]
    assert re.findall(r"^  Uuid:\s+(\S+)$", text, re.MULTILINE)[1:] == [f"GPU-{i:016x}" for i in range(len(archs))]


# (the profile's env, the child's env, the GPUs the child's runtime exposes) on a two-GPU HIP box
STACKED = [
    ({}, {}, [0, 1]),
    ({}, {"HIP_VISIBLE_DEVICES": "1"}, [1]),
    ({}, {"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"}, []),  # unsloth #6118: the masks stack
    ({}, {"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0"}, [1]),
    ({}, {"CUDA_VISIBLE_DEVICES": "1"}, [1]),  # HIP reads CUDA_VISIBLE_DEVICES when its own is unset
    ({}, {"HIP_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "1"}, [0]),  # ... and only then
    ({"HIP_VISIBLE_DEVICES": "1"}, {"HIP_VISIBLE_DEVICES": "1"}, [1]),  # the profile's own: unchanged
]


@needs_devsim
@pytest.mark.parametrize(("profile_env", "child_env", "runtime"), STACKED)
def test_a_child_with_its_own_masks_sees_what_they_leave(profile_env: dict[str, str], child_env: dict[str, str],
                                                         runtime: list[int]) -> None:
    message = {**amd("gfx1201", "gfx1201"), "env": profile_env, "visible": [1] if profile_env else [0, 1]}
    child = stacked_host(message, child_env, str(devsim_binary()))
    assert child["visible"] == runtime and Host.from_message(child).visible == tuple(runtime)


@needs_devsim
def test_rocminfo_reads_the_callers_rocr_mask(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DEVSIM", str(devsim_binary()))
    box = Host.from_message(amd("gfx942:sramecc+:xnack-", "gfx1201"))
    tool = RocmInfo(lambda: box, Recorder()).install()
    try:
        env = {**os.environ, "ROCR_VISIBLE_DEVICES": "1"}
        done = subprocess.run(["rocminfo"], capture_output=True, text=True, env=env, check=False)
        assert re.findall(r"^  Name:\s+(gfx\w+)$", done.stdout, re.MULTILINE) == ["gfx1201"]
    finally:
        tool.uninstall()
    write_shims(tmp_path, box, "mixed")
    for mask, listed in ((None, ["gfx942", "gfx1201"]), ("1,0", ["gfx1201", "gfx942"]), ("1", ["gfx1201"]),
                         ("", [])):
        env = {k: v for k, v in os.environ.items() if k != "ROCR_VISIBLE_DEVICES"}
        env |= {} if mask is None else {"ROCR_VISIBLE_DEVICES": mask}
        done = subprocess.run([str(tmp_path / "rocminfo")], capture_output=True, text=True, env=env, check=True)
        assert re.findall(r"^  Name:\s+(gfx\w+)$", done.stdout, re.MULTILINE) == listed, mask
    listed = json.loads(subprocess.run([str(tmp_path / "amd-smi"), "list", "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    assert [g["gpu"] for g in listed] == [0, 1], "amd-smi ignores the masks: it lists the box"
