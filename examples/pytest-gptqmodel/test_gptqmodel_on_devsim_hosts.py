"""GPTQModel 7.7.0's device detection, tested the way its own test suite could be, on devsim's host profiles.

    PYTHONPATH=../../../gptqmodel-src DEVSIM=../../target/release/devsim pytest examples/pytest-gptqmodel

The seed (GPTQModel's ROCm device-family work) reports a test that monkeypatched `torch.version.hip` while the
modules under test had already computed `IS_ROCM` at import: the patch changed nothing they read. The first test
shows that trap; the others run on devsim's simulated hosts, where the plugin imports GPTQModel afresh on each
host, so its constants are the host's.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gptqmodel", reason="GPTQModel is not importable: run subjects/gptqmodel/install.sh")


def test_monkeypatching_torch_after_the_import_misses_is_rocm(monkeypatch):
    """The seed's trap, reproduced: IS_ROCM was computed when gptqmodel was imported (here, on this machine's
    CUDA-or-CPU torch), so patching torch.version.hip afterwards leaves it False."""
    from gptqmodel.utils import rocm

    monkeypatch.setattr(torch.version, "hip", "7.1.25424")
    assert rocm.IS_ROCM is False


@pytest.mark.devsim_host("r9700x2", "amd_mixed", "h200x2", "cpu")
def test_import_time_constants_are_the_hosts(devsim_host):
    from gptqmodel.utils import rocm
    from gptqmodel.utils import torch as gtorch

    assert rocm.IS_ROCM is devsim_host.host.is_rocm
    assert gtorch.HAS_CUDA is bool(devsim_host.host.visible_gpus())
    # GPTQModel counted the host's GPUs at import, through torch (the trace of the test's own calls starts later)
    assert torch.cuda.device_count() == len(devsim_host.host.visible_gpus())


# GPTQModel 7.7.0 maps the spelling "cuda:1" to DEVICE.CUDA even on a HIP build (the seed's first bug class;
# subjects/gptqmodel/findings.md). Strict: when a GPTQModel release fixes it, this test fails and is turned around.
@pytest.mark.xfail(strict=True, reason="GPTQModel 7.7.0 normalizes 'cuda:1' on a HIP build to DEVICE.CUDA")
@pytest.mark.devsim_host("r9700x2")
def test_cuda_spelling_on_a_hip_build_normalizes_to_rocm(devsim_host):
    from gptqmodel.models._const import DEVICE, normalize_device

    assert normalize_device("cuda:1") == DEVICE.ROCM
