"""A simulated host has no network and no user cache: code under test that reaches for either fails at once,
and nothing is written (run in a child process: `isolate` changes the process it runs in for good)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

CHILD = """
import os, socket, urllib.request
from pathlib import Path
from devsim_subject_kit import offline
offline.isolate()
try:
    urllib.request.urlopen("http://127.0.0.1:9/", timeout=5)
except OSError as exc:
    print("network:", exc)
try:
    (Path(os.environ["XDG_CACHE_HOME"]) / "project" / "locks").mkdir(parents=True, exist_ok=True)
except OSError as exc:
    print("cache:", type(exc).__name__)
"""


def test_network_and_user_cache_fail_at_once():
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert "network: <urlopen error [Errno 101] a simulated host has no network (devsim)>" in out, out
    assert "cache: NotADirectoryError" in out, out
