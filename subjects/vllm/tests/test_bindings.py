"""The child's rebinding of vLLM's platform finds what a scan of every module would (bindings.PlatformBindings),
and the memoised importlib.metadata look-ups answer what importlib.metadata does."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from collections.abc import Iterator

import pytest
from devsim_subject_vllm.bindings import PlatformBindings, memoise_metadata


class Platform:
    pass


@pytest.fixture
def made() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        sys.modules.pop(name, None)


def module(made: list[str], name: str, **attrs: object) -> types.ModuleType:
    mod = types.ModuleType(name)
    vars(mod).update(attrs)
    sys.modules[name] = mod
    made.append(name)
    return mod


def ids(modules: list[types.ModuleType]) -> set[int]:
    return {id(m) for m in modules}


def test_unchanged_modules_give_the_parent_list(made):
    old = Platform()
    bound = module(made, "devsim_test_bound", current_platform=old)
    module(made, "devsim_test_other", current_platform=Platform())
    bindings = PlatformBindings(old)
    assert ids(bindings.holders(old)) == ids(PlatformBindings.scan(old)) and bound in bindings.holders(old)


def test_changes_since_the_parent_are_found(made):
    old = Platform()
    bound = module(made, "devsim_test_bound", current_platform=old)
    later = module(made, "devsim_test_later")
    bindings = PlatformBindings(old)
    later.current_platform = old  # type: ignore[attr-defined]  # a parent module binds it since
    del bound.current_platform  # type: ignore[attr-defined]  # and another no longer does
    new = module(made, "devsim_test_new", current_platform=old)  # a module imported since
    module(made, "devsim_test_new_other")
    found = bindings.holders(old)
    assert ids(found) == ids(PlatformBindings.scan(old))
    assert later in found and new in found and bound not in found


def test_a_shrunk_or_reordered_sys_modules_is_scanned_in_full(made):
    old = Platform()
    module(made, "devsim_test_first", current_platform=old)
    module(made, "devsim_test_last")
    bindings = PlatformBindings(old)
    sys.modules.pop("devsim_test_last")  # the parent's last entry moves to the end: not an appended entry
    new = module(made, "devsim_test_new", current_platform=old)
    sys.modules["devsim_test_last"] = sys.modules.pop("devsim_test_first")
    assert new in bindings.holders(old)
    assert ids(bindings.holders(old)) == ids(PlatformBindings.scan(old))


def test_another_platform_is_scanned_in_full(made):
    old, other = Platform(), Platform()
    module(made, "devsim_test_bound", current_platform=other)
    bindings = PlatformBindings(old)
    assert ids(bindings.holders(other)) == ids(PlatformBindings.scan(other)) != set()


def test_memoised_metadata_answers_as_importlib_metadata():
    before = importlib.metadata.version("vllm"), list(importlib.metadata.entry_points(group="vllm.platform_plugins"))
    real = importlib.metadata.version, importlib.metadata.entry_points
    try:
        memoise_metadata()
        assert importlib.metadata.version("vllm") == before[0]
        assert list(importlib.metadata.entry_points(group="vllm.platform_plugins")) == before[1]
        assert importlib.metadata.version("pytest") == real[0]("pytest")  # not memoised: asked afresh
    finally:
        importlib.metadata.version, importlib.metadata.entry_points = real  # type: ignore[misc]


def test_preloaded_code_runs_the_module_afresh_with_its_own_spec(tmp_path, monkeypatch, made):
    from devsim_subject_vllm.bindings import PreloadedCode

    package = tmp_path / "preloadpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("import builtins\nbuiltins.preload_runs = getattr(builtins, 'preload_runs', 0) + 1\n"
                                     "VALUE = 'as written'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    made += ["preloadpkg", "preloadpkg.mod"]
    import builtins
    import importlib

    finder = PreloadedCode(["preloadpkg.mod", "preloadpkg.absent"])
    assert "preloadpkg.mod" not in sys.modules  # found and compiled, not run
    assert list(finder.entries) == ["preloadpkg.mod"]
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    finder.install()
    plain = importlib.util.find_spec("preloadpkg.mod", None)
    runs = []
    for _ in range(2):  # a child imports it afresh: its body runs each time
        sys.modules.pop("preloadpkg.mod", None)
        mod = importlib.import_module("preloadpkg.mod")
        runs.append(builtins.preload_runs)
        assert (mod.__file__, mod.__cached__, mod.__spec__.origin, mod.VALUE) == (
            str(package / "mod.py"), plain.cached, plain.origin, "as written")
    assert runs[1] == runs[0] + 1
    del builtins.preload_runs
    # a source that changed since is found and compiled as usual
    (package / "mod.py").write_text("VALUE = 'changed on disk, longer'\n")
    sys.modules.pop("preloadpkg.mod", None)
    assert importlib.import_module("preloadpkg.mod").VALUE == "changed on disk, longer"


def test_preloaded_source_lines_are_the_files_lines():
    import linecache

    from devsim_subject_vllm import bindings
    from devsim_subject_vllm.bindings import preload_source_lines

    linecache.clearcache()
    preload_source_lines(["devsim_subject_vllm.bindings", "no.such.module"])
    assert bindings.__file__ in linecache.cache
    with open(bindings.__file__) as source:
        assert linecache.getlines(bindings.__file__) == source.readlines()
