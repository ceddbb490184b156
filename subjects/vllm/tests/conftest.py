"""The vLLM subject's tests: the package and the kit from the source tree; vLLM from its own venv."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src"
KIT = HERE.parents[1] / "kit" / "src"
REPO = HERE.parents[2]
sys.path[:0] = [str(PACKAGE), str(KIT)]
LIBCUDA = Path(os.environ.get("DEVSIM_FAKE_LIBCUDA", REPO / "target" / "fake-drivers" / "cuda" / "libcuda.so.1"))

MISSING = (
    "vLLM is not installed: run subjects/vllm/install.sh" if importlib.util.find_spec("vllm") is None
    else f"devsim's fake libcuda.so.1 is not at {LIBCUDA}: run scripts/build-fake-drivers"
    if not LIBCUDA.is_file() else None
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if MISSING:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=MISSING))


@pytest.fixture(scope="session")
def env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE), str(KIT), env.get("PYTHONPATH", "")])
    env["DEVSIM_FAKE_LIBCUDA"] = str(LIBCUDA)
    env["VLLM_LOGGING_LEVEL"] = "WARNING"
    return env
