"""The kit's fakes below torch: native library loads and rocminfo."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
from pathlib import Path

import pytest
from devsim_subject_kit import Host, Recorder
from devsim_subject_kit.lowlevel import RocmInfo, rocminfo_text
from devsim_subject_kit.nativelibs import (
    NativeLoads,
    SimulatedNativeCall,
    StandInLibrary,
    exported_symbols,
)
from devsim_subject_kit.testing import AMD_MIXED, H200X2


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
