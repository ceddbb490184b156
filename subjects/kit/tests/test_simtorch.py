"""The simulated torch follows torch's semantics (in-process: this test process's torch gets patched, and
restored after each test)."""

from __future__ import annotations

import threading
import types

import pytest

torch = pytest.importorskip("torch")

from devsim_subject_kit import Host
from devsim_subject_kit.simtorch import SimulatedTorch
from devsim_subject_kit.testing import AMD_MIXED, CPU, H200X2

RUNTIME = SimulatedTorch()
RECORDER = RUNTIME.recorder
MOVES = RUNTIME.moves


@pytest.fixture
def become():
    def _become(host: dict) -> None:
        RUNTIME.install(Host.from_message(host))

    yield _become
    RUNTIME.uninstall()


def names(events):
    return [(e["event"], e.get("device")) for e in events]


def test_device_context_switches_and_restores(become):
    become(AMD_MIXED)
    with RECORDER.capture() as events:
        with torch.cuda.device(1):
            assert torch.cuda.current_device() == 1
        with torch.cuda.device("cuda"):  # indexless: the current device, no switch
            pass
    assert names(events) == [
        ("get_device", 0), ("set_device", 1), ("get_device", 1), ("set_device", 0),
        ("get_device", 0), ("get_device", 0),
    ]
    assert RUNTIME.current() == 0


def test_capabilities_and_arch_queries(become):
    become(AMD_MIXED)
    with RECORDER.capture() as events:
        assert torch.cuda.get_device_capability(0) == (9, 4)
        assert torch.cuda.get_device_capability(1) == (12, 0)
        assert torch.cuda.get_device_properties(0).gcnArchName == "gfx942:sramecc+:xnack-"
        assert torch.cuda.get_device_name(1) == "AMD Radeon AI PRO R9700"
    assert names(events) == [("nvidia_capability", 0), ("nvidia_capability", 1), ("amd_arch", 0), ("device_name", 1)]
    assert torch.version.hip is not None and torch.version.cuda is None
    become(H200X2)
    with RECORDER.capture() as events:
        props = torch.cuda.get_device_properties(1)
        assert (props.major, props.minor) == (9, 0)
        assert props.shared_memory_per_block_optin == 232448
        assert props.gcnArchName == "NVIDIA"  # CUDA builds never answer an arch, but the question is recorded
    assert [e["event"] for e in events] == ["nvidia_capability", "nvidia_capability", "smem_optin", "amd_arch"]
    assert torch.version.hip is None and torch.version.cuda is not None


def test_torch_reading_device_properties_for_itself_is_not_a_probe(become):
    """Torch's own code (torch.utils._triton.has_triton reads `major`) is not the code under test: its reads are
    not recorded; the same reads from anywhere else are."""
    become(AMD_MIXED)

    def read():
        props = torch.cuda.get_device_properties(0)
        return props.major, props.gcnArchName, torch.cuda.get_device_capability(0)

    # the same code, as a function of a torch module
    read_by_torch = types.FunctionType(read.__code__, {"__name__": "torch.utils._triton", "torch": torch})
    with RECORDER.capture() as events:
        assert read_by_torch() == (9, "gfx942:sramecc+:xnack-", (9, 4))
    assert events == []
    with RECORDER.capture() as events:
        assert read() == (9, "gfx942:sramecc+:xnack-", (9, 4))
    assert names(events) == [("nvidia_capability", 0), ("amd_arch", 0), ("nvidia_capability", 0)]


def test_bad_ordinals_raise_like_torch(become):
    become(AMD_MIXED)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.cuda.set_device(2)
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.cuda.get_device_properties(5)
    become(CPU)
    assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        torch.cuda.current_device()


def test_current_device_is_per_thread(become):
    become({**AMD_MIXED, "current": 1})
    seen = []
    worker = threading.Thread(target=lambda: seen.append(torch.cuda.current_device()))
    worker.start()
    worker.join()
    assert seen == [0] and torch.cuda.current_device() == 1


def test_events_from_other_threads_are_not_recorded(become):
    become(AMD_MIXED)
    with RECORDER.capture() as events:
        worker = threading.Thread(target=lambda: torch.cuda.set_device(1))
        worker.start()
        worker.join()
    assert events == []


def test_moves_land_where_torch_would(become):
    become({**H200X2, "current": 1})
    with MOVES.capture() as landings:
        x = torch.zeros(2)
        x.to("cuda")
        x.to(torch.device("cuda", 0))
        x.to(device="cuda:1", dtype=torch.float16)
        x.to("cpu")
    assert [landed for _, landed in landings] == [1, 0, 1]
    assert x.to("cpu").device.type == "cpu"  # outside a capture, .to is torch's own


def test_uninstall_restores_torch():
    own = (torch.cuda.device_count, torch.cuda.get_device_properties, torch.Tensor.to, torch.version.hip)
    RUNTIME.install(Host.from_message(AMD_MIXED))
    assert torch.cuda.device_count() == 2 and torch.version.hip is not None
    RUNTIME.uninstall()
    assert (torch.cuda.device_count, torch.cuda.get_device_properties, torch.Tensor.to, torch.version.hip) == own


def test_one_torch_host_at_a_time():
    RUNTIME.install(Host())
    try:
        with pytest.raises(RuntimeError, match="another torch host is installed"):
            SimulatedTorch().install(Host())
    finally:
        RUNTIME.uninstall()


def test_the_runtime_version_is_the_hosts():
    RUNTIME.install(Host.from_message({**AMD_MIXED, "runtime_version": "6.4.43482"}))
    try:
        assert torch.version.hip == "6.4.43482" and torch.version.cuda is None
    finally:
        RUNTIME.uninstall()


def test_seeding_reaches_one_generator_per_simulated_gpu(become):
    """torch.manual_seed seeds every GPU's generator (a project's conftest often does); on a simulated host they
    are CPU generators, one per visible GPU, and torch.cuda's RNG-state functions index them by ordinal."""
    become(H200X2)
    torch.manual_seed(1234)
    assert len(torch.cuda.default_generators) == 2
    assert all(g.initial_seed() == 1234 for g in torch.cuda.default_generators)
    state = torch.cuda.get_rng_state(1)
    torch.cuda.manual_seed(7)  # the current device's generator only
    assert torch.cuda.default_generators[0].initial_seed() == 7
    torch.cuda.set_rng_state(state, 1)
    become(CPU)
    assert torch.cuda.default_generators == ()
