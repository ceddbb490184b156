"""The bitsandbytes subject's tests: the package and the kit from the source tree; bitsandbytes from the venv."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src"
KIT = HERE.parents[1] / "kit" / "src"
sys.path[:0] = [str(PACKAGE), str(KIT)]

MISSING = None if importlib.util.find_spec("bitsandbytes") else "bitsandbytes is not installed: run subjects/bitsandbytes/install.sh"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if MISSING:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=MISSING))


@pytest.fixture(scope="session")
def env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE), str(KIT), env.get("PYTHONPATH", "")])
    return env
