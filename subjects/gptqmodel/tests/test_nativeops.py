"""GPTQModel's native ops that only write into their callers' buffers are checked, not run, on a simulated host
(nativeops): their schemas come from GPTQModel's own C++ sources, an op that returns a tensor is never defined,
and what a scenario defined is gone before the next one."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SRC
from fakedevsim import H200X2, R9700X2, s

torch = pytest.importorskip("torch")

from devsim_subject_gptqmodel import fakewarmup, nativeops

EXT = Path(SRC or "") / "gptqmodel_ext"
QQQ = ("gptqmodel_qqq", ("qqq_gemm",), lambda: [str(EXT / "qqq" / "qqq.cpp"), str(EXT / "qqq" / "qqq_gemm.cu")])
AWQ = ("gptqmodel_awq", ("gemm_forward",), lambda: [str(EXT / "awq" / "torch_bind.cpp")])


@pytest.fixture
def qqq():
    registered = nativeops.register(*QQQ)
    assert registered is not None
    yield registered
    registered.remove()


def test_schemas_are_read_from_the_extensions_own_sources():
    found = nativeops.declared(QQQ[2](), "gptqmodel_qqq")
    assert found.schemas["qqq_gemm"].startswith("qqq_gemm(Tensor A, Tensor B, Tensor(a!) C, Tensor(a!) D,")
    assert nativeops.returns_nothing(found.schemas["qqq_gemm"])
    assert "CUDA" in found.dispatch_keys
    awq = nativeops.declared(AWQ[2](), "gptqmodel_awq")
    assert not nativeops.returns_nothing(awq.schemas["gemm_forward"])


def test_an_extension_with_an_op_that_returns_a_tensor_is_left_undefined():
    assert nativeops.register(*AWQ) is None
    assert not hasattr(torch.ops.gptqmodel_awq, "gemm_forward")


def fake_args(device_of_d: str) -> list:
    """qqq_gemm's tensor arguments (shapes do not matter to the check), D on `device_of_d`, the rest on cuda:1."""
    return [torch.zeros(2).to("cuda:1") if i != 3 else torch.zeros(2).to(device_of_d) for i in range(8)]


@pytest.fixture
def simulated():
    from devsim_subject_kit import Host
    from devsim_subject_kit.simtorch import SimulatedTorch

    runtime = SimulatedTorch().install(Host.from_message(H200X2))
    yield runtime
    runtime.uninstall()


def test_a_call_on_one_gpu_runs_nothing_and_a_call_across_gpus_is_not_simulated(qqq, simulated):
    with fakewarmup._NoGpuFakeMode(allow_non_fake_inputs=True):
        assert torch.ops.gptqmodel_qqq.qqq_gemm(*fake_args("cuda:1")) is None
        with pytest.raises(nativeops.NotSimulated, match="cuda:0, cuda:1"):
            torch.ops.gptqmodel_qqq.qqq_gemm(*fake_args("cuda:0"))


def test_removing_takes_the_definition_and_torchs_handle_back(qqq):
    assert hasattr(torch.ops.gptqmodel_qqq, "qqq_gemm")
    qqq.remove()
    assert not hasattr(torch.ops.gptqmodel_qqq, "qqq_gemm")
    again = nativeops.register(*QQQ)  # the namespace is free again, as in a fresh fork
    assert again is not None
    again.remove()


@pytest.mark.parametrize("host, device, ran_on", [(H200X2, "cuda:1", 1), (R9700X2, "cuda:0", 0)])
def test_a_qqq_warmup_is_observed_where_its_forward_places_the_output(driver, host, device, ran_on):
    """QQQ's forward allocates its output and lets qqq_gemm write it: before the checked op, every QQQ warmup was
    unsupported (GPTQModel: `gptqmodel_qqq` is unavailable)."""
    answer = driver.step(host, {"action": "warmup", "kernel": "qqq", "device": s(device)})
    assert answer["type"] == "observed", answer
    assert answer["ok"] is True and answer["ran_on"] == ran_on
