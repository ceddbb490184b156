"""compat.py: a GPTQModel name a source tree lacks skips what needs it, naming it, and warns once."""

import types

import pytest
from devsim_subject_gptqmodel import compat


def test_a_missing_name_skips_the_step_naming_it_and_warns_once(capsys):
    module = types.ModuleType("gptqmodel.fake")
    module.present = 1  # type: ignore[attr-defined]
    assert compat.need(module, "present", "validate") == 1
    for _ in range(2):
        with pytest.raises(compat.Lacking, match=r"no gptqmodel\.fake\.absent, which the subject's validate needs"):
            compat.need(module, "absent", "validate")
    assert compat.optional(module, "gone", "left out") is None
    err = capsys.readouterr().err
    assert err.count("gptqmodel.fake.absent") == 1
    assert "this GPTQModel has no gptqmodel.fake.gone; left out" in err
    assert not compat.has_module("gptqmodel_devsim_no_such_package.sub")
    assert compat.optional_module("gptqmodel_devsim_no_such_package.sub", "x") is None


def test_an_unevaluable_constant_skips_only_the_steps_of_its_holders():
    unevaluable = {"pkg.mod.FLAG": (["_helper"], frozenset({"pkg.mod", "pkg.kernel"}))}
    assert compat.constant_lacks(unevaluable, ["pkg.other"]) is None
    reason = compat.constant_lacks(unevaluable, ["pkg.other", "pkg.kernel"])
    assert reason is not None and "_helper" in reason and "pkg.mod.FLAG" in reason
