"""Where the kit finds the devsim binary: configured, $DEVSIM, PATH, then beside the running Python."""

from __future__ import annotations

import stat
import sysconfig
from pathlib import Path

import pytest
from devsim_subject_kit.profiles import ProfileError, find_devsim


def _executable(folder: Path) -> Path:
    path = folder / "devsim"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_venv_that_is_not_activated_finds_the_wheels_devsim_beside_its_python(tmp_path, monkeypatch):
    scripts = tmp_path / "venv-bin"
    scripts.mkdir()
    wheel_devsim = _executable(scripts)
    monkeypatch.delenv("DEVSIM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(scripts) if name == "scripts" else real(name))
    assert find_devsim() == str(wheel_devsim)


def test_path_comes_before_the_python_beside(tmp_path, monkeypatch):
    on_path = tmp_path / "on-path"
    beside = tmp_path / "beside"
    on_path.mkdir()
    beside.mkdir()
    expected = _executable(on_path)
    _executable(beside)
    monkeypatch.delenv("DEVSIM", raising=False)
    monkeypatch.setenv("PATH", str(on_path))
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(beside) if name == "scripts" else real(name))
    assert find_devsim() == str(expected)


def test_a_configured_binary_that_is_missing_is_not_replaced_by_another(tmp_path, monkeypatch):
    scripts = tmp_path / "venv-bin"
    scripts.mkdir()
    _executable(scripts)
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(scripts) if name == "scripts" else real(name))
    with pytest.raises(ProfileError, match="pip install devsim-harness"):
        find_devsim(str(tmp_path / "missing" / "devsim"))
