"""Finds GPTQModel (an unpacked sdist, never part of this repository) or skips every test, saying why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src"
KIT = HERE.parents[1] / "kit" / "src"
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(PACKAGE))
sys.path.insert(0, str(KIT))

from fakedevsim import Driver


def gptqmodel_src() -> tuple[str | None, str]:
    """(PYTHONPATH entry or None when importable as is, reason when unavailable)."""
    candidates = [os.environ.get("GPTQMODEL_SRC"), str(REPO.parent / "gptqmodel-src")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "gptqmodel" / "__init__.py").is_file():
            return candidate, ""
    probe = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('gptqmodel') is not None)"],
                           capture_output=True, text=True, check=False)
    if probe.stdout.strip() == "True":
        return None, ""
    return None, (
        "GPTQModel is not installed: run subjects/gptqmodel/install.sh (it unpacks the 7.7.0 sdist next to the "
        f"repository, at {REPO.parent / 'gptqmodel-src'}), or point GPTQMODEL_SRC at an unpacked sdist"
    )


SRC, MISSING = gptqmodel_src()


def pytest_collection_modifyitems(config, items):
    if MISSING:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=MISSING))


def subject_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(PACKAGE), str(KIT)] + ([SRC] if SRC else []) + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["BUILD_CUDA_EXT"] = "0"
    return env


@pytest.fixture(scope="session")
def env() -> dict[str, str]:
    return subject_env()


@pytest.fixture(scope="session")
def driver(env):
    """One subject process for the session: scenarios are isolated by the subject itself (a child each)."""
    d = Driver(env)
    d.hello()
    yield d
    code = d.close()
    assert code == 0, d.stderr_text()[-4000:]
