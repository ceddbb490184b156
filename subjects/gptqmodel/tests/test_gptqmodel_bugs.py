"""What the subject observes of GPTQModel 7.7.0 on simulated hosts: the seed's bug classes, as they are.

These tests pin observed 7.7.0 behaviour (wrong by devsim's policy, AGENTS.md); devsim's scenarios are what
judge it. A GPTQModel release that fixes a bug makes the matching test fail here: update the expectation.
"""

from __future__ import annotations

from fakedevsim import AMD_MIXED, CPU, H200X2, R9700X2, fam, o, s, tdev


def events(answer: dict) -> list[str]:
    return [entry["event"] for entry in answer["trace"]]


def test_hip_normalize_cuda1_is_family_cuda(driver):
    """Seed: DEVICE.ROCM must be preserved; normalize_device("cuda:1") on a 2-GPU HIP build returns CUDA."""
    answer = driver.step(R9700X2, {"action": "normalize", "device": s("cuda:1")})
    assert answer["ok"] is True
    assert answer["family"] == "cuda"  # devsim expects "rocm"
    assert "ordinal" not in answer  # normalize_device returns a family enum: no ordinal is observed
    assert answer["current_after"] == 0


def test_hip_spellings_all_become_cuda(driver):
    result = driver.scenario(R9700X2, [
        {"action": "normalize", "device": s("cuda")},
        {"action": "normalize", "device": o(1)},
        {"action": "normalize", "device": tdev("cuda", 1)},
        {"action": "normalize", "device": fam("cuda")},
        {"action": "normalize", "device": fam("rocm")},
        {"action": "normalize", "device": s("rocm")},
    ])
    assert [a["family"] for a in result["answers"]] == ["cuda", "cuda", "cuda", "cuda", "rocm", "rocm"]


def test_rocm_enum_resolves_to_cuda0(driver):
    """Seed: DEVICE.to_torch_device() defaults to ordinal 0, so a family target lands on GPU 0."""
    answer = driver.step(R9700X2, {"action": "resolve", "device": fam("rocm")})
    assert answer["ok"] is True
    assert answer["family"] == "rocm"
    assert answer["torch_device"] == "cuda:0"  # devsim expects indexless "cuda"


def test_family_move_in_gpu1_context_lands_on_gpu0(driver):
    result = driver.scenario(R9700X2, [
        {"action": "set_device", "ordinal": 1},
        {"action": "move", "kernel": "gptq_torch", "device": s("cuda")},
    ])
    set_dev, move = result["answers"]
    assert set_dev["ok"] and set_dev["current_after"] == 1
    assert events(set_dev) == ["set_device"]
    assert move["ok"] is True
    assert move["torch_device"] == "cuda:0" and move["lands_on"] == 0  # devsim expects cuda / 1
    assert move["current_after"] == 1


def test_tritonv2_string_selector_accepted_on_hip(driver):
    """Seed: TritonV2Linear.validate_device("cuda") accepted a CUDA-only kernel on ROCm."""
    answer = driver.step(R9700X2, {"action": "validate", "kernel": "gptq_triton", "device": s("cuda")})
    # the selector machinery calls the target ROCm, yet the NVIDIA-only kernel's family gate accepts it
    assert answer["family"] == "rocm" and answer["torch_device"] == "cuda" and answer["ordinal"] is None
    assert answer["ok"] is True  # devsim expects unsupported-family


def test_amd_validation_probes_nvidia_capability(driver):
    """Seed: AMD requests must not probe NVIDIA compute capability; 7.7.0's validation cache key does."""
    answer = driver.step(AMD_MIXED, {"action": "validate", "kernel": "gptq_torch", "device": s("cuda:1")})
    assert answer["ok"] is True
    assert {"event": "nvidia_capability", "device": 1, "detail": "get_device_capability"} in answer["trace"]


def test_marlin_refused_on_hip_with_family_kind(driver):
    answer = driver.step(R9700X2, {"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:1")})
    assert (answer["family"], answer["ordinal"], answer["torch_device"]) == ("rocm", 1, "cuda:1")
    assert answer["ok"] is False
    assert answer["error"] == {"kind": "unsupported-family", "message": "Marlin kernel is not supported on ROCm."}


def test_exllama_v2_loads_its_extension_on_hip(driver):
    """Extensions must load after the gates; ExLlamaV2's validate_once loads before the family gate."""
    answer = driver.step(R9700X2, {"action": "validate", "kernel": "gptq_exllama_v2", "device": s("cuda:1")})
    assert "extension_load" in events(answer)
    assert answer["ok"] is True  # torch.device("cuda:1") passes validate_device as DEVICE.CUDA on HIP


def test_rocm_lock_is_unknown_device(driver):
    """Seed: DeviceThreadPool rejected DEVICE.ROCM as an unknown device."""
    answer = driver.step(R9700X2, {"action": "lock", "scope": fam("rocm"), "mode": "read"})
    assert answer["ok"] is False
    assert answer["error"] == {"kind": "unknown-selector", "message": "Unknown device for pool: DEVICE.ROCM"}


def test_cuda_lock_covers_every_amd_gpu(driver):
    answer = driver.step(R9700X2, {"action": "lock", "scope": s("cuda"), "mode": "read"})
    assert answer["ok"] is True
    assert answer["covers"] == ["cuda:0", "cuda:1"]
    assert events(answer) == ["lock", "lock"]


def test_selection_on_hip_and_cuda(driver):
    hip = driver.step(AMD_MIXED, {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda")})
    assert hip["ok"] and hip["selected"] == "gptq_torch"
    nvidia = driver.step(H200X2, {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda:0")})
    assert nvidia["ok"] and nvidia["selected"] == "gptq_machete"
    cpu = driver.step(CPU, {"action": "select", "method": "gptq", "bits": 4, "device": s("cpu")})
    assert cpu["ok"] and cpu["selected"] == "gptq_torch_aten"


def test_cpu_selection_does_not_depend_on_the_machines_cpu(driver):
    """The simulated host has no AVX512-BF16, whatever /proc/cpuinfo of the runner says: GPTQModel does not
    try its AVX512 CPU kernel, so it loads no extension (on an AVX512-BF16 runner it loaded two)."""
    cpu = driver.step(CPU, {"action": "select", "method": "gptq", "bits": 4, "device": s("cpu")})
    assert cpu["ok"] and cpu["selected"] == "gptq_torch_aten"
    assert "extension_load" not in events(cpu)


def test_unknown_selector_is_an_error_observation(driver):
    answer = driver.step(R9700X2, {"action": "normalize", "device": s("gpu")})
    assert answer["ok"] is False
    assert answer["error"] == {"kind": "unknown-selector", "message": "'gpu' is not a valid DEVICE"}


def test_set_device_past_visible_count(driver):
    answer = driver.step(R9700X2, {"action": "set_device", "ordinal": 2})
    assert answer["ok"] is False and answer["error"]["kind"] == "no-such-device"
    assert answer["current_after"] == 0
