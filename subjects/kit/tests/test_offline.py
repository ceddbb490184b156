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
with socket.socket(socket.AF_INET) as raw:
    try:
        raw.connect(("127.0.0.1", 9))
    except OSError as exc:
        print("raw:", exc)
import tempfile
with tempfile.TemporaryDirectory() as folder:
    server = socket.socket(socket.AF_UNIX)
    server.bind(folder + "/s")
    server.listen()
    client = socket.socket(socket.AF_UNIX)
    client.connect(folder + "/s")
    print("local: connected")
    client.close()
    server.close()
try:
    (Path(os.environ["XDG_CACHE_HOME"]) / "project" / "locks").mkdir(parents=True, exist_ok=True)
except OSError as exc:
    print("cache:", type(exc).__name__)
"""


def test_network_and_user_cache_fail_at_once_and_local_sockets_still_connect():
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert "network: <urlopen error [Errno 101] a simulated host has no network (devsim)>" in out, out
    assert "raw: [Errno 101] a simulated host has no network (devsim)" in out, out
    assert "local: connected" in out, "a local socket is no network"
    assert "cache: NotADirectoryError" in out, out
