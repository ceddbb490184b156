"""The GPTQModel subject's hooks: the import finders that record native-library and missing-package imports,
the modules it preloads, and the hooks on GPTQModel itself (extension loads, device-pool locks, the kernel
machinery's view of a device)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from devsim_subject_kit import Recorder, blame

from . import compat
from .model import EXTENSION_STATE, NeedsBuild, SubjectBase


class _ExtensionImportFinder(importlib.abc.MetaPathFinder):
    """Records import attempts of native-library packages (data: kernels.toml [extension].modules)."""

    def __init__(self, names: list[str], recorder: Recorder) -> None:
        self.names = set(names)
        self.recorder = recorder

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname.split(".")[0] in self.names and "." not in fullname:
            self.recorder.record("extension_load", None, f"import {fullname}")
        # the real finders decide


def _package_has_library(package: str, library: str) -> bool:
    """Whether an installed package ships the shared library `lib<library>.so` in its `lib/` folder (where
    llama-cpp-python keeps GGML's backends, one library each)."""
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    return any(any((Path(folder) / "lib").glob(f"lib{library}.so*")) for folder in folders)


class _MissingPackageFinder(importlib.abc.MetaPathFinder):
    """Records each attempt to import a package this environment lacks (kernels.toml `requires`), so that a
    verdict is unobservable only when GPTQModel's code really depended on the package: it tried the import while
    GPTQModel was imported (e.g. bitblas.py's BITBLAS_AVAILABLE) or while the step judged the kernel. MLX's
    validate_once(), for one, refuses a non-Apple machine before it imports mlx: that refusal is observed."""

    def __init__(self, missing: set[str]) -> None:
        self.missing = missing
        self.attempts: set[str] = set()
        self.importers: set[tuple[str, str]] = set()  # (the GPTQModel module that tried, the package)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        top = fullname.split(".")[0]
        if top in self.missing:
            self.attempts.add(top)
            frame: FrameType | None = sys._getframe(1)
            while frame is not None and not str(frame.f_globals.get("__name__", "")).startswith("gptqmodel"):
                frame = frame.f_back
            if frame is not None:
                self.importers.add((str(frame.f_globals["__name__"]), top))
        # the real finders decide (and find nothing)

    def tried_at_import(self, module: str) -> set[str]:
        """The missing packages `module` (or a GPTQModel module it took names from) tried to import when it was
        imported: its verdicts may rest on that (bitblas.py's BITBLAS_AVAILABLE, used by bitblas_awq.py)."""
        namespace = vars(sys.modules[module]) if module in sys.modules else {}
        used = {module} | {str(getattr(value, "__module__", "")) for value in namespace.values()}
        return {pkg for importer, pkg in self.importers if importer in used}


class HooksMixin(SubjectBase):
    """`Subject`'s preload and hooks (installed once by `load`, in the parent)."""

    def _preload(self, entries: list[dict]) -> None:
        """Import the modules GPTQModel imports lazily inside a kernel's forward (constants.toml `[[preload]]`), so
        that a child that ran the forward leaves sys.modules as it found it and may be reused. The constants test
        compares their module-level values across hosts like every other module's. One that tries a package this
        environment lacks is refused: a step that imports it lazily depends on that package, which a preload
        would hide."""
        for entry in entries:
            name = str(entry["module"])
            if not compat.has_module(name):
                # nothing to preload: a step whose forward would import it meets GPTQModel's own ImportError
                compat.warn(name, "not preloaded (a child whose forward imports it is not reused)")
                continue
            before = set(self._missing.importers)
            importlib.import_module(name)
            tried = sorted(pkg for _, pkg in set(self._missing.importers) - before)
            if tried:
                raise RuntimeError(f"constants.toml preloads {name}, which tries to import missing {tried}")

    def _install_hooks(self) -> None:
        """Hooks on GPTQModel itself, each set through `self.patches` (the kit's `Patches`, which can undo them).
        They record and pass results through unchanged, except the extension loader, which stands in for the
        native build the simulated host is assumed to have."""
        import gptqmodel
        from gptqmodel.utils import threadx
        from gptqmodel.utils.cpp import TorchOpsJitExtension

        from . import nativeops

        # the native ops GPTQModel's C++ sources declare, read once here (nativeops.scan)
        native_catalog = nativeops.scan(Path(gptqmodel.__file__).resolve().parent.parent / "gptqmodel_ext")

        # extension_load: every GPTQModel native extension goes through TorchOpsJitExtension.load (JIT build or
        # cached torch.ops library). The simulated host has them built: the load succeeds without compiling.
        def load(ext: Any) -> bool:
            self.recorder.record("extension_load", None, ext.name)
            # What this scenario changed, so a reused child starts the next one with the extension unloaded.
            # (the load and the torch.ops caches `namespace_object` refreshes after it)
            self._loaded.setdefault(id(ext), (ext, tuple(getattr(ext, name) for name in EXTENSION_STATE)))
            ext._load_attempted, ext._load_result, ext._last_error = True, True, ""
            # its ops that only write into their callers' buffers, checked but not run (nativeops)
            registered = nativeops.register(ext.namespace, ext.required_ops, native_catalog)
            if registered is not None:
                self._native_ops.append(registered)
            return True

        real_load = TorchOpsJitExtension.load
        jit = os.environ.get("DEVSIM_GPTQMODEL_JIT", "0") == "1"

        def load_live(ext: Any) -> bool:
            # Live: the real loader. A cached or prebuilt library loads as GPTQModel loads it; a JIT build (minutes
            # of nvcc per extension) runs only with DEVSIM_GPTQMODEL_JIT=1, else the step answers `unsupported`
            # naming the extension: never a refusal GPTQModel did not make.
            self.recorder.record("extension_load", None, ext.name)
            if not jit and not (ext._ops_available() or ext._configured_prebuilt_library() is not None):
                raise NeedsBuild(f"GPTQModel would JIT-build its native extension {ext.name} here (minutes of nvcc); "
                                 "this live run does not build (DEVSIM_GPTQMODEL_JIT=1 allows it), so the kernel's "
                                 "verdict is not observed")
            try:
                loaded = bool(real_load(ext))
            except Exception as exc:  # a build that breaks is this machine's, never the kernel's
                raise NeedsBuild(f"GPTQModel's build of its native extension {ext.name} failed on this machine: "
                                 f"{type(exc).__name__}: {exc}") from exc
            if not loaded:
                raise NeedsBuild(f"GPTQModel's build of its native extension {ext.name} failed on this machine: "
                                 f"{getattr(ext, '_last_error', '') or 'no reason given'}")
            return True

        self.patches.set(TorchOpsJitExtension, "load", load_live if self.live else load)

        # lock: the device pool's per-device reader/writer locks.
        subject = self
        original_read, original_write = threadx._RWLock.acquire_read, threadx._RWLock.acquire_write

        def acquire_read(lock: Any) -> Any:
            subject._lock_event(lock, "read")
            return original_read(lock)

        def acquire_write(lock: Any) -> Any:
            subject._lock_event(lock, "write")
            return original_write(lock)

        self.patches.set(threadx._RWLock, "acquire_read", acquire_read)
        self.patches.set(threadx._RWLock, "acquire_write", acquire_write)

        if self.live:
            self._install_observers()
            return
        # The simulated host's CPU is a plain x86-64 without AVX512-BF16 (devsim's hosts model no CPU ISA).
        # GPTQModel reads /proc/cpuinfo of the machine the subject runs on; left alone, a runner with
        # AVX512-BF16 makes CPU selection try TorchCpuAvx512Linear first and load its native extension, so
        # outcomes would depend on the CI machine. Rebound wherever it was imported by name.
        cpu_features = compat.optional_module(
            "gptqmodel.utils.cpu_features", "its CPU ISA probe is not rebound (no AVX512-BF16 probe to hide)"
        )
        machine_probe = compat.optional(cpu_features, "has_avx512_bf16", "its CPU ISA probe is not rebound") \
            if cpu_features is not None else None

        def no_avx512_bf16() -> bool:
            return False

        for module in [m for n, m in sys.modules.items() if n.startswith("gptqmodel") and m]:
            if machine_probe is not None and vars(module).get("has_avx512_bf16") is machine_probe:
                self.patches.set(module, "has_avx512_bf16", no_avx512_bf16)
        self._install_observers()

    def _install_observers(self) -> None:
        """Hooks that only record what GPTQModel's kernel machinery saw (simulated and live alike)."""
        subject = self
        # the family kernel selection and validation assign to a selector: importer._device_family
        from gptqmodel.utils import importer

        original_family = compat.optional(importer, "_device_family", "validate and select steps are skipped")

        def device_family(device: Any) -> Any:
            family = original_family(device)
            if self.recorder.on_step_thread:
                subject._families.append((device, family, blame.just_returned(family)))
            return family

        if original_family is not None:
            self.patches.set(importer, "_device_family", device_family)

        # what the selector machinery makes of a public device value ("rocm" -> DEVICE.ROCM, 1 -> cuda:1):
        # the view validate/select report when no torch.device reaches _device_family
        original_as_selector = compat.optional(
            importer, "_as_selector_device", "steps through its boundary conversion are skipped"
        )

        def as_selector_device(value: Any) -> Any:
            result = original_as_selector(value)
            if self.recorder.on_step_thread:
                subject._selectors.append(result)
            return result

        if original_as_selector is not None:
            self.patches.set(importer, "_as_selector_device", as_selector_device)

        # GPTQModel's extension API gates every native extension on a build-support check (a capability,
        # shared-memory or ROCm rule over the visible GPUs) before it loads; is_available() swallows that
        # RuntimeError, so validate_once() reports only "<X> runtime unavailable." The swallowed reason is
        # recorded as a cause for classification (the message reported stays GPTQModel's own).
        from gptqmodel import extension as extension_api

        original_load_one = extension_api._load_one

        def load_one(name: str, **kwargs: Any) -> Any:
            return subject._observe_device_error(lambda: original_load_one(name, **kwargs))

        self.patches.set(extension_api, "_load_one", load_one)

        # the causes behind "does not support device": every mapped class's validate_device
        for kernel in self.kernels.values():
            self._wrap_validate_device(kernel.cls)

    def _wrap_validate_device(self, cls: Any) -> None:
        current = cls.__dict__.get("validate_device")
        if current is not None and getattr(getattr(current, "__func__", None), "_devsim", False):
            return
        if not callable(getattr(cls, "validate_device", None)):
            return  # a wrapper without a device contract (7.7.0's EXL3 / FP4)
        impl = cls.validate_device.__func__  # this class's own, or the one its MRO gives it

        def wrapper(klass: Any, device: Any, _impl: Callable = impl) -> Any:
            return self._observe_device_error(lambda: _impl(klass, device))

        wrapper._devsim = True  # type: ignore[attr-defined]
        self.patches.set(cls, "validate_device", classmethod(wrapper))

    def _observe_device_error(self, call: Callable) -> Any:
        try:
            return call()
        except BaseException as exc:
            if self.recorder.on_step_thread:
                self._device_errors.append(exc)
            raise

    def _lock_event(self, lock: Any, mode: str) -> None:
        key = self._lock_keys.get(id(lock))
        if key is None or not self.recorder.on_step_thread:
            return
        device = int(key.split(":")[1]) if key.startswith("cuda:") else None
        self.recorder.record("lock", device, f"{mode} {key}")
        self._held.append(key)
