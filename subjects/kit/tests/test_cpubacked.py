"""CPU-backed tensors on a simulated host follow torch's device rules for a GPU host, with real values."""

from __future__ import annotations

from typing import Self

import pytest

torch = pytest.importorskip("torch")

from devsim_subject_kit import Host
from devsim_subject_kit.cpubacked import CpuBacked, CpuBackedGpus
from devsim_subject_kit.simtorch import SimulatedTorch
from devsim_subject_kit.testing import H200X2

RUNTIME = SimulatedTorch()


@pytest.fixture
def h200x2():
    RUNTIME.install(Host.from_message(H200X2))
    yield
    RUNTIME.uninstall()


def test_factories_and_moves_land_where_torch_puts_them(h200x2):
    with CpuBackedGpus():
        made = torch.ones(2, 3, device="cuda:1")
        moved = torch.zeros(3).to(torch.device("cuda", 0))
        torch.cuda.set_device(1)
        indexless = torch.empty(1, device="cuda")
        on_cpu = torch.ones(2)
    assert isinstance(made, CpuBacked) and made.device == torch.device("cuda", 1)
    assert moved.device == torch.device("cuda", 0)
    assert indexless.device == torch.device("cuda", 1), "an indexless cuda is the current device"
    assert type(on_cpu) is torch.Tensor and on_cpu.device.type == "cpu"


def test_values_are_computed_and_readable(h200x2):
    with CpuBackedGpus():
        x = torch.arange(6, dtype=torch.float32, device="cuda:1").reshape(2, 3)
        total = (x @ x.T).sum()
        assert total.device == torch.device("cuda", 1)
        assert total.item() == 0 * 0 + 1 + 4 + 9 + 16 + 25 + 2 * (0 * 3 + 1 * 4 + 2 * 5)
        assert bool((x > 2).any()), "a branch on a value runs, as fake tensors cannot"
        assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        with pytest.raises(TypeError, match="can't convert cuda:1 device type tensor to numpy"):
            x.numpy()


def test_mixed_devices_are_torchs_own_error(h200x2):
    with CpuBackedGpus():
        a = torch.ones(2, device="cuda:0")
        b = torch.ones(2, device="cuda:1")
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            _ = a + b
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            _ = a + torch.ones(2)
        scaled = a * torch.tensor(2.0)  # a CPU scalar tensor may join a GPU tensor, as torch allows
    assert scaled.device == torch.device("cuda", 0)


def test_copies_keep_their_destination_and_in_place_ops_return_their_tensor(h200x2):
    with CpuBackedGpus():
        destination = torch.zeros(3, device="cuda:1")
        returned = destination.copy_(torch.arange(3, dtype=torch.float32))
        added = destination.add_(1)
        assert returned is destination and added is destination
        assert destination.device == torch.device("cuda", 1)
        assert destination.tolist() == [1.0, 2.0, 3.0]
        back = destination.cpu()
    assert type(back) is torch.Tensor and back.tolist() == [1.0, 2.0, 3.0]


def test_moves_and_indexing_behave_as_on_a_gpu(h200x2):
    with CpuBackedGpus():
        x = torch.arange(8, dtype=torch.int32, device="cuda:1").reshape(2, 4)
        assert x.to("cuda:1") is x and x.to(torch.int32) is x, "a move to where it is already is no copy"
        half = x.to(torch.float16)
        assert half.device == torch.device("cuda", 1) and half.dtype == torch.float16
        cpu = x.cpu()
        assert type(cpu) is torch.Tensor and cpu.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
        moved = x.cuda(0)
        assert moved.device == torch.device("cuda", 0) and moved.is_cuda and not moved.is_cpu
        picked = x[:, [3, 0]]  # the list becomes a CPU index tensor, which torch moves to the GPU
        assert picked.device == torch.device("cuda", 1) and picked.tolist() == [[3, 0], [7, 4]]
        assert x.contiguous().get_device() == 1


def test_an_op_without_a_cpu_kernel_fails_with_torchs_error(h200x2):
    library = torch.library.Library("devsim_cpubacked_test", "DEF")  # noqa: TOR901 - a scratch namespace
    library.define("cuda_only(Tensor x) -> Tensor")
    library.impl("cuda_only", lambda x: x, "CUDA")
    with CpuBackedGpus():
        x = torch.ones(4, device="cuda:0")
        with pytest.raises(NotImplementedError, match="with arguments from the 'CPU' backend"):
            torch.ops.devsim_cpubacked_test.cuda_only(x)


def test_each_tensor_has_its_own_data_address(h200x2):
    """Native code and caches keyed by a weight's address (GGUF Triton's plan cache) see distinct, readable
    addresses, as on a GPU host, never torch's 0 for a tensor without storage."""
    with CpuBackedGpus():
        first, second = torch.ones(4, device="cuda:1"), torch.ones(4, device="cuda:1")
    assert isinstance(first, CpuBacked) and isinstance(second, CpuBacked)
    assert first.data_ptr() == first.data_on_cpu.data_ptr() != 0
    assert first.data_ptr() != second.data_ptr()


def test_an_indexless_cuda_move_asks_the_simulated_current_device(h200x2):
    torch.cuda.set_device(1)
    with CpuBackedGpus():
        moves = [torch.zeros(2).to("cuda"), torch.zeros(2).to(device="cuda", dtype=torch.float16),
                 torch.zeros(2).cuda(), torch.tensor([1.0, 2.0], device="cuda"), torch.as_tensor([3], device="cuda")]
    assert [m.device for m in moves] == [torch.device("cuda", 1)] * len(moves), "torch's own lookup asks the driver"
    assert moves[1].dtype == torch.float16


class Quantized(torch.nn.Parameter):
    """A project's Parameter subclass, made as bitsandbytes makes `Int8Params`."""

    def __new__(cls, data: torch.Tensor, scale: float = 1.0) -> Self:
        made = torch.Tensor._make_subclass(cls, data, False)
        made.scale = scale
        return made


def test_a_projects_parameter_subclass_lives_on_the_simulated_gpu(h200x2):
    with CpuBackedGpus():
        made_there = Quantized(torch.ones(2, device="cuda:1"), scale=2.0)
        given_data = Quantized(torch.ones(2))
        given_data.data = torch.full((2,), 3.0, device="cuda:0")
        doubled = made_there * made_there.scale
    assert isinstance(made_there, Quantized) and isinstance(made_there, CpuBacked)
    assert type(made_there).__name__ == "Quantized" and made_there.device == torch.device("cuda", 1)
    assert isinstance(given_data, Quantized) and given_data.device == torch.device("cuda", 0)
    assert doubled.tolist() == [2.0, 2.0] and given_data.tolist() == [3.0, 3.0]
    assert "data" not in vars(torch.Tensor) and "_make_subclass" not in vars(torch.Tensor), "the mode put torch back"


def test_saved_and_copied_tensors_keep_their_gpu(h200x2, tmp_path):
    import copy

    with CpuBackedGpus():
        x = torch.arange(3.0, device="cuda:1")
        torch.save({"x": x}, tmp_path / "x.pt")
        loaded = torch.load(tmp_path / "x.pt")  # torch's default: weights only
        copied = copy.deepcopy(x)
    assert loaded["x"].device == torch.device("cuda", 1) and loaded["x"].tolist() == [0.0, 1.0, 2.0]
    assert copied.device == torch.device("cuda", 1) and copied.data_ptr() != x.data_ptr()


def test_backward_through_a_cast_keeps_gradients_on_the_gpu(h200x2):
    with CpuBackedGpus():
        weight = torch.nn.Linear(4, 2).half().to("cuda:0")
        x = torch.ones(3, 4, dtype=torch.half, device="cuda:0", requires_grad=True)
        weight(x).float().sum().backward()
        moved_out = x.detach().cpu()
    assert x.grad is not None and x.grad.device == torch.device("cuda", 0)
    assert weight.weight.grad is not None and weight.weight.grad.device == torch.device("cuda", 0)
    assert moved_out.device.type == "cpu", "a move the caller asks for still reaches the CPU"
