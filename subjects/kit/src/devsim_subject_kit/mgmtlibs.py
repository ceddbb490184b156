"""The vendor management libraries in a `--devsim-host` session child: NVML and amdsmi answer from the host.

Some projects do not ask torch which GPUs there are but the vendors' management libraries (vLLM picks its
platform through NVML and amdsmi). In a session child `ManagementLibraries(host_of, recorder).install()` makes
`import amdsmi` give the kit's fake (`lowlevel.Amdsmi`) and patches every pynvml-style module (`pynvml`, or a
vendored copy such as `vllm.third_party.pynvml`) with the kit's `lowlevel.Nvml` when it is imported, or at once
if it already was. Nothing of the real libraries is loaded.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from .host import Host
from .lowlevel import Amdsmi, Nvml
from .recorder import Recorder


def is_pynvml(name: str) -> bool:
    """Whether module `name` is a pynvml-style NVML binding: `pynvml` itself or a vendored `*.pynvml`."""
    return name == "pynvml" or name.endswith(".pynvml")


class _PatchAfterExec(importlib.abc.Loader):
    """A loader that runs the real one, then `after` on the executed module."""

    def __init__(self, inner: importlib.abc.Loader, after: Callable[[types.ModuleType], None]) -> None:
        self.inner = inner
        self.after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        self.after(module)


class _PynvmlFinder(importlib.abc.MetaPathFinder):
    """Finds a pynvml-style module with the other finders and wraps its loader to patch it once executed."""

    def __init__(self, after: Callable[[types.ModuleType], None]) -> None:
        self.after = after

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not is_pynvml(fullname):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PatchAfterExec(spec.loader, self.after)
                return spec
        return None


class ManagementLibraries:
    """NVML and amdsmi answering from the host `host_of()` returns, their queries recorded on `recorder`."""

    def __init__(self, host_of: Callable[[], Host], recorder: Recorder) -> None:
        self.host_of = host_of
        self.recorder = recorder
        self.amdsmi = Amdsmi(host_of, recorder)
        self.nvml: dict[str, Nvml] = {}
        self._finder: _PynvmlFinder | None = None

    def patch(self, module: Any) -> None:
        """Answer NVML on the pynvml-style `module` from the host (once per module)."""
        if module.__name__ not in self.nvml and hasattr(module, "NVMLError"):
            self.nvml[module.__name__] = Nvml(self.host_of, self.recorder).install(module)

    def install(self) -> ManagementLibraries:
        """Fake amdsmi, patch the pynvml modules imported so far and those imported later (idempotent)."""
        self.amdsmi.install()
        for name, module in list(sys.modules.items()):
            if is_pynvml(name) and module is not None:
                self.patch(module)
        if self._finder is None:
            self._finder = _PynvmlFinder(self.patch)
            sys.meta_path.insert(0, self._finder)
        return self

    def uninstall(self) -> None:
        """Stop patching imports and put back amdsmi and the patched pynvml modules."""
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        for nvml in self.nvml.values():
            nvml.uninstall()
        self.nvml.clear()
        self.amdsmi.uninstall()
