"""A project's import-time state: constants to re-evaluate per host, caches to clear, and the reuse check.

A project imported once (in the fork server's parent) computed its import-time constants (`IS_ROCM`,
`HAS_CUDA`, ...) on the import host. `ProjectState` re-evaluates each declared constant for the scenario's host
and rebinds it in every module that imported it by name (`from .rocm import IS_ROCM`), clears the project's
functools caches, and tells whether a child that ran a scenario is still as it was when the scenario began
(`unchanged`), so the fork server may run the next scenario of the same host in it.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
import threading
import types
from collections.abc import Iterable
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class Constant:
    """An import-time constant: its defining module, name, and the expression that computes it there."""

    module: str
    name: str
    expr: str

    @classmethod
    def from_table(cls, entry: dict[str, Any]) -> Constant:
        """One `[[constant]]` table of a subject's constants.toml."""
        return cls(module=str(entry["module"]), name=str(entry["name"]), expr=str(entry["expr"]))


class ProjectState:
    """The mutable import-time state of the modules whose names start with one of `prefixes`."""

    def __init__(self, prefixes: Iterable[str], constants: Iterable[Constant] = ()) -> None:
        self.prefixes = tuple(prefixes)
        self.constants = list(constants)
        self.warnings: list[str] = []
        self._constant_plan: list[tuple[ModuleType, str, CodeType, list[ModuleType]]] = []
        self._caches: list[Any] = []
        self._dicts: list[Any] = []
        self._seqs: list[Any] = []
        self._snapshot: tuple[Any, ...] = ()

    def modules(self) -> list[ModuleType]:
        """The project's imported modules."""
        return [m for name, m in list(sys.modules.items()) if m and name.startswith(self.prefixes)]

    def plan(self) -> None:
        """Parent, after the import: find, once, every binding of each constant, every functools cache and the
        state a reused child is checked against (a forked child pays a copy-on-write fault per object it
        touches, so children only touch these)."""
        modules = self.modules()
        by_name = {m.__name__: m for m in modules}
        self._constant_plan = []
        for const in self.constants:
            home = by_name.get(const.module)
            if home is None:
                self.warnings.append(f"constant {const.module}.{const.name}: {const.module} is not imported")
                continue
            old = getattr(home, const.name)
            holders = [home] + [m for m in modules if m is not home and vars(m).get(const.name, _MISSING) is old]
            code = compile(const.expr, f"<constant {const.module}.{const.name}>", "eval")
            self._constant_plan.append((home, const.name, code, holders))
        caches: dict[int, Any] = {}
        for mod in modules:
            for value in list(vars(mod).values()):
                _collect_cache(value, caches)
                if isinstance(value, type) and value.__module__ == mod.__name__:
                    for attr in list(vars(value).values()):
                        if isinstance(attr, (classmethod, staticmethod)):
                            attr = attr.__func__
                        _collect_cache(attr, caches)
        self._caches = list(caches.values())
        self._plan_state(modules)

    def reset_constants(self) -> None:
        """Child: re-evaluate each import-time constant for this host and rebind it wherever it was imported."""
        for home, name, code, holders in self._constant_plan:
            new = eval(code, vars(home))
            for mod in holders:
                setattr(mod, name, new)

    def clear_caches(self) -> None:
        """Child: the project's functools caches (host-dependent answers filled lazily)."""
        for cache in self._caches:
            cache.cache_clear()

    # -- reuse of a child across scenarios of the same host

    def remember(self) -> None:
        """A scenario begins: snapshot what `unchanged` compares."""
        self._snapshot = (
            [_plain(d).copy() for d in self._dicts],
            [list.copy(q) if isinstance(q, list) else set.copy(q) for q in self._seqs],
            *process_state(),
        )

    def unchanged(self) -> bool:
        """Whether every snapshotted namespace, container, environment variable, module, thread count and torch
        switch is what it was at `remember` (compared by identity, so a rebinding, an insertion, a removal or a
        replaced element anywhere is seen)."""
        before = self._snapshot
        if not before or before[2:] != process_state():
            return False
        dicts, seqs = before[0], before[1]
        for old, new in zip(dicts, self._dicts):
            live = _plain(new)
            if len(live) != len(old) or live.keys() != old.keys():
                return False
            if not all(map(operator.is_, old.values(), live.values())):
                return False
        for old_seq, new_seq in zip(seqs, self._seqs):
            if isinstance(old_seq, list):
                if list.__len__(new_seq) != len(old_seq) or not all(map(operator.is_, old_seq, list.copy(new_seq))):
                    return False
            elif {id(x) for x in old_seq} != {id(x) for x in set.copy(new_seq)}:
                return False
        return True

    def _plan_state(self, modules: list[ModuleType]) -> None:
        """Every project module's namespace, the namespaces of the classes defined there, and, three levels deep,
        the dicts, lists, sets and instance namespaces those hold."""
        skip = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                functools._lru_cache_wrapper, str, bytes, int, float, bool, type(None))
        dicts: dict[int, Any] = {}
        seqs: dict[int, Any] = {}

        def walk(value: Any, depth: int) -> None:
            if depth > 3:
                return
            if isinstance(value, dict):
                if id(value) in dicts:
                    return
                dicts[id(value)] = value
                for item in list(value.values()):
                    walk(item, depth + 1)
            elif isinstance(value, (list, set)):
                if id(value) not in seqs:
                    seqs[id(value)] = value
                    for item in list(value)[:256]:
                        walk(item, depth + 1)
            elif not isinstance(value, skip):
                namespace = getattr(value, "__dict__", None) if not isinstance(value, type) else None
                if isinstance(namespace, dict):
                    walk(namespace, depth)

        for mod in modules:
            walk(vars(mod), 0)
            for value in list(vars(mod).values()):
                if isinstance(value, type) and value.__module__ == mod.__name__:
                    for attr in list(vars(value).values()):
                        walk(attr, 1)
                    dicts.setdefault(id(value.__dict__), value.__dict__)
        self._dicts = list(dicts.values())
        self._seqs = list(seqs.values())


def process_state() -> tuple[Any, ...]:
    """The process environment, the modules imported, the live threads and torch's global switches."""
    import torch

    return (
        dict(os.environ),
        frozenset(sys.modules),
        threading.active_count(),
        (torch.get_default_dtype(), torch.get_num_threads(), torch.is_grad_enabled(),
         torch.is_inference_mode_enabled(), torch.are_deterministic_algorithms_enabled()),
    )


def _plain(namespace: Any) -> Any:
    """A namespace read without running subclass code: a class's mappingproxy as is (its methods read the class's
    own dict), any dict (also a subclass such as an LRU mapping, whose methods may reorder it) as a base dict."""
    if isinstance(namespace, dict) and type(namespace) is not dict:
        return dict.copy(namespace)
    return namespace


def _collect_cache(value: Any, caches: dict[int, Any]) -> None:
    """functools caches (lru_cache / cache) only: projects have lazy proxies whose attribute access has effects,
    so nothing else is probed."""
    if isinstance(value, functools._lru_cache_wrapper):
        caches[id(value)] = value
