"""Lenient stub modules: a module a project imports but no trigger exercises (`stubs = ["aiohttp"]`).

A stub answers any attribute, submodule import, call, subscript or subclassing with another lenient object, so
`from aiohttp import web`, `import kornia.filters` and `class V(web.View)` work; used as a decorator it returns
the function unchanged; as a path (`os.path.join(HF_CACHE, "x")`) it is the relative folder `devsim-stub`; its
`__version__` is `999.0.0`. A trigger that really calls into a stub gets lenient objects, not the library.

A stub stands for exactly the module named and the modules below it: `torch._inductor.kernel.flex_attention`
stubs that one module inside the real torch, never torch itself. Stubs are answered by a meta-path finder the
pytest plugin module `_devsim_stubs_plugin` installs (`-p _devsim_stubs_plugin`, before any conftest); a stub
of a top-level name is also a package folder, so a Python subprocess of the project sees it too.
"""

from __future__ import annotations

from pathlib import Path

#: The pytest plugin (a module of the stubs folder) that installs the stubs' finder: `-p` this.
PLUGIN = "_devsim_stubs_plugin"

_RUNTIME = '''"""devsim real-bug runner: lenient stub modules (generated)."""
import importlib.abc
import importlib.machinery
import sys
import types

_PATH = "devsim-stub"


def _dunder(name):
    return name.startswith("__") and name.endswith("__")


def _stub_class(name):
    return _Meta(name, (Lenient,), {"_devsim_stub": True})


class _Meta(type):
    def __getattr__(cls, name):
        if _dunder(name):
            raise AttributeError(name)
        return _stub_class(name)

    def __call__(cls, *args, **kwargs):
        # a stub's attribute used as a decorator keeps what it decorates; a project's subclass is built as usual
        if cls.__dict__.get("_devsim_stub") and len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return super().__call__(*args, **kwargs)

    def __getitem__(cls, item):
        return cls

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __or__(cls, other):
        return cls

    __ror__ = __or__

    def __fspath__(cls):
        return _PATH

    def __str__(cls):
        return _PATH


class Lenient(metaclass=_Meta):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return Lenient()

    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        return Lenient()

    def __getitem__(self, item):
        return Lenient()

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __fspath__(self):
        return _PATH

    def __str__(self):
        return _PATH


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        return _stub_class(name)


def module(name):
    """A lenient module called `name` (a package: its submodules are stubs too)."""
    stub = _Module(name)
    stub.__path__ = []
    stub.__version__ = "999.0.0"
    stub.__devsim_stub__ = True
    return stub


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names):
        self.names = tuple(names)

    def find_spec(self, fullname, path=None, target=None):
        if any(fullname == n or fullname.startswith(n + ".") for n in self.names):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        stub = module(spec.name)
        stub.__spec__ = spec
        return stub

    def exec_module(self, module):
        pass


def install(names):
    """Answer `names` and the modules below them with lenient stubs, before any other finder."""
    if not any(isinstance(f, _Finder) and f.names == tuple(names) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(names))
'''


def write_stubs(folder: Path, modules: tuple[str, ...]) -> None:
    """Make `folder` (put first on sys.path) hold the stubs of `modules`: the runtime, the plugin that installs
    the finder, and a package folder per top-level name."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_devsim_stubs.py").write_text(_RUNTIME, encoding="utf-8")
    (folder / f"{PLUGIN}.py").write_text(
        '"""devsim real-bug runner: installs the lenient stubs before any conftest (generated; -p this)."""\n'
        "import _devsim_stubs\n\n"
        f"_devsim_stubs.install({list(modules)!r})\n",
        encoding="utf-8",
    )
    for name in (m for m in modules if "." not in m):
        package = folder / name
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text(
            '"""devsim real-bug runner: a lenient stub (generated)."""\n'
            "import sys\n\n"
            "import _devsim_stubs\n\n"
            f"_devsim_stubs.install({[name]!r})\n"
            f"sys.modules[__name__] = _devsim_stubs.module(__name__)\n",
            encoding="utf-8",
        )
