"""GPTQModel's native ops that return nothing, checked but not run on a simulated host.

A simulated host is assumed to have GPTQModel's native extensions built (the subject's extension loader says
the load succeeded), but this machine has no build of them, so their `torch.ops` namespaces are absent and a
forward that calls one stops there. Some ops return nothing: they write into output buffers their Python caller
allocated (`Tensor(a!) D ... -> ()`), so, like a Triton launch, skipping them leaves every placement the caller
chose as it was; only the values they would have written stay unwritten.

For an extension whose every required op is such an op, `register` defines those ops under the extension's own
namespace, with the schemas GPTQModel's C++ sources declare (`m.def("...")` in a `TORCH_LIBRARY(namespace, m)`
block of any file under its `gptqmodel_ext/` tree, read once by `scan`) and only where those sources implement
them for CUDA (`TORCH_LIBRARY_IMPL(namespace, CUDA, m)`). The extension's own `sources()` is never called: for
some extensions it runs a kernel generator that writes into GPTQModel's tree. Each call
is checked as the CUDA op would run: every tensor argument a fake tensor on one GPU; anything else is not simulated
(`NotSimulated`). An op that returns a tensor is never defined (its output's shape is the op's own business), so
such an extension's namespace stays absent and GPTQModel's own error is what the warmup reports.

`Registered.remove` takes the definitions back (and torch's cached handles to them), so a reused child starts
the next scenario without them, as a fresh fork would.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor

# m.def( "part" "part" ... ): adjacent C++ string literals, concatenated
_DEF = re.compile(r'\bm\.def\(\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+)')
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_IMPL = re.compile(r"\bTORCH_LIBRARY_IMPL\(\s*(\w+)\s*,\s*(\w+)\s*,")
_NAME = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(")


class NotSimulated(RuntimeError):
    """A checked native op was called in a way its CUDA implementation's placement does not cover."""


@dataclass(frozen=True)
class Declared:
    """What an extension's C++ sources declare for its namespace: each op's schema, and the dispatch keys the
    namespace has implementations for."""

    schemas: dict[str, str]
    dispatch_keys: frozenset[str]


_SOURCE_SUFFIXES = (".cpp", ".cc", ".cu", ".h", ".cuh", ".hpp")
_LIBRARY = re.compile(r"\bTORCH_LIBRARY\(\s*(\w+)\s*,")


def scan(root: Path) -> dict[str, Declared]:
    """Every namespace the C++ files under `root` define with `TORCH_LIBRARY` (regular files only, no symlink
    followed), with its schemas and the dispatch keys `TORCH_LIBRARY_IMPL` gives it; {} when `root` is absent."""
    schemas: dict[str, dict[str, str]] = {}
    keys: dict[str, set[str]] = {}
    for path in sorted(_sources(root)):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for ns, key in _IMPL.findall(text):
            keys.setdefault(ns, set()).add(key)
        defined = _LIBRARY.findall(text)
        if len(set(defined)) != 1:
            continue  # none, or several libraries in one file: whose m.def is whose is not read from a regex
        found = schemas.setdefault(defined[0], {})
        for literals in _DEF.findall(text):
            schema = "".join(_LITERAL.findall(literals))
            name = _NAME.match(schema)
            if name:
                found[name.group(1)] = schema
    return {ns: Declared(schemas=ops, dispatch_keys=frozenset(keys.get(ns, ()))) for ns, ops in schemas.items()}


def _sources(root: Path) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in files:
            path = Path(folder, name)
            if path.suffix in _SOURCE_SUFFIXES and path.is_file() and not path.is_symlink():
                out.append(path)
    return out


def returns_nothing(schema: str) -> bool:
    """Whether a schema's return is `()`."""
    return schema.rsplit("->", 1)[-1].strip() == "()"


@dataclass
class Registered:
    """Ops defined by `register`; `remove` undoes it."""

    namespace: str
    ops: list[str]
    library: Any
    cached_before: set[str]

    def remove(self) -> None:
        self.library._destroy()
        holder = vars(torch.ops).get(self.namespace)
        if holder is not None:
            for name in self.ops:
                if name not in self.cached_before:
                    vars(holder).pop(name, None)


def register(namespace: str, required_ops: tuple[str, ...], catalog: dict[str, Declared]) -> Registered | None:
    """Define an extension's required ops as checked no-ops when every one returns nothing and has a CUDA
    implementation in the sources (`catalog`, from `scan`); None (nothing defined) otherwise, or when the
    namespace already has them."""
    found = catalog.get(namespace)
    if found is None or not required_ops or "CUDA" not in found.dispatch_keys:
        return None
    holder = getattr(torch.ops, namespace, None)
    if holder is not None and all(hasattr(holder, op) for op in required_ops):
        return None
    schemas = [found.schemas.get(op) for op in required_ops]
    if any(schema is None or not returns_nothing(schema) for schema in schemas):
        return None
    cached_before = set(vars(holder)) if holder is not None else set()
    library = torch.library.Library(namespace, "FRAGMENT")
    try:
        for op, schema in zip(required_ops, schemas, strict=True):
            assert schema is not None
            library.define(schema)
            torch.library.register_fake(f"{namespace}::{op}", _checked(f"{namespace}::{op}"), lib=library)
    except Exception:
        library._destroy()
        raise
    return Registered(namespace=namespace, ops=list(required_ops), library=library, cached_before=cached_before)


def prime() -> None:
    """Parent, after the import: fill inspect's module-by-file cache and linecache once. `register_fake` asks
    inspect where it was called from, and on a cache miss inspect walks every imported module (some 5,000 here);
    a forked child that registers ops would otherwise do that walk again, every time."""
    inspect.getframeinfo(sys._getframe())


def _checked(qualname: str) -> Callable[..., None]:
    def run(*args: Any, **kwargs: Any) -> None:
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        if not all(isinstance(t, FakeTensor) for t in tensors):
            raise NotSimulated(f"native op {qualname} was given real tensors")
        devices = {t.device for t in tensors}
        if len(devices) != 1 or next(iter(devices)).type != "cuda":
            raise NotSimulated(
                f"native op {qualname} (implemented for CUDA only) was given tensors on "
                f"{', '.join(sorted(str(d) for d in devices)) or 'no device'}"
            )

    return run
