"""The kit's tests import it from the source tree (no install needed)."""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import os

REPO = Path(__file__).resolve().parents[3]
pytest_plugins = ["pytester"]


def devsim_binary() -> str | None:
    """$DEVSIM, else the repository's own build (release first), else None."""
    if os.environ.get("DEVSIM"):
        return os.environ["DEVSIM"]
    for profile in ("release", "debug"):
        candidate = REPO / "target" / profile / "devsim"
        if candidate.is_file():
            return str(candidate)
    return None

# fixtures/ holds whole project suites that the tests run in pytest subprocesses, not tests of the kit
collect_ignore = ["fixtures"]
