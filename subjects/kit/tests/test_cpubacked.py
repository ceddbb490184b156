"""CPU-backed tensors on a simulated host follow torch's device rules for a GPU host, with real values."""

from __future__ import annotations

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
