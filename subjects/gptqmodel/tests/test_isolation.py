"""Each scenario runs in its own child: nothing one host or scenario does reaches the next."""

from __future__ import annotations

from fakedevsim import CPU, H200X2, R9700, R9700X2, host, s


def test_set_device_does_not_leak_into_the_next_scenario(driver):
    first = driver.scenario(R9700X2, [{"action": "set_device", "ordinal": 1},
                                      {"action": "move", "kernel": "gptq_torch", "device": s("cuda:1")}])
    assert first["answers"][0]["current_after"] == 1
    second = driver.scenario(R9700X2, [{"action": "normalize", "device": s("cuda")}])
    assert second["answers"][0]["current_after"] == 0


def test_host_current_device_is_applied(driver):
    answer = driver.step(host("hip", [R9700, R9700], current=1), {"action": "normalize", "device": s("cuda")})
    assert answer["current_after"] == 1


def test_import_time_constants_follow_each_host(driver):
    """marlin_import_exception and IS_ROCM are computed at import; each child re-sets them for its host."""
    marlin = {"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:0")}
    hip = driver.step(R9700X2, marlin)
    cuda = driver.step(H200X2, marlin)
    cpu = driver.step(CPU, {**marlin, "device": s("cpu")})
    hip_again = driver.step(R9700X2, marlin)
    assert hip["error"]["message"] == "Marlin kernel is not supported on ROCm."
    assert cuda["ok"] is True
    assert cpu["error"]["message"] == "Marlin kernel requires CUDA."
    assert hip_again == {**hip, "scenario": hip_again["scenario"]}


def test_validation_cache_does_not_carry_across_hosts(driver):
    """GPTQModel caches validate_once per class and validations per key; a child starts with both empty."""
    nvfp4 = {"action": "validate", "kernel": "w4a_nvfp4", "device": s("cuda:0")}
    b200 = host("cuda", [{"arch": "sm_121", "name": "NVIDIA GB10", "smem_optin": 232448, "uuid": "GPU-x"}])
    accepted = driver.step(b200, nvfp4)
    refused = driver.step(H200X2, nvfp4)
    assert accepted["ok"] is True
    assert refused["ok"] is False and refused["error"]["kind"] == "unsupported-arch"
