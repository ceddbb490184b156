"""Check `visible-devices`: the visible-device masks a process writes, and mask entries used as ordinals.

- A write of `CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES` or `ROCR_VISIBLE_DEVICES` into `os.environ`, or an
  `env=` given to `subprocess.Popen` (and so `run`, `check_output`), by a project frame, is resolved as a child
  process on this host would resolve it: on a HIP build `ROCR_VISIBLE_DEVICES` selects among the GPUs first,
  then `HIP_VISIBLE_DEVICES` (else `CUDA_VISIBLE_DEVICES`) indexes what it left; on a CUDA build
  `CUDA_VISIBLE_DEVICES` alone. Each entry is an ordinal, and a list stops at its first invalid one, as the
  runtimes read it. When every mask set names GPUs (none is empty or negative: hiding every GPU on purpose is
  not flagged) and yet the child would see none, it is a flag: `HIP_VISIBLE_DEVICES=1` with
  `ROCR_VISIBLE_DEVICES=1` on a two-GPU box leaves no GPU. A mask of UUIDs is not judged.
- A mask read from `os.environ` is a `MaskText`; its `split` parts know their position, and `int()` of a part
  notes the number with the project frame that made it, for `queries` (a mask entry used as an ordinal).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any, Self

from ..host import VISIBLE_ENV, Host
from .frames import project_frame

if TYPE_CHECKING:
    from .core import Sanitizer

_MADE = threading.local()  # .ints: deque of (frame, number, variable, entry, position)


def install(san: Sanitizer) -> None:
    """Patch `os.environ`'s reads and writes of the masks and `subprocess.Popen`'s `env=`."""
    environ_class = type(os.environ)
    get: Callable[..., str] = environ_class.__getitem__
    put: Callable[..., None] = environ_class.__setitem__

    def getitem(environ: Any, key: str) -> str:
        value = get(environ, key)
        if key in VISIBLE_ENV and environ is os.environ and san.host().has_gpu_runtime:
            return MaskText(value, variable=key)
        return value

    def setitem(environ: Any, key: str, value: str) -> None:
        put(environ, key, value)
        if key in VISIBLE_ENV and environ is os.environ and san.host().has_gpu_runtime:
            _judge(san, {k: get(environ, k) for k in VISIBLE_ENV if k in environ}, "os.environ")

    original_init: Callable[..., None] = subprocess.Popen.__init__

    def popen_init(process: Any, *args: Any, **kwargs: Any) -> None:
        env = kwargs.get("env")
        if isinstance(env, Mapping) and san.host().has_gpu_runtime and any(k in env for k in VISIBLE_ENV):
            _judge(san, {k: str(env[k]) for k in VISIBLE_ENV if k in env}, "a subprocess's env")
        original_init(process, *args, **kwargs)

    san.patches.set(environ_class, "__getitem__", getitem)
    san.patches.set(environ_class, "__setitem__", setitem)
    san.patches.set(subprocess.Popen, "__init__", popen_init)


def _judge(san: Sanitizer, masks: dict[str, str], where: str) -> None:
    if not masks or any(not v.strip() or v.strip().startswith("-") for v in masks.values()):
        return
    frame = project_frame(2)
    if frame is None or _kit_between(frame):
        return
    seen = child_gpus(san.host(), masks)
    if seen == 0:
        spelled = ", ".join(f"{k}={v}" for k, v in sorted(masks.items()))
        san.table.hit("visible-devices",
                      f"{spelled} in {where} leave a child process no GPU on this host: the masks stack "
                      "(ROCR_VISIBLE_DEVICES selects first, HIP_VISIBLE_DEVICES then indexes what it left); set "
                      "one of them", frame=frame)


def _kit_between(project: FrameType) -> bool:
    """Whether the kit's own code (a host being configured) wrote the masks on the project's behalf."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame is not project:
        if str(frame.f_globals.get("__name__", "")).startswith("devsim_subject_kit.") and \
                not str(frame.f_globals.get("__name__", "")).startswith("devsim_subject_kit.sanitize"):
            return True
        frame = frame.f_back
    return False


def child_gpus(host: Host, masks: Mapping[str, str]) -> int | None:
    """How many GPUs a child process with these masks sees on `host` (None: a mask the check cannot read)."""
    devices: list[int] | None = list(range(len(host.gpus)))
    if host.is_rocm:
        order = ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in masks
                 else "CUDA_VISIBLE_DEVICES"]
    else:
        order = ["CUDA_VISIBLE_DEVICES"]
    for name in order:
        if name in masks and devices is not None:
            devices = _select(devices, masks[name])
    return None if devices is None else len(devices)


def _select(devices: list[int], mask: str) -> list[int] | None:
    chosen: list[int] = []
    for entry in mask.split(","):
        entry = entry.strip()
        if not entry.isdigit():
            if entry.lstrip("-").isdigit():
                break
            return None  # a UUID or another spelling: not judged
        number = int(entry)
        if number >= len(devices) or devices[number] in chosen:
            break
        chosen.append(devices[number])
    return chosen


class MaskText(str):
    """A visible-device mask read from `os.environ`: its parts know where they stood."""

    variable: str
    position: int

    def __new__(cls, value: str, variable: str, position: int = -1) -> Self:
        made = super().__new__(cls, value)
        made.variable, made.position = variable, position
        return made

    def split(self, sep: str | None = None, maxsplit: int = -1) -> list[str]:  # type: ignore[override]
        return [MaskText(part, self.variable, n) for n, part in enumerate(str.split(self, sep, maxsplit))]

    def strip(self, chars: str | None = None) -> MaskText:
        return MaskText(str.strip(self, chars), self.variable, self.position)

    def __int__(self) -> int:
        number = int(str(self))
        frame = project_frame(1)
        if frame is not None and self.position >= 0:
            made = getattr(_MADE, "ints", None)
            if made is None:
                made = _MADE.ints = deque(maxlen=16)
            made.append((frame, number, self.variable, str(self), self.position))
        return number


def ordinal_from_mask(ordinal: int, start: FrameType | None) -> tuple[str, str, int] | None:
    """(variable, entry, position) when `ordinal` was made by `int()` of a mask entry, in a project frame that is
    on the stack from `start` outward, and differs from the entry's position; else None."""
    made = getattr(_MADE, "ints", None)
    if not made:
        return None
    stack = set()
    frame = start
    while frame is not None:
        stack.add(id(frame))
        frame = frame.f_back
    for made_in, number, variable, entry, position in reversed(made):
        if number == ordinal and id(made_in) in stack:
            return None if number == position else (variable, entry, position)
    return None
