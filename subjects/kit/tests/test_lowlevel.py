"""The kit's fakes below torch: native library loads, rocminfo, NVML and amdsmi."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
import sys
import types
from pathlib import Path

import pytest
from devsim_subject_kit import Host, Recorder
from devsim_subject_kit.lowlevel import (
    Amdsmi,
    AmdSmiException,
    Nvml,
    RocmInfo,
    rocminfo_text,
)
from devsim_subject_kit.nativelibs import (
    NativeLoads,
    SimulatedNativeCall,
    StandInLibrary,
    exported_symbols,
)
from devsim_subject_kit.testing import AMD_MIXED, CPU, H200, H200X2, MI300X, R9700, host


def a_shared_object() -> Path:
    """A real ELF shared object of this machine (libm)."""
    for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"):
        candidate = Path(folder) / "libm.so.6"
        if candidate.is_file():
            return candidate
    pytest.skip(f"no libm.so.6 here (ctypes finds {ctypes.util.find_library('m')})")


def test_exported_symbols_are_the_elf_dynamic_symbols():
    names = exported_symbols(a_shared_object())
    assert {"cos", "sin", "sqrt"} <= names
    assert not any(n.startswith("_GLOBAL_OFFSET") for n in names)


def test_a_stand_in_exports_exactly_the_real_symbols_and_runs_nothing():
    lib = StandInLibrary(a_shared_object())
    assert hasattr(lib, "cos") and not hasattr(lib, "definitely_not_exported")
    lib.cos.restype = ctypes.c_double  # configuring a function is allowed, as ctypes allows it
    with pytest.raises(SimulatedNativeCall, match="native code"):
        lib.cos(1.0)


def test_loads_under_a_root_are_recorded_and_stand_in(tmp_path):
    shipped = tmp_path / "libproject_gpu.so"
    shipped.write_bytes(a_shared_object().read_bytes())
    recorder = Recorder()
    own = ctypes.cdll.LoadLibrary
    loads = NativeLoads(recorder, [tmp_path], stand_in=lambda path: "gpu" in path.name).install()
    try:
        with recorder.capture() as trace:
            lib = ctypes.cdll.LoadLibrary(str(shipped))
            with pytest.raises(OSError):
                ctypes.cdll.LoadLibrary(str(tmp_path / "libproject_missing.so"))
            ctypes.CDLL(str(a_shared_object()))  # outside the roots: loads for real, unrecorded
    finally:
        loads.uninstall()
    assert isinstance(lib, StandInLibrary)
    assert trace == [{"event": "extension_load", "detail": "libproject_gpu.so"},
                     {"event": "extension_load", "detail": "libproject_missing.so"}]
    assert ctypes.cdll.LoadLibrary == own  # restored


def test_rocminfo_lists_the_builds_gpus_in_physical_order():
    host = Host.from_message(AMD_MIXED)
    text = rocminfo_text(host)
    assert text.index("Name:                    gfx942") < text.index("Name:                    gfx1201")
    masked = Host.from_message({**AMD_MIXED, "env": {"ROCR_VISIBLE_DEVICES": "1"}, "visible": [0]})
    assert "gfx942" not in rocminfo_text(masked) and "gfx1201" in rocminfo_text(masked)


def test_rocminfo_answers_from_the_host_and_other_commands_run_for_real():
    recorder = Recorder()
    hosts = {"now": Host.from_message(AMD_MIXED)}
    fake = RocmInfo(lambda: hosts["now"], recorder).install()
    try:
        done = subprocess.run(["rocminfo"], capture_output=True, text=True, check=False)
        assert done.returncode == 0 and "gfx1201" in done.stdout
        assert subprocess.run(["true"], check=False).returncode == 0
        hosts["now"] = Host.from_message(H200X2)
        with pytest.raises(FileNotFoundError):
            subprocess.run(["rocminfo"], capture_output=True, text=True, check=False)
    finally:
        fake.uninstall()


def a_pynvml_module() -> types.ModuleType:
    """A pynvml-shaped module: NVMLError with the real library's subclass-per-code construction."""
    module = types.ModuleType("pynvml_under_test")

    class NVMLError(Exception):
        def __new__(cls, value: int) -> NVMLError:  # noqa: PYI034 - pynvml returns a subclass
            sub = {12: NVMLError_LibraryNotFound, 6: NVMLError_NotFound}.get(value, cls)
            made = Exception.__new__(sub)
            made.value = value  # type: ignore[attr-defined]
            return made

    class NVMLError_LibraryNotFound(NVMLError):
        pass

    class NVMLError_NotFound(NVMLError):
        pass

    module.NVMLError = NVMLError  # type: ignore[attr-defined]
    module.NVML_ERROR_LIBRARY_NOT_FOUND, module.NVML_ERROR_NOT_FOUND = 12, 6  # type: ignore[attr-defined]
    module.NVML_ERROR_INVALID_ARGUMENT = 2  # type: ignore[attr-defined]
    for name in ("nvmlInit", "nvmlShutdown", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex"):
        setattr(module, name, lambda *a: (_ for _ in ()).throw(AssertionError("the real library was called")))
    return module


def test_nvml_sees_every_nvidia_gpu_of_the_box_in_physical_order_and_ignores_the_mask():
    recorder, module = Recorder(), a_pynvml_module()
    now = {"host": Host.from_message(host("cuda", [H200, H200], env={"CUDA_VISIBLE_DEVICES": "1"}, visible=[1]))}
    fake = Nvml(lambda: now["host"], recorder).install(module)
    try:
        module.nvmlInit()
        with recorder.capture() as trace:
            assert module.nvmlDeviceGetCount() == 2  # NVML counts physical GPUs
            second = module.nvmlDeviceGetHandleByIndex(1)
            assert module.nvmlDeviceGetCudaComputeCapability(second) == (9, 0)
            module.nvmlDeviceGetCudaComputeCapability(module.nvmlDeviceGetHandleByIndex(0))
        # physical 1 is torch's cuda:0; physical 0 is hidden, so its probe names no ordinal
        assert [(e["event"], e.get("device")) for e in trace] == [
            ("device_count", None), ("nvidia_capability", 0), ("nvidia_capability", None)]
        assert module.nvmlDeviceGetHandleByUUID(H200["uuid"]) is not None
        with pytest.raises(module.NVMLError) as prefix:
            module.nvmlDeviceGetHandleByUUID(H200["uuid"][:6])  # NVML finds whole UUIDs only
        assert type(prefix.value).__name__ == "NVMLError_NotFound"
        now["host"] = Host.from_message(AMD_MIXED)
        with pytest.raises(module.NVMLError) as missing:
            module.nvmlInit()  # no NVIDIA GPU in the box: no NVIDIA driver
        assert type(missing.value).__name__ == "NVMLError_LibraryNotFound"
        now["host"] = Host.from_message(host("hip", [R9700], foreign=[H200]))
        assert module.nvmlDeviceGetCount() == 1  # a foreign NVIDIA GPU is in the box: NVML sees it
    finally:
        fake.uninstall()
    with pytest.raises(AssertionError, match="real library"):
        module.nvmlInit()


def test_amdsmi_is_a_module_of_the_box_amd_gpus_and_is_removed_on_uninstall():
    recorder = Recorder()
    now = {"host": Host.from_message({**AMD_MIXED, "env": {"HIP_VISIBLE_DEVICES": "1"}, "visible": [1]})}
    fake = Amdsmi(lambda: now["host"], recorder).install()
    try:
        import amdsmi  # type: ignore[import-not-found]

        amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
        assert len(handles) == 2  # amdsmi ignores HIP_VISIBLE_DEVICES
        infos = [amdsmi.amdsmi_get_gpu_asic_info(h) for h in handles]
        with recorder.capture() as serials:
            assert [i["asic_serial"] for i in infos] == ["0x" + MI300X["uuid"], "0x" + R9700["uuid"]]
        assert serials == []  # a serial is no arch probe
        with recorder.capture() as trace:
            assert [i["target_graphics_version"] for i in infos] == ["gfx942", "gfx1201"]  # no target features
        assert [i["market_name"] for i in infos] == [MI300X["name"], R9700["name"]]
        assert [(e["event"], e.get("device")) for e in trace] == [("amd_arch", None), ("amd_arch", 0)]
        for other in (H200X2, CPU):
            now["host"] = Host.from_message(other)
            with pytest.raises(AmdSmiException):
                amdsmi.amdsmi_init()
    finally:
        fake.uninstall()
    assert "amdsmi" not in sys.modules
