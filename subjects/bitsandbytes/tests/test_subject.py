"""The bitsandbytes subject, driven like devsim drives it (the kit's fake devsim checks every answer)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from devsim_subject_bitsandbytes import declare
from devsim_subject_kit.testing import AMD_MIXED, CPU, H200X2, R9700X2, Driver, s, tdev

HERE = Path(__file__).resolve().parent


@pytest.fixture
def subject(env):
    driver = Driver("devsim_subject_bitsandbytes", env)
    driver.hello(protocol=2)
    yield driver
    assert driver.close() == 0, driver.stderr_text()[-3000:]


def validate(driver: Driver, host: dict, device: dict) -> dict:
    return driver.step(host, {"action": "validate", "kernel": "bitsandbytes", "device": device})


def events(answer: dict, name: str) -> list[dict]:
    return [e for e in answer["trace"] if e["event"] == name]


def test_the_declaration_is_read_from_bitsandbytes_own_files():
    read = declare.read()
    assert {"cpu", "cuda", "xpu", "mps"} <= read.device_types  # register_kernel(..., "<device>") in backends/
    assert "libbitsandbytes_rocm64.so" in read.libraries and "libbitsandbytes_cuda130.so" in read.libraries
    assert read.families == ["cpu", "cuda", "mps", "rocm", "xpu"]


def test_handshake_declares_what_bitsandbytes_ships(subject):
    kernel = subject.handshake["kernels"][0]
    assert kernel["name"] == "bitsandbytes" and "rocm" in kernel["families"]
    assert subject.handshake["actions"] == ["validate", "warmup"]


def test_a_hip_build_loads_the_rocm_library_of_its_runtime_version(subject):
    answer = validate(subject, {**R9700X2, "runtime_version": "6.4.43482"}, s("cuda:1"))
    assert answer["ok"] is True, answer
    assert (answer["family"], answer["ordinal"], answer["torch_device"]) == ("rocm", 1, "cuda:1")
    assert [e["detail"] for e in events(answer, "extension_load")] == ["libbitsandbytes_rocm64.so"]
    # the finding: bitsandbytes' import asks both AMD GPUs for an NVIDIA compute capability
    assert [e["device"] for e in events(answer, "nvidia_capability")] == [0, 1]


def test_an_older_hip_runtime_falls_back_to_the_nearest_library(subject):
    answer = validate(subject, {**R9700X2, "runtime_version": "6.0.32830"}, s("cuda"))
    assert answer["ok"] is True and answer["ordinal"] is None, answer
    assert [e["detail"] for e in events(answer, "extension_load")] == ["libbitsandbytes_rocm64.so"]


def test_a_hip_runtime_without_a_library_is_refused_naming_the_missing_file(subject):
    answer = validate(subject, {**R9700X2, "runtime_version": "10.0.1"}, s("cuda:0"))
    assert answer["ok"] is False, answer
    assert "No compatible ROCm binary found" in answer["error"]["message"]
    assert "libbitsandbytes_rocm100.so" in answer["error"]["message"]
    assert events(answer, "extension_load") == []  # nothing was loaded


def test_a_cuda_build_loads_its_cuda_library_and_asks_no_amd_arch(subject):
    answer = validate(subject, {**H200X2, "runtime_version": "13.0"}, tdev("cuda", 0))
    assert answer["ok"] is True and answer["family"] == "cuda", answer
    assert [e["detail"] for e in events(answer, "extension_load")] == ["libbitsandbytes_cuda130.so"]
    assert events(answer, "amd_arch") == []


def test_a_cpu_build_loads_the_cpu_library_for_real(subject):
    answer = validate(subject, CPU, s("cpu"))
    assert answer["ok"] is True and answer["family"] == "cpu", answer
    assert [e["detail"] for e in events(answer, "extension_load")] == ["libbitsandbytes_cpu.so"]
    assert events(answer, "nvidia_capability") == events(answer, "amd_arch") == []


def test_a_cpu_build_has_no_cuda_kernel(subject):
    answer = validate(subject, CPU, s("cuda:0"))
    assert answer["ok"] is False and answer["error"]["kind"] == "unsupported-family", answer


def test_a_spelling_torch_refuses_never_reaches_bitsandbytes(subject):
    answer = subject.scenario(R9700X2, [{"action": "validate", "kernel": "bitsandbytes", "device": s("rocm")}])
    assert answer["answers"][0]["type"] == "unsupported"
    assert "torch does not accept 'rocm'" in answer["answers"][0]["reason"]


def test_an_admitted_warmup_is_unsupported_not_passed(subject):
    answer = subject.step(R9700X2, {"action": "warmup", "kernel": "bitsandbytes", "device": s("cuda:1")})
    assert answer["type"] == "unsupported" and "native code" in answer["reason"], answer


def test_the_generated_reproduction_shows_the_finding():
    scripts = sorted((HERE.parent / "repro").glob("*.py"))
    assert scripts, "devsim run --subject subjects/bitsandbytes.toml --repro subjects/bitsandbytes/repro"
    for script in scripts:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
        assert "nvidia_capability x" in done.stdout, done.stdout


def test_a_warmup_skip_names_the_per_device_gemm_path_bitsandbytes_picks(subject):
    on_gfx942 = subject.step(AMD_MIXED, {"action": "warmup", "kernel": "bitsandbytes", "device": s("cuda:0")})
    on_gfx1201 = subject.step(AMD_MIXED, {"action": "warmup", "kernel": "bitsandbytes", "device": s("cuda:1")})
    # bitsandbytes' ROCm heuristic reads each device's own gcnArchName: CDNA (gfx9) keeps its fused kernel to
    # M <= 4, RDNA4 (gfx12) to M <= 8, so the same M = 6 GEMM takes different paths on the two GPUs.
    assert "on device 0 its _gemm_4bit_use_custom_rocm picks dequantize + F.linear" in on_gfx942["reason"]
    assert "on device 1 its _gemm_4bit_use_custom_rocm picks the fused kernel" in on_gfx1201["reason"]
