"""The protocol contract: handshake, answers, stdout purity, robustness."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO
from fakedevsim import CPU, H200X2, R9700X2, Driver, ProtocolViolation, fam, s

PROTOCOL_EVENTS = {
    "device_count", "device_name", "nvidia_capability", "smem_optin", "amd_arch", "get_device", "set_device",
    "alloc", "copy", "free", "launch", "synchronize", "extension_load", "lock",
    "gate:normalize", "gate:family", "gate:bits", "gate:arch",
}
ACTIONS = {"normalize", "resolve", "validate", "warmup", "move", "select", "lock", "set_device", "default_device"}
ERROR_KINDS = {
    "unknown-selector", "unknown-kernel", "unknown-arch", "no-such-device", "family-not-present",
    "unsupported-family", "unsupported-arch", "unsupported-bits", "no-kernel", "driver-error",
}
OBSERVED_FIELDS = {
    "type", "scenario", "number", "ok", "error", "family", "ordinal", "torch_device", "ran_on", "lands_on",
    "current_after", "selected", "covers", "vendor", "archs", "trace",
}


def catalog_names() -> set[str]:
    catalog = REPO / "src" / "kernel" / "catalog.rs"
    if not catalog.is_file():
        pytest.skip(f"devsim's catalog is not at {catalog}")
    return set(re.findall(r'KernelSpec::new\(\s*"([a-z0-9_]+)"', catalog.read_text()))


def test_handshake_fields(driver):
    hs = driver.handshake
    assert set(hs) == {"type", "protocol", "subject", "actions", "kernels", "events"}
    assert hs["protocol"] == 1
    assert hs["subject"] == {"name": "gptqmodel", "version": "7.7.0"}
    # not discover: GPTQModel has no device discovery, so a discovering scenario is not applicable
    assert set(hs["actions"]) == ACTIONS
    assert set(hs["events"]) <= PROTOCOL_EVENTS
    kernels = set(hs["kernels"])
    assert kernels <= catalog_names(), kernels - catalog_names()
    # kernels GPTQModel 7.7.0 has no class for are not claimed; the EXL3 / FP4 wrappers are
    assert not kernels & {"gptq_allspark", "awq_allspark", "awq_gemv_triton"}
    assert {"exl3_exllama_v3", "exl3_torch", "fp4_source"} <= kernels
    assert len(kernels) == 43


def test_every_observation_is_well_formed(driver):
    steps = [
        {"action": "normalize", "device": s("cuda:1")},
        {"action": "resolve", "device": fam("rocm")},
        {"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:0")},
        {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda")},
        {"action": "lock", "scope": s("cuda"), "mode": "read"},
        {"action": "move", "kernel": "gptq_torch", "device": s("cuda")},
        {"action": "set_device", "ordinal": 1},
        {"action": "normalize", "device": s("gpu")},
    ]
    result = driver.scenario(R9700X2, steps)
    events = set(driver.handshake["events"])
    for answer in result["answers"]:
        assert answer["type"] == "observed", answer
        assert set(answer) <= OBSERVED_FIELDS
        assert isinstance(answer["ok"], bool)
        assert answer["current_after"] in (0, 1)
        for entry in answer["trace"]:
            assert entry["event"] in events
        if not answer["ok"]:
            assert answer["error"]["kind"] in ERROR_KINDS | {None}
            assert isinstance(answer["error"]["message"], str) and answer["error"]["message"]


def test_unsupported_actions_and_kernels_say_why(driver):
    result = driver.scenario(R9700X2, [
        {"action": "discover"},
        {"action": "warmup", "kernel": "awq_gemv", "device": s("cuda:1")},
        {"action": "validate", "kernel": "gptq_bitblas", "device": s("rocm")},
    ])
    for answer in result["answers"]:
        assert answer["type"] == "unsupported"
        assert len(answer["reason"]) > 20


def test_a_simulated_warmup_is_observed_up_to_the_gate(driver):
    """A refusal is GPTQModel's decision before any device work: observed."""
    refused = driver.step(R9700X2, {"action": "warmup", "kernel": "gptq_torch_aten", "device": s("cuda:1")})
    assert refused["type"] == "observed" and refused["ok"] is False, refused
    assert refused["error"]["kind"] == "unsupported-family", refused


@pytest.mark.parametrize("device, ran_on", [("cuda:1", 1), ("cuda:0", 0), ("cpu", "cpu")])
def test_an_admitted_simulated_warmup_runs_gptqmodels_forward_on_fake_tensors(driver, device, ran_on):
    """Admitted, the kernel's module is moved, post-initialised and run by GPTQModel's own code on torch's fake
    tensors; `ran_on` is where its output is (test_fakewarmup.py: an indexless "cuda" is the current GPU)."""
    host = {**R9700X2, "current": 1}
    answer = driver.step(host, {"action": "warmup", "kernel": "gptq_torch", "device": s(device)})
    assert answer["type"] == "observed" and answer["ok"] is True, answer
    assert answer["ran_on"] == ran_on, answer
    assert answer["current_after"] == 1, answer


def test_a_simulated_warmup_loads_a_checkpoint_where_the_subject_can_pack_one(driver):
    """W4AFP8's post_init reads its zero points and refuses any but the symmetric 8 a GPTQ checkpoint holds: on the
    loader's empty buffers that would be a refusal no real model load makes. Built from GPTQ-packed weights (saved
    as v1, converted back by GPTQModel's loader conversion), its forward runs and lands on the target."""
    answer = driver.step(H200X2, {"action": "warmup", "kernel": "w4a_fp8", "device": s("cuda:1")})
    assert answer["type"] == "observed" and answer["ok"] is True, answer
    assert answer["ran_on"] == 1, answer


def test_a_simulated_warmup_builds_a_module_in_a_format_it_implements(driver):
    """GGUFTritonKernel fuses only the K-quants (and Q1_0): built as Q4_K (kernels.toml `module_bits`), not the Q4_0
    that validate's 4 bits would name and that its constructor refuses, its forward runs."""
    answer = driver.step(H200X2, {"action": "warmup", "kernel": "gguf_triton", "device": s("cuda:0")})
    assert answer["type"] == "observed" and answer["ok"] is True, answer
    assert answer["ran_on"] == 0, answer


def test_a_simulated_warmup_that_fake_tensors_cannot_run_says_why(driver):
    """A forward that needs what fake tensors cannot run (here a native extension op that returns a tensor, which
    nativeops never defines) is never a failure."""
    answer = driver.step(R9700X2, {"action": "warmup", "kernel": "awq_gemv", "device": s("cuda:0")})
    assert answer["type"] == "unsupported", answer
    assert "could not be simulated" in answer["reason"] and "gptqmodel_awq" in answer["reason"], answer


def test_a_missing_package_hides_only_the_verdicts_that_need_it(driver):
    """MLX's validate_once() refuses a non-Apple machine before it imports mlx: with mlx not installed, that
    refusal is still GPTQModel's own, observed. bitblas.py decides BITBLAS_AVAILABLE by importing bitblas when
    it is imported, so every bitblas verdict here rests on the missing package: unsupported, naming it."""
    mlx = driver.step(R9700X2, {"action": "validate", "kernel": "mlx_gptq", "device": s("cuda:0")})
    assert mlx["type"] == "observed" and mlx["ok"] is False, mlx
    assert "Apple Silicon" in mlx["error"]["message"], mlx
    for kernel in ("gptq_bitblas", "awq_bitblas"):
        answer = driver.step(R9700X2, {"action": "validate", "kernel": kernel, "device": s("cuda:0")})
        assert answer["type"] == "unsupported" and "needs bitblas" in answer["reason"], answer


def test_a_package_built_without_a_library_the_verdict_needs_hides_that_verdict(driver):
    """llama-cpp-python is built here for the CPU: GGUFCppKernel's verdicts (GGML's CPU backend) are GPTQModel's
    own, observed; GGUFCudaKernel's validate_once() would refuse every host for want of GGML's CUDA backend, a fact
    of this environment's build, so its steps answer `unsupported`, naming the library."""
    pytest.importorskip("llama_cpp")
    cpu = driver.step(CPU, {"action": "validate", "kernel": "gguf_cpp_cpu", "device": s("cpu")})
    assert cpu["type"] == "observed" and cpu["ok"] is True, cpu
    cuda = driver.step(H200X2, {"action": "validate", "kernel": "gguf_cpp_cuda", "device": s("cuda:0")})
    assert cuda["type"] == "unsupported" and "llama_cpp built with ggml-cuda" in cuda["reason"], cuda


def test_a_simulated_warmup_packs_weights_with_the_kernels_own_packer(driver):
    """BitsAndBytesLinear reads its quant state when it runs: on the loader's empty buffers its forward fails on an
    empty JSON payload no checkpoint has. Packed by its own `pack_original` (bitsandbytes' quantizer, on the CPU),
    as GPTQModel's quantizer packs a layer for it, its forward runs and lands on the target."""
    answer = driver.step(H200X2, {"action": "warmup", "kernel": "bitsandbytes", "device": s("cuda:1")})
    assert answer["type"] == "observed" and answer["ok"] is True, answer
    assert answer["ran_on"] == 1, answer


def test_cpu_build_reports_no_current_device(driver):
    answer = driver.step(CPU, {"action": "normalize", "device": s("cpu")})
    assert answer["ok"] and answer["family"] == "cpu"
    assert "current_after" not in answer


def test_stdout_carries_only_protocol_lines(env):
    d = Driver(env)
    d.hello()
    d.scenario(R9700X2, [
        {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda")},  # GPTQModel logs its pick
        {"action": "lock", "scope": s("cuda"), "mode": "write"},
    ])
    assert d.close() == 0
    for line in d.lines:
        msg = json.loads(line)
        assert msg["type"] in {"handshake", "ready", "observed", "unsupported", "done"}
    # GPTQModel's banner and INFO lines went to stderr
    stderr = d.stderr_text()
    assert "GPT-QModel" in stderr and "Kernel: selected" in stderr


def test_unknown_message_type_exits_nonzero_with_reason(env):
    d = Driver(env)
    d.hello()
    d.send({"type": "bogus"})
    assert d.close() == 2
    assert "a bogus message breaks the protocol" in d.stderr_text()  # the schema refuses it


def test_step_for_another_scenario_is_refused(env):
    d = Driver(env)
    d.hello()
    d.send({"type": "scenario", "name": "a", "host": CPU})
    assert d.read()["type"] == "ready"
    d.send({"type": "step", "scenario": "b", "number": 1, "action": "normalize", "device": s("cpu")})
    with pytest.raises(ProtocolViolation):
        d.read()
    assert d.close() == 2
    assert "names scenario 'b' but 'a' is running" in d.stderr_text()



def test_malformed_step_is_a_protocol_error_not_an_observation(env):
    d = Driver(env)
    d.hello()
    d.send({"type": "scenario", "name": "a", "host": R9700X2})
    assert d.read()["type"] == "ready"
    d.send({"type": "step", "scenario": "a", "number": 1, "action": "validate", "kernel": "gptq_torch"})
    with pytest.raises(ProtocolViolation):
        d.read()
    assert d.close() == 2
    assert "a validate step without 'device'" in d.stderr_text()
