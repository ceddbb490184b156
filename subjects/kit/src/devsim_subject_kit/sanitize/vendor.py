"""Checks `no-cross-vendor-probe` and `vendor-from-build`: a vendor's fact used to decide on the other vendor's
GPU or build.

- On a HIP build, the capability the project reads (`get_device_capability`, `props.major` / `.minor`) is a
  `Capability`: an int that flags when the project compares it with a number of its own, a threshold
  (`major >= 8`, `cap >= (8, 0)`, and the numbers made from it by `+`, `-`, `*`, as in
  `major * 10 + minor >= 80`). Comparing two capabilities (`sorted(capabilities)`, `max`) is not a flag.
- On a CUDA build, `props.gcnArchName` is an `ArchName`: a str that flags when the project compares it, asks
  `in` or `startswith` / `endswith` of it, or splits it.
- `torch.version.cuda` on a HIP build (None there) and `torch.version.hip` on a CUDA build, read by a project
  frame whose next instruction uses the value as a version text: an attribute of it (`.split`,
  `.startswith`), a comparison, a subscript, `in`, or a call of `int`, `float`, `parse` or `Version` on it.

Only a value read by a project frame is tracked: torch's own reads (`is_bf16_supported` compares the major
itself) never flag at the project line that called torch.
"""

from __future__ import annotations

import dis
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .frames import is_project

if TYPE_CHECKING:
    from .core import Sanitizer

_VERSION_CALLS = frozenset({"int", "float", "parse", "Version", "LooseVersion", "StrictVersion", "version_tuple"})
_USE_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "COMPARE_OP", "BINARY_SUBSCR", "CONTAINS_OP"})
_INSTRUCTIONS: dict[types.CodeType, tuple[list[dis.Instruction], dict[int, int]]] = {}


def install(san: Sanitizer) -> None:
    """Patch the capability and arch reads and `torch.version` for this sanitizer."""
    capability = _capability_class(san)
    arch_name = _arch_class(san)
    from ..simtorch import _Props

    def cap_property(name: str) -> property:
        original: property = vars(_Props)[name]
        getter: Callable[[Any], int] = original.fget  # type: ignore[assignment]

        def read(props: Any) -> int:
            value = getter(props)
            if san.host().is_rocm and is_project(sys._getframe(1)):
                return capability(value)
            return value

        return property(read)

    arch: property = vars(_Props)["gcnArchName"]
    arch_getter: Callable[[Any], str] = arch.fget  # type: ignore[assignment]

    def read_arch(props: Any) -> str:
        value = arch_getter(props)
        if san.host().torch == "cuda" and is_project(sys._getframe(1)):
            return arch_name(value)
        return value

    san.patches.set(_Props, "major", cap_property("major"))
    san.patches.set(_Props, "minor", cap_property("minor"))
    san.patches.set(_Props, "gcnArchName", property(read_arch))

    original_capability: Callable[..., tuple[int, int]] = torch.cuda.get_device_capability

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        major, minor = original_capability(device)
        if san.host().is_rocm and is_project(sys._getframe(1)):
            return capability(major), capability(minor)
        return major, minor

    get_device_capability.__wrapped__ = original_capability  # type: ignore[attr-defined]
    san.patches.set(torch.cuda, "get_device_capability", get_device_capability)
    _patch_version(san)


def _capability_class(san: Sanitizer) -> type[int]:
    def flag(value: int, op: str, other: object) -> None:
        # a threshold: a number of the project's own, not another capability (sorting capabilities decides nothing)
        if isinstance(other, (int, float)) and not isinstance(other, (bool, Capability)):
            san.table.hit("no-cross-vendor-probe",
                          f"an NVIDIA compute capability (here {int(value)}) compared ({op} {other!r}) on an AMD "
                          "GPU, where it is a gfx version, not an NVIDIA feature level: decide on the build's "
                          "vendor (torch.version.hip) or the gfx arch", depth=2)

    class Capability(int):
        """An NVIDIA compute-capability number read on an AMD GPU (a comparison of it is a flag)."""

        __hash__ = int.__hash__

        def __lt__(self, other: object) -> bool:
            flag(self, "<", other)
            return int.__lt__(self, other)  # type: ignore[operator]

        def __le__(self, other: object) -> bool:
            flag(self, "<=", other)
            return int.__le__(self, other)  # type: ignore[operator]

        def __gt__(self, other: object) -> bool:
            flag(self, ">", other)
            return int.__gt__(self, other)  # type: ignore[operator]

        def __ge__(self, other: object) -> bool:
            flag(self, ">=", other)
            return int.__ge__(self, other)  # type: ignore[operator]

        def __eq__(self, other: object) -> bool:
            flag(self, "==", other)
            return int.__eq__(self, other)

        def __ne__(self, other: object) -> bool:
            flag(self, "!=", other)
            return int.__ne__(self, other)

        def __add__(self, other: Any) -> Any:
            return _keep(Capability, int.__add__(self, other))

        __radd__ = __add__

        def __mul__(self, other: Any) -> Any:
            return _keep(Capability, int.__mul__(self, other))

        __rmul__ = __mul__

        def __sub__(self, other: Any) -> Any:
            return _keep(Capability, int.__sub__(self, other))

    return Capability


def _keep(cls: type[int], value: Any) -> Any:
    return cls(value) if type(value) is int else value


def _arch_class(san: Sanitizer) -> type[str]:
    def flag(value: str, how: str) -> None:
        san.table.hit("no-cross-vendor-probe",
                      f"gcnArchName (here {str.__str__(value)!r}) used to decide ({how}) on an NVIDIA GPU, where it "
                      "names no arch: decide on the build's vendor (torch.version.cuda) or the compute capability",
                      depth=2)

    class ArchName(str):
        """`gcnArchName` read on an NVIDIA GPU (deciding on it is a flag)."""

        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            flag(self, f"== {other!r}")
            return str.__eq__(self, other)

        def __ne__(self, other: object) -> bool:
            flag(self, f"!= {other!r}")
            return str.__ne__(self, other)

        def __contains__(self, other: object) -> bool:
            flag(self, f"{other!r} in")
            return str.__contains__(self, other)  # type: ignore[operator]

        def startswith(self, *args: Any) -> bool:
            flag(self, f"startswith{args!r}")
            return str.startswith(self, *args)

        def endswith(self, *args: Any) -> bool:
            flag(self, f"endswith{args!r}")
            return str.endswith(self, *args)

        def split(self, *args: Any, **kwargs: Any) -> list[str]:
            flag(self, "split")
            return str.split(self, *args, **kwargs)

    return ArchName


def _patch_version(san: Sanitizer) -> None:
    """`torch.version` becomes a module of a subclass whose `cuda` and `hip` are properties (undone with the
    other patches)."""
    version = torch.version

    def field(name: str, other_build: str) -> property:
        def read(module: types.ModuleType) -> Any:
            value = vars(module).get(name)
            if value is None and san.host().torch == other_build:
                frame = sys._getframe(1)
                if is_project(frame) and used_as_text(frame):
                    san.table.hit("vendor-from-build",
                                  f"torch.version.{name} used as a version text on a "
                                  f"{'HIP' if other_build == 'hip' else 'CUDA'} build, where it is None: "
                                  f"read the build's vendor first (torch.version.{name} is not None)", frame=frame)
            return value

        def write(module: types.ModuleType, value: Any) -> None:
            vars(module)[name] = value

        return property(read, write)

    sanitized = type("version", (types.ModuleType,), {"cuda": field("cuda", "hip"), "hip": field("hip", "cuda")})
    san.patches.set(version, "__class__", sanitized)


def used_as_text(frame: types.FrameType) -> bool:
    """Whether the instruction after the attribute read `frame` runs now uses its value as a text or version."""
    code = frame.f_code
    known = _INSTRUCTIONS.get(code)
    if known is None:
        instructions = list(dis.get_instructions(code))
        known = _INSTRUCTIONS[code] = (instructions, {ins.offset: n for n, ins in enumerate(instructions)})
    instructions, at = known
    here = at.get(frame.f_lasti)
    if here is None or here + 1 >= len(instructions):
        return False
    following = instructions[here + 1]
    if following.opname in _USE_OPS:
        return True
    if following.opname not in ("PRECALL", "CALL"):
        return False
    start = here  # back over the attribute chain (`torch.version.cuda`) to what loaded the callable
    while start > 0 and instructions[start].opname in ("LOAD_ATTR", "LOAD_METHOD"):
        start -= 1
    callee = instructions[start - 1] if start > 0 else None
    return callee is not None and callee.opname.startswith("LOAD_") and callee.argval in _VERSION_CALLS
