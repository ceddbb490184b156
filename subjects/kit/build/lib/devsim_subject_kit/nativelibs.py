"""Native libraries on a simulated host: what a project loads is recorded, and a GPU library stands in.

A simulated host is assumed to have its GPU runtime installed (HIP or CUDA), which this machine lacks, so a
project's GPU library cannot really load here. `NativeLoads` patches `ctypes.cdll.LoadLibrary` (and
`ctypes.CDLL`) for the files under the project's own folders: each load is recorded as an `extension_load`
event naming the file. A file the project ships is answered by a `StandInLibrary` that exports exactly the
symbols the real file's ELF dynamic symbol table exports (so `hasattr(lib, "get_context")` answers as the real
library would) and refuses every call: native code never runs on a simulated host. A file that does not exist
fails to load as it would for real; any other library loads for real.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from .patches import Patches
from .recorder import Recorder


class SimulatedNativeCall(RuntimeError):
    """A stand-in library's function was called: the simulated host executes no native code."""


@cache
def exported_symbols(path: Path) -> frozenset[str]:
    """The defined, global function and object symbols of an ELF64 little-endian shared object."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path} is not an ELF64 little-endian file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != 11 or not entsize:  # SHT_DYNSYM
            continue
        strtab = sections[link]
        str_off, str_size = strtab[4], strtab[5]
        for i in range(size // entsize):
            st_name, st_info, _other, st_shndx = struct.unpack_from("<IBBH", data, offset + i * entsize)
            binding, typ = st_info >> 4, st_info & 0xF
            # defined (not UNDEF, not ABS version names), GLOBAL/WEAK, OBJECT/FUNC/GNU_IFUNC
            if st_shndx in (0, 0xFFF1) or binding not in (1, 2) or typ not in (1, 2, 10):
                continue
            end = data.index(b"\0", str_off + st_name, str_off + str_size)
            names.add(data[str_off + st_name:end].decode())
    return frozenset(names)


class _StandInFunction:
    """Takes `restype` / `argtypes` like a ctypes function; a call raises SimulatedNativeCall."""

    def __init__(self, library: str, name: str) -> None:
        self.library, self.name = library, name
        self.restype: Any = None
        self.argtypes: Any = None

    def __call__(self, *args: Any) -> Any:
        raise SimulatedNativeCall(f"{self.library}: {self.name}() is native code, which a simulated host never runs")


class StandInLibrary:
    """A shipped GPU library on a simulated host: its real exports, no native code."""

    def __init__(self, path: Path) -> None:
        self._name = str(path)
        self._exports = exported_symbols(path)
        self._functions: dict[str, _StandInFunction] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name not in self._exports:
            raise AttributeError(f"{self._name}: undefined symbol: {name}")
        return self._functions.setdefault(name, _StandInFunction(Path(self._name).name, name))

    def __getitem__(self, name: str) -> Any:
        return self.__getattr__(name)

    def __repr__(self) -> str:
        return f"<StandInLibrary '{self._name}' (simulated host: no native code runs)>"


class NativeLoads:
    """While installed, loads of libraries under `roots` are recorded; GPU ones (`stand_in(path)`) stand in."""

    def __init__(self, recorder: Recorder, roots: Iterable[Path], stand_in: Callable[[Path], bool]) -> None:
        self.recorder = recorder
        self.roots = [Path(r).resolve() for r in roots]
        self.stand_in = stand_in
        self.loaded: list[str] = []
        self._patches = Patches()

    def _ours(self, name: Any) -> Path | None:
        if not isinstance(name, (str, Path)):
            return None
        path = Path(name)
        if not path.is_absolute():
            return None
        resolved = path.resolve()
        return resolved if any(resolved.is_relative_to(root) for root in self.roots) else None

    def load(self, name: Any, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Record a load of one of the project's files, then stand in, fail as for real, or really load."""
        path = self._ours(name)
        if path is None:
            return original(name, *args, **kwargs)
        self.recorder.record("extension_load", None, path.name)
        self.loaded.append(path.name)
        if path.is_file() and self.stand_in(path):
            return StandInLibrary(path)
        return original(name, *args, **kwargs)

    def install(self) -> NativeLoads:
        """Patch ctypes' loaders (idempotent)."""
        if self._patches:
            return self
        loader = ctypes.cdll
        real_load = loader.LoadLibrary
        real_cdll = ctypes.CDLL

        def load_library(name: Any, *args: Any, **kwargs: Any) -> Any:
            return self.load(name, real_load, *args, **kwargs)

        def cdll(name: Any, *args: Any, **kwargs: Any) -> Any:
            return self.load(name, real_cdll, *args, **kwargs)

        self._patches.set(loader, "LoadLibrary", load_library)
        self._patches.set(ctypes, "CDLL", cdll)
        return self

    def uninstall(self) -> None:
        """Restore ctypes."""
        self._patches.undo()
