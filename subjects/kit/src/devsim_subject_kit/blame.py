"""Which function of the project under test decided an observed value: the `decided_by` of a step's answer
(docs/subject-protocol.md).

A subject names its project's import packages in its handshake (`packages`, e.g. `["gptqmodel"]`). While a step
runs, the kit traces the calls, returns and raises of frames whose code lies inside those packages (nothing
else is traced past its call event) and builds their call tree. An observed value is then placed generically,
with no table per adapter:

- a refusal: the innermost project frame where the exception was raised. When the code under test hands back
  a fresh copy of the exception (GPTQModel re-creates a cached validation error), the latest exception of the
  same type and message raised inside the project this step stands for it;
- a returned value: the outermost project call the adapter made that returned the identical object (`is`),
  then, while a child project call made from the parent's return line returned that same object, that child:
  where the object was made or last decided.

- a trace event (`trace.<event>`, the first of its name in the step): the innermost project frame running when
  it was recorded, the one whose call reached the recorded API.

The adapter says which object each observed field was read from (`observed("family", value)`); the verdict of a
failed step and the trace events need nothing from it (its error message finds the exception; the kit's
`Recorder` reports each event). What cannot be placed is left out, never guessed: devsim shows it as "location
unknown".
"""

from __future__ import annotations

import importlib.util
import os
import sys
import weakref
from collections.abc import Sequence
from types import CodeType, FrameType
from typing import Any, Self

#: Code objects of the expressions Python 3.11 runs as frames of their own: a value or an event made in one is
#: placed at the function that holds it, on the line that holds the expression.
COMPREHENSIONS = frozenset({"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>"})

#: The tracer of the step running now (one step at a time per process).
_active: Tracer | None = None

#: `os.path.realpath` of each path asked for (`real`), kept for the life of the process.
_REAL: dict[str, str] = {}
#: For each set of package roots: every code file name a tracer met -> whether it lies inside them. Kept for the
#: life of the process, and inherited by a forked child (see `prepare`).
_FILES: dict[tuple[str, ...], dict[str, bool]] = {}


def observed(field: str, value: Any) -> None:
    """Say that the answer's `field` was read from `value`, an object the project's code returned or raised
    during this step, before this call. Does nothing outside a traced step."""
    if _active is not None:
        _active.notes[field] = (value, len(_active.top))


def just_returned(value: Any) -> dict[str, Any] | None:
    """Where the project call that has just returned `value` decided it, for a hook the adapter wrapped around
    a project function (the wrapper reads the original's answer): that call is the latest the project frame
    running now made (or, from the adapter itself, the latest top call). None outside a traced step, for a
    value identity says nothing about (None, a bool), or when no such call returned it."""
    tracer = _active
    if tracer is None or value is None or isinstance(value, bool):
        return None
    calls = tracer.stack[-1][1].children if tracer.stack else tracer.top
    node = next((c for c in reversed(calls) if c.made is not None and _is(c.value, value)), None)
    return None if node is None or node.made is None else _at(*node.made)


def observed_at(field: str, place: dict[str, Any] | None) -> None:
    """Say that the answer's `field` was decided at `place` (from `just_returned`), for a value the adapter read
    inside a project call rather than from one it made. Does nothing outside a traced step or for None."""
    if _active is not None and place is not None:
        _active.placed[field] = place


def observed_event(field: str, name: str) -> None:
    """Say that the answer's `field` is what the project read through the query recorded as event `name`
    (vLLM's ROCm arch, read from amdsmi at import): the field is placed where the first such event of the step
    was made. Nothing is placed when the step made none (the project read it in an earlier step)."""
    if _active is not None:
        _active.from_events[field] = f"trace.{name}"


def event(name: str) -> None:
    """A trace event is being recorded: the first of its name in the step is placed at the innermost project
    frame running now (the one whose call reached the recorded API), as `trace.<name>`."""
    tracer = _active
    if tracer is None or not tracer.stack or f"trace.{name}" in tracer.events:
        return
    frame, node = tracer.stack[-1]
    tracer.events[f"trace.{name}"] = _at(node, frame.f_lineno)


def real(path: str) -> str:
    """`os.path.realpath(path)`, resolved once per path in this process (a system call per path component)."""
    found = _REAL.get(path)
    if found is None:
        found = _REAL[path] = os.path.realpath(path)
    return found


def prepare(packages: Sequence[str]) -> None:
    """Classify the file of every module loaded now for tracers inside `packages`, in a parent about to fork: its
    children's tracers then find each of those files in a dictionary instead of resolving its path."""
    roots = package_roots(packages)
    if not roots:
        return
    files = _FILES.setdefault(roots, {})
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str) and name not in files:
            files[name] = _inside(name, roots)


def _inside(name: str, roots: tuple[str, ...]) -> bool:
    """Whether the code file `name` (a code object's `co_filename`) lies inside `roots`."""
    path = real(name) if name and not name.startswith("<") else ""
    return bool(path) and any(path.startswith(root) or path == root.rstrip(os.sep) for root in roots)


def package_roots(packages: Sequence[str]) -> tuple[str, ...]:
    """The folders (or single-file modules) of `packages` as this interpreter imports them, each ending in a
    separator when a folder. A package that cannot be found is left out."""
    roots: list[str] = []
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        locations = list(spec.submodule_search_locations or ())
        if locations:
            roots.extend(os.path.join(real(p), "") for p in locations)
        elif spec.origin:
            roots.append(real(spec.origin))
    return tuple(roots)


class _Weak:
    """A returned value held without keeping it alive (a tensor the adapter drops must be freed: a live step
    measures the memory still held)."""

    __slots__ = ("ref",)

    def __init__(self, ref: weakref.ref[Any]) -> None:
        self.ref = ref


def _hold(value: Any) -> Any:
    """`value` as a node keeps it: weakly where Python allows, else itself (ints, strings, tuples)."""
    try:
        return _Weak(weakref.ref(value))
    except TypeError:
        return value


def _is(held: Any, value: Any) -> bool:
    """Whether what `_hold` kept is `value`."""
    return held.ref() is value if isinstance(held, _Weak) else held is value


class Node:
    """One call of a project function during the step. When it returns, where its value was made is settled
    (`made`) and its children are dropped, so the tree holds no value past the call that could need it."""

    __slots__ = ("call_line", "children", "code", "frame_module", "line", "made", "parent", "value")

    def __init__(self, frame_module: str, code: CodeType, call_line: int, parent: Node | None = None) -> None:
        self.frame_module = frame_module
        self.code = code
        self.parent = parent
        self.call_line = call_line  # the parent project frame's line when it made this call (0: a root)
        self.line = 0  # where it returned or raised
        self.value: Any = None  # what it returned, as `_hold` keeps it
        self.children: list[Node] = []
        self.made: tuple[Node, int] | None = None  # where its returned value was made: a node and its line

    def place(self) -> dict[str, Any]:
        code = self.code
        return {
            "module": self.frame_module,
            "function": getattr(code, "co_qualname", code.co_name),
            "line": self.line or code.co_firstlineno,
            "file": code.co_filename,
        }


class Tracer:
    """Traces the project's frames while a step runs (a context manager), then places observed values."""

    def __init__(self, packages: Sequence[str], roots: tuple[str, ...] | None = None) -> None:
        self.packages = tuple(packages)
        self.roots = package_roots(self.packages) if roots is None else roots
        # code file name -> whether it is the project's: shared by every tracer of these roots in this process
        self.files = _FILES.setdefault(self.roots, {})
        self.stack: list[tuple[FrameType, Node]] = []
        self.top: list[Node] = []  # calls the adapter made into the project, in order
        # id of an exception -> its type, message, and where it was first (innermost) raised in the project
        self.raised: dict[int, tuple[type, str, Node, int]] = {}
        self.raised_order: list[int] = []
        self.notes: dict[str, tuple[Any, int]] = {}  # field -> (value, project calls completed by then)
        self.events: dict[str, dict[str, Any]] = {}  # trace.<event> -> where the first one was made
        self.placed: dict[str, dict[str, Any]] = {}  # field -> where a hook saw it decided (observed_at)
        self.from_events: dict[str, str] = {}  # field -> the trace.<event> it was read through (observed_event)
        self.previous: Any = None
        self.enabled = False

    # -- tracing

    def _is_project(self, code: CodeType) -> bool:
        name = code.co_filename
        known = self.files.get(name)
        if known is None:
            known = self.files[name] = _inside(name, self.roots)
        return known

    def _global(self) -> Any:
        """The global trace function: called for every Python call of the step, so its path for a call outside
        the project is one dictionary lookup on locals, keyed by the code's file name (a string, whose hash is
        kept; a code object's is computed afresh from its contents on every lookup)."""
        files = self.files
        is_project = self._is_project
        enter = self._enter_project

        def call(frame: FrameType, event: str, arg: Any) -> Any:
            code = frame.f_code
            known = files.get(code.co_filename)
            if known is None:
                known = is_project(code)
            return enter(frame) if known else None

        return call

    def _enter_project(self, frame: FrameType) -> Any:
        parent = self.stack[-1] if self.stack else None
        module = frame.f_globals.get("__name__")
        node = Node(
            module if isinstance(module, str) else "",
            frame.f_code,
            parent[0].f_lineno if parent else 0,
            parent[1] if parent else None,
        )
        if parent is None:
            self.top.append(node)
        else:
            parent[1].children.append(node)
        self.stack.append((frame, node))
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return":
            while self.stack:
                top, node = self.stack.pop()
                if top is frame:
                    self._returned(node, frame.f_lineno, arg)
                    break
        elif event == "exception":
            exc = arg[1]
            if self.stack and self.stack[-1][0] is frame and id(exc) not in self.raised:
                # no reference to the exception: its traceback would keep the frames' locals alive
                self.raised[id(exc)] = (type(exc), _message(exc), self.stack[-1][1], frame.f_lineno)
                self.raised_order.append(id(exc))
        return self._local

    def _returned(self, node: Node, line: int, value: Any) -> None:
        """`node` returned `value` on `line`: it was made by the last child called from that line that returned
        the identical object (where that child's was made), else here."""
        node.line = line
        made = None
        if value is not None and not isinstance(value, bool):  # singletons: identity says nothing
            made = next(
                (c.made for c in reversed(node.children) if c.call_line == line and _is(c.value, value)),
                None,
            )
        node.made = made or (node, line)
        for child in node.children:
            child.value = None
        node.children = []
        node.value = _hold(value) if node.parent is None else value

    def __enter__(self) -> Self:
        global _active
        self.previous = sys.gettrace()
        # another tracer (a debugger, coverage) owns the hook: nothing is placed rather than breaking it
        self.enabled = self.previous is None and bool(self.roots)
        if self.enabled:
            _active = self
            sys.settrace(self._global())
        return self

    def __exit__(self, *exc: object) -> None:
        global _active
        if self.enabled:
            sys.settrace(self.previous)
            _active = None

    # -- placing

    def place_raised(self, exc: BaseException) -> dict[str, Any] | None:
        """The innermost project frame where `exc` (or, for a fresh copy, its latest original) was raised."""
        message = _message(exc)
        first = self.raised.get(id(exc))
        if first is not None and first[0] is type(exc) and first[1] == message:
            return _at(first[2], first[3])
        for key in reversed(self.raised_order):
            kind, said, node, line = self.raised[key]
            if kind is type(exc) and said == message:
                return _at(node, line)
        return None

    def place_message(self, message: str) -> dict[str, Any] | None:
        """The innermost raise of the latest project exception whose message is `message`."""
        for key in reversed(self.raised_order):
            _, said, node, line = self.raised[key]
            if said == message:
                return _at(node, line)
        return None

    def place_returned(self, value: Any, before: int | None = None) -> dict[str, Any] | None:
        """Where `value` was made: the latest call the adapter made into the project (of the first `before`) that
        returned it, then down through the child calls made from each return line that returned the same
        object."""
        if value is None or isinstance(value, bool):
            return None  # singletons every function returns: identity says nothing
        calls = self.top if before is None else self.top[:before]
        made = next((n.made for n in reversed(calls) if n.made is not None and _is(n.value, value)), None)
        return None if made is None else _at(*made)

    def place(self, value: Any, before: int | None = None) -> dict[str, Any] | None:
        """Where `value`, raised or returned by the project before its first `before` calls ended, was decided."""
        if isinstance(value, BaseException):
            return self.place_raised(value)
        return self.place_returned(value, before)

    def decisions(self, answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """`decided_by` for an `observed` answer: each noted field placed, and the verdict of a failed step
        placed by its error when the adapter noted nothing for it. Only fields the answer carries."""
        out: dict[str, dict[str, Any]] = {}
        if not self.enabled:
            return out
        failed = answer.get("ok") is False
        for field, (value, before) in self.notes.items():
            if field not in answer or (field == "ok" and failed != isinstance(value, BaseException)):
                continue  # a refusal is the error's decision, an admission the gate's answer
            where = self.place(value, before)
            if where is not None and self._placeable(where):
                out[field] = where
        for field, where in self.placed.items():
            if field in answer and field not in out and self._placeable(where):
                out[field] = where
        for field, key in self.from_events.items():
            made = self.events.get(key)
            if field in answer and field not in out and made is not None and self._placeable(made):
                out[field] = made
        error = answer.get("error")
        if failed and "ok" not in out and isinstance(error, dict):
            message = error.get("message")
            where = self.place_message(message) if isinstance(message, str) else None
            if where is not None and self._placeable(where):
                out["ok"] = where
        recorded = {f"trace.{e.get('event')}" for e in answer.get("trace") or () if isinstance(e, dict)}
        for key, where in self.events.items():
            if key in recorded and self._placeable(where):
                out[key] = where
        return out

    def _placeable(self, where: dict[str, Any]) -> bool:
        """A place devsim accepts: a module inside the packages, a function, a line, a file that exists."""
        module = where["module"]
        inside = any(module == p or module.startswith(p + ".") for p in self.packages)
        return inside and bool(where["function"]) and where["line"] > 0 and os.path.isfile(where["file"])


def _at(node: Node, line: int) -> dict[str, Any]:
    """`node`'s place at `line`; a comprehension's is its enclosing function's, on the line that holds it."""
    while node.code.co_name in COMPREHENSIONS and node.parent is not None:
        node, line = node.parent, node.call_line
    where = node.place()
    where["line"] = line or where["line"]
    return where


def _message(exc: BaseException) -> str:
    """An exception's message as adapters report it (a KeyError's key unquoted); "" when it cannot be read."""
    try:
        if isinstance(exc, KeyError) and exc.args:
            return str(exc.args[0])
        return str(exc)
    except Exception:  # noqa: BLE001 - the project's own __str__ failing is no reason to fail its step
        return ""
