"""A project's import-time state: constants to re-evaluate per host, caches to clear, and the reuse check.

A project imported once (in the fork server's parent) computed its import-time constants (`IS_ROCM`,
`HAS_CUDA`, ...) on the import host. `ProjectState` re-evaluates each declared constant for the scenario's host
and rebinds it in every module that imported it by name (`from .rocm import IS_ROCM`), clears the project's
functools caches, and tells whether a child that ran a scenario is still as it was when the scenario began
(`unchanged`), so the fork server may run the next scenario of the same host in it.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import functools
import gc
import operator
import os
import sys
import sysconfig
import threading
import types
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from types import CodeType, ModuleType
from typing import Any

from .dictversions import DictVersions

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


@dataclass(frozen=True)
class Reset:
    """State the project fills as it runs whose content no decision reads back as state (a memo of
    host-dependent answers, a warn-once table, a helper built on first use): every scenario starts with it as
    the parent had it, so that filling it does not cost the next scenario of the host a fresh fork. `expr` finds
    a container (a dict, an OrderedDict, a set or a list) in `module`'s namespace, put back to the parent's
    content in place; `name` instead names a global of `module` put back to the parent's object (a singleton the
    project binds lazily). `why` says why restoring it is the same as a fresh fork."""

    module: str
    expr: str
    why: str
    name: str = ""

    @classmethod
    def from_table(cls, entry: dict[str, Any]) -> Reset:
        """One `[[reset]]` table of a subject's constants.toml (`expr` or `name`)."""
        return cls(
            module=str(entry["module"]), expr=str(entry.get("expr", "")), why=str(entry["why"]),
            name=str(entry.get("name", "")),
        )


def _free_names(expr: str) -> set[str]:
    """The global names an expression reads (not attributes, not names it binds itself)."""
    tree = ast.parse(expr, mode="eval")
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


class ProjectState:
    """The mutable import-time state of the modules whose names start with one of `prefixes`."""

    def __init__(
        self, prefixes: Iterable[str], constants: Iterable[Constant] = (), resets: Iterable[Reset] = ()
    ) -> None:
        self.prefixes = tuple(prefixes)
        self.constants = list(constants)
        self.resets = list(resets)
        self._restores: list[tuple[Any, Any]] = []  # (container, the parent's content)
        self._rebinds: list[tuple[dict[str, Any], str, Any]] = []  # (namespace, global, the parent's object)
        self.warnings: list[str] = []
        # constants whose expression names globals their module lacks (another release of the project):
        # "module.name" -> (the missing names, the modules that hold the constant); never re-evaluated
        self.unevaluable: dict[str, tuple[list[str], frozenset[str]]] = {}
        self._constant_plan: list[tuple[ModuleType, str, CodeType, list[ModuleType]]] = []
        self._caches: list[Any] = []
        # the walked containers: (exact builtins, subclasses) of each kind, and all of them in that order
        self._dicts: tuple[list[dict[Any, Any]], list[dict[Any, Any]]] = ([], [])
        self._lists: tuple[list[list[Any]], list[list[Any]]] = ([], [])
        self._sets: tuple[list[set[Any]], list[set[Any]]] = ([], [])
        self._containers: list[Any] = []  # those `_contents` lists (the dicts only where their tags are unread)
        self._all_dicts: list[dict[Any, Any]] = []
        self._versions: DictVersions | None = None  # the walked dicts' version tags, where they can be read
        self._tags: Any = None  # the tags the dicts' remembered contents go with
        self._dict_contents: list[tuple[list[Any], list[Any]]] = []  # each dict's keys and values at `remember`
        self._holders: list[tuple[dict[str, Any], frozenset[str]]] = []  # namespaces constants are bound in
        self._bound: list[tuple[dict[str, Any], str, Any]] = []  # what reset_constants bound, where
        self._snapshot: tuple[Any, ...] = ()
        self._verified = False  # the snapshot still describes this process (unchanged() said so last)

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
            if not hasattr(home, const.name):
                self.warnings.append(f"constant {const.module}.{const.name}: {const.module} has no {const.name} "
                                     "(nothing to re-evaluate)")
                continue
            old = getattr(home, const.name)
            holders = [home] + [m for m in modules if m is not home and vars(m).get(const.name, _MISSING) is old]
            lacking = sorted(_free_names(const.expr) - set(vars(home)) - set(vars(builtins)))
            if lacking:
                self.unevaluable[f"{const.module}.{const.name}"] = (lacking, frozenset(m.__name__ for m in holders))
                self.warnings.append(f"constant {const.module}.{const.name}: its expression needs {', '.join(lacking)}, "
                                     f"which {const.module} lacks; not re-evaluated per host")
                continue
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
        self._plan_resets(by_name)
        self._plan_state(modules)

    def _plan_resets(self, by_name: dict[str, ModuleType]) -> None:
        self._restores = []
        self._rebinds = []
        for reset in self.resets:
            home = by_name.get(reset.module)
            where = f"reset {reset.module}: {reset.name or reset.expr}"
            if home is None:
                self.warnings.append(f"{where}: {reset.module} is not imported")
                continue
            if bool(reset.name) == bool(reset.expr):
                self.warnings.append(f"{where}: names neither or both of a container (expr) and a global (name)")
                continue
            if reset.name:
                if reset.name not in vars(home):
                    self.warnings.append(f"{where}: {reset.module} has no global {reset.name}")
                    continue
                self._rebinds.append((vars(home), reset.name, vars(home)[reset.name]))
                continue
            container = eval(compile(reset.expr, f"<{where}>", "eval"), vars(home))
            if type(container) not in (dict, OrderedDict, set, list):
                self.warnings.append(f"{where}: a {type(container).__name__}, not a dict, set or list")
                continue
            self._restores.append((container, type(container).copy(container)))

    def reset_constants(self) -> None:
        """Child: re-evaluate each import-time constant for this host and rebind it wherever it was imported."""
        self._bound = []
        for home, name, code, holders in self._constant_plan:
            new = eval(code, vars(home))
            for mod in holders:
                setattr(mod, name, new)
                self._bound.append((vars(mod), name, new))

    def clear_caches(self) -> None:
        """Child: the project's functools caches (host-dependent answers filled lazily), each declared
        `Reset` container back to the parent's content (the same objects, in place) and each declared global
        back to the parent's object."""
        for cache in self._caches:
            cache.cache_clear()
        for namespace, name, value in self._rebinds:
            namespace[name] = value
        for container, content in self._restores:
            if type(container) is list:
                container[:] = content
            else:
                container.clear()
                container.update(content)

    # -- reuse of a child across scenarios of the same host

    def remember(self) -> None:
        """A scenario begins: snapshot what `unchanged` compares. In a child reused after `unchanged` held, the
        snapshot still describes it (entering the host again rebinds only the constants, which `unchanged`
        checks against what `reset_constants` bound this time), so it is kept."""
        if self._snapshot and self._verified:
            return
        self._snapshot = (self._contents(), self._holder_contents(), *process_state())
        self._remember_dicts()

    def unchanged(self) -> bool:
        """Whether every snapshotted namespace, container, environment variable, module, thread count and torch
        switch is what it was at `remember` (compared by identity, so a rebinding, an insertion, a removal or a
        replaced element anywhere is seen)."""
        self._verified = False
        before = self._snapshot
        if not before or before[2:] != process_state():
            return False
        (sizes, keys, values), (now_sizes, now_keys, now_values) = before[0], self._contents()
        self._verified = (
            sizes == now_sizes
            and same_objects(keys, now_keys)
            and same_objects(values, now_values)
            and self._dicts_unchanged()
            and self._holders_unchanged(before[1])
            and all(dict.get(namespace, name, _MISSING) is value for namespace, name, value in self._bound)
        )
        return self._verified

    def _contents(self) -> tuple[list[int], list[Any], list[Any]]:
        """Every snapshotted container's size, the keys of its dicts, and everything the containers hold, each in
        one flat list; where the dicts' version tags can be read (`DictVersions`), the dicts are left out here
        (`_dicts_unchanged` checks them). The held objects come from one `gc.get_referents` call (the containers'
        own C traversal: every dict value and non-string key, list item and set member, in order, and no subclass
        code run); the dicts' string keys, which that traversal skips, from iterating them. A few C-level passes,
        however many containers there are; the sizes keep an entry that moved from one container to the next from
        looking unchanged. Exact builtins are measured and iterated with `len` and `iter`; a subclass through the
        base type's methods, so that none of its own code runs."""
        (dicts, subdicts), (lists, sublists), (sets, subsets) = self._dicts, self._lists, self._sets
        if self._versions is not None:
            dicts, subdicts = [], []
        sizes = [
            *map(len, dicts), *map(dict.__len__, subdicts), *map(len, lists), *map(list.__len__, sublists),
            *map(len, sets), *map(set.__len__, subsets),
        ]
        keys = list(chain(chain.from_iterable(dicts), chain.from_iterable(map(dict.keys, subdicts))))
        return sizes, keys, gc.get_referents(*self._containers)

    def _remember_dicts(self) -> None:
        """Where the version tags can be read: each dict's tag, keys and values as the scenario found them."""
        if self._versions is not None:
            self._tags = self._versions.read()
            self._dict_contents = [(list(dict.keys(d)), list(dict.values(d))) for d in self._all_dicts]

    def _dicts_unchanged(self) -> bool:
        """Whether every dict holds what it held at `remember`. A dict whose tag is the same has not changed; one
        whose tag moved (a change, or a change put back, as `clear_caches` does) is compared key by key and value
        by value, by identity. The tags read now stand for the verified contents afterwards."""
        if self._versions is None:
            return True  # compared in _contents
        now = self._versions.read()
        for i in self._versions.changed(self._tags, now):
            keys, values = self._dict_contents[i]
            d = self._all_dicts[i]
            if not (same_objects(keys, list(dict.keys(d))) and same_objects(values, list(dict.values(d)))):
                return False
        self._tags = now
        return True

    def _holder_contents(self) -> list[tuple[list[Any], list[Any], list[int]]]:
        """Each namespace a constant is bound in: its keys, its values, and the positions of the constants (a
        re-evaluated constant is a new object, so those positions are checked against `reset_constants`)."""
        out = []
        for namespace, names in self._holders:
            keys = list(dict.keys(namespace))
            out.append((keys, list(dict.values(namespace)), [i for i, k in enumerate(keys) if k in names]))
        return out

    def _holders_unchanged(self, before: list[tuple[list[Any], list[Any], list[int]]]) -> bool:
        for (old_keys, old_values, positions), (namespace, _) in zip(before, self._holders):
            if dict.__len__(namespace) != len(old_keys) or not all(map(operator.is_, old_keys, dict.keys(namespace))):
                return False
            values = list(dict.values(namespace))
            for i in positions:
                values[i] = old_values[i]
            if not all(map(operator.is_, old_values, values)):
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
        bound: dict[int, set[str]] = {}
        for _, name, _, holders in self._constant_plan:
            for mod in holders:
                bound.setdefault(id(vars(mod)), set()).add(name)
        self._holders = [(d, frozenset(bound[id(d)])) for d in dicts.values() if id(d) in bound]
        # a class namespace (a mappingproxy) is read through the dict it wraps, its only referent
        plain = [d if isinstance(d, dict) else gc.get_referents(d)[0] for d in dicts.values()]
        self._dicts = _by_exact_type([d for d in plain if isinstance(d, dict) and id(d) not in bound], dict)
        self._lists = _by_exact_type([q for q in seqs.values() if isinstance(q, list)], list)
        self._sets = _by_exact_type([q for q in seqs.values() if not isinstance(q, list)], set)
        self._all_dicts = [*chain(*self._dicts)]
        self._versions = DictVersions.of(self._all_dicts)
        compared = [] if self._versions is not None else self._all_dicts
        self._containers = [*compared, *chain(*self._lists), *chain(*self._sets)]


def _environment() -> dict[Any, Any]:
    """A copy of the process environment as `os.environ` holds it: its encoded mapping where it keeps one (a C-level
    copy; decoding each variable costs more than the rest of the reuse check's process state), else decoded."""
    data = getattr(os.environ, "_data", None)
    return dict(data) if isinstance(data, dict) else dict(os.environ)


def _by_exact_type(containers: list[Any], base: type) -> tuple[list[Any], list[Any]]:
    """`containers` split into those of exactly type `base` and its subclasses, each in their order."""
    return [c for c in containers if type(c) is base], [c for c in containers if type(c) is not base]


def process_state() -> tuple[Any, ...]:
    """The process environment, the modules imported, the live threads and torch's global switches."""
    import torch

    return (
        _environment(),
        frozenset(sys.modules),
        threading.active_count(),
        (torch.get_default_dtype(), torch.get_num_threads(), torch.is_grad_enabled(),
         torch.is_inference_mode_enabled(), torch.are_deterministic_algorithms_enabled()),
    )


def same_objects(before: list[Any], now: list[Any]) -> bool:
    """Whether two lists hold the very same objects in the same order (identity, never `__eq__`). `before` must
    be kept alive by the caller, so that none of its objects' addresses can be reused by a new object. On
    CPython's list layout this compares the two arrays of object pointers as bytes (one memcmp, some 50 times
    faster than an `is` per element); elsewhere it falls back to `operator.is_` element by element."""
    if len(before) != len(now):
        return False
    if _LIST_LAYOUT:
        return _pointer_bytes(before) == _pointer_bytes(now)
    return all(map(operator.is_, before, now))


def _pointer_bytes(items: list[Any]) -> bytes:
    """A CPython list's `ob_item` array (its elements' addresses), as bytes."""
    if not items:
        return b""
    base = ctypes.c_void_p.from_address(id(items) + _OB_ITEM).value or 0  # NULL only for an empty list
    return ctypes.string_at(base, len(items) * _POINTER) if base else b""


def _list_layout_is_known() -> bool:
    """Whether lists here have the layout `_pointer_bytes` reads: a release, GIL-enabled CPython, whose
    PyVarObject header (refcount, type, size) is followed by the `ob_item` pointer; checked on a sample list."""
    if sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):
        return False
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    sample = [object(), object(), object()]
    size = ctypes.c_ssize_t.from_address(id(sample) + _OB_ITEM - _POINTER).value
    if size != len(sample):
        return False
    expected = b"".join(id(item).to_bytes(_POINTER, sys.byteorder) for item in sample)
    return _pointer_bytes(sample) == expected


_POINTER = ctypes.sizeof(ctypes.c_void_p)
_OB_ITEM = 3 * _POINTER  # after ob_refcnt, ob_type and ob_size
_LIST_LAYOUT = _list_layout_is_known()


def _collect_cache(value: Any, caches: dict[int, Any]) -> None:
    """functools caches (lru_cache / cache) only: projects have lazy proxies whose attribute access has effects,
    so nothing else is probed."""
    if isinstance(value, functools._lru_cache_wrapper):
        caches[id(value)] = value
