"""Lenient stubs of the real-bug runner, exercised in a fresh interpreter as a session would load them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from devsim_subject_kit.bugs.stubs import PLUGIN, write_stubs

USE = f'''
import importlib, os, sys
importlib.import_module({PLUGIN!r})            # what `-p {PLUGIN}` does before the conftests
import email, email.message
import email.devsim_missing.deeper as deeper      # a dotted stub: that module and below, inside the real package
assert not getattr(email, "__devsim_stub__", False) and email.message.EmailMessage.__module__ == "email.message"
assert deeper.__devsim_stub__ and sys.modules["email.devsim_missing"].__devsim_stub__
import aiohttp                                    # a top-level stub
from aiohttp import web
from aiohttp.web import Application
class View(web.View):                             # a stub's attribute is a class to derive from
    pass
@aiohttp.decorate
def kept():
    return 7
assert kept() == 7 and View().anything(1)[2] is not None and not list(web.routes)
assert os.path.join(aiohttp.CACHE_DIR, "x") == os.path.join("devsim-stub", "x")
assert aiohttp.__version__ == "999.0.0" and aiohttp.__devsim_stub__
try:
    import email.real_missing_but_not_stubbed
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("a module below a real package that is not stubbed must stay missing")
print("ok")
'''


def test_stubs_answer_what_they_name_and_nothing_else(tmp_path: Path) -> None:
    write_stubs(tmp_path, ("aiohttp", "email.devsim_missing"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_devsim_stubs.py", f"{PLUGIN}.py", "aiohttp"]
    done = subprocess.run([sys.executable, "-c", USE], env={"PYTHONPATH": str(tmp_path)}, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


def test_a_top_level_stub_needs_no_plugin(tmp_path: Path) -> None:
    """A Python subprocess of the project (no pytest, no plugin) still imports a top-level stub."""
    write_stubs(tmp_path, ("aiohttp",))
    code = "import aiohttp.web.sub as s, aiohttp; print(s.__devsim_stub__, aiohttp.__devsim_stub__)"
    done = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(tmp_path)}, capture_output=True,
                          text=True, check=False)
    assert done.stdout == "True True\n", done.stderr
