"""The simulated warmup's tensor modes (fake tensors, then CPU-backed ones for a forward that reads a value) place
tensors as torch places them on a real GPU host (in-process: this test process's torch is patched by the kit's
simulated host, and restored after each test)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from devsim_subject_gptqmodel import fakewarmup
from devsim_subject_kit import Host
from devsim_subject_kit.cpubacked import CpuBackedGpus
from devsim_subject_kit.recorder import Recorder
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


MODES = {
    "fake": lambda: fakewarmup._NoGpuFakeMode(allow_non_fake_inputs=True),
    "cpu-backed": CpuBackedGpus,
}


def placed(move, mode="fake"):
    """The device `move` puts a fresh CPU tensor on, under the simulated warmup's modes."""
    with MODES[mode](), fakewarmup._CurrentGpuIndex():
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
@pytest.mark.parametrize("mode", sorted(MODES))
def test_an_indexless_gpu_is_the_current_gpu(gpu1_current, name, move, device, mode):
    assert placed(move, mode) == device, name


class ReadsAValue(torch.nn.Module):
    """A forward that branches on a value, as GPTQModel's Triton and Paro kernels do (`.item()`)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(1, dtype=torch.float16))

    def forward(self, x):
        torch.cuda.current_device()  # a trace event, once per attempt
        return x * self.scale if self.scale.item() > 0 else x


def test_a_forward_that_reads_a_value_runs_on_cpu_backed_tensors(gpu1_current):
    recorder = gpu1_current.recorder
    with recorder.capture() as events:
        assert fakewarmup.ran_on(ReadsAValue, torch.device("cuda"), recorder) == 1
    # the fake attempt failed at `.item()`, after its forward's get_device: only the CPU-backed attempt's remain
    with recorder.capture() as once, pytest.raises(fakewarmup.Unsimulable):
        fakewarmup._forward_device(ReadsAValue(), torch.device("cuda"), fakewarmup._NoGpuFakeMode())
    assert ("get_device", 1) in [(e["event"], e.get("device")) for e in once]
    with recorder.capture() as cpu_backed:
        fakewarmup._forward_device(ReadsAValue(), torch.device("cuda"), CpuBackedGpus())
    assert events == cpu_backed, "the failed fake attempt leaves no events behind"


class HandsOutItsInput(torch.nn.Module):
    """A forward that gives its input's data pointer to native code, as GGUFCppKernel hands tensors to GGML through
    ctypes (here it only keeps the pointers it was given)."""

    def __init__(self):
        super().__init__()
        self.pointers = []

    def forward(self, x):
        self.pointers.append(x.data_ptr())
        return x + 1


def test_a_fake_tensors_data_pointer_is_refused_and_the_forward_runs_with_values(gpu1_current):
    # a fake tensor has no data: a pointer native code reads would crash the process (a CPU GGUF warmup did)
    with fakewarmup._NoGpuFakeMode(allow_non_fake_inputs=True), pytest.raises(RuntimeError, match="data pointer"):
        torch.zeros(2).data_ptr()
    built = []

    def build():
        built.append(HandsOutItsInput())
        return built[-1]

    assert fakewarmup.ran_on(build, torch.device("cpu"), Recorder()) == "cpu"
    assert [len(module.pointers) for module in built] == [0, 1], "only the attempt with values hands a pointer out"
    assert built[1].pointers[0] != 0


def test_a_cpu_output_on_cpu_backed_tensors_is_no_observation(gpu1_current):
    class ReadsThenReturnsOnTheCpu(ReadsAValue):
        def forward(self, x):
            return x.cpu() if self.scale.item() > 0 else x

    # on fake tensors a CPU output is GPTQModel's own placement; on CPU-backed ones it may be torch's C++ default
    with pytest.raises(fakewarmup.Unsimulable, match="returned a plain CPU tensor"):
        fakewarmup.ran_on(ReadsThenReturnsOnTheCpu, torch.device("cuda", 0), Recorder())

    class ReturnsOnTheCpu(torch.nn.Module):
        def forward(self, x):
            return x.cpu()

    assert fakewarmup.ran_on(ReturnsOnTheCpu, torch.device("cuda", 0), Recorder()) == "cpu"


def test_a_forward_neither_mode_can_run_is_unsimulable_with_both_reasons(gpu1_current):
    class ReadsThenNeedsANativeOp(ReadsAValue):
        def forward(self, x):
            if self.scale.item() > 0:  # fake tensors stop here, CPU-backed ones go on
                raise RuntimeError("required torch.ops namespace `gptqmodel_x` is unavailable.")
            return x

    with pytest.raises(fakewarmup.Unsimulable, match="fake tensors cannot run: DataDependentOutputException.*"
                       "with its values on the CPU.*CPU-backed tensors cannot run: RuntimeError: required"):
        fakewarmup.ran_on(ReadsThenNeedsANativeOp, torch.device("cuda", 0), Recorder())


def test_an_error_of_the_project_itself_is_not_retried_with_values(gpu1_current):
    built = []

    class NeedsANativeOp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            built.append(self)

        def forward(self, x):
            raise RuntimeError("required torch.ops namespace `gptqmodel_x` is unavailable.")

    with pytest.raises(fakewarmup.Unsimulable, match="namespace `gptqmodel_x` is unavailable.; not retried"):
        fakewarmup.ran_on(NeedsANativeOp, torch.device("cuda", 0), Recorder())
    assert len(built) == 1


def test_a_module_that_cannot_be_built_is_not_built_twice(gpu1_current):
    built = []

    def build():
        built.append(1)
        raise fakewarmup.Unsimulable("X could not be built: TypeError: no")

    with pytest.raises(fakewarmup.Unsimulable, match="could not be built"):
        fakewarmup.ran_on(build, torch.device("cuda", 0), Recorder())
    assert built == [1]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_triton_launch_on_simulated_tensors_is_checked_not_run(gpu1_current, mode):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def copy(src, dst, n: tl.constexpr):
        pass

    with MODES[mode](), fakewarmup._triton_launches_on_simulated_tensors():
        on_current = torch.zeros(4).to("cuda:1")
        copy[(1,)](on_current, on_current, 4)  # on the current GPU: nothing runs, nothing fails
        elsewhere = torch.zeros(4).to("cuda:0")
        with pytest.raises(fakewarmup.Unsimulable, match="current GPU 1 with tensors on cuda:0"):
            copy[(1,)](elsewhere, elsewhere, 4)
