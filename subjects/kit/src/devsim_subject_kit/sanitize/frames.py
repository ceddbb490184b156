"""Which frame is the project's: the site a flag names and its short stack.

A frame is the project's unless its module is torch, the kit, pytest or pluggy, or its file lies in the
interpreter's standard library. Site-packages is not excluded: a project installed there (by pip in a user's
venv, or with `pip install --target` on PYTHONPATH, as the real-bug runner installs one) is still the project.
A dependency the project calls into (transformers, numpy) counts as "project" too: the report gives absolute
files and whoever reads it decides which are the project's own.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType

#: Module prefixes whose frames are never the project's.
NOT_PROJECT_MODULES = ("torch", "devsim_subject_kit", "_pytest", "pytest", "pluggy", "importlib", "xdist",
                       "execnet", "typing_extensions")
#: Frames a flag's stack lists at most.
STACK_DEPTH = 8


def _stdlib_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {os.path.join(os.path.realpath(paths[k]), "") for k in ("stdlib", "platstdlib") if k in paths}
    return tuple(sorted(roots))


_STDLIB = _stdlib_roots()
_VERDICTS: dict[CodeType, bool] = {}


def is_project(frame: FrameType) -> bool:
    """Whether `frame` runs the project's code (cached per code object)."""
    code = frame.f_code
    verdict = _VERDICTS.get(code)
    if verdict is None:
        verdict = _VERDICTS[code] = _classify(code.co_filename, str(frame.f_globals.get("__name__", "")))
    return verdict


def _classify(filename: str, module: str) -> bool:
    for prefix in NOT_PROJECT_MODULES:
        if module == prefix or module.startswith(prefix + "."):
            return False
    if filename.startswith("<frozen") or not filename:
        return False
    if filename.startswith("<"):
        return True  # code the project exec'd
    path = os.path.realpath(filename)
    return not (path.startswith(_STDLIB) and "site-packages" not in path and "dist-packages" not in path)


def project_frame(depth: int = 1) -> FrameType | None:
    """The innermost project frame of the calling thread, starting `depth` frames above the caller."""
    try:
        frame: FrameType | None = sys._getframe(depth + 1)
    except ValueError:
        return None
    while frame is not None and not is_project(frame):
        frame = frame.f_back
    return frame


def where(frame: FrameType) -> tuple[str, int, str]:
    """The absolute file, line and qualified function name of `frame`."""
    code = frame.f_code
    filename = code.co_filename if code.co_filename.startswith("<") else os.path.abspath(code.co_filename)
    return filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name)


def short_stack(frame: FrameType) -> list[str]:
    """`file:line in function` from `frame` outward, the test runner's frames (pytest, pluggy, xdist, runpy)
    left out, at most
    `STACK_DEPTH` entries."""
    out: list[str] = []
    current: FrameType | None = frame
    while current is not None and len(out) < STACK_DEPTH:
        name = str(current.f_globals.get("__name__", ""))
        runner = name.startswith(("_pytest", "pluggy", "pytest", "xdist", "execnet")) or name == "runpy"
        if not runner and not current.f_code.co_filename.startswith("<frozen"):
            filename, line, function = where(current)
            out.append(f"{filename}:{line} in {function}")
        current = current.f_back
    return out
