"""The vLLM subject, driven like devsim drives it (the kit's fake devsim checks every answer).

One subject process serves the whole module: its start imports vLLM's selection code (about 10 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from devsim_subject_kit.testing import (
    AMD_MIXED,
    CPU,
    H200,
    H200X2,
    MI300X,
    R9700,
    R9700X2,
    Driver,
    ProtocolViolation,
    fam,
    gpu,
    host,
    o,
    s,
    tdev,
)

HERE = Path(__file__).resolve().parent
A100 = gpu("sm_80", "NVIDIA A100", 166912)


@pytest.fixture(scope="module")
def subject(env):
    driver = Driver("devsim_subject_vllm", env, timeout=300.0)
    driver.hello(protocol=2)
    yield driver
    assert driver.close() == 0, driver.stderr_text()[-3000:]


def events(answer: dict, name: str) -> list[dict]:
    return [e for e in answer["trace"] if e["event"] == name]


def discover(driver: Driver, on: dict) -> dict:
    return driver.step(on, {"action": "discover"})


def test_the_declaration_is_read_from_vllm_own_kernel_lists(subject):
    kernels = {k["name"]: k for k in subject.handshake["kernels"]}
    # _POSSIBLE_KERNELS lists Marlin and Machete for CUDA only; Exllama and the Triton W4A16 kernel for both
    assert kernels["gptq_marlin"]["families"] == ["cuda"] and kernels["gptq_machete"]["families"] == ["cuda"]
    assert kernels["gptq_exllama_v2"]["families"] == ["cuda", "rocm"]
    assert kernels["awq_gemm_triton"]["families"] == ["cuda", "rocm"]
    assert kernels["gptq_marlin"]["source"].endswith("_POSSIBLE_KERNELS: MarlinLinearKernel")


def test_arch_rules_are_read_from_each_kernel_class_get_min_capability(subject):
    kernels = {k["name"]: k for k in subject.handshake["kernels"]}
    assert subject.handshake["packages"] == ["vllm"]
    machete = kernels["gptq_machete"]["arch"]
    assert machete["min_capability"] == 90, machete  # MacheteLinearKernel.get_min_capability()
    assert machete["source"].endswith(".machete:MacheteLinearKernel.get_min_capability"), machete
    assert kernels["awq_machete"]["arch"] == machete  # one class, one rule, whatever the method
    assert kernels["gptq_marlin"]["arch"]["source"].endswith(":MarlinLinearKernel.get_min_capability")
    assert set(kernels["gptq_exllama_v2"]["arch"]) == {"min_capability", "source"}
    # The Triton W4A16 kernel declares a least capability of 0: no rule, so nothing is declared for it.
    assert "arch" not in kernels["gptq_triton"] and "arch" not in kernels["awq_gemm_triton"]


def test_decided_by_places_selection_in_choose_mp_linear_kernel(subject):
    answer = subject.step(H200X2, {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda:1")})
    assert answer["decided_by"]["selected"]["function"] == "choose_mp_linear_kernel", answer
    admitted = subject.step(H200X2, {"action": "validate", "kernel": "gptq_machete", "device": s("cuda:1")})
    assert admitted["decided_by"]["ok"]["function"] == "choose_mp_linear_kernel", admitted


def test_vllm_detects_rocm_through_amdsmi_and_asks_no_nvidia_capability(subject):
    answer = discover(subject, R9700X2)
    assert (answer["ok"], answer["vendor"], answer["torch_device_count"]) == (True, "amd", 2), answer
    assert answer["archs"] == ["gfx1201", "gfx1201"]
    assert [e["detail"] for e in events(answer, "amd_arch")] == ["amdsmi_get_gpu_asic_info"]
    assert events(answer, "nvidia_capability") == []


def test_vllm_detects_cuda_through_nvml(subject):
    answer = discover(subject, H200X2)
    assert (answer["vendor"], answer["archs"]) == ("nvidia", ["sm_90", "sm_90"]), answer
    assert {e["detail"] for e in events(answer, "nvidia_capability")} == {"nvmlDeviceGetCudaComputeCapability"}
    assert events(answer, "amd_arch") == []


def test_finding_rocm_arch_is_read_from_physical_gpu_0_for_every_device(subject):
    answer = discover(subject, AMD_MIXED)  # gfx942 at 0, gfx1201 at 1
    assert answer["archs"] == ["gfx942:sramecc+:xnack-", "gfx942"], answer  # vLLM: gfx942 for both
    masked = discover(subject, host("hip", [MI300X, R9700], env={"HIP_VISIBLE_DEVICES": "1"}, visible=[1]))
    assert masked["archs"] == ["gfx942"], masked  # the only visible GPU is the gfx1201


def test_a_cpu_build_is_vllm_cpu_platform(subject):
    answer = discover(subject, CPU)
    assert answer["ok"] is True and answer["vendor"] == "none", answer


def test_selection_on_rocm_picks_a_kernel_vllm_lists_for_rocm(subject):
    answer = subject.step(host("hip", [MI300X, MI300X]), {"action": "select", "method": "gptq", "bits": 4,
                                                          "device": s("cuda:1")})
    assert answer["ok"] is True and answer["family"] == "rocm", answer
    assert answer["selected"] == "gptq_triton"


def test_a_kernel_devsim_has_no_name_for_is_selected_without_a_name(subject):
    answer = subject.step(R9700X2, {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda:0")})
    assert answer["ok"] is True and "selected" not in answer, answer  # an RDNA kernel: set aside, not judged


def test_finding_selection_judges_device_0_capability_whatever_the_current_device(subject):
    box = host("cuda", [A100, H200])
    first = subject.step(box, {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda:1")})
    assert first["selected"] == "gptq_marlin", first  # the H200 at cuda:1 would take Machete
    assert [e["device"] for e in events(first, "nvidia_capability")] == [0]


def test_validate_refuses_a_kernel_vllm_does_not_list_for_the_platform(subject):
    answer = subject.step(R9700X2, {"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:0")})
    assert answer["ok"] is False and answer["error"]["kind"] == "unsupported-family", answer
    assert "MarlinLinearKernel is not a RocmPlatform kernel" in answer["error"]["message"]


def test_validate_refuses_by_capability_as_unsupported_arch(subject):
    answer = subject.step(host("cuda", [A100]), {"action": "validate", "kernel": "gptq_machete", "device": s("cuda:0")})
    assert answer["ok"] is False and answer["error"]["kind"] == "unsupported-arch", answer
    assert "requires capability 90" in answer["error"]["message"]


def test_validate_admits_a_listed_kernel(subject):
    answer = subject.step(H200X2, {"action": "validate", "kernel": "gptq_machete", "device": fam("cuda")})
    assert answer["ok"] is True and answer["family"] == "cuda", answer


def test_finding_a_mixed_vendor_box_leaves_vllm_without_a_platform(subject):
    box = host("hip", [R9700], foreign=[H200])
    answer = discover(subject, box)
    assert answer["ok"] is False and "Only one platform plugin can be activated" in answer["error"]["message"]
    step = subject.scenario(box, [{"action": "select", "method": "gptq", "bits": 4, "device": s("cuda")}])
    assert step["answers"][0]["type"] == "unsupported", step  # nothing of vLLM's selection can run: a skip


def test_finding_a_mask_nvml_cannot_read_is_an_error_in_discovery(subject):
    box = host("cuda", [A100, H200], env={"CUDA_VISIBLE_DEVICES": "GPU-sm_90"}, visible=[1])  # a UUID prefix
    answer = discover(subject, box)
    assert answer["ok"] is False and "NVMLError_NotFound" in answer["error"]["message"], answer


def test_set_device_goes_through_vllm_platform(subject):
    answer = subject.step(R9700X2, {"action": "set_device", "ordinal": 1})
    assert answer["ok"] is True and answer["current_after"] == 1, answer
    assert [e["device"] for e in events(answer, "set_device")] == [1]


@pytest.mark.parametrize("script", sorted(p for p in (HERE.parent / "findings").glob("*.py") if not p.name.startswith("_")), ids=lambda p: p.stem)
def test_each_reproduction_shows_its_finding(script: Path, env):
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          check=False, env=env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "FINDING" in done.stdout, done.stdout


def test_resolve_goes_through_device_config(subject):
    written = subject.step(R9700X2, {"action": "resolve", "device": s("cuda:1")})
    assert (written["ok"], written["family"], written["torch_device"], written["ordinal"]) == (True, "rocm", "cuda:1", 1)
    given = subject.step(R9700X2, {"action": "resolve", "device": tdev("cuda", 1)})
    assert (given["torch_device"], given["ordinal"]) == ("cuda", None), given  # the finding: the ordinal is dropped
    ordinal = subject.scenario(R9700X2, [{"action": "resolve", "device": o(1)}])
    assert ordinal["answers"][0]["type"] == "unsupported", ordinal  # DeviceConfig takes no ordinals


def test_without_the_fake_driver_the_subject_fails_at_start_naming_it(env, tmp_path):
    driver = Driver("devsim_subject_vllm", {**env, "DEVSIM_FAKE_LIBCUDA": str(tmp_path / "libcuda.so.1")})
    with pytest.raises(ProtocolViolation, match="closed stdout"):
        driver.hello(protocol=2)
    assert "devsim's fake driver is not at" in driver.stderr_text()
    assert driver.proc.wait(timeout=60) != 0


def test_a_live_hello_gets_a_handshake_without_live(env):
    driver = Driver("devsim_subject_vllm", env, timeout=300.0)
    handshake = driver.hello(protocol=2, live=True)
    assert "live" not in handshake and handshake["kernels"], handshake  # devsim then refuses the live run
    assert driver.close() == 0, driver.stderr_text()[-3000:]
