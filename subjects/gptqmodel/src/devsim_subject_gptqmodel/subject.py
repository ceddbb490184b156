"""GPTQModel's real dispatch code, driven by devsim steps on a simulated host.

`Subject.load()` runs once in the parent process: it patches torch (the kit's SimulatedTorch), imports GPTQModel and loads
the data files (kernels.toml, errors.toml, constants.toml). `Subject.enter(host)` runs in the forked child of
each scenario: it switches the simulated host, re-sets GPTQModel's import-time constants and clears its
caches. `Subject.step(message)` performs one action and returns the `observed` (or `unsupported`) message.
"""

from __future__ import annotations

import gc
import importlib
import importlib.abc
import importlib.util
import os
import re
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from devsim_subject_kit import (
    Constant,
    Host,
    ProjectState,
    ProtocolError,
    Recorder,
    Reset,
    blame,
    check_step,
)
from devsim_subject_kit.server import reuse_enabled

from . import compat

DATA = Path(__file__).parent
FAMILIES = ("cpu", "cuda", "rocm", "xpu", "mps")
# how long a reused child waits for a shut-down device pool's threads to end before it is retired instead
POOL_EXIT_S = 2.0

# The trace events the subject records (the kit's simulated torch plus the hooks below).
EVENTS = [
    "device_count",
    "device_name",
    "nvidia_capability",
    "smem_optin",
    "amd_arch",
    "get_device",
    "set_device",
    "synchronize",
    "extension_load",
    "lock",
]

# What a simulated extension load changes on GPTQModel's TorchOpsJitExtension: the load verdict, and the torch.ops
# caches `namespace_object()` refreshes after it. A scenario's values are put back before the next one.
EXTENSION_STATE = ("_load_attempted", "_load_result", "_last_error", "_namespace_cache", "_op_cache")

# Not `discover`: GPTQModel 7.7.0 has no device-discovery function that reports a vendor and per-GPU archs
# (gptqmodel.utils.torch.torch_devices() lists torch devices only, and device-smi, its hardware inventory, reads
# the real machine), so a scenario that discovers is not applicable to it, as one naming a kernel it lacks is.
# The error kinds that are a kernel's refusal of the device when its own code raises them on the way to or in its
# forward (a wrapper has no other gate); any other error there is a limit of the simulated warmup.
REFUSALS = ("unsupported-family", "unsupported-arch", "unsupported-bits")
ACTIONS = ("normalize", "resolve", "validate", "select", "lock", "move", "set_device", "warmup")

# Protocol v2: the observation fields each action really reports (`current_after`: on every GPU build with a
# visible GPU). normalize reports no ordinal: GPTQModel's normalize_device returns a family enum.
OBSERVES: dict[str, tuple[str, ...]] = {
    "normalize": ("ok", "error", "family", "current_after"),
    "resolve": ("ok", "error", "family", "ordinal", "torch_device", "current_after"),
    "validate": ("ok", "error", "family", "ordinal", "torch_device", "current_after"),
    "select": ("ok", "error", "selected", "family", "ordinal", "torch_device", "current_after"),
    "lock": ("ok", "error", "covers", "current_after"),
    "move": ("ok", "error", "family", "ordinal", "torch_device", "lands_on", "current_after"),
    "set_device": ("ok", "error", "current_after"),
    # simulated: GPTQModel's forward on fake or CPU-backed tensors (fakewarmup.py) gives ran_on; retained_bytes is
    # live only
    "warmup": ("ok", "error", "ran_on", "current_after", "retained_bytes"),
}


# GPTQModel DEVICE values -> devsim families. DEVICE.NPU (Ascend) has no devsim family and is left out of a
# declaration (the kernels that list it: the portable torch kernels, which also declare ALL or CPU/CUDA).
DEVSIM_FAMILIES = {"cuda": "cuda", "rocm": "rocm", "cpu": "cpu", "xpu": "xpu", "mps": "mps", "all": "all"}


def declared_families(cls: Any) -> list[str]:
    """The class's SUPPORTS_DEVICES as devsim families, in GPTQModel's order; a class without the attribute
    (7.7.0's EXL3 and FP4 wrappers) declares none."""
    families: list[str] = []
    for device in getattr(cls, "SUPPORTS_DEVICES", None) or []:
        family = DEVSIM_FAMILIES.get(str(getattr(device, "value", device)).lower())
        if family is not None and family not in families:
            families.append(family)
    return families



# Simulated, a warmup is observed at GPTQModel's gate (a refusal is its decision, made before any device work)
# and, admitted, through its forward on fake or CPU-backed tensors (fakewarmup.py); this is the reason when
# neither can run it.
WARMUP_NEEDS_GPU = (
    "GPTQModel 7.7.0 admits the kernel here, and its warmup could not be simulated on torch's fake tensors nor on "
    "CPU-backed ones (devsim run --live --subject runs it on a real GPU)"
)


class StepUnsupported(Exception):
    """The step cannot be observed on this subject; the reason goes to devsim, with the trace events GPTQModel
    recorded before the step could go no further (`events`), on which devsim judges `never` rules."""

    def __init__(self, reason: str, events: list[dict[str, Any]] | None = None) -> None:
        super().__init__(reason)
        self.events = events or []


@dataclass
class Kernel:
    name: str
    module: str
    cls_name: str
    bits: int = 4
    # the bits a simulated warmup builds the module with: `bits`, unless validate's width names no format the
    # module implements (GGUF Triton fuses only K-quants: "q4_k_m")
    module_bits: int | str = 4
    validate: dict = field(default_factory=dict)
    requires: list = field(default_factory=list)
    weights: str | None = None  # the checkpoint format the subject builds packed weights in (kernels.toml)
    cls: Any = None
    missing: list = field(default_factory=list)  # of `requires`, the packages this environment lacks
    missing_at_import: list = field(default_factory=list)  # of `missing`, those its module tried to import
    # installed packages built without a library the verdict needs (kernels.toml `requires_library`): every verdict
    # rests on how the package was built, which a simulated host cannot change
    build_lacks: list = field(default_factory=list)
    # Whether the class carries GPTQModel's quant-linear contract (BaseQuantLinear: SUPPORTS_*, validate,
    # validate_device). The EXL3 and FP4 wrappers of 7.7.0 are plain nn.Modules without one.
    contract: bool = True


@dataclass
class Rule:
    kind: str
    match: re.Pattern
    type: str | None = None

    def matches(self, message: str, exc: BaseException | None) -> bool:
        if self.type is not None and (exc is None or self.type not in {c.__name__ for c in type(exc).__mro__}):
            return False
        return bool(self.match.search(message))


def load_toml(name: str) -> dict:
    with open(DATA / name, "rb") as handle:
        return tomllib.load(handle)


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


class Subject:
    def __init__(self) -> None:
        self.kernels: dict[str, Kernel] = {}
        self.methods: dict[str, dict] = {}
        self.rules: list[Rule] = []
        self.constants: list[dict] = []
        self.version = "unknown"
        self.pool: Any = None
        self._lock_keys: dict[int, str] = {}
        self._held: list[str] = []  # pool keys whose locks the current step took
        self._device_errors: list[BaseException] = []
        self._families: list[tuple[Any, Any]] = []  # (selector device, family) seen by importer._device_family
        self._selectors: list[Any] = []  # what importer._as_selector_device made of a public device value
        self.name = "gptqmodel"
        self.overlay: str | None = None
        # extensions the simulated loader marked loaded in this scenario, with what they held before
        self._loaded: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        self.live = False  # the real torch on the real machine (the kit's LiveTorch), not a simulated host
        self.recorder = Recorder()
        self.torch_host: Any = None
        self.state = ProjectState(("gptqmodel",))
        self._missing = _MissingPackageFinder(set())
        self._native_ops: list[Any] = []  # nativeops.Registered by this scenario's extension loads
        self._dependent: set[tuple[str, str]] = set()  # (kernel, missing package) a verdict was seen to need
        # (format, bits) -> the checkpoint a warmup loads (the weights the oracle uses and the saved state), packed
        # once by the parent at load (liveformats), or why it could not be packed
        self._checkpoints: dict[tuple[str, int], tuple[Any, dict] | Exception] = {}
        # per devsim kernel name and dtype, the tolerance GPTQModel's own kernel tests state (`tolerances`)
        self.tolerances: dict[str, dict[str, Any]] = {}
        self.tolerance_note = "GPTQModel's kernel tests were not read"

    # ------------------------------------------------------------------------------------------- loading

    def load(self, import_host: Host | None = None, live: bool = False) -> None:
        """Parent process: patch torch, import GPTQModel, resolve the kernel map.

        GPTQModel is imported on `import_host` (default: a CPU-only build); children re-set the import-time
        constants for their own host. The constants test imports on each host instead, to compare. `live`: the
        real torch instead, its device calls wrapped to record events (the kit's LiveTorch), GPTQModel's constants as it
        computes them on this machine, its native extensions loaded for real.
        """
        self.live = live
        if live:
            import torch
            from devsim_subject_kit.livetorch import LiveTorch

            # torch.compile (GPTQModel's torch kernels compile their dequantization) costs tens of seconds per
            # shape, more than a step may take; eager execution computes the same result.
            # DEVSIM_GPTQMODEL_COMPILE=1 keeps it.
            if os.environ.get("DEVSIM_GPTQMODEL_COMPILE") != "1":
                torch._dynamo.config.disable = True
            self.torch_host = LiveTorch(self.recorder).install()
        else:
            from devsim_subject_kit.simtorch import SimulatedTorch

            self.torch_host = SimulatedTorch(self.recorder).install(import_host or Host())
        data = load_toml("kernels.toml")
        required = {pkg for entry in data["kernel"].values() for pkg in entry.get("requires", [])}
        self._missing = _MissingPackageFinder({pkg for pkg in required if importlib.util.find_spec(pkg) is None})
        sys.meta_path.insert(0, self._missing)
        import gptqmodel
        import gptqmodel.utils.importer
        import torch
        from gptqmodel.version import __version__

        self.version = __version__
        self.methods = data.get("method", {})
        for name, entry in data["kernel"].items():
            kernel = Kernel(
                name=name,
                module=entry["module"],
                cls_name=entry["class"],
                bits=entry.get("bits", 4),
                module_bits=entry.get("module_bits", entry.get("bits", 4)),
                validate=dict(entry.get("validate", {})),
                requires=list(entry.get("requires", [])),
                weights=entry.get("weights"),
            )
            kernel.missing = [pkg for pkg in kernel.requires if pkg in self._missing.missing]
            kernel.build_lacks = [
                f"{pkg} built with {library}"
                for pkg, library in dict(entry.get("requires_library", {})).items()
                if pkg not in self._missing.missing and not _package_has_library(pkg, library)
            ]
            try:
                kernel.cls = getattr(importlib.import_module(kernel.module), kernel.cls_name)
            except (ImportError, AttributeError) as exc:
                print(f"devsim-subject: kernel {name}: {kernel.module}.{kernel.cls_name} not importable: {exc}",
                      file=sys.stderr)
                continue
            self.kernels[name] = kernel
        for kernel in self.kernels.values():
            kernel.missing_at_import = sorted(set(kernel.missing) & self._missing.tried_at_import(kernel.module))
        tables = load_toml("constants.toml")
        self._preload(tables.get("preload", []))
        self._pack_checkpoints()
        self._read_tolerances(Path(gptqmodel.__file__).resolve().parent)
        # The seed-fix overlay (seedfix.py) replaces GPTQModel functions before any hook below wraps them, so the
        # subject observes the overlay exactly as it observes GPTQModel.
        # Imported here, before any child is forked: a module first imported in a child changes sys.modules,
        # and that child could not be reused.
        from . import fakewarmup, livewarmup, nativeops, seedfix  # noqa: F401

        if not live:
            fakewarmup.prime()
            nativeops.prime()

        overlay = seedfix.variant()
        if overlay is not None:
            seedfix.apply()
            self.overlay = overlay
            self.name = f"gptqmodel-{overlay}"
            self.version = f"{self.version}+{overlay}"
            without = seedfix.reverted()
            if without is not None:
                self.version = f"{self.version}-without-{without}"
        for kernel in self.kernels.values():
            kernel.contract = callable(getattr(kernel.cls, "validate", None))
        self.boundary_name, self.boundary_fn = "DEVICE.to_torch_device", None
        for candidate in data.get("boundary", {}).get("candidates", []):
            module_name, func_name = candidate.split(":")
            try:
                func = getattr(importlib.import_module(module_name), func_name, None)
            except ImportError:
                continue
            if func is not None:
                self.boundary_name, self.boundary_fn = candidate, func
                break
        sys.meta_path.insert(0, _ExtensionImportFinder(data.get("extension", {}).get("modules", []), self.recorder))
        self.rules = [
            Rule(kind=r["kind"], match=re.compile(r["match"]), type=r.get("type"))
            for r in load_toml("errors.toml")["rule"]
        ]
        self.state = ProjectState(
            ("gptqmodel",),
            [Constant.from_table(c) for c in tables["constant"]],
            [Reset.from_table(r) for r in tables.get("reset", [])],
        )
        self._install_hooks()
        self.state.plan()
        for warning in self.state.warnings:
            print(f"devsim-subject: constants.toml: {warning}", file=sys.stderr)

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
        """Hooks on GPTQModel itself. They record and pass results through unchanged, except the extension
        loader, which stands in for the native build the simulated host is assumed to have."""
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

        TorchOpsJitExtension.load = load_live if self.live else load

        # lock: the device pool's per-device reader/writer locks.
        subject = self
        original_read, original_write = threadx._RWLock.acquire_read, threadx._RWLock.acquire_write

        def acquire_read(lock: Any) -> Any:
            subject._lock_event(lock, "read")
            return original_read(lock)

        def acquire_write(lock: Any) -> Any:
            subject._lock_event(lock, "write")
            return original_write(lock)

        threadx._RWLock.acquire_read = acquire_read
        threadx._RWLock.acquire_write = acquire_write

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
                module.has_avx512_bf16 = no_avx512_bf16  # type: ignore[attr-defined]
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
                subject._families.append((device, family))
            return family

        if original_family is not None:
            importer._device_family = device_family

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
            importer._as_selector_device = as_selector_device

        # GPTQModel's extension API gates every native extension on a build-support check (a capability,
        # shared-memory or ROCm rule over the visible GPUs) before it loads; is_available() swallows that
        # RuntimeError, so validate_once() reports only "<X> runtime unavailable." The swallowed reason is
        # recorded as a cause for classification (the message reported stays GPTQModel's own).
        from gptqmodel import extension as extension_api

        original_load_one = extension_api._load_one

        def load_one(name: str, **kwargs: Any) -> Any:
            return subject._observe_device_error(lambda: original_load_one(name, **kwargs))

        extension_api._load_one = load_one

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
        cls.validate_device = classmethod(wrapper)

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

    def handshake(self, protocol: int = 1) -> dict:
        """The answer to hello: protocol 1 exactly as before; protocol 2 adds the subject's own contract
        (kernel declarations read from GPTQModel's classes, the fields each action observes, its levels)."""
        # warmup is listed so that devsim sends it and reports the reason a step gives when it cannot be simulated
        # (`unsupported`, as the protocol has it for "a warmup that needs a real GPU").
        answer: dict[str, Any] = {
            "type": "handshake",
            "protocol": 1,
            "subject": {"name": self.name, "version": self.version},
            "actions": list(ACTIONS),
            "kernels": list(self.kernels),
            "events": EVENTS,
        }
        if protocol < 2:
            return answer
        answer["protocol"] = 2
        answer["messages"] = "own"
        answer["levels"] = ["policy", "contract"]
        answer["kernels"] = [self.declaration(kernel) for kernel in self.kernels.values()]
        answer["observes"] = {action: list(fields) for action, fields in OBSERVES.items()}
        # the kit traces each step inside these packages and says which GPTQModel function decided what
        answer["packages"] = ["gptqmodel"]
        if self.live:
            answer["live"] = True
            answer["observes"]["move"].append("retained_bytes")
        return answer

    def declaration(self, kernel: Kernel) -> dict:
        """A v2 kernel declaration, read from the GPTQModel class itself (never typed here); its tolerances
        from GPTQModel's own kernel tests (`tolerances`), where they state one."""
        declaration = {
            "name": kernel.name,
            "families": declared_families(kernel.cls),
            "methods": self.declared_methods(kernel.cls),
            "bits": sorted(int(b) for b in (getattr(kernel.cls, "SUPPORTS_BITS", None) or [])),
            "source": f"{kernel.cls.__module__}:{kernel.cls.__qualname__}",
        }
        stated = self.tolerances.get(kernel.name)
        if stated:
            declaration["tolerances"] = [
                {"dtype": dtype, "rtol": t.rtol, "atol": t.atol, "reference": t.reference, "source": t.source}
                for dtype, t in sorted(stated.items())
            ]
        return declaration

    def _read_tolerances(self, package_dir: Path) -> None:
        """The tolerances GPTQModel's kernel tests state, by devsim kernel name and dtype, each against the
        reference kernel the tests compare with (mapped by class name). A kernel's comparison with itself
        states nothing and is left out."""
        from . import livewarmup, tolerances

        stated, self.tolerance_note = tolerances.read(tolerances.tests_folder(package_dir))
        by_class = {kernel.cls_name: name for name, kernel in self.kernels.items()}
        for row in stated:
            name, reference = by_class.get(row.cls_name), by_class.get(row.reference_cls)
            if name is None or reference is None or name == reference:
                continue
            self.tolerances.setdefault(name, {})[row.dtype] = livewarmup.Tolerance(
                row.rtol, row.atol, reference, row.source
            )

    def declared_methods(self, cls: Any) -> list[str]:
        """devsim's method names for the class's SUPPORTS_METHODS (a contract-less wrapper: its QUANT_TYPE, when
        that is a GPTQModel METHOD). GPTQModel methods devsim has no name for are left out."""
        from gptqmodel.quantization import METHOD

        by_method = {entry["method"]: name for name, entry in self.methods.items()}
        methods = getattr(cls, "SUPPORTS_METHODS", None)
        if methods is None:
            quant_type = getattr(cls, "QUANT_TYPE", None)
            methods = [METHOD(quant_type)] if quant_type in {m.value for m in METHOD} else []
        names = [by_method.get(getattr(m, "value", m)) for m in methods]
        return sorted({n for n in names if n is not None})

    # ------------------------------------------------------------------------------------------- per scenario

    def enter(self, host: Host) -> str | None:
        """Child process: become `host`. Returns a reason when the host cannot be simulated. Live (in the
        subject's own process): check that the real machine is that host and make its current device current."""
        self.pool = None
        reason = self.torch_host.enter(host)
        if reason is not None:
            return reason
        with self.recorder.quiet():
            if not self.live:
                self.state.reset_constants()
            self.clear_caches()
        if not self.live and reuse_enabled():
            self.state.remember()
        return None

    def reusable(self) -> bool:
        """Child, after a scenario's `end`: whether the next scenario of the same host may run in this child.
        Only when nothing the scenario did outlives it: the device pool a lock step built is shut down and its
        threads (workers that pinned their devices, the janitor) have ended, and, once the caches `enter` clears
        are cleared, GPTQModel's state, the environment, the modules, the threads and torch's switches are what
        they were when the scenario began (ProjectState.unchanged)."""
        with self.recorder.quiet():
            if self.pool is not None:
                self._end_pool()
            self.clear_caches()
        return self.state.unchanged()

    def _end_pool(self) -> None:
        """Shut the scenario's device pool down (GPTQModel's own `shutdown`) and wait, at most POOL_EXIT_S in all,
        for the other threads to end. One still running leaves the thread count changed: the child is retired."""
        pool, self.pool = self.pool, None
        pool.shutdown(wait=False)
        deadline = time.monotonic() + POOL_EXIT_S
        for thread in threading.enumerate():
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))

    def clear_caches(self) -> None:
        """Host-dependent caches GPTQModel fills lazily (functools caches, the validation cache)."""
        from gptqmodel.utils import importer

        clear_validation_cache = compat.optional(importer, "clear_validation_cache", "no validation cache is cleared")
        if clear_validation_cache is not None:
            clear_validation_cache()
        self.state.clear_caches()
        for ext, values in self._loaded.values():
            for name, value in zip(EXTENSION_STATE, values, strict=True):
                setattr(ext, name, value)
        self._loaded.clear()
        for registered in self._native_ops:
            registered.remove()
        self._native_ops.clear()

    # ------------------------------------------------------------------------------------------- steps

    def step(self, msg: dict) -> dict:
        check_step(msg)
        action = msg["action"]
        head = {"scenario": msg["scenario"], "number": msg["number"]}
        handler = getattr(self, f"do_{action}", None)
        if handler is None:
            return {"type": "unsupported", **head, "reason": f"the GPTQModel subject has no action {action!r}"}
        obs: dict[str, Any] = {}
        self._device_errors = []
        self._families = []
        self._selectors = []
        self._held = []
        self._undecided: dict[str, str] = {}
        repeat = int(msg.get("repeat") or 1)
        if repeat > 1 and not self.live:
            raise ProtocolError(f"a repeated step outside a live run: {msg}")
        before = self._allocated() if self.live else None
        with self.recorder.capture() as trace:
            try:
                for _ in range(repeat):
                    obs.clear()
                    handler(msg, obs)
                ok = True
            except (StepUnsupported, compat.Lacking) as exc:
                answer = {"type": "unsupported", **head, "reason": str(exc)}
                stopped = [*trace, *getattr(exc, "events", [])]
                if stopped:  # what GPTQModel did before the step could go no further: its `never` rules bind
                    answer["trace"] = stopped
                return answer
            except NeedsBuild as exc:
                return {"type": "unsupported", **head, "reason": str(exc)}
            except _Refused as exc:
                ok = False
                obs["error"] = self.classify(exc.error)
            except ProtocolError:
                raise
            except Exception as exc:
                if raised_by_subject(exc):
                    raise  # a bug of the subject itself: the child prints the traceback and exits non-zero
                ok = False  # the code under test (or the simulated runtime) raised: an observation
                obs["error"] = self.classify(exc)
        if ok and self._undecided:
            # a step that failed was decided by whatever refused it; one that succeeded decided nothing here
            obs["undecided"] = dict(self._undecided)
        if self.torch_host.host.has_gpu_runtime and self.torch_host.count() > 0:
            obs["current_after"] = self.torch_host.current()
        if before is not None:
            obs["retained_bytes"] = self._allocated() - before
        return {"type": "observed", **head, "ok": ok, **obs, "trace": trace}

    def _allocated(self) -> int:
        """Live: device bytes the real caching allocator holds in tensors, over every visible GPU."""
        import torch

        gc.collect()
        count = self.torch_host.count() if self.torch_host.host.has_gpu_runtime else 0
        return sum(int(torch.cuda.memory_allocated(i)) for i in range(count))

    def classify(self, exc: BaseException) -> dict:
        message = str(exc)
        if isinstance(exc, KeyError) and exc.args:
            message = str(exc.args[0])
        kind = None
        for rule in self.rules:
            if rule.matches(message, exc):
                kind = rule.kind
                break
        if kind is None:
            for cause in self._device_errors:
                cause_message = str(cause)
                kind = next((r.kind for r in self.rules if r.matches(cause_message, cause)), None)
                if kind:
                    break
        return {"kind": kind, "message": message}

    # -- selectors and families

    def selector(self, sel: dict) -> Any:
        """The value the code under test receives, built in Python as the protocol's `form` says."""
        import torch
        from gptqmodel.models._const import DEVICE

        form = sel["form"]
        if form == "string":
            return str(sel["written"])
        if form == "ordinal":
            return int(sel["written"])
        if form == "family_enum":
            return DEVICE[sel["family"].upper()]
        if form == "torch_device":
            index = sel.get("index")
            try:  # torch itself judges the device type (e.g. no "rocm" device type exists)
                return torch.device(sel["device_type"]) if index is None else torch.device(sel["device_type"], index)
            except (RuntimeError, ValueError) as exc:
                raise _Refused(exc) from exc
        raise ProtocolError(f"unknown selector form {form!r}")

    def family_of(self, device: Any, obs: dict) -> Any:
        """GPTQModel's normalize_device: the family the configuration path stores. It returns a family enum, so
        no ordinal is observed here (the ordinal is read where a torch.device crosses into torch)."""
        from gptqmodel.models import _const

        family = _const.normalize_device(device)  # looked up at call time: the overlay may replace it
        blame.observed("family", family)
        value = getattr(family, "value", family)
        if value in FAMILIES:
            obs["family"] = value
        else:
            print(f"devsim-subject: normalize_device gave {family!r}, not a devsim family", file=sys.stderr)
        return family

    def boundary(self, device: Any) -> Any:
        """The torch.device GPTQModel builds at an execution boundary for a requested device: the boundary helper
        (kernels.toml [boundary]) applied to the selector as requested, so an explicit ordinal reaches it. The
        seed's `as_torch_device` takes every public device value itself (it normalizes first). 7.7.0's
        normalize_device_like only ever sees values GPTQModel has already read (torch.device / DEVICE), so the
        selector first goes through GPTQModel's own reading of a public device value, importer.
        _as_selector_device, as the loader's device maps and kernel selection do: "CPU" -> cpu, "rocm" ->
        DEVICE.ROCM, 1 -> cuda:1 (an ordinal of the active accelerator); what it refuses is its own error."""
        import torch
        from gptqmodel.utils import importer

        if not self.boundary_name.endswith(":as_torch_device"):
            device = compat.need(importer, "_as_selector_device", "boundary conversion (resolve, move, warmup)")(device)
        target = device.to_torch_device() if self.boundary_fn is None else self.boundary_fn(device)
        if not isinstance(target, torch.device):
            target = torch.device(target)
        return target

    @staticmethod
    def report_target(target: Any, obs: dict) -> None:
        """torch_device and ordinal as torch itself holds them: cuda:1 -> 1; indexless cuda -> null."""
        obs["torch_device"] = str(target)
        obs["ordinal"] = target.index
        blame.observed("torch_device", target)
        blame.observed("ordinal", target)

    def kernel(self, msg: dict) -> Kernel:
        name = msg["kernel"]
        kernel = self.kernels.get(name)
        if kernel is None:
            raise StepUnsupported(f"kernel {name} has no GPTQModel class in the subject's kernel map")
        lacks = compat.constant_lacks(self.state.unevaluable, [kernel.module])
        if lacks is not None:
            raise compat.Lacking(lacks)
        self._depends_on_missing(kernel, set())
        return kernel

    def _needed_missing(self, kernel: Kernel, attempted: set[str]) -> list[str]:
        """The packages `kernel` requires, this environment lacks and GPTQModel tried to import (`attempted`, or its
        module at import). Once seen, for the rest of the process: a later verdict may come from GPTQModel's cache
        of the first."""
        attempted = attempted | set(kernel.missing_at_import)
        missing = [pkg for pkg in kernel.missing if pkg in attempted or (kernel.name, pkg) in self._dependent]
        self._dependent.update((kernel.name, pkg) for pkg in missing)
        return missing + kernel.build_lacks

    def _depends_on_missing(self, kernel: Kernel, attempted: set[str]) -> None:
        """`unsupported` when the verdict on `kernel` rests on a missing package (`_needed_missing`)."""
        missing = self._needed_missing(kernel, attempted)
        if missing:
            raise StepUnsupported(
                f"{kernel.cls_name}.validate_once() needs {', '.join(missing)}, not installed in the subject's "
                "environment, so GPTQModel's verdict for this host cannot be observed"
            )

    # -- actions

    def do_normalize(self, msg: dict, obs: dict) -> None:
        self.family_of(self.selector(msg["device"]), obs)

    def do_resolve(self, msg: dict, obs: dict) -> None:
        device = self.selector(msg["device"])
        self.family_of(device, obs)
        self.report_target(self.boundary(device), obs)

    def validate_args(self, kernel: Kernel) -> dict:
        import torch

        args: dict[str, Any] = {"bits": kernel.bits, "group_size": 128, "desc_act": False, "sym": True,
                                "pack_dtype": "int32"}
        args.update(kernel.validate)
        args["pack_dtype"] = getattr(torch, str(args["pack_dtype"]))
        return args

    def gate(self, kernel: Kernel, device: Any) -> None:
        """GPTQModel's kernel gate: validate_quant_linear, the entry point selection and an explicit backend use.
        A class without the quant-linear contract (no validate(): 7.7.0's EXL3 and FP4 wrappers) goes through no
        gate of GPTQModel's: the loader builds it by backend alone, so the project decides nothing here and the
        step's `ok` is undecided. Whatever such a class adds (a validate_device nothing of GPTQModel calls) is not
        called: only its own first forward can refuse (`do_warmup`)."""
        from gptqmodel.utils import importer

        if not kernel.contract:
            self._undecided["ok"] = (
                f"{kernel.cls_name} is not a quant-linear (no validate()): GPTQModel gates it nowhere before its "
                "first forward"
            )
            return
        validate_quant_linear = compat.need(importer, "validate_quant_linear", "kernel gate (validate, move, warmup)")
        self._missing.attempts.clear()
        verdict = validate_quant_linear(kernel.cls, device=device, **self.validate_args(kernel))
        blame.observed("ok", verdict)  # an admission is the gate's answer; a refusal is placed by its error
        ok, err = verdict
        if not ok:
            # a refusal that came from a missing package is this environment's, not GPTQModel's verdict
            self._depends_on_missing(kernel, self._missing.attempts)
            raise _Refused(err if err is not None else RuntimeError(f"{kernel.cls_name} refused without a reason"))

    def do_validate(self, msg: dict, obs: dict) -> None:
        from gptqmodel.utils import importer

        kernel = self.kernel(msg)
        compat.need(importer, "_device_family", "selector view (validate, select)")
        device = self.selector(msg["device"])
        try:
            if not kernel.contract:
                # the loader's placement view of the requested device (7.7.0 validates nothing else here)
                compat.need(importer, "selector_device_family", "placement view of a wrapper (validate)")(device)
            self.gate(kernel, device)
        finally:
            self._selector_view(device, obs)

    def do_select(self, msg: dict, obs: dict) -> None:
        import torch
        from gptqmodel.quantization import FORMAT, METHOD
        from gptqmodel.utils import importer
        from gptqmodel.utils.backend import BACKEND

        method = self.methods.get(msg["method"])
        if method is None:
            raise StepUnsupported(
                f"GPTQModel 7.7.0 has no quantization method for devsim's {msg['method']!r} "
                "(its W4A kernels are explicit GPTQ backends with auto-select priority 0)"
            )
        compat.need(importer, "_device_family", "selector view (validate, select)")
        lacks = compat.constant_lacks(self.state.unevaluable, [k.module for k in self.kernels.values()])
        if lacks is not None:
            raise compat.Lacking(lacks)  # any candidate's verdict may read it
        device = self.selector(msg["device"])
        if method["method"] == "exl3":
            self._select_exl3(device, obs)
            return
        judged: list[tuple[Any, bool]] = []
        original = compat.need(importer, "validate_quant_linear", "view of the candidates (select)")

        def observing(cls: Any, **kwargs: Any) -> Any:
            result = original(cls, **kwargs)
            judged.append((cls, bool(result[0])))
            return result

        importer.validate_quant_linear = observing
        self._missing.attempts.clear()
        try:
            chosen = importer.select_quant_linear(
                bits=msg["bits"],
                group_size=128,
                desc_act=False,
                sym=True,
                device=device,
                backend=BACKEND.AUTO,
                format=FORMAT(method["format"]),
                quant_method=METHOD(method["method"]),
                pack=False,
                pack_dtype=torch.int32,
            )
        except Exception:
            self._unobservable_candidates(judged, None)
            raise
        finally:
            importer.validate_quant_linear = original
            self._selector_view(device, obs)
        self._unobservable_candidates(judged, chosen)
        name = next((k.name for k in self.kernels.values() if k.cls is chosen), None)
        blame.observed("selected", chosen)
        if name is None:
            print(f"devsim-subject: selected {chosen!r} has no devsim name in kernels.toml", file=sys.stderr)
        else:
            obs["selected"] = name

    def _select_exl3(self, device: Any, obs: dict) -> None:
        """7.7.0 never routes EXL3 through select_quant_linear (METHOD.EXL3 is not in its kernel tables): the
        loader converts the device like any other (normalize_device_device_map, auto_select_device), then picks
        the EXL3 module inline in from_quantized, by backend alone. The conversion is observed; the pick is no
        function of GPTQModel's the subject can call, so `selected` is undecided, never modelled."""
        from gptqmodel.utils import importer

        auto_select_device = compat.need(importer, "auto_select_device", "EXL3 placement (select)")
        device_map = compat.need(importer, "normalize_device_device_map", "EXL3 placement (select)")
        try:
            auto_select_device(device_map(device, None), None)
        finally:
            self._selector_view(device, obs)
        self._undecided["selected"] = (
            "GPTQModel picks the EXL3 module inline in its model loader (from_quantized), by backend, in no "
            "function of its own"
        )

    def _unobservable_candidates(self, judged: list, chosen: Any) -> None:
        """A candidate refused only because a package is missing here would change the pick on a real host."""
        for cls, ok in judged:
            if cls is chosen:
                return
            if ok:
                continue
            for kernel in self.kernels.values():
                if kernel.cls is cls and self._needed_missing(kernel, self._missing.attempts):
                    raise StepUnsupported(
                        f"selection considered {cls.__name__}, whose validate_once() needs "
                        f"{', '.join(kernel.missing + kernel.build_lacks)} (not installed in the subject's environment), so the "
                        "pick on this host cannot be observed"
                    )

    def do_lock(self, msg: dict, obs: dict) -> None:
        scope = self.selector(msg["scope"])
        pool = self._pool()
        if msg.get("mode", "read") == "write":
            context = pool.lock([scope])
        else:
            context = pool.read_lock(scope)
        with context:
            obs["covers"] = list(self._held)

    def _pool(self) -> Any:
        """GPTQModel's DeviceThreadPool discovered on the simulated host (built once per scenario, unrecorded).

        The pool GPTQModel itself builds (gptqmodel.get_device_thread_pool) adds linalg warmups that allocate
        on the GPU; the locks do not depend on them or on the worker counts, so this one has neither.
        """
        if self.pool is None:
            from gptqmodel.utils.threadx import DeviceThreadPool

            with self.recorder.quiet():
                self.pool = DeviceThreadPool(
                    inference_mode=True, workers={"cuda:per": 1, "cpu": 1}, empty_cache_every_n=0
                )
            self._lock_keys = {id(lock): key for key, lock in self.pool._locks.items()}
        return self.pool

    def do_move(self, msg: dict, obs: dict) -> None:
        """The kernel's placement path: normalize_device (the family quantize_config.device stores), the kernel's
        own gate on that family (quantize() validates the kernel with select_quant_linear(device=DEVICE(
        quantize_config.device)) before any module moves), then the requested device at the torch boundary and
        utils.model.move_to. torch_device/ordinal are those of the torch.device move_to really passed to torch."""
        import torch
        from gptqmodel.utils.model import move_to

        kernel = self.kernel(msg)
        device = self.selector(msg["device"])
        family = self.family_of(device, obs)
        self.gate(kernel, family)
        target = self.boundary(device)
        with self.torch_host.moves.capture() as landings:
            move_to(torch.zeros(4), device=target)
        passed = torch.device(landings[-1][0]) if landings else target
        self.report_target(passed, obs)
        obs["lands_on"] = landings[-1][1] if landings else "cpu"
        if passed == target:  # move_to passed GPTQModel's boundary device on: that is what decided both
            for field_name in ("torch_device", "ordinal", "lands_on"):
                blame.observed(field_name, target)

    def do_warmup(self, msg: dict, obs: dict) -> None:
        """The kernel gated as an explicit choice is (validate_quant_linear on the requested device): a refusal is
        the observation. Simulated, an admitted kernel's module is moved to the device at the torch boundary,
        initialised and run once by GPTQModel's own code on torch's fake tensors, or on CPU-backed ones when it
        reads a value (fakewarmup; `unsupported` when its forward needs what neither can run). Live,
        its module is built on its format's checkpoint (kernels.toml `weights`: GPTQ, AWQ or FP8, packed by
        GPTQModel's own reference packer for the format; liveformats), moved to the device at the torch boundary,
        initialised and run once, and judged against the FP64 oracle (livewarmup); `ran_on` is where torch put
        the output. A kernel whose format has no builder answers `unsupported`."""
        # imported by `load` already: a first import here would change (and retire) a reused child
        from . import fakewarmup, liveformats, livewarmup

        kernel = self.kernel(msg)
        if not self.live:
            device = self.selector(msg["device"])
            if kernel.contract:  # a wrapper's own forward is its only gate
                self.gate(kernel, device)  # a refusal is observed (`_Refused`)
            target = self.boundary(device)

            def build() -> Any:
                with self.recorder.quiet():
                    return self._simulated_module(kernel)

            blame.observed("ran_on", target)  # the module is moved to GPTQModel's boundary device
            try:
                obs["ran_on"] = fakewarmup.ran_on(build, target, self.recorder, self._refuses)
            except fakewarmup.Refusal as refusal:
                raise _Refused(refusal.error) from refusal.error
            except fakewarmup.Unsimulable as exc:
                raise StepUnsupported(f"{WARMUP_NEEDS_GPU}: {exc}", exc.events) from exc
            return
        fmt = liveformats.FORMATS.get(kernel.weights or "")
        if fmt is None:
            raise StepUnsupported(
                f"the live warmup builds {', '.join(sorted(liveformats.FORMATS))} checkpoints; {kernel.cls_name} "
                f"takes another format ({kernel.weights or 'not named in kernels.toml'}), for which the subject has "
                "no weight builder"
            )
        device = self.selector(msg["device"])
        self.gate(kernel, device)
        target = self.boundary(device)
        try:
            with self.recorder.quiet():
                weights, module = self._checkpoint_module(kernel)
        except livewarmup.Unbuildable as exc:
            raise StepUnsupported(str(exc)) from exc
        # Judged by GPTQModel's stated tolerance against its reference kernel where its tests state one; else by
        # the seed's against the oracle, still compared with the format's reference kernel (the one whose packer
        # wrote the checkpoint), so both errors are reported either way.
        tolerance = self.tolerances.get(kernel.name, {}).get("float16", livewarmup.SEED_TOLERANCE)
        reference_name = tolerance.reference or (fmt.reference if fmt.reference != kernel.name else None)
        reference = None
        if reference_name is not None and reference_name in self.kernels:
            try:
                with self.recorder.quiet():
                    reference = self._checkpoint_module(self.kernels[reference_name])[1]
            except livewarmup.Unbuildable as exc:
                raise StepUnsupported(f"the project's reference kernel {reference_name}: {exc}") from exc
        forward = livewarmup.run(
            module, weights, target, tolerance, reference, reference_name, quiet=self.recorder.quiet
        )
        del module, reference
        obs["ran_on"] = forward.ran_on
        numerics = livewarmup.numerics(forward)
        if fmt.shape is not None and "shape" in numerics:
            numerics["shape"] = fmt.shape
        obs["numerics"] = numerics

    def _refuses(self, error: BaseException) -> bool:
        """Whether an error a kernel's forward raised is its refusal of the device (by GPTQModel's wordings,
        errors.toml) rather than a limit of the simulation."""
        return self.classify(error)["kind"] in REFUSALS

    def _pack_checkpoints(self) -> None:
        """Pack, once in the parent, the checkpoint of every (format, width) a kernel with a live weight builder
        takes (kernels.toml `weights`; liveformats), with the format's reference packer: every warmup of those
        kernels, in every child, loads the same one. A packing failure is kept to be raised by the warmups that
        need it, as `livewarmup.Unbuildable`."""
        from . import liveformats, livewarmup

        wanted = {(k.weights, k.bits) for k in self.kernels.values() if k.weights in liveformats.FORMATS}
        for name, bits in sorted(wanted):
            fmt = liveformats.FORMATS[name]
            packer = self.kernels.get(fmt.reference)
            if packer is None:
                self._checkpoints[(name, bits)] = livewarmup.Unbuildable(
                    f"the {name.upper()} reference packer {fmt.reference} is not mapped"
                )
                continue
            try:
                with self.recorder.quiet():
                    self._checkpoints[(name, bits)] = fmt.checkpoint(packer.cls, bits)
            except livewarmup.Unbuildable as exc:
                self._checkpoints[(name, bits)] = exc

    def _checkpoint_module(self, kernel: Kernel) -> tuple[Any, Any]:
        """The kernel's module on the CPU with its format's checkpoint loaded (packed by `_pack_checkpoints` with
        GPTQModel's reference packer for the format), and the weights it stands for; `livewarmup.Unbuildable`
        when the subject could not prepare them."""
        from . import liveformats, livewarmup

        fmt = liveformats.FORMATS.get(kernel.weights or "")
        checkpoint = self._checkpoints.get((kernel.weights or "", kernel.bits))
        if fmt is None or checkpoint is None:
            raise livewarmup.Unbuildable(
                f"no {kernel.weights} checkpoint of {kernel.bits} bits was packed at the subject's start"
            )
        if isinstance(checkpoint, Exception):
            raise checkpoint
        weights, state = checkpoint
        return weights, fmt.load(kernel.cls, state, kernel.bits)

    def _simulated_module(self, kernel: Kernel) -> Any:
        """A simulated warmup's module on the CPU, as a model load leaves it (kernels.toml `weights`): its format's
        checkpoint (GPTQ, AWQ, FP8: the live warmup's, liveformats), the weights packed by the kernel's own
        `pack_original` (bitsandbytes'), or else the empty buffers its constructor gives it; the subject failing to
        prepare it is `fakewarmup.Unsimulable`."""
        from . import fakewarmup, liveformats, livewarmup

        try:
            if kernel.weights in liveformats.FORMATS:
                return self._checkpoint_module(kernel)[1]
            if kernel.weights == "own":
                return livewarmup.packed_by_itself(kernel.cls, livewarmup.Weights.draw(kernel.bits), kernel.bits)
        except livewarmup.Unbuildable as exc:
            raise fakewarmup.Unsimulable(str(exc)) from exc
        return fakewarmup.build(kernel.cls, kernel.module_bits)

    def do_set_device(self, msg: dict, obs: dict) -> None:
        import torch

        torch.cuda.set_device(int(msg["ordinal"]))

    def _selector_view(self, device: Any, obs: dict) -> None:
        """validate / select: the selector as GPTQModel's kernel machinery saw it. `family` is what
        importer._device_family answered for the first selector device it judged during the step (validate: the
        validation-cache key; select: the family check), `ordinal` and `torch_device` that device's own. A
        family enum the machinery never passed to _device_family is its own family."""
        import torch
        from gptqmodel.models._const import DEVICE

        if self._families:
            seen, family = self._families[0]
        else:
            # no device reached _device_family: the family enum the machinery holds instead, e.g. "rocm" (which
            # importer._as_selector_device turns into DEVICE.ROCM) or DEVICE.ROCM itself
            held = [s for s in (*self._selectors, device) if isinstance(s, DEVICE)]
            if not held:
                return
            seen = family = held[0]
        value = getattr(family, "value", family)
        if value in FAMILIES:
            obs["family"] = value
        if isinstance(seen, torch.device):
            self.report_target(seen, obs)
        elif value in FAMILIES:
            obs["ordinal"] = None  # observed: the machinery holds a family target, which has no ordinal


class NeedsBuild(BaseException):
    """Live: a native extension GPTQModel needs is not built here (JIT builds off) or its build failed on this
    machine. A BaseException, so GPTQModel's own `except Exception` fallbacks cannot turn it into a refusal it never
    made; the step answers `unsupported` with the reason."""


class _Refused(Exception):
    """A (False, error) verdict from GPTQModel's validation, carried to classification."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


# Modules of this package that stand in for the code under test: an exception raised in them is an observation.
# seedfix.py and seedfix2.py are the overlays, written in place of GPTQModel functions (their errors are
# GPTQModel's, as the seed's code would raise them). The kit's simulated torch lives outside this package: its torch-like errors are torch's.
STAND_INS = ("seedfix.py", "seedfix2.py")


def raised_by_subject(exc: BaseException) -> bool:
    """Whether the innermost frame of `exc` is the subject's own step code (not GPTQModel, torch, the simulated
    runtime or the overlay, whose errors are observations)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    if last is None:
        return False
    path = Path(last).resolve()
    return path.parent == DATA and path.name not in STAND_INS
