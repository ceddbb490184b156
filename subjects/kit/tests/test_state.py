"""ProjectState's reuse check sees every change a scenario can make to the walked state, and nothing else.

Each test builds a small project (modules named `devsimtoy*`) in this process, plans it as the fork server's
parent would, then plays a scenario on it: `remember` at its start, changes, `clear_caches`, `unchanged`.
"""

from __future__ import annotations

import sys
import types
from collections import OrderedDict
from collections.abc import Iterator

import pytest

pytest.importorskip("torch")  # process_state reads torch's switches

from devsim_subject_kit import Constant, ProjectState, Reset
from devsim_subject_kit import state as state_module


class Holder:
    def __init__(self) -> None:
        self.settings = {"mode": "a"}


@pytest.fixture
def project() -> Iterator[tuple[types.ModuleType, types.ModuleType]]:
    """Two modules: `devsimtoy.core` defines a constant, a class, tables and an instance; `devsimtoy.user`
    imported the constant by name."""
    core = types.ModuleType("devsimtoy.core")
    kernel = type("Kernel", (), {"limit": 4, "__module__": "devsimtoy.core"})
    vars(core).update(HOSTS=["x"], MEMO={}, ONCE=set(), PLANS=OrderedDict(), BRIDGE=None, Kernel=kernel,
                      holder=Holder())
    core.IS_FAST = tuple(core.HOSTS)
    user = types.ModuleType("devsimtoy.user")
    user.IS_FAST = core.IS_FAST
    user.registry = {"a": 1, "b": 2}
    user.other = {}
    sys.modules.update({"devsimtoy.core": core, "devsimtoy.user": user})
    yield core, user
    for name in ("devsimtoy.core", "devsimtoy.user"):
        sys.modules.pop(name, None)


def planned(resets: tuple[Reset, ...] = ()) -> ProjectState:
    state = ProjectState(
        ("devsimtoy",), [Constant(module="devsimtoy.core", name="IS_FAST", expr="tuple(HOSTS)")], resets
    )
    state.plan()
    assert state.warnings == []
    state.reset_constants()  # entering a host: the constant is a new object, bound in both modules
    state.remember()
    return state


def test_an_untouched_project_is_unchanged_and_stays_so_across_reuses(project):
    state = planned()
    for _ in range(3):
        state.clear_caches()
        assert state.unchanged()
        state.reset_constants()  # the next scenario of the host enters again: new constant objects
        state.remember()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda core, user: user.registry.update(c=3), id="an insertion"),
        pytest.param(lambda core, user: user.registry.pop("b"), id="a removal"),
        pytest.param(lambda core, user: user.registry.update(a=object()), id="a replaced value"),
        pytest.param(lambda core, user: user.other.update(b=user.registry.pop("b")), id="an entry moved"),
        pytest.param(lambda core, user: core.HOSTS.append("y"), id="a list item"),
        pytest.param(lambda core, user: setattr(core.Kernel, "limit", 8), id="a class attribute"),
        pytest.param(lambda core, user: core.holder.settings.update(mode="b"), id="an instance's dict"),
        pytest.param(lambda core, user: setattr(core, "late", 1), id="a new global"),
        pytest.param(lambda core, user: setattr(user, "IS_FAST", True), id="a constant rebound by the scenario"),
        pytest.param(lambda core, user: core.ONCE.add(1), id="a set member"),
        pytest.param(lambda core, user: user.registry.update(a=1.0), id="an equal, distinct item"),
        pytest.param(lambda core, user: core.PLANS.update(k=1), id="a dict subclass's entry"),
    ],
)
@pytest.mark.parametrize("pointers", [True, False], ids=["by pointer bytes", "by is"])
@pytest.mark.parametrize("tags", [True, False], ids=["dicts by version tag", "dicts by contents"])
def test_every_change_to_the_walked_state_is_seen(project, change, pointers, tags, monkeypatch):
    core, user = project
    monkeypatch.setattr(state_module, "_LIST_LAYOUT", pointers)
    if not tags:
        monkeypatch.setattr(state_module.DictVersions, "of", classmethod(lambda cls, dicts: None))
    state = planned()
    change(core, user)
    state.clear_caches()
    assert not state.unchanged()


def test_an_environment_variable_set_or_removed_is_seen(project, monkeypatch):
    monkeypatch.delenv("DEVSIM_TOY_VARIABLE", raising=False)
    state = planned()
    monkeypatch.setenv("DEVSIM_TOY_VARIABLE", "1")
    assert not state.unchanged()
    monkeypatch.delenv("DEVSIM_TOY_VARIABLE")
    state.remember()
    assert state.unchanged()


def test_a_change_after_a_reuse_is_still_seen(project):
    core, _ = project
    state = planned()
    state.clear_caches()
    assert state.unchanged()
    state.reset_constants()
    state.remember()  # kept: the snapshot still describes the process
    core.MEMO["k"] = 1
    state.clear_caches()
    assert not state.unchanged()


def test_declared_tables_and_globals_are_restored_to_the_parents(project):
    """A memo, a warn-once table, an ordered plan memo (in the parent's order) and a global the project binds on
    first use all start each scenario as the parent had them, and the restored state counts as unchanged."""
    core, _ = project
    kept, first = object(), object()
    core.MEMO["parent"] = kept
    core.PLANS["parent"] = first
    state = planned(
        (
            Reset(module="devsimtoy.core", expr="MEMO", why="a memo"),
            Reset(module="devsimtoy.core", expr="ONCE", why="a warn-once table"),
            Reset(module="devsimtoy.core", expr="PLANS", why="a plan memo, in insertion order"),
            Reset(module="devsimtoy.core", expr="", name="BRIDGE", why="a helper built on first use"),
        )
    )
    core.MEMO["scenario"] = object()
    core.MEMO.pop("parent")
    core.ONCE.add("printed")
    core.PLANS["scenario"] = object()
    core.PLANS.move_to_end("parent")
    core.BRIDGE = object()
    state.clear_caches()
    assert core.MEMO == {"parent": kept} and core.MEMO["parent"] is kept
    assert core.ONCE == set()
    assert list(core.PLANS.items()) == [("parent", first)] and core.BRIDGE is None
    assert state.unchanged()


@pytest.mark.parametrize(
    ("reset", "warning"),
    [
        (Reset(module="devsimtoy.core", expr="Kernel", why="not a table"),
         "reset devsimtoy.core: Kernel: a type, not a dict, set or list"),
        (Reset(module="devsimtoy.core", expr="", name="ABSENT", why="no such global"),
         "reset devsimtoy.core: ABSENT: devsimtoy.core has no global ABSENT"),
        (Reset(module="devsimtoy.core", expr="MEMO", name="BRIDGE", why="both"),
         "reset devsimtoy.core: BRIDGE: names neither or both of a container (expr) and a global (name)"),
    ],
    ids=["not a table", "no such global", "both forms"],
)
def test_a_reset_that_cannot_be_planned_is_a_warning(project, reset, warning):
    state = ProjectState(("devsimtoy",), [], [reset])
    state.plan()
    assert state.warnings == [warning]


def test_a_change_put_back_is_no_change_and_a_later_one_is_still_seen(project):
    """A dict whose version tag moved but whose keys and values are the ones it had (a table a scenario filled and
    `clear_caches` emptied) is unchanged; the tags read then stand for it, so a change after that is seen."""
    _, user = project
    state = planned()
    user.other["k"] = object()
    user.other.clear()
    assert state.unchanged()
    state.reset_constants()
    state.remember()
    user.other["k"] = 1
    state.clear_caches()
    assert not state.unchanged()


def test_this_interpreter_reads_dict_version_tags():
    """The dicts' fast path is the one the tests above run by default (a CPython 3.11 to 3.13 dict layout)."""
    assert state_module.DictVersions.of([{}]) is not None


def test_this_interpreter_compares_by_pointer_bytes():
    """The fast path is the one the tests above run by default (a CPython list layout)."""
    assert state_module._LIST_LAYOUT
    a, b = object(), object()
    assert state_module.same_objects([a, b], [a, b])
    assert not state_module.same_objects([a, b], [b, a])
    assert not state_module.same_objects([a], [a, b])
    assert state_module.same_objects([], [])
