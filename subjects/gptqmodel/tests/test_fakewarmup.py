"""The simulated warmup's fake-tensor mode places tensors as torch places them on a real GPU host (in-process: this
test process's torch is patched by the kit's simulated host, and restored after each test)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from devsim_subject_gptqmodel import fakewarmup
from devsim_subject_kit import Host
from devsim_subject_kit.simtorch import SimulatedTorch
from devsim_subject_kit.testing import R9700X2


@pytest.fixture
def gpu1_current():
    runtime = SimulatedTorch().install(Host.from_message({**R9700X2, "current": 1}))
    yield runtime
    runtime.uninstall()


def packed(tensor):
    """A module holding its weights as buffers, as GPTQModel's quant-linears do."""
    module = torch.nn.Module()
    module.register_buffer("qweight", tensor)
    return module


def placed(move):
    """The device `move` puts a fresh CPU tensor on, under the simulated warmup's modes."""
    with fakewarmup._NoGpuFakeMode(allow_non_fake_inputs=True), fakewarmup._CurrentGpuIndex():
        return str(move(torch.zeros(4, dtype=torch.int32)))


@pytest.mark.parametrize("name, move, device", [
    # indexless: torch's C++ device guard would answer GPU 0 on a machine without a GPU; the host says GPU 1
    ("to(torch.device('cuda'))", lambda t: t.to(torch.device("cuda")).device, "cuda:1"),
    ("to('cuda')", lambda t: t.to("cuda").device, "cuda:1"),
    ("to(device='cuda', dtype)", lambda t: t.to(device="cuda", dtype=torch.float16).device, "cuda:1"),
    ("cuda()", lambda t: t.cuda().device, "cuda:1"),
    ("empty(device='cuda')", lambda t: torch.empty(2, device="cuda").device, "cuda:1"),
    ("Module.to('cuda')", lambda t: packed(t).to("cuda").qweight.device, "cuda:1"),
    # an explicit index is kept
    ("to('cuda:0')", lambda t: t.to("cuda:0").device, "cuda:0"),
    ("cuda(0)", lambda t: t.cuda(0).device, "cuda:0"),
    # one-element tensors are fake too (torch would otherwise move them for real: no GPU here)
    ("one element to('cuda:1')", lambda t: t[:1].to("cuda:1").device, "cuda:1"),
])
def test_an_indexless_gpu_is_the_current_gpu(gpu1_current, name, move, device):
    assert placed(move) == device, name


def test_a_triton_launch_on_fake_tensors_is_checked_not_run(gpu1_current):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def copy(src, dst, n: tl.constexpr):
        pass

    with fakewarmup._NoGpuFakeMode(allow_non_fake_inputs=True), fakewarmup._triton_launches_on_fake_tensors():
        on_current = torch.zeros(4).to("cuda:1")
        copy[(1,)](on_current, on_current, 4)  # on the current GPU: nothing runs, nothing fails
        elsewhere = torch.zeros(4).to("cuda:0")
        with pytest.raises(fakewarmup.Unsimulable, match="current GPU 1 with tensors on cuda:0"):
            copy[(1,)](elsewhere, elsewhere, 4)
