"""NVML and amdsmi answered from the simulated host in a session child, for modules imported before and after."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from devsim_subject_kit import Host, Recorder
from devsim_subject_kit.mgmtlibs import ManagementLibraries, is_pynvml
from devsim_subject_kit.testing import H200X2, R9700X2

PYNVML = '''
NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_NOT_FOUND, NVML_ERROR_INVALID_ARGUMENT = 12, 6, 2


class NVMLError(Exception):
    def __init__(self, value):
        self.value = value


def nvmlInit():
    raise AssertionError("the real library was called")


def nvmlDeviceGetCount():
    raise AssertionError("the real library was called")
'''


def test_is_pynvml_takes_pynvml_and_vendored_copies_only() -> None:
    assert is_pynvml("pynvml") and is_pynvml("vllm.third_party.pynvml")
    assert not is_pynvml("pynvml_utils") and not is_pynvml("mypynvml")


def test_a_vendored_pynvml_imported_later_and_amdsmi_answer_from_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "vendorpkg").mkdir()
    (tmp_path / "vendorpkg" / "__init__.py").write_text("")
    (tmp_path / "vendorpkg" / "pynvml.py").write_text(PYNVML)
    monkeypatch.syspath_prepend(str(tmp_path))
    now = {"host": Host.from_message(H200X2)}
    recorder = Recorder()
    libraries = ManagementLibraries(lambda: now["host"], recorder).install()
    try:
        import amdsmi  # type: ignore[import-not-found]
        import vendorpkg.pynvml as nvml  # type: ignore[import-not-found]

        nvml.nvmlInit()
        with recorder.capture() as trace:
            assert nvml.nvmlDeviceGetCount() == 2
        assert [e["event"] for e in trace] == ["device_count"]
        with pytest.raises(amdsmi.AmdSmiException):
            amdsmi.amdsmi_init()  # an NVIDIA box has no amdgpu driver
        now["host"] = Host.from_message(R9700X2)
        with pytest.raises(nvml.NVMLError):
            nvml.nvmlInit()  # no NVIDIA GPU in the box: no NVIDIA driver
        amdsmi.amdsmi_init()
        assert len(amdsmi.amdsmi_get_processor_handles()) == 2
    finally:
        libraries.uninstall()
        sys.modules.pop("vendorpkg.pynvml", None)
        sys.modules.pop("vendorpkg", None)
    assert "amdsmi" not in sys.modules or sys.modules["amdsmi"] is not libraries.amdsmi.module
    with pytest.raises(AssertionError, match="real library"):
        nvml.nvmlInit()


def test_a_pynvml_imported_before_install_is_patched_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pynvml.py").write_text(PYNVML)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    import pynvml  # type: ignore[import-not-found]

    libraries = ManagementLibraries(lambda: Host.from_message(H200X2), Recorder()).install()
    try:
        pynvml.nvmlInit()
        assert pynvml.nvmlDeviceGetCount() == 2
    finally:
        libraries.uninstall()
        sys.modules.pop("pynvml", None)
