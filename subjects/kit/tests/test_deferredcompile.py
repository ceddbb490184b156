"""On a simulated host `torch.compile` builds nothing until a call needs a compiled function, and a call under the
`force_eager` stance runs the function as written, as dynamo does."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from devsim_subject_kit import Host
from devsim_subject_kit.deferredcompile import deferred, forcing_eager
from devsim_subject_kit.simtorch import SimulatedTorch


class RealCompile:
    """Stands in for torch.compile: records each call, and returns a wrapper that marks its results."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, dict[str, Any]]] = []

    def __call__(self, model: Any, **options: Any) -> Any:
        self.calls.append((model, options))
        return lambda *args, **kwargs: ("compiled", model(*args, **kwargs))


def double(x: int) -> int:
    """The function under compilation."""
    return 2 * x


def test_nothing_is_compiled_until_a_call_needs_it_and_then_once_with_the_same_options():
    real = RealCompile()
    compiled = deferred(real)(double, dynamic=False, fullgraph=True)
    assert real.calls == [] and compiled.__name__ == "double" and compiled.__wrapped__ is double
    assert compiled(3) == ("compiled", 6)
    assert compiled(4) == ("compiled", 8)
    assert real.calls == [(double, {"dynamic": False, "fullgraph": True})]


def test_under_force_eager_the_function_runs_as_written_and_nothing_is_compiled():
    real = RealCompile()
    compiled = deferred(real)(double)
    with torch.compiler.set_stance("force_eager"):
        assert forcing_eager()
        assert compiled(3) == 6
    assert not forcing_eager()
    assert real.calls == []


def test_the_decorator_form_defers_too():
    real = RealCompile()

    @deferred(real)(dynamic=False)
    def triple(x: int) -> int:
        return 3 * x

    assert real.calls == []
    assert triple(2) == ("compiled", 6)
    assert [options for _, options in real.calls] == [{"dynamic": False}]


@pytest.mark.parametrize(
    "model, options",
    [(torch.nn.Linear(2, 2), {}), (double, {"disable": True})],
    ids=["a module, used as a module afterwards", "disable=True"],
)
def test_what_is_not_a_function_to_defer_goes_to_the_real_compile_at_once(model, options):
    real = RealCompile()
    deferred(real)(model, **options)
    assert real.calls == [(model, options)]


def test_a_simulated_host_defers_torch_compile_and_uninstall_restores_it():
    original = torch.compile
    runtime = SimulatedTorch().install(Host())
    try:
        assert torch.compile is not original and torch.compile.__wrapped__ is original
        with torch.compiler.set_stance("force_eager"):
            assert torch.compile(double)(5) == 10
    finally:
        runtime.uninstall()
    assert torch.compile is original
