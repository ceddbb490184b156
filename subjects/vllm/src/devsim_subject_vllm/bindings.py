"""What a forked child of the vLLM subject needs to resolve vLLM's platform cheaply: the modules that bind the
parent's platform by name (`PlatformBindings`), the installed-package look-ups memoised in the parent
(`memoise_metadata`), the GPU platform modules' bytecode (`PreloadedCode`) and the source lines of the stack vLLM
formats (`preload_source_lines`), both read in the parent."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import os
import sys
from importlib.machinery import ModuleSpec
from types import CodeType
from typing import Any


class PlatformBindings:
    """The modules that bind vLLM's parent platform by name (`current_platform`), found once in the parent.

    A child rebinds every module in sys.modules whose `current_platform` is the parent's platform. Scanning all of
    sys.modules (about 6,000 modules) in a freshly forked child costs a copy-on-write fault for each module's dict
    whose reference count the scan raises: about 150 ms a scenario. So the parent scans once and keeps the version
    tags (kit `DictVersions`, read without writing) of sys.modules and of every module's dict. A module whose
    dict kept its tag holds the very objects it held in the parent, so after resolving the child finds what the
    full scan would find by checking only: the parent's bound modules, the parent's modules whose dict changed
    since (the host patches torch.cuda and torch.version, a fork changes threading), and, when sys.modules
    changed, the entries appended to it since (checked as such: as many new entries as sys.modules grew, then
    the parent's last entry, and none of them one of the parent's modules). Anything else (tags that cannot be
    read here, sys.modules shrunk or reordered, another parent platform) is the full scan."""

    def __init__(self, old: Any) -> None:
        from devsim_subject_kit.dictversions import DictVersions

        self.old = old
        entries = list(sys.modules.values())
        self.count = len(entries)
        self.last = entries[-1] if entries else None
        self.modules = [m for m in entries if m is not None]  # kept alive: their dicts' addresses stay theirs
        self.ids = {id(m) for m in self.modules}
        self.bound = self.scan_list(self.modules, old)
        self.versions = DictVersions.of([sys.modules, *(vars(m) for m in self.modules)])
        self.tags = self.versions.read() if self.versions is not None else None

    @staticmethod
    def scan_list(modules: list[Any], old: Any) -> list[Any]:
        """The modules of `modules` whose `current_platform` is `old`."""
        return [m for m in modules if vars(m).get("current_platform", None) is old]

    @staticmethod
    def scan(old: Any) -> list[Any]:
        """Every module in sys.modules whose `current_platform` is `old` (the full scan)."""
        if old is None:
            return []
        return PlatformBindings.scan_list([m for m in list(sys.modules.values()) if m is not None], old)

    def holders(self, old: Any) -> list[Any]:
        """After resolving: what `scan(old)` finds now."""
        if old is None or old is not self.old or self.versions is None or self.tags is None:
            return self.scan(old)
        changed = self.versions.changed(self.tags, self.versions.read())
        suspects = {id(m): m for m in self.bound}
        suspects.update((id(self.modules[i - 1]), self.modules[i - 1]) for i in changed if i > 0)
        if 0 in changed:  # sys.modules changed: only appended entries are accepted
            grown = len(sys.modules) - self.count
            if grown < 0 or self.last is None:  # shrunk, or no last module to recognise the parent's entries by
                return self.scan(old)
            # the newest entries, newest first, without touching the others (each touched object is a page copied)
            newest = list(itertools.islice(reversed(sys.modules.values()), grown + 1))
            if len(newest) != grown + 1 or newest[-1] is not self.last or any(id(m) in self.ids for m in newest[:-1]):
                return self.scan(old)
            suspects.update((id(m), m) for m in newest[:-1] if m is not None)
        return self.scan_list(list(suspects.values()), old)


#: The importlib.metadata look-ups vLLM's platform detection makes in every child: the installed distributions'
#: platform plugins (`load_plugins_by_group`, about 70 ms: it reads every dist-info's entry points) and vLLM's
#: version (`vllm_version_matches_substr`, five times). They read the installed packages, which no simulated host
#: changes; each answer is memoised in the parent, by the look-up's arguments and sys.path.
MEMOISED_METADATA: list[tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]]] = [
    ("entry_points", (), (("group", "vllm.platform_plugins"),)),
    ("version", ("vllm",), ()),
]


def memoise_metadata() -> None:
    """Wrap `importlib.metadata.entry_points` and `version` so that the look-ups in MEMOISED_METADATA answer what
    the parent read (the same sys.path only); every other call goes to importlib.metadata as it is."""
    from importlib import metadata

    for name in {n for n, _, _ in MEMOISED_METADATA}:
        real = getattr(metadata, name)
        if getattr(real, "__devsim_memo__", None) is not None:
            continue
        memo: dict[Any, Any] = {}
        for n, args, kwargs in MEMOISED_METADATA:
            if n == name:
                memo[(args, kwargs, tuple(sys.path))] = real(*args, **dict(kwargs))

        def wrapper(*args: Any, _real: Any = real, _memo: dict[Any, Any] = memo, **kwargs: Any) -> Any:
            try:
                return _memo[(args, tuple(sorted(kwargs.items())), tuple(sys.path))]
            except (KeyError, TypeError):
                return _real(*args, **kwargs)

        wrapper.__devsim_memo__ = memo  # type: ignore[attr-defined]
        wrapper.__wrapped__ = real  # type: ignore[attr-defined]
        wrapper.__doc__ = real.__doc__
        setattr(metadata, name, wrapper)


class PreloadedCode(importlib.abc.MetaPathFinder):
    """Code objects of modules a child imports for the first time, compiled (read from their .pyc) in the parent.

    `vllm.platforms.cuda` and `.rocm` read the host when they run, so each child imports the one its host needs
    afresh; only reading and unmarshalling their bytecode (and the path search that finds it) is the same for every
    host. This finder, first on sys.meta_path, answers those names with the parent's code object under the module's
    own spec (the same file, `__file__` and `__cached__`); the module's body still runs in the child. A source file
    that changed since (size or mtime) is found as usual."""

    def __init__(self, names: list[str]) -> None:
        self.entries: dict[str, tuple[str, tuple[int, int], CodeType]] = {}
        for name in names:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                continue
            loader = spec.loader if spec is not None else None
            if spec is None or spec.origin is None or type(loader) is not importlib.machinery.SourceFileLoader:
                continue
            code = loader.get_code(name)
            if code is not None:
                self.entries[name] = (spec.origin, stamp(spec.origin), code)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        entry = self.entries.get(name)
        if entry is None:
            return None
        origin, stamped, code = entry
        try:
            if stamp(origin) != stamped:
                return None
        except OSError:
            return None
        return importlib.util.spec_from_file_location(name, origin, loader=_CodeLoader(name, origin, code))

    def install(self) -> PreloadedCode:
        """First on sys.meta_path (once)."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        return self


class _CodeLoader(importlib.machinery.SourceFileLoader):
    """A source file's loader that hands out the code compiled in the parent."""

    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self.code = code

    def get_code(self, fullname: str) -> CodeType:
        return self.code


def stamp(path: str) -> tuple[int, int]:
    """A source file's mtime and size."""
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


def preload_source_lines(modules: list[str]) -> None:
    """Read the source of `modules` into linecache: vLLM formats the stack that resolved its platform
    (`_init_trace`) in every child, which read each file on it afresh. linecache still checks each file's size and
    mtime when the stack is formatted."""
    import linecache

    for name in modules:
        filename = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(filename, str):
            linecache.getlines(filename)
