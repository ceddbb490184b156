"""ProjectState on another release of a project: constants it lacks, and expressions naming what it lacks."""

import sys
import types

from devsim_subject_kit.state import Constant, ProjectState


def test_a_constant_the_release_lacks_is_left_alone_and_one_it_cannot_compute_is_not_reevaluated():
    home = types.ModuleType("devsimrelease_home")
    home.FLAG = None  # type: ignore[attr-defined]
    home.GOOD = 1  # type: ignore[attr-defined]
    holder = types.ModuleType("devsimrelease_holder")
    holder.FLAG = home.FLAG  # type: ignore[attr-defined]
    sys.modules.update({home.__name__: home, holder.__name__: holder})
    try:
        state = ProjectState(
            ("devsimrelease_",),
            [
                Constant(module=home.__name__, name="FLAG", expr="_helper() or None"),
                Constant(module=home.__name__, name="GONE", expr="1"),
                Constant(module=home.__name__, name="GOOD", expr="len([x for x in (1, 2)])"),
            ],
        )
        state.plan()
        assert set(state.unevaluable) == {"devsimrelease_home.FLAG"}
        names, holders = state.unevaluable["devsimrelease_home.FLAG"]
        assert names == ["_helper"]
        assert holders == {"devsimrelease_home", "devsimrelease_holder"}
        assert any("has no GONE" in w for w in state.warnings)
        state.reset_constants()  # only GOOD is re-evaluated: no NameError for _helper
        assert home.GOOD == 2  # type: ignore[attr-defined]
    finally:
        del sys.modules[home.__name__], sys.modules[holder.__name__]
