"""The kit's second counting mode: torch's own device counting runs, on the kit's fakes below it.

Each case is a box and its visible-device variables. devsim gives both of its views (`devsim visible
--stdin-jsonl`, the interface tools/torch_visible/diff.py checks against torch): torch's count and the
runtime's ordinals. With counting="torch", torch 2.11's own `device_count()` (its mask parsing, UUID matching
and trimming) runs with only NVML, amdsmi and the runtime's count answered by the kit, and must give devsim's
torch count, while the host the kit simulates exposes the runtime's ordinals."""

from __future__ import annotations

import json
import subprocess

import pytest

torch = pytest.importorskip("torch")

from conftest import devsim_binary
from devsim_subject_kit import Host
from devsim_subject_kit.host import Gpu
from devsim_subject_kit.simtorch import SimulatedTorch

NVIDIA = [Gpu("sm_80", "NVIDIA A100", uuid="GPU-00000000-0000-4000-8000-000000000000"),
          Gpu("sm_90", "NVIDIA H200", uuid="GPU-00000001-0000-4000-8000-000000000000")]
AMD = [Gpu("gfx942:sramecc+:xnack-", "AMD Instinct MI300X", uuid="0000000000000000"),
       Gpu("gfx1201", "AMD Radeon AI PRO R9700", uuid="0000000000000001")]

# name -> (build, visible-device variables)
CASES = {
    "cuda_reversed": ("cuda", {"CUDA_VISIBLE_DEVICES": "1,0"}),
    "cuda_one": ("cuda", {"CUDA_VISIBLE_DEVICES": "1"}),
    "cuda_stops_at_missing": ("cuda", {"CUDA_VISIBLE_DEVICES": "0,5,1"}),
    "cuda_uuid_prefix": ("cuda", {"CUDA_VISIBLE_DEVICES": "GPU-00000001"}),
    "cuda_ambiguous_prefix": ("cuda", {"CUDA_VISIBLE_DEVICES": "GPU-0000000"}),
    "cuda_repeat": ("cuda", {"CUDA_VISIBLE_DEVICES": "0,0"}),
    "cuda_empty": ("cuda", {"CUDA_VISIBLE_DEVICES": ""}),
    "cuda_plain": ("cuda", {}),
    "hip_reversed": ("hip", {"HIP_VISIBLE_DEVICES": "1,0"}),
    "hip_cuda_mask_applies": ("hip", {"CUDA_VISIBLE_DEVICES": "1"}),
    "hip_trimmed": ("hip", {"HIP_VISIBLE_DEVICES": "0,1,2"}),
    "hip_serial": ("hip", {"HIP_VISIBLE_DEVICES": "0000000000000001"}),
    "hip_gpu_serial": ("hip", {"HIP_VISIBLE_DEVICES": "GPU-0000000000000001"}),
    "hip_rocr": ("hip", {"ROCR_VISIBLE_DEVICES": "1"}),
    "hip_plain": ("hip", {}),
}


def gpus(build: str) -> list[Gpu]:
    return NVIDIA if build == "cuda" else AMD


@pytest.fixture(scope="module")
def views() -> dict[str, dict]:
    devsim = devsim_binary()
    if devsim is None:
        pytest.skip("no devsim binary: set $DEVSIM or cargo build")
    names = sorted(CASES)
    lines = "".join(json.dumps({"build": CASES[n][0], "uuids": [g.uuid for g in gpus(CASES[n][0])],
                                "env": CASES[n][1]}) + "\n" for n in names)
    done = subprocess.run([devsim, "visible", "--stdin-jsonl"], input=lines, capture_output=True, text=True,
                          timeout=60, check=True)
    return dict(zip(names, (json.loads(line) for line in done.stdout.splitlines()), strict=True))


@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_own_count_on_the_fakes_is_devsim_torch_view(name: str, views: dict[str, dict]):
    build, env = CASES[name]
    view = views[name]
    host = Host(torch=build, gpus=tuple(gpus(build)), env=tuple(sorted(env.items())),
                visible=tuple(view["runtime"]))
    runtime = SimulatedTorch(counting="torch")
    runtime.install(host)
    try:
        with runtime.recorder.capture() as trace:
            count = torch.cuda.device_count()
        available = torch.cuda.is_available()
    finally:
        runtime.uninstall()
    assert count == view["torch_count"], (env, view)
    assert available == (len(view["runtime"]) > 0)  # is_available asks the runtime (no NVML-based check)
    if count:  # a count torch did not parse to zero itself came from below it
        assert any(e["event"] == "device_count" for e in trace), trace


def test_a_cpu_build_counts_nothing():
    runtime = SimulatedTorch(counting="torch").install(Host())
    try:
        assert torch.cuda.device_count() == 0 and torch.cuda.is_available() is False
    finally:
        runtime.uninstall()


def test_torch_counting_mode_runs_torch_own_functions_and_restores_what_it_answered():
    own, raw = torch.cuda.device_count, torch.cuda._raw_device_count_nvml
    runtime = SimulatedTorch(counting="torch").install(Host(torch="cuda", gpus=tuple(NVIDIA), visible=(0, 1)))
    try:
        assert torch.cuda.device_count is own  # torch's own function runs
        assert torch.cuda._raw_device_count_nvml is not raw  # what it asks below itself is answered
    finally:
        runtime.uninstall()
    assert torch.cuda.device_count is own and torch.cuda._raw_device_count_nvml is raw


def test_an_unknown_counting_mode_is_refused():
    with pytest.raises(ValueError, match="counting is 'simulated' or 'torch'"):
        SimulatedTorch(counting="nvml")  # type: ignore[arg-type]
