"""Lenient stub modules: a module a project imports but no trigger exercises (`stubs = ["aiohttp"]`).

A stub answers any attribute, submodule import, call, subscript or subclassing with another lenient object, so
`from aiohttp import web`, `import kornia.filters` and `class V(web.View)` work; used as a decorator it returns
the function unchanged. A trigger that really calls into a stub gets lenient objects, not the library.
"""

from __future__ import annotations

from pathlib import Path

_RUNTIME = '''"""devsim real-bug runner: lenient stub modules (generated)."""
import importlib.abc
import importlib.machinery
import sys
import types


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Meta(name, (Lenient,), {})

    def __getitem__(cls, item):
        return cls

    def __iter__(cls):
        return iter(())

    def __or__(cls, other):
        return cls

    __ror__ = __or__


class Lenient(metaclass=_Meta):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return Lenient()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Lenient()

    def __getitem__(self, item):
        return Lenient()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Meta(name, (Lenient,), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots):
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        module.__devsim_stub__ = True
        return module

    def exec_module(self, module):
        pass


def install(roots):
    sys.meta_path.insert(0, _Finder(set(roots)))
'''


def write_stubs(folder: Path, modules: tuple[str, ...]) -> None:
    """Make `folder` hold lenient stubs of `modules` (put it first on sys.path): one package per top name."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_devsim_stubs.py").write_text(_RUNTIME, encoding="utf-8")
    roots = sorted({m.split(".")[0] for m in modules})
    for root in roots:
        package = folder / root
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text(
            '"""devsim real-bug runner: a lenient stub (generated)."""\n'
            "import sys\n"
            "import _devsim_stubs\n"
            f"_devsim_stubs.install({roots!r})\n"
            f"sys.modules[__name__] = _devsim_stubs._Module(__name__)\n"
            "sys.modules[__name__].__path__ = []\n"
            "sys.modules[__name__].__devsim_stub__ = True\n",
            encoding="utf-8",
        )
